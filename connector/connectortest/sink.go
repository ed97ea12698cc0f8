package connectortest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
)

// Rec is one record of the sink suite, which Sink.Make turns into the
// sink's item: a result revision (upsert sinks), a line or message (append
// sinks), a late record or dead letter (by-id sinks).
type Rec struct {
	// ID identifies the record: the key and window of a result's row, a
	// record's source position.
	ID   string `json:"id"`
	Run  int64  `json:"run"`
	Pane int64  `json:"pane"`
	// Retract: a retraction of ID's row (upsert sinks only).
	Retract bool  `json:"retract,omitempty"`
	Value   int64 `json:"value"`
}

func (r Rec) String() string {
	if r.Retract {
		return fmt.Sprintf("%s run %d pane %d retract", r.ID, r.Run, r.Pane)
	}
	return fmt.Sprintf("%s run %d pane %d = %d", r.ID, r.Run, r.Pane, r.Value)
}

// Kind is how a sink's output keeps what it is written.
type Kind uint8

const (
	// Append keeps every record, in order (a file, a topic). An append
	// sink must be connector.Transactional: otherwise a replay after a
	// restore writes some records twice.
	Append Kind = iota
	// Upsert keeps one row per ID, the newest revision by (Run, Pane); a
	// retraction deletes the row unless it holds a newer revision.
	Upsert
	// ByID keeps each ID once, whatever is written again under it.
	ByID
)

func (k Kind) String() string {
	return [...]string{"append", "upsert", "by-id"}[k]
}

// Sink describes a sink under test.
type Sink[T any] struct {
	Kind Kind
	// New starts a test on a fresh, empty output (a file, a table, a
	// topic of its own). open opens a sink on that output; the suite
	// calls it again after a simulated crash, when the new sink must find
	// what the old one left. read returns what the output's readers see
	// now: for Append the records in order, for Upsert and ByID one per
	// ID in any order.
	New func(t testing.TB) (open func(t testing.TB) connector.Sink[T], read func(t testing.TB) []Rec)
	// Make turns a Rec into the sink's item.
	Make func(r Rec) T
	// Break, when set, makes s's output fail (its connection closed, its
	// database gone), so that its next Write or Flush fails.
	Break func(t testing.TB, s connector.Sink[T])
}

// RunSink runs the sink suite: every sink writes, flushes and closes; a
// failing sink fails a job with its error; then the rules of the sink's
// kind and abilities (see the subtests).
func RunSink[T any](t *testing.T, s Sink[T]) {
	ctx := context.Background()
	recs := func(from, to int) []Rec {
		var out []Rec
		for i := from; i < to; i++ {
			out = append(out, Rec{ID: fmt.Sprintf("r%04d", i), Run: 1, Pane: int64(i % 3), Value: int64(i * 7)})
		}
		return out
	}
	_, txn := s.open(t).(connector.Transactional)
	if s.Kind == Append && !txn {
		t.Fatal("an append sink must be connector.Transactional: a replay after a restore would write some records twice")
	}

	t.Run("write-flush-close", func(t *testing.T) {
		open, read, closeSink := s.start(t)
		k := open(t)
		all := recs(0, 250)
		at := 0
		for _, n := range []int{1, 7, 100, 142} {
			s.write(t, k, all[at:at+n])
			at += n
		}
		s.commit(t, k, 1)
		s.expect(t, read, all, "after writing 250 records in batches of 1, 7, 100 and 142 and a flush")
		if err := closeSink(k); err != nil {
			t.Fatalf("Close: %v", err)
		}
		s.expect(t, read, all, "after Close")
	})

	t.Run("fails-the-job", func(t *testing.T) {
		if s.Break == nil {
			t.Skip("Sink.Break is not set: the connector has no way to break its output in a test")
		}
		open, _ := s.New(t) // the job closes it
		k := open(t)
		s.Break(t, k)
		env, err := weir.NewEnv(weir.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		weir.ToSink(weir.Map(weir.FromSlice(env, recs(0, 100)), s.Make), k, weir.SinkOptions{Name: "under-test", Guarantee: weir.AtLeastOnce})
		_, err = env.Execute(ctx)
		// The job must fail from a call of the run (Write, Flush, a
		// commit), not only from Close.
		if err == nil || !strings.Contains(err.Error(), `sink "under-test": write`) && !strings.Contains(err.Error(), `sink "under-test": flush`) &&
			!strings.Contains(err.Error(), `sink "under-test": pre-commit`) && !strings.Contains(err.Error(), `sink "under-test": commit`) {
			t.Fatalf("a job writing to a broken sink returned %v, want the error of its Write, Flush or commit", err)
		}
	})

	t.Run("copies-what-it-keeps", func(t *testing.T) {
		// The engine reuses a batch once Write returns: a sink that keeps
		// the slice or its items' buffers would write what came after.
		open, read, closeSink := s.start(t)
		k := open(t)
		want := recs(0, 40)
		batch := make([]T, len(want))
		for i, r := range want {
			batch[i] = s.Make(r)
		}
		if err := k.Write(ctx, batch); err != nil {
			t.Fatalf("Write: %v", err)
		}
		for i := range batch {
			batch[i] = s.Make(Rec{ID: "overwritten", Run: 9, Pane: 9, Value: -1})
		}
		s.commit(t, k, 1)
		s.expect(t, read, want, "after the engine reused the batch of a Write")
		closeSink(k)
	})

	t.Run("replay-leaves-the-same-output", func(t *testing.T) {
		// Epochs 1 and 2 are committed, 3 is written and flushed when the
		// process dies; the restore from checkpoint 2 writes 3 again.
		open, read, closeSink := s.start(t)
		k := open(t)
		var state2 []byte
		for e := int64(1); e <= 2; e++ {
			s.write(t, k, recs(int(e-1)*10, int(e)*10))
			state2 = s.commit(t, k, e)
		}
		s.write(t, k, recs(20, 30))
		if err := k.Flush(ctx); err != nil {
			t.Fatalf("Flush: %v", err)
		}
		closeSink(k)
		k = open(t)
		s.recover(t, k, 2, state2)
		if txn {
			s.expect(t, read, recs(0, 20), "after a restore from checkpoint 2 (epoch 3 was written and flushed before the crash)")
		}
		s.write(t, k, recs(20, 30))
		s.commit(t, k, 3)
		s.expect(t, read, recs(0, 30), "after epoch 3 was written again")
		closeSink(k)
	})

	t.Run("crash-between-pre-commit-and-commit", func(t *testing.T) {
		if !txn {
			t.Skip("not connector.Transactional")
		}
		for _, durable := range []bool{true, false} {
			// Epoch 1 is committed; epoch 2 pre-committed when the process
			// dies. durable: checkpoint 2 completed, and the restore is
			// from it; otherwise from checkpoint 1.
			open, read, closeSink := s.start(t)
			k := open(t)
			s.write(t, k, recs(0, 10))
			state1 := s.commit(t, k, 1)
			s.write(t, k, recs(10, 20))
			if err := k.Flush(ctx); err != nil {
				t.Fatalf("Flush: %v", err)
			}
			state2, err := k.(connector.Transactional).PreCommit(ctx, 2)
			if err != nil {
				t.Fatalf("PreCommit(2): %v", err)
			}
			closeSink(k)
			k = open(t)
			if cr, ok := k.(connector.CommitReporter); ok && durable {
				// The sink cannot finish epoch 2 after the crash: it
				// must say so, and the restore is from checkpoint 1.
				e, ok, err := cr.Committed(ctx)
				if err != nil || !ok || e != 1 {
					t.Fatalf("Committed after a crash between PreCommit(2) and Commit(2) = %d, %v, %v; want 1", e, ok, err)
				}
				durable = false
			}
			if durable {
				s.recover(t, k, 2, state2)
				s.expect(t, read, recs(0, 20), "after a restore from checkpoint 2, pre-committed and not committed before the crash")
			} else {
				s.recover(t, k, 1, state1)
				s.expect(t, read, recs(0, 10), "after a restore from checkpoint 1 (checkpoint 2 pre-committed but never durable)")
				s.write(t, k, recs(10, 20))
				s.commit(t, k, 2)
				s.expect(t, read, recs(0, 20), "after epoch 2 was written again")
			}
			s.write(t, k, recs(20, 30))
			s.commit(t, k, 3)
			s.expect(t, read, recs(0, 30), "after the next epoch")
			closeSink(k)
		}
	})

	t.Run("failed-checkpoint-then-next", func(t *testing.T) {
		if !txn {
			t.Skip("not connector.Transactional")
		}
		// Checkpoint 1 fails after its pre-commit: PreCommit(2) and
		// Commit(2) cover both epochs.
		open, read, closeSink := s.start(t)
		k := open(t)
		s.write(t, k, recs(0, 10))
		if _, err := k.(connector.Transactional).PreCommit(ctx, 1); err != nil {
			t.Fatalf("PreCommit(1): %v", err)
		}
		s.write(t, k, recs(10, 20))
		s.commit(t, k, 2)
		s.expect(t, read, recs(0, 20), "after PreCommit(1), then PreCommit(2) and Commit(2)")
		s.write(t, k, recs(20, 25))
		s.commit(t, k, 0) // the end of the input: epoch 0
		s.expect(t, read, recs(0, 25), "after the end of the input (epoch 0)")
		closeSink(k)
	})

	t.Run("idempotent", func(t *testing.T) {
		if _, ok := s.open(t).(connector.Idempotent); !ok {
			if s.Kind != Append {
				t.Fatalf("a %s sink must be connector.Idempotent", s.Kind)
			}
			t.Skip("not connector.Idempotent")
		}
		open, read, closeSink := s.start(t)
		k := open(t)
		s.write(t, k, recs(0, 50))
		if err := k.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		s.write(t, k, recs(0, 50)) // a replay
		s.commit(t, k, 1)
		s.expect(t, read, recs(0, 50), "after writing the same 50 records twice")
		closeSink(k)
	})

	t.Run("upsert-keeps-the-newest", func(t *testing.T) {
		if s.Kind != Upsert {
			t.Skip("not an upsert sink")
		}
		open, read, closeSink := s.start(t)
		k := open(t)
		in := []Rec{
			{ID: "a", Run: 1, Pane: 1, Value: 1}, {ID: "a", Run: 1, Pane: 3, Value: 3}, {ID: "a", Run: 1, Pane: 2, Value: 2},
			{ID: "b", Run: 1, Pane: 5, Value: 5}, {ID: "b", Run: 2, Pane: 0, Value: 20}, {ID: "b", Run: 1, Pane: 9, Value: 9},
			{ID: "c", Run: 1, Pane: 1, Value: 1}, {ID: "c", Run: 1, Pane: 2, Retract: true},
			{ID: "d", Run: 1, Pane: 3, Value: 3}, {ID: "d", Run: 1, Pane: 2, Retract: true},
			{ID: "e", Run: 1, Pane: 0, Value: 4},
		}
		s.write(t, k, in)
		s.commit(t, k, 1)
		want := []Rec{{ID: "a", Run: 1, Pane: 3, Value: 3}, {ID: "b", Run: 2, Pane: 0, Value: 20}, {ID: "d", Run: 1, Pane: 3, Value: 3}, {ID: "e", Run: 1, Pane: 0, Value: 4}}
		s.expect(t, read, want, "after revisions out of order and retractions (c retracted by a newer pane; d's retraction older than its row)")
		s.write(t, k, in) // a replay
		s.commit(t, k, 2)
		s.expect(t, read, want, "after a replay of the same revisions")
		closeSink(k)
	})
}

// start is New for one test: it also returns the close of a sink the
// test opened, and closes at the test's end the ones a failed test left
// open (each sink is closed once).
func (s Sink[T]) start(t *testing.T) (open func(testing.TB) connector.Sink[T], read func(testing.TB) []Rec, closeSink func(connector.Sink[T]) error) {
	newSink, read := s.New(t)
	var opened []connector.Sink[T]
	closed := map[int]bool{}
	t.Cleanup(func() {
		for i, k := range opened {
			if !closed[i] {
				k.Close()
			}
		}
	})
	open = func(tb testing.TB) connector.Sink[T] {
		k := newSink(tb)
		opened = append(opened, k)
		return k
	}
	closeSink = func(k connector.Sink[T]) error {
		for i, o := range opened {
			if o == k && !closed[i] {
				closed[i] = true
				return k.Close()
			}
		}
		return nil
	}
	return open, read, closeSink
}

// open opens a sink on a fresh output, to ask what abilities it has.
func (s Sink[T]) open(t *testing.T) connector.Sink[T] {
	open, _ := s.New(t)
	k := open(t)
	t.Cleanup(func() { k.Close() })
	return k
}

func (s Sink[T]) write(t *testing.T, k connector.Sink[T], recs []Rec) {
	t.Helper()
	items := make([]T, len(recs))
	for i, r := range recs {
		items[i] = s.Make(r)
	}
	if err := k.Write(context.Background(), items); err != nil {
		t.Fatalf("Write of %d records: %v", len(recs), err)
	}
}

// commit ends epoch e as the engine does at a checkpoint: Flush, then for
// a Transactional sink PreCommit(e) and Commit(e); it returns the state.
func (s Sink[T]) commit(t *testing.T, k connector.Sink[T], e int64) []byte {
	t.Helper()
	ctx := context.Background()
	if err := k.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	tx, ok := k.(connector.Transactional)
	if !ok {
		return nil
	}
	state, err := tx.PreCommit(ctx, e)
	if err != nil {
		t.Fatalf("PreCommit(%d): %v", e, err)
	}
	if err := tx.Commit(ctx, e); err != nil {
		t.Fatalf("Commit(%d): %v", e, err)
	}
	return state
}

// recover is the engine's restore from checkpoint e: Recover for a
// Transactional sink, nothing otherwise.
func (s Sink[T]) recover(t *testing.T, k connector.Sink[T], e int64, state []byte) {
	t.Helper()
	if tx, ok := k.(connector.Transactional); ok {
		if err := tx.Recover(context.Background(), e, state); err != nil {
			t.Fatalf("Recover(%d): %v", e, err)
		}
	}
}

// expect compares what read returns with want, in order for an append
// sink and by ID otherwise.
func (s Sink[T]) expect(t *testing.T, read func(testing.TB) []Rec, want []Rec, when string) {
	t.Helper()
	got := read(t)
	want = slices.Clone(want)
	if s.Kind != Append {
		by := func(a, b Rec) int { return cmp.Compare(a.ID, b.ID) }
		slices.SortFunc(got, by)
		slices.SortFunc(want, by)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: the output holds %d records, want %d\n got: %v\nwant: %v", when, len(got), len(want), head(got), head(want))
	}
}

// head is the first records of rs, for messages.
func head(rs []Rec) []Rec {
	if len(rs) > 12 {
		return rs[:12]
	}
	return rs
}
