package natsio_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/natsio"
	"github.com/weirstream/weir/etime"
)

// cancelBound is how soon after its cancellation a job must end.
const cancelBound = time.Second

// silentServer listens on a local port, accepts connections and never
// sends anything (no INFO): a server that hangs the client's handshake.
// accepted is closed at the first connection; everything closes when the
// test ends.
func silentServer(t *testing.T) (url string, accepted <-chan struct{}) {
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
	return "nats://" + ln.Addr().String(), acc
}

// runUntilCancelled runs a job reading src, cancels it once ready
// returns, and fails t unless Execute returns context.Canceled within
// cancelBound of the cancellation.
func runUntilCancelled(t *testing.T, src weir.Source[natsio.Message], ready func(ctx context.Context) bool) {
	t.Helper()
	env, err := weir.NewEnv(weir.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	weir.ForEach(weir.FromSource(env, "nats", src, weir.SourceOptions{}), func(etime.Time, natsio.Message) {})
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
		if took := time.Since(cancelled); took > cancelBound {
			t.Errorf("Execute returned %v after the cancel, want within %v", took, cancelBound)
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Execute = %v, want context.Canceled", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("Execute still running 60s after the cancel")
	}
}

// A job cancelled while its NATS source connects (the server accepts the
// connection and never sends its INFO; the client's own timeout is set to
// 30s) ends at once, and leaves no goroutine behind.
func TestCancelDuringOpen(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) }) // last: after the listener closed
	url, accepted := silentServer(t)
	src := natsio.NewSource(natsio.SourceOptions{URL: url, Stream: "s", ConnectOptions: []nats.Option{nats.Timeout(30 * time.Second)}})
	runUntilCancelled(t, src, func(context.Context) bool {
		select {
		case <-accepted:
			return true
		default:
			return false
		}
	})
}

// A job cancelled while its NATS source waits for messages of a live
// stream that gets none (a Read waits FetchWait, 30s here, for the first)
// ends at once.
func TestCancelWhileReading(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
	s := runServer(t, t.TempDir(), -1)
	js := connect(t, s.ClientURL())
	st := createStream(t, js, "QUIET", "quiet.>")
	src := natsio.NewSource(natsio.SourceOptions{URL: s.ClientURL(), Stream: "QUIET", FetchWait: 30 * time.Second})
	// Once the source's consumer exists, its reads wait for messages.
	runUntilCancelled(t, src, func(ctx context.Context) bool {
		info, err := st.Info(ctx)
		return err == nil && info.State.Consumers > 0
	})
}
