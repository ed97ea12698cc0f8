package job

import (
	"context"
	"fmt"
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
	refDir, refSum := runSpec(t, hotJob, nil, RunOptions{Parallelism: 2})
	// Stopped one-phase and resumed two-phase, and the other way: the
	// window's state is the same (two_phase is not state-relevant).
	for _, order := range [][2]string{{two, two}, {hotJob, two}, {two, hotJob}} {
		twoPhaseResume(t, order, refDir, refSum, files)
	}
}

// twoPhaseResume runs specs[0] until its third checkpoint, then resumes
// with specs[1]: the outputs and counters are refDir's and refSum's.
func twoPhaseResume(t *testing.T, specs [2]string, refDir string, refSum Summary, files []string) {
	t.Helper()
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
		s, err := spec.Parse([]byte(specs[min(attempt, 1)]))
		if err != nil {
			t.Fatal(err)
		}
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

// TestTwoPhaseDeterministic: deterministic runs of jobs with and without
// two_phase write the same bytes. Cases a user's trial found: sliding
// windows whose size is not a multiple of their slide (the earliest
// window of a record ends before the first slide boundary after it), and
// two channels whose records a combiner held while the other channel's
// watermark fired an early pane.
func TestTwoPhaseDeterministic(t *testing.T) {
	const b = 1767225600000
	line := func(ch, dt int, k string, v int) string {
		return fmt.Sprintf(`{"$channel":%d,"ts":%d,"k":%q,"v":%d}`, ch, b+dt, k, v)
	}
	cases := []struct {
		name, source, window, input string
	}{
		{"sliding 10s every 4s", "{type: file, path: in.jsonl}", "{type: sliding, size: 10s, slide: 4s}\nallowed_lateness: 5s",
			strings.Join([]string{line(0, 1000, "a", 1), line(0, 11000, "a", 2), line(0, 8500, "a", 3), line(0, 9000, "a", 4),
				line(0, 9500, "a", 5), line(0, 30000, "a", 6)}, "\n")},
		{"sliding 10s every 4s offset 1s", "{type: file, path: in.jsonl}", "{type: sliding, size: 10s, slide: 4s, offset: 1s}",
			strings.Join([]string{line(0, 1000, "a", 1), line(0, 11000, "a", 2), line(0, 8500, "a", 3), line(0, 9000, "a", 4),
				line(0, 9500, "a", 5), line(0, 30000, "a", 6)}, "\n")},
		{"two channels, early panes", "{type: file, path: in.jsonl, channels: 2}", "{type: tumbling, size: 10s}\ntrigger: {type: continuous, interval: 2s}",
			strings.Join([]string{line(0, 1000, "a", 1), line(1, 5000, "b", 10), line(0, 7000, "a", 2), line(0, 5500, "a", 4),
				line(1, 9000, "b", 20)}, "\n")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			job := fmt.Sprintf(`
name: det
source: %s
watermark: {max_out_of_orderness: 0s}
key: [k]
window: %s
aggregate:
  - {name: n, fn: count}
  - {name: total, fn: sum, field: v}
sinks:
  results: {type: jsonl, path: out.jsonl}
  late: {type: jsonl, path: late.jsonl}
  late_partial: {type: jsonl, path: partial.jsonl}
`, c.source, c.window)
			files := map[string]string{"in.jsonl": c.input + "\n"}
			refDir, refSum := runSpec(t, job, files, RunOptions{Deterministic: true})
			dir, sum := runSpec(t, job+"two_phase: true\n", files, RunOptions{Deterministic: true})
			for _, f := range []string{"out.jsonl", "late.jsonl", "partial.jsonl"} {
				want, got := readFile(t, refDir, f), readFile(t, dir, f)
				if got != want {
					t.Fatalf("%s differs\none-phase:\n%s\ntwo-phase:\n%s", f, want, got)
				}
			}
			if string(sum.JSON()) != string(refSum.JSON()) {
				t.Fatalf("summary\n%s\nwant\n%s", sum.JSON(), refSum.JSON())
			}
		})
	}
}
