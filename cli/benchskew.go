package cli

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/benchutil"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/window"
)

// benchSkew runs weir bench skew: a hot key's cost at parallelism 2,
// with and without two-phase aggregation (WindowOptions.TwoPhase).
func benchSkew(ctx context.Context, args []string, o IO) int {
	fs := flag.NewFlagSet("bench skew", flag.ContinueOnError)
	fs.SetOutput(o.Stderr)
	events := fs.Int("events", 10_000_000, "number of events")
	hot := fs.Float64("hot", 1.0/3, "the share of events on the hot key (the others spread over 10,000 keys)")
	par := fs.Int("parallelism", 2, "source channels and window subtasks")
	runs := fs.Int("runs", 3, "runs of each side, in turn; the medians are reported")
	fs.Usage = func() {
		fmt.Fprintln(o.Stderr, `usage: weir bench skew [--events N] [--hot SHARE] [--parallelism N] [--runs N]

Times a tumbling 10 s sum per key over events with one hot key, read as a
backlog over --parallelism channels (a watermark every 1,000 events of
each), with one-phase and two-phase aggregation (two_phase), checks that
both give the same results, and prints the busiest window subtask's share
of the events without two phases and the two rates.`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return parseExit(err)
	}
	if *events <= 0 || *par <= 0 || *runs <= 0 || !(*hot >= 0 && *hot <= 1) || fs.NArg() != 0 {
		fmt.Fprintln(o.Stderr, "weir: bench skew: --events, --parallelism and --runs must be positive, --hot a share between 0 and 1, and no arguments")
		return ExitUsage
	}
	evs := benchutil.SkewedEvents(*events, *hot)
	fmt.Fprintf(o.Stdout, "%d events, %.0f%% on one key, parallelism %d: the busiest window subtask gets %.1f%% of them without two phases\n",
		*events, *hot*100, *par, 100*busiestShare(evs, *par))
	var one, two []measured
	var sumOne, sumTwo int64
	var shares [2][]skewShares
	for range *runs {
		for i, twoPhase := range []bool{false, true} {
			runtime.GC()
			start := time.Now()
			sum, sh, err := runSkew(ctx, evs, *par, twoPhase)
			if err != nil {
				fmt.Fprintln(o.Stderr, "weir: bench skew:", err)
				return ExitFailed
			}
			m := measured{rate: float64(len(evs)) / time.Since(start).Seconds()}
			shares[i] = append(shares[i], sh)
			if twoPhase {
				two, sumTwo = append(two, m), sum
			} else {
				one, sumOne = append(one, m), sum
			}
		}
	}
	for i, name := range []string{"one-phase", "two-phase"} {
		var el, busy []float64
		for _, sh := range shares[i] {
			el, busy = append(el, sh.elements), append(busy, sh.busy)
		}
		fmt.Fprintf(o.Stdout, "%s: the busiest window subtask took %.1f%% of the window's elements and did %.1f%% of its busy time (medians)\n",
			name, 100*medianOf(el), 100*medianOf(busy))
	}
	if sumOne != sumTwo {
		fmt.Fprintf(o.Stderr, "weir: bench skew: the results differ: one-phase sums add up to %d, two-phase to %d\n", sumOne, sumTwo)
		return ExitFailed
	}
	m1, m2 := median(one).rate, median(two).rate
	fmt.Fprintf(o.Stdout, "one-phase %.2f M events/s, two-phase %.2f M events/s (medians of %d): two-phase %.2fx one-phase; results equal\n", m1/1e6, m2/1e6, *runs, m2/m1)
	return ExitOK
}

// busiestShare is the share of evs that the busiest of par window
// subtasks receives when they are keyed by their key alone.
func busiestShare(evs []benchutil.Event, par int) float64 {
	h := state.NewHasher(weir.DefaultKeyEncoder[uint64]())
	n := make([]int, par)
	for _, e := range evs {
		n[state.SubtaskOf(state.KeyGroupOf(h.Hash(e.Key), state.DefaultMaxParallelism), state.DefaultMaxParallelism, par)]++
	}
	return float64(slices.Max(n)) / float64(len(evs))
}

func medianOf(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	return s[len(s)/2]
}

// skewShares are the busiest window subtask's shares of the window
// stage's elements (records, or records and bundles) and busy time.
type skewShares struct{ elements, busy float64 }

// runSkew sums V per key in tumbling 10 s windows over evs and returns
// the sum of every result's value times its window start (a digest that
// two runs with the same results share) and the window stage's skew.
func runSkew(ctx context.Context, evs []benchutil.Event, par int, twoPhase bool) (int64, skewShares, error) {
	opts := weir.DefaultOptions()
	opts.Parallelism = par
	env, err := weir.NewEnv(opts)
	if err != nil {
		return 0, skewShares{}, err
	}
	s := weir.AssignTimestamps(weir.FromSource[benchutil.Event](env, "events", blocks(evs), weir.SourceOptions{Channels: par}),
		weir.BoundedOutOfOrderness(benchutil.Bound*time.Millisecond, func(e benchutil.Event) etime.Time { return e.TS }))
	a, err := window.Tumbling(10_000, 0)
	if err != nil {
		return 0, skewShares{}, err
	}
	out := weir.Aggregate(weir.Window(weir.KeyBy(s, func(e benchutil.Event) uint64 { return e.Key }), a, weir.WindowOptions{Name: "window", TwoPhase: twoPhase}),
		weir.Sum(func(e benchutil.Event) int64 { return e.V }))
	var digest int64
	weir.ForEachSerial(out.Results, func(_ etime.Time, r window.Result[uint64, int64]) { digest += r.Value * int64(r.Window.Start) })
	if _, err = env.Execute(ctx); err != nil {
		return 0, skewShares{}, err
	}
	var el, busy []float64
	for _, st := range env.SubtaskStats() {
		if st.Stage == "window" {
			el, busy = append(el, float64(st.RecordsIn)), append(busy, st.Busy.Seconds())
		}
	}
	share := func(v []float64) float64 {
		var sum float64
		for _, x := range v {
			sum += x
		}
		return slices.Max(v) / sum
	}
	return digest, skewShares{elements: share(el), busy: share(busy)}, nil
}

// blocks is a source over events: channel c of n reads the blocks of
// 256 events whose index modulo n is c, a backlog (watermarks every
// 1,000 events of each channel, W10).
type blocks []benchutil.Event

func (b blocks) Open(_ context.Context, ch, n int) (weir.SourceReader[benchutil.Event], error) {
	return &blockReader{evs: b, next: ch * 256, step: n * 256}, nil
}

type blockReader struct {
	evs        []benchutil.Event
	next, step int
}

func (r *blockReader) Read(_ context.Context, out weir.SourceOutput[benchutil.Event]) (weir.ReadStatus, error) {
	if r.next >= len(r.evs) {
		return weir.Done, nil
	}
	for _, e := range r.evs[r.next:min(r.next+256, len(r.evs))] {
		out.Emit(etime.MinTime, e)
	}
	r.next += r.step
	return weir.Emitted, nil
}

func (r *blockReader) Close() error { return nil }
