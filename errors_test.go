package weir_test

import (
	"context"
	"errors"
	"strings"
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

// downSource is a source whose channels cannot open (its server down).
type downSource struct{}

func (downSource) Open(context.Context, int, int) (weir.SourceReader[int64], error) {
	return nil, errors.New("connection refused")
}

// TestNotStarted: a job whose source cannot open fails with an error that
// reads as the source's and matches ErrNotStarted (it read nothing), for
// both executors; one that failed while it ran does not match it.
func TestNotStarted(t *testing.T) {
	for _, det := range []bool{false, true} {
		opts := weir.DefaultOptions()
		opts.Deterministic = det
		env, err := weir.NewEnv(opts)
		if err != nil {
			t.Fatal(err)
		}
		weir.Collect(weir.FromSource[int64](env, "down", downSource{}, weir.SourceOptions{}))
		_, err = env.Execute(context.Background())
		if !errors.Is(err, weir.ErrNotStarted) || !strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "did not start") {
			t.Fatalf("deterministic %v: %v, want the source's error matching ErrNotStarted", det, err)
		}
	}
	env, err := weir.NewEnv(weir.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	weir.Collect(weir.Map(weir.FromSlice(env, []int64{1, 2}), func(v int64) int64 {
		if v == 2 {
			panic("bad record")
		}
		return v
	}))
	if _, err := env.Execute(context.Background()); err == nil || errors.Is(err, weir.ErrNotStarted) {
		t.Fatalf("a job that failed while it ran: %v, want an error that is not ErrNotStarted", err)
	}
}
