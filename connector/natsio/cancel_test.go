package natsio_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"

	"github.com/weirstream/weir/connector/connectortest"
	"github.com/weirstream/weir/connector/natsio"
)

// cancelBound is how soon after its cancellation a job must end.
const cancelBound = time.Second

// A job cancelled while its NATS source connects (the server accepts the
// connection and never sends its INFO; the client's own timeout is set to
// 30s) ends at once, and leaves no goroutine behind.
func TestCancelDuringOpen(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) }) // last: after the listener closed
	addr, accepted := connectortest.SilentListener(t)
	src := natsio.NewSource(natsio.SourceOptions{URL: "nats://" + addr, Stream: "s", ConnectOptions: []nats.Option{nats.Timeout(30 * time.Second)}})
	connectortest.StopsOnCancel(t, src, connectortest.Closed(accepted), cancelBound)
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
	connectortest.StopsOnCancel(t, src, func(ctx context.Context) bool {
		info, err := st.Info(ctx)
		return err == nil && info.State.Consumers > 0
	}, cancelBound)
}
