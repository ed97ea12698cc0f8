// Package trigger decides when a window fires (semantics section D).
//
// Trigger is an open interface: users may write their own. The built-in
// constructors (EventTime, Continuous, Count, ProcessingTime, Final,
// EndOfStream, Never, Purging) follow Flink's triggers rule for rule, plus
// weir's Final (semantics W9).
//
// A trigger keeps its per-(key, window) state in small integer slots offered
// by its Context, so the engine can store it in any state backend; a trigger
// must not keep per-window state in its own fields. Triggers are called from
// one goroutine per operator instance and must not block.
package trigger

import (
	"fmt"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/window"
)

// Result is what a trigger callback asks the operator to do.
type Result uint8

// The trigger results (D1). Purge removes the window contents only; trigger
// state, timers and the window's cleanup stay until cleanup.
const (
	Continue Result = iota
	Fire
	Purge
	FireAndPurge
)

// IsFire reports whether r fires the window.
func (r Result) IsFire() bool { return r == Fire || r == FireAndPurge }

// IsPurge reports whether r purges the window contents.
func (r Result) IsPurge() bool { return r == Purge || r == FireAndPurge }

func (r Result) String() string {
	switch r {
	case Continue:
		return "CONTINUE"
	case Fire:
		return "FIRE"
	case Purge:
		return "PURGE"
	case FireAndPurge:
		return "FIRE_AND_PURGE"
	}
	return "?"
}

// MaxSlots is the number of int64 state slots a trigger may use per window.
const MaxSlots = 4

// Context is what the operator offers a trigger for one (key, window).
// It is valid only during the callback it was passed to.
type Context interface {
	// Watermark is the operator's current watermark.
	Watermark() etime.Time
	// ProcessingTime is the operator's current processing time.
	ProcessingTime() etime.Time
	// CleanupTime is the window's cleanup time, maxTimestamp + allowed
	// lateness, saturating (semantics B3).
	CleanupTime() etime.Time
	// RegisterEventTimeTimer registers a timer for this (key, window) at t.
	// Registering the same time twice keeps one timer (C1). A timer at or
	// below the current watermark fires at the next watermark advance (C4).
	RegisterEventTimeTimer(t etime.Time)
	// DeleteEventTimeTimer deletes exactly the timer at t, if any.
	DeleteEventTimeTimer(t etime.Time)
	// RegisterProcessingTimeTimer and DeleteProcessingTimeTimer are the same
	// on processing time.
	RegisterProcessingTimeTimer(t etime.Time)
	DeleteProcessingTimeTimer(t etime.Time)
	// Slot reads state slot i (0 <= i < MaxSlots) of this window.
	Slot(i int) (v int64, ok bool)
	// SetSlot writes state slot i of this window.
	SetSlot(i int, v int64)
	// ClearSlot removes state slot i of this window.
	ClearSlot(i int)
}

// MergeContext is the Context of OnMerge: the window is the merged result and
// MergedSlot reads the slots of the windows being absorbed into it.
type MergeContext interface {
	Context
	// MergedSlot appends slot i of every absorbed window that has it to dst.
	MergedSlot(i int, dst []int64) []int64
}

// Trigger decides when a window fires and purges. Implementations are
// immutable; per-window state lives in Context slots.
type Trigger interface {
	// OnElement is called for every element added to window w.
	OnElement(ctx Context, ts etime.Time, w window.Window) Result
	// OnEventTime is called when an event-time timer of w at t fires.
	OnEventTime(ctx Context, t etime.Time, w window.Window) Result
	// OnProcessingTime is called when a processing-time timer of w at t fires.
	OnProcessingTime(ctx Context, t etime.Time, w window.Window) Result
	// CanMerge reports whether the trigger supports merging windows; a
	// merging assigner refuses a trigger that does not when the job is built.
	CanMerge() bool
	// OnMerge is called when windows merge into w (sessions).
	OnMerge(ctx MergeContext, w window.Window)
	// Clear removes the trigger's timers and state for w; the operator calls it
	// at cleanup and for windows absorbed by a merge.
	Clear(ctx Context, w window.Window)
	// String describes the trigger.
	String() string
}

// EventTime is the default trigger of event-time windows (D2): it fires once
// when the watermark passes the window's maxTimestamp, and at once for each
// element that arrives after that within the allowed lateness.
func EventTime() Trigger { return eventTime{} }

type eventTime struct{ eventTimeOnly }

func (eventTime) OnElement(ctx Context, _ etime.Time, w window.Window) Result {
	if w.MaxTimestamp() <= ctx.Watermark() {
		return Fire
	}
	ctx.RegisterEventTimeTimer(w.MaxTimestamp())
	return Continue
}

func (eventTime) OnEventTime(_ Context, t etime.Time, w window.Window) Result {
	if t == w.MaxTimestamp() {
		return Fire
	}
	return Continue
}

func (eventTime) OnMerge(ctx MergeContext, w window.Window) {
	if w.MaxTimestamp() > ctx.Watermark() {
		ctx.RegisterEventTimeTimer(w.MaxTimestamp())
	}
}
func (eventTime) Clear(ctx Context, w window.Window) { ctx.DeleteEventTimeTimer(w.MaxTimestamp()) }
func (eventTime) String() string                     { return "event_time" }

// ProcessingTime fires when processing time reaches the window's
// maxTimestamp (D8).
func ProcessingTime() Trigger { return processingTime{} }

type processingTime struct{}

func (processingTime) OnElement(ctx Context, _ etime.Time, w window.Window) Result {
	ctx.RegisterProcessingTimeTimer(w.MaxTimestamp())
	return Continue
}
func (processingTime) OnEventTime(Context, etime.Time, window.Window) Result { return Continue }
func (processingTime) OnProcessingTime(_ Context, t etime.Time, w window.Window) Result {
	if t == w.MaxTimestamp() {
		return Fire
	}
	return Continue
}
func (processingTime) CanMerge() bool { return true }
func (processingTime) OnMerge(ctx MergeContext, w window.Window) {
	if w.MaxTimestamp() > ctx.ProcessingTime() {
		ctx.RegisterProcessingTimeTimer(w.MaxTimestamp())
	}
}
func (processingTime) Clear(ctx Context, w window.Window) {
	ctx.DeleteProcessingTimeTimer(w.MaxTimestamp())
}
func (processingTime) String() string { return "processing_time" }

// Continuous fires the window early every interval of event time, then on
// time and late like EventTime (D4, current Flink: next fire time clamped to
// the window end). The first fire time follows the window's first element,
// rounded with Java's truncating remainder.
//
// On the global window, weir stops interval firings at the final MAX
// watermark: the pending interval timer neither fires nor registers a
// successor, and the window fires exactly once, on time, from its MAX timer,
// so end of input cannot loop toward MAX step by step (the D4 hazard).
func Continuous(interval etime.Duration) (Trigger, error) {
	if interval <= 0 {
		return nil, fmt.Errorf("weir: continuous trigger interval must be > 0, got %dms", interval)
	}
	return continuous{interval: interval}, nil
}

type continuous struct {
	interval etime.Duration
	eventTimeOnly
}

const slotFireTime = 0

func (c continuous) OnElement(ctx Context, ts etime.Time, w window.Window) Result {
	if w.MaxTimestamp() <= ctx.Watermark() {
		return Fire
	}
	ctx.RegisterEventTimeTimer(w.MaxTimestamp())
	if _, ok := ctx.Slot(slotFireTime); !ok {
		first := ts - etime.Time(int64(ts)%int64(c.interval))
		first = etime.Min(first.Add(c.interval), w.MaxTimestamp())
		ctx.SetSlot(slotFireTime, int64(first))
		ctx.RegisterEventTimeTimer(first)
	}
	return Continue
}

func (c continuous) OnEventTime(ctx Context, t etime.Time, w window.Window) Result {
	if t == w.MaxTimestamp() {
		return Fire
	}
	v, ok := ctx.Slot(slotFireTime)
	if !ok || etime.Time(v) != t {
		return Continue
	}
	if ctx.Watermark() == etime.MaxTime && w.IsGlobal() {
		// D4 hazard: at the final watermark a global window's interval
		// timers would climb toward MAX one interval at a time. Stop them;
		// the window fires once, on time, from its MAX timer.
		ctx.ClearSlot(slotFireTime)
		return Continue
	}
	next := etime.Min(t.Add(c.interval), w.MaxTimestamp())
	ctx.SetSlot(slotFireTime, int64(next))
	ctx.RegisterEventTimeTimer(next)
	return Fire
}

func (continuous) OnMerge(ctx MergeContext, w window.Window) {
	var buf [8]int64
	vals := ctx.MergedSlot(slotFireTime, buf[:0])
	if len(vals) == 0 {
		return
	}
	m := vals[0]
	for _, v := range vals[1:] {
		m = min(m, v)
	}
	ctx.SetSlot(slotFireTime, m)
	ctx.RegisterEventTimeTimer(etime.Time(m))
}

func (continuous) Clear(ctx Context, _ window.Window) {
	if v, ok := ctx.Slot(slotFireTime); ok {
		ctx.DeleteEventTimeTimer(etime.Time(v))
		ctx.ClearSlot(slotFireTime)
	}
}
func (c continuous) String() string { return fmt.Sprintf("continuous(%d)", c.interval) }

// Count fires every n elements (D5). It does not purge, so the contents keep
// accumulating; it ignores time and never fires at end of input.
func Count(n int64) (Trigger, error) {
	if n <= 0 {
		return nil, fmt.Errorf("weir: count trigger needs count > 0, got %d", n)
	}
	return count{n: n}, nil
}

type count struct {
	n int64
	eventTimeOnly
}

const slotCount = 0

func (c count) OnElement(ctx Context, _ etime.Time, _ window.Window) Result {
	v, _ := ctx.Slot(slotCount)
	v++
	if v >= c.n {
		ctx.ClearSlot(slotCount)
		return Fire
	}
	ctx.SetSlot(slotCount, v)
	return Continue
}
func (count) OnEventTime(Context, etime.Time, window.Window) Result { return Continue }
func (count) OnMerge(ctx MergeContext, _ window.Window) {
	var buf [8]int64
	var s int64
	vals := ctx.MergedSlot(slotCount, buf[:0])
	for _, v := range vals {
		s += v
	}
	if len(vals) > 0 {
		ctx.SetSlot(slotCount, s)
	}
}
func (count) Clear(ctx Context, _ window.Window) { ctx.ClearSlot(slotCount) }
func (c count) String() string                   { return fmt.Sprintf("count(%d)", c.n) }

// Purging turns every FIRE of t into FIRE_AND_PURGE (D6).
func Purging(t Trigger) Trigger { return purging{t} }

type purging struct{ t Trigger }

func purge(r Result) Result {
	if r.IsFire() {
		return FireAndPurge
	}
	return r
}
func (p purging) OnElement(ctx Context, ts etime.Time, w window.Window) Result {
	return purge(p.t.OnElement(ctx, ts, w))
}
func (p purging) OnEventTime(ctx Context, t etime.Time, w window.Window) Result {
	return purge(p.t.OnEventTime(ctx, t, w))
}
func (p purging) OnProcessingTime(ctx Context, t etime.Time, w window.Window) Result {
	return purge(p.t.OnProcessingTime(ctx, t, w))
}
func (p purging) CanMerge() bool                            { return p.t.CanMerge() }
func (p purging) OnMerge(ctx MergeContext, w window.Window) { p.t.OnMerge(ctx, w) }
func (p purging) Clear(ctx Context, w window.Window)        { p.t.Clear(ctx, w) }
func (p purging) String() string                            { return "purging(" + p.t.String() + ")" }

// Never never fires, not even at end of input (D7: GlobalWindows.create()).
func Never() Trigger { return never{} }

type never struct{ eventTimeOnly }

func (never) OnElement(Context, etime.Time, window.Window) Result   { return Continue }
func (never) OnEventTime(Context, etime.Time, window.Window) Result { return Continue }
func (never) OnMerge(MergeContext, window.Window)                   {}
func (never) Clear(Context, window.Window)                          {}
func (never) String() string                                        { return "never" }

// EndOfStream fires exactly once, at the final MAX watermark (D7,
// GlobalWindows.createWithEndOfStreamTrigger).
func EndOfStream() Trigger { return once{} }

// Final fires exactly once per window, when the watermark reaches the
// window's cleanup time (maxTimestamp + allowed lateness), just before the
// window's state is cleared, with every element it accepted, late ones
// included (semantics W9; Kafka Streams' suppress(untilWindowCloses)).
func Final() Trigger { return once{atCleanup: true} }

// once fires a window exactly once, from one event-time timer: at the
// window's cleanup time (Final) or at MAX (EndOfStream).
type once struct {
	atCleanup bool
	eventTimeOnly
}

func (o once) at(ctx Context) etime.Time {
	if o.atCleanup {
		return ctx.CleanupTime()
	}
	return etime.MaxTime
}

func (o once) OnElement(ctx Context, _ etime.Time, _ window.Window) Result {
	ctx.RegisterEventTimeTimer(o.at(ctx))
	return Continue
}
func (o once) OnEventTime(ctx Context, t etime.Time, _ window.Window) Result {
	if t == o.at(ctx) {
		return Fire
	}
	return Continue
}
func (o once) OnMerge(ctx MergeContext, _ window.Window) { ctx.RegisterEventTimeTimer(o.at(ctx)) }
func (o once) Clear(ctx Context, _ window.Window)        { ctx.DeleteEventTimeTimer(o.at(ctx)) }
func (o once) String() string {
	if o.atCleanup {
		return "final"
	}
	return "end_of_stream"
}

// FiresOnce reports whether t fires every window exactly once when the
// allowed lateness is 0: the event-time trigger, at the window's
// maxTimestamp, and Final, at its cleanup time (the same then). A window
// whose results feed another window must fire so (semantics W12).
func FiresOnce(t Trigger) bool {
	switch t := t.(type) {
	case eventTime:
		return true
	case once:
		return t.atCleanup
	}
	return false
}

// eventTimeOnly is embedded by built-in triggers that ignore processing time
// and support merging windows.
type eventTimeOnly struct{}

func (eventTimeOnly) OnProcessingTime(Context, etime.Time, window.Window) Result { return Continue }
func (eventTimeOnly) CanMerge() bool                                             { return true }

// Default returns the trigger a window assigner uses when none is given:
// EventTime for event-time windows, ProcessingTime for processing-time
// windows, Never for the global window.
func Default(a window.Assigner) Trigger {
	switch {
	case a.Kind() == window.KindGlobal:
		return Never()
	case a.ProcessingTime():
		return ProcessingTime()
	}
	return EventTime()
}

// NeverPurges reports whether t is a built-in trigger known never to purge.
// The window operator stores sliding windows as shared panes only then,
// because a purge of one window must not clear contents that overlapping
// windows still need.
func NeverPurges(t Trigger) bool {
	switch t.(type) {
	case eventTime, continuous, count, once, never, processingTime:
		return true
	}
	return false
}

// Complete reports whether t's last firing of a window holds everything
// the window received, and each late firing the whole updated state, as
// the event-time trigger's, a continuous one's and Final's do: the
// published rows are then the windows' states, which a backfill folds
// late records into. A purging trigger's rows hold what came since the
// last firing, a count or processing-time trigger leaves the records
// after its last firing unfired.
func Complete(t Trigger) bool {
	switch t := t.(type) {
	case eventTime, continuous:
		return true
	case once:
		return t.atCleanup
	}
	return false
}

// IsEventTime reports whether t is the built-in EventTime trigger, which
// the window operator runs inline on its hot path.
func IsEventTime(t Trigger) bool {
	_, ok := t.(eventTime)
	return ok
}

// Combinable reports whether t treats a window's on-time elements alike
// however they are grouped: its OnElement for an element before the
// window's end never fires and depends on nothing but whether it is the
// window's first element (its timestamp then). The event-time trigger, a
// continuous one and Final are; a two-phase window, which passes
// pre-aggregated bundles of records as single elements, needs one of them.
// They are the triggers Complete names, for a reason of their own.
func Combinable(t Trigger) bool { return Complete(t) }

// TwoPhaseRefusal is why windows of assigner a with trigger t (nil: the
// default) cannot be two-phase (weir.WindowOptions.TwoPhase, a spec's
// two_phase), or "": only tumbling and sliding event-time windows, whose
// records of one key and time share their windows, with a Combinable
// trigger.
func TwoPhaseRefusal(a window.Assigner, t Trigger) string {
	_, _, tumbling := window.TumblingGeometry(a)
	_, _, _, sliding := window.SlidingGeometry(a)
	if t == nil {
		t = Default(a)
	}
	switch {
	case !tumbling && !sliding:
		return fmt.Sprintf("%s windows are not pre-aggregated: only tumbling and sliding windows have windows that every record of a key and time shares", a.Kind())
	case !a.IsEventTime():
		return "processing-time windows are not pre-aggregated: a record's window is its arrival at the window"
	case !Combinable(t):
		return fmt.Sprintf("two_phase takes only the event_time, continuous or final trigger, whose firings do not depend on how a window's records are grouped (not %v); use one of them", t)
	}
	return ""
}
