package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/spec"
)

const stdinJob = `
name: live
source: {type: stdin}
watermark: {max_out_of_orderness: 1s, emit: every_record}
key: [k]
window: {type: tumbling, size: 10s}
aggregate: [{name: n, fn: count}]
sinks:
  results: {type: jsonl, path: out.jsonl}
`

// syncBuffer is a bytes.Buffer safe for the progress goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestInterrupt stops a live run on stdin as Ctrl-C does: the job ends
// without the final watermark (the open window is counted, not fired), the
// sinks are flushed, and the summary says it stopped. With --drain the open
// window fires first.
func TestInterrupt(t *testing.T) {
	for _, drain := range []bool{false, true} {
		t.Run(fmt.Sprint("drain=", drain), func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(stdinJob), 0o644); err != nil {
				t.Fatal(err)
			}
			pr, pw := io.Pipe()
			defer pw.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var stderr syncBuffer
			args := []string{"run", "job.yaml"}
			if drain {
				args = append(args, "--drain")
			}
			done := make(chan int)
			go func() {
				done <- Main(ctx, args, IO{Dir: dir, Stdin: pr, Stdout: io.Discard, Stderr: &stderr, Terminal: true, ProgressEvery: time.Millisecond})
			}()
			// Records: the first window [0,10s) closes with the watermark
			// after 12 s; the second stays open while the stream is live.
			for _, ts := range []int64{1767225600000, 1767225601000, 1767225612000} {
				fmt.Fprintf(pw, `{"k": "a", "ts": %d}`+"\n", ts)
			}
			for !strings.Contains(stderr.String(), "3 records (") { // the progress line
				time.Sleep(time.Millisecond)
			}
			cancel()
			var code int
			select {
			case code = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the run did not stop")
			}
			out := stderr.String()
			if code != ExitOK || !strings.Contains(out, "job live stopped") || !strings.Contains(out, "conservation holds") {
				t.Fatalf("exit %d:\n%s", code, out)
			}
			results, err := os.ReadFile(filepath.Join(dir, "out.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Count(string(results), "\n")
			open := strings.Contains(out, "open windows at the end: 0")
			if drain != open || lines == 0 {
				t.Fatalf("drain=%v: %d result lines, summary:\n%s", drain, lines, out)
			}
		})
	}
}

// TestProgress shows the live progress line of a run on a terminal.
func TestProgress(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(stdinJob), 0o644); err != nil {
		t.Fatal(err)
	}
	p, ok := loadSpec("job.yaml", IO{Dir: dir, Stderr: io.Discard})
	if !ok {
		t.Fatal("spec")
	}
	pr, pw := io.Pipe()
	jb, err := openForTest(p, dir, pr)
	if err != nil {
		t.Fatal(err)
	}
	var w syncBuffer
	ready := make(chan struct{})
	close(ready)
	stop := showProgress(func() *job.Job { return jb }, ready, &w, 5*time.Millisecond)
	done := make(chan error)
	go func() { _, err := jb.Run(context.Background()); done <- err }()
	fmt.Fprintln(pw, `{"k": "a", "ts": 1767225600000}`)
	for !strings.Contains(w.String(), "1 records") {
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/s)", "watermark", "lag", "late re-fires", "side output", "dead letters", "state"} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("progress lacks %q: %q", want, w.String())
		}
	}
}

// progressWatch passes writes on to w and calls seen with the count of
// records of each progress line written.
type progressWatch struct {
	w    io.Writer
	seen func(records int)
}

var progressRecords = regexp.MustCompile(`\x1b\[K(\d+) records \(`)

func (p progressWatch) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	for _, m := range progressRecords.FindAllSubmatch(b, -1) {
		if c, err := strconv.Atoi(string(m[1])); err == nil {
			p.seen(c)
		}
	}
	return n, err
}

func openForTest(p *spec.Plan, dir string, stdin io.Reader) (*job.Job, error) {
	return job.Open(p, job.RunOptions{Dir: dir, Stdin: stdin})
}

// TestInterruptCheckpoint: Ctrl-C on a run with checkpoints takes one
// before stopping; the next run resumes from it and ends with the outputs
// of a run that was never stopped.
func TestInterruptCheckpoint(t *testing.T) {
	spec := `
name: stoppable
source:
  type: generator
  generator: {records: 400000, keys: 300, duration: 1h, seed: 5, disorder: [{share: 0.2, max: 2m}]}
watermark: {max_out_of_orderness: 30s}
key: [user_id]
window: {type: tumbling, size: 1m}
allowed_lateness: 1m
aggregate: [{name: n, fn: count}]
sinks:
  results: {type: jsonl, path: out.jsonl}
  late: {type: jsonl, path: late.jsonl}
checkpoint: {dir: ck, interval: 1h}
`
	// run runs the job in dir; with stop, it cancels the run as soon as
	// the progress line counts 100,000 records read (a quarter: windows
	// both fired and kept for the lateness and still open), from the
	// progress goroutine's write, so the run cannot end first.
	run := func(dir string, stop bool, flags ...string) (int, string) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var stderr syncBuffer
		var w io.Writer = &stderr
		if stop {
			w = progressWatch{&stderr, func(n int) {
				if n >= 100_000 {
					cancel()
				}
			}}
		}
		code := Main(ctx, append([]string{"run", "job.yaml", "--deterministic", "--now", "2026-06-01T00:00:00Z"}, flags...),
			IO{Dir: dir, Stdout: io.Discard, Stderr: w, Terminal: true, ProgressEvery: time.Millisecond})
		return code, stderr.String()
	}
	ref := t.TempDir()
	if err := os.WriteFile(filepath.Join(ref, "job.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := run(ref, false); code != ExitOK {
		t.Fatal(out)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := run(dir, true)
	if code != ExitOK || !strings.Contains(out, "took checkpoint") || !strings.Contains(out, "stopped") || strings.Contains(out, "--drain ends a job") {
		t.Fatalf("exit %d, want a stopped run that took a checkpoint:\n%s", code, out)
	}
	// With --drain, the stop says that a resume removes what the drain
	// fires after the checkpoint.
	drained := t.TempDir()
	if err := os.WriteFile(filepath.Join(drained, "job.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := run(drained, true, "--drain"); code != ExitOK || !strings.Contains(out, "a run resumed from it removes those results and fires their windows again when their time comes; --drain ends a job for good") {
		t.Fatalf("exit %d, want the drain's note:\n%s", code, out)
	}
	// The stopped run's open windows: those waiting for the watermark
	// apart from those fired and kept for the allowed lateness (1m).
	if m := regexp.MustCompile(`open windows at the end: (\d+) \((\d+) still open, (\d+) fired and kept only for the allowed lateness\)`).FindStringSubmatch(out); m == nil || m[2] == "0" || m[3] == "0" {
		t.Fatalf("the stopped run's open windows are not split:\n%s", out)
	}
	code, out = run(dir, false)
	if code != ExitOK || !strings.Contains(out, "resuming from checkpoint") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	// The rate is over this process's records: the summary counts the
	// run's 400,000, of which the first process read some.
	m := regexp.MustCompile(`over the (\d+) records this process read; (\d+) before the resume`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no rate over this process's records:\n%s", out)
	}
	this, _ := strconv.Atoi(m[1])
	before, _ := strconv.Atoi(m[2])
	if before <= 0 || this <= 0 || this+before != 400000 {
		t.Fatalf("this process %d + before %d records, want 400000 in all:\n%s", this, before, out)
	}
	for _, f := range []string{"out.jsonl", "late.jsonl"} {
		a, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(ref, f))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 {
			t.Fatalf("the uninterrupted run wrote no %s", f)
		}
		if !bytes.Equal(a, b) {
			t.Fatalf("%s differs after stop and resume (%d bytes, want %d)", f, len(a), len(b))
		}
	}
}

// smallJob is a job (name, results file, more) of 20,000 generated
// records.
const smallJob = `
name: %s
source:
  type: generator
  generator: {records: 20000, keys: 50, duration: 1h, seed: 1}
watermark: {max_out_of_orderness: 10s}
key: [user_id]
window: {type: tumbling, size: 1m}
aggregate: [{name: n, fn: count}]
sinks:
  results: {type: jsonl, path: %s}
%s`

// TestFailedRunSummary: the summary of a run that failed says so (its
// results could not be written: /dev/full refuses every write), not
// "finished", and the exit code is 1.
func TestFailedRunSummary(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	dir := t.TempDir()
	yml := fmt.Sprintf(smallJob, "full", "/dev/full", "")
	if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	code := Main(context.Background(), []string{"run", "job.yaml"}, IO{Dir: dir, Stdout: io.Discard, Stderr: &stderr})
	out := stderr.String()
	if code != ExitFailed || !strings.Contains(out, "job full failed: ") || strings.Contains(out, "finished") ||
		!strings.Contains(out, "no space left on device") {
		t.Fatalf("exit %d, want %d, a summary saying the job failed, and why:\n%s", code, ExitFailed, out)
	}
}

// TestDamagedCheckpoints: when no checkpoint verifies, weir run refuses
// (exit 2) with each checkpoint and why and the --fresh hint, instead of
// starting over; with --fresh it starts over.
func TestDamagedCheckpoints(t *testing.T) {
	dir := t.TempDir()
	yml := fmt.Sprintf(smallJob, "damaged", "out.jsonl", "checkpoint: {dir: ck}\n")
	if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	p, ok := loadSpec("job.yaml", IO{Dir: dir, Stderr: io.Discard})
	if !ok {
		t.Fatal("spec")
	}
	// A run that fails after its second checkpoint; it takes one before
	// every read of its source, however fast the machine.
	hits := 0
	j, err := job.Open(p, job.RunOptions{Dir: dir, Deterministic: true, CheckpointInterval: time.Millisecond, CheckpointClock: clock.NewStepping(time.Time{}, time.Hour), Crash: func(point string) {
		if point == "after-manifest" {
			if hits++; hits == 2 {
				panic("crash")
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Run(context.Background()); err == nil {
		t.Fatal("the crash did not happen")
	}
	chks, err := filepath.Glob(filepath.Join(dir, "ck", "chk-*", "MANIFEST"))
	if err != nil || len(chks) != 2 {
		t.Fatalf("manifests %q (%v), want 2", chks, err)
	}
	for _, m := range chks {
		b, err := os.ReadFile(m)
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: %d bytes, %v", m, len(b), err)
		}
		b[len(b)-1] ^= 0x40
		if err := os.WriteFile(m, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stderr syncBuffer
	code := Main(context.Background(), []string{"run", "job.yaml"}, IO{Dir: dir, Stdout: io.Discard, Stderr: &stderr})
	out := stderr.String()
	for _, want := range []string{"no checkpoint in ck verifies", "\n  checkpoint 2: MANIFEST", "\n  checkpoint 1: MANIFEST", "--fresh"} {
		if code != ExitUsage || !strings.Contains(out, want) {
			t.Fatalf("exit %d, want %d and %q in:\n%s", code, ExitUsage, want, out)
		}
	}
	if strings.Contains(out, "job damaged") {
		t.Fatalf("a refused run ran:\n%s", out)
	}
	var fresh syncBuffer
	code = Main(context.Background(), []string{"run", "job.yaml", "--fresh"}, IO{Dir: dir, Stdout: io.Discard, Stderr: &fresh})
	if out := fresh.String(); code != ExitOK || !strings.Contains(out, "job damaged finished: 20000 records in") || strings.Contains(out, "resuming") {
		t.Fatalf("--fresh: exit %d:\n%s", code, out)
	}
}

// TestResumeOntoChangedInput: a resume onto an input that is not the one
// the checkpoint read (the file was rewritten) is refused with exit 2 and
// the fix, and prints no summary of the restored counters.
func TestResumeOntoChangedInput(t *testing.T) {
	dir := t.TempDir()
	write := func(v int) {
		var b strings.Builder
		for i := range 200_000 {
			fmt.Fprintf(&b, `{"k":"k%d","v":%d,"ts":%d}`+"\n", i%50, v, 1767225600000+int64(i)*10)
		}
		if err := os.WriteFile(filepath.Join(dir, "in.jsonl"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(1)
	spec := `
name: rewritten
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
key: [k]
window: {type: tumbling, size: 10s}
aggregate: [{name: sum, fn: sum, field: v}]
sinks:
  results: {type: jsonl, path: out.jsonl}
checkpoint: {dir: ck, interval: 1h}
`
	if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncBuffer
	w := progressWatch{&stderr, func(n int) {
		if n >= 50_000 {
			cancel()
		}
	}}
	if code := Main(ctx, []string{"run", "job.yaml", "--deterministic", "--now", "2026-06-01T00:00:00Z"}, IO{Dir: dir, Stdout: io.Discard, Stderr: w, Terminal: true, ProgressEvery: time.Millisecond}); code != ExitOK || !strings.Contains(stderr.String(), "took checkpoint") {
		t.Fatalf("exit %d, want a stopped run that took a checkpoint:\n%s", code, stderr.String())
	}
	write(2)
	var out syncBuffer
	code := Main(context.Background(), []string{"run", "job.yaml", "--deterministic", "--now", "2026-06-01T00:00:00Z"}, IO{Dir: dir, Stdout: io.Discard, Stderr: &out})
	if code != ExitUsage || !strings.Contains(out.String(), "weir run: refused:") || !strings.Contains(out.String(), "--fresh") || strings.Contains(out.String(), "records in") {
		t.Fatalf("exit %d, want 2, the refusal naming --fresh and no summary:\n%s", code, out.String())
	}
}
