package ledger

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/connectortest"
)

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
			read := func(t testing.TB) []connectortest.Rec {
				var out []connectortest.Rec
				bad, err := Scan(dir, func(e Entry) error {
					var r connectortest.Rec
					if err := json.Unmarshal(e.Record, &r); err != nil {
						return err
					}
					out = append(out, r)
					return nil
				})
				if err != nil || len(bad) > 0 {
					t.Fatalf("Scan: %v, corrupt %v", err, bad)
				}
				return out
			}
			return open, read
		},
		Make: func(r connectortest.Rec) Entry {
			b, _ := json.Marshal(r)
			return Entry{ID: r.ID, Reason: "window_expired", ArrivedAt: day.UnixMilli(), Record: b}
		},
		Break: func(_ testing.TB, s connector.Sink[Entry]) { s.(*Sink).w.err = errors.New("disk gone") },
	})
}
