package cli

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/testenv"
)

const sqlJob = `SET 'pipeline.name' = 'orders';
SET 'table.exec.emit.allow-lateness' = '2 min';
SET 'table.exec.mini-batch.enabled' = 'true';
CREATE TABLE orders (
  order_id BIGINT, user_id STRING, amount DECIMAL(10, 2), ts BIGINT,
  rowtime AS TO_TIMESTAMP_LTZ(ts, 3),
  WATERMARK FOR rowtime AS rowtime - INTERVAL '5' SECOND
) WITH ('connector' = 'filesystem', 'path' = 'orders.jsonl', 'format' = 'json');
CREATE TABLE order_stats (user_id STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), orders BIGINT)
  WITH ('connector' = 'jdbc', 'url' = 'jdbc:sqlite:results.db', 'table-name' = 'order_stats');
INSERT INTO order_stats
SELECT user_id, window_start, window_end, COUNT(*) AS orders
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(rowtime), INTERVAL '1' MINUTE))
GROUP BY user_id, window_start, window_end;
`

// filesIn writes files into a new temporary directory and returns it.
func filesIn(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runIn runs weir with args in dir and returns its exit code, stdout and
// stderr.
func runIn(dir string, args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), args, IO{Dir: dir, Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr})
	return code, stdout.String(), stderr.String()
}

// TestSQLValidate: weir validate and weir explain take a .sql job: the
// plan of its YAML twin, warnings for the SET keys weir ignores, errors
// with file:line:column, the offending text, a did-you-mean and the line
// with a caret (exit 2).
func TestSQLValidate(t *testing.T) {
	dir := filesIn(t, map[string]string{"job.sql": sqlJob, "bad.sql": strings.Replace(sqlJob, "GROUP BY user_id", "GROUP BY usr_id", 1)})
	run := func(args ...string) (int, string, string) { return runIn(dir, args...) }
	code, out, errs := run("validate", "job.sql")
	if code != ExitOK || !strings.Contains(out, `job "orders", event time, file source, tumbling windows, 1 aggregate(s)`) ||
		!strings.Contains(errs, `job.sql:3:1: warning: SET key "table.exec.mini-batch.enabled" is not one weir honours; it is ignored`) ||
		!strings.Contains(out, "; 2 warning(s) above") {
		t.Errorf("validate job.sql: %d\n%s\n%s", code, out, errs)
	}
	code, out, _ = run("explain", "job.sql")
	if code != ExitOK || !strings.Contains(out, "window ← 2: tumbling 1m0s by [user_id], allowed lateness 2m0s, unchanged early and late results skipped; orders = count()") || !strings.Contains(out, "sqlite results.db, table order_stats") {
		t.Errorf("explain job.sql: %d\n%s", code, out)
	}
	code, _, errs = run("validate", "bad.sql")
	want := "bad.sql:14:10: table orders has no column usr_id (at \"usr_id\"); did you mean \"user_id\"?\n  GROUP BY usr_id, window_start, window_end;\n           ^\n"
	if code != ExitUsage || !strings.Contains(errs, want) {
		t.Errorf("validate bad.sql: %d\n%s\nwant\n%s", code, errs, want)
	}
}

// TestSQLBackfill: the three layers through SQL, end to end: a job with
// allowed lateness, early firings and too-late rows in the ledger (SET
// 'weir.late.sink'), its results in SQLite or, with the archive, in a
// JSON file whose rows have the sink table's columns (times as Flink's
// TIMESTAMP(3), without run and pane); weir backfill job.sql --verify
// folds the ledger in and the results equal the complete answer; a
// second backfill applies nothing.
func TestSQLBackfill(t *testing.T) {
	orders, err := os.ReadFile("../examples/orders/orders.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	const job = `SET 'pipeline.name' = 'orders_late';
SET 'table.exec.emit.allow-lateness' = '1 min';
SET 'table.exec.emit.early-fire.enabled' = 'true';
SET 'table.exec.emit.early-fire.delay' = '20 s';
SET 'execution.checkpointing.interval' = '1 s';
SET 'state.checkpoints.dir' = 'checkpoints';
SET 'weir.late.sink' = 'too_late';
ARCHIVE
CREATE TABLE orders (order_id STRING, user_id STRING, amount DECIMAL(10, 2), ts BIGINT,
  rowtime AS TO_TIMESTAMP_LTZ(ts, 3), WATERMARK FOR rowtime AS rowtime - INTERVAL '5' SECOND
) WITH ('connector' = 'filesystem', 'path' = 'orders.jsonl', 'format' = 'json');
CREATE TABLE stats (user_id STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), orders BIGINT, total DECIMAL(38, 2))
  WITH (SINK);
CREATE TABLE too_late (order_id STRING, user_id STRING, amount DECIMAL(10, 2), ts BIGINT)
  WITH ('connector' = 'ledger', 'dir' = 'ledger');
INSERT INTO stats
SELECT user_id, window_start, window_end, COUNT(*), SUM(amount)
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(rowtime), INTERVAL '1' MINUTE))
GROUP BY user_id, window_start, window_end;
`
	for name, sink := range map[string][2]string{
		"sqlite": {`'connector' = 'jdbc', 'url' = 'jdbc:sqlite:results.db', 'table-name' = 'stats'`, ""},
		"json":   {`'connector' = 'filesystem', 'path' = 'stats.jsonl', 'format' = 'json'`, "SET 'weir.archive.dir' = 'archive';"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filesIn(t, map[string]string{"orders.jsonl": string(orders), "job.sql": strings.NewReplacer("SINK", sink[0], "ARCHIVE", sink[1]).Replace(job)})
			run := func(args ...string) (int, string) {
				code, out, errs := runIn(dir, args...)
				return code, out + errs
			}
			code, out := run("run", "job.sql", "--deterministic", "--now", "2026-06-01T00:00:00Z")
			if code != ExitOK || !strings.Contains(out, "conservation holds: 604 in = 568 accepted (on time or late) + 32 side output") {
				t.Fatalf("run: exit %d\n%s", code, out)
			}
			code, out = run("backfill", "job.sql", "--verify")
			if code != ExitOK || !strings.Contains(out, "backfill applied 32 entries, 31 windows revised") || !strings.Contains(out, "results now equal the complete answer: 136 windows") {
				t.Fatalf("backfill: exit %d\n%s", code, out)
			}
			code, out = run("backfill", "job.sql", "--verify")
			if code != ExitOK || !strings.Contains(out, "backfill applied 0 entries, 0 windows revised") || !strings.Contains(out, "results now equal the complete answer") {
				t.Fatalf("second backfill: exit %d\n%s", code, out)
			}
			if name == "json" {
				b, err := os.ReadFile(filepath.Join(dir, "stats.backfill.jsonl"))
				if err != nil || !strings.Contains(string(b), `"window_start":"2026-01-01 00:05:00.000"`) {
					t.Errorf("corrections %s (%v): want rows with the table's columns", b, err)
				}
			}
		})
	}
}

// TestSQLKafkaPostgres: a SQL job with Flink's Kafka options reads a topic
// (kfake) to its end (scan.bounded.mode latest-offset), and a statement
// set writes the windows into Postgres through Flink's jdbc:postgresql
// URL and into a JSON file: the table holds one row per window of the
// file, each with the file's last revision.
func TestSQLKafkaPostgres(t *testing.T) {
	pg := testenv.Postgres(t)
	u, err := url.Parse(pg)
	if err != nil {
		t.Fatal(err)
	}
	orders, err := os.ReadFile("../examples/orders/orders.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	broker := kafkaInput(t, string(orders))
	user := ""
	if u.User != nil {
		user = u.User.Username()
	}
	table := fmt.Sprintf("sql_kafka_%d", time.Now().UnixNano())
	job := fmt.Sprintf(`SET 'pipeline.name' = 'sql_kafka';
CREATE TABLE orders (order_id STRING, user_id STRING, amount DECIMAL(10, 2), ts BIGINT,
  rowtime AS TO_TIMESTAMP_LTZ(ts, 3), WATERMARK FOR rowtime AS rowtime - INTERVAL '5' SECOND
) WITH ('connector' = 'kafka', 'topic' = 'in', 'properties.bootstrap.servers' = '%s',
        'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = 'json');
CREATE TABLE pg (user_id STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), total DECIMAL(38, 2))
  WITH ('connector' = 'jdbc', 'url' = 'jdbc:postgresql://%s%s?%s', 'table-name' = '%s', 'username' = '%s');
CREATE TABLE file (user_id STRING, window_start BIGINT, window_end BIGINT, amount DECIMAL(38, 2))
  WITH ('connector' = 'filesystem', 'path' = 'totals.jsonl', 'format' = 'json');
EXECUTE STATEMENT SET BEGIN
INSERT INTO pg SELECT user_id, window_start, window_end, SUM(amount) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(rowtime), INTERVAL '1' MINUTE)) GROUP BY user_id, window_start, window_end;
INSERT INTO file SELECT user_id, window_start, window_end, SUM(amount) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(rowtime), INTERVAL '1' MINUTE)) GROUP BY user_id, window_start, window_end;
END;
`, broker, u.Host, u.Path, u.RawQuery, table, user)
	dir := filesIn(t, map[string]string{"job.sql": job})
	code, _, errs := runIn(dir, "run", "job.sql")
	if code != ExitOK || !strings.Contains(errs, "conservation holds: 604 in") {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	// The file's last revision of each window, by key and window.
	want := map[string]string{}
	b, err := os.ReadFile(filepath.Join(dir, "totals.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.Lines(string(b)) {
		var r struct {
			User   string          `json:"user_id"`
			Start  int64           `json:"window_start"`
			Amount json.RawMessage `json:"amount"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		want[fmt.Sprintf("%s %d", r.User, r.Start)] = string(r.Amount)
	}
	db, err := sql.Open("pgx", pg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t.Cleanup(func() { db.Exec(`DROP TABLE IF EXISTS "` + table + `"`) })
	rows, err := db.Query(`SELECT user_id, window_start, total::text FROM "`+table+`" WHERE job = $1`, "sql_kafka")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]string{}
	for rows.Next() {
		var user, total string
		var start int64
		if err := rows.Scan(&user, &start, &total); err != nil {
			t.Fatal(err)
		}
		got[fmt.Sprintf("%s %d", user, start)] = total
	}
	if len(got) != len(want) || len(want) < 100 {
		t.Fatalf("%d rows in Postgres, %d windows in the file", len(got), len(want))
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("window %s: Postgres %s, the file %s", k, got[k], w)
		}
	}
}

// TestSQLDeclaredPostgres: a Flink job's jdbc table, made beforehand as
// for Flink (TIMESTAMP(3) bounds, a DECIMAL(38, 2), its own primary key,
// no column of weir's), takes the job's rows with 'weir.layout' =
// 'declared'; its mixed-case table-name is the lower-case table, as
// Postgres reads Flink's unquoted name. The table holds the file's last
// revision of each window, and a second run, under another file name (so
// another job name), overwrites them: not a row more.
func TestSQLDeclaredPostgres(t *testing.T) {
	pg := testenv.Postgres(t)
	u, err := url.Parse(pg)
	if err != nil {
		t.Fatal(err)
	}
	orders, err := os.ReadFile("../examples/orders/orders.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	user := ""
	if u.User != nil {
		user = u.User.Username()
	}
	table := fmt.Sprintf("Sql_Declared_%d", time.Now().UnixNano())
	db, err := sql.Open("pgx", pg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t.Cleanup(func() { db.Exec(`DROP TABLE IF EXISTS ` + table) })
	if _, err := db.Exec(`CREATE TABLE ` + table + ` (user_id varchar(64), window_start timestamp(3), window_end timestamp(3), total numeric(38, 2), PRIMARY KEY (user_id, window_start, window_end))`); err != nil {
		t.Fatal(err)
	}
	job := fmt.Sprintf(`SET 'table.exec.emit.allow-lateness' = '2 min';
CREATE TABLE orders (order_id STRING, user_id STRING, amount DECIMAL(10, 2), ts BIGINT,
  rowtime AS TO_TIMESTAMP_LTZ(ts, 3), WATERMARK FOR rowtime AS rowtime - INTERVAL '5' SECOND
) WITH ('connector' = 'filesystem', 'path' = 'orders.jsonl', 'format' = 'json');
CREATE TABLE pg (user_id STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), total DECIMAL(38, 2),
  PRIMARY KEY (user_id, window_start, window_end) NOT ENFORCED
) WITH ('connector' = 'jdbc', 'url' = 'jdbc:postgresql://%s%s?%s', 'table-name' = '%s', 'username' = '%s', 'weir.layout' = 'declared');
CREATE TABLE file (user_id STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), amount DECIMAL(38, 2))
  WITH ('connector' = 'filesystem', 'path' = 'totals.jsonl', 'format' = 'json');
EXECUTE STATEMENT SET BEGIN
INSERT INTO pg SELECT user_id, window_start, window_end, SUM(amount) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(rowtime), INTERVAL '1' MINUTE)) GROUP BY user_id, window_start, window_end;
INSERT INTO file SELECT user_id, window_start, window_end, SUM(amount) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(rowtime), INTERVAL '1' MINUTE)) GROUP BY user_id, window_start, window_end;
END;
`, u.Host, u.Path, u.RawQuery, table, user)
	dir := filesIn(t, map[string]string{"job.sql": job, "again.sql": job, "orders.jsonl": string(orders)})
	for _, f := range []string{"job.sql", "again.sql"} {
		code, _, errs := runIn(dir, "run", f, "--deterministic")
		if code != ExitOK || !strings.Contains(errs, "conservation holds: 604 in") {
			t.Fatalf("%s: exit %d\n%s", f, code, errs)
		}
		want := map[string]string{}
		b, err := os.ReadFile(filepath.Join(dir, "totals.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for l := range strings.Lines(string(b)) {
			var r struct {
				User   string          `json:"user_id"`
				Start  string          `json:"window_start"`
				Amount json.RawMessage `json:"amount"`
			}
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			want[r.User+" "+r.Start] = string(r.Amount)
		}
		rows, err := db.Query(`SELECT user_id, to_char(window_start, 'YYYY-MM-DD HH24:MI:SS.MS'), total::text FROM ` + table)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for rows.Next() {
			var user, start, total string
			if err := rows.Scan(&user, &start, &total); err != nil {
				t.Fatal(err)
			}
			got[user+" "+start] = total
		}
		rows.Close()
		if len(got) != len(want) || len(want) < 100 {
			t.Fatalf("%s: %d rows in Postgres, %d windows in the file", f, len(got), len(want))
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s: window %s: Postgres %s, the file %s", f, k, got[k], w)
			}
		}
	}
}

// TestSQLSelect: a bare SELECT prints its rows as JSON lines on stdout,
// a column per select item (aliases, column names, EXPR$n), window bounds
// as Flink's TIMESTAMP(3).
func TestSQLSelect(t *testing.T) {
	in := `{"user":"ann","amount":5,"ts":1767225600000}
{"user":"bob","amount":7,"ts":1767225601000}
{"user":"ann","amount":1,"ts":1767225661000}
`
	job := `CREATE TABLE orders (user STRING, amount BIGINT, ts BIGINT, rowtime AS TO_TIMESTAMP_LTZ(ts, 3), WATERMARK FOR rowtime AS rowtime)
  WITH ('connector' = 'filesystem', 'path' = 'in.jsonl');
SELECT user, window_end, COUNT(*), SUM(amount) AS total
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(rowtime), INTERVAL '1' MINUTE))
GROUP BY user, window_start, window_end;
`
	code, stdout, stderr := runIn(filesIn(t, map[string]string{"in.jsonl": in, "q.sql": job}), "run", "q.sql", "--deterministic")
	want := `{"user":"ann","window_end":"2026-01-01 00:01:00.000","EXPR$2":1,"total":5}
{"user":"bob","window_end":"2026-01-01 00:01:00.000","EXPR$2":1,"total":7}
{"user":"ann","window_end":"2026-01-01 00:02:00.000","EXPR$2":1,"total":1}
`
	if code != ExitOK || stdout != want {
		t.Errorf("exit %d\n%s\nwant\n%s\n%s", code, stdout, want, stderr)
	}
}

// TestSQLView: a Nexmark-shaped job: a table of nested rows whose time
// attribute is a CASE over them, a view that projects one kind's nested
// fields under their names and filters that kind, and a legacy session
// window over the view by its alias, with WHERE and an aggregate of an
// expression: its rows equal those of the same query over the view's
// rows given flat.
func TestSQLView(t *testing.T) {
	var nested, flat strings.Builder
	for i := range 400 {
		ms := 1767225600000 + int64(i)*1500 + int64(i/40)*30000 // gaps: sessions end
		fmt.Fprintf(&nested, `{"event_type":%d,"bid":{"auction":%d,"bidder":%d,"price":%d,"dateTime":%d},"person":{"dateTime":%d}}`+"\n", i%3, i%7, i%5, i%11*10, ms, ms)
		if i%3 == 2 {
			fmt.Fprintf(&flat, `{"auction":%d,"bidder":%d,"price":%d,"dateTime":%d}`+"\n", i%7, i%5, i%11*10, ms)
		}
	}
	const query = `
INSERT INTO out
SELECT B.bidder, count(*) AS bid_count, SUM(B.price * 2) AS doubled,
  SESSION_START(B.dateTime, INTERVAL '10' SECOND) AS starttime, SESSION_END(B.dateTime, INTERVAL '10' SECOND) AS endtime
FROM bid B
WHERE B.price > 10 AND MOD(B.auction, 2) = 0
GROUP BY B.bidder, SESSION(B.dateTime, INTERVAL '10' SECOND);
`
	const out = `CREATE TABLE out (bidder BIGINT, bid_count BIGINT, doubled BIGINT, starttime TIMESTAMP(3), endtime TIMESTAMP(3)) WITH ('connector' = 'filesystem', 'path' = 'out.jsonl');`
	jobs := map[string]string{
		"nested": `CREATE TABLE datagen (
    event_type int,
    person ROW<dateTime TIMESTAMP(3)>,
    bid ROW<auction BIGINT, bidder BIGINT, price BIGINT, dateTime TIMESTAMP(3)>,
    dateTime AS
        CASE
            WHEN event_type = 0 THEN person.dateTime
            WHEN event_type = 1 THEN person.dateTime
            ELSE bid.dateTime
        END,
    WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
) WITH ('connector' = 'filesystem', 'path' = 'in.jsonl');
CREATE VIEW bid AS
SELECT bid.auction, bid.bidder, bid.price, dateTime FROM datagen WHERE event_type = 2;
` + out + query,
		"flat": `CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, dateTime TIMESTAMP(3), WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND)
  WITH ('connector' = 'filesystem', 'path' = 'in.jsonl');
` + out + query,
	}
	inputs := map[string]string{"nested": nested.String(), "flat": flat.String()}
	got := map[string]string{}
	for name, job := range jobs {
		dir := filesIn(t, map[string]string{"in.jsonl": inputs[name], "job.sql": job})
		code, _, stderr := runIn(dir, "run", "job.sql", "--deterministic")
		if code != ExitOK || !strings.Contains(stderr, "conservation holds") {
			t.Fatalf("%s: exit %d\n%s", name, code, stderr)
		}
		b, err := os.ReadFile(filepath.Join(dir, "out.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		got[name] = string(b)
		if name == "nested" && !strings.Contains(stderr, "filtered") {
			t.Errorf("the nested job's summary counts no filtered rows:\n%s", stderr)
		}
	}
	if got["nested"] != got["flat"] || strings.Count(got["flat"], "\n") < 10 || !strings.Contains(got["flat"], `"starttime":"2026-01-01 00:`) {
		t.Errorf("the view's rows:\n%s\nthe flat rows:\n%s", got["nested"], got["flat"])
	}
}

// TestSQLDecimalExpressions: an aggregate of an expression over decimals
// is exact, as the aggregate of the column is (a trial found 0.1 * 3
// summed as 2.99999999999999974).
func TestSQLDecimalExpressions(t *testing.T) {
	dir := filesIn(t, map[string]string{
		"in.jsonl": `{"k":"a","p":0.1,"ts":1767225600000}
{"k":"a","p":0.2,"ts":1767225601000}
{"k":"a","p":0.7,"ts":1767225602000}
`,
		"q.sql": `CREATE TABLE t (k STRING, p DECIMAL(10, 2), ts BIGINT, rt AS TO_TIMESTAMP_LTZ(ts, 3), WATERMARK FOR rt AS rt)
  WITH ('connector' = 'filesystem', 'path' = 'in.jsonl');
SELECT k, SUM(p) AS s, SUM(p * 3) AS s3, SUM(p * 1.2 - 0.01) AS s12, MAX(p * 10) AS mx
FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(rt), INTERVAL '1' MINUTE)) WHERE p * 3 <> 0.6 GROUP BY k, window_start, window_end;
`})
	code, out, errs := runIn(dir, "run", "q.sql", "--deterministic")
	// SUM(p) of a DECIMAL(10, 2) column is 0.80, at the column's scale,
	// and the expressions have Flink's types: p * 3 is a DECIMAL(21, 2),
	// p * 1.2 - 0.01 a DECIMAL(24, 3), p * 10 a DECIMAL(21, 2), so Flink
	// writes 2.40, 0.940 and 7.00, and so does weir.
	if want := `{"k":"a","s":0.80,"s3":2.40,"s12":0.940,"mx":7.00}` + "\n"; code != ExitOK || out != want {
		t.Errorf("exit %d\n%s\nwant %s\n%s", code, out, want, errs)
	}
}

// TestSQLTimestampColumn: a TIMESTAMP(3) time attribute reads Flink's
// JSON text of one (with a space or a T; a TIMESTAMP_LTZ's with a Z) or
// epoch milliseconds; other text is a dead letter saying what it wants.
func TestSQLTimestampColumn(t *testing.T) {
	dir := filesIn(t, map[string]string{
		"in.jsonl": `{"k":"a","ts":"2026-01-01 00:00:01.000"}
{"k":"a","ts":"2026-01-01T00:00:02.5"}
{"k":"a","ts":"2026-01-01 00:00:03Z"}
{"k":"a","ts":1767225604000}
{"k":"a","ts":"yesterday"}
{"k":"a","ts":"2026-01-01 00:01:01.000"}
`,
		"q.sql": `CREATE TABLE t (k STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
  WITH ('connector' = 'filesystem', 'path' = 'in.jsonl');
SELECT k, window_start, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY k, window_start, window_end;
`})
	code, out, errs := runIn(dir, "run", "q.sql", "--deterministic", "--now", "2026-06-01T00:00:00Z")
	want := `{"k":"a","window_start":"2026-01-01 00:00:00.000","n":4}
{"k":"a","window_start":"2026-01-01 00:01:00.000","n":1}
`
	if code != ExitOK || out != want || !strings.Contains(errs, "1 dead letters") && !strings.Contains(errs, "dead letters: 1") {
		t.Errorf("exit %d\n%s\nwant\n%s\n%s", code, out, want, errs)
	}
}
