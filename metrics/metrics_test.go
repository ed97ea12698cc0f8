package metrics_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/metrics"
	"github.com/weirstream/weir/spec"
	"github.com/weirstream/weir/window"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type order struct {
	user   string
	ts     etime.Time
	amount int64
}

// job is the README example: 5-minute windows, 30 s out-of-orderness, 10
// minutes of allowed lateness, a side output; one record on time in a
// late re-firing, one too late, processing time fixed at 1 hour.
func exampleJob(t *testing.T) *weir.Env {
	t.Helper()
	minute := etime.Time(60_000)
	orders := []order{
		{"ann", 1 * minute, 10},
		{"bob", 2 * minute, 5},
		{"ann", 6 * minute, 7},
		{"ann", 4 * minute, 1},  // late, within the lateness: accepted, [0,5m) re-fires
		{"ann", 20 * minute, 2}, // the watermark jumps to 20m - 30s - 1
		{"bob", 3 * minute, 9},  // too late: side output
	}
	opts := weir.DefaultOptions()
	opts.Deterministic = true
	opts.Parallelism = 1
	opts.Clock = clock.NewFake(time.UnixMilli(3_600_000))
	env, err := weir.NewEnv(opts)
	if err != nil {
		t.Fatal(err)
	}
	s := weir.AssignTimestamps(weir.FromSlice(env, orders),
		weir.BoundedOutOfOrderness(30*time.Second, func(o order) etime.Time { return o.ts }).WithEveryRecord())
	five, _ := window.Tumbling(5*minute.Sub(0), 0)
	out := weir.Aggregate(weir.Window(weir.KeyBy(s, func(o order) string { return o.user }), five,
		weir.WindowOptions{Name: "orders", AllowedLateness: 10 * minute.Sub(0), LateOutput: true}), weir.Sum(func(o order) int64 { return o.amount }))
	weir.ForEach(out.Results, func(etime.Time, window.Result[string, int64]) {})
	weir.ForEach(out.Late, func(etime.Time, window.LateRecord[string, order]) {})
	return env
}

// TestCollector: the series of a run with known counts, and promlint finds
// nothing to fix.
func TestCollector(t *testing.T) {
	var env *weir.Env
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.NewCollector(func() *weir.Env { return env }, metrics.Options{}))
	// Before the job exists: no series, no error.
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 0 {
		t.Fatalf("before the job: %d series, %v", n, err)
	}
	env = exampleJob(t)
	if _, err := env.Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP weir_window_records_total Records a window operator processed, by outcome: on_time, late_accepted (within the allowed lateness), side_output and dropped (too late for every window), no_timestamp; they add up to its records in.
# TYPE weir_window_records_total counter
weir_window_records_total{operator="orders",outcome="dropped"} 0
weir_window_records_total{operator="orders",outcome="late_accepted"} 1
weir_window_records_total{operator="orders",outcome="no_timestamp"} 0
weir_window_records_total{operator="orders",outcome="on_time"} 4
weir_window_records_total{operator="orders",outcome="side_output"} 1
# HELP weir_window_firings_total Results emitted by a window operator, by firing kind: early, on_time, late, retract.
# TYPE weir_window_firings_total counter
weir_window_firings_total{kind="early",operator="orders"} 0
weir_window_firings_total{kind="late",operator="orders"} 1
weir_window_firings_total{kind="on_time",operator="orders"} 4
weir_window_firings_total{kind="retract",operator="orders"} 0
# HELP weir_dead_letters_total Bad input refused anywhere in the job (malformed records, bad timestamps, ...).
# TYPE weir_dead_letters_total counter
weir_dead_letters_total 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "weir_window_records_total", "weir_window_firings_total", "weir_dead_letters_total"); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg, "weir_window_records_total", "weir_window_firings_total", "weir_dead_letters_total"); err != nil || n != 10 {
		t.Fatalf("%d series, %v; want 10", n, err)
	}
	// At the end of input the watermark is +Inf and the lag 0 (not 292
	// million years); the source and the operator are both listed.
	want = `
# HELP weir_operator_watermark_lag_seconds Processing time minus the operator subtask's input watermark, at scrape time; NaN before its first watermark.
# TYPE weir_operator_watermark_lag_seconds gauge
weir_operator_watermark_lag_seconds{operator="orders",subtask="0"} 0
weir_operator_watermark_lag_seconds{operator="slice",subtask="0"} 0
# HELP weir_operator_watermark_timestamp_seconds Input watermark of an operator subtask (event time, Unix seconds); NaN before its first watermark (see weir_operator_has_watermark).
# TYPE weir_operator_watermark_timestamp_seconds gauge
weir_operator_watermark_timestamp_seconds{operator="orders",subtask="0"} +Inf
weir_operator_watermark_timestamp_seconds{operator="slice",subtask="0"} +Inf
# HELP weir_source_records_total Records emitted by each source.
# TYPE weir_source_records_total counter
weir_source_records_total{source="slice"} 6
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "weir_operator_watermark_lag_seconds", "weir_operator_watermark_timestamp_seconds", "weir_source_records_total"); err != nil {
		t.Fatal(err)
	}
	// Lateness: the 4-minute order arrived 89.999 s behind the watermark
	// (6m - 30s - 1ms), the too-late one 989.999 s; on-time firings came
	// out at 1 h processing time, 3300, 3300, 3000 and 2100 s after their
	// windows' ends.
	want = `
# HELP weir_window_firing_delay_seconds Processing time minus window end of on-time firings of event-time windows.
# TYPE weir_window_firing_delay_seconds histogram
weir_window_firing_delay_seconds_bucket{operator="orders",le="0.1"} 0
weir_window_firing_delay_seconds_bucket{operator="orders",le="0.5"} 0
weir_window_firing_delay_seconds_bucket{operator="orders",le="1"} 0
weir_window_firing_delay_seconds_bucket{operator="orders",le="5"} 0
weir_window_firing_delay_seconds_bucket{operator="orders",le="15"} 0
weir_window_firing_delay_seconds_bucket{operator="orders",le="30"} 0
weir_window_firing_delay_seconds_bucket{operator="orders",le="60"} 0
weir_window_firing_delay_seconds_bucket{operator="orders",le="120"} 0
weir_window_firing_delay_seconds_bucket{operator="orders",le="300"} 0
weir_window_firing_delay_seconds_bucket{operator="orders",le="600"} 0
weir_window_firing_delay_seconds_bucket{operator="orders",le="1800"} 0
weir_window_firing_delay_seconds_bucket{operator="orders",le="3600"} 4
weir_window_firing_delay_seconds_bucket{operator="orders",le="+Inf"} 4
weir_window_firing_delay_seconds_sum{operator="orders"} 11700
weir_window_firing_delay_seconds_count{operator="orders"} 4
# HELP weir_window_lateness_seconds Watermark minus timestamp of records behind the watermark (accepted within the lateness, side output or dropped).
# TYPE weir_window_lateness_seconds histogram
weir_window_lateness_seconds_bucket{operator="orders",le="0.1"} 0
weir_window_lateness_seconds_bucket{operator="orders",le="0.5"} 0
weir_window_lateness_seconds_bucket{operator="orders",le="1"} 0
weir_window_lateness_seconds_bucket{operator="orders",le="5"} 0
weir_window_lateness_seconds_bucket{operator="orders",le="15"} 0
weir_window_lateness_seconds_bucket{operator="orders",le="30"} 0
weir_window_lateness_seconds_bucket{operator="orders",le="60"} 0
weir_window_lateness_seconds_bucket{operator="orders",le="120"} 1
weir_window_lateness_seconds_bucket{operator="orders",le="300"} 1
weir_window_lateness_seconds_bucket{operator="orders",le="600"} 1
weir_window_lateness_seconds_bucket{operator="orders",le="1800"} 2
weir_window_lateness_seconds_bucket{operator="orders",le="3600"} 2
weir_window_lateness_seconds_bucket{operator="orders",le="+Inf"} 2
weir_window_lateness_seconds_sum{operator="orders"} 1079.998
weir_window_lateness_seconds_count{operator="orders"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "weir_window_lateness_seconds", "weir_window_firing_delay_seconds"); err != nil {
		t.Fatal(err)
	}
	probs, err := testutil.GatherAndLint(reg)
	if err != nil || len(probs) != 0 {
		t.Fatalf("promlint: %v %v", probs, err)
	}
}

// TestSkew: the mean absolute deviation over the mean, capped at 1.
func TestSkew(t *testing.T) {
	for _, c := range []struct {
		counts []float64
		want   float64
	}{
		{[]float64{1, 1, 1, 5, 10}, 0.867}, // 15.6/5 over 3.6
		{[]float64{1, 1, 5, 5, 5}, 0.565},
		{[]float64{4, 5, 5, 5, 5}, 0.067},
		{[]float64{7, 7, 7}, 0},
		{[]float64{0, 0}, 0},
		{nil, 0},
		{[]float64{0, 0, 0, 100}, 1}, // 1.5, capped
	} {
		if got := metrics.Skew(c.counts); math.Abs(got-c.want) > 0.0005 {
			t.Errorf("Skew(%v) = %.3f, want %.2f", c.counts, got, c.want)
		}
	}
}

// TestSubtaskSeries: a parallel run accounts each subtask's time (busy,
// backpressured and idle add up to its running time, so each series is
// there and not negative) and the records its window subtasks received.
func TestSubtaskSeries(t *testing.T) {
	const n = 200_000
	env := parallelJob(t, orders(n, 50))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.NewCollector(func() *weir.Env { return env }, metrics.Options{}))
	began := time.Now()
	if _, err := env.Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(began).Seconds()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]float64{} // by series name and operator
	seen := map[string]int{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			op := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "operator" {
					op = l.GetValue()
				}
			}
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			if v < 0 || math.IsNaN(v) && strings.HasPrefix(mf.GetName(), "weir_subtask") {
				t.Errorf("%s{operator=%q} = %v", mf.GetName(), op, v)
			}
			sums[mf.GetName()+"/"+op] += v
			seen[mf.GetName()]++
		}
	}
	if got := sums["weir_subtask_records_in_total/w"]; got != n {
		t.Errorf("window subtasks received %v records, want %d", got, n)
	}
	for _, name := range []string{"weir_subtask_busy_seconds_total", "weir_subtask_backpressured_seconds_total", "weir_subtask_idle_seconds_total", "weir_subtask_queue_capacity"} {
		if seen[name] < 3 { // the source and two window subtasks
			t.Errorf("%s: %d series, want 3", name, seen[name])
		}
	}
	// Per window subtask, busy + backpressured + idle is its running time
	// (at most the run's).
	total := sums["weir_subtask_busy_seconds_total/w"] + sums["weir_subtask_backpressured_seconds_total/w"] + sums["weir_subtask_idle_seconds_total/w"]
	if total <= 0 || total > 2*elapsed*1.01 {
		t.Errorf("window subtasks' time adds up to %.3fs; the run took %.3fs", total, elapsed)
	}
	if s := sums["weir_operator_skew_ratio/w"]; s < 0 || s > 1 {
		t.Errorf("skew %v", s)
	}
	if probs, err := testutil.GatherAndLint(reg); err != nil || len(probs) != 0 {
		t.Fatalf("promlint: %v %v", probs, err)
	}
}

// TestCheckpointSeries: a spec job with checkpoints counts them, their
// sizes and durations. It runs deterministically on a checkpoint clock
// that moves 10µs at every look (the executor looks before each read of
// the source), so that about every hundredth read takes a checkpoint
// however fast the machine (a parallel run may read all its input before
// its first checkpoint completes).
func TestCheckpointSeries(t *testing.T) {
	dir := t.TempDir()
	p, err := spec.Parse([]byte(`name: ck
source: {type: generator, generator: {records: 200000, keys: 50, seed: 1}}
watermark: {max_out_of_orderness: 1s}
key: [user_id]
window: {type: tumbling, size: 1m}
aggregate: [{name: n, fn: count}]
sinks: {results: {type: jsonl, path: out.jsonl}}
`))
	if err != nil {
		t.Fatal(err)
	}
	j, err := job.Open(p, job.RunOptions{Dir: dir, CheckpointDir: filepath.Join(dir, "ck"), CheckpointInterval: time.Millisecond,
		Deterministic: true, CheckpointClock: clock.NewStepping(time.UnixMilli(0), 10*time.Microsecond)})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.NewCollector(j.Env, metrics.Options{}))
	if _, err := j.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += "/" + l.GetValue()
			}
			got[name] = m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	done := got["weir_checkpoints_total/completed"]
	if done < 1 || got["weir_checkpoints_total/failed"] != 0 || got["weir_checkpoint_duration_seconds"] != done ||
		got["weir_checkpoint_last_size_bytes"] <= 0 || got["weir_checkpoint_in_progress"] != 0 || math.IsNaN(got["weir_checkpoint_last_completed_timestamp_seconds"]) {
		t.Fatalf("checkpoint series: %v", got)
	}
	if probs, err := testutil.GatherAndLint(reg); err != nil || len(probs) != 0 {
		t.Fatalf("promlint: %v %v", probs, err)
	}
}

// TestCheckpointSeriesWithoutCheckpoints: a job that takes no
// checkpoints still has every checkpoint series, at 0 (the last
// completion NaN), so dashboards and alerts over them do not break.
func TestCheckpointSeriesWithoutCheckpoints(t *testing.T) {
	env := exampleJob(t)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.NewCollector(func() *weir.Env { return env }, metrics.Options{}))
	if _, err := env.Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP weir_checkpoints_total Checkpoints by result: completed or failed.
# TYPE weir_checkpoints_total counter
weir_checkpoints_total{result="completed"} 0
weir_checkpoints_total{result="failed"} 0
# HELP weir_checkpoint_in_progress 1 while a checkpoint is pending.
# TYPE weir_checkpoint_in_progress gauge
weir_checkpoint_in_progress 0
# HELP weir_checkpoint_in_progress_age_seconds How long the pending checkpoint has been in progress, from its trigger (0: none is).
# TYPE weir_checkpoint_in_progress_age_seconds gauge
weir_checkpoint_in_progress_age_seconds 0
# HELP weir_checkpoint_last_completed_timestamp_seconds When the newest checkpoint completed (Unix seconds); NaN before the first.
# TYPE weir_checkpoint_last_completed_timestamp_seconds gauge
weir_checkpoint_last_completed_timestamp_seconds NaN
# HELP weir_checkpoint_last_size_bytes The bytes of the newest completed checkpoint's parts.
# TYPE weir_checkpoint_last_size_bytes gauge
weir_checkpoint_last_size_bytes 0
# HELP weir_checkpoint_duration_seconds Time from a checkpoint's trigger to its commit.
# TYPE weir_checkpoint_duration_seconds histogram
weir_checkpoint_duration_seconds_bucket{le="0.1"} 0
weir_checkpoint_duration_seconds_bucket{le="0.5"} 0
weir_checkpoint_duration_seconds_bucket{le="1"} 0
weir_checkpoint_duration_seconds_bucket{le="5"} 0
weir_checkpoint_duration_seconds_bucket{le="15"} 0
weir_checkpoint_duration_seconds_bucket{le="30"} 0
weir_checkpoint_duration_seconds_bucket{le="60"} 0
weir_checkpoint_duration_seconds_bucket{le="120"} 0
weir_checkpoint_duration_seconds_bucket{le="300"} 0
weir_checkpoint_duration_seconds_bucket{le="600"} 0
weir_checkpoint_duration_seconds_bucket{le="1800"} 0
weir_checkpoint_duration_seconds_bucket{le="3600"} 0
weir_checkpoint_duration_seconds_bucket{le="+Inf"} 0
weir_checkpoint_duration_seconds_sum 0
weir_checkpoint_duration_seconds_count 0
`
	names := []string{"weir_checkpoints_total", "weir_checkpoint_in_progress", "weir_checkpoint_in_progress_age_seconds",
		"weir_checkpoint_last_completed_timestamp_seconds", "weir_checkpoint_last_size_bytes", "weir_checkpoint_duration_seconds"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	if probs, err := testutil.GatherAndLint(reg); err != nil || len(probs) != 0 {
		t.Fatalf("promlint: %v %v", probs, err)
	}
}

// BenchmarkScrapeCost runs the same parallel job without metrics and with
// a scrape every 10 ms (a hundred times Prometheus' usual rate), in turn,
// and reports their throughput ratio (1: free). The engine's own
// accounting is always on; its cost is an A/B of binaries (see
// docs/PERFORMANCE.md).
//
//	go test -run '^$' -bench ScrapeCost -benchtime 10x ./metrics/
func BenchmarkScrapeCost(b *testing.B) {
	const n = 2_000_000
	in := orders(n, 1000)
	run := func(scrape bool) time.Duration {
		env := parallelJob(b, in)
		stop := make(chan struct{})
		done := make(chan struct{})
		if scrape {
			reg := prometheus.NewRegistry()
			reg.MustRegister(metrics.NewCollector(func() *weir.Env { return env }, metrics.Options{}))
			go func() {
				defer close(done)
				t := time.NewTicker(10 * time.Millisecond)
				defer t.Stop()
				for {
					select {
					case <-stop:
						return
					case <-t.C:
						if _, err := reg.Gather(); err != nil {
							panic(err)
						}
					}
				}
			}()
		} else {
			close(done)
		}
		began := time.Now()
		if _, err := env.Execute(context.Background()); err != nil {
			b.Fatal(err)
		}
		d := time.Since(began)
		close(stop)
		<-done
		return d
	}
	var plain, scraped time.Duration
	for range b.N {
		plain += run(false)
		scraped += run(true)
	}
	b.ReportMetric(float64(n)*float64(b.N)/plain.Seconds(), "records/s")
	b.ReportMetric(float64(n)*float64(b.N)/scraped.Seconds(), "scraped-records/s")
	b.ReportMetric(plain.Seconds()/scraped.Seconds(), "ratio")
}

// orders returns n orders of users users, one per millisecond.
func orders(n, users int) []order {
	out := make([]order, n)
	for i := range out {
		out[i] = order{user: fmt.Sprint("u", i%users), ts: etime.Time(i), amount: 1}
	}
	return out
}

// parallelJob builds, at parallelism 2, 10-second tumbling sums of the
// orders per user, in a window operator named w.
func parallelJob(tb testing.TB, in []order) *weir.Env {
	tb.Helper()
	opts := weir.DefaultOptions()
	opts.Parallelism = 2
	env, err := weir.NewEnv(opts)
	if err != nil {
		tb.Fatal(err)
	}
	s := weir.AssignTimestamps(weir.FromSlice(env, in), weir.BoundedOutOfOrderness(time.Second, func(o order) etime.Time { return o.ts }))
	ten, _ := window.Tumbling(10_000, 0)
	out := weir.Aggregate(weir.Window(weir.KeyBy(s, func(o order) string { return o.user }), ten, weir.WindowOptions{Name: "w"}), weir.Sum(func(o order) int64 { return o.amount }))
	weir.ForEach(out.Results, func(etime.Time, window.Result[string, int64]) {})
	return env
}
