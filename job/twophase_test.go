package job

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/spec"
)

// hotJob is OrderJob's shape with a hot key (a third of the records are
// u0's) and watermarks every 40 records of the backlog, so that the
// combiners of a two-phase run gather bundles between them.
const hotJob = `
name: hot
source:
  type: generator
  channels: 1
  generator:
    records: 40000
    keys: 300
    hot: 0.33
    duration: 20m
    disorder:
      - {share: 0.9, max: 20s}
      - {share: 0.08, min: 20s, max: 5m}
      - {share: 0.02, min: 5m, max: 30m}
    bad: 0.002
    seed: 5
watermark: {max_out_of_orderness: 20s, backlog_every: 40}
key: [user_id]
window: {type: sliding, size: 1m, slide: 20s}
allowed_lateness: 3m
trigger: {type: continuous, interval: 20s}
aggregate:
  - {name: orders, fn: count}
  - {name: total, fn: sum, field: amount}
  - {name: avg, fn: avg, field: amount}
  - {name: top, fn: max, field: amount}
  - {name: orders_seen, fn: count_distinct, field: order_id}
sinks:
  results: {type: jsonl, path: out.jsonl}
  late: {type: jsonl, path: late.jsonl}
  late_partial: {type: jsonl, path: partial.jsonl}
`

// sortedLines is a results file's lines, sorted, with the run's id cut
// out.
func sortedLines(t *testing.T, path string) []string {
	t.Helper()
	lines := jobtest.ResultLines(t, path)
	for i, l := range lines {
		if at := strings.Index(l, `"run":`); at >= 0 {
			end := at + strings.IndexByte(l[at:], ',')
			lines[i] = l[:at] + l[end+1:]
		}
	}
	slices.Sort(lines)
	return lines
}

// TestTwoPhase runs hotJob with and without two_phase on the parallel
// runtime (one source channel, a watermark every 40 records, so its
// records are classified the same in every run, W10):
// the results, late and partially late records and the summary are the
// same, also when the two-phase run crashes and resumes from a
// checkpoint (its combiners send their bundles before the barrier).
func TestTwoPhase(t *testing.T) {
	files := []string{"out.jsonl", "late.jsonl", "partial.jsonl"}
	two := strings.Replace(hotJob, "allowed_lateness: 3m", "allowed_lateness: 3m\ntwo_phase: true", 1)
	for _, par := range []int{1, 2} {
		refDir, refSum := runSpec(t, hotJob, nil, RunOptions{Parallelism: par})
		dir, sum := runSpec(t, two, nil, RunOptions{Parallelism: par})
		for _, f := range files {
			sameRows(t, f, sortedLines(t, filepath.Join(dir, f)), sortedLines(t, filepath.Join(refDir, f)))
		}
		if string(sum.JSON()) != string(refSum.JSON()) {
			t.Fatalf("parallelism %d: summary\n%s\nwant\n%s", par, sum.JSON(), refSum.JSON())
		}
		if sum.Get("accepted_late") == 0 || sum.Get("late_side_output") == 0 {
			t.Fatalf("the stream has no late records: %s", sum.JSON())
		}
	}
	s, err := spec.Parse([]byte(two))
	if err != nil {
		t.Fatal(err)
	}
	refDir, refSum := runSpec(t, hotJob, nil, RunOptions{Parallelism: 2})
	dir := t.TempDir()
	for attempt := 0; ; attempt++ {
		if attempt > 3 {
			t.Fatal("the run never finished")
		}
		// The first attempt stops at once after its third checkpoint
		// (on the parallel runtime a panic there would end the test
		// binary): what it wrote after that checkpoint is cut back on
		// resume, as after a crash.
		ctx, cancel := context.WithCancel(context.Background())
		hits := 0
		o := RunOptions{Dir: dir, Parallelism: 2, Now: jobtest.TestNow, CheckpointDir: filepath.Join(dir, "ck"), CheckpointInterval: 5 * time.Millisecond,
			Crash: func(p string) {
				if p == "sink-committed" && attempt == 0 {
					if hits++; hits == 3 {
						cancel()
					}
				}
			}}
		j, err := Open(s, o)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := j.Run(ctx)
		cancel()
		if err != nil {
			if attempt > 0 {
				t.Fatalf("attempt %d: %v", attempt, err)
			}
			continue
		}
		if attempt == 0 {
			t.Skip("the run ended before its third checkpoint: nothing was resumed")
		}
		for _, f := range files {
			sameRows(t, f+" after a crash", sortedLines(t, filepath.Join(dir, f)), sortedLines(t, filepath.Join(refDir, f)))
		}
		for _, c := range []string{"records_in", "accepted", "accepted_late", "late_side_output", "dead_letter", "results"} {
			if sum.Get(c) != refSum.Get(c) {
				t.Fatalf("%s after a crash: %d, want %d\n%s", c, sum.Get(c), refSum.Get(c), sum.JSON())
			}
		}
		return
	}
}
