package weir_test

import (
	"context"
	"errors"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/window"
)

// TestSentinels: the errors callers tell apart match with errors.Is
// from outside the module's internal packages.
func TestSentinels(t *testing.T) {
	ts := func(v int64) etime.Time { return etime.Time(v) }
	build := func(a window.Assigner, o weir.WindowOptions) *weir.Env {
		env, err := weir.NewEnv(weir.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		s := weir.AssignTimestamps(weir.FromSlice(env, []int64{1, 2, 3}), weir.Monotonous(ts))
		out := weir.Reduce(weir.Window(weir.KeyBy(s, func(v int64) int64 { return v % 2 }), a, o), func(a, b int64) int64 { return a + b })
		weir.Collect(out.Results)
		return env
	}
	tumbling, _ := window.Tumbling(10, 0)
	env := build(tumbling, weir.WindowOptions{})
	if _, err := env.Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Execute(context.Background()); !errors.Is(err, weir.ErrAlreadyRun) {
		t.Fatalf("a second Execute: %v, want ErrAlreadyRun", err)
	}
	if _, err := build(window.GlobalWindows(), weir.WindowOptions{AllowedLateness: 5}).Execute(context.Background()); !errors.Is(err, weir.ErrGlobalLateness) {
		t.Fatalf("lateness on the global window: %v, want ErrGlobalLateness", err)
	}
}
