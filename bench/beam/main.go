// Command beam benchmarks Apache Beam's Go SDK on Nexmark windowed counts
// (weir's "count", "q5" and "q11"), on an in-process runner, with the
// events of weir's Beam-compatible generator, and checks its rows
// against weir's hand-written loops.
//
//	go run . --query count --events 1000000 [--json] [--runner prism|direct] [--weir P]
//
// It is a module of its own so that weir's go.mod gains none of Beam's
// dependencies.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"runtime/pprof"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/direct"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/nexmark"
)

// The pipeline's DoFns run in this process (prism's loopback worker and
// the direct runner both run the SDK harness in-process), so they read
// the pre-generated bids and write the rows through package variables.
var (
	bids []nexmark.Bid

	rowsMu sync.Mutex
	rows   []nexmark.Row
)

// emitBidsFn emits the pre-generated bids' auction (or with Bidder, their
// bidder) at the bid's event time.
type emitBidsFn struct {
	Bidder bool
}

func (f *emitBidsFn) ProcessElement(_ []byte, emit func(beam.EventTime, int64)) {
	for i := range bids {
		b := &bids[i]
		k := b.Auction
		if f.Bidder {
			k = b.Bidder
		}
		emit(mtime.FromMilliseconds(int64(b.DateTime)), k)
	}
}

// collectFn keeps a row per windowed count: A the key, B the count.
type collectFn struct{}

func (collectFn) ProcessElement(w beam.Window, k int64, n int) {
	iw := w.(window.IntervalWindow)
	add(nexmark.Row{Start: etime.Time(iw.Start.Milliseconds()), End: etime.Time(iw.End.Milliseconds()), A: k, B: int64(n)})
}

func add(r nexmark.Row) {
	rowsMu.Lock()
	rows = append(rows, r)
	rowsMu.Unlock()
}

// AuctionCount is an auction's bid count in a window.
type AuctionCount struct {
	Auction, Count int64
}

// toWindowKeyFn keys every count of a window by one constant key, so that
// grouping by key groups by window (the counts stay in their windows).
func toWindowKeyFn(a int64, n int) (int, AuctionCount) {
	return 0, AuctionCount{Auction: a, Count: int64(n)}
}

// Top holds the auctions with the largest count (ties: all of them).
type Top struct {
	Max      int64
	Auctions []int64
}

// topFn combines counts into the auctions with the largest count.
type topFn struct{}

func (topFn) CreateAccumulator() Top { return Top{} }

func (topFn) AddInput(t Top, c AuctionCount) Top {
	switch {
	case len(t.Auctions) == 0 || c.Count > t.Max:
		return Top{Max: c.Count, Auctions: []int64{c.Auction}}
	case c.Count == t.Max:
		t.Auctions = append(t.Auctions, c.Auction)
	}
	return t
}

func (topFn) MergeAccumulators(x, y Top) Top {
	switch {
	case len(y.Auctions) == 0 || (len(x.Auctions) > 0 && x.Max > y.Max):
		return x
	case len(x.Auctions) == 0 || y.Max > x.Max:
		return y
	}
	return Top{Max: x.Max, Auctions: append(slices.Clip(x.Auctions), y.Auctions...)}
}

func (topFn) ExtractOutput(t Top) Top { return t }

// collectTopFn keeps a row per auction with a window's largest count.
type collectTopFn struct{}

func (collectTopFn) ProcessElement(w beam.Window, _ int, t Top) {
	iw := w.(window.IntervalWindow)
	for _, a := range t.Auctions {
		add(nexmark.Row{Start: etime.Time(iw.Start.Milliseconds()), End: etime.Time(iw.End.Milliseconds()), A: a, B: t.Max})
	}
}

func init() {
	register.DoFn2x0[[]byte, func(beam.EventTime, int64)](&emitBidsFn{})
	register.Emitter2[beam.EventTime, int64]()
	register.DoFn3x0[beam.Window, int64, int](&collectFn{})
	register.Function2x2(toWindowKeyFn)
	register.Combiner3[Top, AuctionCount, Top](&topFn{})
	register.DoFn3x0[beam.Window, int, Top](&collectTopFn{})
	beam.RegisterType(reflect.TypeFor[AuctionCount]())
	beam.RegisterType(reflect.TypeFor[Top]())
}

// build makes query's pipeline.
func build(query string) (*beam.Pipeline, error) {
	p, s := beam.NewPipelineWithRoot()
	imp := beam.Impulse(s)
	switch query {
	case "count", "q5":
		auctions := beam.ParDo(s, &emitBidsFn{}, imp)
		var ws *window.Fn
		if query == "count" {
			ws = window.NewFixedWindows(10 * time.Second)
		} else {
			ws = window.NewSlidingWindows(2*time.Second, 10*time.Second)
		}
		counts := stats.Count(s, beam.WindowInto(s, ws, auctions))
		if query == "count" {
			beam.ParDo0(s, &collectFn{}, counts)
			return p, nil
		}
		// Per window: the auctions with the most bids.
		top := beam.CombinePerKey(s, &topFn{}, beam.ParDo(s, toWindowKeyFn, counts))
		beam.ParDo0(s, &collectTopFn{}, top)
	case "q11":
		bidders := beam.ParDo(s, &emitBidsFn{Bidder: true}, imp)
		counts := stats.Count(s, beam.WindowInto(s, window.NewSessions(10*time.Second), bidders))
		beam.ParDo0(s, &collectFn{}, counts)
	default:
		return nil, fmt.Errorf("no query %q (have count, q5, q11)", query)
	}
	return p, nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type result struct {
	Query          string  `json:"query"`
	Events         int     `json:"events"`
	EventsPerS     float64 `json:"beam_events_per_s"`
	EventsPerCPU   float64 `json:"beam_events_per_cpu_s"`
	Rows           int     `json:"rows"`
	RowsMatch      bool    `json:"rows_match"`
	Runner         string  `json:"runner"`
	Bids           int     `json:"bids"`
	WallSeconds    float64 `json:"wall_s"`
	CPUSeconds     float64 `json:"cpu_s"`
	HandRows       int     `json:"hand_rows"`
	HandEventsPerS float64 `json:"hand_events_per_s"`
	// weir on the same events in the same process (RunWeir), when asked.
	WeirParallelism   int     `json:"weir_parallelism,omitempty"`
	WeirEventsPerS    float64 `json:"weir_events_per_s,omitempty"`
	WeirEventsPerCPU  float64 `json:"weir_events_per_cpu_s,omitempty"`
	WeirRowsMatchHand *bool   `json:"weir_rows_match_hand,omitempty"`
	Diff              string  `json:"diff,omitempty"`
}

func main() {
	query := flag.String("query", "count", "query: count, q5 or q11")
	n := flag.Int("events", 1_000_000, "number of Nexmark events (bids are ~92% of them)")
	asJSON := flag.Bool("json", false, "print one JSON object")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the Beam run to this file")
	weirP := flag.Int("weir", 0, "also run weir on the same events with this parallelism (0: don't)")
	logLevel := flag.String("beam_log_level", "warn", "Beam's slog level: debug, info, warn or error (prism logs each job's steps at info)")
	flag.Parse()
	beamlog.LogLevel = *logLevel // beam.Init sets up slog with it
	beam.Init()
	if *runners.Runner == "" {
		*runners.Runner = "prism"
	}
	if err := run(*query, *n, *runners.Runner, *asJSON, *weirP, *cpuProfile); err != nil {
		fmt.Fprintln(os.Stderr, "beam bench:", err)
		os.Exit(1)
	}
}

func run(query string, n int, runner string, asJSON bool, weirP int, cpuProfile string) error {
	q, err := nexmark.Lookup(query)
	if err != nil {
		return err
	}
	c := nexmark.DefaultConfig()
	c.OutOfOrderGroupSize = 1000
	c.NoExtra = true
	events, err := nexmark.Generate(c, n)
	if err != nil {
		return err
	}
	for i := range events {
		if events[i].Kind == nexmark.KindBid {
			bids = append(bids, events[i].Bid)
		}
	}
	p, err := build(query)
	if err != nil {
		return err
	}
	var execute func(context.Context, *beam.Pipeline) (beam.PipelineResult, error)
	switch runner {
	case "prism":
		execute = prism.Execute
	case "direct":
		execute = direct.Execute
	default:
		return fmt.Errorf("no runner %q (have prism, direct)", runner)
	}

	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	cpu0, t0 := cpuTime(), time.Now()
	if _, err := execute(context.Background(), p); err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	wall, cpu := time.Since(t0), cpuTime()-cpu0
	if cpuProfile != "" {
		pprof.StopCPUProfile()
	}

	hand := nexmark.RunHand(q, nexmark.Input{Events: events}, true)
	nexmark.SortRows(rows)
	res := result{
		Query: query, Events: n, Runner: runner, Bids: len(bids),
		EventsPerS:   float64(n) / wall.Seconds(),
		EventsPerCPU: float64(n) / cpu.Seconds(),
		Rows:         len(rows), HandRows: len(hand.Rows),
		WallSeconds: wall.Seconds(), CPUSeconds: cpu.Seconds(),
		HandEventsPerS: float64(n) / hand.Elapsed.Seconds(),
	}
	res.RowsMatch, res.Diff = compare(rows, hand.Rows)
	if weirP > 0 {
		cpu0 := cpuTime()
		w, err := nexmark.RunWeir(context.Background(), q, nexmark.Input{Events: events}, weirP, true)
		if err != nil {
			return fmt.Errorf("weir: %w", err)
		}
		cpu := cpuTime() - cpu0
		res.WeirParallelism = weirP
		res.WeirEventsPerS = float64(n) / w.Elapsed.Seconds()
		res.WeirEventsPerCPU = float64(n) / cpu.Seconds()
		match := slices.Equal(w.Rows, hand.Rows)
		res.WeirRowsMatchHand = &match
	}
	if asJSON {
		return json.NewEncoder(os.Stdout).Encode(res)
	}
	fmt.Printf("query %s, %d events (%d bids), Beam Go SDK on %s\n", query, n, len(bids), runner)
	fmt.Printf("beam: %.2f s wall, %.2f s CPU: %.0f events/s, %.0f events/CPU-s\n",
		wall.Seconds(), cpu.Seconds(), res.EventsPerS, res.EventsPerCPU)
	fmt.Printf("hand loop (1 core): %.0f events/s\n", res.HandEventsPerS)
	if weirP > 0 {
		fmt.Printf("weir (parallelism %d): %.0f events/s, %.0f events/CPU-s, rows match the hand loop: %v\n",
			weirP, res.WeirEventsPerS, res.WeirEventsPerCPU, *res.WeirRowsMatchHand)
	}
	fmt.Printf("rows: beam %d, hand loop %d, match: %v\n", res.Rows, res.HandRows, res.RowsMatch)
	if res.Diff != "" {
		fmt.Println(res.Diff)
	}
	return nil
}

// compare says whether two sorted row sets are equal and, if not, how
// they differ (the counts and the first few rows only one side has).
func compare(beamRows, hand []nexmark.Row) (bool, string) {
	if slices.Equal(beamRows, hand) {
		return true, ""
	}
	var onlyBeam, onlyHand []nexmark.Row
	i, j := 0, 0
	for i < len(beamRows) || j < len(hand) {
		switch {
		case j == len(hand) || (i < len(beamRows) && less(beamRows[i], hand[j])):
			onlyBeam = append(onlyBeam, beamRows[i])
			i++
		case i == len(beamRows) || less(hand[j], beamRows[i]):
			onlyHand = append(onlyHand, hand[j])
			j++
		default:
			i++
			j++
		}
	}
	return false, fmt.Sprintf("%d rows only in beam (first: %v), %d only in the hand loop (first: %v); ignoring the windows' bounds the rows match: %v",
		len(onlyBeam), onlyBeam[:min(5, len(onlyBeam))], len(onlyHand), onlyHand[:min(5, len(onlyHand))],
		slices.Equal(withoutWindows(beamRows), withoutWindows(hand)))
}

// withoutWindows returns the rows without their windows' bounds, sorted.
func withoutWindows(rows []nexmark.Row) []nexmark.Row {
	out := slices.Clone(rows)
	for i := range out {
		out[i].Start, out[i].End = 0, 0
	}
	nexmark.SortRows(out)
	return out
}

// less is nexmark.SortRows's order.
func less(x, y nexmark.Row) bool {
	return cmp.Or(cmp.Compare(x.Start, y.Start), cmp.Compare(x.End, y.End), cmp.Compare(x.A, y.A),
		cmp.Compare(x.B, y.B), cmp.Compare(x.C, y.C), cmp.Compare(x.S, y.S)) < 0
}
