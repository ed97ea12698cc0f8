package weir_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/trigger"
	"github.com/weirstream/weir/window"
)

// spread is an exactly mergeable aggregate: count, sum, min and max.
type spread struct{ N, Sum, Min, Max int64 }

type spreadAgg struct{}

func (spreadAgg) CreateAccumulator() spread { return spread{} }
func (spreadAgg) Add(a spread, e pev) spread {
	return spreadAgg{}.Merge(a, spread{N: 1, Sum: e.V, Min: e.V, Max: e.V})
}
func (spreadAgg) Merge(a, b spread) spread {
	switch {
	case b.N == 0:
		return a
	case a.N == 0:
		return b
	}
	return spread{N: a.N + b.N, Sum: a.Sum + b.Sum, Min: min(a.Min, b.Min), Max: max(a.Max, b.Max)}
}
func (spreadAgg) Result(a spread) spread { return a }

// pev is an event whose WM, when set, is a punctuated watermark: the
// stream's newest timestamp so far minus its bound, every few records,
// so that a combiner gathers the records between two of them.
type pev struct {
	Key string
	TS  etime.Time
	V   int64
	WM  etime.Time
}

// skewedStream is randomStream's out-of-order stream with a hot key (a
// third to a half of the records) and watermarks every 1-40 records.
func skewedStream(r *rand.Rand, n int) []pev {
	out := make([]pev, n)
	now := etime.Time(r.IntN(5000) - 2500)
	maxTS := etime.MinTime
	hot := 30 + r.IntN(25)
	every := 1 + r.IntN(40)
	for i := range out {
		now += etime.Time(r.IntN(40))
		ts := now - etime.Time(r.IntN(300))
		switch p := r.IntN(100); {
		case p < 5:
			ts = now - etime.Time(300+r.IntN(3000))
		case p < 7:
			ts = now - etime.Time(5000+r.IntN(20000))
		}
		k := "hot"
		if r.IntN(100) >= hot {
			k = fmt.Sprintf("k%d", r.IntN(12))
		}
		maxTS = max(maxTS, ts)
		out[i] = pev{Key: k, TS: ts, V: int64(r.IntN(1000) - 300)}
		if r.IntN(every) == 0 {
			out[i].WM = maxTS - 300
		}
	}
	return out
}

type twoPhaseJob struct {
	asg      window.Assigner
	trig     trigger.Trigger
	lateness etime.Duration
	side     bool
}

func (j twoPhaseJob) String() string {
	t := "default"
	if j.trig != nil {
		t = j.trig.String()
	}
	return fmt.Sprintf("%v/%s/L%d/side=%v", j.asg, t, j.lateness, j.side)
}

// spreadWindow is the tests' job: events with punctuated watermarks,
// keyed by Key, in windows of asg with o, aggregated by spreadAgg.
func spreadWindow(env *weir.Env, events []pev, asg window.Assigner, o weir.WindowOptions) weir.WindowOutput[string, pev, spread] {
	s := weir.AssignTimestamps(weir.FromSlice(env, events), weir.Punctuated(func(e pev) etime.Time { return e.TS },
		func(e pev, _ etime.Time) (etime.Time, bool) { return e.WM, e.WM != 0 }))
	return weir.Aggregate(weir.Window(weir.KeyBy(s, func(e pev) string { return e.Key }), asg, o), spreadAgg{})
}

func spreadLine(r window.Result[string, spread]) string {
	return fmt.Sprintf("%s %v %v %d %v %+v", r.Key, r.Window, r.Firing, r.Pane, r.Watermark, r.Value)
}

type twoPhaseOut struct {
	results, late []string
	counters      weir.WindowCounters
}

func runTwoPhase(t *testing.T, j twoPhaseJob, events []pev, twoPhase, det bool, par, batch int) twoPhaseOut {
	t.Helper()
	opts := weir.DefaultOptions()
	opts.Deterministic = det
	opts.Parallelism = par
	opts.BatchSize = batch
	env, err := weir.NewEnv(opts)
	if err != nil {
		t.Fatal(err)
	}
	o := spreadWindow(env, events, j.asg, weir.WindowOptions{
		Trigger: j.trig, AllowedLateness: j.lateness, LateOutput: j.side, PartialOutput: j.side, TwoPhase: twoPhase})
	res := weir.Collect(o.Results)
	late := weir.Collect(o.Late)
	rep, err := env.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out twoPhaseOut
	for _, r := range res.Items() {
		out.results = append(out.results, spreadLine(r))
	}
	for _, l := range late.Items() {
		out.late = append(out.late, fmt.Sprintf("%s %d %d %v %v %v", l.Key, l.Timestamp, l.Record.V, l.Windows, l.Watermark, l.Reason))
	}
	if !det || par > 1 {
		// Across subtasks only each key's order is fixed.
		slices.Sort(out.results)
		slices.Sort(out.late)
	}
	out.counters = rep.Total()
	return out
}

// TestTwoPhaseEqualsOnePhase checks, on random out-of-order streams with
// a hot key, that a two-phase window gives exactly the one-phase
// window's results (every firing, pane and watermark), too-late and
// partially late records, and counters: with the deterministic executor
// at parallelism 1 (in order) and 2, and on the parallel runtime at
// parallelism 1 to 3 with random batch sizes.
func TestTwoPhaseEqualsOnePhase(t *testing.T) {
	seeds := 60
	if testing.Short() {
		seeds = 15
	}
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 11))
		var j twoPhaseJob
		var err error
		if r.IntN(2) == 0 {
			j.asg, err = window.Tumbling(etime.Duration(200+r.IntN(2000)), etime.Duration(r.IntN(100)))
		} else {
			slide := etime.Duration(100 + r.IntN(500))
			j.asg, err = window.Sliding(slide*etime.Duration(1+r.IntN(5))+etime.Duration(r.IntN(3)*50), slide, 0)
		}
		if err != nil {
			t.Fatal(err)
		}
		switch r.IntN(3) {
		case 1:
			if j.trig, err = trigger.Continuous(etime.Duration(50 + r.IntN(400))); err != nil {
				t.Fatal(err)
			}
		case 2:
			j.trig = trigger.Final()
		}
		j.lateness = etime.Duration(r.IntN(3) * 700)
		j.side = r.IntN(2) == 0
		events := skewedStream(r, 500+r.IntN(2000))
		t.Run(fmt.Sprintf("seed%d/%v", seed, j), func(t *testing.T) {
			for _, par := range []int{1, 2} {
				want := runTwoPhase(t, j, events, false, true, par, 256)
				got := runTwoPhase(t, j, events, true, true, par, 256)
				compareTwoPhase(t, fmt.Sprintf("deterministic par=%d", par), want, got)
				c := got.counters
				if c.RecordsIn != c.Accepted+c.LateSideOutput+c.LateDropped+c.NoTimestamp || c.RecordsIn != int64(len(events)) {
					t.Fatalf("conservation: %d events, %+v", len(events), c)
				}
				if par == 1 {
					for _, p := range []int{1, 2, 3} {
						batch := 1 + r.IntN(300)
						compareTwoPhase(t, fmt.Sprintf("parallel par=%d batch=%d", p, batch), sortedOut(want), runTwoPhase(t, j, events, true, false, p, batch))
					}
				}
			}
		})
	}
}

func sortedOut(o twoPhaseOut) twoPhaseOut {
	o.results, o.late = slices.Sorted(slices.Values(o.results)), slices.Sorted(slices.Values(o.late))
	return o
}

func compareTwoPhase(t *testing.T, run string, want, got twoPhaseOut) {
	t.Helper()
	if !slices.Equal(want.results, got.results) {
		t.Fatalf("%s: results differ\none-phase:\n%s\ntwo-phase:\n%s", run, strings.Join(want.results, "\n"), strings.Join(got.results, "\n"))
	}
	if !slices.Equal(want.late, got.late) {
		t.Fatalf("%s: late records differ\none-phase:\n%s\ntwo-phase:\n%s", run, strings.Join(want.late, "\n"), strings.Join(got.late, "\n"))
	}
	if want.counters != got.counters {
		t.Fatalf("%s: counters differ\none-phase %+v\ntwo-phase %+v", run, want.counters, got.counters)
	}
}

// scripted is a source whose channels each emit a list of steps, one
// step per Read.
type scripted [][][]pev

func (s scripted) Open(_ context.Context, ch, _ int) (weir.SourceReader[pev], error) {
	return &scriptedReader{steps: s[ch]}, nil
}

type scriptedReader struct{ steps [][]pev }

func (r *scriptedReader) Read(_ context.Context, out weir.SourceOutput[pev]) (weir.ReadStatus, error) {
	if len(r.steps) == 0 {
		return weir.Done, nil
	}
	for _, e := range r.steps[0] {
		out.Emit(etime.MinTime, e)
	}
	r.steps = r.steps[1:]
	return weir.Emitted, nil
}
func (r *scriptedReader) Close() error { return nil }

// TestTwoPhaseBundleLateAtWindow: an input that was idle comes back
// behind the window's watermark, which the other input moved on, so a
// bundle its combiner made of records on time there is late at the
// window. The window adds them one by one: a late firing per record, as
// without two phases.
func TestTwoPhaseBundleLateAtWindow(t *testing.T) {
	idle := pev{Key: "idle"}
	var ahead []pev
	for ts := etime.Time(100); ts < 9000; ts += 700 {
		ahead = append(ahead, pev{Key: "a", TS: ts, V: 1})
	}
	ahead = append(ahead, pev{Key: "wm", WM: 9500})
	src := scripted{
		{{idle}, {}, {{Key: "hot", TS: 2100, V: 1}, {Key: "hot", TS: 2200, V: 2}, {Key: "hot", TS: 2300, V: 4}, {Key: "hot", TS: 9800, V: 8}, {Key: "wm", WM: 9900}}},
		{ahead, {}, {}, {{Key: "wm", WM: 20000}}},
	}
	asg, err := window.Tumbling(1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	run := func(twoPhase bool) twoPhaseOut {
		opts := weir.DefaultOptions()
		opts.Deterministic = true
		env, err := weir.NewEnv(opts)
		if err != nil {
			t.Fatal(err)
		}
		s := weir.AssignTimestamps(weir.FromSource[pev](env, "script", src, weir.SourceOptions{Channels: 2}),
			weir.Punctuated(func(e pev) etime.Time { return e.TS }, func(pev, etime.Time) (etime.Time, bool) { return 0, false }).
				WithMarkers(func(e pev) (weir.Marker, bool) {
					switch e.Key {
					case "idle":
						return weir.Marker{Idle: true}, true
					case "wm":
						return weir.Marker{Watermark: e.WM}, true
					}
					return weir.Marker{}, false
				}))
		o := weir.Aggregate(weir.Window(weir.KeyBy(s, func(e pev) string { return e.Key }), asg, weir.WindowOptions{
			AllowedLateness: 20000, LateOutput: true, TwoPhase: twoPhase}), spreadAgg{})
		res := weir.Collect(o.Results)
		rep, err := env.Execute(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var out twoPhaseOut
		for _, r := range res.Items() {
			out.results = append(out.results, spreadLine(r))
		}
		out.counters = rep.Total()
		return out
	}
	want, got := run(false), run(true)
	compareTwoPhase(t, "idle input", want, got)
	late := 0
	for _, r := range got.results {
		if strings.HasPrefix(r, "hot [2000,3000) late") {
			late++
		}
	}
	if late != 3 || got.counters.AcceptedLate != 3 {
		t.Fatalf("want 3 late firings of the hot key's window and 3 records accepted late, got %d and %+v:\n%s", late, got.counters, strings.Join(got.results, "\n"))
	}
}

// TestTwoPhaseRestore takes a checkpoint before every poll of a
// deterministic two-phase run, then restores from several of them: the
// output before the checkpoint plus the restored run's is the one-phase
// run's, and so are the counters. After a restore the window's
// watermark is the checkpoint's while a combiner has seen no watermark
// yet, so a bundle may be late at the window and must bring its records.
func TestTwoPhaseRestore(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 5))
	// After a checkpoint at the watermark 4000, two late records of one
	// key and window: a bundle the window must take record by record.
	late := []pev{{Key: "hot", TS: 100, V: 1}, {Key: "a", TS: 5000, V: 1, WM: 4000},
		{Key: "hot", TS: 150, V: 2}, {Key: "hot", TS: 160, V: 4}, {Key: "a", TS: 6000, V: 1, WM: 5000}}
	for _, c := range []struct {
		events []pev
		batch  int
	}{{late, 2}, {skewedStream(r, 3000), 64}} {
		twoPhaseRestore(t, c.events, c.batch)
	}
}

func twoPhaseRestore(t *testing.T, events []pev, batch int) {
	asg, err := window.Tumbling(700, 0)
	if err != nil {
		t.Fatal(err)
	}
	type recorder struct {
		mu  sync.Mutex
		out []string
	}
	add := func(r *recorder, line string) { r.mu.Lock(); r.out = append(r.out, line); r.mu.Unlock() }
	lines := func(r *recorder) []string { r.mu.Lock(); defer r.mu.Unlock(); return slices.Clone(r.out) }
	run := func(twoPhase bool, ck weir.CheckpointOptions, rec *recorder) weir.WindowCounters {
		opts := weir.DefaultOptions()
		opts.Deterministic = true
		opts.Parallelism = 2
		opts.BatchSize = batch
		opts.Checkpoint = ck
		env, err := weir.NewEnv(opts)
		if err != nil {
			t.Fatal(err)
		}
		o := spreadWindow(env, events, asg, weir.WindowOptions{AllowedLateness: 1400, LateOutput: true, TwoPhase: twoPhase})
		weir.ForEachSerial(o.Results, func(_ etime.Time, r window.Result[string, spread]) { add(rec, spreadLine(r)) })
		weir.ForEachSerial(o.Late, func(_ etime.Time, l window.LateRecord[string, pev]) {
			add(rec, fmt.Sprintf("late %s %d %d %v", l.Key, l.Timestamp, l.Record.V, l.Watermark))
		})
		rep, err := env.Execute(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return rep.Total()
	}
	one := &recorder{}
	oneTotal := run(false, weir.CheckpointOptions{}, one)
	want := slices.Sorted(slices.Values(lines(one)))
	store := &memStore{}
	seen := map[int64]int{}
	two := &recorder{}
	total := run(true, weir.CheckpointOptions{Interval: time.Nanosecond, Clock: ckEveryPoll(), Store: store,
		OnComplete: func(id int64) { seen[id] = len(lines(two)) }}, two)
	if total != oneTotal {
		t.Fatalf("counters %+v, one-phase %+v", total, oneTotal)
	}
	full := lines(two)
	if !slices.Equal(slices.Sorted(slices.Values(full)), want) {
		t.Fatal("the two-phase run's output differs from the one-phase run's")
	}
	ids := slices.Sorted(maps.Keys(store.done))
	if len(ids) < 2 {
		t.Fatalf("only %d checkpoints", len(ids))
	}
	for _, id := range ids {
		rest := &recorder{}
		total2 := run(true, weir.CheckpointOptions{Restore: view(store.done[id]), NextID: id + 1}, rest)
		got := append(slices.Clone(full[:seen[id]]), lines(rest)...)
		if !slices.Equal(slices.Sorted(slices.Values(got)), want) {
			t.Fatalf("restore from checkpoint %d: %d lines, want %d", id, len(got), len(want))
		}
		if total2 != oneTotal {
			t.Fatalf("restore from checkpoint %d: counters %+v, want %+v", id, total2, oneTotal)
		}
	}
}
