package natsio_test

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/connectortest"
	"github.com/weirstream/weir/connector/natsio"
)

// TestSinkConformance runs the sink suite on a JetStream stream (an
// embedded server), read back as the stream stores it.
func TestSinkConformance(t *testing.T) {
	s := runServer(t, t.TempDir(), -1)
	url := s.ClientURL()
	js := connect(t, url)
	var n atomic.Int64
	connectortest.RunSink(t, connectortest.Sink[natsio.Msg]{
		Kind: connectortest.ByID,
		New: func(t testing.TB) (func(testing.TB) connector.Sink[natsio.Msg], func(testing.TB) []connectortest.Rec) {
			id := n.Add(1)
			stream, subject := fmt.Sprintf("CONF%d", id), fmt.Sprintf("conf%d.out", id)
			createStream(t, js, stream, subject)
			open := func(t testing.TB) connector.Sink[natsio.Msg] {
				k, err := natsio.OpenSink(t.Context(), natsio.SinkOptions{URL: url, Subject: subject})
				if err != nil {
					t.Fatal(err)
				}
				return k
			}
			read := func(t testing.TB) []connectortest.Rec {
				var out []connectortest.Rec
				for _, m := range storedMessages(t, url, stream) {
					var r connectortest.Rec
					if err := json.Unmarshal(m.Data, &r); err != nil {
						t.Fatalf("message %q: %v", m.Data, err)
					}
					out = append(out, r)
				}
				return out
			}
			return open, read
		},
		Make: func(r connectortest.Rec) natsio.Msg {
			b, _ := json.Marshal(r)
			return natsio.Msg{ID: r.ID, Data: b}
		},
		Break: func(_ testing.TB, k connector.Sink[natsio.Msg]) { k.Close() },
	})
}
