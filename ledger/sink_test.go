package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/connectortest"
)

// readLedger reads the Recs of the entries in the ledger in dir.
func readLedger(dir string) func(t testing.TB) []connectortest.Rec {
	return func(t testing.TB) []connectortest.Rec {
		var out []connectortest.Rec
		bad, err := Scan(dir, func(e Entry) error {
			var r connectortest.Rec
			if err := json.Unmarshal(e.Record, &r); err != nil {
				return err
			}
			if e.ID != r.ID || e.Reason != "window_expired" || e.ArrivedAt != connectortest.ArrivedAt.UnixMilli() {
				return fmt.Errorf("entry %s (reason %s, arrived %d) holds record %s", e.ID, e.Reason, e.ArrivedAt, r)
			}
			out = append(out, r)
			return nil
		})
		if err != nil || len(bad) > 0 {
			t.Fatalf("Scan: %v, corrupt %v", err, bad)
		}
		return out
	}
}

// TestMessagesConformance runs the sink suite on the ledger kind as a
// job spec's runner opens it (OpenMessages): the job's ledger under dir.
func TestMessagesConformance(t *testing.T) {
	connectortest.RunMessages(t, connectortest.Messages{Kind: connectortest.Append, Role: connector.RoleLate, Open: openMessages, Fresh: true,
		New: func(t testing.TB) (connector.Settings, func(testing.TB) []connectortest.Rec) {
			dir := t.TempDir()
			return connectortest.MapSettings{"dir": dir}, readLedger(JobDir(dir, "conformance"))
		},
		Break: func(_ testing.TB, s connector.Sink[connector.Message]) { s.(*messages).w.err = errors.New("disk gone") }})
}

// TestSinkConformance runs the sink suite on a ledger.
func TestSinkConformance(t *testing.T) {
	day := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	connectortest.RunSink(t, connectortest.Sink[Entry]{
		Kind: connectortest.Append,
		New: func(t testing.TB) (func(testing.TB) connector.Sink[Entry], func(testing.TB) []connectortest.Rec) {
			dir := t.TempDir()
			open := func(t testing.TB) connector.Sink[Entry] {
				s, err := OpenSink(dir, SinkOptions{Now: func() time.Time { return day }})
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			return open, readLedger(dir)
		},
		Make: func(r connectortest.Rec) Entry {
			b, _ := json.Marshal(r)
			return Entry{ID: r.ID, Reason: "window_expired", ArrivedAt: day.UnixMilli(), Record: b}
		},
		Break: func(_ testing.TB, s connector.Sink[Entry]) { s.(*Sink).w.err = errors.New("disk gone") },
	})
}
