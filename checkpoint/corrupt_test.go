package checkpoint

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

func flipByte(t *testing.T, file string, at func(size int) int) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b[at(len(b))] ^= 0x40
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func truncate(t *testing.T, file string, size func(int64) int64) {
	t.Helper()
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(file, size(fi.Size())); err != nil {
		t.Fatal(err)
	}
}

// TestCorruption damages checkpoint 2 in one way each and checks Latest
// falls back to checkpoint 1, logging checkpoint 2 with the reason.
func TestCorruption(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string)
		reason string // in the logged reason
	}{
		{"flipped part byte", func(t *testing.T, dir string) {
			flipByte(t, partPath(t, dir, 2, "window/1"), func(n int) int { return n / 2 })
		}, `part "window/1": CRC-32C mismatch`},
		{"truncated part", func(t *testing.T, dir string) {
			truncate(t, partPath(t, dir, 2, "window/1"), func(n int64) int64 { return n - 1 })
		}, `part "window/1": file part-000002-window_1 is 549 bytes, manifest says 550`},
		{"extended part", func(t *testing.T, dir string) {
			truncate(t, partPath(t, dir, 2, "window/2"), func(n int64) int64 { return n + 3 })
		}, `part "window/2": file part-000003-window_2 is 3 bytes, manifest says 0`},
		{"deleted part", func(t *testing.T, dir string) {
			os.Remove(partPath(t, dir, 2, "source/0"))
		}, `part "source/0": file part-000001-source_0 is missing`},
		{"truncated manifest", func(t *testing.T, dir string) {
			truncate(t, manifestPath(dir, 2), func(n int64) int64 { return n - 5 })
		}, "MANIFEST: checksum mismatch"},
		{"manifest truncated to a few bytes", func(t *testing.T, dir string) {
			truncate(t, manifestPath(dir, 2), func(int64) int64 { return 10 })
		}, "MANIFEST: 10 bytes, shorter than the smallest manifest"},
		{"empty manifest", func(t *testing.T, dir string) {
			truncate(t, manifestPath(dir, 2), func(int64) int64 { return 0 })
		}, "MANIFEST: 0 bytes"},
		{"garbled manifest", func(t *testing.T, dir string) {
			flipByte(t, manifestPath(dir, 2), func(n int) int { return n / 2 })
		}, "MANIFEST: checksum mismatch"},
		{"garbled manifest checksum", func(t *testing.T, dir string) {
			flipByte(t, manifestPath(dir, 2), func(n int) int { return n - 1 })
		}, "MANIFEST: checksum mismatch"},
		{"bad magic", func(t *testing.T, dir string) {
			flipByte(t, manifestPath(dir, 2), func(int) int { return 0 })
		}, "MANIFEST: bad magic"},
		{"future version", func(t *testing.T, dir string) {
			flipByte(t, manifestPath(dir, 2), func(int) int { return 9 })
		}, "MANIFEST: unsupported format version 16385"},
		{"deleted manifest", func(t *testing.T, dir string) {
			os.Remove(manifestPath(dir, 2))
		}, "no MANIFEST"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, dir, Options{})
			commit(t, s, 1, partsOf(1), []byte("meta 1"))
			commit(t, s, 2, partsOf(2), []byte("meta 2"))
			c.damage(t, dir)

			log := &logRecorder{}
			// Latest without Open's cleanup (as on a Dir opened before the
			// damage)...
			s = newStore(dir, Options{Logger: log.logger()})
			checkLatest(t, s, 1, partsOf(1), []byte("meta 1"))
			// ... and after a restart.
			s = mustOpen(t, dir, Options{Logger: log.logger()})
			checkLatest(t, s, 1, partsOf(1), []byte("meta 1"))
			reasons := log.skipped(2)
			if len(reasons) == 0 {
				t.Fatalf("no log line skips checkpoint 2; log:\n%s", log)
			}
			for _, r := range reasons {
				if !strings.Contains(r, c.reason) {
					t.Errorf("reason %q, want it to contain %q", r, c.reason)
				}
			}
			if r := log.skipped(1); len(r) != 0 {
				t.Errorf("checkpoint 1 skipped: %q", r)
			}

			// Damage checkpoint 1 too: nothing verifies.
			flipByte(t, partPath(t, dir, 1, "source/0"), func(int) int { return 0 })
			cp, ok, err := s.Latest()
			if err != nil || ok {
				t.Fatalf("Latest = %v, %v, %v; want none", cp, ok, err)
			}
			if r := log.skipped(1); len(r) != 1 || !strings.Contains(r[0], `part "source/0": CRC-32C mismatch`) {
				t.Errorf("checkpoint 1 reasons %q", r)
			}
		})
	}
}

func TestReadPartVerifies(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{})
	commit(t, s, 1, partsOf(1), nil)
	cp, ok, err := s.Latest()
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	// Damaged after Latest verified it.
	flipByte(t, partPath(t, dir, 1, "window/1"), func(n int) int { return n - 1 })
	if _, err := s.ReadPart(cp, "window/1"); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "CRC-32C mismatch") {
		t.Errorf("ReadPart after a flip = %v", err)
	}
	truncate(t, partPath(t, dir, 1, "window/1"), func(n int64) int64 { return n / 2 })
	if _, err := s.ReadPart(cp, "window/1"); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "manifest says") {
		t.Errorf("ReadPart after truncation = %v", err)
	}
	if b, err := s.ReadPart(cp, "source/0"); err != nil || string(b) != "offset 100" {
		t.Errorf("ReadPart(intact) = %q, %v", b, err)
	}
	flipByte(t, manifestPath(dir, 1), func(n int) int { return n / 2 })
	if _, err := s.ReadPart(&Checkpoint{ID: 1}, "source/0"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("ReadPart through a garbled manifest = %v", err)
	}
}

// Checkpoints newer than the restored one that fail verification do not
// block the ids after the restored one: Begin replaces them (after Latest
// has found them damaged), and retention does not count them.
func TestDamagedCheckpointLifecycle(t *testing.T) {
	dir := t.TempDir()
	log := &logRecorder{}
	s := mustOpen(t, dir, Options{Retain: 3, Logger: log.logger()})
	for id := int64(1); id <= 3; id++ {
		commit(t, s, id, partsOf(id), nil)
	}
	flipByte(t, manifestPath(dir, 3), func(n int) int { return n / 2 })
	flipByte(t, partPath(t, dir, 2, "source/0"), func(int) int { return 0 })

	s = mustOpen(t, dir, Options{Retain: 3, Logger: log.logger()})
	// 3's manifest is bad: not complete. 2's manifest is fine, so until a
	// Latest reads its parts it counts as complete and its id is taken.
	checkList(t, s, 1, 2)
	if _, err := s.Begin(2); err == nil {
		t.Fatal("Begin(2) succeeded over checkpoint 2 before Latest")
	}
	checkLatest(t, s, 1, partsOf(1), nil)
	checkList(t, s, 1)
	// Continue with restored+1: the damaged 2 is replaced, then the garbled 3.
	commit(t, s, 2, partsOf(2), []byte("new 2"))
	checkLatest(t, s, 2, partsOf(2), []byte("new 2"))
	commit(t, s, 3, partsOf(3), []byte("new 3"))
	checkLatest(t, s, 3, partsOf(3), []byte("new 3"))
	for _, want := range []string{
		"removing leftover directory of the same id id=2 dir=" + dir + "/" + dirName(2) + " reason=its parts failed verification",
		"removing leftover directory of the same id id=3 dir=" + dir + "/" + dirName(3) + " reason=MANIFEST: checksum mismatch",
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	checkList(t, s, 1, 2, 3)
	commit(t, s, 4, partsOf(4), nil)
	checkList(t, s, 2, 3, 4)
	if ids := chkDirs(t, dir); len(ids) != 3 {
		t.Errorf("directories %v", ids)
	}
}

// A checkpoint found damaged does not count toward Retain, so Retain good
// ones stay; it goes once it is older than all of them.
func TestRetentionSkipsDamaged(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{Retain: 2})
	for id := int64(1); id <= 3; id++ {
		commit(t, s, id, partsOf(id), nil)
	}
	truncate(t, partPath(t, dir, 3, "window/1"), func(int64) int64 { return 0 })
	checkLatest(t, s, 2, partsOf(2), nil)
	commit(t, s, 4, partsOf(4), nil)
	checkList(t, s, 2, 4)
	if ids := chkDirs(t, dir); !slices.Equal(ids, []int64{2, 3, 4}) {
		t.Errorf("directories %v, want [2 3 4]", ids)
	}
	commit(t, s, 5, partsOf(5), nil)
	checkList(t, s, 4, 5)
	if ids := chkDirs(t, dir); !slices.Equal(ids, []int64{4, 5}) {
		t.Errorf("directories %v, want [4 5]", ids)
	}
}

// A pruning pass removes corrupted and unfinished directories older than
// every retained checkpoint.
func TestPruneRemovesOldLeftovers(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{Retain: 1})
	commit(t, s, 1, partsOf(1), nil)
	commit(t, s, 2, partsOf(2), nil)
	// An unfinished directory appearing under a live Dir (as if an Abort
	// had failed halfway), and checkpoint 2 garbled.
	os.Mkdir(dir+"/"+dirName(1), 0o755)
	flipByte(t, manifestPath(dir, 2), func(n int) int { return n / 2 })
	commit(t, s, 3, partsOf(3), nil)
	commit(t, s, 4, partsOf(4), nil)
	checkList(t, s, 4)
	if ids := chkDirs(t, dir); len(ids) != 1 || ids[0] != 4 {
		t.Errorf("directories %v, want [4]", ids)
	}
}
