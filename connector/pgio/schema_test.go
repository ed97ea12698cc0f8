package pgio

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/connectortest"
	"github.com/weirstream/weir/connector/internal/tablerow"
)

// TestInSchema: a table setting that names its schema connects with the
// schema as search_path, in both forms of connection string, and one
// that sets search_path already is refused.
func TestInSchema(t *testing.T) {
	for _, c := range []struct{ url, table, conn, name, err string }{
		{"postgres://u@h/db", "stats", "postgres://u@h/db", "stats", ""},
		{"postgres://u@h/db?sslmode=disable", "Analytics.stats", "postgres://u@h/db?search_path=%22Analytics%22&sslmode=disable", "stats", ""},
		{"host=h dbname=db", "a.stats", `host=h dbname=db search_path='"a"'`, "stats", ""},
		{"postgres://u@h/db?search_path=x", "a.stats", "", "", "sets search_path too"},
		{"host=h search_path=x", "a.stats", "", "", "sets search_path too"},
	} {
		conn, name, err := InSchema(c.url, c.table)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s %s: %v, want %q", c.url, c.table, err, c.err)
			}
			continue
		}
		if err != nil || conn != c.conn || name != c.name {
			t.Errorf("%s %s: %q %q %v, want %q %q", c.url, c.table, conn, name, err, c.conn, c.name)
		}
	}
}

// TestSchemaTable: a job spec's results and late tables named with a
// schema (analytics.stats, as Flink's JDBC table-name takes it) are made
// and written in that schema, not in the default one.
func TestSchemaTable(t *testing.T) {
	d := connect(t)
	ctx := context.Background()
	const schema = "weir_schema_test"
	if _, err := d.admin.Exec(ctx, `DROP SCHEMA IF EXISTS `+schema+` CASCADE; CREATE SCHEMA `+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.admin.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+schema+` CASCADE`) })
	table := d.table(t, "weir_schema") // dropped from the default schema too, should it land there
	rs, err := Kinds()[0].Sink.OpenResults(ctx, connector.ResultsOpen{Settings: connectortest.MapSettings{"url": d.url, "table": schema + "." + table},
		Output: "sinks.results", Path: func(p string) string { return p }, Job: "schema", Keys: []string{"id"},
		Values: []connector.ResultColumn{{Name: "value", Fn: "count"}}, Stopping: ctx})
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Write(ctx, []connector.Row{tablerow.ConformanceRow("a", 1, 0, false, 3)}); err != nil {
		t.Fatal(err)
	}
	if err := rs.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rs.Close(); err != nil {
		t.Fatal(err)
	}
	ms, err := openMessages(ctx, connector.MessagesOpen{Settings: connectortest.MapSettings{"url": d.url, "table": schema + "." + table + "_late"},
		Output: "sinks.late", Name: "late", Role: connector.RoleLate, Path: func(p string) string { return p }, Job: "schema",
		Run: func() int64 { return 1 }, Stopping: ctx})
	if err != nil {
		t.Fatal(err)
	}
	if err := ms.Write(ctx, []connector.Message{{Entry: &connector.Entry{ID: "0:1", Reason: "window_expired", Record: []byte(`{}`), Meta: []byte(`{}`)}}}); err != nil {
		t.Fatal(err)
	}
	if err := ms.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ms.Close(); err != nil {
		t.Fatal(err)
	}
	got := d.query(t, `SELECT (SELECT count(*) FROM `+schema+`.`+quoteIdent(table)+`)::text, (SELECT count(*) FROM `+schema+`.`+table+`_late)::text,
		(to_regclass('public.`+table+`') IS NULL)::text, (to_regclass('public.`+table+`_late') IS NULL)::text`)
	if want := "[[1 1 true true]]"; fmt.Sprint(got) != want {
		t.Fatalf("rows in the schema's tables, and none in the default schema: %v, want %s", got, want)
	}
}
