package winop

import (
	"strconv"
	"testing"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/benchutil"
	"github.com/weirstream/weir/state/memstate"
	"github.com/weirstream/weir/window"
)

func encU64(dst []byte, k uint64) []byte { return strconv.AppendUint(append(dst, '['), k, 10) }

type countOut struct{ results, late int }

func (c *countOut) Result(window.Result[uint64, int64])             { c.results++ }
func (c *countOut) Late(window.LateRecord[uint64, benchutil.Event]) { c.late++ }

const benchEvents = 1 << 20

// benchOperator feeds the operator alone with the benchmark stream; one
// iteration is the whole stream, with a watermark every
// benchutil.WatermarkEvery events, as benchutil.HandWindows does.
func benchOperator(b *testing.B, a window.Assigner) {
	ev := benchutil.Events(benchEvents)
	b.ReportAllocs()
	for b.Loop() {
		op, err := New(Config[uint64, benchutil.Event, int64, int64]{
			Assigner: a, Contents: AggContents[benchutil.Event, int64, int64]{F: benchutil.Sum{}},
			Func:       func(ctx *FireContext[uint64, int64], acc *int64) { ctx.Emit(*acc) },
			KeyEncoder: encU64, Backend: memstate.New(),
		}, &countOut{})
		if err != nil {
			b.Fatal(err)
		}
		maxTs := etime.MinTime
		for i, e := range ev {
			if err := op.ProcessElement(e.Key, e, e.TS); err != nil {
				b.Fatal(err)
			}
			maxTs = max(maxTs, e.TS)
			if i%benchutil.WatermarkEvery == benchutil.WatermarkEvery-1 {
				op.AdvanceWatermark(maxTs - benchutil.Bound - 1)
			}
		}
		op.AdvanceWatermark(etime.MaxTime)
	}
	report(b, len(ev))
}

func report(b *testing.B, events int) {
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(events*b.N), "ns/event")
	b.ReportMetric(0, "ns/op")
}

func benchHand(b *testing.B, size, slide etime.Duration) {
	ev := benchutil.Events(benchEvents)
	b.ReportAllocs()
	for b.Loop() {
		benchutil.HandWindows(ev, size, slide)
	}
	report(b, len(ev))
}

func mustA(a window.Assigner, err error) window.Assigner {
	if err != nil {
		panic(err)
	}
	return a
}

// BenchmarkOperator compares the window operator alone with the hand loop
// in one run: tumbling 10 s, sliding 10 s / 2.5 s (size/slide = 4), and
// sessions (gap 500 ms) over 10,000 keys. Allocations are per pass over
// 1,048,576 events, including the operator's cold start.
func BenchmarkOperator(b *testing.B) {
	b.Run("tumbling/weir", func(b *testing.B) { benchOperator(b, mustA(window.Tumbling(10_000, 0))) })
	b.Run("tumbling/hand", func(b *testing.B) { benchHand(b, 10_000, 10_000) })
	b.Run("sliding4/weir", func(b *testing.B) { benchOperator(b, mustA(window.Sliding(10_000, 2_500, 0))) })
	b.Run("sliding4/hand", func(b *testing.B) { benchHand(b, 10_000, 2_500) })
	b.Run("session/weir", func(b *testing.B) { benchOperator(b, mustA(window.Session(500))) })
	b.Run("session/hand", func(b *testing.B) {
		ev := benchutil.Events(benchEvents)
		for b.Loop() {
			benchutil.HandSessions(ev, 500)
		}
		report(b, len(ev))
	})
}
