package watermark

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/weirstream/weir/etime"
)

// I1-I4 and J3.
func TestValve(t *testing.T) {
	cases := []struct {
		name  string
		n     int
		steps []step
	}{
		{"single channel increasing", 1, []step{
			{"wm 0 0", "wm 0"},
			{"wm 0 25", "wm 25"},
		}},
		{"decreasing and equal watermarks ignored (I2)", 1, []step{
			{"wm 0 25", "wm 25"},
			{"wm 0 18", ""},
			{"wm 0 25", ""},
			{"wm 0 42", "wm 42"},
		}},
		{"MIN is never output", 1, []step{
			{"wm 0 -inf", ""},
		}},
		{"nothing until every aligned channel sent (I1)", 3, []step{
			{"wm 0 0", ""},
			{"wm 1 0", ""},
			{"wm 2 0", "wm 0"},
		}},
		{"minimum over channels advances", 3, []step{
			{"wm 0 0", ""},
			{"wm 1 0", ""},
			{"wm 2 0", "wm 0"},
			{"wm 0 12", ""},
			{"wm 2 8", ""},
			{"wm 2 10", ""},
			{"wm 1 15", "wm 10"},
			{"wm 2 17", "wm 12"},
			{"wm 0 20", "wm 15"},
		}},
		{"decreasing watermarks on several channels", 3, []step{
			{"wm 0 25", ""},
			{"wm 1 10", ""},
			{"wm 2 17", "wm 10"},
			{"wm 0 12", ""},
			{"wm 1 8", ""},
			{"wm 2 15", ""},
		}},
		{"status toggling, repeated statuses are silent", 2, []step{
			{"active 0", ""},
			{"active 1", ""},
			{"idle 1", ""},
			{"idle 0", "status idle"},
			{"idle 0", ""},
			{"idle 1", ""},
			{"active 1", "status active"},
			{"active 0", ""},
		}},
		{"idle channel leaves the minimum, which advances (I3)", 3, []step{
			{"wm 0 15", ""},
			{"wm 1 10", ""},
			{"idle 2", "wm 10"},
			{"wm 1 18", "wm 15"},
			{"wm 0 20", "wm 18"},
		}},
		{"channels going idle one by one", 3, []step{
			{"wm 0 25", ""},
			{"wm 1 10", ""},
			{"wm 2 17", "wm 10"},
			{"idle 1", "wm 17"},
			{"idle 2", "wm 25"},
			{"idle 0", "status idle"}, // max 25 is not greater: only the status
		}},
		{"all idle flushes the max, then IDLE (I3)", 3, []step{
			{"wm 0 10", ""},
			{"wm 1 5", ""},
			{"wm 2 3", "wm 3"},
			{"idle 0", ""},
			{"idle 1", ""},
			{"idle 2", "wm 10, status idle"},
		}},
		{"all idle flushes the max even when the last channel did not hold the minimum", 3, []step{
			{"wm 0 20", ""},
			{"wm 1 5", ""},
			{"wm 2 7", "wm 5"},
			{"idle 0", ""},
			{"idle 1", "wm 7"},
			{"active 1", ""}, // 5 < 7: unaligned
			{"idle 2", ""},   // channel 1 is active but unaligned: no output
			{"wm 1 6", ""},
			{"idle 1", "wm 20, status idle"}, // older code flushed nothing here
		}},
		{"watermark on an idle channel ignored (I2)", 1, []step{
			{"wm 0 25", "wm 25"},
			{"idle 0", "status idle"},
			{"wm 0 50", ""},
			{"active 0", "status active"},
			{"wm 0 50", "wm 50"},
		}},
		{"watermark on an idle channel of an active valve ignored", 2, []step{
			{"wm 0 5", ""},
			{"idle 1", "wm 5"},
			{"wm 1 100", ""},
			{"active 1", ""}, // its watermark is still MIN: unaligned
			{"wm 0 6", "wm 6"},
		}},
		{"reactivated channel with an old watermark stays unaligned, then re-aligns (I4)", 3, []step{
			{"wm 0 10", ""},
			{"wm 1 7", ""},
			{"wm 2 3", "wm 3"},
			{"idle 2", "wm 7"},
			{"active 2", ""},     // 3 < 7: unaligned, does not pull back
			{"wm 2 5", ""},       // recorded, still unaligned
			{"wm 0 12", ""},      // min over aligned {12, 7}
			{"wm 1 12", "wm 12"}, // channel 2 at 5 does not hold back
			{"wm 2 12", ""},      // >= last output: aligned again
			{"wm 0 20", ""},
			{"wm 1 20", ""},      // now channel 2 holds back
			{"wm 2 15", "wm 15"}, // and releases as it advances
		}},
		{"re-alignment at a watermark above the last output", 3, []step{
			{"wm 0 10", ""},
			{"wm 1 7", ""},
			{"wm 2 3", "wm 3"},
			{"idle 2", "wm 7"},
			{"active 2", ""},
			{"wm 2 9", ""}, // aligned, min over {10, 7, 9} is 7
			{"wm 1 12", "wm 9"},
		}},
		{"reactivation with a watermark at the last output aligns at once", 2, []step{
			{"wm 0 10", ""},
			{"wm 1 20", "wm 10"},
			{"idle 1", ""},
			{"idle 0", "wm 20, status idle"},
			{"active 1", "status active"}, // 20 >= 20: aligned
			{"active 0", ""},              // 10 < 20: unaligned
			{"wm 1 30", "wm 30"},
		}},
		{"realignment by status re-derives the minimum at once (weir I4)", 3, []step{
			{"wm 0 10", ""},
			{"wm 1 7", ""},
			{"wm 2 5", "wm 5"},
			{"idle 0", ""},
			{"idle 2", "wm 7"},
			{"active 2", ""}, // 5 < 7: unaligned
			{"idle 1", ""},   // no aligned channel left, valve still active
			{"active 0", "wm 10"},
		}},
		{"no output while every active channel is unaligned", 3, []step{
			{"wm 0 10", ""},
			{"wm 1 7", ""},
			{"idle 2", "wm 7"},
			{"active 2", ""},
			{"idle 0", ""},
			{"idle 1", ""},
			{"wm 2 6", ""},
			{"wm 2 8", "wm 8"},
		}},
		{"unaligned active channel going idle", 2, []step{
			{"wm 0 7", ""},
			{"wm 1 10", "wm 7"},
			{"idle 0", "wm 10"},
			{"active 0", ""},
			{"wm 0 9", ""},
			{"idle 0", ""},
		}},
		{"end of input: MAX once every aligned channel sent it (J3)", 2, []step{
			{"wm 0 +inf", ""},
			{"wm 1 100", "wm 100"},
			{"wm 1 +inf", "wm +inf"},
		}},
		{"end of input with the other channel idle (J3)", 2, []step{
			{"wm 0 50", ""},
			{"idle 1", "wm 50"},
			{"wm 0 +inf", "wm +inf"},
		}},
		{"end of input after all idle: the channel reactivates, then MAX", 2, []step{
			{"wm 0 50", ""},
			{"wm 1 60", "wm 50"},
			{"idle 0", "wm 60"},
			{"idle 1", "status idle"},
			{"active 1", "status active"},
			{"wm 1 +inf", "wm +inf"}, // channel 0 is idle: not waited for
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runValve(t, NewValve(c.n), c.steps)
		})
	}
}

func TestValveChannels(t *testing.T) {
	v := NewValve(3)
	rec := &recorder{}
	want := []ChannelState{
		{Watermark: etime.MinTime, Aligned: true},
		{Watermark: etime.MinTime, Aligned: true},
		{Watermark: etime.MinTime, Aligned: true},
	}
	if got := v.Channels(); !reflect.DeepEqual(got, want) {
		t.Fatalf("new valve channels = %+v, want %+v", got, want)
	}
	if v.Watermark() != etime.MinTime || v.Idle() {
		t.Fatalf("new valve: watermark %v idle %v, want -inf false", v.Watermark(), v.Idle())
	}
	v.InputWatermark(0, 10, rec)
	v.InputWatermark(1, 7, rec)
	v.InputWatermark(2, 3, rec)
	v.InputStatus(2, true, rec)
	v.InputStatus(2, false, rec)
	v.InputWatermark(2, 5, rec)
	want = []ChannelState{
		{Watermark: 10, Aligned: true},
		{Watermark: 7, Aligned: true},
		{Watermark: 5, Aligned: false},
	}
	got := v.Channels()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("channels = %+v, want %+v", got, want)
	}
	got[0].Watermark = 99
	if v.Channels()[0].Watermark != 10 {
		t.Errorf("Channels returned the valve's own slice, want a copy")
	}
	v.InputStatus(0, true, rec)
	if c := v.Channels()[0]; !c.Idle || c.Aligned {
		t.Errorf("idle channel state = %+v, want idle and unaligned", c)
	}
	if v.Watermark() != 7 {
		t.Errorf("Watermark() = %v, want 7", v.Watermark())
	}
}

func TestValveBadArguments(t *testing.T) {
	mustPanic(t, "at least one channel", func() { NewValve(0) })
	mustPanic(t, "at least one channel", func() { RestoreValve(ValveState{}) })
	v := NewValve(2)
	rec := &recorder{}
	mustPanic(t, "channel 2 out of range [0,2)", func() { v.InputWatermark(2, 1, rec) })
	mustPanic(t, "channel -1 out of range [0,2)", func() { v.InputStatus(-1, true, rec) })
}

func TestValveSnapshotRestore(t *testing.T) {
	v := NewValve(3)
	rec := &recorder{}
	v.InputWatermark(0, 10, rec)
	v.InputWatermark(1, 7, rec)
	v.InputWatermark(2, 3, rec)
	v.InputStatus(2, true, rec)
	v.InputStatus(2, false, rec)
	s := v.Snapshot()
	want := ValveState{
		Channels: []ChannelState{
			{Watermark: 10, Aligned: true},
			{Watermark: 7, Aligned: true},
			{Watermark: 3},
		},
		Watermark: 7,
	}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("Snapshot() = %+v, want %+v", s, want)
	}
	r := RestoreValve(s)
	s.Channels[0].Watermark = 1000 // the restored valve must not share it
	steps := []step{
		{"wm 2 5", ""},
		{"wm 1 12", "wm 10"},
		{"wm 2 11", ""},
		{"wm 0 20", "wm 11"},
		{"idle 0", ""},
		{"idle 1", ""},
		{"idle 2", "wm 20, status idle"},
	}
	runValve(t, r, steps)
	if got := r.Snapshot(); !got.Idle {
		t.Errorf("restored valve snapshot %+v, want idle", got)
	}
}

func TestRestoreValveRepairs(t *testing.T) {
	r := RestoreValve(ValveState{
		Channels: []ChannelState{
			{Watermark: 5, Idle: true, Aligned: true},
			{Watermark: 8, Idle: true},
		},
		Watermark: 8,
		Idle:      false,
	})
	if !r.Idle() {
		t.Errorf("restored valve with all channels idle: Idle() = false, want true")
	}
	if r.Channels()[0].Aligned {
		t.Errorf("restored idle channel is aligned, want unaligned")
	}
	runValve(t, r, []step{
		{"wm 0 9", ""},
		{"active 0", "status active"},
		{"wm 0 9", "wm 9"},
	})
}

// TestValveProperties feeds random inputs and checks, after every input:
// the output never decreases; every output equals the minimum over aligned
// channels, except the flush when everything goes idle, which equals the
// maximum over all channels and is followed by IDLE; statuses alternate and
// match the channels; and a valve restored from a snapshot behaves the same.
func TestValveProperties(t *testing.T) {
	for seed := uint64(0); seed < 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0x5eed))
		n := 1 + rng.IntN(5)
		v := NewValve(n)
		var shadow *Valve // restored from a snapshot, fed the same inputs
		last := etime.MinTime
		idle := false
		var history []string
		for i := 0; i < 400; i++ {
			ch := rng.IntN(n)
			var op string
			var apply func(*Valve, ValveOutput)
			switch r := rng.IntN(10); {
			case r < 6:
				wm := randomWatermark(rng, v.Channels()[ch].Watermark)
				op = fmt.Sprintf("wm %d %v", ch, wm)
				apply = func(x *Valve, o ValveOutput) { x.InputWatermark(ch, wm, o) }
			case r < 8:
				op = fmt.Sprintf("idle %d", ch)
				apply = func(x *Valve, o ValveOutput) { x.InputStatus(ch, true, o) }
			default:
				op = fmt.Sprintf("active %d", ch)
				apply = func(x *Valve, o ValveOutput) { x.InputStatus(ch, false, o) }
			}
			history = append(history, op)
			fail := func(format string, args ...any) {
				t.Helper()
				t.Fatalf("seed %d, n %d, after %s: %s", seed, n, strings.Join(history, "; "), fmt.Sprintf(format, args...))
			}

			rec := &recorder{}
			apply(v, rec)
			out := rec.take()
			if shadow != nil {
				srec := &recorder{}
				apply(shadow, srec)
				if got := srec.take(); got != out {
					fail("restored valve output %q, original %q", got, out)
				}
			}

			chans := v.Channels()
			minAligned, anyAligned := etime.MaxTime, false
			maxAll, allIdle := etime.MinTime, true
			for _, c := range chans {
				if c.Idle && c.Aligned {
					fail("channel %+v is idle and aligned", c)
				}
				if c.Aligned {
					anyAligned = true
					minAligned = etime.Min(minAligned, c.Watermark)
				}
				maxAll = etime.Max(maxAll, c.Watermark)
				allIdle = allIdle && c.Idle
			}

			events := rec.log
			if out != "" {
				events = strings.Split(out, ", ")
			}
			for j, e := range events {
				switch {
				case e == "status idle":
					if idle || !allIdle {
						fail("unexpected %q (idle %v, all channels idle %v)", e, idle, allIdle)
					}
					idle = true
				case e == "status active":
					if !idle || allIdle {
						fail("unexpected %q (idle %v, all channels idle %v)", e, idle, allIdle)
					}
					idle = false
				default:
					wm := parseTime(t, strings.TrimPrefix(e, "wm "))
					if wm <= last {
						fail("output %v after %v: decreasing or repeated", wm, last)
					}
					last = wm
					flush := j+1 < len(events) && events[j+1] == "status idle"
					switch {
					case flush && wm != maxAll:
						fail("flush %v, want max over channels %v", wm, maxAll)
					case !flush && (!anyAligned || wm != minAligned):
						fail("output %v, want min over aligned channels %v (any aligned %v)", wm, minAligned, anyAligned)
					case idle:
						fail("watermark %v output while idle", wm)
					}
				}
			}

			if v.Watermark() != last {
				fail("Watermark() = %v, want last output %v", v.Watermark(), last)
			}
			if v.Idle() != idle || idle != allIdle {
				fail("Idle() = %v, statuses say %v, channels say %v", v.Idle(), idle, allIdle)
			}
			// The minimum over aligned channels is never below the output,
			// and equals it whenever some channel is aligned.
			if anyAligned && minAligned != last {
				fail("min over aligned channels %v, output %v", minAligned, last)
			}

			if rng.IntN(50) == 0 {
				shadow = RestoreValve(v.Snapshot())
			}
		}
	}
}

// randomWatermark picks a watermark around cur: often a little above, now
// and then equal, below, or an extreme.
func randomWatermark(rng *rand.Rand, cur etime.Time) etime.Time {
	base := cur
	if base == etime.MinTime {
		base = 0
	}
	switch r := rng.IntN(20); {
	case r == 0:
		return etime.MinTime
	case r == 1:
		return etime.MaxTime
	case r < 4:
		return cur
	case r < 7:
		return base.Add(-etime.Duration(rng.IntN(10)))
	default:
		return base.Add(etime.Duration(1 + rng.IntN(10)))
	}
}

// I5: two-input combination.
func TestCombined(t *testing.T) {
	cases := []struct {
		name  string
		n     int
		steps []step
	}{
		{"minimum over inputs, never decreasing", 2, []step{
			{"wm 0 10", ""},
			{"wm 1 20", "wm 10"},
			{"wm 0 15", "wm 15"},
			{"wm 0 12", ""}, // lower than the input's own: ignored
			{"wm 0 30", "wm 20"},
		}},
		{"idle input leaves the minimum", 2, []step{
			{"wm 0 10", ""},
			{"wm 1 20", "wm 10"},
			{"idle 0", "wm 20"},
			{"wm 1 30", "wm 30"},
		}},
		{"reactivated input with an older watermark holds back", 2, []step{
			{"wm 0 10", ""},
			{"wm 1 20", "wm 10"},
			{"idle 0", "wm 20"},
			{"wm 1 30", "wm 30"},
			{"active 0", ""},     // 10 < 30: does not pull back...
			{"wm 1 40", ""},      // ...but holds back (unlike the valve)
			{"wm 0 25", ""},      // still behind 30
			{"wm 0 35", "wm 35"}, // passes it
		}},
		{"all idle: the maximum is flushed, then the status (H6)", 3, []step{
			{"wm 0 10", ""},
			{"wm 1 20", ""},
			{"wm 2 30", "wm 10"},
			{"idle 1", ""},
			{"idle 2", ""},
			{"idle 0", "wm 30, status idle"},
			{"idle 0", ""},
		}},
		{"all idle: the flush does not depend on the order inputs went idle", 2, []step{
			{"wm 0 5", ""},
			{"idle 0", ""}, // input 1 has no watermark yet: the minimum is -inf
			{"wm 1 4", "wm 4"},
			{"idle 1", "wm 5, status idle"},
		}},
		{"all idle: inputs without a watermark add nothing", 3, []step{
			{"idle 1", ""},
			{"idle 2", ""},
			{"idle 0", "status idle"},
		}},
		{"all idle: nothing flushed below the last output", 2, []step{
			{"wm 0 10", ""},
			{"wm 1 20", "wm 10"},
			{"idle 0", "wm 20"},
			{"idle 1", "status idle"},
		}},
		{"reactivation after all idle: status first, then watermark", 2, []step{
			{"wm 0 10", ""},
			{"wm 1 20", "wm 10"},
			{"idle 1", ""},
			{"idle 0", "wm 20, status idle"},
			{"active 1", "status active"},
			{"active 0", ""},     // 10 holds back
			{"wm 0 25", ""},      // min(25, 20) = 20: nothing new
			{"wm 1 30", "wm 25"}, // now input 0 is the minimum
		}},
		{"a watermark reactivates an idle input", 2, []step{
			{"wm 0 10", ""},
			{"wm 1 20", "wm 10"},
			{"idle 0", "wm 20"},
			{"idle 1", "status idle"},
			{"wm 0 30", "status active, wm 30"},
			{"active 1", ""}, // 20 now holds back
			{"wm 0 40", ""},
		}},
		{"repeated statuses are silent", 2, []step{
			{"active 0", ""},
			{"idle 0", ""},
			{"idle 0", ""},
			{"idle 1", "status idle"},
			{"active 0", "status active"},
			{"active 0", ""},
		}},
		{"end of input needs every active input at MAX", 2, []step{
			{"wm 0 +inf", ""},
			{"wm 1 5", "wm 5"},
			{"wm 1 +inf", "wm +inf"},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runValve(t, NewCombined(c.n), c.steps)
		})
	}
}

func TestCombinedAccessorsAndBadArguments(t *testing.T) {
	c := NewCombined(2)
	rec := &recorder{}
	if c.Watermark() != etime.MinTime || c.Idle() {
		t.Fatalf("new Combined: watermark %v idle %v, want -inf false", c.Watermark(), c.Idle())
	}
	c.InputWatermark(0, 3, rec)
	c.InputWatermark(1, 4, rec)
	c.InputStatus(0, true, rec)
	c.InputStatus(1, true, rec)
	if c.Watermark() != 4 || !c.Idle() {
		t.Errorf("got watermark %v idle %v, want 4 true", c.Watermark(), c.Idle())
	}
	mustPanic(t, "at least one input", func() { NewCombined(0) })
	mustPanic(t, "input 2 out of range [0,2)", func() { c.InputWatermark(2, 1, rec) })
	mustPanic(t, "input -1 out of range [0,2)", func() { c.InputStatus(-1, false, rec) })
}
