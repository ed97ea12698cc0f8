package weir_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/window"
)

type person struct {
	ID   int
	Name string
	TS   etime.Time
}

type auction struct {
	Seller int
	Item   string
	TS     etime.Time
}

// TestWindowJoin joins persons and auctions by id in 10 s tumbling windows
// (Nexmark Q8's shape) on both executors.
func TestWindowJoin(t *testing.T) {
	var persons []person
	var auctions []auction
	for i := range 50 {
		persons = append(persons, person{ID: i, Name: fmt.Sprintf("p%d", i), TS: etime.Time(i * 400)})
		auctions = append(auctions, auction{Seller: i % 10, Item: fmt.Sprintf("i%d", i), TS: etime.Time(i * 400)})
	}
	run := func(det bool, par int) []string {
		opts := weir.DefaultOptions()
		opts.Deterministic, opts.Parallelism = det, par
		env, err := weir.NewEnv(opts)
		if err != nil {
			t.Fatal(err)
		}
		ps := weir.AssignTimestamps(weir.FromSlice(env, persons), weir.Monotonous(func(p person) etime.Time { return p.TS }).WithEveryRecord())
		as := weir.AssignTimestamps(weir.FromSlice(env, auctions), weir.Monotonous(func(a auction) etime.Time { return a.TS }).WithEveryRecord())
		ten, _ := window.Tumbling(10_000, 0)
		out := weir.Join(weir.KeyBy(ps, func(p person) int { return p.ID }), weir.KeyBy(as, func(a auction) int { return a.Seller }),
			ten, weir.WindowOptions{}, func(p person, a auction) string { return p.Name + "/" + a.Item })
		got := weir.Collect(out.Results)
		if _, err := env.Execute(context.Background()); err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, r := range got.Items() {
			lines = append(lines, fmt.Sprintf("%d %v %s", r.Key, r.Window, r.Value))
		}
		slices.Sort(lines)
		return lines
	}
	want := run(true, 1)
	// Person i (ts 400i) meets the auctions of seller i in the same 10 s
	// window: auction j with j%10 == i and 400j in the same window.
	var exp []string
	for i := range 10 {
		for j := i; j < 50; j += 10 {
			if i*400/10_000 == j*400/10_000 {
				w := window.Window{Start: etime.Time(i * 400 / 10_000 * 10_000), End: etime.Time(i*400/10_000*10_000 + 10_000)}
				exp = append(exp, fmt.Sprintf("%d %v p%d/i%d", i, w, i, j))
			}
		}
	}
	slices.Sort(exp)
	if !slices.Equal(want, exp) {
		t.Fatalf("join:\n got %v\nwant %v", want, exp)
	}
	for _, par := range []int{1, 2, 4} {
		if got := run(false, par); !slices.Equal(got, want) {
			t.Fatalf("parallel %d: %v, want %v", par, got, want)
		}
	}
}

// endless emits records forever.
type endless struct{}

func (endless) Open(_ context.Context, ch, n int) (weir.SourceReader[int], error) {
	return &endlessReader{}, nil
}

type endlessReader struct{ i int }

func (r *endlessReader) Read(_ context.Context, out weir.SourceOutput[int]) (weir.ReadStatus, error) {
	for range 100 {
		r.i++
		out.Emit(etime.Time(r.i), r.i)
	}
	return weir.Emitted, nil
}
func (r *endlessReader) Close() error { return nil }

// TestCancelStopsCleanly stops an endless job through its context; every
// goroutine ends (goleak checks in TestMain) and Execute returns the
// context's error.
func TestCancelStopsCleanly(t *testing.T) {
	opts := weir.DefaultOptions()
	opts.Parallelism = 3
	opts.QueueBatches = 1 // keep queues full so senders block
	env, _ := weir.NewEnv(opts)
	s := weir.FromSource[int](env, "endless", endless{}, weir.SourceOptions{Channels: 2})
	tw, _ := window.Tumbling(1000, 0)
	out := weir.Reduce(weir.Window(weir.KeyBy(s, func(i int) int { return i % 97 }), tw, weir.WindowOptions{}), func(a, b int) int { return a + b })
	weir.ForEach(out.Results, func(etime.Time, window.Result[int, int]) { time.Sleep(time.Microsecond) })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := env.Execute(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context's deadline", err)
	}
	if env.Report().SourceRecords["endless"] == 0 {
		t.Fatal("nothing was read")
	}
}

// TestPanicFailsJob: a panic in user code fails the job with its cause; it
// does not take the process down.
func TestPanicFailsJob(t *testing.T) {
	for _, det := range []bool{true, false} {
		opts := weir.DefaultOptions()
		opts.Deterministic = det
		env, _ := weir.NewEnv(opts)
		s := weir.Map(weir.FromSlice(env, []int{1, 2, 3}), func(i int) int {
			if i == 2 {
				panic("bad record 2")
			}
			return i
		})
		weir.ForEach(s, func(etime.Time, int) {})
		_, err := env.Execute(context.Background())
		if err == nil || !strings.Contains(err.Error(), "bad record 2") {
			t.Fatalf("det=%v: err = %v, want the panic's cause", det, err)
		}
	}
}

// TestBuildErrors: bad window combinations are refused when the job is
// built (D3, W6, B5).
func TestBuildErrors(t *testing.T) {
	env, _ := weir.NewEnv(weir.DefaultOptions())
	s := weir.FromSlice(env, []int{1})
	weir.Reduce(weir.Window(weir.KeyBy(s, func(i int) int { return i }), window.GlobalWindows(), weir.WindowOptions{AllowedLateness: 5}), func(a, b int) int { return a })
	if _, err := env.Execute(context.Background()); err == nil || !strings.Contains(err.Error(), "global window") {
		t.Fatalf("global window with lateness: err = %v", err)
	}
	if err := (weir.Options{Parallelism: -1}).Validate(); err == nil || !strings.Contains(err.Error(), "Options.Parallelism") {
		t.Fatalf("Validate: %v", err)
	}
}

// TestWatermarksReadable: every subtask's watermark and channel states are
// readable through the API.
func TestWatermarksReadable(t *testing.T) {
	opts := weir.DefaultOptions()
	opts.Parallelism = 2
	env, _ := weir.NewEnv(opts)
	s := weir.AssignTimestamps(weir.FromSource[int](env, "n", sliceOf(100), weir.SourceOptions{Channels: 3}),
		weir.Monotonous(func(i int) etime.Time { return etime.Time(i) }).WithEveryRecord())
	tw, _ := window.Tumbling(10, 0)
	weir.Reduce(weir.Window(weir.KeyBy(s, func(i int) int { return i % 5 }), tw, weir.WindowOptions{}), func(a, b int) int { return a + b })
	if _, err := env.Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	var windowSubtasks int
	for _, w := range env.Watermarks() {
		if w.Stage != "window" {
			continue
		}
		windowSubtasks++
		if w.Watermark != etime.MaxTime || len(w.Channels) != 1 || len(w.Channels[0]) != 3 {
			t.Fatalf("window subtask %d: %+v", w.Subtask, w)
		}
		for _, c := range w.Channels[0] {
			if c.Watermark != etime.MaxTime {
				t.Fatalf("channel: %+v", c)
			}
		}
	}
	if windowSubtasks != 2 {
		t.Fatalf("%d window subtasks", windowSubtasks)
	}
}

type sliceOf int

func (n sliceOf) Open(_ context.Context, ch, chans int) (weir.SourceReader[int], error) {
	return &countReader{i: ch, step: chans, n: int(n)}, nil
}

type countReader struct{ i, step, n int }

func (r *countReader) Read(_ context.Context, out weir.SourceOutput[int]) (weir.ReadStatus, error) {
	if r.i >= r.n {
		return weir.Done, nil
	}
	out.Emit(etime.MinTime, r.i)
	r.i += r.step
	return weir.Emitted, nil
}
func (r *countReader) Close() error { return nil }

// TestNaNKeyIsDeadLetter: a key that is not equal to itself is refused as
// bad input and counted, not lost in state.
func TestNaNKeyIsDeadLetter(t *testing.T) {
	opts := weir.DefaultOptions()
	opts.Deterministic = true
	env, _ := weir.NewEnv(opts)
	var reasons []string
	env.OnDeadLetter(func(d weir.DeadLetter) { reasons = append(reasons, d.Reason) })
	s := weir.AssignTimestamps(weir.FromSlice(env, []float64{1, math.NaN(), 2}),
		weir.Monotonous(func(float64) etime.Time { return 5 }).WithEveryRecord())
	tw, _ := window.Tumbling(10, 0)
	out := weir.Reduce(weir.Window(weir.KeyBy(s, func(f float64) float64 { return f }), tw, weir.WindowOptions{}), func(a, b float64) float64 { return a + b })
	res := weir.Collect(out.Results)
	rep, err := env.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items()) != 2 || rep.DeadLetters != 1 || !slices.Equal(reasons, []string{"key_invalid"}) || env.State().OpenWindows != 0 {
		t.Fatalf("results %v dead %d reasons %v state %+v", res.Items(), rep.DeadLetters, reasons, env.State())
	}
}

// TestTryMapAndMarkers: TryMap turns a failing record into a dead letter
// with the BadInput's reason, and marker records set their channel's
// watermark and idleness without flowing on as records.
func TestTryMapAndMarkers(t *testing.T) {
	type ev struct {
		ts   etime.Time
		mark string // "", "wm" or "idle"
	}
	opts := weir.DefaultOptions()
	opts.Deterministic = true
	env, _ := weir.NewEnv(opts)
	var dead []weir.DeadLetter
	env.OnDeadLetter(func(d weir.DeadLetter) { dead = append(dead, d) })
	raw := weir.FromSlice(env, []string{"1000", "x", "wm:9999", "3000", "12000", "oops", "wm:30000"})
	evs := weir.TryMap(raw, func(s string) (ev, error) {
		if w, ok := strings.CutPrefix(s, "wm:"); ok {
			var n int64
			fmt.Sscan(w, &n)
			return ev{ts: etime.Time(n), mark: "wm"}, nil
		}
		var n int64
		if _, err := fmt.Sscan(s, &n); err != nil {
			if s == "oops" {
				return ev{}, errors.New("plain error")
			}
			return ev{}, &weir.BadInput{Reason: "not_a_number", Detail: s}
		}
		return ev{ts: etime.Time(n)}, nil
	})
	ws := weir.WatermarkStrategy[ev]{Timestamp: func(e ev, _ etime.Time) etime.Time { return e.ts }}
	ws.Generator = weir.Punctuated(func(e ev) etime.Time { return e.ts }, func(ev, etime.Time) (etime.Time, bool) { return 0, false }).Generator
	ws = ws.WithMarkers(func(e ev) (weir.Marker, bool) {
		return weir.Marker{Watermark: e.ts}, e.mark == "wm"
	}).WithEveryRecord()
	stamped := weir.AssignTimestamps(evs, ws)
	tw, _ := window.Tumbling(10_000, 0)
	out := weir.Aggregate(weir.Window(weir.KeyBy(stamped, func(ev) string { return "k" }), tw, weir.WindowOptions{LateOutput: true}),
		weir.Sum(func(e ev) int64 { return 1 }))
	res := weir.Collect(out.Results)
	late := weir.Collect(out.Late)
	rep, err := env.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// 1000 is in [0,10000), which fires at marker 9999 with one record; 3000
	// then arrives too late; 12000 fires at the marker 30000.
	var got []string
	for _, r := range res.Items() {
		got = append(got, fmt.Sprintf("%v %v %d wm=%d", r.Window, r.Firing, r.Value, r.Watermark))
	}
	want := []string{"[0,10000) on_time 1 wm=9999", "[10000,20000) on_time 1 wm=30000"}
	if !slices.Equal(got, want) || len(late.Items()) != 1 || late.Items()[0].Record.ts != 3000 {
		t.Fatalf("results %q late %v", got, late.Items())
	}
	if len(dead) != 2 || dead[0].Reason != "not_a_number" || dead[0].Record != "x" || dead[1].Reason != "map_failed" || rep.DeadLetters != 2 {
		t.Fatalf("dead letters %+v", dead)
	}
	// Markers are not records: 3 records reached the window.
	if c := rep.Total(); c.RecordsIn != 3 {
		t.Fatalf("window saw %d records, want 3", c.RecordsIn)
	}
}

// TestFlatMapTimedLate: a result at or behind the watermark its record
// arrived at goes to late, on its subtask, and is not passed on; the
// others are, with FlatMapTimed's timestamps.
func TestFlatMapTimedLate(t *testing.T) {
	env, err := weir.NewEnv(weir.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	// Watermarks after every record, 1 behind its time: 10 -> 9, 20 ->
	// 19, then 5 arrives at 19.
	in := weir.AssignTimestamps(weir.FromSlice(env, []etime.Time{10, 20, 5, 30}), weir.BoundedOutOfOrderness(0, func(ts etime.Time) etime.Time { return ts }).WithEveryRecord())
	var late []string
	out := weir.FlatMapTimedLate(in, func(ts etime.Time, v etime.Time, emit func(etime.Time, string)) {
		emit(ts, fmt.Sprint("at ", v))
		emit(ts+15, fmt.Sprint("later ", v))
	}, func(sub weir.Subtask) func(etime.Time, string) {
		return func(ts etime.Time, v string) {
			late = append(late, fmt.Sprintf("%s %d (subtask %d)", v, ts, sub.Index))
		}
	})
	got := weir.Collect(out)
	if _, err := env.Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	lines := got.Items()
	if want := []string{"at 10", "later 10", "at 20", "later 20", "later 5", "at 30", "later 30"}; !slices.Equal(lines, want) {
		t.Errorf("passed on %q, want %q", lines, want)
	}
	if want := []string{"at 5 5 (subtask 0)"}; !slices.Equal(late, want) {
		t.Errorf("late %q, want %q", late, want)
	}
}

// TestFlatMapTimed: results take the timestamps f gives them, never
// earlier than their record's, and a window downstream windows them by
// those: a record at 9 moved to 10 lands in the next tumbling window.
func TestFlatMapTimed(t *testing.T) {
	env, err := weir.NewEnv(weir.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	in := weir.AssignTimestamps(weir.FromSlice(env, []etime.Time{1, 9, 15}), weir.Monotonous(func(ts etime.Time) etime.Time { return ts }).WithEveryRecord())
	moved := weir.FlatMapTimed(in, func(ts etime.Time, v etime.Time, emit func(etime.Time, etime.Time)) {
		emit(ts+1, v)   // later: kept
		emit(ts-100, v) // earlier: raised to ts
	})
	ten, _ := window.Tumbling(10, 0)
	res := weir.Aggregate(weir.Window(weir.KeyBy(moved, func(etime.Time) int { return 0 }), ten, weir.WindowOptions{}), weir.Sum(func(etime.Time) int64 { return 1 }))
	got := weir.Collect(res.Results)
	if _, err := env.Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, r := range got.Items() {
		lines = append(lines, fmt.Sprintf("%v %d", r.Window, r.Value))
	}
	// [0,10): 1 at 2 and at 1, 9 at 9; [10,20): 9 at 10, 15 at 16 and 15.
	if want := []string{"[0,10) 3", "[10,20) 3"}; !slices.Equal(lines, want) {
		t.Errorf("got %q, want %q", lines, want)
	}
}
