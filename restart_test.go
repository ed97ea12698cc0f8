package weir_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/checkpoint"
)

// TestRunRestarting: attempts are retried up to Max, a Permanent error
// stops at once (unmarked), OnRestart is told, and a cancel during the
// backoff returns at once.
func TestRunRestarting(t *testing.T) {
	boom := errors.New("boom")
	var told []int
	p := weir.RestartPolicy{Max: 3, Backoff: time.Millisecond, OnRestart: func(n int, cause error) {
		if !errors.Is(cause, boom) {
			t.Errorf("restart %d told %v", n, cause)
		}
		told = append(told, n)
	}}
	n, err := weir.RunRestarting(context.Background(), p, func(_ context.Context, n int) error {
		if n < 2 {
			return boom
		}
		return nil
	})
	if n != 2 || err != nil || !slices.Equal(told, []int{1, 2}) {
		t.Fatalf("two failures then success: %d restarts, %v, told %v", n, err, told)
	}
	told = nil
	n, err = weir.RunRestarting(context.Background(), p, func(context.Context, int) error { return boom })
	if n != 3 || err != boom || len(told) != 3 {
		t.Fatalf("always failing: %d restarts, %v, told %v; want 3, boom", n, err, told)
	}
	n, err = weir.RunRestarting(context.Background(), p, func(context.Context, int) error { return weir.Permanent(fmt.Errorf("bad: %w", boom)) })
	if n != 0 || !errors.Is(err, boom) || err.Error() != "bad: boom" {
		t.Fatalf("permanent: %d restarts, %v", n, err)
	}
	// A reopen does not count against Max: five of them between two
	// failures with Max 1.
	told = nil
	var reopened int
	start := time.Now()
	n, err = weir.RunRestarting(context.Background(), weir.RestartPolicy{Max: 1, Backoff: time.Millisecond, OnReopen: func(error) { reopened++ }, OnRestart: p.OnRestart}, func(_ context.Context, n int) error {
		switch {
		case n == 0 || n == 6:
			return boom
		case n < 6:
			return weir.Reopen(fmt.Errorf("grew: %w", boom))
		}
		return nil
	})
	if n != 1 || err != boom || reopened != 5 || !slices.Equal(told, []int{1}) || time.Since(start) > 10*time.Second {
		t.Fatalf("reopens: %d restarts, %v, %d reopened, restarts told %v", n, err, reopened, told)
	}
	ctx, cancel := context.WithCancel(context.Background())
	start = time.Now()
	time.AfterFunc(50*time.Millisecond, cancel)
	n, err = weir.RunRestarting(ctx, weir.RestartPolicy{Max: 5, Backoff: time.Hour}, func(context.Context, int) error { return boom })
	if n != 0 || err != boom || time.Since(start) > 10*time.Second {
		t.Fatalf("cancelled in the backoff: %d restarts, %v after %v", n, err, time.Since(start))
	}
}

// flakySink is a txnSink whose Write fails the first failWrites times over
// all its instances.
type flakySink struct {
	*txnSink
	left *int
}

func (s flakySink) Write(ctx context.Context, b []string) error {
	if *s.left > 0 {
		*s.left--
		return errors.New("the database went away")
	}
	return s.txnSink.Write(ctx, b)
}

// TestToSinkRestarts: a sink that fails fails the job; RunRestarting
// resumes it from its newest checkpoint (checkpoint.Dir and Resume), and
// the committed output is exactly the uninterrupted run's.
func TestToSinkRestarts(t *testing.T) {
	evs := sinkEvents(50_000)
	opts := weir.DefaultOptions()
	opts.Parallelism = 2
	want := uninterrupted(t, evs, opts)
	dir := filepath.Join(t.TempDir(), "checkpoints")
	got := &txnStore{}
	left := 0
	var restored []int64
	n, err := weir.RunRestarting(context.Background(), weir.RestartPolicy{Max: 3, Backoff: time.Millisecond}, func(ctx context.Context, n int) error {
		store, err := checkpoint.Open(dir, checkpoint.Options{})
		if err != nil {
			return weir.Permanent(err)
		}
		defer store.Close()
		o := opts
		if o.Checkpoint, err = weir.Resume(ctx, store, 2*time.Millisecond); err != nil {
			return weir.Permanent(err)
		}
		restored = append(restored, o.Checkpoint.NextID-1)
		gate := closed()
		if n == 0 {
			// The first attempt holds half-way until a checkpoint is
			// durable, then its sink fails at the next pre-commit.
			g := make(chan struct{})
			gate = g
			done := false
			o.Checkpoint.OnComplete = func(int64) {
				if !done {
					done, left = true, 1
					close(g)
				}
			}
		}
		_, err = sinkJob(t, evs, o, gate, flakySink{&txnSink{st: got}, &left}, weir.SinkOptions{}).Execute(ctx)
		return err
	})
	if err != nil || n != 1 {
		t.Fatalf("%d restarts, %v; want 1 restart and success", n, err)
	}
	if restored[1] < 1 {
		t.Fatalf("the restart resumed from checkpoint %d, want a checkpoint of the first attempt", restored[1])
	}
	a, b := got.visible(), want.visible()
	slices.Sort(a)
	slices.Sort(b)
	if !slices.Equal(a, b) {
		t.Fatalf("after a sink failure and a restart from checkpoint %d: %d lines committed, want %d", restored[1], len(a), len(b))
	}
}
