// Package doctor diagnoses a running job from its monitor snapshot and
// history: it first places the job in "data arrives slowly" or
// "processing is slow" (the advice of the seeds in docs/SOURCES.md: look
// at watermark lag and late volume first), then checks rules D1 to D22 of
// docs/OBSERVABILITY.md, each with thresholds relative to the job's own
// bound B, allowed lateness L, window size W and idle timeout I. Every
// finding says where (operator, subtask, input), shows the numbers that
// triggered it, and names the job spec's field to change.
package doctor

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/weirstream/weir/internal/monitor"
)

// Severity ranks findings.
type Severity int

const (
	Info Severity = iota
	Warning
	Critical
)

func (s Severity) String() string {
	return [...]string{"info", "warning", "critical"}[s]
}

// MarshalText writes the severity's name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Finding is one diagnosis.
type Finding struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	// Title is the likely cause in one sentence.
	Title string `json:"title"`
	// Where is the operator, subtask and input it concerns.
	Where string `json:"where"`
	// Evidence are the numbers that triggered it.
	Evidence string `json:"evidence"`
	// Fix says what to change, by the job spec's field paths.
	Fix string `json:"fix"`
}

// Report is the doctor's answer.
type Report struct {
	// Quadrant places the job: healthy, "processing fell behind just
	// now", "data arrives slowly or is old", or "processing is slow";
	// QuadrantWhy gives the numbers.
	Quadrant    string    `json:"quadrant"`
	QuadrantWhy string    `json:"quadrant_why"`
	Findings    []Finding `json:"findings"`
}

// Worst returns the highest severity among the findings (Info when
// there are none).
func (r Report) Worst() Severity {
	w := Info
	for _, f := range r.Findings {
		w = max(w, f.Severity)
	}
	return w
}

// Thresholds are the knobs of the rules; a zero field takes its default,
// which Defaults computes from the job (the spec's doctor: block may set
// any of them).
type Thresholds struct {
	// LagHighS: lag above it is high. Default B + max(W, 30 s).
	LagHighS float64 `yaml:"lag_high_s" json:"lag_high_s"`
	// LateRise: the late rate of the last 2 minutes above this many
	// times its median over the history is a jump (default 3), if it is
	// also above LateMinShare of the input (default 0.001: seed 002 of
	// docs/SOURCES.md saw under 0.1% in production).
	LateRise     float64 `yaml:"late_rise" json:"late_rise"`
	LateMinShare float64 `yaml:"late_min_share" json:"late_min_share"`
	// BusyHigh: a busier operator is a bottleneck (default 0.9).
	BusyHigh float64 `yaml:"busy_high" json:"busy_high"`
	// SkewHigh: more skew of records over subtasks is high (default 0.5).
	SkewHigh float64 `yaml:"skew_high" json:"skew_high"`
	// FutureS: event time this far ahead of the clock is future-dated
	// (default max(5 min, B)).
	FutureS float64 `yaml:"future_s" json:"future_s"`
	// HoldS: an input holding the watermark longer is held up (default
	// W, within max(I, 10 s) and at least max(2B, 5 s): a hold longer
	// than the window keeps a window from firing).
	HoldS float64 `yaml:"hold_s" json:"hold_s"`
	// NoWatermarkS: records were read but an input that has sent none
	// holds the operator's watermark at none this long (default 5 s).
	NoWatermarkS float64 `yaml:"no_watermark_s" json:"no_watermark_s"`
	// IdleFlips: more idle/active changes of an input in 10 minutes are
	// flapping (default 3).
	IdleFlips int `yaml:"idle_flips" json:"idle_flips"`
	// CheckpointDelayS: a start delay above it is high (default 10 s).
	CheckpointDelayS float64 `yaml:"checkpoint_delay_s" json:"checkpoint_delay_s"`
}

// over fills t's zero fields from u.
func (t Thresholds) over(u Thresholds) Thresholds {
	for _, f := range []struct{ dst, src *float64 }{{&t.LagHighS, &u.LagHighS}, {&t.LateRise, &u.LateRise}, {&t.LateMinShare, &u.LateMinShare},
		{&t.BusyHigh, &u.BusyHigh}, {&t.SkewHigh, &u.SkewHigh}, {&t.FutureS, &u.FutureS}, {&t.HoldS, &u.HoldS}, {&t.NoWatermarkS, &u.NoWatermarkS}, {&t.CheckpointDelayS, &u.CheckpointDelayS}} {
		if *f.dst == 0 {
			*f.dst = *f.src
		}
	}
	if t.IdleFlips == 0 {
		t.IdleFlips = u.IdleFlips
	}
	return t
}

// Defaults fills the zero fields of t from the job.
func (t Thresholds) Defaults(j monitor.JobInfo) Thresholds {
	b, w, i := float64(j.BoundMS)/1000, float64(j.WindowMS)/1000, float64(j.IdleMS)/1000
	return t.over(Thresholds{LagHighS: b + max(w, 30), LateRise: 3, LateMinShare: 0.001, BusyHigh: 0.9, SkewHigh: 0.5,
		FutureS: max(300, b), HoldS: max(2*b, 5, min(w, max(i, 10))), NoWatermarkS: 5, IdleFlips: 3, CheckpointDelayS: 10})
}

// Dump is what the doctor reads: a snapshot and the history before it
// (oldest first), as /api/v1/snapshot and /api/v1/history serve them.
type Dump struct {
	Snapshot monitor.Snapshot `json:"snapshot"`
	History  []monitor.Point  `json:"history"`
	// Thresholds are the job's (its spec's doctor: block).
	Thresholds Thresholds `json:"thresholds"`
	// Group, set in the dump of a group's member (weir run --instance),
	// is the group; Snapshot and History are empty then, and the group
	// rules (D23 to D26) judge it.
	Group *monitor.GroupStatus `json:"group,omitempty"`
}

// Diagnose runs the rules on d with d's thresholds, t's non-zero fields
// taking precedence.
func Diagnose(d Dump, t Thresholds) Report {
	var r Report
	if d.Group != nil {
		r = diagnoseGroup(d.Group)
	} else {
		t = t.over(d.Thresholds)
		c := newCase(d, t.Defaults(d.Snapshot.Job))
		r = c.quadrant()
		for _, rule := range rules {
			r.Findings = append(r.Findings, rule(c)...)
		}
		if r.Quadrant == "healthy" && r.Worst() >= Warning {
			// Lag and backlog are normal, but a finding is not.
			r.Quadrant = "lag and backlog normal, but not healthy: see the findings"
		}
	}
	slices.SortStableFunc(r.Findings, func(a, b Finding) int {
		if a.Severity != b.Severity {
			return cmp.Compare(b.Severity, a.Severity)
		}
		return cmp.Compare(ruleNo(a.Rule), ruleNo(b.Rule))
	})
	return r
}

func ruleNo(r string) int {
	var n int
	fmt.Sscanf(r, "D%d", &n)
	return n
}

// Text renders a report for a terminal.
func (r Report) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the job: %s (%s)\n", r.Quadrant, r.QuadrantWhy)
	if len(r.Findings) == 0 {
		b.WriteString("no findings\n")
	}
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "%s %s %s: %s\n", f.Rule, f.Severity, f.Where, f.Title)
		fmt.Fprintf(&b, "  evidence: %s\n", f.Evidence)
		fmt.Fprintf(&b, "  fix: %s\n", f.Fix)
	}
	return b.String()
}

// ---- the case: series and helpers over the history ----------------------

type kase struct {
	t   Thresholds
	s   *monitor.Snapshot
	h   []monitor.Point
	b   float64  // bound, s
	l   float64  // lateness, s
	w   float64  // window, s
	i   float64  // idle timeout, s
	ops []string // operators with inputs, in graph order
	win []string // window operators

	// The series several rules read, computed once: the lag (max over
	// operators with inputs) now and over the history, and whether it
	// rises beyond max(B, 5 s); the source backlog, whether any input
	// reports it, and whether it grows; the late rate's jump (lateJump).
	lag, back                         float64
	lagTS, lagVS, backTS, backVS      []float64
	lagRising, backKnown, backGrowing bool
	jump                              bool
	lateRecent, lateBefore            float64
	// quietEnd: every input went quiet with windows waiting (D20, and
	// D5 stays silent then).
	quietEnd quietState
}

func newCase(d Dump, t Thresholds) *kase {
	j := d.Snapshot.Job
	c := &kase{t: t, s: &d.Snapshot, h: d.History,
		b: float64(j.BoundMS) / 1000, l: float64(j.LatenessMS) / 1000, w: float64(j.WindowMS) / 1000, i: float64(j.IdleMS) / 1000}
	for _, op := range d.Snapshot.Operators {
		if !op.Source {
			c.ops = append(c.ops, op.Name)
		}
		if op.Window != nil {
			c.win = append(c.win, op.Name)
		}
	}
	c.lagTS, c.lagVS = c.series(c.maxOver(c.ops, func(o monitor.OpPoint) *float64 { return o.LagS }))
	c.lag, c.lagRising = last(c.lagVS), rising(c.lagTS, c.lagVS, max(c.b, 5))
	c.backTS, c.backVS = c.series(func(p monitor.Point) (float64, bool) {
		if p.Job.Backlog == nil {
			return 0, false
		}
		return float64(*p.Job.Backlog), true
	})
	c.back, c.backKnown = last(c.backVS), len(c.backVS) > 0
	c.backGrowing = c.backKnown && rising(c.backTS, c.backVS, 0)
	c.jump, c.lateRecent, c.lateBefore = c.lateJump()
	c.quietEnd = c.quiet()
	return c
}

// lagHigh: the lag is above LagHighS or rising.
func (c *kase) lagHigh() bool { return c.lag > c.t.LagHighS || c.lagRising }

// span is the history's length in seconds.
func (c *kase) span() float64 {
	if len(c.h) < 2 {
		return 0
	}
	return float64(c.h[len(c.h)-1].T-c.h[0].T) / 1000
}

// series returns f over the history: times (s from the first point) and
// values, skipping points where f has no value.
func (c *kase) series(f func(p monitor.Point) (float64, bool)) (ts, vs []float64) {
	if len(c.h) == 0 {
		return nil, nil
	}
	t0 := c.h[0].T
	for _, p := range c.h {
		if v, ok := f(p); ok && !math.IsNaN(v) {
			ts = append(ts, float64(p.T-t0)/1000)
			vs = append(vs, v)
		}
	}
	return ts, vs
}

func opVal(op string, f func(monitor.OpPoint) *float64) func(p monitor.Point) (float64, bool) {
	return func(p monitor.Point) (float64, bool) {
		o, ok := p.Ops[op]
		if !ok {
			return 0, false
		}
		v := f(o)
		if v == nil {
			return 0, false
		}
		return *v, true
	}
}

// lateRate is the job's too-late records per second (side output and
// dropped) over the window operators.
func (c *kase) lateRate(p monitor.Point) (float64, bool) {
	var sum float64
	measured := false
	for _, w := range c.win {
		o := p.Ops[w]
		for _, v := range []*float64{o.SideOutputPerS, o.DroppedPerS, o.LateAcceptedPerS} {
			if v != nil {
				sum += *v
				measured = true
			}
		}
	}
	return sum, measured
}

func (c *kase) maxOver(ops []string, f func(monitor.OpPoint) *float64) func(p monitor.Point) (float64, bool) {
	return func(p monitor.Point) (float64, bool) {
		v, any := 0.0, false
		for _, op := range ops {
			if o, ok := p.Ops[op]; ok && f(o) != nil {
				if !any || *f(o) > v {
					v = *f(o) // (a lag can be negative: the watermark ahead of the clock)
				}
				any = true
			}
		}
		return v, any
	}
}

// trend fits a line to the series: slope per second and R².
func trend(ts, vs []float64) (slope, r2 float64) {
	n := float64(len(ts))
	if n < 3 {
		return 0, 0
	}
	var st, sv, stt, stv, svv float64
	for i := range ts {
		st += ts[i]
		sv += vs[i]
		stt += ts[i] * ts[i]
		stv += ts[i] * vs[i]
		svv += vs[i] * vs[i]
	}
	den := n*stt - st*st
	if den == 0 {
		return 0, 0
	}
	slope = (n*stv - st*sv) / den
	vt := n*svv - sv*sv
	if vt <= 0 {
		return slope, 0
	}
	r := (n*stv - st*sv) / math.Sqrt(den*vt)
	return slope, r * r
}

// rising reports whether the series rises steadily over at least 3
// minutes: a positive slope with R² > 0.6 and a total rise above min.
func rising(ts, vs []float64, min float64) bool {
	if len(ts) < 3 || ts[len(ts)-1]-ts[0] < 180 {
		return false
	}
	s, r2 := trend(ts, vs)
	return s > 0 && r2 > 0.6 && s*(ts[len(ts)-1]-ts[0]) > min
}

func last(vs []float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	return vs[len(vs)-1]
}

func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	return s[len(s)/2]
}

// recentAndBefore splits a series at the last 2 minutes.
func recentAndBefore(ts, vs []float64) (recent, before []float64) {
	if len(ts) == 0 {
		return nil, nil
	}
	cut := ts[len(ts)-1] - 120
	for i := range ts {
		if ts[i] > cut {
			recent = append(recent, vs[i])
		} else {
			before = append(before, vs[i])
		}
	}
	return recent, before
}

func mean(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	var s float64
	for _, v := range vs {
		s += v
	}
	return s / float64(len(vs))
}

// secs formats seconds for evidence.
func secs(s float64) string {
	switch a := math.Abs(s); {
	case math.IsNaN(s):
		return "unknown"
	case a < 1:
		return fmt.Sprintf("%.0fms", s*1000)
	case a < 120:
		return fmt.Sprintf("%.1fs", s)
	case a < 7200:
		return fmt.Sprintf("%.1fm", s/60)
	case a < 3*86400:
		return fmt.Sprintf("%.1fh", s/3600)
	}
	return fmt.Sprintf("%.0fd", s/86400)
}

// dur formats seconds as a spec duration (rounded up to whole seconds).
func dur(s float64) string {
	s = math.Ceil(s)
	switch {
	case s >= 3600 && math.Mod(s, 3600) == 0:
		return fmt.Sprintf("%.0fh", s/3600)
	case s >= 60 && math.Mod(s, 60) == 0:
		return fmt.Sprintf("%.0fm", s/60)
	}
	return fmt.Sprintf("%.0fs", s)
}

func (c *kase) busiest() (op string, busy float64) {
	if len(c.h) == 0 {
		return "", math.NaN()
	}
	busy = math.NaN()
	for name, o := range c.h[len(c.h)-1].Ops {
		if o.Busy != nil && (math.IsNaN(busy) || *o.Busy > busy || *o.Busy == busy && name < op) {
			op, busy = name, *o.Busy
		}
	}
	return op, busy
}

func (c *kase) operator(name string) *monitor.Operator {
	for i := range c.s.Operators {
		if c.s.Operators[i].Name == name {
			return &c.s.Operators[i]
		}
	}
	return nil
}

// quadrant places the job (docs/OBSERVABILITY.md, the first question).
func (c *kase) quadrant() Report {
	lag, back, known := c.lag, c.back, c.backKnown
	lagHigh := !math.IsNaN(lag) && c.lagHigh()
	growing := back > 0 && c.backGrowing
	why := fmt.Sprintf("lag %s against %s allowed for bound + window; ", secs(lag), secs(c.t.LagHighS))
	switch {
	case math.IsNaN(lag) && c.s.Totals.RecordsIn == 0:
		why = "no record read yet; "
	case math.IsNaN(lag):
		why = ""
	case lag < 0:
		why = fmt.Sprintf("lag %s: the watermark is ahead of the clock; ", secs(lag))
	}
	if known {
		why += fmt.Sprintf("source backlog %.0f", back)
		if growing {
			why += " and growing"
		}
	} else {
		why += "source backlog not reported"
	}
	if span := c.span(); span < 180 {
		why += fmt.Sprintf("; history covers %s (trend rules need 3 minutes)", secs(span))
	}
	q := "healthy"
	switch {
	case math.IsNaN(lag):
		q = "no watermark yet"
	case lagHigh && growing:
		q = "processing is slow"
	case lagHigh:
		q = "data arrives slowly or is old"
	case growing:
		q = "processing fell behind just now"
	}
	return Report{Quadrant: q, QuadrantWhy: why}
}
