package weir_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/window"
)

type ev struct {
	Key string
	TS  etime.Time
	V   int64
}

// randomStream is an out-of-order stream: mostly within 300 ms of the
// newest timestamp, some later, a few far too late.
func randomStream(r *rand.Rand, n int) []ev {
	out := make([]ev, n)
	now := etime.Time(r.IntN(5000) - 2500)
	for i := range out {
		now += etime.Time(r.IntN(40))
		ts := now - etime.Time(r.IntN(300))
		switch p := r.IntN(100); {
		case p < 5:
			ts = now - etime.Time(300+r.IntN(3000))
		case p < 7:
			ts = now - etime.Time(5000+r.IntN(20000))
		}
		out[i] = ev{Key: fmt.Sprintf("k%d", r.IntN(7)), TS: ts, V: int64(r.IntN(10))}
	}
	return out
}

type propJob struct {
	asg      window.Assigner
	lateness etime.Duration
	side     bool
}

func randomJob(r *rand.Rand) propJob {
	var a window.Assigner
	var err error
	switch r.IntN(3) {
	case 0:
		a, err = window.Tumbling(etime.Duration(200+r.IntN(2000)), 0)
	case 1:
		slide := etime.Duration(100 + r.IntN(500))
		a, err = window.Sliding(slide*etime.Duration(1+r.IntN(5)), slide, 0)
	default:
		a, err = window.Session(etime.Duration(50 + r.IntN(500)))
	}
	if err != nil {
		panic(err)
	}
	return propJob{asg: a, lateness: etime.Duration(r.IntN(3) * 700), side: r.IntN(2) == 0}
}

type propOut struct {
	results []string
	raw     []window.Result[string, int64]
	late    int
	lateSum int64 // sum of V over side-output records
	rep     weir.Report
	state   weir.StateInfo
}

func runProp(t *testing.T, j propJob, events []ev, det bool, par, batch int) propOut {
	t.Helper()
	opts := weir.DefaultOptions()
	opts.Deterministic = det
	opts.Parallelism = par
	opts.BatchSize = batch
	env, err := weir.NewEnv(opts)
	if err != nil {
		t.Fatal(err)
	}
	s := weir.AssignTimestamps(weir.FromSlice(env, events),
		weir.BoundedOutOfOrderness(300*time.Millisecond, func(e ev) etime.Time { return e.TS }).WithEveryRecord())
	o := weir.Aggregate(weir.Window(weir.KeyBy(s, func(e ev) string { return e.Key }), j.asg,
		weir.WindowOptions{AllowedLateness: j.lateness, LateOutput: j.side}), weir.Sum(func(e ev) int64 { return e.V }))
	res := weir.Collect(o.Results)
	late := weir.Collect(o.Late)
	rep, err := env.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out propOut
	out.raw = res.Items()
	for _, r := range out.raw {
		out.results = append(out.results, fmt.Sprintf("%s %v %v %d %v %d", r.Key, r.Window, r.Firing, r.Pane, r.Watermark, r.Value))
	}
	slices.Sort(out.results)
	out.late = len(late.Items())
	for _, l := range late.Items() {
		out.lateSum += l.Record.V
	}
	out.rep = rep
	out.state = env.State()
	return out
}

// TestProperties checks, on random out-of-order streams and jobs, that
// conservation holds (W4), that no accepted record is missing from the
// newest results (tumbling and session windows), that results do not depend on batch size or
// parallelism, that no on-time or late result comes before the watermark
// passes its window, and that no state is left after the final watermark.
func TestProperties(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 10
	}
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		j := randomJob(r)
		events := randomStream(r, 300+r.IntN(1500))
		name := fmt.Sprintf("seed%d/%v/L%d", seed, j.asg, j.lateness)
		t.Run(name, func(t *testing.T) {
			want := runProp(t, j, events, true, 1, 256)
			c := want.rep.Total()
			if got := want.rep.SourceRecords["slice"]; got != int64(len(events)) {
				t.Fatalf("source emitted %d of %d", got, len(events))
			}
			if c.RecordsIn != c.Accepted+c.LateSideOutput+c.LateDropped+c.NoTimestamp {
				t.Fatalf("conservation broken: %+v", c)
			}
			if c.RecordsIn+want.rep.DeadLetters != int64(len(events)) {
				t.Fatalf("records lost: in=%d dead=%d events=%d", c.RecordsIn, want.rep.DeadLetters, len(events))
			}
			if j.side && int64(want.late) != c.LateSideOutput {
				t.Fatalf("side output %d lines, counter %d", want.late, c.LateSideOutput)
			}
			if !j.side && (c.LateSideOutput != 0 || want.late != 0) {
				t.Fatalf("side output without a late output: %+v", c)
			}
			// Firings accumulate and every accepted record reaches a firing,
			// so for windows that hold each record once (tumbling, sessions)
			// the newest result of every live window adds up to exactly the
			// records that were not side-output. Retracted sessions drop out.
			if j.side && j.asg.Kind() != window.KindSliding {
				var sum, final int64
				for _, e := range events {
					sum += e.V
				}
				type wk struct {
					k string
					w window.Window
				}
				last := map[wk]int64{}
				for _, res := range want.raw {
					if res.Firing == window.Retract {
						delete(last, wk{res.Key, res.Window})
						continue
					}
					last[wk{res.Key, res.Window}] = res.Value
				}
				for _, v := range last {
					final += v
				}
				if final != sum-want.lateSum {
					t.Fatalf("newest results add up to %d, want %d (all %d minus %d side-output)", final, sum-want.lateSum, sum, want.lateSum)
				}
			}
			for _, res := range want.raw {
				if (res.Firing == window.OnTime || res.Firing == window.Late) && res.Watermark < res.Window.MaxTimestamp() {
					t.Fatalf("%v result before the watermark passed its window: %+v", res.Firing, res)
				}
			}
			if want.state.OpenWindows != 0 || want.state.Timers != 0 {
				t.Fatalf("state left after the final watermark: %+v", want.state)
			}
			for _, par := range []int{1, 2, 3} {
				batch := 1 + r.IntN(64)
				got := runProp(t, j, events, false, par, batch)
				if !slices.Equal(want.results, got.results) {
					t.Fatalf("par=%d batch=%d: results differ from the deterministic run\nwant %v\ngot  %v", par, batch, want.results, got.results)
				}
				if got.rep.Total() != c || got.late != want.late {
					t.Fatalf("par=%d batch=%d: counters differ\nwant %+v\ngot  %+v", par, batch, c, got.rep.Total())
				}
			}
		})
	}
}
