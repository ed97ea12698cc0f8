package weir_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/etime"
)

// waitSource's readers wait for their context: in Open (inOpen) or in
// every Read; blocked is closed once one waits. fail, when set, is what
// Read returns instead, once failAfter is closed.
type waitSource struct {
	inOpen    bool
	fail      error
	failAfter <-chan struct{}
	blocked   chan struct{}
	// saw is the error of the context a wait ended with; closed counts
	// the readers closed.
	saw    atomic.Value
	closed atomic.Int32
}

func newWaitSource() *waitSource { return &waitSource{blocked: make(chan struct{})} }

func (s *waitSource) wait(ctx context.Context) error {
	select {
	case <-s.blocked:
	default:
		close(s.blocked)
	}
	select {
	case <-ctx.Done():
		s.saw.Store(ctx.Err())
		return ctx.Err()
	case <-time.After(30 * time.Second):
		return errors.New("the context was not cancelled in 30s")
	}
}

func (s *waitSource) Open(ctx context.Context, ch, n int) (weir.SourceReader[int], error) {
	if s.inOpen {
		if err := s.wait(ctx); err != nil {
			return nil, err
		}
	}
	return &waitReader{s: s}, nil
}

type waitReader struct{ s *waitSource }

func (r *waitReader) Read(ctx context.Context, out weir.SourceOutput[int]) (weir.ReadStatus, error) {
	if r.s.fail != nil {
		<-r.s.failAfter
		return weir.Waiting, r.s.fail
	}
	if err := r.s.wait(ctx); err != nil {
		return weir.Waiting, err
	}
	return weir.Waiting, nil
}

func (r *waitReader) Close() error { r.s.closed.Add(1); return nil }

// executeCancelled runs env, cancels its context once src waits, and
// returns Execute's error, failing t unless it came within a second.
func executeCancelled(t *testing.T, env *weir.Env, src *waitSource) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := env.Execute(ctx); done <- err }()
	select {
	case <-src.blocked:
	case err := <-done:
		t.Fatalf("Execute ended before the source waited: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Second):
		t.Fatal("Execute still runs a second after its context was cancelled")
		return nil
	}
}

// The context of Open and Read is done once Execute's is, in both
// executors, and the job returns the cancellation, not the reader's error.
func TestSourceContextCancelledWithExecute(t *testing.T) {
	for _, c := range []struct {
		name          string
		deterministic bool
		inOpen        bool
	}{{"parallel/read", false, false}, {"parallel/open", false, true}, {"deterministic/read", true, false}, {"deterministic/open", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			opts := weir.DefaultOptions()
			opts.Deterministic = c.deterministic
			env, err := weir.NewEnv(opts)
			if err != nil {
				t.Fatal(err)
			}
			src := newWaitSource()
			src.inOpen = c.inOpen
			weir.ForEach(weir.FromSource[int](env, "wait", src, weir.SourceOptions{}), func(etime.Time, int) {})
			err = executeCancelled(t, env, src)
			if !errors.Is(err, context.Canceled) || err.Error() != context.Canceled.Error() {
				t.Errorf("Execute = %v, want context.Canceled alone", err)
			}
			if saw, _ := src.saw.Load().(error); !errors.Is(saw, context.Canceled) {
				t.Errorf("the source's context ended with %v, want context.Canceled", saw)
			}
			want := int32(1) // the reader, after the cancellation
			if c.inOpen {
				want = 0 // its Open failed: there is no reader
			}
			if got := src.closed.Load(); got != want {
				t.Errorf("%d readers closed, want %d", got, want)
			}
		})
	}
}

// When another source fails, a reader waiting in Read sees its context
// done, and the job returns the failure.
func TestSourceContextCancelledOnFailure(t *testing.T) {
	env, err := weir.NewEnv(weir.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	waiting := newWaitSource()
	boom := errors.New("boom")
	failing := newWaitSource()
	failing.fail, failing.failAfter = boom, waiting.blocked
	weir.ForEach(weir.FromSource[int](env, "wait", waiting, weir.SourceOptions{}), func(etime.Time, int) {})
	weir.ForEach(weir.FromSource[int](env, "fail", failing, weir.SourceOptions{}), func(etime.Time, int) {})
	done := make(chan error, 1)
	go func() { _, err := env.Execute(context.Background()); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, boom) {
			t.Errorf("Execute = %v, want the failure %v", err, boom)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the failed job still runs after 5s: the waiting reader's context was not cancelled")
	}
	if saw, _ := waiting.saw.Load().(error); !errors.Is(saw, context.Canceled) {
		t.Errorf("the waiting reader's context ended with %v, want context.Canceled", saw)
	}
}

// A stepped job's source context is done once the Stepper is closed.
func TestSourceContextOfStepper(t *testing.T) {
	opts := weir.DefaultOptions()
	opts.Deterministic = true
	env, err := weir.NewEnv(opts)
	if err != nil {
		t.Fatal(err)
	}
	var got context.Context
	src := ctxSource{ctx: &got}
	weir.ForEach(weir.FromSource[int](env, "ctx", src, weir.SourceOptions{}), func(etime.Time, int) {})
	s, err := env.Step()
	if err != nil {
		t.Fatal(err)
	}
	if got == nil {
		t.Fatal("Open got no context")
	}
	if err := got.Err(); err != nil {
		t.Fatalf("Open's context has error %v before Close, want a live one", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(got.Err(), context.Canceled) {
		t.Errorf("after Close, Open's context has error %v, want context.Canceled", got.Err())
	}
}

// ctxSource keeps the context its Open got; its reader is done at once.
type ctxSource struct{ ctx *context.Context }

func (s ctxSource) Open(ctx context.Context, ch, n int) (weir.SourceReader[int], error) {
	*s.ctx = ctx
	return doneReader{}, nil
}

type doneReader struct{}

func (doneReader) Read(context.Context, weir.SourceOutput[int]) (weir.ReadStatus, error) {
	return weir.Done, nil
}
func (doneReader) Close() error { return nil }
