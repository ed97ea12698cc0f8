package natsio_test

import (
	"fmt"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/connectortest"
	"github.com/weirstream/weir/connector/natsio"
)

// TestConformance runs the source conformance suite on a stream of 1000
// messages on an embedded server.
func TestConformance(t *testing.T) {
	s := runServer(t, t.TempDir(), -1)
	js := connect(t, s.ClientURL())
	createStream(t, js, "CONF", "conf.>")
	publish(t, js, "conf.x", 1, 0, 1000)
	connectortest.Run(t, connectortest.Source[natsio.Message]{
		New: func(testing.TB) weir.Source[natsio.Message] {
			return natsio.NewSource(natsio.SourceOptions{URL: s.ClientURL(), Stream: "CONF", StopAtEnd: true, FetchBatch: 64})
		},
		Records:    1000,
		ID:         func(m natsio.Message) string { return fmt.Sprint(m.Sequence) },
		MaxPerRead: 64,
	})
}
