package weir_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/window"
)

// txnStore is the durable side of a transactional system that outlives
// the sinks writing to it (a database, a broker): committed output, and
// pre-committed epochs not yet committed.
type txnStore struct {
	mu        sync.Mutex
	committed []string
	pre       map[int64]preEpoch
}

// preEpoch is an epoch pre-committed by one sink (a producer session): only
// that sink's Commit, or a Recover, commits it.
type preEpoch struct {
	by    *txnSink
	lines []string
}

func (s *txnStore) visible() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.committed)
}

// commitUpTo makes the epochs up to e that by pre-committed (every sink's
// when by is nil) visible, oldest first.
func (s *txnStore) commitUpTo(e int64, by *txnSink) {
	for _, id := range slices.Sorted(maps.Keys(s.pre)) {
		if p := s.pre[id]; id <= e && (by == nil || p.by == by) {
			s.committed = append(s.committed, p.lines...)
			delete(s.pre, id)
		}
	}
}

// txnSink is a connector.Transactional sink of strings over a txnStore.
// After dieAt Commit calls it dies as a process would: that commit and
// every later call fail and change nothing.
type txnSink struct {
	st     *txnStore
	open   []string
	dieAt  int
	calls  int
	dead   bool
	writes int
	onDie  func()
}

var errDead = errors.New("txnSink: died")

func (s *txnSink) Write(_ context.Context, b []string) error {
	if s.dead {
		return errDead
	}
	s.writes++
	s.open = append(s.open, b...)
	return nil
}
func (s *txnSink) Flush(context.Context) error {
	if s.dead {
		return errDead
	}
	return nil
}
func (s *txnSink) Close() error { return nil }
func (s *txnSink) PreCommit(_ context.Context, epoch int64) ([]byte, error) {
	if s.dead {
		return nil, errDead
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	if s.st.pre == nil {
		s.st.pre = map[int64]preEpoch{}
	}
	s.st.pre[epoch] = preEpoch{by: s, lines: append(s.st.pre[epoch].lines, s.open...)}
	s.open = nil
	return strconv.AppendInt(nil, epoch, 10), nil
}
func (s *txnSink) Commit(_ context.Context, epoch int64) error {
	s.calls++
	if s.dieAt > 0 && s.calls >= s.dieAt {
		s.dead = true
		s.onDie()
	}
	if s.dead {
		return errDead
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	s.st.commitUpTo(epoch, s)
	return nil
}
func (s *txnSink) Abort(context.Context) error {
	if !s.dead {
		s.open = nil
	}
	return nil
}
func (s *txnSink) Recover(_ context.Context, epoch int64, state []byte) error {
	if state != nil && string(state) != strconv.FormatInt(epoch, 10) {
		return fmt.Errorf("recover(%d, %q): the state is not the epoch's", epoch, state)
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	s.st.commitUpTo(epoch, nil)
	clear(s.st.pre)
	s.open = nil
	return nil
}

var _ connector.Transactional = (*txnSink)(nil)

// sinkEvents are events with late and out-of-order ones, for the sink
// tests.
func sinkEvents(n int) []ckEvent {
	r := rand.New(rand.NewPCG(3, 4))
	var evs []ckEvent
	for i := range n {
		d := r.IntN(150)
		if r.IntN(15) == 0 {
			d = 300 + r.IntN(1500)
		}
		evs = append(evs, ckEvent{Key: r.IntN(200), TS: etime.Time(i/5 - d), V: 1})
	}
	return evs
}

// sinkJob windows evs with lateness (early, on-time and late firings) into
// sink, the results as lines.
func sinkJob(t *testing.T, evs []ckEvent, opts weir.Options, gate <-chan struct{}, sink connector.Sink[string], so weir.SinkOptions) *weir.Env {
	t.Helper()
	env, err := weir.NewEnv(opts)
	if err != nil {
		t.Fatal(err)
	}
	src := weir.AssignTimestamps(weir.FromSource[ckEvent](env, "slice", gatedSlice[ckEvent]{items: evs, hold: len(evs) / 2, gate: gate}, weir.SourceOptions{BacklogEvery: 1}),
		weir.BoundedOutOfOrderness(200*time.Millisecond, func(e ckEvent) etime.Time { return e.TS }).WithEveryRecord())
	tum, _ := window.Tumbling(1000, 0)
	out := weir.Aggregate(weir.Window(weir.KeyBy(src, func(e ckEvent) int { return e.Key }), tum,
		weir.WindowOptions{AllowedLateness: 500, LateOutput: true}), weir.Sum(func(e ckEvent) int64 { return e.V }))
	lastSink = weir.ToSink(weir.Map(out.Results, func(r window.Result[int, int64]) string { return fmt.Sprint(r) }), sink, so)
	return env
}

// lastSink is the SinkInfo of the newest sinkJob.
var lastSink *weir.SinkInfo

// uninterrupted runs sinkJob on evs with opts into a transactional sink
// and returns its store: the output every interrupted run must match.
func uninterrupted(t *testing.T, evs []ckEvent, opts weir.Options) *txnStore {
	t.Helper()
	st := &txnStore{}
	if _, err := sinkJob(t, evs, opts, closed(), &txnSink{st: st}, weir.SinkOptions{}).Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st
}

func closed() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// TestToSinkExactlyOnce kills a parallel job's sink between a checkpoint
// becoming durable and its commit (the process dies there), then restores
// from the newest checkpoint with another parallelism: the committed
// output is exactly, as a multiset, the uninterrupted run's.
func TestToSinkExactlyOnce(t *testing.T) {
	evs := sinkEvents(100_000)
	opts := weir.DefaultOptions()
	opts.Parallelism = 2
	want := uninterrupted(t, evs, opts)
	if len(want.visible()) < 1000 {
		t.Fatalf("the uninterrupted run committed %d lines", len(want.visible()))
	}

	for _, dieAt := range []int{1, 3} {
		got := &txnStore{}
		store := &memStore{}
		ctx, cancel := context.WithCancel(context.Background())
		gate := make(chan struct{})
		var once sync.Once
		opts.Checkpoint = weir.CheckpointOptions{Interval: 2 * time.Millisecond, Store: store,
			OnComplete: func(int64) { once.Do(func() { close(gate) }) }}
		defer time.AfterFunc(10*time.Second, func() { once.Do(func() { close(gate) }) }).Stop()
		dying := &txnSink{st: got, dieAt: dieAt, onDie: cancel}
		_, err := sinkJob(t, evs, opts, gate, dying, weir.SinkOptions{}).Execute(ctx)
		cancel()
		if !errors.Is(err, errDead) && !errors.Is(err, context.Canceled) {
			t.Fatalf("die at commit %d: the run returned %v, want the sink's error", dieAt, err)
		}
		if !dying.dead {
			t.Fatalf("die at commit %d: the run ended before", dieAt)
		}
		ids := slices.Sorted(maps.Keys(store.done))
		if len(ids) == 0 {
			t.Fatal("no checkpoint completed")
		}
		id := ids[len(ids)-1]
		opts.Parallelism = 3
		opts.Checkpoint = weir.CheckpointOptions{Restore: view(store.done[id]), NextID: id + 1}
		if _, err := sinkJob(t, evs, opts, closed(), &txnSink{st: got}, weir.SinkOptions{}).Execute(context.Background()); err != nil {
			t.Fatal(err)
		}
		opts.Parallelism = 2
		a, b := got.visible(), want.visible()
		slices.Sort(a)
		slices.Sort(b)
		if !slices.Equal(a, b) {
			t.Fatalf("die at commit %d, restored from checkpoint %d: %d lines committed, want %d", dieAt, id, len(a), len(b))
		}
	}
}

// TestToSinkDeterministic restores a deterministic job from every
// checkpoint, dying after the restore's first commit: the committed output
// is the uninterrupted run's, line for line and in order.
func TestToSinkDeterministic(t *testing.T) {
	evs := sinkEvents(20_000)
	opts := weir.DefaultOptions()
	opts.Deterministic = true
	opts.BatchSize = 64
	want := uninterrupted(t, evs, opts)
	store := &memStore{}
	first := &txnStore{}
	opts.Checkpoint = weir.CheckpointOptions{Interval: time.Nanosecond, Store: store}
	if _, err := sinkJob(t, evs, opts, closed(), &txnSink{st: first}, weir.SinkOptions{BatchSize: 7}).Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(first.visible(), want.visible()) {
		t.Fatalf("with checkpoints: %d lines, want the %d of a run without", len(first.visible()), len(want.visible()))
	}
	if now, peak := lastSink.Buffered(); now != 0 || peak == 0 || lastSink.Name != "sink" {
		t.Fatalf("sink %q buffered %d at the end (want 0), %d at the most (want > 0)", lastSink.Name, now, peak)
	}
	ids := slices.Sorted(maps.Keys(store.done))
	if len(ids) < 10 {
		t.Fatalf("%d checkpoints", len(ids))
	}
	// die runs the job until its k-th commit, where the process dies:
	// that checkpoint is durable, its output pre-committed and not yet
	// visible. It returns the output and the checkpoint.
	die := func(k int) (*txnStore, int64, map[string][]byte) {
		st, store2 := &txnStore{}, &memStore{}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		opts.Checkpoint = weir.CheckpointOptions{Interval: time.Nanosecond, Store: store2}
		_, err := sinkJob(t, evs, opts, closed(), &txnSink{st: st, dieAt: k, onDie: cancel}, weir.SinkOptions{}).Execute(ctx)
		if !errors.Is(err, errDead) && !errors.Is(err, context.Canceled) {
			t.Fatalf("dying at commit %d: the run returned %v", k, err)
		}
		done := slices.Sorted(maps.Keys(store2.done))
		id := done[len(done)-1]
		return st, id, store2.done[id]
	}
	for _, from := range []int{1, len(ids) / 3, 2 * len(ids) / 3} {
		// The first commit from here whose epoch holds output.
		k := from
		st, id, ck := die(k)
		for ; len(st.pre[id].lines) == 0 && k < len(ids); k++ {
			st, id, ck = die(k + 1)
		}
		if len(st.pre[id].lines) == 0 {
			t.Fatalf("no epoch from commit %d on holds output", from)
		}
		opts.Checkpoint = weir.CheckpointOptions{Restore: view(ck), NextID: id + 1}
		if _, err := sinkJob(t, evs, opts, closed(), &txnSink{st: st}, weir.SinkOptions{}).Execute(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := st.visible(); !slices.Equal(got, want.visible()) {
			t.Fatalf("died at commit %d, restored from checkpoint %d: %d lines, want %d in the same order", k, id, len(got), len(want.visible()))
		}
	}
}

// plainSink is a sink with no abilities; it fails its failAt-th Write.
type plainSink struct {
	mu      sync.Mutex
	lines   []string
	batches []int
	flushes int
	failAt  int
	closed  bool
}

var errWrite = errors.New("plainSink: disk full")

func (s *plainSink) Write(_ context.Context, b []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failAt > 0 && len(s.batches)+1 >= s.failAt {
		return errWrite
	}
	s.batches = append(s.batches, len(b))
	s.lines = append(s.lines, b...)
	return nil
}
func (s *plainSink) Flush(context.Context) error { s.flushes++; return nil }
func (s *plainSink) Close() error                { s.closed = true; return nil }

// TestToSinkPlain writes without checkpoints in batches no larger than
// BatchSize, flushes, closes, and gives the same lines as the
// transactional sink.
func TestToSinkPlain(t *testing.T) {
	evs := sinkEvents(20_000)
	opts := weir.DefaultOptions()
	opts.Parallelism = 2
	ref := uninterrupted(t, evs, opts)
	s := &plainSink{}
	if _, err := sinkJob(t, evs, opts, closed(), s, weir.SinkOptions{BatchSize: 100}).Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	if slices.Max(s.batches) > 100 || s.flushes == 0 || !s.closed {
		t.Fatalf("largest batch %d (want <= 100), %d flushes, closed %v", slices.Max(s.batches), s.flushes, s.closed)
	}
	a, b := slices.Clone(s.lines), ref.visible()
	slices.Sort(a)
	slices.Sort(b)
	if !slices.Equal(a, b) {
		t.Fatalf("%d lines, want %d", len(a), len(b))
	}
}

// TestToSinkFails: a sink's error fails the job with it as the cause,
// with and without checkpoints, in both executors, and the sink is closed.
func TestToSinkFails(t *testing.T) {
	evs := sinkEvents(20_000)
	for i := range 4 {
		ck := i%2 == 1
		opts := weir.DefaultOptions()
		opts.Parallelism = 2
		opts.Deterministic = i >= 2
		if ck {
			opts.Checkpoint = weir.CheckpointOptions{Interval: time.Millisecond, Store: &memStore{}}
		}
		s := &plainSink{failAt: 3}
		done := make(chan error, 1)
		go func() {
			_, err := sinkJob(t, evs, opts, closed(), s, weir.SinkOptions{BatchSize: 10, Guarantee: weir.AtLeastOnce}).Execute(context.Background())
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, errWrite) || !strings.Contains(err.Error(), `sink "sink": write`) {
				t.Fatalf("checkpoints %v, deterministic %v: Execute returned %v, want the sink's error", ck, opts.Deterministic, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("checkpoints %v: the job did not stop after its sink failed", ck)
		}
		if !s.closed {
			t.Fatalf("checkpoints %v: the failed sink was not closed", ck)
		}
	}
}

// TestToSinkRefusesPlain: with checkpoints, exactly once needs a
// transactional or idempotent sink; AtLeastOnce takes any.
func TestToSinkRefusesPlain(t *testing.T) {
	evs := sinkEvents(1000)
	opts := weir.DefaultOptions()
	opts.Checkpoint = weir.CheckpointOptions{Interval: time.Millisecond, Store: &memStore{}}
	_, err := sinkJob(t, evs, opts, closed(), &plainSink{}, weir.SinkOptions{}).Execute(context.Background())
	if err == nil || !strings.Contains(err.Error(), "AtLeastOnce") {
		t.Fatalf("a plain sink with checkpoints: %v, want a refusal naming AtLeastOnce", err)
	}
	s := &plainSink{}
	if _, err := sinkJob(t, evs, opts, closed(), s, weir.SinkOptions{Guarantee: weir.AtLeastOnce}).Execute(context.Background()); err != nil || len(s.lines) == 0 {
		t.Fatalf("AtLeastOnce: %v, %d lines", err, len(s.lines))
	}
}

// closeCounter counts its Close calls.
type closeCounter struct {
	plainSink
	closes int
}

func (s *closeCounter) Close() error { s.closes++; return nil }

// TestToSinkNamesAndClose: two sinks of one name are refused, and every
// sink is closed once, also when Execute refuses the job or runs twice.
func TestToSinkNamesAndClose(t *testing.T) {
	env, err := weir.NewEnv(weir.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	a, b := &closeCounter{}, &closeCounter{}
	src := weir.FromSlice(env, []string{"x", "y"})
	weir.ToSink(src, a, weir.SinkOptions{Name: "out"})
	weir.ToSink(src, b, weir.SinkOptions{Name: "out"})
	if _, err := env.Execute(context.Background()); err == nil || !strings.Contains(err.Error(), `two sinks are named "out"`) {
		t.Fatalf("two sinks named out: %v", err)
	}
	if a.closes != 1 {
		t.Fatalf("the accepted sink was closed %d times by a refused Execute, want 1", a.closes)
	}
	if _, err := env.Execute(context.Background()); !errors.Is(err, weir.ErrAlreadyRun) || a.closes != 1 {
		t.Fatalf("a second Execute: %v, %d closes", err, a.closes)
	}
	env, _ = weir.NewEnv(weir.DefaultOptions())
	c := &closeCounter{}
	info := weir.ToSink(weir.FromSlice(env, []string{"x"}), c, weir.SinkOptions{})
	if info.Name != "sink" {
		t.Fatalf("unnamed sink called %q", info.Name)
	}
	if _, err := env.Execute(context.Background()); err != nil || c.closes != 1 || len(c.lines) != 1 {
		t.Fatalf("%v, %d closes, %v", err, c.closes, c.lines)
	}
	if _, err := env.Execute(context.Background()); !errors.Is(err, weir.ErrAlreadyRun) || c.closes != 1 {
		t.Fatalf("a second Execute: %v, %d closes", err, c.closes)
	}
}

// TestToSinkAtLeastOnceEager: with checkpoints, an at-least-once sink
// without transactions gets its output as it comes, not at checkpoints
// (here none completes while the source is held), and everything by the
// end.
func TestToSinkAtLeastOnceEager(t *testing.T) {
	evs := sinkEvents(20_000)
	opts := weir.DefaultOptions()
	opts.Parallelism = 2
	ref := uninterrupted(t, evs, opts)
	opts.Checkpoint = weir.CheckpointOptions{Interval: time.Hour, Store: &memStore{}}
	s := &plainSink{}
	gate := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := sinkJob(t, evs, opts, gate, s, weir.SinkOptions{Guarantee: weir.AtLeastOnce}).Execute(context.Background())
		done <- err
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s.mu.Lock()
		n := len(s.lines)
		s.mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			close(gate)
			<-done
			t.Fatal("an at-least-once sink got nothing while no checkpoint completed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	a, b := slices.Clone(s.lines), ref.visible()
	slices.Sort(a)
	slices.Sort(b)
	if !slices.Equal(a, b) {
		t.Fatalf("%d lines, want %d", len(a), len(b))
	}
}
