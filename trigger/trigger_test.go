package trigger

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/window"
)

// fakeCtx is a Context and MergeContext that records the timers and slots a
// trigger keeps for one window.
type fakeCtx struct {
	wm, now, cleanup etime.Time
	et, pt           map[etime.Time]bool
	slots            map[int]int64
	merged           map[int][]int64 // MergedSlot's values, per slot
}

func newCtx() *fakeCtx {
	return &fakeCtx{wm: etime.MinTime, now: 0, cleanup: etime.MaxTime,
		et: map[etime.Time]bool{}, pt: map[etime.Time]bool{}, slots: map[int]int64{}}
}

func (c *fakeCtx) Watermark() etime.Time                    { return c.wm }
func (c *fakeCtx) ProcessingTime() etime.Time               { return c.now }
func (c *fakeCtx) CleanupTime() etime.Time                  { return c.cleanup }
func (c *fakeCtx) RegisterEventTimeTimer(t etime.Time)      { c.et[t] = true }
func (c *fakeCtx) DeleteEventTimeTimer(t etime.Time)        { delete(c.et, t) }
func (c *fakeCtx) RegisterProcessingTimeTimer(t etime.Time) { c.pt[t] = true }
func (c *fakeCtx) DeleteProcessingTimeTimer(t etime.Time)   { delete(c.pt, t) }
func (c *fakeCtx) Slot(i int) (int64, bool) {
	checkSlot(i)
	v, ok := c.slots[i]
	return v, ok
}
func (c *fakeCtx) SetSlot(i int, v int64) { checkSlot(i); c.slots[i] = v }
func (c *fakeCtx) ClearSlot(i int)        { checkSlot(i); delete(c.slots, i) }
func (c *fakeCtx) MergedSlot(i int, dst []int64) []int64 {
	checkSlot(i)
	return append(dst, c.merged[i]...)
}

func checkSlot(i int) {
	if i < 0 || i >= MaxSlots {
		panic(fmt.Sprintf("slot %d out of range", i))
	}
}

func (c *fakeCtx) eventTimers() []etime.Time { return slices.Sorted(maps.Keys(c.et)) }
func (c *fakeCtx) procTimers() []etime.Time  { return slices.Sorted(maps.Keys(c.pt)) }

// mustT returns a valid constructor's trigger (panicking, which fails the
// test, on an error).
func mustT(tr Trigger, err error) Trigger {
	if err != nil {
		panic(err)
	}
	return tr
}

func equalTimes(a, b []etime.Time) bool { return slices.Equal(a, b) }

// w is the window [0, 5000): maxTimestamp 4999.
var w = window.Window{Start: 0, End: 5000}

func TestResult(t *testing.T) {
	for _, c := range []struct {
		r           Result
		fire, purge bool
		s           string
	}{
		{Continue, false, false, "CONTINUE"},
		{Fire, true, false, "FIRE"},
		{Purge, false, true, "PURGE"},
		{FireAndPurge, true, true, "FIRE_AND_PURGE"},
		{Result(9), false, false, "?"},
	} {
		if c.r.IsFire() != c.fire || c.r.IsPurge() != c.purge || c.r.String() != c.s {
			t.Errorf("%d: IsFire %v IsPurge %v String %q, want %v %v %q", c.r, c.r.IsFire(), c.r.IsPurge(), c.r.String(), c.fire, c.purge, c.s)
		}
	}
}

func TestValidation(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func() (Trigger, error)
		err  string // "" is valid
	}{
		{"continuous 0", func() (Trigger, error) { return Continuous(0) }, "weir: continuous trigger interval must be > 0, got 0ms"},
		{"continuous -5", func() (Trigger, error) { return Continuous(-5) }, "weir: continuous trigger interval must be > 0, got -5ms"},
		{"continuous 1", func() (Trigger, error) { return Continuous(1) }, ""},
		{"count 0", func() (Trigger, error) { return Count(0) }, "weir: count trigger needs count > 0, got 0"},
		{"count -1", func() (Trigger, error) { return Count(-1) }, "weir: count trigger needs count > 0, got -1"},
		{"count 1", func() (Trigger, error) { return Count(1) }, ""},
	} {
		tr, err := c.f()
		switch {
		case c.err == "" && (err != nil || tr == nil):
			t.Errorf("%s: %v, %v; want a trigger", c.name, tr, err)
		case c.err != "" && (err == nil || err.Error() != c.err || tr != nil):
			t.Errorf("%s: %v, %v; want no trigger and %q", c.name, tr, err, c.err)
		}
	}
}

func TestString(t *testing.T) {
	cont := mustT(Continuous(1000))
	cnt := mustT(Count(3))
	for _, c := range []struct {
		tr   Trigger
		want string
	}{
		{EventTime(), "event_time"},
		{ProcessingTime(), "processing_time"},
		{cont, "continuous(1000)"},
		{cnt, "count(3)"},
		{Purging(cnt), "purging(count(3))"},
		{Purging(Purging(EventTime())), "purging(purging(event_time))"},
		{Never(), "never"},
		{EndOfStream(), "end_of_stream"},
		{Final(), "final"},
	} {
		if got := c.tr.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
	}
}

// TestCount: every n-th element fires (the count restarts), time never
// does, a merge adds the absorbed windows' counts, Clear drops the count.
func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string // OnElement results of 7 elements: C continue, F fire
	}{
		{1, "FFFFFFF"},
		{2, "CFCFCFC"},
		{3, "CCFCCFC"},
		{8, "CCCCCCC"},
	} {
		tr := mustT(Count(c.n))
		ctx := newCtx()
		var got strings.Builder
		for i := range 7 {
			got.WriteString(tr.OnElement(ctx, etime.Time(i), w).String()[:1])
		}
		if got.String() != c.want {
			t.Errorf("count(%d): %s, want %s", c.n, got.String(), c.want)
		}
		if v, ok := ctx.Slot(slotCount); c.n > 1 && (!ok || v != 7%c.n) || c.n == 1 && ok {
			t.Errorf("count(%d): slot %d (%v) after 7 elements, want %d", c.n, v, ok, 7%c.n)
		}
		if len(ctx.et)+len(ctx.pt) != 0 {
			t.Errorf("count(%d) registered timers %v %v", c.n, ctx.et, ctx.pt)
		}
		for _, ts := range []etime.Time{0, w.MaxTimestamp(), etime.MaxTime} {
			if r := tr.OnEventTime(ctx, ts, w); r != Continue {
				t.Errorf("count(%d).OnEventTime(%v) = %v", c.n, ts, r)
			}
			if r := tr.OnProcessingTime(ctx, ts, w); r != Continue {
				t.Errorf("count(%d).OnProcessingTime(%v) = %v", c.n, ts, r)
			}
		}
		tr.Clear(ctx, w)
		if len(ctx.slots) != 0 {
			t.Errorf("count(%d): slots %v after Clear", c.n, ctx.slots)
		}
	}

	tr := mustT(Count(5))
	if !tr.CanMerge() {
		t.Fatal("count cannot merge")
	}
	for _, c := range []struct {
		merged []int64
		want   int64
		set    bool
	}{
		{nil, 0, false},
		{[]int64{3}, 3, true},
		{[]int64{1, 2, 1}, 4, true},
	} {
		ctx := newCtx()
		ctx.merged = map[int][]int64{slotCount: c.merged}
		tr.OnMerge(ctx, w)
		v, ok := ctx.Slot(slotCount)
		if ok != c.set || v != c.want {
			t.Errorf("merge of %v: slot %d (%v), want %d (%v)", c.merged, v, ok, c.want, c.set)
		}
	}
	// A merged count of 4 fires on the next element.
	ctx := newCtx()
	ctx.merged = map[int][]int64{slotCount: {2, 2}}
	tr.OnMerge(ctx, w)
	if r := tr.OnElement(ctx, 0, w); r != Fire {
		t.Fatalf("the fifth element after a merge of 2+2: %v, want FIRE", r)
	}
}

// TestEventTime: on-time elements register the window's maxTimestamp and
// continue; late ones (the watermark at or past maxTimestamp) fire at once;
// only the maxTimestamp timer fires.
func TestEventTime(t *testing.T) {
	tr := EventTime()
	for _, c := range []struct {
		wm     etime.Time
		want   Result
		timers []etime.Time
	}{
		{etime.MinTime, Continue, []etime.Time{4999}},
		{4998, Continue, []etime.Time{4999}},
		{4999, Fire, nil},
		{6000, Fire, nil},
	} {
		ctx := newCtx()
		ctx.wm = c.wm
		if r := tr.OnElement(ctx, 10, w); r != c.want || !equalTimes(ctx.eventTimers(), c.timers) || len(ctx.pt) != 0 {
			t.Errorf("watermark %v: OnElement %v, timers %v %v; want %v, %v", c.wm, r, ctx.eventTimers(), ctx.procTimers(), c.want, c.timers)
		}
	}
	ctx := newCtx()
	for _, c := range []struct {
		t    etime.Time
		want Result
	}{{4998, Continue}, {4999, Fire}, {5000, Continue}, {etime.MaxTime, Continue}} {
		if r := tr.OnEventTime(ctx, c.t, w); r != c.want {
			t.Errorf("OnEventTime(%v) = %v, want %v", c.t, r, c.want)
		}
		if r := tr.OnProcessingTime(ctx, c.t, w); r != Continue {
			t.Errorf("OnProcessingTime(%v) = %v, want CONTINUE", c.t, r)
		}
	}
	// The global window fires at MAX.
	if r := tr.OnEventTime(ctx, etime.MaxTime, window.Global); r != Fire {
		t.Errorf("global window at MAX: %v, want FIRE", r)
	}
	for _, c := range []struct {
		wm     etime.Time
		timers []etime.Time
	}{{4998, []etime.Time{4999}}, {4999, nil}} {
		ctx := newCtx()
		ctx.wm = c.wm
		tr.OnMerge(ctx, w)
		if !equalTimes(ctx.eventTimers(), c.timers) {
			t.Errorf("merge at watermark %v: timers %v, want %v", c.wm, ctx.eventTimers(), c.timers)
		}
	}
	ctx = newCtx()
	tr.OnElement(ctx, 10, w)
	ctx.RegisterEventTimeTimer(100) // not the trigger's
	tr.Clear(ctx, w)
	if !equalTimes(ctx.eventTimers(), []etime.Time{100}) {
		t.Errorf("after Clear: timers %v, want only the other [100]", ctx.eventTimers())
	}
	if !tr.CanMerge() || !IsEventTime(tr) || !NeverPurges(tr) {
		t.Error("event_time: CanMerge, IsEventTime and NeverPurges should hold")
	}
}

// TestProcessingTime: elements register a processing-time timer at the
// window's maxTimestamp, which alone fires; event time never fires.
func TestProcessingTime(t *testing.T) {
	tr := ProcessingTime()
	ctx := newCtx()
	ctx.wm = etime.MaxTime // the watermark plays no part
	ctx.now = 10_000       // nor does a processing time past the window
	if r := tr.OnElement(ctx, 10, w); r != Continue || !equalTimes(ctx.procTimers(), []etime.Time{4999}) || len(ctx.et) != 0 {
		t.Fatalf("OnElement %v, timers %v %v; want CONTINUE and a processing-time timer at 4999", r, ctx.eventTimers(), ctx.procTimers())
	}
	for _, c := range []struct {
		t    etime.Time
		want Result
	}{{4998, Continue}, {4999, Fire}, {5000, Continue}} {
		if r := tr.OnProcessingTime(ctx, c.t, w); r != c.want {
			t.Errorf("OnProcessingTime(%v) = %v, want %v", c.t, r, c.want)
		}
		if r := tr.OnEventTime(ctx, c.t, w); r != Continue {
			t.Errorf("OnEventTime(%v) = %v, want CONTINUE", c.t, r)
		}
	}
	tr.Clear(ctx, w)
	if len(ctx.pt) != 0 {
		t.Errorf("after Clear: processing-time timers %v", ctx.procTimers())
	}
	for _, c := range []struct {
		now    etime.Time
		timers []etime.Time
	}{{4998, []etime.Time{4999}}, {4999, nil}} {
		ctx := newCtx()
		ctx.now = c.now
		tr.OnMerge(ctx, w)
		if !equalTimes(ctx.procTimers(), c.timers) || len(ctx.et) != 0 {
			t.Errorf("merge at processing time %v: timers %v %v, want %v", c.now, ctx.eventTimers(), ctx.procTimers(), c.timers)
		}
	}
	if !tr.CanMerge() || IsEventTime(tr) || !NeverPurges(tr) {
		t.Error("processing_time: CanMerge and NeverPurges should hold, IsEventTime not")
	}
}

// TestContinuousFirstFireTime: the first interval timer is the element's
// timestamp rounded down (Java's truncating remainder) plus the interval,
// clamped to the window's maxTimestamp; later elements keep it.
func TestContinuousFirstFireTime(t *testing.T) {
	tr := mustT(Continuous(1000))
	for _, c := range []struct {
		w     window.Window
		ts    etime.Time
		first etime.Time
	}{
		{w, 0, 1000},
		{w, 1500, 2000},
		{w, 1999, 2000},
		{w, 4500, 4999}, // clamped to maxTimestamp
		{window.Window{Start: -5000, End: 5000}, -1500, 0}, // -1500 - (-500) + 1000
		{window.Window{Start: -5000, End: 5000}, -1000, 0},
		{window.Window{Start: -2000, End: 0}, -1500, -1}, // clamped
	} {
		ctx := newCtx()
		if r := tr.OnElement(ctx, c.ts, c.w); r != Continue {
			t.Errorf("%v ts %v: %v, want CONTINUE", c.w, c.ts, r)
		}
		want := []etime.Time{c.first, c.w.MaxTimestamp()}
		if c.first == c.w.MaxTimestamp() {
			want = want[:1]
		}
		slices.Sort(want)
		v, ok := ctx.Slot(slotFireTime)
		if !ok || etime.Time(v) != c.first || !equalTimes(ctx.eventTimers(), want) {
			t.Errorf("%v ts %v: slot %d (%v), timers %v; want %v, timers %v", c.w, c.ts, v, ok, ctx.eventTimers(), c.first, want)
		}
		// A second element keeps the first fire time.
		tr.OnElement(ctx, c.ts+1, c.w)
		if v2, _ := ctx.Slot(slotFireTime); v2 != v || !equalTimes(ctx.eventTimers(), want) {
			t.Errorf("%v: a second element moved the fire time to %d, timers %v", c.w, v2, ctx.eventTimers())
		}
	}
}

// TestContinuous drives a window [0, 5000) with interval 1000 through its
// timers: early firings every second, the last clamped to maxTimestamp,
// the on-time firing, and late elements firing at once.
func TestContinuous(t *testing.T) {
	tr := mustT(Continuous(1000))
	ctx := newCtx()
	tr.OnElement(ctx, 1500, w)
	type step struct {
		t      etime.Time
		want   Result
		slot   etime.Time // fire time after the step
		timers []etime.Time
	}
	for _, s := range []step{
		{1500, Continue, 2000, []etime.Time{2000, 4999}}, // not the fire time: nothing changes
		{2000, Fire, 3000, []etime.Time{2000, 3000, 4999}},
		{3000, Fire, 4000, []etime.Time{2000, 3000, 4000, 4999}},
		{4000, Fire, 4999, []etime.Time{2000, 3000, 4000, 4999}},
		{4999, Fire, 4999, []etime.Time{2000, 3000, 4000, 4999}}, // on time
	} {
		ctx.wm = s.t
		r := tr.OnEventTime(ctx, s.t, w)
		v, _ := ctx.Slot(slotFireTime)
		if r != s.want || etime.Time(v) != s.slot || !equalTimes(ctx.eventTimers(), s.timers) {
			t.Fatalf("OnEventTime(%v) = %v, fire time %d, timers %v; want %v, %v, %v", s.t, r, v, ctx.eventTimers(), s.want, s.slot, s.timers)
		}
		if r := tr.OnProcessingTime(ctx, s.t, w); r != Continue {
			t.Fatalf("OnProcessingTime(%v) = %v", s.t, r)
		}
	}
	// Late, within the allowed lateness: every element fires.
	ctx.wm = 6000
	if r := tr.OnElement(ctx, 100, w); r != Fire {
		t.Fatalf("late element: %v, want FIRE", r)
	}
	// Clear deletes the timer of the slot's fire time (4999; the fake
	// keeps the fired timers, which the operator would have removed).
	tr.Clear(ctx, w)
	if _, ok := ctx.Slot(slotFireTime); ok || !equalTimes(ctx.eventTimers(), []etime.Time{2000, 3000, 4000}) {
		t.Errorf("after Clear: slots %v, timers %v; want none and [2000 3000 4000]", ctx.slots, ctx.eventTimers())
	}
	ctx = newCtx()
	tr.OnElement(ctx, 1500, w)
	tr.Clear(ctx, w)
	if _, ok := ctx.Slot(slotFireTime); ok || !equalTimes(ctx.eventTimers(), []etime.Time{4999}) {
		t.Errorf("Clear: slots %v, timers %v; want no slot and the interval timer 2000 deleted", ctx.slots, ctx.eventTimers())
	}
}

// TestContinuousGlobalAtMax: at the final watermark a global window's
// interval timer neither fires nor registers a successor (D4); its MAX
// timer fires once.
func TestContinuousGlobalAtMax(t *testing.T) {
	tr := mustT(Continuous(1000))
	ctx := newCtx()
	tr.OnElement(ctx, 1500, window.Global)
	if !equalTimes(ctx.eventTimers(), []etime.Time{2000, etime.MaxTime}) {
		t.Fatalf("timers %v, want [2000 MAX]", ctx.eventTimers())
	}
	// Before the end, interval timers fire and climb.
	ctx.wm = 2000
	if r := tr.OnEventTime(ctx, 2000, window.Global); r != Fire || !ctx.et[3000] {
		t.Fatalf("interval timer before MAX: %v, timers %v", r, ctx.eventTimers())
	}
	ctx.wm = etime.MaxTime
	if r := tr.OnEventTime(ctx, 3000, window.Global); r != Continue {
		t.Fatalf("interval timer at the MAX watermark: %v, want CONTINUE", r)
	}
	if _, ok := ctx.Slot(slotFireTime); ok || ctx.et[4000] {
		t.Fatalf("at MAX the interval continues: slots %v, timers %v", ctx.slots, ctx.eventTimers())
	}
	if r := tr.OnEventTime(ctx, etime.MaxTime, window.Global); r != Fire {
		t.Fatalf("MAX timer: %v, want FIRE", r)
	}
	// A window that is not global keeps firing its intervals at MAX.
	ctx = newCtx()
	tr.OnElement(ctx, 1500, w)
	ctx.wm = etime.MaxTime
	if r := tr.OnEventTime(ctx, 2000, w); r != Fire || !ctx.et[3000] {
		t.Fatalf("non-global interval at MAX: %v, timers %v", r, ctx.eventTimers())
	}
}

func TestContinuousMerge(t *testing.T) {
	tr := mustT(Continuous(1000))
	for _, c := range []struct {
		merged []int64
		slot   int64
		set    bool
	}{
		{nil, 0, false},
		{[]int64{3000}, 3000, true},
		{[]int64{4000, 2000, 3000}, 2000, true},
	} {
		ctx := newCtx()
		ctx.merged = map[int][]int64{slotFireTime: c.merged}
		tr.OnMerge(ctx, w)
		v, ok := ctx.Slot(slotFireTime)
		var timers []etime.Time
		if c.set {
			timers = []etime.Time{etime.Time(c.slot)}
		}
		if ok != c.set || v != c.slot || !equalTimes(ctx.eventTimers(), timers) {
			t.Errorf("merge of %v: slot %d (%v), timers %v; want %d (%v), %v", c.merged, v, ok, ctx.eventTimers(), c.slot, c.set, timers)
		}
	}
}

// TestOnce: Final fires once at the window's cleanup time, EndOfStream at
// MAX; each registers only that timer.
func TestOnce(t *testing.T) {
	for _, c := range []struct {
		tr      Trigger
		cleanup etime.Time
		at      etime.Time
	}{
		{Final(), 5999, 5999},
		{Final(), etime.MaxTime, etime.MaxTime},
		{EndOfStream(), 5999, etime.MaxTime},
	} {
		ctx := newCtx()
		ctx.cleanup = c.cleanup
		ctx.wm = 7000 // even late, an element does not fire
		if r := c.tr.OnElement(ctx, 10, w); r != Continue || !equalTimes(ctx.eventTimers(), []etime.Time{c.at}) {
			t.Errorf("%v: OnElement %v, timers %v; want CONTINUE, [%v]", c.tr, r, ctx.eventTimers(), c.at)
		}
		for _, tt := range []etime.Time{w.MaxTimestamp(), c.cleanup, c.at, etime.MaxTime} {
			want := Continue
			if tt == c.at {
				want = Fire
			}
			if r := c.tr.OnEventTime(ctx, tt, w); r != want {
				t.Errorf("%v: OnEventTime(%v) = %v, want %v", c.tr, tt, r, want)
			}
			if r := c.tr.OnProcessingTime(ctx, tt, w); r != Continue {
				t.Errorf("%v: OnProcessingTime(%v) = %v", c.tr, tt, r)
			}
		}
		c.tr.Clear(ctx, w)
		if len(ctx.et) != 0 {
			t.Errorf("%v: timers %v after Clear", c.tr, ctx.eventTimers())
		}
		c.tr.OnMerge(ctx, w)
		if !equalTimes(ctx.eventTimers(), []etime.Time{c.at}) {
			t.Errorf("%v: timers %v after a merge, want [%v]", c.tr, ctx.eventTimers(), c.at)
		}
		if !c.tr.CanMerge() || !NeverPurges(c.tr) || IsEventTime(c.tr) {
			t.Errorf("%v: CanMerge and NeverPurges should hold, IsEventTime not", c.tr)
		}
	}
}

func TestNever(t *testing.T) {
	tr := Never()
	ctx := newCtx()
	ctx.wm = etime.MaxTime
	for _, r := range []Result{
		tr.OnElement(ctx, 10, window.Global),
		tr.OnEventTime(ctx, etime.MaxTime, window.Global),
		tr.OnProcessingTime(ctx, etime.MaxTime, window.Global),
	} {
		if r != Continue {
			t.Errorf("never returned %v", r)
		}
	}
	tr.OnMerge(ctx, w)
	tr.Clear(ctx, w)
	if len(ctx.et)+len(ctx.pt)+len(ctx.slots) != 0 {
		t.Errorf("never keeps timers %v %v or slots %v", ctx.et, ctx.pt, ctx.slots)
	}
}

// fixed returns a fixed result from every callback and cannot merge.
type fixed struct{ r Result }

func (f fixed) OnElement(Context, etime.Time, window.Window) Result        { return f.r }
func (f fixed) OnEventTime(Context, etime.Time, window.Window) Result      { return f.r }
func (f fixed) OnProcessingTime(Context, etime.Time, window.Window) Result { return f.r }
func (fixed) CanMerge() bool                                               { return false }
func (fixed) OnMerge(MergeContext, window.Window)                          {}
func (fixed) Clear(Context, window.Window)                                 {}
func (f fixed) String() string                                             { return "fixed" }

// TestPurging: every fire becomes FIRE_AND_PURGE, whatever callback
// returned it; other results pass through unchanged, and so do CanMerge,
// OnMerge and Clear.
func TestPurging(t *testing.T) {
	for _, c := range []struct{ in, want Result }{
		{Continue, Continue},
		{Fire, FireAndPurge},
		{Purge, Purge},
		{FireAndPurge, FireAndPurge},
	} {
		p := Purging(fixed{c.in})
		ctx := newCtx()
		for name, r := range map[string]Result{
			"OnElement":        p.OnElement(ctx, 0, w),
			"OnEventTime":      p.OnEventTime(ctx, 0, w),
			"OnProcessingTime": p.OnProcessingTime(ctx, 0, w),
		} {
			if r != c.want {
				t.Errorf("purging(%v).%s = %v, want %v", c.in, name, r, c.want)
			}
		}
		if p.CanMerge() || NeverPurges(p) || IsEventTime(p) {
			t.Errorf("purging(fixed): CanMerge %v NeverPurges %v IsEventTime %v, want all false", p.CanMerge(), NeverPurges(p), IsEventTime(p))
		}
	}
	// Over count(2): C, FIRE_AND_PURGE, ...; the state is the inner
	// trigger's.
	p := Purging(mustT(Count(2)))
	ctx := newCtx()
	var got []Result
	for range 4 {
		got = append(got, p.OnElement(ctx, 0, w))
	}
	if !slices.Equal(got, []Result{Continue, FireAndPurge, Continue, FireAndPurge}) {
		t.Errorf("purging(count(2)): %v", got)
	}
	p.OnElement(ctx, 0, w)
	p.Clear(ctx, w)
	if len(ctx.slots) != 0 {
		t.Errorf("purging's Clear left slots %v", ctx.slots)
	}
	ctx.merged = map[int][]int64{slotCount: {1}}
	p.OnMerge(ctx, w)
	if r := p.OnElement(ctx, 0, w); r != FireAndPurge {
		t.Errorf("purging's OnMerge did not reach count: %v", r)
	}
	// Over event time: the on-time timer fires and purges.
	pe := Purging(EventTime())
	ctx = newCtx()
	if r := pe.OnElement(ctx, 0, w); r != Continue || !equalTimes(ctx.eventTimers(), []etime.Time{4999}) {
		t.Errorf("purging(event_time).OnElement: %v, timers %v", r, ctx.eventTimers())
	}
	if r := pe.OnEventTime(ctx, 4999, w); r != FireAndPurge {
		t.Errorf("purging(event_time).OnEventTime(4999) = %v", r)
	}
	if !pe.CanMerge() || IsEventTime(pe) || NeverPurges(pe) {
		t.Error("purging(event_time): CanMerge should hold, IsEventTime and NeverPurges not")
	}
}

func TestDefault(t *testing.T) {
	must := func(a window.Assigner, err error) window.Assigner {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	for _, c := range []struct {
		a    window.Assigner
		want string
	}{
		{must(window.Tumbling(1000, 0)), "event_time"},
		{must(window.Sliding(1000, 500, 0)), "event_time"},
		{must(window.Session(1000)), "event_time"},
		{must(window.TumblingProcessing(1000, 0)), "processing_time"},
		{must(window.SlidingProcessing(1000, 500, 0)), "processing_time"},
		{must(window.SessionProcessing(1000)), "processing_time"},
		{window.GlobalWindows(), "never"},
	} {
		if got := Default(c.a).String(); got != c.want {
			t.Errorf("Default(%v) = %s, want %s", c.a, got, c.want)
		}
	}
}

func TestNeverPurges(t *testing.T) {
	cnt := mustT(Count(2))
	cont := mustT(Continuous(10))
	for _, c := range []struct {
		tr         Trigger
		never, evt bool
	}{
		{EventTime(), true, true},
		{ProcessingTime(), true, false},
		{cnt, true, false},
		{cont, true, false},
		{Never(), true, false},
		{Final(), true, false},
		{EndOfStream(), true, false},
		{Purging(EventTime()), false, false},
		{Purging(cnt), false, false},
		{fixed{Continue}, false, false},
	} {
		if NeverPurges(c.tr) != c.never || IsEventTime(c.tr) != c.evt {
			t.Errorf("%v: NeverPurges %v IsEventTime %v, want %v %v", c.tr, NeverPurges(c.tr), IsEventTime(c.tr), c.never, c.evt)
		}
	}
}

// TestFiresOnce: only the event-time trigger and final fire each window
// once (without lateness); early, count, processing-time, purging and
// end-of-stream triggers do not qualify a window to feed another.
func TestFiresOnce(t *testing.T) {
	for _, c := range []struct {
		tr   Trigger
		once bool
	}{
		{EventTime(), true},
		{Final(), true},
		{EndOfStream(), false},
		{ProcessingTime(), false},
		{mustT(Count(2)), false},
		{mustT(Continuous(10)), false},
		{Never(), false},
		{Purging(EventTime()), false},
	} {
		if FiresOnce(c.tr) != c.once {
			t.Errorf("FiresOnce(%v) = %v, want %v", c.tr, !c.once, c.once)
		}
	}
}
