// Package connectortest is the conformance suite of weir sources: every
// connector's tests run it over an input the connector holds, checking
// that its readers open, read every record exactly once, bound what one
// read emits (backpressure), resume exactly from a checkpointed position,
// and release everything on close.
package connectortest

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/etime"
)

// Source describes a source under test.
type Source[T any] struct {
	// New returns a fresh source over the input, which holds Records
	// records; the source must be bounded (end at the input's end).
	New func(t testing.TB) connector.Source[T]
	// Records is the number of records in the input.
	Records int
	// ID identifies a record, for the exactly-once checks.
	ID func(v T) string
	// MaxPerRead bounds what one Read may emit; default 100,000.
	MaxPerRead int
	// Timeout bounds each phase; default 30 s.
	Timeout time.Duration
}

// Run runs the suite. Readers are opened as channel 0 of 1, and opened
// and read with the (sub)test's context.
func Run[T any](t *testing.T, s Source[T]) {
	if s.MaxPerRead == 0 {
		s.MaxPerRead = 100_000
	}
	if s.Timeout == 0 {
		s.Timeout = 30 * time.Second
	}
	t.Run("read-all", func(t *testing.T) {
		r := open(t, s)
		got := readUntil(t, s, r, func(o *output[T]) bool { return false })
		if err := r.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		exactlyOnce(t, s, got)
	})
	t.Run("restart", func(t *testing.T) {
		cr := func(r connector.Reader[T]) connector.CheckpointedReader {
			c, ok := r.(connector.CheckpointedReader)
			if !ok {
				t.Fatal("the reader is not a connector.CheckpointedReader: jobs with checkpoints refuse it")
			}
			return c
		}
		for _, cut := range []int{0, s.Records / 3, s.Records} {
			r := open(t, s)
			first := readUntil(t, s, r, func(o *output[T]) bool { return len(o.recs) >= cut })
			pos, err := cr(r).SnapshotPosition()
			if err != nil {
				t.Fatalf("cut %d: SnapshotPosition: %v", cut, err)
			}
			if err := r.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			r2 := open(t, s)
			if err := cr(r2).RestorePosition(pos); err != nil {
				t.Fatalf("cut %d: RestorePosition: %v", cut, err)
			}
			rest := readUntil(t, s, r2, func(o *output[T]) bool { return false })
			if err := r2.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			exactlyOnce(t, s, append(first, rest...))
		}
	})
	t.Run("close-releases", func(t *testing.T) {
		before := runtime.NumGoroutine()
		r := open(t, s)
		readUntil(t, s, r, func(o *output[T]) bool { return len(o.recs) > 0 })
		if err := r.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Fatalf("%d goroutines after Close, %d before Open:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

func open[T any](t *testing.T, s Source[T]) connector.Reader[T] {
	t.Helper()
	r, err := s.New(t).Open(t.Context(), 0, 1)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return r
}

// readUntil reads until the reader is done or stop holds after a read;
// each Read must emit at most MaxPerRead records.
func readUntil[T any](t *testing.T, s Source[T], r connector.Reader[T], stop func(*output[T]) bool) []T {
	t.Helper()
	o := &output[T]{}
	deadline := time.Now().Add(s.Timeout)
	for !stop(o) {
		if time.Now().After(deadline) {
			t.Fatalf("read %d of %d records in %v", len(o.recs), s.Records, s.Timeout)
		}
		n := len(o.recs)
		st, err := r.Read(t.Context(), o)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		if got := len(o.recs) - n; got > s.MaxPerRead {
			t.Fatalf("one Read emitted %d records, more than %d: a reader must bound its reads (backpressure)", got, s.MaxPerRead)
		}
		switch st {
		case connector.Done:
			return o.recs
		case connector.Waiting:
			time.Sleep(time.Millisecond)
		}
	}
	return o.recs
}

func exactlyOnce[T any](t *testing.T, s Source[T], got []T) {
	t.Helper()
	seen := map[string]int{}
	for _, v := range got {
		seen[s.ID(v)]++
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("record %s read %d times", id, n)
		}
	}
	if len(seen) != s.Records {
		t.Fatalf("read %d distinct records, want %d", len(seen), s.Records)
	}
}

// output records what a reader emits.
type output[T any] struct{ recs []T }

func (o *output[T]) Emit(_ etime.Time, v T)   { o.recs = append(o.recs, v) }
func (o *output[T]) EmitWatermark(etime.Time) {}
func (o *output[T]) MarkIdle()                {}
func (o *output[T]) MarkActive()              {}
func (o *output[T]) DeadLetter(reason, detail string, _ any) {
	panic(fmt.Sprintf("connectortest: the input holds no bad records, got a dead letter %s: %s", reason, detail))
}
