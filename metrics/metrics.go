// Package metrics exposes a running weir job to Prometheus.
//
// A Collector reads the engine's own counters, watermarks and state sizes
// when Prometheus scrapes it: the engine counts per batch in plain fields
// and publishes them, so metrics add nothing to the per-record path. Lag is
// computed at scrape time from the job's clock (a fake clock in tests), and
// every series is a timestamp or a total, as the Prometheus guidelines ask.
//
// Series (all prefixed weir_; labels in braces are the only ones used):
//
//	source_records_total{source}                       records emitted by each source
//	window_records_total{operator,outcome}             records by what happened to them: on_time,
//	                                                   late_accepted (within the allowed lateness),
//	                                                   side_output, dropped, no_timestamp; they
//	                                                   add up to the operator's records in (W4)
//	window_partial_late_records_total{operator}        accepted records that missed some windows (W7)
//	window_misses_total{operator}                      window assignments those records missed
//	window_firings_total{operator,kind}                results by firing: early, on_time, late, retract
//	window_unchanged_firings_total{operator}           early and late firings skipped as unchanged (W20)
//	operator_watermark_timestamp_seconds{operator,subtask}
//	                                                   input watermark (event time, Unix seconds); NaN
//	                                                   before the first one (see operator_has_watermark),
//	                                                   +Inf after the end of input
//	operator_has_watermark{operator,subtask}           1 once the subtask has a watermark
//	operator_watermark_lag_seconds{operator,subtask}   processing time minus the watermark (NaN before one)
//	operator_idle{operator,subtask}                    1 while every input of the subtask is idle
//	state_windows{operator}                            open (key, window) entries
//	state_timers{operator}                             registered timers
//	state_bytes{operator}                              encoded state size (estimated in memory)
//	state_oldest_timer_timestamp_seconds{operator}     the earliest pending event-time timer, a window end
//	                                                   or cleanup time the watermark must reach (NaN: none,
//	                                                   or on-disk timers); far behind now: cleanup is stuck
//	dead_letters_total                                 bad input refused anywhere in the job
//	subtask_busy_seconds_total{operator,subtask}       time processing; with the next two it adds up to
//	subtask_backpressured_seconds_total{...}           the running time: blocked on a full downstream
//	subtask_idle_seconds_total{...}                    queue, waiting for input (rate() gives fractions)
//	subtask_records_in_total{operator,subtask}         records received from upstream subtasks (a
//	                                                   two-phase window's bundle counts once)
//	subtask_queue_length{operator,subtask}             input queue, in batches, and its capacity
//	subtask_queue_capacity{operator,subtask}
//	operator_skew_ratio{operator}                      skew of records in over the subtasks
//	                                                   since the previous scrape: mean absolute deviation
//	                                                   over mean, capped at 1 (0: even)
//	source_input_watermark_timestamp_seconds{source,input}
//	                                                   watermark of a source input (a Kafka partition);
//	                                                   NaN before its first
//	source_input_idle{source,input}                    1 while marked idle (quiet and caught up)
//	source_input_paused{source,input}                  1 while paused by watermark alignment
//	source_input_paused_seconds_total{source,input}    pause time so far
//	source_input_idle_seconds_total{source,input}      time marked idle so far
//	source_input_backlog_records{source,input}         records left to read (NaN: unknown yet)
//	source_input_last_record_timestamp_seconds{source,input}
//	                                                   processing time of its last record (NaN: none)
//	source_input_max_event_timestamp_seconds{source,input}
//	                                                   its largest event time (NaN: none)
//	window_lateness_seconds{operator}                  histogram of watermark minus timestamp of records
//	                                                   behind the watermark (accepted late, side output,
//	                                                   dropped); on-time records are not observed
//	window_firing_delay_seconds{operator}              histogram of processing time minus window end of
//	                                                   on-time firings
//	checkpoints_total{result}                          completed and failed checkpoints; this and the
//	                                                   checkpoint series below exist on every job, at 0
//	                                                   (the timestamp NaN) when checkpoints are off
//	checkpoint_in_progress                             1 while one is pending
//	checkpoint_in_progress_age_seconds                 how long the pending one has been in progress (0: none);
//	                                                   a checkpoint stuck behind a sink shows here
//	checkpoint_last_completed_timestamp_seconds        when the newest completed (NaN: none yet)
//	checkpoint_last_size_bytes                         the bytes of its parts
//	checkpoint_duration_seconds                        histogram of trigger-to-commit times
//
// Jobs add their own series through Options.Extra (the job runner, package job, adds
// dead letters by reason and its sinks' counts).
package metrics

import (
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/etime"
)

// Options configures a Collector.
type Options struct {
	// Extra, when set, is called at each scrape to add job-specific
	// series; it must describe them in ExtraDescs.
	Extra      func(ch chan<- prometheus.Metric)
	ExtraDescs []*prometheus.Desc
	// Now is the wall clock checkpoint ages are measured on (default
	// time.Now).
	Now func() time.Time
}

// Collector is a prometheus.Collector over a job's Env. It is safe for
// concurrent scrapes while the job runs.
type Collector struct {
	env func() *weir.Env
	o   Options

	mu   sync.Mutex
	prev map[string][]int64 // records in per subtask at the previous scrape, by operator
}

// NewCollector returns a Collector of the Env env returns at each scrape:
// the current attempt of a job that restarts, or nil before the first
// (then only Extra's series are collected). Register it on the job's
// registry, never on a global one.
func NewCollector(env func() *weir.Env, o Options) *Collector {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Collector{env: env, o: o}
}

var (
	sourceRecords = prometheus.NewDesc("weir_source_records_total",
		"Records emitted by each source.", []string{"source"}, nil)
	sourceLost = prometheus.NewDesc("weir_source_records_lost_total",
		"Records a source lost before it read them (a Kafka topic's or NATS stream's retention removed them after a restored position): in no outcome of weir_window_records_total. Only sources that lost some have the series.", []string{"source"}, nil)
	windowRecords = prometheus.NewDesc("weir_window_records_total",
		"Records a window operator processed, by outcome: on_time, late_accepted (within the allowed lateness), side_output and dropped (too late for every window), no_timestamp; they add up to its records in.",
		[]string{"operator", "outcome"}, nil)
	partialLate = prometheus.NewDesc("weir_window_partial_late_records_total",
		"Accepted records that were too late for some of their windows (semantics W7).", []string{"operator"}, nil)
	windowMisses = prometheus.NewDesc("weir_window_misses_total",
		"Window assignments missed by accepted records because those windows had expired (semantics W7).", []string{"operator"}, nil)
	firings = prometheus.NewDesc("weir_window_firings_total",
		"Results emitted by a window operator, by firing kind: early, on_time, late, retract.", []string{"operator", "kind"}, nil)
	unchanged = prometheus.NewDesc("weir_window_unchanged_firings_total",
		"Early and late firings a window operator skipped because their results equalled its last emitted ones (skip_unchanged, semantics W20).", []string{"operator"}, nil)
	wmTimestamp = prometheus.NewDesc("weir_operator_watermark_timestamp_seconds",
		"Input watermark of an operator subtask (event time, Unix seconds); NaN before its first watermark (see weir_operator_has_watermark).",
		[]string{"operator", "subtask"}, nil)
	hasWM = prometheus.NewDesc("weir_operator_has_watermark",
		"1 once the operator subtask has received a watermark from every active input, 0 before.", []string{"operator", "subtask"}, nil)
	wmLag = prometheus.NewDesc("weir_operator_watermark_lag_seconds",
		"Processing time minus the operator subtask's input watermark, at scrape time; NaN before its first watermark.",
		[]string{"operator", "subtask"}, nil)
	idle = prometheus.NewDesc("weir_operator_idle",
		"1 while every input of the operator subtask is idle.", []string{"operator", "subtask"}, nil)
	stateWindows = prometheus.NewDesc("weir_state_windows",
		"Open (key, window) entries of a window operator.", []string{"operator"}, nil)
	stateTimers = prometheus.NewDesc("weir_state_timers",
		"Registered event- and processing-time timers of a window operator.", []string{"operator"}, nil)
	stateBytes = prometheus.NewDesc("weir_state_bytes",
		"Encoded size of a window operator's state (estimated from a sample for in-memory state).", []string{"operator"}, nil)
	deadLetters = prometheus.NewDesc("weir_dead_letters_total",
		"Bad input refused anywhere in the job (malformed records, bad timestamps, ...).", nil, nil)
	subLabels = []string{"operator", "subtask"}
	busy      = prometheus.NewDesc("weir_subtask_busy_seconds_total",
		"Time an operator subtask spent processing.", subLabels, nil)
	backpressured = prometheus.NewDesc("weir_subtask_backpressured_seconds_total",
		"Time an operator subtask was blocked sending to a full downstream queue.", subLabels, nil)
	idleTime = prometheus.NewDesc("weir_subtask_idle_seconds_total",
		"Time an operator subtask waited for input (a source: for data).", subLabels, nil)
	recordsIn = prometheus.NewDesc("weir_subtask_records_in_total",
		"Records an operator subtask received from upstream subtasks (of a two-phase window: records and pre-aggregated bundles, each counted once).", subLabels, nil)
	queueLen = prometheus.NewDesc("weir_subtask_queue_length",
		"Batches waiting in an operator subtask's input queue.", subLabels, nil)
	queueCap = prometheus.NewDesc("weir_subtask_queue_capacity",
		"Capacity of an operator subtask's input queue, in batches.", subLabels, nil)
	skew = prometheus.NewDesc("weir_operator_skew_ratio",
		"Skew of records in over an operator's subtasks since the previous scrape: mean absolute deviation over mean, at most 1.",
		[]string{"operator"}, nil)
	inLabels = []string{"source", "input"}
	inWM     = prometheus.NewDesc("weir_source_input_watermark_timestamp_seconds",
		"Watermark of a source input such as a Kafka partition (event time, Unix seconds); NaN before its first.", inLabels, nil)
	inIdle = prometheus.NewDesc("weir_source_input_idle",
		"1 while a source input is marked idle (no record for the idle timeout, and caught up).", inLabels, nil)
	inPaused = prometheus.NewDesc("weir_source_input_paused",
		"1 while a source input is paused by watermark alignment (max_drift).", inLabels, nil)
	inPausedFor = prometheus.NewDesc("weir_source_input_paused_seconds_total",
		"Time a source input was paused by watermark alignment.", inLabels, nil)
	inIdleFor = prometheus.NewDesc("weir_source_input_idle_seconds_total",
		"Time a source input was marked idle.", inLabels, nil)
	stateOldest = prometheus.NewDesc("weir_state_oldest_timer_timestamp_seconds",
		"The earliest pending event-time timer of a window operator (a window end or cleanup time the watermark must reach, Unix seconds); NaN when there is none or it is kept on disk.",
		[]string{"operator"}, nil)
	inBacklog = prometheus.NewDesc("weir_source_input_backlog_records",
		"Records of a source input not read yet (the broker's last stable offset minus the position); NaN while unknown.", inLabels, nil)
	inLast = prometheus.NewDesc("weir_source_input_last_record_timestamp_seconds",
		"Processing time of a source input's last record (Unix seconds); NaN before its first.", inLabels, nil)
	inMaxTS = prometheus.NewDesc("weir_source_input_max_event_timestamp_seconds",
		"Largest event time read from a source input (Unix seconds); NaN before its first record.", inLabels, nil)
)

var (
	lateness = prometheus.NewDesc("weir_window_lateness_seconds",
		"Watermark minus timestamp of records behind the watermark (accepted within the lateness, side output or dropped).", []string{"operator"}, nil)
	firingDelay = prometheus.NewDesc("weir_window_firing_delay_seconds",
		"Processing time minus window end of on-time firings of event-time windows.", []string{"operator"}, nil)
	checkpoints = prometheus.NewDesc("weir_checkpoints_total",
		"Checkpoints by result: completed or failed.", []string{"result"}, nil)
	ckInProgress = prometheus.NewDesc("weir_checkpoint_in_progress",
		"1 while a checkpoint is pending.", nil, nil)
	ckAge = prometheus.NewDesc("weir_checkpoint_in_progress_age_seconds",
		"How long the pending checkpoint has been in progress, from its trigger (0: none is).", nil, nil)
	ckLast = prometheus.NewDesc("weir_checkpoint_last_completed_timestamp_seconds",
		"When the newest checkpoint completed (Unix seconds); NaN before the first.", nil, nil)
	ckSize = prometheus.NewDesc("weir_checkpoint_last_size_bytes",
		"The bytes of the newest completed checkpoint's parts.", nil, nil)
	ckDuration = prometheus.NewDesc("weir_checkpoint_duration_seconds",
		"Time from a checkpoint's trigger to its commit.", nil, nil)
)

var descs = []*prometheus.Desc{lateness, firingDelay, checkpoints, ckInProgress, ckAge, ckLast, ckSize, ckDuration, sourceRecords, sourceLost, windowRecords, partialLate, windowMisses, firings, unchanged,
	wmTimestamp, hasWM, wmLag, idle, stateWindows, stateTimers, stateBytes, deadLetters,
	busy, backpressured, idleTime, recordsIn, queueLen, queueCap, skew,
	inWM, inIdle, inPaused, inPausedFor, inIdleFor, inBacklog, inLast, inMaxTS, stateOldest}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range descs {
		ch <- d
	}
	for _, d := range c.o.ExtraDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	if c.o.Extra != nil {
		defer c.o.Extra(ch)
	}
	env := c.env()
	if env == nil {
		return
	}
	r := env.Report()
	for _, name := range sortedKeys(r.SourceRecords) {
		counter(sourceRecords, r.SourceRecords[name], name)
	}
	for _, name := range sortedKeys(r.SourceLost) {
		counter(sourceLost, r.SourceLost[name], name)
	}
	for _, op := range sortedKeys(r.Windows) {
		w := r.Windows[op]
		counter(windowRecords, w.Accepted-w.AcceptedLate, op, "on_time")
		counter(windowRecords, w.AcceptedLate, op, "late_accepted")
		counter(windowRecords, w.LateSideOutput, op, "side_output")
		counter(windowRecords, w.LateDropped, op, "dropped")
		counter(windowRecords, w.NoTimestamp, op, "no_timestamp")
		counter(partialLate, w.PartialSideOutput, op)
		counter(windowMisses, w.WindowMisses, op)
		counter(firings, w.FiredEarly, op, "early")
		counter(firings, w.FiredOnTime, op, "on_time")
		counter(firings, w.FiredLate, op, "late")
		counter(firings, w.Retractions, op, "retract")
		counter(unchanged, w.Unchanged, op)
	}
	counter(deadLetters, r.DeadLetters)
	now := etime.FromTime(env.Options().Clock.Now())
	for _, s := range env.Watermarks() {
		sub := strconv.Itoa(s.Subtask)
		ts, lag, has := timestamp(s.Watermark), math.NaN(), 0.0
		if s.Watermark != etime.MinTime {
			has = 1
			lag = float64(now-s.Watermark) / 1000
			if s.Watermark == etime.MaxTime { // the end of input
				lag = 0
			}
		}
		gauge(wmTimestamp, ts, s.Stage, sub)
		gauge(hasWM, has, s.Stage, sub)
		gauge(wmLag, lag, s.Stage, sub)
		gauge(idle, b2f(s.Idle), s.Stage, sub)
	}
	c.collectSubtasks(env, ch)
	hs := env.WindowHists()
	for _, op := range sortedKeys(hs) {
		ch <- histogram(lateness, hs[op].Lateness, op)
		ch <- histogram(firingDelay, hs[op].FiringDelay, op)
	}
	// The checkpoint series exist whether or not the job takes
	// checkpoints (at zero, the last completion NaN, when it does not),
	// so dashboards and alerts over them find them on every job.
	cs := env.CheckpointStats()
	counter(checkpoints, cs.Completed, "completed")
	counter(checkpoints, cs.Failed, "failed")
	gauge(ckInProgress, b2f(cs.InProgress))
	age := 0.0
	if f := cs.InFlight; f.ID != 0 {
		age = max(c.o.Now().Sub(f.Started).Seconds(), 0)
	}
	gauge(ckAge, age)
	last := math.NaN()
	if !cs.LastCompleted.IsZero() {
		last = float64(cs.LastCompleted.UnixMilli()) / 1000
	}
	gauge(ckLast, last)
	gauge(ckSize, float64(cs.LastSize))
	ch <- histogram(ckDuration, cs.Durations)
	c.collectInputs(env, gauge, ch)
	states := env.OperatorStates()
	for _, op := range sortedKeys(states) {
		st := states[op]
		gauge(stateWindows, float64(st.OpenWindows), op)
		gauge(stateTimers, float64(st.Timers), op)
		gauge(stateBytes, float64(st.Bytes), op)
		oldest := math.NaN()
		if st.HasOldest {
			oldest = timestamp(st.Oldest)
		}
		gauge(stateOldest, oldest, op)
	}
}

// collectSubtasks adds the subtasks' time and record accounting and each
// operator's skew since the previous scrape.
func (c *Collector) collectSubtasks(env *weir.Env, ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	byOp := map[string][]int64{}
	var ops []string
	for _, s := range env.SubtaskStats() {
		sub := strconv.Itoa(s.Subtask)
		counter(busy, s.Busy.Seconds(), s.Stage, sub)
		counter(backpressured, s.Backpressured.Seconds(), s.Stage, sub)
		counter(idleTime, s.Idle.Seconds(), s.Stage, sub)
		counter(recordsIn, float64(s.RecordsIn), s.Stage, sub)
		gauge(queueLen, float64(s.QueueLen), s.Stage, sub)
		gauge(queueCap, float64(s.QueueCap), s.Stage, sub)
		if _, ok := byOp[s.Stage]; !ok {
			ops = append(ops, s.Stage)
		}
		byOp[s.Stage] = append(byOp[s.Stage], s.RecordsIn)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.prev == nil {
		c.prev = map[string][]int64{}
	}
	for _, op := range ops {
		now, prev := byOp[op], c.prev[op]
		delta := make([]float64, len(now))
		for i := range now {
			delta[i] = float64(now[i])
			if len(prev) == len(now) {
				delta[i] -= float64(prev[i])
			}
		}
		gauge(skew, Skew(delta), op)
		c.prev[op] = now
	}
}

// collectInputs adds the source inputs' series.
func (c *Collector) collectInputs(env *weir.Env, gauge func(*prometheus.Desc, float64, ...string), ch chan<- prometheus.Metric) {
	for _, si := range env.SourceInputs() {
		for _, in := range si.Inputs {
			l := []string{si.Source, in.Name}
			gauge(inWM, timestamp(in.Watermark), l...)
			gauge(inIdle, b2f(in.Idle), l...)
			gauge(inPaused, b2f(in.Paused), l...)
			ch <- prometheus.MustNewConstMetric(inPausedFor, prometheus.CounterValue, in.PausedFor.Seconds(), l...)
			ch <- prometheus.MustNewConstMetric(inIdleFor, prometheus.CounterValue, in.IdleFor.Seconds(), l...)
			backlog := math.NaN()
			if in.Backlog >= 0 {
				backlog = float64(in.Backlog)
			}
			gauge(inBacklog, backlog, l...)
			last := math.NaN()
			if !in.LastRecord.IsZero() {
				last = float64(in.LastRecord.UnixMilli()) / 1000
			}
			gauge(inLast, last, l...)
			gauge(inMaxTS, timestamp(in.MaxEventTime), l...)
		}
	}
}

func histogram(d *prometheus.Desc, h weir.Histogram, labels ...string) prometheus.Metric {
	return prometheus.MustNewConstHistogram(d, h.Count(), h.Sum, h.Cumulative(), labels...)
}

// timestamp is an event time in Unix seconds: NaN for MinTime (none),
// +Inf for MaxTime (the end of input).
func timestamp(t etime.Time) float64 {
	switch t {
	case etime.MinTime:
		return math.NaN()
	case etime.MaxTime:
		return math.Inf(1)
	}
	return float64(t) / 1000
}

// Skew is a data skew score of per-subtask counts in the manner of
// Flink's FLIP-418: the mean absolute deviation over the mean, at most 1;
// 0 for even counts or no data. 1 1 1 5 10 gives 0.87, 4 5 5 5 5 gives
// 0.07.
func Skew(counts []float64) float64 {
	if len(counts) == 0 {
		return 0
	}
	var sum float64
	for _, v := range counts {
		sum += v
	}
	mean := sum / float64(len(counts))
	if mean <= 0 {
		return 0
	}
	var dev float64
	for _, v := range counts {
		dev += math.Abs(v - mean)
	}
	return min(dev/float64(len(counts))/mean, 1)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
