package doctor

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/monitor"
)

// rules are D1 to D22 and D27 of docs/OBSERVABILITY.md: D1 to D19 of the
// design notes, D20 (the inputs went quiet with windows waiting), D21 (a
// field the spec reads is not in the records), D22 (no record read at
// all) and D27 (a checkpoint or sink call stuck).
var rules = []func(c *kase) []Finding{
	d1UpstreamDelay, d2Bottleneck, d3OldData, d4WatermarkTooFast, d5d6Holder, d7Skew, d8Future, d9Unit,
	d10Regression, d11TimerBacklog, d12LatenessTooLarge, d13d14State, d15d16Checkpoints, d17AfterRestore,
	d18Flapping, d19NoWatermark, d20QuietEnd, d21MissingField, d22NothingRead, d27Stuck,
}

// D27: a checkpoint, a sink call or the sampling itself has been in
// progress for the monitor's StuckAfter (10 s) or longer: a sink's server
// or the checkpoint store does not answer (an outage, a lock). Output
// waits meanwhile, and once checkpoint.max_buffered is held the sources
// stop, so the lag and backlog look normal for a while: this is the rule
// that says the job is stalled.
func d27Stuck(c *kase) []Finding {
	var out []Finding
	for _, st := range c.s.Stuck {
		f := Finding{Rule: "D27", Severity: Critical, Evidence: st.Why}
		switch st.What {
		case "checkpoint":
			f.Where = "checkpoint " + st.Name
			f.Title = fmt.Sprintf("checkpoint %s has been in its %s phase for %s: its output is not committed, and the job stalls once checkpoint.max_buffered is held", st.Name, st.Phase, secs(st.ForS))
			switch st.Phase {
			case "pre-commit":
				f.Fix = "a sink it waits for does not answer (a server down, a table locked: for Postgres, pg_stat_activity; a stuck sink call is named too when there is one); the checkpoint completes, or fails and the job restarts from its last one, once the sink answers"
			case "snapshots":
				f.Fix = "its barriers wait in the queues: a subtask is busy or backpressured (see D2, D15 and D16)"
			default: // begin, parts, commit
				f.Fix = "the checkpoint store is slow or stuck: check the disk under checkpoint.dir (full, slow, a network filesystem)"
			}
		case "sink":
			f.Where = "sink " + st.Name
			f.Title = fmt.Sprintf("sink %s has been in a %s call for %s: its server has not answered it (down, slow, or a table locked)", st.Name, st.Phase, secs(st.ForS))
			f.Fix = "check that sink's server (reachable, not locked: for Postgres, pg_stat_activity; for Kafka, the brokers); the call's timeout ends it, and the checkpoints make the output exact when it answers"
		case "source":
			f.Where = st.Name
			f.Title = fmt.Sprintf("%s has not reached its server for %s: no record comes, and the watermark and the results wait", st.Name, secs(st.ForS))
			f.Fix = "bring the server back, or check the source's address (for Kafka, the brokers: running, reachable, the port); the source reads on from its position when it answers"
		default:
			f.Where = st.What
			f.Title = fmt.Sprintf("%s %s has been in progress for %s", st.What, st.Name, secs(st.ForS))
			f.Fix = "the job's process is overloaded or blocked: look at its CPU and its stderr"
		}
		out = append(out, f)
	}
	return out
}

// lateJump reports whether the late rate of the last 2 minutes is above
// LateRise times its median before, and above LateMinShare of the input.
func (c *kase) lateJump() (jump bool, recent, before float64) {
	ts, vs := c.series(c.lateRate)
	r, b := recentAndBefore(ts, vs)
	if len(r) == 0 || len(b) < 3 {
		return false, mean(r), median(b)
	}
	recent, before = mean(r), median(b)
	in := 0.0
	if p := c.h[len(c.h)-1].Job.RecordsInPerS; p != nil {
		in = *p
	}
	return recent > c.t.LateRise*before && recent > c.t.LateMinShare*in && recent > 0, recent, before
}

func (c *kase) latenessP99() float64 {
	_, vs := c.series(c.maxOver(c.win, func(o monitor.OpPoint) *float64 { return &o.LatenessP99S }))
	return last(vs)
}

// D1: lag and late records rise together while the source is caught up
// and nothing is busy: the data arrives slowly (upstream delay).
// atEnd reports whether a watermark is the final one (etime.MaxTime, the
// end of input), within a margin.
func atEnd(wm *int64) bool { return wm != nil && *wm >= math.MaxInt64-1000 }

// ended reports whether an operator got the final watermark (its input
// ended): lag is 0 then, and judged no further.
func (c *kase) ended() bool {
	for _, op := range c.s.Operators {
		if atEnd(op.Watermark) {
			return true
		}
	}
	return false
}

func (c *kase) busiestText() string {
	op, busy := c.busiest()
	if math.IsNaN(busy) {
		return "busy time not measured yet"
	}
	return fmt.Sprintf("busiest %s at %.0f%%", op, 100*busy)
}

func d1UpstreamDelay(c *kase) []Finding {
	lag, recent, before, back, known := c.lag, c.lateRecent, c.lateBefore, c.back, c.backKnown
	_, busy := c.busiest()
	if !c.lagRising || !c.jump || known && back > 0 || !math.IsNaN(busy) && busy > 0.5 {
		return nil
	}
	slope, r2 := trend(c.lagTS, c.lagVS)
	p99 := c.latenessP99()
	return []Finding{{Rule: "D1", Severity: Warning, Where: c.win0(),
		Title:    "data arrives slowly: the watermark lag and the late records rise together while the source is caught up and the job is not busy (an upstream delay)",
		Evidence: fmt.Sprintf("lag %s rising at %.2fs/s (R² %.2f); late records %.1f/s, %.1f/s before; backlog %s; %s", secs(lag), slope, r2, recent, before, backlogText(back, known), c.busiestText()),
		Fix:      fmt.Sprintf("fix the upstream delay (producer retries, network); if it is the new normal, raise the out-of-orderness bound (watermark.max_out_of_orderness; in SQL the WATERMARK's INTERVAL; a strictly_ascending watermark has none: use bounded_out_of_orderness) toward the p99 lateness (%s) and keep sinks.late for the rest", dur(math.Max(p99, c.b)))}}
}

func backlogText(b float64, known bool) string {
	if !known {
		return "not reported"
	}
	return fmt.Sprintf("%.0f", b)
}

// D2: lag high or rising and the backlog growing, with an operator busy
// above BusyHigh: processing is slow, that operator is the bottleneck.
func d2Bottleneck(c *kase) []Finding {
	lag, back := c.lag, c.back
	if !c.backGrowing || !c.lagHigh() {
		return nil
	}
	// The first operator, in graph order, that is busy: upstream of it
	// the others are backpressured by it.
	p := c.h[len(c.h)-1]
	for _, op := range c.s.Operators {
		o := p.Ops[op.Name]
		if o.Busy == nil || *o.Busy < c.t.BusyHigh {
			continue
		}
		var up []string
		for _, u := range op.Upstream {
			if uo := p.Ops[u]; uo.Backpressured != nil {
				up = append(up, fmt.Sprintf("%s backpressured %.0f%%", u, 100**uo.Backpressured))
			}
		}
		return []Finding{{Rule: "D2", Severity: Critical, Where: op.Name,
			Title:    "processing is slow: " + op.Name + " is the bottleneck (busy all the time while its input queues and the source backlog grow)",
			Evidence: fmt.Sprintf("%s busy %.0f%%; %s; backlog %.0f and growing; lag %s", op.Name, 100**o.Busy, strings.Join(append(up, "queues "+queues(&op)), "; "), back, secs(lag)),
			Fix:      "give " + op.Name + " more subtasks (source.channels and the run's --parallelism), aggregate incrementally instead of collecting, batch the sink"}}
	}
	return nil
}

func queues(op *monitor.Operator) string {
	var q []string
	for _, st := range op.Subtasks {
		if st.QueueCap > 0 {
			q = append(q, fmt.Sprintf("%d/%d", st.Queue, st.QueueCap))
		}
	}
	if len(q) == 0 {
		return "none"
	}
	return strings.Join(q, " ")
}

// D3: lag high but steady, the source caught up, little busy and no late
// jump: the job replays history (old data by design, not a fault).
func d3OldData(c *kase) []Finding {
	lag := c.lag
	back, known := c.back, c.backKnown
	if math.IsNaN(lag) || lag < math.Max(c.t.LagHighS, 3600) || known && back > 0 || c.jump {
		return nil
	}
	return []Finding{{Rule: "D3", Severity: Info, Where: c.win0(),
		Title:    "old data by design: the watermark is far behind the clock because the job reads history (a replay or backfill), not because anything is late",
		Evidence: fmt.Sprintf("lag %s (the data's event time is from %s ago); backlog %s", secs(lag), secs(lag), backlogText(back, known)),
		Fix:      "nothing to fix; silence lag alerts while replaying, and judge lateness by the late counts, not the lag"}}
}

// D4: the late rate jumps while the lag is normal or falling: the
// watermark runs ahead of the data (bound too small, or a fast input).
func d4WatermarkTooFast(c *kase) []Finding {
	lag, recent, before := c.lag, c.lateRecent, c.lateBefore
	if !c.jump || c.lagHigh() || c.justRestored() {
		return nil // (a jump right after a restore is D17's)
	}
	p99 := c.latenessP99()
	fix := fmt.Sprintf("raise the out-of-orderness bound (watermark.max_out_of_orderness; in SQL the WATERMARK's INTERVAL; a strictly_ascending watermark has none: use bounded_out_of_orderness) toward the observed p99 lateness (%s; now %s)", dur(math.Max(p99, c.b)), dur(c.b))
	if c.hasKafka() {
		fix += "; with several partitions, set watermark.max_drift so a fast partition cannot run ahead of a slow one"
	}
	return []Finding{{Rule: "D4", Severity: Warning, Where: c.win0(),
		Title:    "the watermark runs ahead of the data: late records jumped while the lag is normal",
		Evidence: fmt.Sprintf("late records %.1f/s in the last 2 minutes, %.1f/s before (×%.0f); lag %s; lateness p99 %s against bound %s", recent, before, recent/math.Max(before, 1e-9), secs(lag), secs(p99), secs(c.b)),
		Fix:      fix + "; see D18 if inputs flip between idle and active"}}
}

func (c *kase) win0() string {
	if len(c.win) > 0 {
		return c.win[0]
	}
	if len(c.ops) > 0 {
		return c.ops[0]
	}
	return "job"
}

func (c *kase) hasKafka() bool {
	for _, op := range c.s.Operators {
		for _, st := range op.Subtasks {
			for _, in := range st.Inputs {
				if strings.HasPrefix(in.Name, "partition ") {
					return true
				}
			}
		}
	}
	return false
}

// sourceInput finds the source input a holder chain ends at.
func (c *kase) sourceInput(h monitor.Holder) (*monitor.Input, string) {
	var end string
	if len(h.Chain) > 0 {
		end = h.Chain[len(h.Chain)-1] // "source[0] partition 2"
	}
	src := h.Source
	if src == nil {
		return nil, end
	}
	op := c.operator(src.Operator)
	if op == nil {
		return nil, end
	}
	for j := range op.Subtasks {
		st := &op.Subtasks[j]
		for k := range st.Inputs {
			if st.Index == src.Subtask && st.Inputs[k].Name == src.Input {
				return &st.Inputs[k], end
			}
		}
	}
	return nil, end
}

// D5 and D6: one source input holds an operator's watermark for longer
// than HoldS: with a backlog it is behind (D6); without one it gets no
// records (D5). Before the operator has any watermark, an input that
// has sent no record holds it at none, and no window can fire: that is
// D5 as soon as records were read and NoWatermarkS passed, however
// long HoldS is (the idle timeout, say, is a minute away). When every
// input has gone quiet, D20 says so instead.
func d5d6Holder(c *kase) []Finding {
	var out []Finding
	if c.quietEnd.quiet {
		return nil
	}
	for _, h := range c.s.Holders {
		in, where := c.sourceInput(h)
		if in == nil || in.State != "active" && in.State != "no watermark yet" {
			continue
		}
		age := "no record yet"
		if in.LastRecordAgeS != nil {
			age = "last record " + secs(*in.LastRecordAgeS) + " ago"
		}
		if in.Backlog != nil && *in.Backlog > 0 {
			if h.HoldingForS < c.t.HoldS {
				continue
			}
			out = append(out, Finding{Rule: "D6", Severity: Warning, Where: where,
				Title:    "a lagging input holds " + h.Operator + "'s watermark: it has data waiting, so it is behind, not idle (marking it idle would turn its backlog into late data)",
				Evidence: fmt.Sprintf("holding for %s; backlog %d; %s; chain %s", secs(h.HoldingForS), *in.Backlog, age, strings.Join(h.Chain, " ← ")),
				Fix:      "set watermark.max_drift so faster inputs pause until it catches up; add source.channels (consumers) or rebalance the partitions; never idle out an input with a backlog"})
			continue
		}
		op := c.operator(h.Operator)
		none := op != nil && op.Watermark == nil && in.Watermark == nil && c.s.Totals.RecordsIn > 0
		switch {
		case none && h.HoldingForS >= c.t.NoWatermarkS:
		case h.HoldingForS < c.t.HoldS:
			continue
		case in.LastRecordAgeS != nil && *in.LastRecordAgeS < math.Max(c.i, 2*c.b):
			continue // it is getting records: a normal holder
		}
		out = append(out, c.emptyInput(h, in, where, age, none))
	}
	return out
}

// emptyInput is D5's finding for holder h, whose source input in gets
// no records: the reason it still holds (no idle timeout, or one not
// reached yet; faster inputs paused for it) and the fixes.
func (c *kase) emptyInput(h monitor.Holder, in *monitor.Input, where, age string, none bool) Finding {
	title := "an idle or empty input holds " + h.Operator + "'s watermark: it gets no records and has no backlog, so windows do not fire"
	if none {
		title = "no window can fire: records were read but " + h.Operator + " has no watermark yet, because an input that has sent no record holds it at none"
	}
	why := "no idle timeout is set, so it holds until a record comes"
	if c.i > 0 {
		why = fmt.Sprintf("the idle timeout (%s) is not reached yet", dur(c.i))
		if in.LastRecordAgeS != nil {
			why += fmt.Sprintf(": it counts as idle in %s", secs(math.Max(c.i-*in.LastRecordAgeS, 0)))
		}
	}
	if n := c.pausedInputs(); n > 0 {
		why += fmt.Sprintf("; %d faster inputs are paused by watermark.max_drift until it catches up", n)
	}
	var empty []string
	if none {
		empty = c.emptyInputs()
	}
	limit := c.t.HoldS
	if none {
		limit = c.t.NoWatermarkS
	}
	ev := fmt.Sprintf("holding for %s (more than %s); backlog %s; %s; watermark %s; %s; chain %s", secs(h.HoldingForS), secs(limit), ptrText(in.Backlog), age, wmText(in.Watermark), why, strings.Join(h.Chain, " ← "))
	if len(empty) > 1 {
		ev = fmt.Sprintf("%d records in; %d inputs have sent no record yet (%s); ", c.s.Totals.RecordsIn, len(empty), strings.Join(empty, ", ")) + ev
	} else if none {
		ev = fmt.Sprintf("%d records in; ", c.s.Totals.RecordsIn) + ev
	}
	fix := "set watermark.idle_timeout (now not set) so that a quiet input that is caught up stops holding the watermark"
	if c.i > 0 {
		fix = fmt.Sprintf("the windows fire by themselves once the idle timeout (%s) marks the quiet input idle; lower watermark.idle_timeout to let them fire sooner", dur(c.i))
	}
	if c.s.Job.Parallelism > 1 {
		fix += fmt.Sprintf("; keep source.channels (now %d) at most the number of partitions", c.s.Job.Parallelism)
	}
	return Finding{Rule: "D5", Severity: Warning, Where: where, Title: title, Evidence: ev, Fix: fix + "; " + drainFix}
}

// drainFix is the way to fire every open window at the end of a bounded
// replay.
const drainFix = "if the input is complete (a bounded replay), run the job with weir run --drain, and Ctrl-C then sends the final watermark first, so every open window fires"

// eachSourceInput calls fn on every input of every source subtask, until
// fn returns false.
func (c *kase) eachSourceInput(fn func(op *monitor.Operator, st *monitor.Subtask, in *monitor.Input) bool) {
	for i := range c.s.Operators {
		op := &c.s.Operators[i]
		if !op.Source {
			continue
		}
		for j := range op.Subtasks {
			st := &op.Subtasks[j]
			for k := range st.Inputs {
				if !fn(op, st, &st.Inputs[k]) {
					return
				}
			}
		}
	}
}

// emptyInputs names the source inputs that have sent no record, nor a
// watermark, and are not idle.
func (c *kase) emptyInputs() []string {
	var out []string
	c.eachSourceInput(func(op *monitor.Operator, st *monitor.Subtask, in *monitor.Input) bool {
		if in.Watermark == nil && in.LastRecordAgeS == nil && in.State != "idle" {
			out = append(out, fmt.Sprintf("%s[%d] %s", op.Name, st.Index, in.Name))
		}
		return true
	})
	return out
}

// pausedInputs counts the source inputs watermark alignment pauses.
func (c *kase) pausedInputs() int {
	n := 0
	c.eachSourceInput(func(_ *monitor.Operator, _ *monitor.Subtask, in *monitor.Input) bool {
		if in.State == "paused" {
			n++
		}
		return true
	})
	return n
}

// quietState is what quiet found (see there); newCase computes it once.
type quietState struct {
	quiet  bool
	maxTS  *int64
	inputs int
	since  float64
}

// quiet reports whether records were read, every source input is idle
// or has had no record for HoldS (and has had one) and has no backlog,
// the final watermark has not come, and records above the lowest window
// watermark were read (their windows cannot have fired), or, where the
// sources do not report event times, window state is left; with the
// newest event time read (nil: not reported), the count of source inputs
// and the shortest time since one of them had a record (NaN: none has
// had one, or all are idle).
func (c *kase) quiet() quietState {
	no := quietState{since: math.NaN()}
	if c.s.Totals.RecordsIn == 0 || c.ended() || len(c.win) == 0 {
		return no
	}
	q, busy := no, false
	c.eachSourceInput(func(_ *monitor.Operator, _ *monitor.Subtask, in *monitor.Input) bool {
		// Getting records, or none yet (an input that never had one
		// holds the watermark: D5's case), or a backlog: not quiet.
		if in.Backlog != nil && *in.Backlog > 0 || in.State != "idle" && (in.LastRecordAgeS == nil || *in.LastRecordAgeS < c.t.HoldS) {
			busy = true
			return false
		}
		if a := in.LastRecordAgeS; a != nil && in.State != "idle" && !(*a >= q.since) {
			q.since = *a
		}
		if in.MaxEventTime != nil && (q.maxTS == nil || *in.MaxEventTime > *q.maxTS) {
			q.maxTS = in.MaxEventTime
		}
		q.inputs++
		return true
	})
	if busy || q.inputs == 0 {
		return no
	}
	for _, name := range c.win {
		op := c.operator(name)
		if q.maxTS != nil && (op.Watermark == nil || *q.maxTS > *op.Watermark) || q.maxTS == nil && op.Window != nil && op.Window.Windows > 0 {
			q.quiet = true
			return q
		}
	}
	return no
}

// D20: the inputs have gone quiet and the last windows wait for a
// watermark that will not come until records do.
func d20QuietEnd(c *kase) []Finding {
	q := c.quietEnd
	if !q.quiet {
		return nil
	}
	maxTS, inputs, since := q.maxTS, q.inputs, q.since
	name := c.win[0]
	op := c.operator(name)
	ev := fmt.Sprintf("no record for %s on any of the %d source inputs (idle or quiet for more than %s), none with a backlog", secs(since), inputs, secs(c.t.HoldS))
	if math.IsNaN(since) {
		ev = fmt.Sprintf("every one of the %d source inputs is idle, none with a backlog", inputs)
	}
	if maxTS != nil {
		ev += fmt.Sprintf("; records up to %s were read, %s's watermark is %s, so the windows of the last %s of data have not fired", wmText(maxTS), name, wmText(op.Watermark), secs(float64(*maxTS-wmOr(op.Watermark, *maxTS-int64(c.b*1000)))/1000))
	}
	if op.Window != nil {
		ev += fmt.Sprintf("; %d windows in state", op.Window.Windows)
	}
	fix := drainFix + "; "
	if c.i > 0 {
		fix += fmt.Sprintf("for a live source that pauses, the last windows fire when records resume (with every input idle after watermark.idle_timeout, now %s, the watermark only reaches the largest one seen)", dur(c.i))
	} else {
		fix += "for a live source that pauses, the last windows fire when records resume; set watermark.idle_timeout so idle inputs at least let the watermark reach the largest one seen"
	}
	return []Finding{{Rule: "D20", Severity: Warning, Where: name,
		Title:    "the inputs have gone quiet: the last windows wait for a watermark that will not come until more records arrive",
		Evidence: ev, Fix: fix}}
}

func wmOr(w *int64, or int64) int64 {
	if w == nil {
		return or
	}
	return *w
}

func idleText(i float64) string {
	if i == 0 {
		return "not set"
	}
	return dur(i)
}

func ptrText(p *int64) string {
	if p == nil {
		return "not reported"
	}
	return fmt.Sprint(*p)
}

func wmText(w *int64) string {
	if w == nil {
		return "none yet"
	}
	return time.UnixMilli(*w).UTC().Format(time.RFC3339)
}

// D7: an operator's subtask watermarks spread wider than the bound and
// its records are skewed over subtasks: a hot key or skewed data.
func d7Skew(c *kase) []Finding {
	if len(c.h) == 0 || c.ended() {
		return nil
	}
	var out []Finding
	p := c.h[len(c.h)-1]
	for _, op := range c.ops {
		o := p.Ops[op]
		if o.SpreadS == nil || o.Skew == nil || *o.SpreadS <= c.b || *o.Skew <= c.t.SkewHigh {
			continue
		}
		out = append(out, Finding{Rule: "D7", Severity: Warning, Where: op,
			Title:    "key or data skew: a few subtasks of " + op + " get most records and their watermarks drift apart",
			Evidence: fmt.Sprintf("records skew %.0f%% over subtasks (above %.0f%%); subtask watermark spread %s against bound %s", 100**o.Skew, 100*c.t.SkewHigh, secs(*o.SpreadS), secs(c.b)),
			Fix:      "for a hot key, set two_phase: true (each source subtask pre-aggregates per key and window, the window merges; tumbling or sliding windows, mergeable aggregates; in SQL, SET 'table.optimizer.agg-phase-strategy' = 'TWO_PHASE'), or key by a finer field (key); more subtasks do not help a single hot key"})
	}
	return out
}

// D8: event time ahead of the clock: future-dated records poisoned the
// watermark.
func d8Future(c *kase) []Finding {
	ahead := math.NaN()
	if len(c.h) > 0 && c.h[len(c.h)-1].Job.MaxEventAheadS != nil {
		ahead = *c.h[len(c.h)-1].Job.MaxEventAheadS
	}
	where := "source"
	for _, op := range c.s.Operators {
		if op.Watermark != nil && !atEnd(op.Watermark) {
			if a := float64(*op.Watermark-c.s.Now) / 1000; math.IsNaN(ahead) || a > ahead {
				ahead, where = a, op.Name
			}
		}
	}
	if math.IsNaN(ahead) || ahead <= c.t.FutureS {
		return nil
	}
	return []Finding{{Rule: "D8", Severity: Critical, Where: where,
		Title:    "future-dated timestamps: event time runs ahead of the clock, so the watermark passed records that are still to come and they will all be late",
		Evidence: fmt.Sprintf("event time %s ahead of processing time (more than %s)", secs(ahead), secs(c.t.FutureS)),
		Fix:      fmt.Sprintf("keep source.timestamp.checks on and set source.timestamp.max_future (default 1h) below the %s the records run ahead, so such records become dead letters instead of moving the watermark; fix the producer's clock", secs(ahead))}}
}

// D9: timestamps in the wrong unit or field: event times near 1970 or
// far in the future, or dead letters that say so.
func d9Unit(c *kase) []Finding {
	var ev []string
	var bad int64
	for _, r := range []string{"timestamp_unit", "timestamp_too_old", "timestamp_negative"} {
		if n := c.s.Counters["dead_letter_"+r]; n > 0 {
			ev = append(ev, fmt.Sprintf("%d dead letters %s", n, r))
			bad += n
		}
	}
	// A few such records are bad input the checks caught (dead letters
	// with their reason); many mean the spec reads the wrong unit.
	many := float64(bad) > 0.01*float64(c.counted())
	for _, op := range c.s.Operators {
		if op.Watermark == nil || atEnd(op.Watermark) {
			continue
		}
		y := time.UnixMilli(*op.Watermark).UTC().Year()
		if y < 2000 || y > 2200 {
			ev = append(ev, fmt.Sprintf("%s's watermark is in the year %d", op.Name, y))
		}
	}
	if len(ev) == 0 {
		return nil
	}
	if !many && !strings.Contains(strings.Join(ev, ";"), "year") {
		return []Finding{{Rule: "D9", Severity: Info, Where: "timestamp",
			Title:    "a few records had timestamps in the wrong unit or range; the checks made them dead letters",
			Evidence: fmt.Sprintf("%s, of %d records in", strings.Join(ev, "; "), c.counted()),
			Fix:      "nothing in the spec; fix the producers that send them (sinks.dead_letter has each with its reason)"}}
	}
	return []Finding{{Rule: "D9", Severity: Critical, Where: "timestamp",
		Title:    "timestamps are read in the wrong unit or from the wrong field (seconds taken as milliseconds, or the reverse)",
		Evidence: strings.Join(ev, "; "),
		Fix:      "set timestamp.unit to the unit the records use (s, ms, us, ns), or timestamp.field to the right field"}}
}

// D10: event time jumps back by more than an hour within a channel.
func d10Regression(c *kase) []Finding {
	_, vs := c.series(func(p monitor.Point) (float64, bool) { return float64(p.Job.Regressions), true })
	if len(vs) < 2 || last(vs) <= vs[0] {
		return nil
	}
	return []Finding{{Rule: "D10", Severity: Warning, Where: "source",
		Title:    "event time jumps back within an input: an upstream clock regression, or a replay written into a live topic",
		Evidence: fmt.Sprintf("%.0f backward jumps of more than an hour in the history, %.0f in all", last(vs)-vs[0], last(vs)),
		Fix:      "check the producer's clock; replay history with a separate job (source.kafka.start) instead of into the live topic"}}
}

// D11: the firing delay is far above the lag: timers fire late because
// the window operator is overloaded at window ends. Each history point
// has the firing delay of its own interval's firings (the windows the
// first watermark fired are not in it: they ended before the job had a
// watermark), and the rule wants it in every point of the last 2
// minutes that had firings, at least two, with the lag normal in each:
// one interval in which a replay caught up, or the start of a job, is
// not a backlog.
func d11TimerBacklog(c *kase) []Finding {
	if len(c.win) == 0 || len(c.h) == 0 || c.ended() {
		return nil // (the final watermark fires everything at once)
	}
	lagOf := c.maxOver(c.win, func(o monitor.OpPoint) *float64 { return o.LagS })
	delayOf := c.maxOver(c.win, func(o monitor.OpPoint) *float64 { return &o.FiringDelayP99S })
	cut := c.h[len(c.h)-1].T - 120_000
	var l, f float64
	n := 0
	for _, p := range c.h {
		fd, ok := delayOf(p)
		if p.T < cut || !ok || fd == 0 {
			continue // too old, or no window fired in the interval
		}
		lag, ok := lagOf(p)
		if !ok || lag > c.t.LagHighS || fd <= 2*lag+math.Max(c.b, 10) {
			return nil
		}
		l, f, n = lag, fd, n+1
	}
	if n < 2 {
		return nil
	}
	return []Finding{{Rule: "D11", Severity: Warning, Where: c.win[0],
		Title:    "timer backlog: windows fire long after the watermark passed their end, so the window operator is overloaded when many windows end together",
		Evidence: fmt.Sprintf("firing delay p99 %s against lag %s, in each of the %d intervals with firings in the last 2 minutes; %s", secs(f), secs(l), n, c.busiestText()),
		Fix:      "aggregate incrementally, stagger the windows with window.offset, or add subtasks"}}
}

// D12: the allowed lateness is far larger than the lateness observed.
func d12LatenessTooLarge(c *kase) []Finding {
	if c.l < 60 {
		return nil
	}
	for _, name := range c.win {
		op := c.operator(name)
		if op == nil || op.Window.LatenessCount < 100 {
			continue
		}
		if p := op.Window.LatenessP999S; p < c.l/4 {
			return []Finding{{Rule: "D12", Severity: Info, Where: name,
				Title:    "the allowed lateness is larger than needed: it keeps window state for lateness that does not occur",
				Evidence: fmt.Sprintf("lateness p99.9 %s over %d late records; allowed lateness %s; state %d bytes", secs(p), op.Window.LatenessCount, secs(c.l), op.Window.StateBytes),
				Fix:      fmt.Sprintf("lower allowed_lateness to about %s; sinks.late keeps the rare later records for a backfill", dur(math.Max(p*1.5, 1)))}}
		}
	}
	return nil
}

// D13 and D14: state grows for 10 minutes. With the oldest pending
// timer far behind the clock, cleanup is stuck (the watermark does not
// advance); otherwise the state grows by design.
func d13d14State(c *kase) []Finding {
	var out []Finding
	for _, name := range c.win {
		ts, vs := c.series(func(p monitor.Point) (float64, bool) { o, ok := p.Ops[name]; return float64(o.StateBytes), ok })
		if len(ts) < 3 || ts[len(ts)-1]-ts[0] < 600 || !rising(ts, vs, 0) {
			continue
		}
		_, ages := c.series(opVal(name, func(o monitor.OpPoint) *float64 { return o.OldestTimerAgeS }))
		lag := c.lag
		stuck := last(ages) > c.l+c.w+c.b+c.t.HoldS && c.lagRising
		if stuck {
			out = append(out, Finding{Rule: "D13", Severity: Warning, Where: name,
				Title:    "state cleanup is stuck: the watermark does not advance, so no window's cleanup time comes and the state only grows",
				Evidence: fmt.Sprintf("state %.0f → %.0f bytes in %s; oldest pending timer %s behind the clock; lag %s and rising", vs[0], last(vs), secs(ts[len(ts)-1]-ts[0]), secs(last(ages)), secs(lag)),
				Fix:      "make the watermark advance: see the holder of " + name + "'s watermark (D5, D6); set watermark.idle_timeout"})
			continue
		}
		out = append(out, Finding{Rule: "D14", Severity: Info, Where: name,
			Title:    "state grows by design: the watermark advances, so more keys or larger windows hold more state",
			Evidence: fmt.Sprintf("state %.0f → %.0f bytes in %s while the watermark advances", vs[0], last(vs), secs(ts[len(ts)-1]-ts[0])),
			Fix:      "if it is too much: aggregate instead of collecting, a smaller window.size or allowed_lateness, or the pebble state backend"})
	}
	return out
}

// D15 and D16: checkpoints held up. Every subtask slow to take them
// means backpressure delays the barriers (D15); one subtask much slower
// than the others means skew or a slow input there (D16).
func d15d16Checkpoints(c *kase) []Finding {
	var delays []float64
	var slowest string
	var worst float64
	for _, op := range c.s.Operators {
		for _, st := range op.Subtasks {
			if st.CheckpointDelayS <= 0 {
				continue
			}
			delays = append(delays, st.CheckpointDelayS)
			if st.CheckpointDelayS > worst {
				worst, slowest = st.CheckpointDelayS, fmt.Sprintf("%s[%d]", op.Name, st.Index)
			}
		}
	}
	if len(delays) == 0 {
		return nil
	}
	med := median(delays)
	switch {
	case med > c.t.CheckpointDelayS:
		return []Finding{{Rule: "D15", Severity: Warning, Where: "checkpoints",
			Title:    "checkpoints are slow on every subtask: backpressure holds the barriers in the queues",
			Evidence: fmt.Sprintf("start delay median %s over %d subtasks (above %s), slowest %s at %s", secs(med), len(delays), secs(c.t.CheckpointDelayS), slowest, secs(worst)),
			Fix:      "relieve the bottleneck first (D2); a longer checkpoint.interval meanwhile"}}
	case worst > c.t.CheckpointDelayS && worst > 3*med:
		return []Finding{{Rule: "D16", Severity: Warning, Where: slowest,
			Title:    "checkpoints wait for one subtask: it is skewed or one of its inputs is slow",
			Evidence: fmt.Sprintf("start delay %s at %s, median %s over %d subtasks", secs(worst), slowest, secs(med), len(delays)),
			Fix:      "see D7 (skew) and the holder of its watermark; rebalance its inputs"}}
	}
	return nil
}

// justRestored reports a restore within the last 2 minutes.
// counted is the records the job's counters count in (records_in, of
// the same reading as their dead letters), else the sources' count: the
// sources read ahead of the decoder, by a queue's worth and more while a
// sink holds the job back, so a share of dead letters over the sources'
// count would mix two moments.
func (c *kase) counted() int64 {
	if n, ok := c.s.Counters["records_in"]; ok {
		return n
	}
	return c.s.Totals.RecordsIn
}

func (c *kase) justRestored() bool {
	return c.s.RestoredAt != nil && c.s.Now-*c.s.RestoredAt <= 120_000
}

// D17: late records jump right after a restore: watermarks or timers
// were not restored with the state (never expected in weir).
func d17AfterRestore(c *kase) []Finding {
	if !c.justRestored() || len(c.h) == 0 {
		return nil
	}
	since := float64(c.s.Now-*c.s.RestoredAt) / 1000
	ts, vs := c.series(c.lateRate)
	var after, before []float64
	for i := range ts {
		if float64(c.h[0].T)/1000+ts[i] >= float64(*c.s.RestoredAt)/1000 {
			after = append(after, vs[i])
		} else {
			before = append(before, vs[i])
		}
	}
	if mean(after) <= math.Max(c.t.LateRise*median(before), 1) {
		return nil
	}
	return []Finding{{Rule: "D17", Severity: Critical, Where: "restore",
		Title:    "late records spiked right after the job resumed from a checkpoint: watermarks or timers did not come back with the state",
		Evidence: fmt.Sprintf("late records %.1f/s in the %s since the restore, %.1f/s before", mean(after), secs(since), median(before)),
		Fix:      "report this: weir checkpoints watermarks per input and channel; check the checkpoint directory was not mixed between jobs"}}
}

// D18: an input flips between idle and active: the idle timeout is too
// short for its rate, so each reactivation finds the watermark moved on.
func d18Flapping(c *kase) []Finding {
	var out []Finding
	for _, op := range c.s.Operators {
		for _, st := range op.Subtasks {
			for _, in := range st.Inputs {
				if in.IdleFlips <= c.t.IdleFlips {
					continue
				}
				out = append(out, Finding{Rule: "D18", Severity: Warning, Where: fmt.Sprintf("%s[%d] %s", op.Name, st.Index, in.Name),
					Title:    "an input flips between idle and active: the idle timeout is shorter than the gaps of a slow input",
					Evidence: fmt.Sprintf("%d idle/active changes in 10 minutes (more than %d); idle timeout %s", in.IdleFlips, c.t.IdleFlips, idleText(c.i)),
					Fix:      fmt.Sprintf("raise watermark.idle_timeout above the input's longest quiet gap (now %s)", idleText(c.i))})
			}
		}
	}
	return out
}

// D19: records flow but no operator has a watermark.
func d19NoWatermark(c *kase) []Finding {
	if c.s.Totals.RecordsIn == 0 || len(c.ops) == 0 {
		return nil
	}
	for _, h := range c.s.Holders {
		if in, _ := c.sourceInput(h); in != nil && in.Watermark == nil {
			return nil // a source input without a watermark holds it: D5 or D6 says which
		}
	}
	for _, m := range c.s.MissingFields {
		if m.Fatal {
			return nil // every record is a dead letter: D21 says why
		}
	}
	var whys []string
	for _, name := range c.ops {
		op := c.operator(name)
		if op.Watermark != nil {
			return nil
		}
		whys = append(whys, name+": "+op.WatermarkWhy)
	}
	if c.span() < c.t.HoldS {
		return nil // too early to tell
	}
	slices.Sort(whys)
	return []Finding{{Rule: "D19", Severity: Critical, Where: strings.Join(c.ops, ", "),
		Title:    "records flow but no watermark ever came: no window will fire",
		Evidence: fmt.Sprintf("%d records in; %s", c.s.Totals.RecordsIn, strings.Join(whys, "; ")),
		Fix:      "check timestamp.field and watermark (a watermark strategy per input); set watermark.idle_timeout for inputs that get no records"}}
}

// D21: a field the spec reads never appeared in the job's first
// records: a misspelled name. Without a timestamp or key field every
// record is a dead letter (critical); without an aggregate's field its
// results are null.
func d21MissingField(c *kase) []Finding {
	var out []Finding
	for _, m := range c.s.MissingFields {
		sev := Warning
		if m.Fatal {
			sev = Critical
		}
		out = append(out, Finding{Rule: "D21", Severity: sev, Where: m.Path,
			Title:    fmt.Sprintf("the spec reads field %q, which the records do not have (a misspelled name, or a CSV header that does not match)", m.Field),
			Evidence: fmt.Sprintf("%s %q was in none of the first %d records; %s; %d dead letters of %d records in", m.Path, m.Field, m.Records, m.Effect, c.s.Counters["dead_letter"], c.counted()),
			Fix:      fmt.Sprintf("set %s to the records' name for it: %s", m.Path, m.Fix)})
	}
	return out
}

// D22: no record has been read since the job started: an empty or
// quiet source, or one read from the wrong place.
func d22NothingRead(c *kase) []Finding {
	if c.s.Totals.RecordsIn > 0 || c.span() < max(c.t.NoWatermarkS, 2*c.b) || len(c.ops) == 0 {
		return nil
	}
	return []Finding{{Rule: "D22", Severity: Info, Where: "source",
		Title:    "no record has been read yet, so there is nothing to window",
		Evidence: fmt.Sprintf("0 records in over the %s of history; source backlog %s", secs(c.span()), backlogText(c.back, c.backKnown)),
		Fix:      "check that records are being produced, and the source's address and topic or stream; a Kafka source with source.kafka.start: latest or committed reads only what arrives after it starts"}}
}
