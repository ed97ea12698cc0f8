package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
)

var crashPoints = []string{CrashPartWritten, CrashBeforeManifest, CrashAfterManifest, CrashAfterRetain}

// completeAfter reports whether a crash at point leaves the checkpoint
// being committed complete.
func completeAfter(point string) bool {
	return point == CrashAfterManifest || point == CrashAfterRetain
}

// TestCrashPoints crashes (a panic from the Crash hook, recovered) at each
// point while committing checkpoint 2 over a complete checkpoint 1, with
// Retain 1 so that a premature prune would lose checkpoint 1, then reopens
// the directory as a restarted process would.
func TestCrashPoints(t *testing.T) {
	for _, point := range crashPoints {
		t.Run(point, func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, dir, Options{Retain: 1})
			commit(t, s, 1, partsOf(1), []byte("meta 1"))

			crashing := mustOpen(t, dir, Options{Retain: 1, Crash: panicAt(point)})
			got, err := catchCrash(func() error {
				p, err := crashing.Begin(2)
				if err != nil {
					return err
				}
				for name, data := range partsOf(2) {
					if err := p.WritePart(name, data); err != nil {
						return err
					}
				}
				return commitMeta(p, []byte("meta 2"))
			})
			if got != point || err != nil {
				t.Fatalf("crashed at %q (err %v), want a crash at %q", got, err, point)
			}

			log := &logRecorder{}
			s = mustOpen(t, dir, Options{Retain: 1, Logger: log.logger()})
			switch point {
			case CrashAfterManifest: // complete, not yet pruned
				checkLatest(t, s, 2, partsOf(2), []byte("meta 2"))
				checkList(t, s, 1, 2)
			case CrashAfterRetain:
				checkLatest(t, s, 2, partsOf(2), []byte("meta 2"))
				checkList(t, s, 2)
			default: // unfinished: removed by Open
				checkLatest(t, s, 1, partsOf(1), []byte("meta 1"))
				checkList(t, s, 1)
				if ids := chkDirs(t, dir); !slices.Equal(ids, []int64{1}) {
					t.Fatalf("directories after Open: %v", ids)
				}
			}
			if r := log.skipped(2); len(r) != 0 {
				t.Errorf("Latest skipped checkpoint 2: %q", r)
			}

			// Checkpointing goes on; an unfinished id can be reused.
			next := int64(2)
			if completeAfter(point) {
				next = 3
			}
			commit(t, s, next, partsOf(next), nil)
			checkLatest(t, s, next, partsOf(next), nil)
			checkList(t, s, next)
		})
	}
}

// A crash while a checkpoint is pending without any hook firing (e.g. a
// kill between two WritePart calls) leaves the previous checkpoint.
func TestCrashWhilePending(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{})
	commit(t, s, 1, partsOf(1), nil)
	p, err := s.Begin(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WritePart("source/0", []byte("x")); err != nil {
		t.Fatal(err)
	}
	// The process dies here: s and p are abandoned.
	s = mustOpen(t, dir, Options{})
	checkLatest(t, s, 1, partsOf(1), nil)
	commit(t, s, 2, partsOf(2), nil)
	checkLatest(t, s, 2, partsOf(2), nil)
}

const (
	killEnv    = "CHECKPOINT_TEST_KILL_AT"
	killDirEnv = "CHECKPOINT_TEST_DIR"
	killCode   = 99
)

// killChild is the child process of TestKillAtCrashPoints: it commits
// checkpoint 2 with a Crash hook that exits the process at point, which,
// like kill -9, runs no deferred code and leaves files as they are.
func killChild(point string) int {
	s, err := Open(os.Getenv(killDirEnv), Options{Retain: 1, Crash: func(p string) {
		if p == point {
			os.Exit(killCode)
		}
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	p, err := s.Begin(2)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for name, data := range partsOf(2) {
		if err := p.WritePart(name, data); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	if err := commitMeta(p, []byte("meta 2")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestKillAtCrashPoints is TestCrashPoints with a real process exit.
func TestKillAtCrashPoints(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	for _, point := range crashPoints {
		t.Run(point, func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, dir, Options{Retain: 1})
			commit(t, s, 1, partsOf(1), []byte("meta 1"))

			cmd := exec.Command(exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), killEnv+"="+point, killDirEnv+"="+dir)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != killCode {
				t.Fatalf("child: %v, want exit code %d; output:\n%s", err, killCode, out)
			}

			s = mustOpen(t, dir, Options{Retain: 1})
			if completeAfter(point) {
				checkLatest(t, s, 2, partsOf(2), []byte("meta 2"))
			} else {
				checkLatest(t, s, 1, partsOf(1), []byte("meta 1"))
			}
			commit(t, s, 3, partsOf(3), nil)
			checkLatest(t, s, 3, partsOf(3), nil)
			checkList(t, s, 3)
		})
	}
}
