package winop

import (
	"testing"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/state/memstate"
	"github.com/weirstream/weir/window"
)

// TestSampleClock checks that after SampleClock a processing-time window
// operator assigns records by the sampled time without reading the clock
// per record, and that time still advances with the next sample.
func TestSampleClock(t *testing.T) {
	now, reads := etime.Time(1_000), 0
	op, err := New(Config[uint64, snapEvent, int64, int64]{
		Assigner: mustA(window.TumblingProcessing(10, 0)), Contents: AggContents[snapEvent, int64, int64]{F: snapSum{}},
		Func: func(ctx *FireContext[uint64, int64], acc *int64) { ctx.Emit(*acc) }, KeyEncoder: encU64, Backend: memstate.New(),
		KeyCodec: state.CodecFor[uint64](), AccCodec: state.CodecFor[int64](), KeyGroup: kgOf,
		Now: func() etime.Time { reads++; return now },
	}, &lines{})
	if err != nil {
		t.Fatal(err)
	}
	// Without sampling, every record reads the clock.
	if err := op.ProcessElement(1, snapEvent{1, 0}, 0); err != nil {
		t.Fatal(err)
	}
	if reads == 0 {
		t.Fatal("an unsampled record did not read the clock")
	}
	op.SampleClock()
	reads = 0
	now = 1_005 // the clock moves, the batch's records keep the sample
	for range 100 {
		if err := op.ProcessElement(1, snapEvent{1, 0}, 0); err != nil {
			t.Fatal(err)
		}
	}
	if reads != 0 {
		t.Fatalf("records of a sampled batch read the clock %d times", reads)
	}
	now = 1_012
	op.SampleClock()
	if err := op.ProcessElement(2, snapEvent{2, 0}, 0); err != nil {
		t.Fatal(err)
	}
	// Key 1's records went to [1000, 1010) (sampled at 1000), key 2's to
	// [1010, 1020).
	var wins []window.Window
	op.entries.Range(func(k uint64, w window.Window, _ *entry[int64]) bool {
		wins = append(wins, w)
		return true
	})
	if len(wins) != 2 || !(wins[0].Start == 1000 || wins[1].Start == 1000) || !(wins[0].Start == 1010 || wins[1].Start == 1010) {
		t.Fatalf("windows %v, want [1000,1010) for the sampled batch and [1010,1020) for the next", wins)
	}
}

// TestFiringDelaySkipsTheStart: the windows the first watermark fires
// ended before the operator had a watermark (records read at the start
// of a job, or of a replay), so their firing delay is not observed;
// later on-time firings are, as processing time minus window end.
func TestFiringDelaySkipsTheStart(t *testing.T) {
	now := etime.Time(600_000) // the clock: 10 minutes
	op, err := New(Config[uint64, snapEvent, int64, int64]{
		Assigner: mustA(window.Tumbling(60_000, 0)), Contents: AggContents[snapEvent, int64, int64]{F: snapSum{}},
		Func: func(ctx *FireContext[uint64, int64], acc *int64) { ctx.Emit(*acc) }, KeyEncoder: encU64, Backend: memstate.New(),
		KeyCodec: state.CodecFor[uint64](), AccCodec: state.CodecFor[int64](), KeyGroup: kgOf,
		Now: func() etime.Time { return now },
	}, &lines{})
	if err != nil {
		t.Fatal(err)
	}
	// Records of the first minutes, read before any watermark.
	for ts := etime.Time(0); ts < 540_000; ts += 30_000 {
		if err := op.ProcessElement(1, snapEvent{1, 0}, ts); err != nil {
			t.Fatal(err)
		}
	}
	op.AdvanceWatermark(590_000)
	if fired := op.Counters().FiredOnTime; fired != 9 {
		t.Fatalf("the first watermark fired %d windows, want 9", fired)
	}
	if n := op.h.FiringDelay.Count(); n != 0 {
		t.Fatalf("firing delay observed %d times for windows that ended before the first watermark", n)
	}
	// A window that ends after the first watermark fires 5 s after its end.
	if err := op.ProcessElement(1, snapEvent{1, 0}, 595_000); err != nil {
		t.Fatal(err)
	}
	now = 605_000
	op.AdvanceWatermark(600_000)
	h := op.Hists().FiringDelay
	if n := h.Count(); n != 1 || h.Sum != 5 {
		t.Fatalf("firing delay: %d observations summing to %vs, want 1 of 5s", n, h.Sum)
	}
}

// TestPastWindows: the windows whose end the watermark passed are those
// kept only for the allowed lateness.
func TestPastWindows(t *testing.T) {
	op, err := New(Config[uint64, snapEvent, int64, int64]{
		Assigner: mustA(window.Tumbling(10, 0)), Contents: AggContents[snapEvent, int64, int64]{F: snapSum{}}, Lateness: 100,
		Func: func(ctx *FireContext[uint64, int64], acc *int64) { ctx.Emit(*acc) }, KeyEncoder: encU64, Backend: memstate.New(),
		KeyCodec: state.CodecFor[uint64](), AccCodec: state.CodecFor[int64](), KeyGroup: kgOf,
		Now: func() etime.Time { return 0 },
	}, &lines{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range []etime.Time{1, 11, 21, 31} {
		if err := op.ProcessElement(1, snapEvent{1, 0}, ts); err != nil {
			t.Fatal(err)
		}
		if err := op.ProcessElement(2, snapEvent{2, 0}, ts); err != nil {
			t.Fatal(err)
		}
	}
	op.AdvanceWatermark(19) // [0,10) and [10,20) fired, kept for the lateness
	if n, ok := op.PastWindows(); !ok || n != 4 || op.StateSize().Windows != 8 {
		t.Fatalf("past %d (%v) of %d windows, want 4 of 8", n, ok, op.StateSize().Windows)
	}
}
