package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/job"
)

// TestResumeChangedJob: weir run resumes a crashed job whose spec gained
// a sink and another checkpoint interval, saying so in one line, and
// refuses (exit 2) one whose window changed, naming the field, with the
// --fresh hint, without running it.
func TestResumeChangedJob(t *testing.T) {
	dir := t.TempDir()
	write := func(extra string) {
		job := fmt.Sprintf(smallJob, "resume", "out.jsonl", extra)
		if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// crash runs job.yaml until it fails after its second checkpoint.
	crash := func() {
		p, ok := loadSpec("job.yaml", IO{Dir: dir, Stderr: io.Discard})
		if !ok {
			t.Fatal("spec")
		}
		hits := 0
		j, err := job.Open(p, job.RunOptions{Dir: dir, Deterministic: true, CheckpointInterval: time.Millisecond, Crash: func(point string) {
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
	}
	write("checkpoint: {dir: ck}\n")
	crash()
	changed := "  dead_letter: {type: jsonl, path: bad.jsonl}\ncheckpoint: {dir: ck, interval: 2s}\n"
	write(changed)
	var stderr syncBuffer
	code := Main(context.Background(), []string{"run", "job.yaml"}, IO{Dir: dir, Stdout: io.Discard, Stderr: &stderr})
	out := stderr.String()
	if code != ExitOK || strings.Count(out, "resuming from checkpoint 2 in ") != 1 ||
		!strings.Contains(out, " across a changed checkpoint.interval and an added sink sinks.dead_letter (--fresh starts over)\n") ||
		!strings.Contains(out, "job resume finished: 20000 records in") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.jsonl")); err != nil {
		t.Fatalf("the added sink: %v", err)
	}

	crash() // the finished run's directory starts over
	job, err := os.ReadFile(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(strings.Replace(string(job), "size: 1m", "size: 5m", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	var refused syncBuffer
	code = Main(context.Background(), []string{"run", "job.yaml"}, IO{Dir: dir, Stdout: io.Discard, Stderr: &refused})
	out = refused.String()
	if code != ExitUsage || !strings.Contains(out, ": it was written by a job whose window differs from this spec's (window.size); restore with the spec that wrote it, or start over with --fresh") ||
		strings.Contains(out, "job resume") {
		t.Fatalf("exit %d, want %d:\n%s", code, ExitUsage, out)
	}
}
