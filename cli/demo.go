// Package cli holds weir's commands as library code, so they can be
// golden-tested; cmd/weir only parses the command line and calls them.
package cli

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/trigger"
	"github.com/weirstream/weir/window"
)

// DemoOptions configures the built-in orders demo.
type DemoOptions struct {
	Users    int
	Orders   int
	Span     time.Duration // event time covered
	Start    time.Time
	Seed     uint64
	Parallel int
}

// DefaultDemoOptions returns the embedded defaults.
func DefaultDemoOptions() DemoOptions {
	return DemoOptions{
		Users: 200, Orders: 2_000_000, Span: 2 * time.Hour,
		Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Seed: 42,
	}
}

// Order is one generated order.
type Order struct {
	User   int
	TS     etime.Time
	Amount int64
}

// orderSource generates orders in arrival order: most within 30 s of the
// newest event time, 4% between 30 s and 10 min late, 1% later than that.
type orderSource struct{ o DemoOptions }

func (s orderSource) Open(ch, n int) (weir.SourceReader[Order], error) {
	return &orderReader{o: s.o, r: rand.New(rand.NewPCG(s.o.Seed, 1))}, nil
}

type orderReader struct {
	o DemoOptions
	r *rand.Rand
	i int
}

func (g *orderReader) Read(out weir.SourceOutput[Order]) (weir.ReadStatus, error) {
	if g.i >= g.o.Orders {
		return weir.Done, nil
	}
	start := etime.FromTime(g.o.Start)
	span := etime.FromDuration(g.o.Span)
	for end := min(g.i+1024, g.o.Orders); g.i < end; g.i++ {
		now := start + etime.Time(int64(span)*int64(g.i)/int64(g.o.Orders))
		var delay etime.Duration
		switch p := g.r.IntN(100); {
		case p < 95:
			delay = etime.Duration(g.r.IntN(30_000))
		case p < 99:
			delay = etime.Duration(30_000 + g.r.IntN(570_000))
		default:
			delay = etime.Duration(600_000 + g.r.IntN(3_000_000))
		}
		out.Emit(etime.MinTime, Order{User: g.r.IntN(g.o.Users), TS: now.Add(-delay), Amount: 1 + g.r.Int64N(500)})
	}
	return weir.Emitted, nil
}

func (g *orderReader) Close() error { return nil }

type orderStats struct{ Count, Total int64 }

type orderAgg struct{}

func (orderAgg) CreateAccumulator() orderStats { return orderStats{} }
func (orderAgg) Add(a orderStats, o Order) orderStats {
	a.Count++
	a.Total += o.Amount
	return a
}
func (orderAgg) Merge(a, b orderStats) orderStats {
	return orderStats{Count: a.Count + b.Count, Total: a.Total + b.Total}
}
func (orderAgg) Result(a orderStats) orderStats { return a }

// Demo runs the orders job: 5-minute tumbling windows per user, 30 s of
// out-of-orderness, 10 minutes of allowed lateness, early firings every
// minute, too-late orders on the side output, and prints what each layer of
// the late-data defence did.
func Demo(ctx context.Context, w io.Writer, o DemoOptions) error {
	opts := weir.DefaultOptions()
	if o.Parallel > 0 {
		opts.Parallelism = o.Parallel
	}
	env, err := weir.NewEnv(opts)
	if err != nil {
		return err
	}
	orders := weir.AssignTimestamps(
		weir.FromSource[Order](env, "orders", orderSource{o}, weir.SourceOptions{}),
		weir.BoundedOutOfOrderness(30*time.Second, func(o Order) etime.Time { return o.TS }).WithEveryRecord())
	tumbling, err := window.Tumbling(etime.FromDuration(5*time.Minute), 0)
	if err != nil {
		return err
	}
	early, err := trigger.Continuous(etime.FromDuration(time.Minute))
	if err != nil {
		return err
	}
	out := weir.Aggregate(weir.Window(weir.KeyBy(orders, func(o Order) int { return o.User }), tumbling, weir.WindowOptions{
		Name: "orders_per_user", Trigger: early, AllowedLateness: etime.FromDuration(10 * time.Minute), LateOutput: true,
	}), orderAgg{})
	type final struct{ count, total int64 }
	finals := map[window.Window]map[int]orderStats{}
	var lateOrders int64
	weir.ForEachSerial(out.Results, func(_ etime.Time, r window.Result[int, orderStats]) {
		m := finals[r.Window]
		if m == nil {
			m = map[int]orderStats{}
			finals[r.Window] = m
		}
		m[r.Key] = r.Value
	})
	weir.ForEachSerial(out.Late, func(_ etime.Time, l window.LateRecord[int, Order]) { lateOrders++ })
	began := time.Now()
	rep, err := env.Execute(ctx)
	if err != nil {
		return err
	}
	c := rep.Total()
	fmt.Fprintf(w, "weir demo: %d orders from %d users over %v of event time, in %v\n", o.Orders, o.Users, o.Span, time.Since(began).Round(time.Millisecond))
	fmt.Fprintf(w, "  windows: 5m tumbling per user, bound 30s, allowed lateness 10m, early firings every 1m\n")
	fmt.Fprintf(w, "  layer 1, out-of-orderness bound: %d orders accepted (window firings: %d early, %d on time)\n", c.Accepted, c.FiredEarly, c.FiredOnTime)
	fmt.Fprintf(w, "  layer 2, allowed lateness:       %d late re-firings with the full updated result\n", c.FiredLate)
	fmt.Fprintf(w, "  layer 3, side output:            %d orders too late for every window, kept (%d on the late stream)\n", c.LateSideOutput, lateOrders)
	fmt.Fprintf(w, "  dropped: %d, dead letters: %d\n", c.LateDropped, rep.DeadLetters)
	fmt.Fprintf(w, "  conservation: %d in = %d accepted + %d side output + %d dropped\n", c.RecordsIn, c.Accepted, c.LateSideOutput, c.LateDropped)
	ws := make([]window.Window, 0, len(finals))
	for win := range finals {
		ws = append(ws, win)
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].Start < ws[j].Start })
	fmt.Fprintf(w, "  first windows (latest result per window, summed over users):\n")
	for _, win := range ws[:min(3, len(ws))] {
		var f final
		for _, s := range finals[win] {
			f.count += s.Count
			f.total += s.Total
		}
		fmt.Fprintf(w, "    %s .. %s  orders=%d total=%d\n", win.Start.Wall().Format(time.RFC3339), win.End.Wall().Format(time.RFC3339), f.count, f.total)
	}
	return nil
}
