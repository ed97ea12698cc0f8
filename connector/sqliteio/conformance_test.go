package sqliteio

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/connectortest"
	"github.com/weirstream/weir/connector/internal/tablerow"
	"github.com/weirstream/weir/window"
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
			read := func(t testing.TB) []connectortest.Rec { return readJob(t, path, "conformance") }
			return open, read
		},
		Make:  confRow,
		Break: func(_ testing.TB, s connector.Sink[Row]) { s.(*Sink).db.Close() },
	})
}

// TestResultRows: a window result and a retraction as rows, written and
// read back.
func TestResultRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.db")
	s := mustOpen(t, path, []string{"user"}, []string{"total"}, Options{Job: "j"})
	rows := ResultRows[string, int64]("user", "total", 7)
	w := window.Window{Start: 0, End: 60_000}
	if err := s.Write(ctx, []Row{
		rows(window.Result[string, int64]{Key: "ann", Window: w, Firing: window.OnTime, Pane: 0, Watermark: 59_999, Value: 11}),
		rows(window.Result[string, int64]{Key: "bob", Window: w, Firing: window.OnTime, Pane: 0, Watermark: 59_999, Value: 5}),
		rows(window.Result[string, int64]{Key: "bob", Window: w, Firing: window.Retract, Pane: 1, Watermark: 70_000}),
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var user string
	var start, end, total, run int64
	if err := db.QueryRow(`SELECT user, window_start, window_end, total, run FROM results`).Scan(&user, &start, &end, &total, &run); err != nil {
		t.Fatal(err)
	}
	if user != "ann" || start != 0 || end != 60_000 || total != 11 || run != 7 {
		t.Fatalf("row %s [%d,%d) total %d run %d", user, start, end, total, run)
	}
}

// TestOpenMissingDirectory names the directory that is missing.
func TestOpenMissingDirectory(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "nope", "x.db"), []string{"k"}, []string{"v"}, Options{})
	if err == nil || !strings.Contains(err.Error(), "nope of ") {
		t.Fatalf("Open in a missing directory: %v", err)
	}
}

// readJob reads job's rows of the results table at path.
func readJob(t testing.TB, path, job string) []connectortest.Rec {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT id, run, pane, value FROM results WHERE job = ?`, job)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	return connectortest.ScanRecs(t, rows, nil)
}

// TestResultsConformance runs the results kind suite on the sqlite kind,
// opened through its OpenResults as a job spec's runner opens it.
func TestResultsConformance(t *testing.T) {
	connectortest.RunResults(t, connectortest.Results{Kind: Kinds()[0],
		New: func(t testing.TB) (connector.Settings, func(testing.TB, string) []connectortest.Rec) {
			path := filepath.Join(t.TempDir(), "out.db")
			return connectortest.MapSettings{"path": path}, func(t testing.TB, job string) []connectortest.Rec { return readJob(t, path, job) }
		}})
}
