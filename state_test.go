package weir_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/state/memstate"
	"github.com/weirstream/weir/window"
)

// runSized runs 2,000 keys, five records each, through one-hour tumbling
// windows that all close at the end, and returns the window operator's
// state and the job's log.
func runSized(t *testing.T, backend func() state.Backend, budget int64) (weir.OperatorState, string) {
	t.Helper()
	const keys = 2000
	var events []ev
	for i := range 5 * keys {
		events = append(events, ev{Key: fmt.Sprintf("user-%05d", i%keys), TS: etime.Time(1_700_000_000_000 + i), V: int64(i)})
	}
	var log bytes.Buffer
	opts := weir.DefaultOptions()
	opts.Parallelism = 2
	opts.NewBackend = backend
	opts.StateBudget = budget
	opts.Logger = slog.New(slog.NewTextHandler(&log, nil))
	env, err := weir.NewEnv(opts)
	if err != nil {
		t.Fatal(err)
	}
	s := weir.AssignTimestamps(weir.FromSlice(env, events),
		weir.BoundedOutOfOrderness(time.Second, func(e ev) etime.Time { return e.TS }))
	w := weir.Aggregate(weir.Window(weir.KeyBy(s, func(e ev) string { return e.Key }), mustAssigner(window.Tumbling(3_600_000, 0)),
		weir.WindowOptions{Name: "hourly"}), weir.Sum(func(e ev) int64 { return e.V }))
	res := weir.Collect(w.Results)
	if _, err := env.Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(res.Items()); n != keys {
		t.Fatalf("%d results, want %d", n, keys)
	}
	st := env.OperatorStates()["hourly"]
	if st.Peak.OpenWindows != keys || st.Peak.Timers != keys {
		t.Fatalf("peak %+v, want %d windows and timers", st.Peak, keys)
	}
	if st.StateInfo != (weir.StateInfo{}) {
		t.Fatalf("state after the final watermark: %+v, want none", st.StateInfo)
	}
	return st, log.String()
}

// TestStateSize checks the state-size counters: windows and timers are
// exact at their peak and zero after the final watermark on both backends,
// the KV backend counts its bytes and the in-memory estimate is close to
// that count, and a state budget warns once, naming the operator, and
// again each time the state doubles past it.
func TestStateSize(t *testing.T) {
	mem, log := runSized(t, func() state.Backend { return memstate.New() }, 0)
	if log != "" {
		t.Fatalf("log without a budget: %s", log)
	}
	kv, _ := runSized(t, func() state.Backend { return memstate.NewKVBackend(1) }, 0)
	// A key "user-00001" and a window take about 40 bytes with the entry;
	// the timers about 50 more.
	perWindow := float64(kv.Peak.Bytes) / float64(kv.Peak.OpenWindows)
	if perWindow < 40 || perWindow > 200 {
		t.Fatalf("KV backend: %.0f bytes per window (%+v)", perWindow, kv.Peak)
	}
	if r := float64(mem.Peak.Bytes) / float64(kv.Peak.Bytes); r < 0.7 || r > 1.3 {
		t.Fatalf("in-memory estimate %d bytes vs %d counted by the KV backend (ratio %.2f)", mem.Peak.Bytes, kv.Peak.Bytes, r)
	}
	t.Logf("peak: memory %+v, kv %+v", mem.Peak, kv.Peak)
	over, log := runSized(t, func() state.Backend { return memstate.New() }, mem.Peak.Bytes/2)
	if over.OverBudget != 1 || strings.Count(log, "passed its budget") != 1 || !strings.Contains(log, "operator=hourly") {
		t.Fatalf("budget %d: %d warnings, log:\n%s", mem.Peak.Bytes/2, over.OverBudget, log)
	}
	// Far past the budget, it warns again each time the state doubles,
	// with the resident memory beside the encoded size.
	far, log := runSized(t, func() state.Backend { return memstate.New() }, mem.Peak.Bytes/10)
	if far.OverBudget < 3 || strings.Count(log, "doubled again past its budget") != far.OverBudget-1 || !strings.Contains(log, "rss=") {
		t.Fatalf("budget %d, peak %d: %d warnings, log:\n%s", mem.Peak.Bytes/10, far.Peak.Bytes, far.OverBudget, log)
	}
	if _, err := weir.NewEnv(weir.Options{StateBudget: -1}); err == nil || !strings.Contains(err.Error(), "StateBudget") {
		t.Fatalf("negative budget: %v", err)
	}
}
