package pgio

import (
	"context"
	"strings"
	"testing"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/etime"
)

// TestPostgresType: Flink SQL's column types in Postgres's words.
func TestPostgresType(t *testing.T) {
	for in, want := range map[string]string{
		"STRING": "text", "VARCHAR(64)": "varchar(64)", "VARCHAR": "text", "BIGINT": "bigint", "INT": "integer", "TINYINT": "smallint",
		"DECIMAL(38, 2)": "numeric(38,2)", "DECIMAL": "numeric", "DOUBLE": "double precision", "FLOAT": "real", "BOOLEAN": "boolean",
		"TIMESTAMP(3)": "timestamp(3)", "TIMESTAMP_LTZ(3)": "timestamptz(3)", "TIMESTAMP(3) WITH LOCAL TIME ZONE": "timestamptz(3)",
		"DATE": "date", "jsonb": "jsonb", "BIGINT NOT NULL": "bigint",
	} {
		if got := PostgresType(in); got != want {
			t.Errorf("PostgresType(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestDeclaredRefused: a declared layout whose columns hold what the
// rows do not have, or whose primary key is not the key fields and the
// window's bounds, is refused before anything is connected.
func TestDeclaredRefused(t *testing.T) {
	keys, vals := Defs(Text, "user"), Defs(BigInt, "n")
	col := func(name, from string) connector.LayoutColumn { return connector.LayoutColumn{Name: name, From: from} }
	for _, c := range []struct {
		l    Declared
		want string
	}{
		{Declared{Columns: []connector.LayoutColumn{col("u", "nope")}}, `column "u" holds "nope"`},
		{Declared{Columns: []connector.LayoutColumn{col("u", "user"), col("u", "n")}}, `column "u" is declared twice`},
		{Declared{Columns: []connector.LayoutColumn{col("u", "user"), col("window_start", ""), col("n", "")}, PrimaryKey: []string{"u", "window_start"}}, "must hold the key fields (user) and the window's start and end"},
		{Declared{Columns: []connector.LayoutColumn{col("u", "user"), col("window_start", ""), col("n", "")}, PrimaryKey: []string{"u", "window_start", "n"}}, `primary key column "n" holds no key field or window bound`},
		{Declared{Columns: []connector.LayoutColumn{col("u", "user")}, PrimaryKey: []string{"x"}}, `primary key column "x" is not a declared column`},
	} {
		if _, err := newDeclared(&c.l, keys, vals); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.l, err, c.want)
		}
	}
}

// TestDeclared writes a table of its own layout, made beforehand as for
// a Flink job (timestamps, its own primary key and an extra column, no
// job column): results upsert by the primary key with the pane guard of
// its run and pane columns, a retraction deletes the row, the global
// window's bounds are infinity, an infinite watermark is NULL; a table
// without the declared columns is refused with what it lacks.
func TestDeclared(t *testing.T) {
	d := connect(t)
	table := d.table(t, "")
	d.exec(t, `CREATE TABLE `+quoteIdent(table)+` (k varchar(8), ws timestamp(3), we timestamptz(3), wt timestamp(3), n numeric(10,1), wm timestamp(3),
		firing text, run bigint, pane bigint, extra text DEFAULT 'x', PRIMARY KEY (k, ws, we))`)
	l := &Declared{Columns: []connector.LayoutColumn{
		{Name: "k"}, {Name: "ws", From: "window_start", Time: "timestamp"}, {Name: "we", From: "window_end", Time: "timestamp_ltz"},
		{Name: "wt", From: "window_time", Time: "timestamp"}, {Name: "n", From: "v"}, {Name: "wm", From: "watermark", Time: "timestamp"},
		{Name: "firing"}, {Name: "run"}, {Name: "pane"}}, PrimaryKey: []string{"k", "ws", "we"}}
	s, err := Open(context.Background(), d.url, table, Defs(Text, "k"), Defs(Numeric, "v"), Options{Declared: l})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.HasPrefix(s.upsert, "INSERT INTO") || !strings.Contains(s.upsert, `WHERE t."run" IS NULL OR t."pane" IS NULL OR (t."run", t."pane") <= (excluded."run", excluded."pane")`) {
		t.Fatalf("upsert %s: want the pane guard", s.upsert)
	}
	a, b := []string{"k", `"a"`}, []string{"k", `"b"`}
	const min = etime.Time(1767225600000) // 2026-01-01
	mustWrite(t, s,
		inRun(1, row(a, min, min+60_000, "early", 0, min, "v", "1.25")),
		inRun(1, row(a, min, min+60_000, "late", 2, min+70_000, "v", "3")),
		inRun(1, row(a, min, min+60_000, "on_time", 1, min+60_000, "v", "2")), // older: kept out
		inRun(1, row(b, min, min+60_000, "on_time", 0, min+60_000, "v", "5")),
		inRun(1, row(b, min, min+60_000, "retract", 0, min+61_000)),
		inRun(1, row(a, etime.MinTime, etime.MaxTime, "on_time", 0, etime.MaxTime, "v", "7")),
	)
	mustFlush(t, s)
	got := d.query(t, `SELECT k, ws::text, we AT TIME ZONE 'UTC', wt::text, n::text, coalesce(wm::text, 'NULL'), firing, run::text, pane::text, extra FROM `+quoteIdent(table)+` ORDER BY ws`)
	var lines []string
	for _, r := range got {
		lines = append(lines, strings.Join(r, " | "))
	}
	want := "a | -infinity | infinity | infinity | 7.0 | NULL | on_time | 1 | 0 | x\n" +
		"a | 2026-01-01 00:00:00 | 2026-01-01 00:01:00 +0000 UTC | 2026-01-01 00:00:59.999 | 3.0 | 2026-01-01 00:01:10 | late | 1 | 2 | x"
	if g := strings.Join(lines, "\n"); g != want {
		t.Fatalf("got\n%s\nwant\n%s", g, want)
	}
	// A new run's rows overwrite; Reset removes nothing (the table does
	// not tell a job's rows).
	if n, err := s.Reset(context.Background()); n != 0 || err != nil {
		t.Fatalf("Reset: %d, %v", n, err)
	}
	if n, err := s.MaxRun(context.Background()); n != 1 || err != nil || s.Runless() {
		t.Fatalf("MaxRun %d, %v; Runless %v", n, err, s.Runless())
	}
	// A row another program wrote without run and pane is replaced; a
	// key longer than its varchar(8) fails the flush, never cut to a key
	// of another window.
	d.exec(t, `INSERT INTO `+quoteIdent(table)+` (k, ws, we, n) VALUES ('c', '2026-01-01', '2026-01-01 00:01:00+00', 99)`)
	mustWrite(t, s, inRun(1, row([]string{"k", `"c"`}, min, min+60_000, "on_time", 0, min+60_000, "v", "4")))
	mustFlush(t, s)
	if got := d.query(t, `SELECT n::text FROM `+quoteIdent(table)+` WHERE k = 'c'`); len(got) != 1 || got[0][0] != "4.0" {
		t.Fatalf("a row without run and pane: %v, want it replaced (4.0)", got)
	}
	mustWrite(t, s, inRun(1, row([]string{"k", `"toolongkey1"`}, min, min+60_000, "on_time", 0, min+60_000, "v", "1")))
	if err := s.Flush(context.Background()); err == nil || !strings.Contains(err.Error(), "too long") {
		t.Fatalf("a key longer than its column: %v, want the server's refusal", err)
	}
	s.Discard()
	// A bound written as epoch milliseconds into a timestamp column is
	// refused at open, not at the first flush.
	ms := &Declared{Columns: []connector.LayoutColumn{{Name: "k"}, {Name: "ws", From: "window_start"}, {Name: "we", From: "window_end", Time: "timestamp_ltz"}, {Name: "n", From: "v"}},
		PrimaryKey: []string{"k", "ws", "we"}}
	if _, err := Open(context.Background(), d.url, table, Defs(Text, "k"), Defs(Numeric, "v"), Options{Declared: ms, RetryFor: 1}); err == nil ||
		!strings.Contains(err.Error(), `column "ws" is timestamp(3) without time zone, and the column is written as epoch milliseconds`) {
		t.Fatalf("epoch milliseconds into a timestamp column: %v", err)
	}
	// Without the declared columns: refused, naming them.
	other := d.table(t, "")
	d.exec(t, `CREATE TABLE `+quoteIdent(other)+` (k text, ws timestamp(3), PRIMARY KEY (k, ws))`)
	if _, err := Open(context.Background(), d.url, other, Defs(Text, "k"), Defs(Numeric, "v"), Options{Declared: l, RetryFor: 1}); err == nil ||
		!strings.Contains(err.Error(), `column "we" (timestamptz(3)) is missing`) || !strings.Contains(err.Error(), `the primary key is ("k", "ws"), expected ("k", "ws", "we")`) {
		t.Fatalf("a table without the declared columns: %v", err)
	}
}
