package cli

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weirstream/weir/internal/monitor"
	"github.com/weirstream/weir/job"
)

var sinkCallDesc = prometheus.NewDesc("weir_sink_call_age_seconds",
	"How long the call in progress into a sink of the job (a write, a sync, a commit) has been running (0: none is); the job calls its sinks one at a time.",
	[]string{"sink"}, nil)

// sinkCallAges adds the age of each sink's call in progress (j may be
// nil before the job opens).
func sinkCallAges(j *job.Job, ch chan<- prometheus.Metric) {
	if j == nil {
		return
	}
	now := time.Now()
	for _, c := range j.SinkCalls() {
		if c.Call == monitor.ReachCall {
			continue // a source's outage, not a sink's call
		}
		age := 0.0
		if !c.Since.IsZero() {
			age = max(now.Sub(c.Since).Seconds(), 0)
		}
		ch <- prometheus.MustNewConstMetric(sinkCallDesc, prometheus.GaugeValue, age, c.Sink)
	}
}

// sinkCalls returns the monitor's view of the current attempt's sinks.
func sinkCalls(cur func() *job.Job) func() []monitor.SinkCall {
	return func() []monitor.SinkCall {
		j := cur()
		if j == nil {
			return nil
		}
		calls := j.SinkCalls()
		out := make([]monitor.SinkCall, len(calls))
		for i, c := range calls {
			out[i] = monitor.SinkCall{Sink: c.Sink, Call: c.Call, Since: c.Since, Err: c.Err}
		}
		return out
	}
}
