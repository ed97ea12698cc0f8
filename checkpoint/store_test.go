package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestRoundTripConcurrentParts(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{})
	defer s.Close()

	rng := rand.New(rand.NewPCG(1, 2))
	parts := make(map[string][]byte)
	for i := range 40 {
		data := make([]byte, rng.IntN(100_000))
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		parts[fmt.Sprintf("window/%d", i)] = data
	}
	parts["source/0"] = []byte("offset 12345")
	parts["empty"] = nil
	parts["ünïcode/ß"] = []byte("x")
	meta := []byte("spec=abc123 records=99")

	p, err := s.Begin(1)
	if err != nil {
		t.Fatal(err)
	}
	if p.(*pending).ID() != 1 {
		t.Fatalf("ID = %d", p.(*pending).ID())
	}
	names := slices.Collect(maps.Keys(parts))
	var wg sync.WaitGroup
	const writers = 8
	for w := range writers {
		wg.Go(func() {
			for i := w; i < len(names); i += writers {
				if err := p.WritePart(names[i], parts[names[i]]); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if err := commitMeta(p, meta); err != nil {
		t.Fatal(err)
	}
	checkLatest(t, s, 1, parts, meta)
	checkList(t, s, 1)

	// A fresh Dir reads the same, also through a Checkpoint it built.
	s2 := mustOpen(t, dir, Options{})
	checkLatest(t, s2, 1, parts, meta)
	got, err := s2.ReadPart(&Checkpoint{ID: 1}, "source/0")
	if err != nil || string(got) != "offset 12345" {
		t.Fatalf("ReadPart via ID = %q, %v", got, err)
	}
	cp, _, _ := s2.Latest()
	if _, err := s2.ReadPart(cp, "nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadPart(unknown) = %v, want fs.ErrNotExist", err)
	}
}

func TestEmptyCheckpoint(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{})
	p, err := s.Begin(7)
	if err != nil {
		t.Fatal(err)
	}
	if err := commitMeta(p, nil); err != nil {
		t.Fatal(err)
	}
	checkLatest(t, s, 7, nil, nil)
}

// TestMetaOption: Commit, as the job calls it, stores Options.Meta in the
// manifest; a Dir is a Store.
func TestMetaOption(t *testing.T) {
	meta := []byte(`{"spec":"fingerprint"}`)
	var s Store = mustOpen(t, t.TempDir(), Options{Meta: meta})
	p, err := s.Begin(3)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WritePart(PartName("window", 2, "state"), []byte("acc")); err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	checkLatest(t, s.(*Dir), 3, map[string][]byte{"window/2/state": []byte("acc")}, meta)
}

// TestView: a Dir's View of a checkpoint serves its parts by stage,
// subtask index and name, also for stage names and names with '/'.
func TestView(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{})
	parts := map[string][]byte{
		PartName("window", 0, "state"):      []byte("w0"),
		PartName("window", 3, "state"):      []byte("w3"),
		PartName("window", 3, "valve/0"):    []byte("v"),
		PartName("src/a", 1, "position"):    []byte("p1"),
		PartName("window-1", 0, "state"):    []byte("other stage"),
		PartName("job", 0, "output/ledger"): []byte("o"),
	}
	commit(t, s, 1, parts, nil)
	cp, _, err := s.Latest()
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.View(cp)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		stage, name string
		want        map[int]string
	}{
		{"window", "state", map[int]string{0: "w0", 3: "w3"}},
		{"window", "valve/0", map[int]string{3: "v"}},
		{"src/a", "position", map[int]string{1: "p1"}},
		{"job", "output/ledger", map[int]string{0: "o"}},
		{"window", "nope", map[int]string{}},
	} {
		got := map[int]string{}
		for i, b := range v.Parts(c.stage, c.name) {
			got[i] = string(b)
		}
		if !maps.Equal(got, c.want) {
			t.Errorf("Parts(%q, %q) = %v, want %v", c.stage, c.name, got, c.want)
		}
	}
	if i, ok := PartIndex("window/12/state", "window", "state"); !ok || i != 12 {
		t.Errorf("PartIndex = %d, %v", i, ok)
	}
	if _, err := s.View(nil); err == nil {
		t.Error("View(nil) succeeded")
	}
}

func TestNoCheckpoint(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "a", "b"), Options{})
	cp, ok, err := s.Latest()
	if err != nil || ok || cp != nil {
		t.Fatalf("Latest = %v, %v, %v; want none", cp, ok, err)
	}
	checkList(t, s)
}

func TestRetention(t *testing.T) {
	for _, retain := range []int{0, 1, 3, 7} {
		t.Run(fmt.Sprint(retain), func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, dir, Options{Retain: retain})
			for id := int64(1); id <= 5; id++ {
				commit(t, s, id*10, partsOf(id), nil)
			}
			want := []int64{10, 20, 30, 40, 50}
			keep := retain
			if keep == 0 {
				keep = DefaultRetain
			}
			want = want[max(0, len(want)-keep):]
			checkList(t, s, want...)
			if got := chkDirs(t, dir); !slices.Equal(got, want) {
				t.Fatalf("directories %v, want %v", got, want)
			}
			checkLatest(t, s, 50, partsOf(5), nil)
		})
	}
}

func TestOpenOptions(t *testing.T) {
	if err := (Options{}).Validate(); err != nil {
		t.Fatalf("the zero Options: %v", err)
	}
	if err := (Options{Retain: -1}).Validate(); err == nil || !strings.Contains(err.Error(), "Options.Retain") {
		t.Fatalf("Validate(Retain -1) = %v", err)
	}
	if _, err := Open(t.TempDir(), Options{Retain: -1}); err == nil || !strings.Contains(err.Error(), "Retain") {
		t.Fatalf("Open(Retain -1) = %v", err)
	}
	if _, err := Open("", Options{}); err == nil {
		t.Fatal("Open(\"\") succeeded")
	}
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	if _, err := Open(file, Options{}); err == nil {
		t.Fatal("Open(a file) succeeded")
	}
}

func TestOpenRemovesUnfinished(t *testing.T) {
	dir := t.TempDir()
	log := &logRecorder{}
	s := mustOpen(t, dir, Options{})
	commit(t, s, 1, partsOf(1), nil)
	// An unfinished checkpoint: parts, a temporary manifest, no MANIFEST.
	p, _ := s.Begin(2)
	p.WritePart("a", []byte("x"))
	os.WriteFile(filepath.Join(dir, dirName(2), manifestTmpName), []byte("half"), 0o644)
	// Things that are not checkpoints stay.
	os.WriteFile(filepath.Join(dir, "README"), []byte("mine"), 0o644)
	os.Mkdir(filepath.Join(dir, "chk-abc"), 0o755)
	os.Mkdir(filepath.Join(dir, "chk-"+strings.Repeat("0", 20)), 0o755) // id 0 is not valid

	s2 := mustOpen(t, dir, Options{Logger: log.logger()})
	if got := chkDirs(t, dir); !slices.Equal(got, []int64{1}) {
		t.Fatalf("directories %v, want [1]", got)
	}
	for _, f := range []string{"README", "chk-abc", "chk-" + strings.Repeat("0", 20)} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("Open removed %s: %v", f, err)
		}
	}
	if !strings.Contains(log.String(), "removing unfinished checkpoint id=2") {
		t.Errorf("log:\n%s", log)
	}
	checkLatest(t, s2, 1, partsOf(1), nil)
	commit(t, s2, 2, partsOf(2), nil) // the id is free again
	checkLatest(t, s2, 2, partsOf(2), nil)
}

func TestBeginIDs(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{})
	for _, id := range []int64{0, -1} {
		if _, err := s.Begin(id); err == nil || !strings.Contains(err.Error(), "positive") {
			t.Errorf("Begin(%d) = %v", id, err)
		}
	}
	commit(t, s, 5, nil, nil)
	for _, id := range []int64{5, 4, 1} {
		if _, err := s.Begin(id); err == nil || !strings.Contains(err.Error(), "not greater than the newest complete checkpoint 5") {
			t.Errorf("Begin(%d) = %v", id, err)
		}
	}
	// The newest id survives a restart.
	s = mustOpen(t, s.Path(), Options{})
	if _, err := s.Begin(5); err == nil {
		t.Error("Begin(5) after reopen succeeded")
	}
	p6, err := s.Begin(6)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Begin(6); err == nil || !strings.Contains(err.Error(), "already pending") {
		t.Errorf("second Begin(6) = %v", err)
	}
	// Two pending checkpoints: the newer commits first, so the older is stale.
	p7, err := s.Begin(7)
	if err != nil {
		t.Fatal(err)
	}
	if err := commitMeta(p7, nil); err != nil {
		t.Fatal(err)
	}
	if err := commitMeta(p6, nil); err == nil || !strings.Contains(err.Error(), "completed meanwhile") {
		t.Fatalf("stale Commit = %v", err)
	}
	if err := p6.Abort(); err != nil {
		t.Fatal(err)
	}
	checkList(t, s, 5, 7)
	if got := chkDirs(t, s.Path()); !slices.Equal(got, []int64{5, 7}) {
		t.Fatalf("directories %v", got)
	}
}

func TestPartNames(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{})
	p, err := s.Begin(1)
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string]string{
		"":                       "empty",
		strings.Repeat("x", 256): "256 bytes long, the limit is 255",
		"a\x00b":                 "NUL",
		"..":                     `".."`,
		"window/../etc":          `".."`,
		"a..b":                   `".."`,
		"\xff\xfe":               "not valid UTF-8",
		"/abs":                   "empty '/'-separated element",
		"dir/":                   "empty '/'-separated element",
		"a//b":                   "empty '/'-separated element",
		"line\nbreak":            "control character U+000A",
		"del\x7f":                "control character U+007F",
	}
	for name, want := range bad {
		err := p.WritePart(name, []byte("x"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("WritePart(%q) = %v, want an error containing %q", name, err, want)
		}
	}
	good := map[string][]byte{}
	for _, name := range []string{"window/3", "source/0", "a.b", "ünï/ß", "with space", strings.Repeat("y", 255), "MANIFEST", "part-000001-x", "."} {
		good[name] = []byte(name)
		if err := p.WritePart(name, []byte(name)); err != nil {
			t.Errorf("WritePart(%q): %v", name, err)
		}
	}
	if err := p.WritePart("window/3", []byte("again")); err == nil || !strings.Contains(err.Error(), `duplicate part name "window/3"`) {
		t.Errorf("duplicate WritePart = %v", err)
	}
	if err := commitMeta(p, []byte("m")); err != nil {
		t.Fatal(err)
	}
	checkLatest(t, s, 1, good, []byte("m"))
}

func TestCaseOnlyDifferentNames(t *testing.T) {
	// Part files are numbered, so names differing in case only (or mapping
	// to the same slug) do not collide on case-insensitive file systems.
	s := mustOpen(t, t.TempDir(), Options{})
	parts := map[string][]byte{"Window/1": []byte("upper"), "window/1": []byte("lower"), "window_1": []byte("under")}
	commit(t, s, 1, parts, nil)
	checkLatest(t, s, 1, parts, nil)
}

func TestLifecycleErrors(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{})
	p, _ := s.Begin(1)
	if err := p.WritePart("a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := commitMeta(p, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.WritePart("b", nil); err == nil || !strings.Contains(err.Error(), "committed") {
		t.Errorf("WritePart after Commit = %v", err)
	}
	if err := commitMeta(p, nil); err == nil {
		t.Error("second Commit succeeded")
	}
	if err := p.Abort(); err == nil || !strings.Contains(err.Error(), "committed") {
		t.Errorf("Abort after Commit = %v", err)
	}
	checkList(t, s, 1)

	q, _ := s.Begin(2)
	q.WritePart("a", []byte("2"))
	if err := q.Abort(); err != nil {
		t.Fatal(err)
	}
	if err := q.Abort(); err != nil {
		t.Errorf("second Abort = %v", err)
	}
	if err := q.WritePart("b", nil); err == nil || !strings.Contains(err.Error(), "aborted") {
		t.Errorf("WritePart after Abort = %v", err)
	}
	if err := commitMeta(q, nil); err == nil || !strings.Contains(err.Error(), "aborted") {
		t.Errorf("Commit after Abort = %v", err)
	}
	if got := chkDirs(t, s.Path()); !slices.Equal(got, []int64{1}) {
		t.Fatalf("directories %v after Abort", got)
	}
	// An aborted id may be begun again.
	commit(t, s, 2, partsOf(2), nil)
	checkLatest(t, s, 2, partsOf(2), nil)
}

func TestAbortWhileWriting(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{})
	p, _ := s.Begin(1)
	var wg sync.WaitGroup
	started := make(chan struct{}, 4)
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				if err := p.WritePart(fmt.Sprintf("w%d/%d", w, i), make([]byte, 1000)); err != nil {
					if !strings.Contains(err.Error(), "aborted") {
						t.Errorf("WritePart: %v", err)
					}
					return
				}
				if i == 0 {
					started <- struct{}{}
				}
			}
		})
	}
	for range 4 {
		<-started
	}
	if err := p.Abort(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if got := chkDirs(t, s.Path()); len(got) != 0 {
		t.Fatalf("directories %v after Abort", got)
	}
}

func TestConcurrentStoreUse(t *testing.T) {
	// Commits, Latest, List and ReadPart from several goroutines at once.
	s := mustOpen(t, t.TempDir(), Options{Retain: 2})
	commit(t, s, 1, partsOf(1), nil)
	var wg sync.WaitGroup
	wg.Go(func() {
		for id := int64(2); id <= 20; id++ {
			p, err := s.Begin(id)
			if err != nil {
				t.Error(err)
				return
			}
			var pw sync.WaitGroup
			for name, data := range partsOf(id) {
				pw.Go(func() {
					if err := p.WritePart(name, data); err != nil {
						t.Error(err)
					}
				})
			}
			pw.Wait()
			if err := commitMeta(p, nil); err != nil {
				t.Error(err)
			}
		}
	})
	for range 3 {
		wg.Go(func() {
			for range 20 {
				cp, ok, err := s.Latest()
				if err != nil || !ok {
					t.Errorf("Latest = %v, %v", ok, err)
					return
				}
				// cp may be pruned meanwhile; if the read works, it is right.
				if b, err := s.ReadPart(cp, "source/0"); err == nil && string(b) != string(partsOf(cp.ID)["source/0"]) {
					t.Errorf("checkpoint %d: source/0 = %q", cp.ID, b)
				}
				if ids, err := s.List(); err != nil || len(ids) == 0 || len(ids) > 3 {
					t.Errorf("List = %v, %v", ids, err)
				}
			}
		})
	}
	wg.Wait()
	checkList(t, s, 19, 20)
}

func TestClose(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{})
	commit(t, s, 1, partsOf(1), nil)
	p, _ := s.Begin(2)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Begin(3); !errors.Is(err, ErrClosed) {
		t.Errorf("Begin = %v", err)
	}
	if _, _, err := s.Latest(); !errors.Is(err, ErrClosed) {
		t.Errorf("Latest = %v", err)
	}
	if _, err := s.List(); !errors.Is(err, ErrClosed) {
		t.Errorf("List = %v", err)
	}
	if _, err := s.ReadPart(&Checkpoint{ID: 1}, "source/0"); !errors.Is(err, ErrClosed) {
		t.Errorf("ReadPart = %v", err)
	}
	if err := p.WritePart("a", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("WritePart = %v", err)
	}
	if err := commitMeta(p, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Commit = %v", err)
	}
	if err := p.Abort(); err != nil {
		t.Errorf("Abort after Close = %v", err)
	}
	checkLatest(t, mustOpen(t, dir, Options{}), 1, partsOf(1), nil)
}

func TestFileNames(t *testing.T) {
	for _, c := range []struct {
		seq        int
		name, want string
	}{
		{1, "window/3", "part-000001-window_3"},
		{42, "ünï", "part-000042-__n__"},
		{1234567, "a.b-c_D", "part-1234567-a.b-c_D"},
		{2, strings.Repeat("z", 100), "part-000002-" + strings.Repeat("z", slugMax)},
	} {
		if got := partFileName(c.seq, c.name); got != c.want {
			t.Errorf("partFileName(%d, %q) = %q, want %q", c.seq, c.name, got, c.want)
		}
		if err := checkFileName(partFileName(c.seq, c.name)); err != nil {
			t.Error(err)
		}
	}
	if got := dirName(42); got != "chk-00000000000000000042" {
		t.Errorf("dirName(42) = %q", got)
	}
	for name, want := range map[string]int64{
		"chk-00000000000000000042": 42, "chk-09223372036854775807": 1<<63 - 1,
		"chk-00000000000000000000": 0, "chk-42": 0, "chk-0000000000000000004x": 0,
		"chk-99999999999999999999": 0, "xxx-00000000000000000042": 0, "chk-00000000000000000042.tmp": 0,
	} {
		got, ok := parseDirName(name)
		if ok != (want != 0) || got != want {
			t.Errorf("parseDirName(%q) = %d, %v", name, got, ok)
		}
	}
}

func TestRemoveAll(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for id := int64(1); id <= 3; id++ {
		p, err := s.Begin(id)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.WritePart("a", []byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := commitMeta(p, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RemoveAll(); err != nil {
		t.Fatal(err)
	}
	if ids, _ := s.List(); len(ids) != 0 {
		t.Fatalf("after RemoveAll: %v", ids)
	}
	if _, ok, _ := s.Latest(); ok {
		t.Fatal("a checkpoint survived RemoveAll")
	}
	p, err := s.Begin(1)
	if err != nil {
		t.Fatalf("Begin(1) after RemoveAll: %v", err)
	}
	p.Abort()
}

// TestResumable: the newest checkpoint at or below a limit (a sink that
// commits after the checkpoint names the last one it committed), and the
// damaged ones passed over on the way, each with its reason.
func TestResumable(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{Retain: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for id := int64(1); id <= 4; id++ {
		commit(t, s, id, partsOf(id), nil)
	}
	for _, c := range []struct {
		limit, want int64
	}{{10, 4}, {4, 4}, {3, 3}, {2, 2}, {1, 0}, {-1, 0}} {
		cp, skipped, err := s.Resumable(c.limit)
		if err != nil || len(skipped) > 0 || (cp == nil) != (c.want == 0) || cp != nil && cp.ID != c.want {
			t.Fatalf("Resumable(%d) = %v %v %v, want %d (checkpoint 1 was pruned: 3 are kept)", c.limit, cp, skipped, err, c.want)
		}
	}
	flipByte(t, manifestPath(dir, 4), func(int) int { return 0 })
	truncate(t, partPath(t, dir, 3, "window/1"), func(n int64) int64 { return n - 1 })
	cp, skipped, err := s.Resumable(10)
	if err != nil || cp == nil || cp.ID != 2 {
		t.Fatalf("Resumable(10) = %v %v, want checkpoint 2", cp, err)
	}
	if len(skipped) != 2 || skipped[0].ID != 4 || !strings.Contains(skipped[0].Reason, "MANIFEST") ||
		skipped[1].ID != 3 || !strings.Contains(skipped[1].Reason, `part "window/1"`) {
		t.Fatalf("skipped %+v, want 4 (its manifest) and 3 (part window/1)", skipped)
	}
	flipByte(t, partPath(t, dir, 2, "source/0"), func(n int) int { return n / 2 })
	if cp, skipped, err = s.Resumable(10); err != nil || cp != nil || len(skipped) != 3 {
		t.Fatalf("every checkpoint damaged: Resumable(10) = %v %+v %v, want none and 3 skipped", cp, skipped, err)
	}
}
