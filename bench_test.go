package weir_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/window"
)

// The whole-job benchmark: a slice source of N events over 10,000 keys, ten
// events per millisecond of event time (each key about once a second), up
// to 200 ms of disorder; bounded out-of-orderness of 500 ms with periodic
// watermarks; keyBy; window aggregate (sum); discard. The hand-written
// limit does the same aggregation with maps in one loop.
type bev struct {
	Key uint64
	TS  etime.Time
	V   int64
}

func benchStream(n int) []bev {
	r := rand.New(rand.NewPCG(1, 2))
	ev := make([]bev, n)
	for i := range ev {
		ev[i] = bev{Key: r.Uint64N(10_000), TS: etime.Time(i/10 - r.IntN(200)), V: 1}
	}
	return ev
}

type bevSum struct{}

func (bevSum) CreateAccumulator() int64 { return 0 }
func (bevSum) Add(a int64, e bev) int64 { return a + e.V }
func (bevSum) Merge(a, b int64) int64   { return a + b }
func (bevSum) Result(a int64) int64     { return a }

func runJob(b *testing.B, events []bev, a window.Assigner, par int) {
	opts := weir.DefaultOptions()
	opts.Parallelism = par
	env, err := weir.NewEnv(opts)
	if err != nil {
		b.Fatal(err)
	}
	s := weir.AssignTimestamps(weir.FromSlice(env, events),
		weir.BoundedOutOfOrderness(500*time.Millisecond, func(e bev) etime.Time { return e.TS }))
	out := weir.Aggregate(weir.Window(weir.KeyBy(s, func(e bev) uint64 { return e.Key }), a, weir.WindowOptions{}), bevSum{})
	var n int64
	weir.ForEach(out.Results, func(etime.Time, window.Result[uint64, int64]) {})
	if _, err := env.Execute(context.Background()); err != nil {
		b.Fatal(err)
	}
	_ = n
}

func handJob(events []bev, size, slide etime.Duration, gap etime.Duration) int {
	results := 0
	if gap > 0 {
		type sess struct {
			start, end etime.Time
			sum        int64
		}
		open := map[uint64][]sess{}
		for _, e := range events {
			ss := open[e.Key]
			w := sess{e.TS, e.TS + etime.Time(gap), e.V}
			var keep []sess
			for _, s := range ss {
				if s.start <= w.end && s.end >= w.start {
					w.start, w.end, w.sum = min(w.start, s.start), max(w.end, s.end), w.sum+s.sum
				} else {
					keep = append(keep, s)
				}
			}
			open[e.Key] = append(keep, w)
		}
		for _, ss := range open {
			results += len(ss)
		}
		return results
	}
	wins := map[etime.Time]map[uint64]int64{}
	var starts []etime.Time
	maxTs := etime.MinTime
	for i, e := range events {
		last := window.Start(e.TS, 0, slide)
		for s := last; s > e.TS-etime.Time(size); s -= etime.Time(slide) {
			m := wins[s]
			if m == nil {
				m = make(map[uint64]int64)
				wins[s] = m
				starts = append(starts, s)
			}
			m[e.Key] += e.V
		}
		maxTs = max(maxTs, e.TS)
		if i%1000 == 999 {
			wm := maxTs - 501
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
	for _, m := range wins {
		results += len(m)
	}
	return results
}

func mustAssigner(a window.Assigner, err error) window.Assigner {
	if err != nil {
		panic(err)
	}
	return a
}

// BenchmarkJob runs each job over the same 2,000,000 events per iteration;
// compare events/s of weir-p1 (one window subtask), weir-p2 and hand.
func BenchmarkJob(b *testing.B) {
	events := benchStream(2_000_000)
	cases := []struct {
		name        string
		a           window.Assigner
		size, slide etime.Duration
		gap         etime.Duration
	}{
		{"tumbling", mustAssigner(window.Tumbling(10_000, 0)), 10_000, 10_000, 0},
		{"sliding4", mustAssigner(window.Sliding(10_000, 2_500, 0)), 10_000, 2_500, 0},
		{"session", mustAssigner(window.Session(500)), 0, 0, 500},
	}
	for _, c := range cases {
		for _, par := range []int{1, 2} {
			b.Run(c.name+"/weir-p"+string(rune('0'+par)), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					runJob(b, events, c.a, par)
				}
				b.ReportMetric(float64(len(events))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
				b.ReportMetric(0, "ns/op")
			})
		}
		b.Run(c.name+"/hand", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				handJob(events, c.size, c.slide, c.gap)
			}
			b.ReportMetric(float64(len(events))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}
