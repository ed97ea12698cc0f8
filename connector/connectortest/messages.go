package connectortest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/weirstream/weir/connector"
)

// Messages describes a kind's sink of messages under test: the sink a
// job spec's runner opens through connector.SinkKind.OpenMessages.
type Messages struct {
	Kind Kind
	// Role is the output the sink is opened for.
	Role connector.SinkRole
	// Open is the kind's OpenMessages.
	Open func(ctx context.Context, o connector.MessagesOpen) (connector.Sink[connector.Message], error)
	// New starts a test on a fresh, empty output: the sink's settings,
	// and read as in Sink.New.
	New func(t testing.TB) (connector.Settings, func(t testing.TB) []Rec)
	// Break is as in Sink.
	Break func(t testing.TB, s connector.Sink[connector.Message])
}

// ArrivedAt is when the suite's late records arrived.
var ArrivedAt = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// Message is Rec as the runner writes it: its JSON as the line and as
// the record of a late entry, keyed and identified by its ID.
func Message(r Rec) connector.Message {
	b, _ := json.Marshal(r) // a Rec always marshals
	return connector.Message{Value: b, Key: []byte(r.ID), ID: r.ID, Headers: []connector.Header{{Key: "weir-reason", Value: []byte("window_expired")}},
		Entry: &connector.Entry{ID: r.ID, Reason: "window_expired", Record: b, Meta: []byte(`{"source":"conformance"}`), Arrived: ArrivedAt}}
}

// RunMessages runs the sink suite (RunSink) on sinks opened through
// m.Open as a job spec's runner opens them: job "conformance", run 1,
// paths as given, the first open of an output fresh.
func RunMessages(t *testing.T, m Messages) {
	name := "late"
	switch m.Role {
	case connector.RoleResults:
		name = "results"
	case connector.RoleDeadLetters:
		name = "dead_letter"
	}
	RunSink(t, Sink[connector.Message]{Kind: m.Kind, Make: Message, Break: m.Break,
		New: func(t testing.TB) (func(testing.TB) connector.Sink[connector.Message], func(testing.TB) []Rec) {
			settings, read := m.New(t)
			fresh := true
			open := func(t testing.TB) connector.Sink[connector.Message] {
				s, err := m.Open(context.Background(), connector.MessagesOpen{Settings: settings, Output: "sinks." + name, Name: name, Role: m.Role,
					Path: func(p string) string { return p }, Job: "conformance", Fresh: fresh, Stdout: io.Discard,
					Run: func() int64 { return 1 }, Now: func() time.Time { return ArrivedAt },
					Logger: slog.New(slog.DiscardHandler), Stopping: context.Background()})
				if err != nil {
					t.Fatalf("OpenMessages: %v", err)
				}
				fresh = false
				return s
			}
			return open, read
		}})
}
