package weir_test

import (
	"context"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/benchutil"
	"github.com/weirstream/weir/window"
)

func runJob(b *testing.B, events []benchutil.Event, a window.Assigner, par int) {
	opts := weir.DefaultOptions()
	opts.Parallelism = par
	env, err := weir.NewEnv(opts)
	if err != nil {
		b.Fatal(err)
	}
	s := weir.AssignTimestamps(weir.FromSlice(env, events),
		weir.BoundedOutOfOrderness(benchutil.Bound*time.Millisecond, func(e benchutil.Event) etime.Time { return e.TS }))
	out := weir.Aggregate(weir.Window(weir.KeyBy(s, func(e benchutil.Event) uint64 { return e.Key }), a, weir.WindowOptions{}), weir.Sum(func(e benchutil.Event) int64 { return e.V }))
	weir.ForEach(out.Results, func(etime.Time, window.Result[uint64, int64]) {})
	if _, err := env.Execute(context.Background()); err != nil {
		b.Fatal(err)
	}
}

func mustAssigner(a window.Assigner, err error) window.Assigner {
	if err != nil {
		panic(err)
	}
	return a
}

func reportRate(b *testing.B, events int) {
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkJob runs a whole job (slice source -> timestamps and periodic
// watermarks -> keyBy -> window sum -> discard) over the same 2,000,000
// events per iteration, with one and two window subtasks, next to the
// hand-written loop; compare their events/s.
func BenchmarkJob(b *testing.B) {
	events := benchutil.Events(2_000_000)
	cases := []struct {
		name string
		a    window.Assigner
		hand func()
	}{
		{"tumbling", mustAssigner(window.Tumbling(10_000, 0)), func() { benchutil.HandWindows(events, 10_000, 10_000) }},
		{"sliding4", mustAssigner(window.Sliding(10_000, 2_500, 0)), func() { benchutil.HandWindows(events, 10_000, 2_500) }},
		{"session", mustAssigner(window.Session(500)), func() { benchutil.HandSessions(events, 500) }},
	}
	for _, c := range cases {
		for _, par := range []int{1, 2} {
			b.Run(c.name+"/weir-p"+string(rune('0'+par)), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					runJob(b, events, c.a, par)
				}
				reportRate(b, len(events))
			})
		}
		b.Run(c.name+"/hand", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.hand()
			}
			reportRate(b, len(events))
		})
	}
}
