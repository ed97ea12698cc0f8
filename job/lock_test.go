package job

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/spec"
)

// TestRunLocks: a job holds its checkpoint directory and its file outputs
// (results file, ledger directory, dead-letter file, archive directory)
// from Open to the end of its run. Another Open on any of them is refused
// with a *LockedError naming the lock file and the holder's pid, and
// changes nothing; RunRestarting refuses at once, without a restart or
// its backoff; an Open that fails after taking the locks releases them;
// after the run, the next Open takes them again.
func TestRunLocks(t *testing.T) {
	const tmpl = `
name: locked
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
key: [k]
window: {type: tumbling, size: 10s}
aggregate: [{name: n, fn: count}]
sinks:
  results: {type: jsonl, path: %s}
  late: {type: ledger, dir: %s}
  dead_letter: {type: jsonl, path: %s}
archive: {dir: %s}
checkpoint: {dir: %s}
`
	parse := func(out, ledger, bad, archive, ck string) *spec.Plan {
		t.Helper()
		p, err := spec.Parse([]byte(fmt.Sprintf(tmpl, out, ledger, bad, archive, ck)))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := parse("out.jsonl", "ledger", "bad.jsonl", "archive", "ck")
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	// The input is missing: Open fails after taking the locks, and must
	// release them.
	if _, err := Open(p, RunOptions{Dir: dir}); err == nil || errors.Is(err, ErrLocked) {
		t.Fatalf("Open without its input: %v", err)
	}
	if err := os.WriteFile(in, []byte(`{"k": "a", "ts": 1767225600000}`+"\n"+"not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// An earlier run's results are there.
	if err := os.WriteFile(filepath.Join(dir, "out.jsonl"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	first, err := Open(p, RunOptions{Dir: dir})
	if err != nil {
		t.Fatalf("after a failed Open: %v", err)
	}
	pid := fmt.Sprintf("pid %d", os.Getpid())
	for _, c := range []struct {
		name string
		o    RunOptions
		what string
		lock string
	}{
		{"same checkpoint directory", RunOptions{Dir: dir}, "checkpoint directory", filepath.Join("ck", dirLock)},
		{"same outputs", RunOptions{Dir: dir, CheckpointDir: filepath.Join(dir, "ck2")}, "sinks.results", ".out.jsonl.run.lock"},
	} {
		_, err := Open(p, c.o)
		var le *LockedError
		if !errors.Is(err, ErrLocked) || !errors.As(err, &le) || le.What != c.what || le.PID != os.Getpid() ||
			!strings.HasSuffix(le.Lock, c.lock) || !strings.Contains(err.Error(), pid) || !strings.Contains(err.Error(), le.Lock) {
			t.Fatalf("%s: Open = %v, want a *LockedError of %s by %s (%s)", c.name, err, c.what, pid, c.lock)
		}
	}
	// Each other output on its own, and the results file through a
	// symbolic link.
	if err := os.Symlink("out.jsonl", filepath.Join(dir, "link.jsonl")); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(parse("link.jsonl", "ledger2", "bad2.jsonl", "archive2", "ck2"), RunOptions{Dir: dir}); !errors.Is(err, ErrLocked) {
		t.Fatalf("results through a link: Open = %v", err)
	}
	// And through a hard link, which no path resolution sees: the file
	// itself is locked.
	if err := os.Link(filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "hard.jsonl")); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(parse("hard.jsonl", "ledger2", "bad2.jsonl", "archive2", "ck2"), RunOptions{Dir: dir}); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "hard link") {
		t.Fatalf("results through a hard link: Open = %v", err)
	}
	for what, p2 := range map[string]*spec.Plan{
		"sinks.late ledger": parse("out2.jsonl", "ledger", "bad2.jsonl", "archive2", "ck2"),
		"sinks.dead_letter": parse("out2.jsonl", "ledger2", "bad.jsonl", "archive2", "ck2"),
		"archive":           parse("out2.jsonl", "ledger2", "bad2.jsonl", "archive", "ck2"),
	} {
		_, err := Open(p2, RunOptions{Dir: dir})
		var le *LockedError
		if !errors.As(err, &le) || le.What != what {
			t.Fatalf("%s alone: Open = %v", what, err)
		}
	}
	began := time.Now()
	restarts := 0
	_, err = RunRestarting(context.Background(), p, RunOptions{Dir: dir}, RestartPolicy{Max: 3, Backoff: time.Hour,
		OnRestart: func(int, error) { restarts++ }}, nil)
	if !errors.Is(err, ErrLocked) || restarts > 0 || time.Since(began) > 10*time.Second {
		t.Fatalf("RunRestarting beside a run: %v after %d restarts, %v", err, restarts, time.Since(began))
	}
	sum, err := first.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Get("records_in") != 2 || sum.Get("dead_letter") != 1 {
		t.Fatalf("the first run was disturbed: %s", sum.JSON())
	}
	// Released: the next runs, one by one, take the locks.
	if _, err := RunRestarting(context.Background(), p, RunOptions{Dir: dir}, RestartPolicy{Max: 3, Backoff: time.Hour}, nil); err != nil {
		t.Fatalf("after the run: %v", err)
	}
	next, err := Open(p, RunOptions{Dir: dir})
	if err != nil {
		t.Fatalf("after RunRestarting: %v", err)
	}
	if _, err := next.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestRunning: Running names a live run of the job (one that holds its
// locks) and nothing once it has ended, and makes no lock file or
// directory of an output the job never wrote.
func TestRunning(t *testing.T) {
	p, err := spec.Parse([]byte(`
name: live
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
key: [k]
window: {type: tumbling, size: 10s}
aggregate: [{name: n, fn: count}]
sinks:
  results: {type: jsonl, path: out.jsonl}
  late: {type: ledger, dir: ledger}
`))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if l := Running(p, RunOptions{Dir: dir}); l != nil {
		t.Fatalf("before any run: %v", l)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("Running made %d files", len(entries))
	}
	if err := os.WriteFile(filepath.Join(dir, "in.jsonl"), []byte(`{"k": "a", "ts": 1767225600000}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	j, err := Open(p, RunOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	l := Running(p, RunOptions{Dir: dir})
	if l == nil || l.What != "sinks.results" || l.PID != os.Getpid() {
		t.Fatalf("during the run: %+v", l)
	}
	if _, err := j.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l := Running(p, RunOptions{Dir: dir}); l != nil {
		t.Fatalf("after the run: %v", l)
	}
}

// TestOneFileTwoOutputs: two outputs of one run that are one file by two
// names, through a symbolic link or a hard link, are refused before the
// run writes (their lines would interleave).
func TestOneFileTwoOutputs(t *testing.T) {
	for _, link := range []string{"symbolic", "hard"} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "in.jsonl"), []byte(`{"k": "a", "ts": 1767225600000}`+"\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "out.jsonl"), nil, 0o644)
		mk := os.Symlink
		if link == "hard" {
			mk = func(old, name string) error { return os.Link(filepath.Join(dir, old), name) }
		}
		if err := mk("out.jsonl", filepath.Join(dir, "bad.jsonl")); err != nil {
			t.Fatal(err)
		}
		p := mustParse(t, `
name: onefile
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
key: [k]
window: {type: tumbling, size: 10s}
aggregate: [{name: n, fn: count}]
sinks:
  results: {type: jsonl, path: out.jsonl}
  dead_letter: {type: jsonl, path: bad.jsonl}
`)
		_, err := Open(p, RunOptions{Dir: dir})
		if err == nil || !strings.Contains(err.Error(), "is the file of sinks.results too") {
			t.Errorf("a %s link: Open = %v, want a refusal", link, err)
		}
	}
}
