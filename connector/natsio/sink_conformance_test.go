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

// TestMessagesConformance runs the sink suite on the nats kind as a job
// spec's runner opens it for late records (OpenMessages): message ids of
// the sink's name and the record's id.
func TestMessagesConformance(t *testing.T) {
	s := runServer(t, t.TempDir(), -1)
	url := s.ClientURL()
	js := connect(t, url)
	var n atomic.Int64
	connectortest.RunMessages(t, connectortest.Messages{Kind: connectortest.ByID, Role: connector.RoleLate, Open: natsio.Kinds()[0].Sink.OpenMessages,
		New: func(t testing.TB) (connector.Settings, func(testing.TB) []connectortest.Rec) {
			id := n.Add(1)
			stream, subject := fmt.Sprintf("MSGS%d", id), fmt.Sprintf("msgs%d.late", id)
			createStream(t, js, stream, subject)
			return connectortest.MapSettings{"url": url, "subject": subject}, func(t testing.TB) []connectortest.Rec {
				var out []connectortest.Rec
				for _, m := range storedMessages(t, url, stream) {
					var r connectortest.Rec
					if err := json.Unmarshal(m.Data, &r); err != nil {
						t.Fatalf("message %q: %v", m.Data, err)
					}
					if got := m.Headers.Get("Nats-Msg-Id"); got != "late/1/"+r.ID || m.Headers.Get("weir-reason") != "window_expired" {
						t.Fatalf("message %s has id %q and headers %v", r, got, m.Headers)
					}
					out = append(out, r)
				}
				return out
			}
		},
		Break: func(_ testing.TB, k connector.Sink[connector.Message]) { k.Close() }})
}
