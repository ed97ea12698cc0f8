package sqliteio

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/connectortest"
	"github.com/weirstream/weir/connector/internal/tablerow"
)

// confRow is a conformance record as a row of a table keyed by id with
// one value column.
func confRow(r connectortest.Rec) Row {
	return tablerow.ConformanceRow(r.ID, r.Run, r.Pane, r.Retract, r.Value)
}

// TestSinkConformance runs the sink suite on a SQLite table.
func TestSinkConformance(t *testing.T) {
	connectortest.RunSink(t, connectortest.Sink[Row]{
		Kind: connectortest.Upsert,
		New: func(t testing.TB) (func(testing.TB) connector.Sink[Row], func(testing.TB) []connectortest.Rec) {
			path := filepath.Join(t.TempDir(), "out.db")
			open := func(t testing.TB) connector.Sink[Row] {
				return mustOpen(t, path, []string{"id"}, []string{"value"}, Options{Job: "conformance"})
			}
			read := func(t testing.TB) []connectortest.Rec {
				db, err := sql.Open("sqlite", path)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				rows, err := db.Query(`SELECT id, run, pane, value FROM results WHERE job = 'conformance'`)
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				var out []connectortest.Rec
				for rows.Next() {
					var r connectortest.Rec
					if err := rows.Scan(&r.ID, &r.Run, &r.Pane, &r.Value); err != nil {
						t.Fatal(err)
					}
					out = append(out, r)
				}
				if err := rows.Err(); err != nil {
					t.Fatal(err)
				}
				return out
			}
			return open, read
		},
		Make:  confRow,
		Break: func(_ testing.TB, s connector.Sink[Row]) { s.(*Sink).db.Close() },
	})
}
