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
//	dead_letters_total                                 bad input refused anywhere in the job
//
// Jobs add their own series through Options.Extra (the spec runner adds
// dead letters by reason and its sinks' counts).
package metrics

import (
	"math"
	"slices"
	"strconv"

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
}

// Collector is a prometheus.Collector over a job's Env. It is safe for
// concurrent scrapes while the job runs.
type Collector struct {
	env func() *weir.Env
	o   Options
}

// NewCollector returns a Collector of the Env env returns at each scrape:
// the current attempt of a job that restarts, or nil before the first
// (then only Extra's series are collected). Register it on the job's
// registry, never on a global one.
func NewCollector(env func() *weir.Env, o Options) *Collector {
	return &Collector{env: env, o: o}
}

var (
	sourceRecords = prometheus.NewDesc("weir_source_records_total",
		"Records emitted by each source.", []string{"source"}, nil)
	windowRecords = prometheus.NewDesc("weir_window_records_total",
		"Records a window operator processed, by outcome: on_time, late_accepted (within the allowed lateness), side_output and dropped (too late for every window), no_timestamp; they add up to its records in.",
		[]string{"operator", "outcome"}, nil)
	partialLate = prometheus.NewDesc("weir_window_partial_late_records_total",
		"Accepted records that were too late for some of their windows (semantics W7).", []string{"operator"}, nil)
	windowMisses = prometheus.NewDesc("weir_window_misses_total",
		"Window assignments missed by accepted records because those windows had expired (semantics W7).", []string{"operator"}, nil)
	firings = prometheus.NewDesc("weir_window_firings_total",
		"Results emitted by a window operator, by firing kind: early, on_time, late, retract.", []string{"operator", "kind"}, nil)
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
)

var descs = []*prometheus.Desc{sourceRecords, windowRecords, partialLate, windowMisses, firings,
	wmTimestamp, hasWM, wmLag, idle, stateWindows, stateTimers, stateBytes, deadLetters}

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
	}
	counter(deadLetters, r.DeadLetters)
	now := etime.FromTime(env.Options().Clock.Now())
	for _, s := range env.Watermarks() {
		sub := strconv.Itoa(s.Subtask)
		ts, lag, has := math.NaN(), math.NaN(), 0.0
		if s.Watermark != etime.MinTime {
			has = 1
			ts = float64(s.Watermark) / 1000
			lag = float64(now-s.Watermark) / 1000
			if s.Watermark == etime.MaxTime { // the end of input
				ts, lag = math.Inf(1), 0
			}
		}
		gauge(wmTimestamp, ts, s.Stage, sub)
		gauge(hasWM, has, s.Stage, sub)
		gauge(wmLag, lag, s.Stage, sub)
		gauge(idle, b2f(s.Idle), s.Stage, sub)
	}
	states := env.OperatorStates()
	for _, op := range sortedKeys(states) {
		st := states[op]
		gauge(stateWindows, float64(st.OpenWindows), op)
		gauge(stateTimers, float64(st.Timers), op)
		gauge(stateBytes, float64(st.Bytes), op)
	}
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
