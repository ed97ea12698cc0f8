package pgio

import (
	"context"
	"encoding/json"
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

// readRecs runs query (which selects id, run, pane, value or one jsonb
// record) on the test server.
func readRecs(t testing.TB, d *db, query string, jsonRec bool) []connectortest.Rec {
	t.Helper()
	rows, err := d.admin.Query(context.Background(), query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if !jsonRec {
		return connectortest.ScanRecs(t, rows, nil)
	}
	return connectortest.ScanRecs(t, rows, func(rows connectortest.Rows, r *connectortest.Rec) error {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return err
		}
		return json.Unmarshal(b, r)
	})
}

// TestSinkConformance runs the sink suite on a results table.
func TestSinkConformance(t *testing.T) {
	d := connect(t)
	connectortest.RunSink(t, connectortest.Sink[Row]{
		Kind: connectortest.Upsert,
		New: func(t testing.TB) (func(testing.TB) connector.Sink[Row], func(testing.TB) []connectortest.Rec) {
			table := d.table(t, "weir_conformance")
			open := func(t testing.TB) connector.Sink[Row] {
				s, err := Open(context.Background(), d.url, table, Defs(Text, "id"), Defs(BigInt, "value"), Options{Job: "conformance"})
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			read := func(t testing.TB) []connectortest.Rec {
				return readRecs(t, d, `SELECT id, run, pane, value FROM `+quoteIdent(table)+` WHERE job = 'conformance'`, false)
			}
			return open, read
		},
		Make:  confRow,
		Break: func(_ testing.TB, s connector.Sink[Row]) { s.Close() },
	})
}

// TestResultsConformance runs the results kind suite on the postgres
// kind, opened through its OpenResults as a job spec's runner opens it.
func TestResultsConformance(t *testing.T) {
	d := connect(t)
	connectortest.RunResults(t, connectortest.Results{Kind: Kinds()[0],
		New: func(t testing.TB) (connector.Settings, func(testing.TB, string) []connectortest.Rec) {
			table := d.table(t, "weir_conformance")
			return connectortest.MapSettings{"url": d.url, "table": table}, func(t testing.TB, job string) []connectortest.Rec {
				return readRecs(t, d, `SELECT id, run, pane, value FROM `+quoteIdent(table)+` WHERE job = '`+job+`'`, false)
			}
		}})
}

// TestRecordSinkConformance runs the sink suite on a records table.
func TestRecordSinkConformance(t *testing.T) {
	d := connect(t)
	connectortest.RunSink(t, connectortest.Sink[Record]{
		Kind: connectortest.ByID,
		New: func(t testing.TB) (func(testing.TB) connector.Sink[Record], func(testing.TB) []connectortest.Rec) {
			table := d.table(t, "weir_conformance_late")
			open := func(t testing.TB) connector.Sink[Record] {
				s, err := OpenRecords(context.Background(), d.url, table, Options{Job: "conformance"})
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			read := func(t testing.TB) []connectortest.Rec {
				return readRecs(t, d, `SELECT record FROM `+quoteIdent(table)+` WHERE job = 'conformance'`, true)
			}
			return open, read
		},
		Make: func(r connectortest.Rec) Record {
			b, _ := json.Marshal(r)
			return Record{ID: r.ID, Reason: "window_expired", Raw: b, Meta: []byte(`{"source":"conformance"}`)}
		},
		Break: func(_ testing.TB, s connector.Sink[Record]) { s.Close() },
	})
}

// TestMessagesConformance runs the sink suite on the postgres kind as a
// job spec's runner opens it for late records (OpenMessages): the job's
// rows of run 1, in epochs of the sink's own.
func TestMessagesConformance(t *testing.T) {
	d := connect(t)
	connectortest.RunMessages(t, connectortest.Messages{Kind: connectortest.ByID, Role: connector.RoleLate, Open: openMessages, Fresh: true,
		New: func(t testing.TB) (connector.Settings, func(testing.TB) []connectortest.Rec) {
			table := d.table(t, "weir_conformance_msgs")
			return connectortest.MapSettings{"url": d.url, "table": table}, func(t testing.TB) []connectortest.Rec {
				return readRecs(t, d, `SELECT record FROM `+quoteIdent(table)+` WHERE job = 'conformance' AND run = 1`, true)
			}
		},
		Break: func(_ testing.TB, s connector.Sink[connector.Message]) { s.Close() }})
}
