package connectortest

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/etime"
)

// SilentListener listens on a local port, accepts connections and never
// answers: a broker or server that takes a client's request (or hangs its
// handshake) and says nothing. accepted is closed at the first
// connection. The listener and the connections close when the test ends.
func SilentListener(t testing.TB) (addr string, accepted <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	acc := make(chan struct{})
	var (
		mu    sync.Mutex
		conns []net.Conn
		once  sync.Once
		wg    sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			once.Do(func() { close(acc) })
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String(), acc
}

// Closed reports whether c is closed, for StopsOnCancel's ready.
func Closed(c <-chan struct{}) func(context.Context) bool {
	return func(context.Context) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
}

// StopsOnCancel runs a job reading src, cancels it once ready reports
// true (asked every 10 ms, for 30 s at most) and a little later, and
// fails t unless Execute returns context.Canceled within bound of the
// cancellation: a cancelled job must not wait for a connector's own
// timeouts.
func StopsOnCancel[T any](t *testing.T, src weir.Source[T], ready func(ctx context.Context) bool, bound time.Duration) {
	t.Helper()
	env, err := weir.NewEnv(weir.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	weir.ForEach(weir.FromSource(env, "source", src, weir.SourceOptions{}), func(etime.Time, T) {})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := env.Execute(ctx)
		done <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !ready(ctx) {
		select {
		case err := <-done:
			t.Fatalf("the job ended before it was cancelled: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the job did not get ready in 30s")
		}
	}
	time.Sleep(100 * time.Millisecond) // well inside what it waits for
	cancel()
	cancelled := time.Now()
	select {
	case err := <-done:
		if took := time.Since(cancelled); took > bound {
			t.Errorf("Execute returned %v after the cancel, want within %v", took, bound)
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Execute = %v, want context.Canceled", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("Execute still running 60s after the cancel")
	}
}
