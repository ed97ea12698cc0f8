package winop

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/state/memstate"
	"github.com/weirstream/weir/window"
)

// The benchmark stream: 10,000 keys, ten events per millisecond of event
// time (each key about once a second), up to 200 ms of disorder; the
// watermark follows every 1,000 events as maxTs - 500 - 1.
const (
	benchKeys  = 10_000
	benchWmGap = 1000
	benchBound = 500
)

type benchEvent struct {
	key uint64
	ts  etime.Time
	v   int64
}

func benchEvents(n int) []benchEvent {
	r := rand.New(rand.NewPCG(1, 2))
	ev := make([]benchEvent, n)
	for i := range ev {
		ev[i] = benchEvent{key: r.Uint64N(benchKeys), ts: etime.Time(i/10 - r.IntN(200)), v: 1}
	}
	return ev
}

type sumAgg struct{}

func (sumAgg) CreateAccumulator() int64   { return 0 }
func (sumAgg) Add(a int64, v int64) int64 { return a + v }
func (sumAgg) Merge(a, b int64) int64     { return a + b }
func (sumAgg) Result(a int64) int64       { return a }
func encU64(dst []byte, k uint64) []byte  { return strconv.AppendUint(append(dst, '['), k, 10) }
func mustA(a window.Assigner, err error) window.Assigner {
	if err != nil {
		panic(err)
	}
	return a
}

type countOut struct{ results, late int }

func (c *countOut) Result(window.Result[uint64, int64])   { c.results++ }
func (c *countOut) Late(window.LateRecord[uint64, int64]) { c.late++ }

func benchOperator(b *testing.B, a window.Assigner) {
	ev := benchEvents(1 << 20)
	out := &countOut{}
	var op *Operator[uint64, int64, int64, int64]
	newOp := func() {
		var err error
		op, err = New(Config[uint64, int64, int64, int64]{
			Assigner: a, Contents: AggContents[int64, int64, int64]{F: sumAgg{}},
			Func:       func(ctx *FireContext[uint64, int64], acc *int64) { ctx.Emit(*acc) },
			KeyEncoder: encU64, Backend: memstate.New(),
		}, out)
		if err != nil {
			b.Fatal(err)
		}
	}
	newOp()
	b.ReportAllocs()
	b.ResetTimer()
	maxTs := etime.MinTime
	base := etime.Time(0)
	for i := 0; i < b.N; i++ {
		j := i & (len(ev) - 1)
		if j == 0 && i > 0 {
			base += etime.Time(len(ev) / 10)
		}
		e := ev[j]
		ts := e.ts + base
		_ = op.ProcessElement(e.key, e.v, ts)
		maxTs = max(maxTs, ts)
		if i%benchWmGap == benchWmGap-1 {
			op.AdvanceWatermark(maxTs - benchBound - 1)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// handLoop is the hand-written limit: a map of window start to a map of
// key to sum, windows fired in start order when the watermark passes them.
func benchHand(b *testing.B, size, slide etime.Duration) {
	ev := benchEvents(1 << 20)
	wins := map[etime.Time]map[uint64]int64{}
	var starts []etime.Time
	var results int
	b.ReportAllocs()
	b.ResetTimer()
	maxTs := etime.MinTime
	base := etime.Time(0)
	for i := 0; i < b.N; i++ {
		j := i & (len(ev) - 1)
		if j == 0 && i > 0 {
			base += etime.Time(len(ev) / 10)
		}
		e := ev[j]
		ts := e.ts + base
		last := window.Start(ts, 0, slide)
		for s := last; s > ts-etime.Time(size); s -= etime.Time(slide) {
			m := wins[s]
			if m == nil {
				m = make(map[uint64]int64)
				wins[s] = m
				starts = append(starts, s)
			}
			m[e.key] += e.v
		}
		maxTs = max(maxTs, ts)
		if i%benchWmGap == benchWmGap-1 {
			wm := maxTs - benchBound - 1
			slices.Sort(starts)
			k := 0
			for _, s := range starts {
				if s+etime.Time(size)-1 > wm {
					break
				}
				results += len(wins[s])
				delete(wins, s)
				k++
			}
			starts = starts[k:]
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	_ = results
}

func BenchmarkOperator(b *testing.B) {
	b.Run("tumbling/weir", func(b *testing.B) { benchOperator(b, mustA(window.Tumbling(10_000, 0))) })
	b.Run("tumbling/hand", func(b *testing.B) { benchHand(b, 10_000, 10_000) })
	b.Run("sliding4/weir", func(b *testing.B) { benchOperator(b, mustA(window.Sliding(10_000, 2_500, 0))) })
	b.Run("sliding4/hand", func(b *testing.B) { benchHand(b, 10_000, 2_500) })
	b.Run("session/weir", func(b *testing.B) { benchOperator(b, mustA(window.Session(500))) })
}

var _ = state.DefaultMaxParallelism
