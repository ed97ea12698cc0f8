package pgio

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// typedKeys and typedValues are a result table as a job with a string key,
// a count, a decimal sum, a float average and a collect has it.
var (
	typedKeys   = []ColumnDef{{Name: "userId", Type: Text}}
	typedValues = []ColumnDef{{Name: "orders", Type: BigInt}, {Name: "total", Type: Numeric}, {Name: "mean", Type: Double}, {Name: "items", Type: JSONB}, {Name: "note", Type: Text}}
)

// columnTypes reads a table's columns and their types from
// information_schema, in order.
func (d *db) columnTypes(t testing.TB, table string) [][]string {
	t.Helper()
	return d.query(t, `SELECT column_name::text, data_type::text, is_nullable::text FROM information_schema.columns
		WHERE table_name = $1 AND table_schema = current_schema() ORDER BY ordinal_position`, table)
}

// TestTypedColumns: each Type is the column's SQL type, so plain SQL
// works on the table: sum() of a bigint and a numeric column, a text key
// compared with a string literal; numbers keep their digits, a float is
// a double precision, null is SQL NULL; upserts and retractions find
// their rows by text keys.
func TestTypedColumns(t *testing.T) {
	d := connect(t)
	table := d.table(t, "")
	s, err := Open(context.Background(), d.url, table, typedKeys, typedValues, Options{Job: "j"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := [][]string{
		{"job", "text", "NO"}, {"userId", "text", "NO"},
		{"window_start", "bigint", "NO"}, {"window_end", "bigint", "NO"}, {"firing", "text", "NO"},
		{"run", "bigint", "NO"}, {"pane", "bigint", "NO"}, {"watermark", "bigint", "NO"},
		{"orders", "bigint", "YES"}, {"total", "numeric", "YES"}, {"mean", "double precision", "YES"},
		{"items", "jsonb", "YES"}, {"note", "text", "YES"},
	}
	if diff := cmp.Diff(want, d.columnTypes(t, table)); diff != "" {
		t.Fatalf("columns (-want +got):\n%s", diff)
	}
	u1, u2 := []string{"userId", `"user-001"`}, []string{"userId", `"user-002"`}
	mustWrite(t, s,
		row(u1, 0, 60000, "early", 0, 100, "orders", "2", "total", "10.25", "mean", "5.125", "items", `["a", {"b": 1}]`, "note", `"x"`),
		row(u1, 0, 60000, "on_time", 1, 60000, "orders", "3", "total", "12345678901234567890123456789.10", "mean", "0.1", "items", `[]`, "note", `"d\"q\u00e9"`),
		row(u1, 60000, 120000, "on_time", 0, 120000, "orders", "9223372036854775807", "total", "-0.5", "mean", "1e300", "items", `null`, "note", `null`),
		row(u2, 0, 60000, "on_time", 0, 60000, "orders", "1", "total", "7", "mean", "7", "items", `[1]`, "note", `"y"`),
		row(u2, 60000, 120000, "on_time", 0, 120000, "orders", "4", "total", "null", "mean", "null", "items", `[]`, "note", `"z"`),
		row(u2, 60000, 120000, "retract", 0, 130000),
	)
	mustFlush(t, s)
	q := `SELECT "userId", window_start::text, orders::text, total::text, coalesce(mean::text, 'NULL'), items::text, coalesce(note, 'NULL') FROM ` + quoteIdent(table) + ` ORDER BY 1, 2`
	got := d.query(t, q)
	wantRows := [][]string{
		{"user-001", "0", "3", "12345678901234567890123456789.10", "0.1", "[]", `d"qé`},
		{"user-001", "60000", "9223372036854775807", "-0.5", "1e+300", "null", "NULL"}, // jsonb null is not SQL NULL
		{"user-002", "0", "1", "7", "7", "[1]", "y"},
	}
	if diff := cmp.Diff(wantRows, got); diff != "" {
		t.Fatalf("rows (-want +got):\n%s", diff)
	}
	// Plain SQL: sums of the typed columns, a key compared with a string.
	got = d.query(t, `SELECT sum(orders)::text, sum(total)::text, count(*)::text FROM `+quoteIdent(table)+` WHERE "userId" = 'user-002'`)
	if diff := cmp.Diff([][]string{{"1", "7", "1"}}, got); diff != "" {
		t.Fatalf(`sum where "userId" = 'user-002' (-want +got):\n%s`, diff)
	}
	got = d.query(t, `SELECT sum(total)::text, avg(mean)::text FROM `+quoteIdent(table)+` WHERE "userId" = 'user-001' AND window_start = 0`)
	if diff := cmp.Diff([][]string{{"12345678901234567890123456789.10", "0.1"}}, got); diff != "" {
		t.Fatalf(`sum where "userId" = 'user-001' (-want +got):\n%s`, diff)
	}
	// Reopening the table works; a retraction finds its row by text key.
	s.Close()
	s = mustOpenTyped(t, d.url, table, Options{Job: "j"})
	mustWrite(t, s, row(u1, 60000, 120000, "retract", 0, 200000))
	mustFlush(t, s)
	if n := d.count(t, table); n != 2 {
		t.Fatalf("%d rows after retracting one of 3, want 2", n)
	}
}

func mustOpenTyped(t testing.TB, url, table string, o Options) *Sink {
	t.Helper()
	s, err := Open(context.Background(), url, table, typedKeys, typedValues, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestTextKeys: a Text key holds a string's text and any other value's
// compact JSON text, so non-string keys keep working and are found by
// their text; the sink warns once when one column gets both kinds.
func TestTextKeys(t *testing.T) {
	d := connect(t)
	table := d.table(t, "")
	var logs syncBuffer
	s, err := Open(context.Background(), d.url, table, Defs(Text, "k"), Defs(BigInt, "n"), Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	keys := []string{`"a"`, `7`, `-2.5e-3`, `true`, ` {"b": [1, "x y"], "a": {}} `, `"ünï\u00e9\ud83d\ude00"`}
	for i, k := range keys {
		mustWrite(t, s, row([]string{"k", k}, 0, 10, "on_time", 0, 10, "n", fmt.Sprint(i)))
	}
	mustFlush(t, s)
	got := d.query(t, `SELECT k, n::text FROM `+quoteIdent(table)+` ORDER BY n`)
	want := [][]string{{"a", "0"}, {"7", "1"}, {"-2.5e-3", "2"}, {"true", "3"}, {`{"b":[1,"x y"],"a":{}}`, "4"}, {"ünïé😀", "5"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("rows (-want +got):\n%s", diff)
	}
	if !strings.Contains(logs.String(), "both strings and other JSON values") || strings.Count(logs.String(), "level=WARN") != 1 {
		t.Fatalf("want one warning about strings and other values in one text key column, got:\n%s", logs.String())
	}
	// The string "7" is the key 7's row.
	mustWrite(t, s, row([]string{"k", `"7"`}, 0, 10, "late", 1, 20, "n", "70"))
	mustFlush(t, s)
	if got := d.query(t, `SELECT n::text FROM `+quoteIdent(table)+` WHERE k = '7'`); fmt.Sprint(got) != "[[70]]" {
		t.Fatalf(`k = '7' holds %v, want [[70]]`, got)
	}
	if n := d.count(t, table); n != len(keys) {
		t.Fatalf("%d rows, want %d", n, len(keys))
	}
}

// TestTypedWriteValidation: a value its column's type cannot hold as
// written is refused by Write, naming the column and the type, and not
// buffered.
func TestTypedWriteValidation(t *testing.T) {
	d := connect(t)
	s := mustOpenTyped(t, d.url, d.table(t, ""), Options{})
	vals := func(orders, total, mean string) []string {
		return []string{"orders", orders, "total", total, "mean", mean, "items", "[]", "note", `"n"`}
	}
	k := []string{"userId", `"a"`}
	cases := []struct {
		r    Row
		want string
	}{
		{row(k, 0, 1, "on_time", 0, 0, vals(`"3"`, "1", "1")...), `value "orders": "\"3\"" is not a number, as a bigint column holds`},
		{row(k, 0, 1, "on_time", 0, 0, vals("1.5", "1", "1")...), `value "orders": "1.5" is not an integer within int64, as a bigint column holds`},
		{row(k, 0, 1, "on_time", 0, 0, vals("1e3", "1", "1")...), `is not an integer within int64`},
		{row(k, 0, 1, "on_time", 0, 0, vals("9223372036854775808", "1", "1")...), `is not an integer within int64`},
		{row(k, 0, 1, "on_time", 0, 0, vals("1", "true", "1")...), `value "total": "true" is not a number, as a numeric column holds`},
		{row(k, 0, 1, "on_time", 0, 0, vals("1", "1e200000", "1")...), `too large for Postgres numeric`},
		{row(k, 0, 1, "on_time", 0, 0, vals("1", "1", "1e400")...), `value "mean": "1e400" is beyond the range of double precision`},
		{row(k, 0, 1, "on_time", 0, 0, vals("1", "1", `[1]`)...), `is not a number, as a double precision column holds`},
		{row([]string{"userId", "null"}, 0, 1, "on_time", 0, 0, vals("1", "1", "1")...), `key "userId": null is not a key a text column can hold`},
		{row([]string{"userId", `"a\u0000"`}, 0, 1, "retract", 0, 0), `\u0000 is not allowed`},
	}
	for _, c := range cases {
		err := s.Write(context.Background(), []Row{c.r})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Write(%+v) = %v, want an error containing %q", c.r, err, c.want)
		}
	}
	if s.Pending() != 0 {
		t.Fatalf("%d rows pending after invalid writes", s.Pending())
	}
	// Edges that are held: int64's extremes, -0, a float that underflows.
	mustWrite(t, s,
		row(k, 0, 1, "on_time", 0, 0, vals("-9223372036854775808", "-0", "1e-400")...),
		row([]string{"userId", `"b"`}, 0, 1, "on_time", 0, 0, vals("-0", "0.000", "-0")...))
	mustFlush(t, s)
}

// TestJSONBLayoutRefused: a result table of weir before typed columns
// (keys and values jsonb) is refused at Open and by CheckTable with an
// error naming the table, each column with its type and the type
// expected, and the fix; the table is left as it was.
func TestJSONBLayoutRefused(t *testing.T) {
	d := connect(t)
	table := d.table(t, "")
	old := mustOpen(t, d.url, table, []string{"userId"}, []string{"orders", "total", "mean", "items", "note"}, Options{Job: "j"})
	mustWrite(t, old, row([]string{"userId", `"user-001"`}, 0, 10, "on_time", 0, 10, "orders", "3", "total", "1.5", "mean", "0.5", "items", "[]", "note", `"n"`))
	mustFlush(t, old)
	old.Close()
	before := d.columnTypes(t, table)

	_, err := Open(context.Background(), d.url, table, typedKeys, typedValues, Options{Job: "j"})
	if err == nil {
		t.Fatal("Open on a table of jsonb columns succeeded")
	}
	qt := quoteIdent(table)
	for _, w := range []string{
		"pgio: table " + qt + " has the layout of weir before typed result columns (keys and aggregates as jsonb)",
		`column "userId" is jsonb, expected text`,
		`column "orders" is jsonb, expected bigint`,
		`column "total" is jsonb, expected numeric`,
		`column "mean" is jsonb, expected double precision`,
		`column "note" is jsonb, expected text`,
		"drop it (DROP TABLE " + qt + ")",
		"rename it (ALTER TABLE " + qt + " RENAME TO " + quoteIdent(table+"_jsonb") + ")",
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Open = %v\nwant it to contain %q", err, w)
		}
	}
	if strings.Contains(err.Error(), `"items"`) {
		t.Errorf("Open = %v\nnames the jsonb column items, which is expected as jsonb", err)
	}
	// CheckTable refuses it the same way, and accepts a missing table
	// without making it.
	if err := CheckTable(context.Background(), d.url, table, typedKeys, typedValues, Options{}); err == nil || !strings.Contains(err.Error(), "has the layout of weir before typed result columns") {
		t.Errorf("CheckTable on the jsonb table = %v", err)
	}
	missing := d.table(t, "")
	if err := CheckTable(context.Background(), d.url, missing, typedKeys, typedValues, Options{}); err != nil {
		t.Errorf("CheckTable on a missing table = %v", err)
	}
	if got := d.columnTypes(t, missing); len(got) != 0 {
		t.Errorf("CheckTable created the missing table: %v", got)
	}
	if diff := cmp.Diff(before, d.columnTypes(t, table)); diff != "" {
		t.Fatalf("the refused table changed (-before +after):\n%s", diff)
	}
	if n := d.count(t, table); n != 1 {
		t.Fatalf("the refused table has %d rows, want its 1", n)
	}
	// Renamed as the message says, the table is made anew.
	t.Cleanup(func() { _, _ = d.admin.Exec(context.Background(), "DROP TABLE IF EXISTS "+quoteIdent(table+"_jsonb")) })
	d.exec(t, "ALTER TABLE "+qt+" RENAME TO "+quoteIdent(table+"_jsonb"))
	s := mustOpenTyped(t, d.url, table, Options{Job: "j"})
	mustWrite(t, s, row([]string{"userId", `"user-001"`}, 0, 10, "on_time", 0, 10, "orders", "3", "total", "1.5", "mean", "0.5", "items", "[]", "note", `"n"`))
	mustFlush(t, s)
	if got := d.query(t, `SELECT sum(orders)::text FROM `+qt+` WHERE "userId" = 'user-001'`); fmt.Sprint(got) != "[[3]]" {
		t.Fatalf("sum(orders) of the new table = %v, want [[3]]", got)
	}

	// A table that differs otherwise (a column of another type than
	// jsonb) gets the general message.
	other := d.table(t, "")
	mustOpenTyped(t, d.url, other, Options{}).Close()
	d.exec(t, "ALTER TABLE "+quoteIdent(other)+` ALTER COLUMN "orders" TYPE integer`)
	if _, err := Open(context.Background(), d.url, other, typedKeys, typedValues, Options{}); err == nil ||
		!strings.Contains(err.Error(), `column "orders" has type integer, expected bigint`) || strings.Contains(err.Error(), "layout of weir before typed") {
		t.Fatalf("Open on a table with an integer column = %v", err)
	}
	if err := CheckTable(context.Background(), d.url, other, typedKeys, typedValues, Options{}); err == nil || !strings.Contains(err.Error(), `column "orders" has type integer, expected bigint`) {
		t.Fatalf("CheckTable on a table with an integer column = %v", err)
	}
	if err := CheckTable(context.Background(), d.url, table, typedKeys, typedValues, Options{}); err != nil {
		t.Fatalf("CheckTable on the table Open made = %v", err)
	}
}
