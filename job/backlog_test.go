package job

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/connector/fileio"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/spec"
)

// disorderedOrders returns n orders step ms apart in event time, one in
// every tenth pushed back by up to 40 s, for users u0 to u(users-1), as
// jsonl.
func disorderedOrders(n int, step etime.Duration, users int, seed uint64) (string, []etime.Time) {
	rng := rand.New(rand.NewPCG(seed, 1))
	var b strings.Builder
	ts := make([]etime.Time, n)
	base := etime.Time(1767225600000)
	for i := range n {
		t := base.Add(etime.Duration(i) * step)
		if rng.IntN(10) == 0 {
			t = t.Add(-etime.Duration(rng.IntN(40_000)))
		}
		ts[i] = t
		fmt.Fprintf(&b, `{"user_id":"u%d","amount":1,"ts":%d}`+"\n", rng.IntN(users), t)
	}
	return b.String(), ts
}

// classifyEvery is the oracle of W10: the records' on time, late and too
// late counts in tumbling windows of size with the allowed lateness, under
// a watermark of maxTs - bound - 1 after every every-th record (B2-B4 per
// record). It fails the test unless every layer is exercised.
func classifyEvery(t *testing.T, ts []etime.Time, every int, bound, size, lateness etime.Duration) [3]int64 {
	t.Helper()
	var c [3]int64
	wm, maxTS := etime.MinTime, etime.MinTime
	for i, x := range ts {
		end := x - x%etime.Time(size) + etime.Time(size)
		switch {
		case end-1+etime.Time(lateness) <= wm:
			c[2]++
		case end-1 <= wm:
			c[1]++
		default:
			c[0]++
		}
		maxTS = max(maxTS, x)
		if (i+1)%every == 0 {
			wm = max(wm, maxTS.Add(-bound-1))
		}
	}
	if c[1] == 0 || c[2] == 0 {
		t.Fatalf("the input must exercise every layer: on time, late, too late %v", c)
	}
	return c
}

// W10: a file replay's three layers do not depend on its read speed. The
// same file is replayed with a clock that never moves (no periodic
// watermark during the read), with the wall clock, and with a clock
// racing ahead (a periodic watermark due at every look); each run must
// classify exactly as a watermark after every 1,000 records does, which
// the test computes on its own.
func TestReplaySpeed(t *testing.T) {
	const n, every = 20_000, 1000
	const bound, size, lateness = 5_000, 10_000, 5_000
	body, ts := disorderedOrders(n, 1000, 5, 7)

	want := classifyEvery(t, ts, every, bound, size, lateness)

	job := `
name: speed
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 5s, interval: 1ms}
key: [user_id]
window: {type: tumbling, size: 10s}
allowed_lateness: 5s
aggregate: [{name: total, fn: sum, field: amount}]
sinks:
  results: {type: jsonl, path: out.jsonl}
  late: {type: jsonl, path: late.jsonl}
`
	checkAtEverySpeed(t, job, map[string]string{"in.jsonl": body}, want)
}

// checkAtEverySpeed runs job with a clock that never moves, the wall
// clock and a racing one, and checks that each run classifies its
// records as want (on time, late, too late).
func checkAtEverySpeed(t *testing.T, job string, files map[string]string, want [3]int64) {
	t.Helper()
	for name, c := range map[string]clock.Clock{
		"stopped": clock.NewFake(jobtest.TestNow),
		"wall":    clock.Real{},
		"racing":  clock.NewStepping(jobtest.TestNow, time.Second),
	} {
		t.Run(name, func(t *testing.T) {
			_, sum := runSpec(t, job, files, RunOptions{Clock: c, Parallelism: 2})
			got := [3]int64{sum.Get("accepted") - sum.Get("accepted_late"), sum.Get("accepted_late"), sum.Get("late_side_output")}
			if got != want {
				t.Errorf("on time, late, too late = %v, want %v (a watermark after every 1000 records)", got, want)
			}
		})
	}
}

// W10's labels: with backlog emission off and processing time standing
// still, a file is read whole before its first watermark, every record is
// on time, and the summary must not call them all "within the bound": the
// records that a watermark after every record would have made late or too
// late are counted as on time only because the watermark trailed.
func TestTrailingCounted(t *testing.T) {
	const bound, size = 5_000, 10_000
	body, ts := disorderedOrders(20_000, 1000, 5, 7)
	var want int64
	maxTS := etime.MinTime
	for _, t := range ts {
		if maxTS != etime.MinTime && t-t%size+size-1 <= maxTS.Add(-bound-1) {
			want++
		}
		maxTS = max(maxTS, t)
	}
	job := `
name: labels
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 5s, backlog_every: 0}
key: [user_id]
window: {type: tumbling, size: 10s}
allowed_lateness: 5s
aggregate: [{name: n, fn: count}]
sinks:
  results: {type: jsonl, path: out.jsonl}
`
	_, sum := runSpec(t, job, map[string]string{"in.jsonl": body}, RunOptions{Clock: clock.NewFake(jobtest.TestNow), Parallelism: 2})
	if sum.Get("accepted_late") != 0 || sum.Get("accepted") != 20_000 {
		t.Fatalf("every record must be on time without a watermark: %s", sum.JSON())
	}
	if got := sum.Get("on_time_trailing"); got != want || want == 0 {
		t.Fatalf("on_time_trailing %d, want %d (late for a record-by-record watermark)", got, want)
	}
	// A watermark after every record trails nothing: the records it made
	// late are late, none is counted as trailing.
	_, sum = runSpec(t, strings.Replace(job, "backlog_every: 0", "backlog_every: 1", 1), map[string]string{"in.jsonl": body}, RunOptions{Clock: clock.NewFake(jobtest.TestNow), Parallelism: 2})
	if got := sum.Get("on_time_trailing"); got != 0 || sum.Get("accepted_late")+sum.Get("late_side_output") == 0 {
		t.Fatalf("with a watermark after every record: %d counted as trailing, want 0: %s", got, sum.JSON())
	}
}

// TestResumeRewrittenInput: a job crashes after a checkpoint, and its input
// file is then rewritten in place with lines of the same lengths. The
// resume is refused at once, naming the file and --fresh, and the restart
// policy does not retry it (a retry would meet the same file).
func TestResumeRewrittenInput(t *testing.T) {
	line := func(i, v int) string {
		return fmt.Sprintf(`{"k":"u%d","v":%d,"ts":%d}`+"\n", i%7, v, 1767225600000+int64(i)*100)
	}
	var a, b strings.Builder
	for i := range 20000 {
		a.WriteString(line(i, 1))
		b.WriteString(line(i, 2))
	}
	job := `
name: rewrite
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
key: [k]
window: {type: tumbling, size: 10s}
aggregate: [{name: sum, fn: sum, field: v}]
sinks:
  results: {type: jsonl, path: out.jsonl}
`
	s, err := spec.Parse([]byte(job))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte(a.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "ck")
	o := RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, CheckpointDir: ck, CheckpointInterval: time.Millisecond}
	// crashRun checkpoints before every read: checkpoint 1 is before the
	// first one, 2 after it; the crash in 3 resumes from 2, which read
	// some of the file.
	crashRun(t, s, o, "sink-committed", 3)
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	restarts := 0
	start := time.Now()
	_, err = RunRestarting(context.Background(), s, o, RestartPolicy{Max: 3, Backoff: 5 * time.Second, OnRestart: func(int, error) { restarts++ }}, nil)
	if !errors.Is(err, fileio.ErrInputChanged) || !strings.Contains(err.Error(), "--fresh") {
		t.Fatalf("resume onto a rewritten file: %v, want fileio.ErrInputChanged naming --fresh", err)
	}
	if restarts != 0 || time.Since(start) > 4*time.Second {
		t.Fatalf("the refusal was retried: %d restarts in %v", restarts, time.Since(start))
	}
}

// W10 on Kafka: a backlog of one partition is classified as a watermark
// after every 1,000 of its records classifies it, whether the clock stands
// still, runs, or races ahead (a periodic watermark due at every look); it
// cannot be read whole before the first watermark.
func TestKafkaReplaySpeed(t *testing.T) {
	const n = 20_000
	body, ts := disorderedOrders(n, 1000, 5, 9)
	want := classifyEvery(t, ts, 1000, 5_000, 10_000, 5_000)
	broker, cl := kafkatest.Topic(t, "in", 1)
	var recs []*kgo.Record
	for _, l := range strings.Split(strings.TrimSpace(body), "\n") {
		recs = append(recs, &kgo.Record{Partition: 0, Value: []byte(l)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	job := fmt.Sprintf(`name: kspeed
source:
  type: kafka
  kafka: {brokers: [%s], topic: in, stop_at_end: true}
watermark: {max_out_of_orderness: 5s, interval: 1ms}
key: [user_id]
window: {type: tumbling, size: 10s}
allowed_lateness: 5s
aggregate: [{name: n, fn: count}]
sinks:
  results: {type: jsonl, path: out.jsonl}
  late: {type: jsonl, path: late.jsonl}
`, broker)
	checkAtEverySpeed(t, job, nil, want)
}
