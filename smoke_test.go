package weir_test

import (
	"context"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/window"
)

type order struct {
	User   string
	TS     etime.Time
	Amount int64
}

type sumAgg struct{}

func (sumAgg) CreateAccumulator() int64   { return 0 }
func (sumAgg) Add(a int64, o order) int64 { return a + o.Amount }
func (sumAgg) Merge(a, b int64) int64     { return a + b }
func (sumAgg) Result(a int64) int64       { return a }

func TestSmoke(t *testing.T) {
	for _, det := range []bool{true, false} {
		opts := weir.DefaultOptions()
		opts.Deterministic = det
		opts.Parallelism = 2
		env, err := weir.NewEnv(opts)
		if err != nil {
			t.Fatal(err)
		}
		var orders []order
		for i := range 1000 {
			orders = append(orders, order{User: string(rune('a' + i%3)), TS: etime.Time(i * 100), Amount: 1})
		}
		s := weir.AssignTimestamps(weir.FromSlice(env, orders),
			weir.BoundedOutOfOrderness(time.Second, func(o order) etime.Time { return o.TS }).WithEveryRecord())
		tw, _ := window.Tumbling(10000, 0)
		out := weir.Aggregate(weir.Window(weir.KeyBy(s, func(o order) string { return o.User }), tw, weir.WindowOptions{}), sumAgg{})
		res := weir.Collect(out.Results)
		rep, err := env.Execute(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var total int64
		for _, r := range res.Items() {
			total += r.Value
		}
		if total != 1000 || len(res.Items()) != 30 {
			t.Fatalf("det=%v total %d results %d report %+v", det, total, len(res.Items()), rep)
		}
	}
}
