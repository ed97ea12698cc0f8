package watermark

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/etime"
)

func newFake() *clock.Fake { return clock.NewFake(time.UnixMilli(1_700_000_000_000).UTC()) }

// H1, trap L8.
func TestBoundedOutOfOrderness(t *testing.T) {
	cases := []struct {
		name  string
		bound etime.Duration
		steps []step
	}{
		{"first watermark is MIN", 10, []step{
			{"periodic", "wm -inf"},
		}},
		{"d=10 after 1337 gives 1326", 10, []step{
			{"event 1337", ""},
			{"periodic", "wm 1326"},
		}},
		{"no per-event emission", 10, []step{
			{"event 1", ""},
			{"event 2000", ""},
			{"event 3000", ""},
			{"periodic", "wm 2989"},
		}},
		{"keeps the maximum across out-of-order events", 10, []step{
			{"event 1337", ""},
			{"event 1000", ""},
			{"periodic", "wm 1326"},
			{"event 1200", ""},
			{"periodic", "wm 1326"},
			{"event 1338", ""},
			{"periodic", "wm 1327"},
		}},
		{"every periodic call emits, even unchanged", 0, []step{
			{"periodic", "wm -inf"},
			{"periodic", "wm -inf"},
			{"event 5", ""},
			{"periodic", "wm 4"},
			{"periodic", "wm 4"},
		}},
		{"an element exactly d behind the max is still on time", 10, []step{
			{"event 100", ""},
			{"periodic", "wm 89"}, // 90 = 100-10 is not yet covered
		}},
		{"negative timestamps", 10, []step{
			{"event -5", ""},
			{"periodic", "wm -16"},
		}},
		{"huge bound does not overflow", etime.Duration(math.MaxInt64), []step{
			{"periodic", "wm -inf"},
			{"event 1337", ""},
			{"periodic", "wm -9223372036854774471"}, // 1337 - MAX - 1
		}},
		{"MAX timestamp with bound 0", 0, []step{
			{"event +inf", ""},
			{"periodic", "wm 9223372036854775806"},
		}},
		{"MIN timestamp changes nothing", 10, []step{
			{"event -inf", ""},
			{"periodic", "wm -inf"},
		}},
		{"timestamps near MIN", 10, []step{
			{"event -9223372036854775800", ""},
			{"periodic", "wm -inf"}, // -...800 - 11 saturates
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := &recorder{}
			runGenerator(t, BoundedOutOfOrderness[string](c.bound), newFake(), rec, rec, c.steps)
		})
	}
}

func TestBoundedOutOfOrdernessRejectsNegativeBound(t *testing.T) {
	mustPanic(t, "bound >= 0", func() { BoundedOutOfOrderness[int](-1) })
}

func TestMonotonous(t *testing.T) {
	rec := &recorder{}
	runGenerator(t, Monotonous[string](), newFake(), rec, rec, []step{
		{"periodic", "wm -inf"},
		{"event 1000", ""},
		{"periodic", "wm 999"},
		{"event 999", ""},
		{"periodic", "wm 999"},
	})
}

// TestStrictlyAscending: Flink SQL's WATERMARK FOR t AS t emits the
// largest timestamp itself; ForBound picks it for the bound -1.
func TestStrictlyAscending(t *testing.T) {
	for _, g := range []Generator[string]{StrictlyAscending[string](), ForBound[string](-1)} {
		rec := &recorder{}
		runGenerator(t, g, newFake(), rec, rec, []step{
			{"periodic", "wm -inf"},
			{"event 1000", ""},
			{"periodic", "wm 1000"},
			{"event 999", ""},
			{"periodic", "wm 1000"},
		})
	}
	rec := &recorder{}
	runGenerator(t, ForBound[string](5), newFake(), rec, rec, []step{{"event 1000", ""}, {"periodic", "wm 994"}})
}

func TestPunctuated(t *testing.T) {
	extract := func(v string, ts etime.Time) (etime.Time, bool) {
		switch {
		case v == "mark":
			return ts, true
		case strings.HasPrefix(v, "mark-1"):
			return ts - 1, true
		}
		return 0, false
	}
	rec := &recorder{}
	runGenerator(t, Punctuated(extract), newFake(), rec, rec, []step{
		{"periodic", ""},
		{"event 100", ""},
		{"event 150 mark", "wm 150"}, // immediately, from OnEvent
		{"periodic", ""},
		{"event 120 mark", "wm 120"}, // passed on as is; SourceOutput filters
		{"event 300 mark-1", "wm 299"},
	})
	mustPanic(t, "extract", func() { Punctuated[int](nil) })
}

// H3, with the "strictly more than timeout" boundary.
func TestWithIdleness(t *testing.T) {
	cases := []struct {
		name  string
		steps []step
	}{
		{"idle only strictly after timeout from the first quiet periodic call", []step{
			{"event 1000", ""},
			{"periodic", "wm 989"}, // sees the event: no timer
			{"advance 200ms", ""},
			{"periodic", "wm 989"}, // first quiet call: timer starts here
			{"advance 1s", ""},
			{"periodic", "wm 989"}, // exactly timeout: not yet
			{"advance 1ms", ""},
			{"periodic", "idle"}, // strictly more: idle, watermark suppressed
			{"advance 5s", ""},
			{"periodic", ""}, // idle is reported once
			{"periodic", ""},
		}},
		{"idle from the start without any event", []step{
			{"periodic", "wm -inf"},
			{"advance 1001ms", ""},
			{"periodic", "idle"},
		}},
		{"the clock is read on periodic calls only", []step{
			{"event 1000", ""},
			{"advance 10s", ""}, // long gap before the first periodic call
			{"periodic", "wm 989"},
			{"advance 10s", ""},
			{"periodic", "wm 989"}, // timer starts now, not at the event
			{"advance 1001ms", ""},
			{"periodic", "idle"},
		}},
		{"an event between periodic calls resets the timer", []step{
			{"periodic", "wm -inf"}, // timer starts
			{"advance 900ms", ""},
			{"event 2000", ""},
			{"advance 900ms", ""},
			{"periodic", "wm 1989"}, // saw an event: timer reset
			{"advance 900ms", ""},
			{"periodic", "wm 1989"}, // timer starts again
			{"advance 900ms", ""},
			{"periodic", "wm 1989"},
			{"advance 101ms", ""},
			{"periodic", "idle"},
		}},
		{"a new event ends idleness, inner keeps its maximum", []step{
			{"event 5000", ""},
			{"periodic", "wm 4989"},
			{"periodic", "wm 4989"},
			{"advance 2s", ""},
			{"periodic", "idle"},
			{"event 3000", ""}, // older than the maximum
			{"periodic", "wm 4989"},
			{"advance 2s", ""},
			{"periodic", "wm 4989"},
			{"advance 2s", ""},
			{"periodic", "idle"}, // and idle again, reported again
		}},
		{"idleness never calls MarkActive itself", []step{
			{"periodic", "wm -inf"},
			{"advance 2s", ""},
			{"periodic", "idle"},
			{"event 10", ""},
			{"periodic", "wm -1"},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clk := newFake()
			rec := &recorder{}
			g := WithIdleness(BoundedOutOfOrderness[string](10), time.Second, clk)
			runGenerator(t, g, clk, rec, rec, c.steps)
		})
	}
}

func TestWithIdlenessDisabled(t *testing.T) {
	inner := Monotonous[string]()
	for _, d := range []time.Duration{0, -time.Second} {
		if got := WithIdleness(inner, d, newFake()); got != inner {
			t.Errorf("WithIdleness(g, %v) = %T, want g itself", d, got)
		}
	}
	mustPanic(t, "clock", func() { WithIdleness(inner, time.Second, nil) })
}

// H2, H4: the source output between generator and downstream.
func TestSourceOutput(t *testing.T) {
	cases := []struct {
		name  string
		steps []func(*SourceOutput)
		want  []string // output after each step
	}{
		{"forwards strictly greater only",
			[]func(*SourceOutput){
				func(s *SourceOutput) { s.EmitWatermark(etime.MinTime) },
				func(s *SourceOutput) { s.EmitWatermark(5) },
				func(s *SourceOutput) { s.EmitWatermark(5) },
				func(s *SourceOutput) { s.EmitWatermark(3) },
				func(s *SourceOutput) { s.EmitWatermark(6) },
			},
			[]string{"", "wm 5", "", "", "wm 6"}},
		{"idle once, active only with a greater watermark",
			[]func(*SourceOutput){
				func(s *SourceOutput) { s.EmitWatermark(10) },
				func(s *SourceOutput) { s.MarkIdle() },
				func(s *SourceOutput) { s.MarkIdle() },
				func(s *SourceOutput) { s.EmitWatermark(10) },
				func(s *SourceOutput) { s.EmitWatermark(7) },
				func(s *SourceOutput) { s.EmitWatermark(11) },
				func(s *SourceOutput) { s.EmitWatermark(12) },
			},
			[]string{"wm 10", "idle", "", "", "", "active, wm 11", "wm 12"}},
		{"explicit MarkActive",
			[]func(*SourceOutput){
				func(s *SourceOutput) { s.MarkActive() },
				func(s *SourceOutput) { s.MarkIdle() },
				func(s *SourceOutput) { s.MarkActive() },
				func(s *SourceOutput) { s.MarkActive() },
				func(s *SourceOutput) { s.EmitWatermark(1) },
			},
			[]string{"", "idle", "active", "", "wm 1"}},
		{"end of input reactivates an idle source (J3)",
			[]func(*SourceOutput){
				func(s *SourceOutput) { s.MarkIdle() },
				func(s *SourceOutput) { s.EmitWatermark(etime.MaxTime) },
				func(s *SourceOutput) { s.EmitWatermark(etime.MaxTime) },
			},
			[]string{"idle", "active, wm +inf", ""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := &recorder{}
			s := NewSourceOutput(rec)
			if s.Watermark() != etime.MinTime || s.Idle() {
				t.Fatalf("new SourceOutput: watermark %v idle %v, want -inf false", s.Watermark(), s.Idle())
			}
			for i, f := range c.steps {
				f(s)
				if got := rec.take(); got != c.want[i] {
					t.Errorf("step %d: got output %q, want %q", i, got, c.want[i])
				}
			}
		})
	}
	mustPanic(t, "downstream", func() { NewSourceOutput(nil) })
}

func TestSourceOutputAccessors(t *testing.T) {
	s := NewSourceOutput(&recorder{})
	s.EmitWatermark(42)
	s.MarkIdle()
	if s.Watermark() != 42 || !s.Idle() {
		t.Errorf("got watermark %v idle %v, want 42 true", s.Watermark(), s.Idle())
	}
	s.EmitWatermark(43)
	if s.Watermark() != 43 || s.Idle() {
		t.Errorf("got watermark %v idle %v, want 43 false", s.Watermark(), s.Idle())
	}
}

// H3 and H4 together: records do not reactivate, a greater watermark does.
func TestIdlenessThroughSourceOutput(t *testing.T) {
	clk := newFake()
	rec := &recorder{}
	g := WithIdleness(BoundedOutOfOrderness[string](10), time.Second, clk)
	runGenerator(t, g, clk, NewSourceOutput(rec), rec, []step{
		{"periodic", ""}, // MIN is never forwarded
		{"event 1000", ""},
		{"periodic", "wm 989"},
		{"periodic", ""}, // not greater
		{"advance 1001ms", ""},
		{"periodic", "idle"},
		{"event 500", ""}, // a record behind the maximum
		{"periodic", ""},  // watermark 989 again: not greater, still idle
		{"event 1001", ""},
		{"periodic", "active, wm 990"},
	})
}

// R3: the heartbeat for sparse streams.
func TestWithHeartbeat(t *testing.T) {
	cases := []struct {
		name  string
		inner func(clk clock.Clock) Generator[string]
		steps []step
	}{
		{"no emission before the first event", func(clock.Clock) Generator[string] { return BoundedOutOfOrderness[string](10) }, []step{
			{"periodic", ""},
			{"advance 1h", ""},
			{"periodic", ""},
		}},
		{"advances with processing time while quiet", func(clock.Clock) Generator[string] { return BoundedOutOfOrderness[string](10) }, []step{
			{"event 1000", ""},
			{"periodic", "wm 989"}, // the event is observed now
			{"advance 500ms", ""},
			{"periodic", ""}, // quiet for less than every; inner's 989 is not new
			{"advance 500ms", ""},
			{"periodic", "wm 1989"}, // quiet for exactly every: 989 + 1000
			{"advance 200ms", ""},
			{"periodic", "wm 2189"},
			{"periodic", ""}, // no time passed: nothing new
		}},
		{"events reset it and it never goes back", func(clock.Clock) Generator[string] { return BoundedOutOfOrderness[string](10) }, []step{
			{"event 1000", ""},
			{"periodic", "wm 989"},
			{"advance 2s", ""},
			{"periodic", "wm 2989"},
			{"event 1500", ""}, // event time did not keep pace
			{"periodic", ""},   // inner's 1489 is behind: not forwarded
			{"advance 999ms", ""},
			{"periodic", ""}, // not quiet long enough
			{"advance 1ms", ""},
			{"periodic", ""}, // 1489 + 1000 = 2489 is still behind 2989
			{"advance 1s", ""},
			{"periodic", "wm 3489"}, // 1489 + 2000
			{"event 9000", ""},
			{"periodic", "wm 8989"}, // inner overtakes: forwarded
		}},
		{"punctuated inner without a watermark yet", func(clock.Clock) Generator[string] {
			return Punctuated(func(v string, ts etime.Time) (etime.Time, bool) { return ts, v == "mark" })
		}, []step{
			{"event 100", ""},
			{"periodic", ""},
			{"advance 5s", ""},
			{"periodic", ""}, // inner watermark is still MIN: no heartbeat
			{"event 200 mark", "wm 200"},
			{"periodic", ""},
			{"advance 1s", ""},
			{"periodic", "wm 1200"},
		}},
		{"silent while the inner generator is idle", func(clk clock.Clock) Generator[string] {
			return WithIdleness(BoundedOutOfOrderness[string](10), 3*time.Second, clk)
		}, []step{
			{"event 1000", ""},
			{"periodic", "wm 989"},
			{"advance 2s", ""},
			{"periodic", "wm 2989"}, // idleness timer starts here
			{"advance 2s", ""},
			{"periodic", "wm 4989"},
			{"advance 2s", ""},
			{"periodic", "idle"}, // 4s > 3s since the timer started
			{"advance 2s", ""},
			{"periodic", ""}, // no heartbeat while idle
			{"event 9500", ""},
			{"periodic", "wm 9489"},
			{"advance 1s", ""},
			{"periodic", "wm 10489"},
		}},
		{"capped below MAX", func(clock.Clock) Generator[string] { return Monotonous[string]() }, []step{
			{"event 9223372036854775000", ""},
			{"periodic", "wm 9223372036854774999"},
			{"advance 1h", ""},
			{"periodic", "wm 9223372036854775806"},
			{"advance 1h", ""},
			{"periodic", ""},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clk := newFake()
			rec := &recorder{}
			g := WithHeartbeat(c.inner(clk), time.Second, clk)
			runGenerator(t, g, clk, rec, rec, c.steps)
		})
	}
}

func TestWithHeartbeatDisabled(t *testing.T) {
	inner := Monotonous[string]()
	for _, d := range []time.Duration{0, -time.Second} {
		if got := WithHeartbeat(inner, d, newFake()); got != inner {
			t.Errorf("WithHeartbeat(g, %v) = %T, want g itself", d, got)
		}
	}
	mustPanic(t, "clock", func() { WithHeartbeat(inner, time.Second, nil) })
}

func TestWithHeartbeatPassesStatus(t *testing.T) {
	rec := &recorder{}
	g := WithHeartbeat[string](statusGen{}, time.Second, newFake())
	g.OnEvent("", 1, rec)
	g.OnPeriodicEmit(rec)
	if got, want := rec.take(), "active, idle"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// statusGen marks active on events and idle on periodic calls.
type statusGen struct{}

func (statusGen) OnEvent(_ string, _ etime.Time, out Output) { out.MarkActive() }
func (statusGen) OnPeriodicEmit(out Output)                  { out.MarkIdle() }
