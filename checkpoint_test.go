package weir_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/trigger"
	"github.com/weirstream/weir/window"
)

// memStore keeps every committed checkpoint in memory.
type memStore struct {
	mu   sync.Mutex
	done map[int64]map[string][]byte
}

type memPending struct {
	s     *memStore
	id    int64
	mu    sync.Mutex
	parts map[string][]byte
}

func (s *memStore) Begin(id int64) (weir.PendingCheckpoint, error) {
	return &memPending{s: s, id: id, parts: map[string][]byte{}}, nil
}
func (p *memPending) WritePart(name string, data []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, dup := p.parts[name]; dup {
		return fmt.Errorf("part %s written twice", name)
	}
	p.parts[name] = slices.Clone(data)
	return nil
}
func (p *memPending) Commit() error {
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	if p.s.done == nil {
		p.s.done = map[int64]map[string][]byte{}
	}
	p.s.done[p.id] = p.parts
	return nil
}
func (p *memPending) Abort() error { return nil }

// gatedSlice is FromSlice's source, except that its reader waits after the
// first hold items until gate is closed. reached, when set, is closed when
// the reader first waits at the gate (the job is built and running).
type gatedSlice[T any] struct {
	items   []T
	hold    int
	gate    <-chan struct{}
	reached chan struct{}
}

func (s gatedSlice[T]) Open(_ context.Context, ch, n int) (weir.SourceReader[T], error) {
	return &gatedReader[T]{s: s}, nil
}

type gatedReader[T any] struct {
	s       gatedSlice[T]
	pos     int
	waiting bool // reached is closed
}

func (r *gatedReader[T]) Read(_ context.Context, out weir.SourceOutput[T]) (weir.ReadStatus, error) {
	if r.pos >= len(r.s.items) {
		return weir.Done, nil
	}
	end := min(r.pos+256, len(r.s.items))
	if r.pos < r.s.hold {
		end = min(end, r.s.hold)
	} else {
		select {
		case <-r.s.gate:
		default:
			if r.s.reached != nil && !r.waiting {
				r.waiting = true
				close(r.s.reached)
			}
			return weir.Waiting, nil
		}
	}
	for ; r.pos < end; r.pos++ {
		out.Emit(etime.MinTime, r.s.items[r.pos])
	}
	return weir.Emitted, nil
}
func (r *gatedReader[T]) Close() error { return nil }
func (r *gatedReader[T]) SnapshotPosition() ([]byte, error) {
	return strconv.AppendInt(nil, int64(r.pos), 10), nil
}
func (r *gatedReader[T]) RestorePosition(pos []byte) error {
	n, err := strconv.Atoi(string(pos))
	if err != nil || n < 0 || n > len(r.s.items) {
		return fmt.Errorf("cannot resume at %q of %d items", pos, len(r.s.items))
	}
	r.pos = n
	return nil
}

// ckEveryPoll is a checkpoint clock under which an interval of 1ns has
// passed at every look.
func ckEveryPoll() clock.Clock { return clock.NewStepping(time.UnixMilli(0), time.Nanosecond) }

// TestCheckpointIntervalOnFakeClock: a parallel job whose Options.Clock is
// a fake clock takes its checkpoints when the fake clock passes the
// interval, not when the wall clock does: none while the fake clock stands
// 1m short of the interval (an hour), one once it is advanced past it.
func TestCheckpointIntervalOnFakeClock(t *testing.T) {
	evs := make([]ckEvent, 2000)
	for i := range evs {
		evs[i] = ckEvent{Key: i % 7, TS: etime.Time(i), V: 1}
	}
	fake := clock.NewFake(time.UnixMilli(1_000_000))
	gate, reached := make(chan struct{}), make(chan struct{})
	var once sync.Once
	// Should no checkpoint complete, the run goes on after 10s, to fail.
	defer time.AfterFunc(10*time.Second, func() { once.Do(func() { close(gate) }) }).Stop()
	opts := weir.DefaultOptions()
	opts.Parallelism = 2
	opts.Clock = fake
	store := &memStore{}
	opts.Checkpoint = weir.CheckpointOptions{Interval: time.Hour, Store: store,
		OnComplete: func(int64) { once.Do(func() { close(gate) }) }}
	env, err := weir.NewEnv(opts)
	if err != nil {
		t.Fatal(err)
	}
	src := weir.AssignTimestamps(weir.FromSource[ckEvent](env, "slice", gatedSlice[ckEvent]{items: evs, hold: len(evs) / 2, gate: gate, reached: reached}, weir.SourceOptions{}),
		weir.BoundedOutOfOrderness(0, func(e ckEvent) etime.Time { return e.TS }).WithEveryRecord())
	tum, _ := window.Tumbling(100, 0)
	var n atomic.Int64
	weir.ForEachSerial(weir.Aggregate(weir.Window(weir.KeyBy(src, func(e ckEvent) int { return e.Key }), tum, weir.WindowOptions{}),
		weir.Sum(func(e ckEvent) int64 { return e.V })).Results, func(etime.Time, window.Result[int, int64]) { n.Add(1) })
	// The driver goroutine moves the fake clock once the job runs; the
	// test waits for it (ended tells it the run is over if it never
	// started reading).
	shortc, ended := make(chan weir.CheckpointStats, 1), make(chan struct{})
	go func() {
		defer close(shortc)
		select {
		case <-reached: // the job is built: its coordinator measures from the fake clock's start
		case <-ended:
			return
		}
		fake.Advance(59 * time.Minute)
		time.Sleep(150 * time.Millisecond) // more than a tick of the trigger (100ms)
		shortc <- env.CheckpointStats()
		fake.Advance(2 * time.Minute)
	}()
	_, err = env.Execute(context.Background())
	close(ended)
	short, ok := <-shortc
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatal("the source never reached its gate")
	}
	if short.Completed != 0 || short.InProgress {
		t.Fatalf("59m into an interval of 1h on the fake clock: %+v", short)
	}
	if len(store.done) != 1 {
		t.Fatalf("%d checkpoints once the fake clock passed the interval, want 1", len(store.done))
	}
	cs := env.CheckpointStats()
	if want := time.UnixMilli(1_000_000).Add(time.Hour + time.Minute); !cs.LastCompleted.Equal(want) || cs.LastDuration != 0 {
		t.Fatalf("CheckpointStats %v, %v: want the fake clock's %v and 0 (it did not move during the checkpoint)", cs.LastCompleted, cs.LastDuration, want)
	}
	if n.Load() == 0 {
		t.Fatal("no window results")
	}
}

// TestCheckpointIntervalStepped: the deterministic executor looks at the
// fake clock before each poll: a stepped job takes no checkpoint while its
// fake clock stands, and one at the first poll after the clock passed the
// interval.
func TestCheckpointIntervalStepped(t *testing.T) {
	evs := make([]ckEvent, 600)
	for i := range evs {
		evs[i] = ckEvent{Key: i % 5, TS: etime.Time(i), V: 1}
	}
	fake := clock.NewFake(time.UnixMilli(0))
	gate := make(chan struct{})
	opts := weir.DefaultOptions()
	opts.Deterministic, opts.Parallelism, opts.Clock = true, 2, fake
	store := &memStore{}
	opts.Checkpoint = weir.CheckpointOptions{Interval: time.Minute, Store: store}
	env, err := weir.NewEnv(opts)
	if err != nil {
		t.Fatal(err)
	}
	src := weir.AssignTimestamps(weir.FromSource[ckEvent](env, "slice", gatedSlice[ckEvent]{items: evs, hold: 300, gate: gate}, weir.SourceOptions{}),
		weir.BoundedOutOfOrderness(0, func(e ckEvent) etime.Time { return e.TS }).WithEveryRecord())
	weir.ForEachSerial(src, func(etime.Time, ckEvent) {})
	s, err := env.Step()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	quiet := func() {
		t.Helper()
		if _, err := s.RunUntilQuiet(); err != nil {
			t.Fatal(err)
		}
	}
	quiet()
	fake.Advance(time.Minute - time.Millisecond)
	quiet()
	if cs := env.CheckpointStats(); cs.Completed != 0 {
		t.Fatalf("a checkpoint before the fake clock passed the interval: %+v", cs)
	}
	fake.Advance(time.Millisecond)
	quiet()
	if cs := env.CheckpointStats(); cs.Completed != 1 || len(store.done) != 1 {
		t.Fatalf("once the fake clock passed the interval: %+v, %d stored; want 1", cs, len(store.done))
	}
	quiet() // the clock stands: no second one
	close(gate)
	fake.Advance(time.Minute)
	if done, err := s.RunUntilQuiet(); err != nil || !done {
		t.Fatalf("RunUntilQuiet = %v, %v", done, err)
	}
	if len(store.done) != 2 {
		t.Fatalf("%d checkpoints, want 2 (one per interval passed)", len(store.done))
	}
}

// view is a restored checkpoint: parts named "stage/index/name".
type view map[string][]byte

func (v view) Parts(stage, name string) map[int][]byte {
	out := map[int][]byte{}
	for k, b := range v {
		var s, n string
		var i int
		if _, err := fmt.Sscanf(k, "%s", &s); err != nil {
			continue
		}
		// stage/index/name, where name may contain '/'
		var rest string
		if c, err := fmt.Sscanf(k[len(stage):], "/%d/%s", &i, &rest); err == nil && c == 2 && k[:len(stage)] == stage {
			n = rest
			if n == name {
				out[i] = b
			}
		}
	}
	return out
}

type ckEvent struct {
	Key int
	TS  etime.Time
	V   int64
}

// checkpointJob builds the test job: tumbling windows with early firings
// and lateness, and sessions, over late and out-of-order events, with
// parallelism par; it returns the collected outputs.
func checkpointJob(t *testing.T, evs []ckEvent, par int, ck weir.CheckpointOptions) (*weir.Env, func() []string) {
	opts := weir.DefaultOptions()
	opts.Deterministic = true
	opts.Parallelism = par
	opts.BatchSize = 64
	opts.Checkpoint = ck
	env, err := weir.NewEnv(opts)
	if err != nil {
		t.Fatal(err)
	}
	src := weir.AssignTimestamps(weir.FromSlice(env, evs),
		weir.BoundedOutOfOrderness(200*time.Millisecond, func(e ckEvent) etime.Time { return e.TS }).WithEveryRecord())
	keyed := weir.KeyBy(src, func(e ckEvent) int { return e.Key })
	tum, _ := window.Tumbling(1000, 0)
	cont, _ := trigger.Continuous(300)
	a := weir.Aggregate(weir.Window(keyed, tum, weir.WindowOptions{Name: "tumbling", Trigger: cont, AllowedLateness: 500, LateOutput: true}),
		weir.Sum(func(e ckEvent) int64 { return e.V }))
	ses, _ := window.Session(150)
	b := weir.Reduce(weir.Window(keyed, ses, weir.WindowOptions{Name: "sessions", AllowedLateness: 300}),
		func(x, y ckEvent) ckEvent { x.V += y.V; return x })
	var mu sync.Mutex
	var out []string
	add := func(s string) { mu.Lock(); out = append(out, s); mu.Unlock() }
	weir.ForEachSerial(a.Results, func(_ etime.Time, r window.Result[int, int64]) { add(fmt.Sprint("T ", r)) })
	weir.ForEachSerial(a.Late, func(_ etime.Time, l window.LateRecord[int, ckEvent]) {
		add(fmt.Sprint("L ", l.Key, l.Record, l.Watermark))
	})
	weir.ForEachSerial(b.Results, func(_ etime.Time, r window.Result[int, ckEvent]) {
		add(fmt.Sprint("S ", r.Key, r.Window, r.Firing, r.Pane, r.Value.V))
	})
	return env, func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(out) }
}

// TestCheckpointRestore takes a checkpoint before every poll of a
// deterministic run, then restores from each of them (with the same and
// with other parallelisms): the output before the checkpoint plus the
// restored run's output is exactly the uninterrupted run's, and so are the
// counters. No record is judged late differently after a restore.
func TestCheckpointRestore(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var evs []ckEvent
	for i := range 3000 {
		d := r.IntN(150)
		if r.IntN(15) == 0 {
			d = 300 + r.IntN(1500)
		}
		evs = append(evs, ckEvent{Key: r.IntN(25), TS: etime.Time(i*3 - d), V: int64(1 + r.IntN(9))})
	}
	store := &memStore{}
	seen := map[int64]int{} // checkpoint id -> outputs so far
	var current func() []string
	env, outs := checkpointJob(t, evs, 2, weir.CheckpointOptions{Interval: time.Nanosecond, Clock: ckEveryPoll(), Store: store,
		OnComplete: func(id int64) { seen[id] = len(current()) }})
	current = outs
	rep, err := env.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	full := outs()
	if len(store.done) < 20 {
		t.Fatalf("only %d checkpoints", len(store.done))
	}
	ids := slices.Sorted(maps.Keys(store.done))
	for _, id := range []int64{ids[0], ids[len(ids)/3], ids[len(ids)/2], ids[len(ids)-1]} {
		for _, par := range []int{2, 1, 4} {
			env2, outs2 := checkpointJob(t, evs, par, weir.CheckpointOptions{Restore: view(store.done[id]), NextID: id + 1})
			rep2, err := env2.Execute(context.Background())
			if err != nil {
				t.Fatalf("restore %d p%d: %v", id, par, err)
			}
			got := append(slices.Clone(full[:seen[id]]), outs2()...)
			want := slices.Clone(full)
			if par != 2 {
				// Another parallelism interleaves keys differently.
				slices.Sort(got)
				slices.Sort(want)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("restore from checkpoint %d with parallelism %d: %d lines, want %d", id, par, len(got), len(want))
			}
			if rep2.Total() != rep.Total() || rep2.DeadLetters != rep.DeadLetters || rep2.SourceRecords["slice"] != rep.SourceRecords["slice"] {
				t.Fatalf("restore %d p%d: counters %+v %v, want %+v %v", id, par, rep2.Total(), rep2.SourceRecords, rep.Total(), rep.SourceRecords)
			}
		}
	}
}

// TestCheckpointDirRestore runs the job of TestCheckpointRestore with the
// on-disk store of package checkpoint, as a Go program outside the module
// would, and restores from its newest checkpoint through Dir.View: the
// output before the checkpoint plus the restored run's is the full run's.
func TestCheckpointDirRestore(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var evs []ckEvent
	for i := range 600 {
		evs = append(evs, ckEvent{Key: r.IntN(10), TS: etime.Time(i*3 - r.IntN(150)), V: int64(1 + r.IntN(9))})
	}
	path := t.TempDir()
	dir, err := checkpoint.Open(path, checkpoint.Options{Meta: []byte("job v1")})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]int{} // checkpoint id -> outputs so far
	var current func() []string
	// Stop taking checkpoints halfway, so that the newest one is not the
	// end of the input.
	var halfway bool
	env, outs := checkpointJob(t, evs, 2, weir.CheckpointOptions{Interval: time.Nanosecond, Clock: ckEveryPoll(), Store: stopAt{dir, &halfway},
		OnComplete: func(id int64) { seen[id] = len(current()); halfway = id >= 4 }})
	current = outs
	rep, err := env.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	full := outs()
	if err := dir.Close(); err != nil {
		t.Fatal(err)
	}

	dir, err = checkpoint.Open(path, checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	cp, ok, err := dir.Latest()
	if err != nil || !ok {
		t.Fatalf("Latest = %v, %v", ok, err)
	}
	if string(cp.Meta) != "job v1" || seen[cp.ID] == 0 || seen[cp.ID] == len(full) {
		t.Fatalf("checkpoint %d: meta %q, %d of %d outputs before it", cp.ID, cp.Meta, seen[cp.ID], len(full))
	}
	v, err := dir.View(cp)
	if err != nil {
		t.Fatal(err)
	}
	env2, outs2 := checkpointJob(t, evs, 2, weir.CheckpointOptions{Restore: v, NextID: cp.ID + 1})
	rep2, err := env2.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := append(slices.Clone(full[:seen[cp.ID]]), outs2()...); !slices.Equal(got, full) {
		t.Fatalf("restore from checkpoint %d: %d lines, want %d", cp.ID, len(got), len(full))
	}
	if rep2.Total() != rep.Total() {
		t.Fatalf("restore from checkpoint %d: counters %+v, want %+v", cp.ID, rep2.Total(), rep.Total())
	}
}

// TestObservationAfterRun: what the Env hands out after a checkpointed
// run, in the root's own types: the checkpoint counts and their duration
// histogram, the graph's gates, each subtask's accounting.
func TestObservationAfterRun(t *testing.T) {
	evs := []ckEvent{{1, 100, 1}, {2, 900, 2}, {1, 1500, 3}, {2, 2600, 4}}
	store := &memStore{}
	env, _ := checkpointJob(t, evs, 2, weir.CheckpointOptions{Interval: time.Nanosecond, Clock: ckEveryPoll(), Store: store})
	if _, err := env.Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	cs := env.CheckpointStats()
	if cs.Completed == 0 || cs.Completed != int64(len(store.done)) || cs.InProgress || cs.InFlight.ID != 0 {
		t.Fatalf("CheckpointStats = %+v with %d checkpoints stored", cs, len(store.done))
	}
	if n := cs.Durations.Count(); n != uint64(cs.Completed) {
		t.Fatalf("%d checkpoint durations observed, want %d", n, cs.Completed)
	}
	par := map[string]int{} // the stages before, by name
	var gated int
	for _, s := range env.Graph() {
		for _, g := range s.Gates {
			base := 0
			for _, f := range g {
				if p, ok := par[f.Stage]; !ok || f.Par != p || f.Base != base {
					t.Fatalf("stage %s reads %+v; upstream stages %v", s.Name, f, par)
				}
				base += f.Par
				gated++
			}
		}
		par[s.Name] = s.Parallelism
	}
	if gated == 0 {
		t.Fatalf("Graph %+v: no stage reads another", env.Graph())
	}
	stats := env.SubtaskStats()
	var in int64
	for _, s := range stats {
		in += s.RecordsIn
	}
	if len(stats) == 0 || in == 0 {
		t.Fatalf("SubtaskStats = %+v", stats)
	}
}

// stopAt is a store that refuses checkpoints once *stop is set.
type stopAt struct {
	s    weir.CheckpointStore
	stop *bool
}

func (s stopAt) Begin(id int64) (weir.PendingCheckpoint, error) {
	if *s.stop {
		return nil, fmt.Errorf("no more checkpoints")
	}
	return s.s.Begin(id)
}

// epochSink collects outputs per subtask and remembers, per checkpoint,
// how far each subtask's output went when the barrier passed it.
type epochSink struct {
	mu    sync.Mutex
	out   map[weir.Subtask][]string
	marks map[int64]map[weir.Subtask]int
}

func newEpochSink(env *weir.Env) *epochSink {
	e := &epochSink{out: map[weir.Subtask][]string{}, marks: map[int64]map[weir.Subtask]int{}}
	env.OnBarrier(func(s weir.Subtask, id int64) {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.marks[id] == nil {
			e.marks[id] = map[weir.Subtask]int{}
		}
		e.marks[id][s] = len(e.out[s])
	})
	return e
}

func (e *epochSink) add(s weir.Subtask, line string) {
	e.mu.Lock()
	e.out[s] = append(e.out[s], line)
	e.mu.Unlock()
}

// upTo returns the outputs that belong to checkpoint id, and all outputs.
func (e *epochSink) upTo(id int64) (before, all []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for s, lines := range e.out {
		before = append(before, lines[:e.marks[id][s]]...)
		all = append(all, lines...)
	}
	return before, all
}

// TestCheckpointParallel checkpoints a parallel run every few
// milliseconds; restoring from a checkpoint (with another parallelism too)
// gives, with the outputs that belonged to it, exactly the uninterrupted
// run's outputs as a multiset.
func TestCheckpointParallel(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var evs []ckEvent
	for i := range 200_000 {
		d := r.IntN(150)
		if r.IntN(15) == 0 {
			d = 300 + r.IntN(1500)
		}
		evs = append(evs, ckEvent{Key: r.IntN(500), TS: etime.Time(i/5 - d), V: 1})
	}
	// The first run holds half-way until a checkpoint completes, so that
	// there is one to restore whatever the machine's speed; restored runs
	// read on.
	open := make(chan struct{})
	close(open)
	build := func(par int, ck weir.CheckpointOptions, gate <-chan struct{}) (*weir.Env, *epochSink) {
		opts := weir.DefaultOptions()
		opts.Parallelism = par
		opts.Checkpoint = ck
		env, err := weir.NewEnv(opts)
		if err != nil {
			t.Fatal(err)
		}
		sink := newEpochSink(env)
		src := weir.AssignTimestamps(weir.FromSource[ckEvent](env, "slice", gatedSlice[ckEvent]{items: evs, hold: len(evs) / 2, gate: gate}, weir.SourceOptions{BacklogEvery: 1}),
			weir.BoundedOutOfOrderness(200*time.Millisecond, func(e ckEvent) etime.Time { return e.TS }).WithEveryRecord())
		tum, _ := window.Tumbling(1000, 0)
		out := weir.Aggregate(weir.Window(weir.KeyBy(src, func(e ckEvent) int { return e.Key }), tum,
			weir.WindowOptions{AllowedLateness: 500, LateOutput: true}), weir.Sum(func(e ckEvent) int64 { return e.V }))
		weir.ForEachSubtask(out.Results, func(s weir.Subtask) func(etime.Time, window.Result[int, int64]) {
			return func(_ etime.Time, r window.Result[int, int64]) { sink.add(s, fmt.Sprint(r)) }
		})
		weir.ForEachSubtask(out.Late, func(s weir.Subtask) func(etime.Time, window.LateRecord[int, ckEvent]) {
			return func(_ etime.Time, l window.LateRecord[int, ckEvent]) { sink.add(s, fmt.Sprint("late ", l.Record)) }
		})
		return env, sink
	}
	store := &memStore{}
	gate := make(chan struct{})
	var once sync.Once
	// Should no checkpoint complete, the run goes on after 10s, to fail.
	defer time.AfterFunc(10*time.Second, func() { once.Do(func() { close(gate) }) }).Stop()
	env, sink := build(2, weir.CheckpointOptions{Interval: 2 * time.Millisecond, Store: store,
		OnComplete: func(int64) { once.Do(func() { close(gate) }) }}, gate)
	rep, err := env.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(store.done) == 0 {
		t.Fatal("the run ended without a checkpoint")
	}
	ids := slices.Sorted(maps.Keys(store.done))
	for _, id := range []int64{ids[0], ids[len(ids)-1]} {
		for _, par := range []int{2, 3} {
			env2, sink2 := build(par, weir.CheckpointOptions{Restore: view(store.done[id]), NextID: id + 1}, open)
			rep2, err := env2.Execute(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			before, all := sink.upTo(id)
			_, after := sink2.upTo(0)
			got := append(before, after...)
			slices.Sort(got)
			slices.Sort(all)
			if !slices.Equal(got, all) {
				t.Fatalf("checkpoint %d of %d, parallelism %d: %d lines, want %d", id, len(ids), par, len(got), len(all))
			}
			if rep2.Total() != rep.Total() {
				t.Fatalf("counters %+v, want %+v", rep2.Total(), rep.Total())
			}
		}
	}
}

// TestCheckpointRestoreConnect restores a job with a two-input stage
// (Connect): its combined watermark resumes too, so records keep their
// lateness across the restore.
func TestCheckpointRestoreConnect(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	var as, bs []ckEvent
	for i := range 3000 {
		d := r.IntN(100)
		if r.IntN(10) == 0 {
			d = 300 + r.IntN(1200)
		}
		e := ckEvent{Key: r.IntN(20), TS: etime.Time(i*3 - d), V: 1}
		if i%3 == 0 {
			bs = append(bs, e)
		} else {
			as = append(as, e)
		}
	}
	build := func(ck weir.CheckpointOptions) (*weir.Env, func() []string) {
		opts := weir.DefaultOptions()
		opts.Deterministic, opts.Parallelism, opts.BatchSize, opts.Checkpoint = true, 2, 32, ck
		env, err := weir.NewEnv(opts)
		if err != nil {
			t.Fatal(err)
		}
		stamp := func(s weir.Stream[ckEvent]) weir.Stream[ckEvent] {
			return weir.AssignTimestamps(s, weir.BoundedOutOfOrderness(100*time.Millisecond, func(e ckEvent) etime.Time { return e.TS }).WithEveryRecord())
		}
		both := weir.Connect(stamp(weir.FromSlice(env, as)), stamp(weir.FromSlice(env, bs)),
			func(e ckEvent) ckEvent { return e }, func(e ckEvent) ckEvent { e.V = 10; return e })
		tum, _ := window.Tumbling(500, 0)
		out := weir.Aggregate(weir.Window(weir.KeyBy(both, func(e ckEvent) int { return e.Key }), tum,
			weir.WindowOptions{AllowedLateness: 200, LateOutput: true}), weir.Sum(func(e ckEvent) int64 { return e.V }))
		var mu sync.Mutex
		var lines []string
		weir.ForEachSerial(out.Results, func(_ etime.Time, r window.Result[int, int64]) {
			mu.Lock()
			lines = append(lines, fmt.Sprint(r))
			mu.Unlock()
		})
		weir.ForEachSerial(out.Late, func(_ etime.Time, l window.LateRecord[int, ckEvent]) {
			mu.Lock()
			lines = append(lines, fmt.Sprint("late ", l.Record))
			mu.Unlock()
		})
		return env, func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(lines) }
	}
	store := &memStore{}
	seen := map[int64]int{}
	var cur func() []string
	env, outs := build(weir.CheckpointOptions{Interval: time.Nanosecond, Clock: ckEveryPoll(), Store: store, OnComplete: func(id int64) { seen[id] = len(cur()) }})
	cur = outs
	rep, err := env.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	full := outs()
	ids := slices.Sorted(maps.Keys(store.done))
	for _, id := range []int64{ids[len(ids)/3], ids[2*len(ids)/3]} {
		env2, outs2 := build(weir.CheckpointOptions{Restore: view(store.done[id]), NextID: id + 1})
		rep2, err := env2.Execute(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got := append(slices.Clone(full[:seen[id]]), outs2()...)
		if !slices.Equal(got, full) || rep2.Total() != rep.Total() {
			t.Fatalf("restore from %d: %d lines (want %d), counters %+v, want %+v", id, len(got), len(full), rep2.Total(), rep.Total())
		}
	}
}
