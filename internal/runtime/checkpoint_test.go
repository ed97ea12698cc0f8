package runtime

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/etime"
)

type nopStore struct{ committed []int64 }

type nopPending struct {
	s  *nopStore
	id int64
}

func (s *nopStore) Begin(id int64) (checkpoint.Pending, error) { return nopPending{s, id}, nil }
func (p nopPending) WritePart(string, []byte) error            { return nil }
func (p nopPending) Commit() error                             { p.s.committed = append(p.s.committed, p.id); return nil }
func (p nopPending) Abort() error                              { return nil }

type nopCtrl struct{ finished int }

func (nopCtrl) Watermark(etime.Time) {}
func (nopCtrl) Status(bool)          {}
func (c *nopCtrl) Finish()           { c.finished++ }

// alignSubtask builds one subtask with a gate of two channels whose
// handler records which channel's batches it processed.
func alignSubtask(t *testing.T) (*Subtask, *[]int, *nopStore) {
	t.Helper()
	store := &nopStore{}
	j := NewJob(Options{Deterministic: true, Checkpoint: &CheckpointOptions{Interval: time.Hour, Store: store}})
	s := &Stage{job: j, Name: "s", Par: 1, gates: []*Gate{{Channels: 2}}}
	j.stages = []*Stage{s}
	st := &Subtask{stage: s, job: j, ended: []int{0}}
	var seen []int
	st.handlers = []GateHandler{func(from int, b any) { seen = append(seen, from) }}
	j.coord.Store(newCoordinator(j, j.opts.Checkpoint))
	return st, &seen, store
}

// TestStaleBarrier: a barrier of an aborted checkpoint that arrives while
// a newer checkpoint aligns does not cancel the newer alignment; the newer
// checkpoint completes and nothing stays held.
func TestStaleBarrier(t *testing.T) {
	st, seen, store := alignSubtask(t)
	c := st.job.coord.Load()
	// Checkpoint 1 starts and is abandoned; 2 starts.
	c.trigger(time.Now())
	c.mu.Lock()
	c.abortLocked(nil)
	c.mu.Unlock()
	if id := c.trigger(time.Now()); id != 2 {
		t.Fatalf("trigger: %d", id)
	}
	st.deliver(envelope{gate: 0, from: 1, barrier: 2}) // the newer barrier on channel 1
	st.deliver(envelope{gate: 0, from: 1, b: "held"})  // held: channel 1 is aligned
	st.deliver(envelope{gate: 0, from: 0, barrier: 1}) // a stale barrier on channel 0
	st.deliver(envelope{gate: 0, from: 0, b: "data"})  // channel 0 still flows
	st.deliver(envelope{gate: 0, from: 0, barrier: 2}) // alignment completes
	if len(store.committed) != 1 || store.committed[0] != 2 {
		t.Fatalf("committed %v, want [2]", store.committed)
	}
	if len(st.align.stash) != 0 || len(*seen) != 2 {
		t.Fatalf("held %d, processed %v", len(st.align.stash), *seen)
	}
}

// TestEndDuringAlignment: a channel that ends inside an alignment, while
// the held batches end the other channel, finishes the subtask once.
func TestEndDuringAlignment(t *testing.T) {
	st, _, _ := alignSubtask(t)
	ctrl := &nopCtrl{}
	st.ctrl = ctrl
	st.handlers = []GateHandler{func(from int, b any) {
		if b == "end" {
			st.inputEnd(0)
		}
	}}
	c := st.job.coord.Load()
	c.trigger(time.Now())
	st.deliver(envelope{gate: 0, from: 1, barrier: 1})
	st.deliver(envelope{gate: 0, from: 1, b: "end"}) // held
	st.deliver(envelope{gate: 0, from: 0, b: "end"}) // ends channel 0 inside the alignment
	if ctrl.finished != 1 {
		t.Fatalf("Finish called %d times, want 1", ctrl.finished)
	}
}

// TestCheckpointStatsWhilePreCommitBlocks: while a pre-commit hook (a
// sink making the epoch durable) blocks, CheckpointStats answers at once
// with the checkpoint in flight and its phase; it used to wait for the
// coordinator's lock, which the hook's caller holds.
func TestCheckpointStatsWhilePreCommitBlocks(t *testing.T) {
	st, _, store := alignSubtask(t)
	j := st.job
	entered, release := make(chan struct{}), make(chan struct{})
	j.PreCommit(func(int64, func(string, []byte) error) error {
		close(entered)
		<-release
		return nil
	})
	began := time.Now()
	if id := j.coord.Load().trigger(began); id != 1 {
		t.Fatalf("trigger: %d", id)
	}
	if s := j.CheckpointStats(); s.InFlight.ID != 1 || s.InFlight.Phase != PhaseSnapshots || !s.InProgress || s.InFlight.Started != began {
		t.Fatalf("after the trigger: %+v", s)
	}
	delivered := make(chan struct{})
	go func() {
		defer close(delivered)
		st.deliver(envelope{gate: 0, from: 0, barrier: 1})
		st.deliver(envelope{gate: 0, from: 1, barrier: 1}) // the snapshot, then the blocking pre-commit
	}()
	<-entered
	got := make(chan CheckpointStats, 1)
	go func() { got <- j.CheckpointStats() }()
	select {
	case s := <-got:
		f := s.InFlight
		if f.ID != 1 || f.Phase != PhasePreCommit || f.Acked != 1 || f.Written != 1 || f.Subtasks != 1 || !s.InProgress || s.Completed != 0 {
			t.Errorf("during the pre-commit: %+v", s)
		}
	case <-time.After(5 * time.Second):
		t.Error("CheckpointStats waited for the blocked pre-commit")
	}
	close(release)
	<-delivered
	if s := j.CheckpointStats(); s.Completed != 1 || s.InProgress || s.InFlight.ID != 0 || len(store.committed) != 1 {
		t.Fatalf("after the commit: %+v, committed %v", s, store.committed)
	}
}

// TestOnCompleteWithoutTheLock: OnComplete (a Kafka source committing its
// offsets, a Kafka sink its transaction, over the network) runs after
// the coordinator's lock is released: while it blocks, the lock is free
// (RequestCheckpoint and due answer at once), but no checkpoint starts
// until it returns, so listeners are told in order, each once.
func TestOnCompleteWithoutTheLock(t *testing.T) {
	st, _, _ := alignSubtask(t)
	j := st.job
	c := j.coord.Load()
	entered, release := make(chan int64, 4), make(chan struct{})
	var told []int64
	c.opts.OnComplete = func(id int64) {
		told = append(told, id)
		entered <- id
		<-release
	}
	if id := c.trigger(time.Now()); id != 1 {
		t.Fatalf("trigger: %d", id)
	}
	delivered := make(chan struct{})
	go func() {
		defer close(delivered)
		st.deliver(envelope{gate: 0, from: 0, barrier: 1})
		st.deliver(envelope{gate: 0, from: 1, barrier: 1}) // completes, then blocks in OnComplete
	}()
	if id := <-entered; id != 1 {
		t.Fatalf("OnComplete(%d), want 1", id)
	}
	answered := make(chan [2]bool, 1)
	go func() { answered <- [2]bool{j.RequestCheckpoint(), c.due(time.Now())} }()
	select {
	case a := <-answered:
		if !a[0] || a[1] {
			t.Errorf("during OnComplete: RequestCheckpoint %v (want true), due %v (want false)", a[0], a[1])
		}
	case <-time.After(5 * time.Second):
		t.Fatal("RequestCheckpoint waited for the blocked OnComplete")
	}
	if id := c.trigger(time.Now()); id != 0 {
		t.Fatalf("checkpoint %d started during OnComplete", id)
	}
	close(release)
	<-delivered
	if !c.due(time.Now()) {
		t.Fatal("the checkpoint asked for is not due once OnComplete returned")
	}
	if id := c.trigger(time.Now()); id != 2 {
		t.Fatalf("the next trigger: %d, want 2", id)
	}
	if len(told) != 1 || told[0] != 1 {
		t.Fatalf("OnComplete told %v, want [1]", told)
	}
}

// TestLastCheckpoint: a graceful stop's last checkpoint is named before it
// starts (after one in progress) and no periodic checkpoint follows it,
// so the next run resumes from the one the stop message names (a trial
// saw "took checkpoint 7" and a resume from 8).
func TestLastCheckpoint(t *testing.T) {
	st, _, _ := alignSubtask(t)
	j := st.job
	c := j.coord.Load()
	if id := c.trigger(time.Now()); id != 1 {
		t.Fatalf("trigger: %d", id)
	}
	want, ok := j.RequestLastCheckpoint() // while 1 is in progress
	if !ok || want != 2 {
		t.Fatalf("RequestLastCheckpoint: %d %v, want 2", want, ok)
	}
	st.deliver(envelope{gate: 0, from: 0, barrier: 1})
	st.deliver(envelope{gate: 0, from: 1, barrier: 1})
	if !c.due(time.Now()) {
		t.Fatal("the last checkpoint is not due")
	}
	if id := c.trigger(time.Now()); id != want {
		t.Fatalf("the last checkpoint started as %d, want %d", id, want)
	}
	st.deliver(envelope{gate: 0, from: 0, barrier: 2})
	st.deliver(envelope{gate: 0, from: 1, barrier: 2})
	if later := time.Now().Add(time.Hour); c.due(later) {
		t.Error("a periodic checkpoint is due after the last one")
	}
	if j.RequestCheckpoint() && !c.due(time.Now()) {
		t.Error("an explicit request after the last one is not due")
	}
}

// TestRequestCheckpointAfter: asking for a checkpoint after id is a no-op
// once a later checkpoint has begun (it covers what followed id's
// barrier), and asks as RequestCheckpoint does otherwise.
func TestRequestCheckpointAfter(t *testing.T) {
	st, _, _ := alignSubtask(t)
	j := st.job
	c := j.coord.Load()
	if !j.RequestCheckpointAfter(-1) || !c.due(time.Now()) {
		t.Fatal("a request with -1 did not ask")
	}
	if id := c.trigger(time.Now()); id != 1 {
		t.Fatalf("trigger: %d", id)
	}
	st.deliver(envelope{gate: 0, from: 0, barrier: 1})
	st.deliver(envelope{gate: 0, from: 1, barrier: 1})
	// Output after no barrier yet is covered by checkpoint 1, which has
	// begun; output after 1's barrier is not.
	if !j.RequestCheckpointAfter(0) || c.due(time.Now()) {
		t.Fatal("a request after 0, which checkpoint 1 covers, made one due")
	}
	if !j.RequestCheckpointAfter(1) || !c.due(time.Now()) {
		t.Fatal("a request after 1 did not make one due")
	}
	if id := c.trigger(time.Now()); id != 2 {
		t.Fatalf("the next trigger: %d, want 2", id)
	}
}

// TestRequestCheckpointAfterLast: after a graceful stop's last
// checkpoint is asked for, a firing's request starts none after it.
func TestRequestCheckpointAfterLast(t *testing.T) {
	st, _, _ := alignSubtask(t)
	j := st.job
	c := j.coord.Load()
	if _, ok := j.RequestLastCheckpoint(); !ok {
		t.Fatal("no last checkpoint")
	}
	if id := c.trigger(time.Now()); id != 1 {
		t.Fatalf("trigger: %d", id)
	}
	st.deliver(envelope{gate: 0, from: 0, barrier: 1})
	st.deliver(envelope{gate: 0, from: 1, barrier: 1})
	if j.RequestCheckpointAfter(1) || c.due(time.Now()) {
		t.Fatal("a firing's request made a checkpoint due after the last")
	}
}

// TestMinPause: once a checkpoint has ended, neither a firing's request
// nor the interval starts the next one before MinPause has passed; a
// RequestCheckpoint (a stop's) does.
func TestMinPause(t *testing.T) {
	st, _, _ := alignSubtask(t)
	j := st.job
	c := j.coord.Load()
	c.opts.MinPause = time.Minute
	if !j.RequestCheckpointAfter(-1) || !c.due(time.Now()) {
		t.Fatal("before any checkpoint, a firing's request is not due at once")
	}
	if id := c.trigger(time.Now()); id != 1 {
		t.Fatalf("trigger: %d", id)
	}
	st.deliver(envelope{gate: 0, from: 0, barrier: 1})
	st.deliver(envelope{gate: 0, from: 1, barrier: 1})
	var end time.Time
	for deadline := time.Now().Add(5 * time.Second); end.IsZero(); {
		c.mu.Lock()
		end = c.mu.lastEnd
		c.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("checkpoint 1 did not end")
		}
		time.Sleep(time.Millisecond)
	}
	if !j.RequestCheckpointAfter(1) {
		t.Fatal("a firing's request after checkpoint 1 was refused")
	}
	for _, d := range []time.Duration{0, time.Second, time.Minute - time.Millisecond} {
		if c.due(end.Add(d)) {
			t.Fatalf("a checkpoint is due %v after the last ended, within the min pause", d)
		}
	}
	if !c.due(end.Add(time.Minute)) {
		t.Fatal("the firing's checkpoint is not due once the min pause has passed")
	}
	if !j.RequestCheckpoint() || !c.due(end.Add(time.Second)) {
		t.Fatal("a RequestCheckpoint waits for the min pause")
	}
}

// TestFinishedWarned: once a source subtask finished its input while
// another reads on, the checkpoints that can no longer start are warned
// of, once, after an interval: a failure would resume from the last one.
// When every source finished (the job drains to its end), nothing is.
func TestFinishedWarned(t *testing.T) {
	for _, c := range []struct {
		finished int // of the two source subtasks
		want     int // warnings
	}{{1, 1}, {2, 0}} {
		var logs bytes.Buffer
		j := NewJob(Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Checkpoint: &CheckpointOptions{Interval: time.Minute, Store: &nopStore{}}})
		j.stages = []*Stage{{job: j, Name: "source", Par: 2, src: &SourceSpec{}}}
		co := newCoordinator(j, j.opts.Checkpoint)
		start := co.clk.Now()
		for range c.finished {
			co.finished(true)
		}
		for _, at := range []time.Duration{time.Second, 2 * time.Minute, 3 * time.Minute} {
			if co.due(start.Add(at)) {
				t.Fatalf("a checkpoint is due %v after a subtask finished", at)
			}
		}
		if n := strings.Count(logs.String(), "no checkpoint since a subtask finished its input"); n != c.want {
			t.Errorf("%d of 2 sources finished: warned %d times, want %d:\n%s", c.finished, n, c.want, logs.String())
		}
	}
}
