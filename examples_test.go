package weir_test

import (
	"context"
	"fmt"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/window"
)

type Order struct {
	User   string
	TS     etime.Time
	Amount int64
}

// Example is the README's library example: 5-minute windows per user with
// 30 s of out-of-orderness, 10 minutes of allowed lateness, and too-late
// orders on the side output.
func Example() {
	minute := int64(60_000)
	myOrders := []Order{
		{"ann", etime.Time(1 * minute), 10},
		{"bob", etime.Time(2 * minute), 5},
		{"ann", etime.Time(6 * minute), 7},  // watermark passes 5m-1: [0,5m) fires on time
		{"ann", etime.Time(4 * minute), 1},  // late but within 10 minutes: [0,5m) re-fires with 11
		{"ann", etime.Time(20 * minute), 2}, // watermark jumps to 20m - 30s - 1
		{"bob", etime.Time(3 * minute), 9},  // more than 10 minutes late: side output
	}
	opts := weir.DefaultOptions()
	opts.Parallelism = 1 // one window subtask: output in a fixed order
	env, _ := weir.NewEnv(opts)
	// As in the README: the default periodic watermark; a slice is read
	// as a backlog, with a watermark after every record (W10).
	orders := weir.AssignTimestamps(weir.FromSlice(env, myOrders),
		weir.BoundedOutOfOrderness(30*time.Second, func(o Order) etime.Time { return o.TS }))
	five, _ := window.Tumbling(etime.FromDuration(5*time.Minute), 0)
	out := weir.Aggregate(weir.Window(weir.KeyBy(orders, func(o Order) string { return o.User }), five,
		weir.WindowOptions{AllowedLateness: etime.FromDuration(10 * time.Minute), LateOutput: true}), weir.Sum(func(o Order) int64 { return o.Amount }))
	weir.ForEach(out.Results, func(_ etime.Time, r window.Result[string, int64]) {
		fmt.Println(r.Key, r.Window, r.Firing, r.Pane, r.Value)
	})
	weir.ForEach(out.Late, func(_ etime.Time, l window.LateRecord[string, Order]) {
		fmt.Println("too late:", l.Record, "missed", l.Windows, "by", l.Lateness, "ms")
	})
	report, err := env.Execute(context.Background())
	fmt.Println(report.Total().Accepted, "accepted,", report.Total().LateSideOutput, "side output,", err)
	// Output:
	// ann [0,300000) on_time 0 10
	// bob [0,300000) on_time 0 5
	// ann [0,300000) late 1 11
	// ann [300000,600000) on_time 0 7
	// too late: {bob 180000 9} missed [[0,300000)] by 989999 ms
	// ann [1200000,1500000) on_time 0 2
	// 5 accepted, 1 side output, <nil>
}
