package connectortest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
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
	// Fresh: the kind starts its output over when opened with
	// MessagesOpen.Fresh (a file truncated, a ledger emptied, a table's
	// rows of the job removed); false for a log that cannot take back
	// what it holds (a topic, a stream), whose readers tell runs apart.
	Fresh bool
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

// reuseSlots is how many messages' bytes RunMessages keeps before it
// reuses them: more than the suite's largest batch (142), fewer than its
// longest run of writes (250), so that a sink that keeps a message's
// slices instead of copying them writes other messages' bytes, as it
// would behind the runner, which reuses its buffers once Write returns.
const reuseSlots = 150

// RunMessages runs the sink suite (RunSink) on sinks opened through
// m.Open as a job spec's runner opens them: job "conformance", run 1,
// paths as given, the first open of an output fresh. The messages'
// bytes are reused after reuseSlots more messages.
func RunMessages(t *testing.T, m Messages) {
	var mu sync.Mutex
	var slots [reuseSlots][]byte
	next := 0
	makeMsg := func(r Rec) connector.Message {
		msg := Message(r)
		mu.Lock()
		defer mu.Unlock()
		b := append(slots[next][:0], msg.Value...)
		b = append(b, msg.Key...)
		slots[next], next = b, (next+1)%reuseSlots
		n := len(msg.Value)
		msg.Value, msg.Key, msg.Entry.Record = b[:n:n], b[n:], b[:n:n]
		return msg
	}
	name := "late"
	switch m.Role {
	case connector.RoleResults:
		name = "results"
	case connector.RoleDeadLetters:
		name = "dead_letter"
	}
	var reopenFresh bool // the next open of an output is fresh, as if the job started over
	s := Sink[connector.Message]{Kind: m.Kind, Make: makeMsg, Break: m.Break,
		New: func(t testing.TB) (func(testing.TB) connector.Sink[connector.Message], func(testing.TB) []Rec) {
			settings, read := m.New(t)
			fresh := true
			open := func(t testing.TB) connector.Sink[connector.Message] {
				if reopenFresh {
					fresh, reopenFresh = true, false
				}
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
		}}
	RunSink(t, s)
	t.Run("fresh-starts-over", func(t *testing.T) {
		if !m.Fresh {
			t.Skip("Messages.Fresh is not set: the kind's output cannot start over")
		}
		open, read, closeSink := s.start(t)
		k := open(t)
		s.write(t, k, []Rec{{ID: "old1", Run: 1, Value: 1}, {ID: "old2", Run: 1, Value: 2}})
		s.commit(t, k, 1)
		if err := closeSink(k); err != nil {
			t.Fatalf("Close: %v", err)
		}
		reopenFresh = true
		k = open(t)
		s.commit(t, k, 1)
		s.expect(t, read, nil, "after an open with MessagesOpen.Fresh (a job starting over) and its first commit")
		want := []Rec{{ID: "new1", Run: 1, Value: 3}}
		s.write(t, k, want)
		s.commit(t, k, 2)
		s.expect(t, read, want, "after a fresh open and one epoch")
		closeSink(k)
	})
}
