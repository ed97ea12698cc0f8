package sqljob

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/sqlparse"
	"github.com/weirstream/weir/spec"

	_ "github.com/weirstream/weir/connector/all" // the kinds the specs name
)

// comparable is what a SQL job and its YAML twin must agree on: the plan
// that runs, apart from how its spec was written.
func comparable(p *spec.Plan) string {
	var sinks []string
	for _, s := range append(slices.Clone(p.Sinks.Results), p.Sinks.Late, p.Sinks.LatePartial, p.Sinks.DeadLetter) {
		if s != nil {
			sinks = append(sinks, fmt.Sprintf("%s %s %s %s %s %v", s.Type, s.Path, s.Table, s.URL, s.Topic, s.Brokers))
		}
	}
	ck := "none"
	if p.Checkpoint != nil {
		ck = fmt.Sprintf("%s %v", p.Checkpoint.Dir, p.Checkpoint.Interval)
		if m := p.Checkpoint.MinPause; m != nil {
			ck += fmt.Sprintf(" min pause %v", *m)
		}
	}
	skip := false
	for _, n := range p.Graph.Nodes {
		if w, ok := n.Op.(*spec.WindowOp); ok {
			skip = skip || w.SkipUnchanged
		}
	}
	return fmt.Sprintf("where=%s name=%s key=%v aggs=%+v time=%v source=%s %s %+v %+v format=%v ts=%s/%v wm=%v bound=%v idle=%v window=%v span=%v assigner=%v trigger=%v lateness=%v latefiring=%v skip=%v sinks=%v checkpoint=%s",
		p.Where, p.Name, p.Key, p.Aggregates, p.Time, p.Source.Type, p.Source.Path, p.Source.Kafka, p.Source.Timestamp, p.Format, p.TSField, p.TSUnit, p.WMType, p.Bound, p.IdleTimeout,
		p.WindowKind, p.WindowSpan, p.Assigner, p.Trigger, p.Lateness, p.LateFiringInterval, skip, sinks, ck)
}

// TestTwins: SQL jobs compile to the plans of their YAML twins.
func TestTwins(t *testing.T) {
	for _, c := range []struct{ name, sql, yaml string }{
		{"orders", `
SET 'pipeline.name' = 'orders';
SET 'table.exec.emit.allow-lateness' = '2 min';
SET 'execution.checkpointing.interval' = '1s';
SET 'execution.checkpointing.min-pause' = '500 ms';
SET 'state.checkpoints.dir' = 'checkpoints';
CREATE TABLE orders (
  order_id BIGINT, user_id STRING, amount DECIMAL(10, 2), ts BIGINT,
  rowtime AS TO_TIMESTAMP_LTZ(ts, 3),
  WATERMARK FOR rowtime AS rowtime - INTERVAL '5' SECOND
) WITH ('connector' = 'filesystem', 'path' = 'orders.jsonl', 'format' = 'json');
CREATE TABLE order_stats (user_id STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), orders BIGINT, total DECIMAL(38, 2), biggest DECIMAL(10, 2))
  WITH ('connector' = 'jdbc', 'url' = 'jdbc:sqlite:results.db', 'table-name' = 'order_stats');
INSERT INTO order_stats
SELECT user_id, window_start, window_end, COUNT(*) AS orders, SUM(amount) AS total, MAX(amount) AS biggest
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(rowtime), INTERVAL '1' MINUTE))
GROUP BY user_id, window_start, window_end;`, `
name: orders
source: {type: file, path: orders.jsonl, timestamp: {field: ts, unit: ms}}
watermark: {type: bounded_out_of_orderness, max_out_of_orderness: 4999ms}
key: [user_id]
window: {type: tumbling, size: 1m}
allowed_lateness: 2m
skip_unchanged: true
aggregate:
  - {name: orders, fn: count}
  - {name: total, fn: sum, field: amount}
  - {name: biggest, fn: max, field: amount}
sinks:
  results: {type: sqlite, path: results.db, table: order_stats}
checkpoint: {dir: checkpoints, interval: 1s, min_pause: 500ms}
`},
		{"legacy", `
CREATE TABLE orders (user_id STRING, amount BIGINT, ms BIGINT, ts AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
  WITH ('connector' = 'filesystem', 'path' = 'o.jsonl');
CREATE TABLE out (user_id STRING, s TIMESTAMP(3), e TIMESTAMP(3), n BIGINT, total BIGINT) WITH ('connector' = 'filesystem', 'path' = 'out.jsonl');
INSERT INTO out
SELECT user_id, HOP_START(ts, INTERVAL '1' MINUTE, INTERVAL '10' MINUTE), HOP_END(ts, INTERVAL '1' MINUTE, INTERVAL '10' MINUTE), COUNT(*) AS n, SUM(amount) AS total
FROM orders
GROUP BY HOP(ts, INTERVAL '1' MINUTE, INTERVAL '10' MINUTE), user_id;`, `
name: legacy
source: {type: file, path: o.jsonl, timestamp: {field: ms, unit: ms}}
watermark: {max_out_of_orderness: 4999ms}
key: [user_id]
window: {type: sliding, size: 10m, slide: 1m}
aggregate:
  - {name: n, fn: count}
  - {name: total, fn: sum, field: amount}
sinks:
  results: {type: jsonl, path: out.jsonl}
`},
		{"sliding", `
SET 'table.exec.emit.early-fire.enabled' = 'true';
SET 'table.exec.emit.early-fire.delay' = '10 s';
SET 'table.exec.emit.late-fire.delay' = '30s';
SET 'table.exec.source.idle-timeout' = '1 min';
SET 'table.exec.emit.allow-lateness' = '5 min';
CREATE TABLE readings (sensor STRING, v DOUBLE, at_s BIGINT, t AS TO_TIMESTAMP_LTZ(at_s, 0), WATERMARK FOR t AS t)
  WITH ('connector' = 'filesystem', 'path' = 'readings.csv', 'format' = 'csv');
CREATE TABLE out (sensor STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), n BIGINT, lo DOUBLE, mean DOUBLE, sensors BIGINT) WITH ('connector' = 'filesystem', 'path' = 'out.jsonl');
INSERT INTO out
SELECT sensor, window_start, window_end, COUNT(v) AS n, MIN(v) AS lo, AVG(v) AS mean, COUNT(DISTINCT sensor) AS sensors
FROM TABLE(HOP(DATA => TABLE readings, TIMECOL => DESCRIPTOR(t), SLIDE => INTERVAL '1' MINUTE, SIZE => INTERVAL '5' MINUTES))
GROUP BY window_start, window_end, sensor;`, `
name: sliding
source: {type: file, path: readings.csv, format: csv, timestamp: {field: at_s, unit: s}}
watermark: {type: strictly_ascending, idle_timeout: 1m}
key: [sensor]
window: {type: sliding, size: 5m, slide: 1m}
allowed_lateness: 5m
skip_unchanged: true
late_firing_interval: 30s
trigger: {type: continuous, interval: 10s}
aggregate:
  - {name: n, fn: count, field: v}
  - {name: lo, fn: min, field: v, type: float}
  - {name: mean, fn: avg, field: v, type: float}
  - {name: sensors, fn: count_distinct, field: sensor}
sinks:
  results: {type: jsonl, path: out.jsonl}
`},
		{"sessions", `
CREATE TABLE clicks (user_id STRING, ms BIGINT, ts AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR ts AS ts - INTERVAL '30' SECOND)
  WITH ('connector' = 'filesystem', 'path' = 'clicks.jsonl', 'format' = 'json');
CREATE TABLE visits (user_id STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), clicks BIGINT, firing STRING METADATA) WITH ('connector' = 'print');
INSERT INTO visits
SELECT user_id, window_start, window_end, COUNT(*) AS clicks
FROM TABLE(SESSION(TABLE clicks PARTITION BY user_id, DESCRIPTOR(ts), INTERVAL '10' MINUTE))
GROUP BY window_start, window_end, user_id;`, `
name: sessions
source: {type: file, path: clicks.jsonl, timestamp: {field: ms, unit: ms}}
watermark: {max_out_of_orderness: 29999ms}
key: [user_id]
window: {type: session, gap: 10m}
aggregate:
  - {name: clicks, fn: count}
sinks:
  results: {type: stdout}
`},
		{"where", `
CREATE TABLE bids (auction BIGINT, price BIGINT, channel STRING, extra ROW<tag STRING>, ms BIGINT, ts AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR ts AS ts - INTERVAL '4' SECOND)
  WITH ('connector' = 'filesystem', 'path' = 'bids.jsonl');
CREATE TABLE out (auction BIGINT, window_start TIMESTAMP(3), window_end TIMESTAMP(3), bids BIGINT) WITH ('connector' = 'print');
INSERT INTO out
SELECT auction, window_start, window_end, COUNT(*)
FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND))
WHERE MOD(auction, 123) = 0 AND channel IN ('apple', 'google') AND price BETWEEN 10 AND 1000 OR extra.tag IS NOT NULL
GROUP BY auction, window_start, window_end;`, `
name: where
source: {type: file, path: bids.jsonl, timestamp: {field: ms, unit: ms}}
watermark: {max_out_of_orderness: 3999ms}
where: "(((MOD(auction, 123) = 0) AND (channel IN ('apple', 'google'))) AND (price BETWEEN 10 AND 1000)) OR (extra.tag IS NOT NULL)"
key: [auction]
window: {type: tumbling, size: 10s}
aggregate:
  - {name: bids, fn: count}
sinks:
  results: {type: stdout}
`},
		{"kafka", `
SET 'table.exec.source.idle-timeout' = '30 s';
SET 'weir.late.sink' = 'late';
CREATE TABLE payments (account STRING, amount DECIMAL(12, 2), ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp', WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)
  WITH ('connector' = 'kafka', 'topic' = 'payments', 'properties.bootstrap.servers' = '127.0.0.1:9092,127.0.0.1:9093',
        'properties.group.id' = 'g', 'scan.startup.mode' = 'group-offsets', 'scan.bounded.mode' = 'latest-offset', 'format' = 'json');
CREATE TABLE totals (account STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), total DECIMAL(38, 2), PRIMARY KEY (account, window_start, window_end) NOT ENFORCED)
  WITH ('connector' = 'jdbc', 'url' = 'jdbc:postgresql://127.0.0.1:5432/test?sslmode=disable', 'table-name' = 'totals', 'username' = 'postgres');
CREATE TABLE late (account STRING, amount DECIMAL(12, 2)) WITH ('connector' = 'jdbc', 'url' = 'jdbc:postgresql://127.0.0.1:5432/test?sslmode=disable', 'table-name' = 'late_payments', 'username' = 'postgres');
INSERT INTO totals
SELECT account, window_start, window_end, SUM(amount)
FROM TABLE(TUMBLE(TABLE payments, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY account, window_start, window_end;`, `
name: kafka
source:
  type: kafka
  kafka: {brokers: ['127.0.0.1:9092', '127.0.0.1:9093'], topic: payments, group: g, start: committed, stop_at_end: true}
  timestamp: {source: kafka}
watermark: {max_out_of_orderness: 1999ms, idle_timeout: 30s}
key: [account]
window: {type: tumbling, size: 10s}
aggregate:
  - {name: total, fn: sum, field: amount}
sinks:
  results: {type: postgres, url: 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable', table: totals}
  late: {type: postgres, url: 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable', table: late_payments}
`},
		{"upsert-kafka", `
CREATE TABLE payments (account STRING, amount BIGINT, ms BIGINT, ts AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)
  WITH ('connector' = 'kafka', 'topic' = 'payments', 'properties.bootstrap.servers' = 'k:9092', 'scan.startup.mode' = 'timestamp', 'scan.startup.timestamp-millis' = '1767225600000');
CREATE TABLE totals (account STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), total BIGINT, PRIMARY KEY (account, window_start, window_end) NOT ENFORCED)
  WITH ('connector' = 'upsert-kafka', 'topic' = 'totals', 'properties.bootstrap.servers' = 'k:9092', 'key.format' = 'json', 'value.format' = 'json');
INSERT INTO totals
SELECT account, window_start, window_end, SUM(amount)
FROM TABLE(TUMBLE(TABLE payments, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY account, window_start, window_end;`, `
name: upsert-kafka
source:
  type: kafka
  kafka: {brokers: ['k:9092'], topic: payments, start: '2026-01-01T00:00:00Z'}
  timestamp: {field: ms, unit: ms}
watermark: {max_out_of_orderness: 1999ms}
key: [account]
window: {type: tumbling, size: 10s}
aggregate:
  - {name: total, fn: sum, field: amount}
sinks:
  results: {type: kafka, brokers: ['k:9092'], topic: totals}
`},
	} {
		t.Run(c.name, func(t *testing.T) {
			j, err := Compile(c.sql, c.name+".sql")
			if err != nil {
				t.Fatal(err)
			}
			got, err := j.Plan()
			if err != nil {
				t.Fatalf("the SQL job's spec does not compile: %v\n%+v", err, j.Spec)
			}
			want, err := spec.Parse([]byte(c.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if g, w := comparable(got), comparable(want); g != w {
				t.Errorf("the SQL job's plan\n%s\nis not its twin's\n%s", g, w)
			}
		})
	}
}

// TestUpsertKafkaKey: an upsert-kafka table's records are keyed by its
// primary key's columns (spec.Sink.PrimaryKey), as Flink's are.
func TestUpsertKafkaKey(t *testing.T) {
	j, err := Compile(`CREATE TABLE orders (user_id STRING, amount BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
  WITH ('connector' = 'filesystem', 'path' = 'orders.jsonl', 'format' = 'json');
CREATE TABLE totals (who STRING, ws TIMESTAMP(3), we TIMESTAMP(3), total BIGINT, PRIMARY KEY (who, ws, we) NOT ENFORCED)
  WITH ('connector' = 'upsert-kafka', 'topic' = 'totals', 'properties.bootstrap.servers' = '127.0.0.1:9092', 'key.format' = 'json', 'value.format' = 'json');
INSERT INTO totals SELECT user_id, window_start, window_end, SUM(amount)
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY user_id, window_start, window_end;`, "u.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Plan(); err != nil {
		t.Fatal(err)
	}
	if k := j.Spec.Sinks.Results[0]; !slices.Equal(k.PrimaryKey, []string{"who", "ws", "we"}) {
		t.Errorf("primary key %q", k.PrimaryKey)
	}
}

// TestErrors: what the compiler refuses, with its place and a hint.
func TestErrors(t *testing.T) {
	const table = `CREATE TABLE orders (user_id STRING, amount BIGINT, ms BIGINT, ts AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH ('connector' = 'filesystem', 'path' = 'o.jsonl');
CREATE TABLE out (user_id STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), n BIGINT) WITH ('connector' = 'filesystem', 'path' = 'out.jsonl');
`
	const insert = "INSERT INTO out SELECT user_id, window_start, window_end, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY user_id, window_start, window_end;"
	rowTable := strings.Replace(table, "amount BIGINT,", "amount BIGINT, ship ROW<fee DECIMAL(10, 2), addr ROW<city STRING>>,", 1)
	for _, c := range []struct{ name, sql, want string }{
		{"unknown table", table + strings.Replace(insert, "TABLE orders", "TABLE ordrs", 1), `unknown table ordrs (at "ordrs"); did you mean "orders"?`},
		{"unknown column", table + strings.Replace(insert, "GROUP BY user_id", "GROUP BY usr_id", 1), `table orders has no column usr_id (at "usr_id"); did you mean "user_id"?`},
		{"unknown selected column", table + strings.Replace(insert, "SELECT user_id", "SELECT usr_id", 1), `table orders has no column usr_id (at "usr_id"); did you mean "user_id"?`},
		{"jdbc without table-name", strings.Replace(table, "'connector' = 'filesystem', 'path' = 'out.jsonl'", "'connector' = 'jdbc', 'url' = 'jdbc:sqlite:out.db'", 1) + insert,
			`table out: a jdbc table needs 'table-name', the database table it writes (at "jdbc"); add 'table-name' = 'out' to its WITH options`},
		{"a typo of an emit key", "SET 'table.exec.emit.allow-latenes' = '1 min';\n" + table + insert,
			`SET key "table.exec.emit.allow-latenes" is not one weir honours (at "table.exec.emit.allow-latenes"); did you mean "table.exec.emit.allow-lateness"?`},
		{"a window table function's records as rows", table + "INSERT INTO out SELECT user_id, window_start, window_end, amount AS n FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE));",
			"the records of a window table function are compiled into a window aggregation or deduplication only; selecting or joining them as rows is not compiled yet"},
		{"a deduplication's descriptor misspelled", table + "INSERT INTO out SELECT user_id, window_start, window_end, amount AS n FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end, user_id ORDER BY ts DESC) AS rn FROM TABLE(TUMBLE(TABLE orders, DESCRIPTR(ts), INTERVAL '1' MINUTE))) WHERE rn = 1;",
			`TUMBLE's second argument is DESCRIPTOR of one column (at "DESCRIPTR(ts)")`},
		{"decimal out of range", strings.Replace(table, "amount BIGINT", "amount DECIMAL(40, 2)", 1) + insert, `column amount: DECIMAL(40, 2) is out of range`},
		{"unknown option", strings.Replace(table, "'path' = 'o.jsonl'", "'pth' = 'o.jsonl'", 1) + insert, `table orders: unknown option 'pth' (at "pth"); did you mean "path"?`},
		{"no watermark", strings.Replace(table, ", WATERMARK FOR ts AS ts - INTERVAL '5' SECOND", "", 1) + insert, "ts is not a time attribute of table orders: it has no watermark"},
		{"the time's source field", strings.Replace(table, "ms BIGINT, ts AS", "ms BIGINT, at BIGINT, ts AS", 1) + strings.Replace(insert, "DESCRIPTOR(ts)", "DESCRIPTOR(at)", 1),
			"at is not a time attribute of table orders: it has no watermark (at \"at\"); the table's time attribute is ts, the column of its WATERMARK: write DESCRIPTOR(ts)"},
		{"bound into a string", strings.Replace(table, "window_end TIMESTAMP(3)", "window_end STRING", 1) + insert, `table out: column window_end holds window_end, a time (at "window_end"); declare it TIMESTAMP(3), TIMESTAMP_LTZ(3) or BIGINT (epoch milliseconds)`},
		{"unknown metadata", strings.Replace(table, "n BIGINT)", "n BIGINT, pne BIGINT METADATA FROM 'pne')", 1) + insert, `table out: pne is not metadata weir writes (at "pne"); did you mean "pane"?`},
		{"renamed key in a table", strings.Replace(strings.Replace(table, "(user_id STRING, window_start", "(uid STRING, window_start", 1), "'connector' = 'filesystem', 'path' = 'out.jsonl'", "'connector' = 'jdbc', 'url' = 'jdbc:sqlite:r.db', 'table-name' = 'out'", 1) + insert,
			`table out: column uid would hold user_id (at "uid"); name the column user_id`},
		{"unknown aggregate", table + strings.Replace(insert, "COUNT(*) AS n", "SUMM(amount) AS n", 1), `SUMM is not an aggregate weir compiles (at "SUMM"); did you mean "SUM"?`},
		{"two inserts", table + insert + insert, "a second INSERT; a file holds one"},
		{"an implicit join", table + "INSERT INTO out SELECT a.user_id, 1, 2, a.amount FROM orders a, orders b WHERE a.user_id = b.user_id;",
			"FROM a, b (an implicit join, its condition in the WHERE) is not compiled; nor is a join of two tables' records (an interval join, Flink's window join of table functions) (at \",\"); write the join as ... JOIN ... ON its condition"},
		{"where on an unknown column", table + strings.Replace(insert, "GROUP BY", "WHERE amont > 5 GROUP BY", 1), `table orders has no column amont (at "amont"); did you mean "amount"?`},
		{"where comparing the time attribute with a number", table + strings.Replace(insert, "GROUP BY", "WHERE ts > 5 GROUP BY", 1), "5 is a number, which is not compared with a TIMESTAMP_LTZ (as in Flink)"},
		{"where of a number", table + strings.Replace(insert, "GROUP BY", "WHERE amount + 1 GROUP BY", 1), `WHERE takes a condition (a BOOLEAN), and amount + 1 is a number (at "amount + 1"); write a comparison, such as amount + 1 > 0, or amount + 1 IS NOT NULL`},
		{"filter of a string", table + strings.Replace(insert, "COUNT(*) AS n", "COUNT(*) FILTER (WHERE user_id) AS n", 1), `FILTER (WHERE ...) takes a condition (a BOOLEAN), and user_id is a string (at "user_id")`},
		{"filter of a literal", table + strings.Replace(insert, "COUNT(*) AS n", "COUNT(*) FILTER (WHERE 1) AS n", 1), `FILTER (WHERE ...) takes a condition (a BOOLEAN), and 1 is a number`},
		{"filter of an aggregate", table + strings.Replace(insert, "COUNT(*) AS n", "COUNT(*) FILTER (WHERE COUNT(*) > 1) AS n", 1), `FILTER (WHERE ...) holds an aggregate, COUNT(*), as Flink refuses too (at "COUNT(*)"); filter on the rows' columns; compare aggregates in HAVING`},
		{"where with an unknown function", table + strings.Replace(insert, "GROUP BY", "WHERE MODE(amount, 2) = 0 GROUP BY", 1), `function MODE is not supported in weir's expressions (at "MODE"); did you mean "MOD"?`},
		{"having of an unknown aggregate", table + strings.Replace(insert, "user_id, window_start, window_end;", "user_id, window_start, window_end HAVING MAXX(amount) > 1;", 1), "amount is neither grouped by nor an aggregate of the select list"},
		{"columns", table + strings.Replace(insert, ", COUNT(*) AS n", "", 1), "the query has 3 columns and table out has 4 (at \"SELECT\"); select one column per column of out (user_id, window_start, window_end, n), in its order"},
		{"legacy bounds", table + "INSERT INTO out SELECT user_id, TUMBLE_START(ts, INTERVAL '1' MINUTE), TUMBLE_END(ts, INTERVAL '2' MINUTE), COUNT(*) AS n FROM orders GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE), user_id;",
			"TUMBLE_END's arguments are not its group window's (at \"TUMBLE_END\"); give it the arguments of TUMBLE(ts, INTERVAL '1' MINUTE)"},
		{"no group window", table + "INSERT INTO out SELECT user_id, 1, 2, COUNT(*) AS n FROM orders GROUP BY user_id;", "only windowed aggregations are compiled yet"},
		{"misspelt window", table + strings.Replace(insert, "TUMBLE(", "TUMBEL(", 1), `unknown window function TUMBEL (at "TUMBEL"); did you mean "TUMBLE"?`},
		{"month", table + strings.Replace(insert, "'1' MINUTE", "'1' MONTH", 1), "INTERVAL '1' MONTH is not a fixed length of time"},
		{"misspelt connector", strings.Replace(table, "'connector' = 'filesystem', 'path' = 'out.jsonl'", "'connector' = 'filesytem', 'path' = 'out.jsonl'", 1) + insert, `2:103: table out: connector 'filesytem' is not compiled as a sink of results (at "filesytem"); did you mean "filesystem"?`},
		{"negative", table + strings.Replace(insert, "'1' MINUTE", "'-1' MINUTE", 1), "INTERVAL '-1' MINUTE is negative"},
		{"HOP of a size that is no multiple of its slide", table + strings.Replace(insert, "TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE)", "HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND, INTERVAL '5' SECOND)", 1),
			"HOP's size (5s) is not a whole number of slides (10s), which Flink's HOP requires (at \"HOP\"); make the size a multiple of the slide, such as 10s"},
		{"an unknown time zone", "SET 'table.local-time-zone' = 'Mars/Olympus';\n" + table + insert,
			"table.local-time-zone \"Mars/Olympus\" is not supported: \"Mars/Olympus\" is no time zone weir knows"},
		{"a local time zone with daylight saving", "SET 'table.local-time-zone' = 'Europe/Berlin';\n" + table + insert, "Europe/Berlin changes its offset over the year"},
		{"a jdbc table keyed by its key alone", strings.Replace(strings.Replace(table, "n BIGINT) WITH", "n BIGINT, PRIMARY KEY (user_id) NOT ENFORCED) WITH", 1), "'connector' = 'filesystem', 'path' = 'out.jsonl'", "'connector' = 'jdbc', 'url' = 'jdbc:sqlite:r.db', 'table-name' = 'out'", 1) + insert,
			"table out: the primary key leaves out window_start, which keys the query's results (at \"PRIMARY KEY\"); declare PRIMARY KEY (user_id, window_start, window_end) NOT ENFORCED"},
		{"a jdbc table keyed by no column", strings.Replace(strings.Replace(table, "n BIGINT) WITH", "n BIGINT, PRIMARY KEY (kk, window_start, window_end) NOT ENFORCED) WITH", 1), "'connector' = 'filesystem', 'path' = 'out.jsonl'", "'connector' = 'jdbc', 'url' = 'jdbc:sqlite:r.db', 'table-name' = 'out'", 1) + insert,
			"table out: primary key column kk holds no key field or window bound of the query"},
		{"TO_TIMESTAMP without an argument", strings.Replace(table, "ts AS TO_TIMESTAMP_LTZ(ms, 3)", "ts AS TO_TIMESTAMP()", 1) + insert, "TO_TIMESTAMP as a time attribute takes a text and"},
		{"a misspelt weir key", "SET 'weir.late.sinks' = 'out';\n" + table + insert, `SET key "weir.late.sinks" is not one of weir's (at "weir.late.sinks"); did you mean "weir.late.sink"?`},
		{"early without delay", "SET 'table.exec.emit.early-fire.enabled' = 'true';\n" + table + insert, "early firing needs its delay, as in Flink"},
		{"unknown type", strings.Replace(table, "amount BIGINT", "amount BIGNT", 1) + insert, `1:45: unknown type BIGNT (at "BIGNT"); did you mean "BIGINT"?`},
		{"unknown nested type", strings.Replace(table, "amount BIGINT", "amount ROW<a STRNG>", 1) + insert, `unknown type STRNG (at "STRNG"); did you mean "STRING"?`},
		{"an unnamed aggregate into a string column", strings.Replace(table, "n BIGINT) WITH", "n STRING) WITH", 1) + strings.Replace(insert, "COUNT(*) AS n", "COUNT(*)", 1),
			"table out: column n is a STRING and the query's column 4 is an integer, which Flink's INSERT refuses"},
		{"unknown ROW field in a view", rowTable + "CREATE VIEW v AS SELECT user_id, ship.fe AS fee, ts FROM orders;\n" + strings.Replace(insert, "TABLE orders", "TABLE v", 1),
			`3:39: ship is a ROW without a field fe (at "fe"); did you mean "fee"?`},
		{"unknown nested ROW field in a computed column", strings.Replace(rowTable, "ts AS", "c AS ship.addr.cty, ts AS", 1) + insert,
			`ship.addr is a ROW without a field cty (at "cty"); did you mean "city"?`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Compile(c.sql, "job.sql")
			var pe *sqlparse.Error
			if !errors.As(err, &pe) || pe.Pos.Line == 0 {
				t.Fatalf("got %v (a %T), want an *sqlparse.Error with a position", err, err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v\nwant %s", err, c.want)
			}
		})
	}
}

// TestColumns: a JSON sink's rows get the sink table's columns, by
// position, in its order, with its names and time formats; aggregates
// take the sink's names; metadata columns hold the firing's.
func TestColumns(t *testing.T) {
	j, err := Compile(`
CREATE TABLE orders (user_id STRING, amount BIGINT, ms BIGINT, ts AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
  WITH ('connector' = 'filesystem', 'path' = 'o.jsonl');
CREATE TABLE out (uid STRING, wstart TIMESTAMP(3), wend BIGINT, kind STRING METADATA FROM 'firing', n BIGINT, total DOUBLE, wm TIMESTAMP_LTZ(3) METADATA FROM 'watermark', pane BIGINT METADATA)
  WITH ('connector' = 'filesystem', 'path' = 'out.jsonl');
INSERT INTO out
SELECT user_id AS u, TUMBLE_START(ts, INTERVAL '1' MINUTE), TUMBLE_END(ts, INTERVAL '1' MINUTE), COUNT(*), SUM(amount) AS s
FROM orders GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE), user_id;`, "cols.sql")
	if err != nil {
		t.Fatal(err)
	}
	p, err := j.Plan()
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(p.Sinks.Results[0].Columns, p.Aggregates)
	want := "[{uid user_id    <nil> } {wstart window_start timestamp   <nil> } {wend window_end ms   <nil> } {kind firing    <nil> } {n n    <nil> } {total total   double <nil> } {wm watermark timestamp_ltz   <nil> } {pane pane    <nil> }] [{n count    } {total sum amount   }]"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestLateFireDisabled: late-fire.enabled = 'false', which weir does not
// honour, is warned about, not silently ignored.
func TestLateFireDisabled(t *testing.T) {
	j, err := Compile(`SET 'table.exec.emit.late-fire.enabled' = 'false';
CREATE TABLE orders (user_id STRING, ms BIGINT, ts AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH ('connector' = 'filesystem', 'path' = 'o.jsonl');
CREATE TABLE out (user_id STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), n BIGINT) WITH ('connector' = 'print');
INSERT INTO out SELECT user_id, window_start, window_end, COUNT(*) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY user_id, window_start, window_end;`, "j.sql")
	if err != nil {
		t.Fatal(err)
	}
	if len(j.Warnings) != 1 || !strings.Contains(j.Warnings[0], "1:1: table.exec.emit.late-fire.enabled = 'false' is not honoured") {
		t.Errorf("warnings %q", j.Warnings)
	}
}

// TestHints: a SELECT's hint sets the query's emit options, a table's
// hint overrides its WITH options (as Flink's dynamic table options);
// other hints are refused.
func TestHints(t *testing.T) {
	const tables = `CREATE TABLE orders (user_id STRING, ms BIGINT, ts AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH ('connector' = 'filesystem', 'path' = 'o.jsonl');
CREATE TABLE out (user_id STRING, s TIMESTAMP(3), n BIGINT) WITH ('connector' = 'print');
`
	j, err := Compile(tables+`INSERT INTO out SELECT /*+ OPTIONS('table.exec.emit.allow-lateness' = '3 min', 'table.exec.emit.late-fire.delay' = '10 s') */
  user_id, TUMBLE_START(ts, INTERVAL '1' MINUTE), COUNT(*) FROM orders /*+ OPTIONS('path' = 'other.jsonl') */ GROUP BY user_id, TUMBLE(ts, INTERVAL '1' MINUTE);`, "h.sql")
	if err != nil {
		t.Fatal(err)
	}
	s := j.Spec
	if s.AllowedLateness == nil || *s.AllowedLateness != 180_000 || s.LateFiringInterval == nil || *s.LateFiringInterval != 10_000 || s.Source.Path != "other.jsonl" {
		t.Errorf("lateness %v, late firing %v, path %q", s.AllowedLateness, s.LateFiringInterval, s.Source.Path)
	}
	// A table's hint in a view's FROM is of the view's scan: of a
	// window table function over the view, a select from it, a view of
	// it, and the records of a join.
	for _, q := range []string{
		`CREATE VIEW v AS SELECT * FROM orders /*+ OPTIONS('path' = 'other.jsonl') */;
INSERT INTO out SELECT user_id, window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE v, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY user_id, window_start, window_end;`,
		`CREATE VIEW v AS SELECT user_id, ts FROM orders /*+ OPTIONS('path' = 'other.jsonl') */ WHERE user_id <> 'x';
INSERT INTO out SELECT user_id, ts, 1 FROM v;`,
		`CREATE VIEW v AS SELECT * FROM orders;
CREATE VIEW w AS SELECT * FROM v /*+ OPTIONS('path' = 'other.jsonl') */;
INSERT INTO out SELECT user_id, window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE w, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY user_id, window_start, window_end;`,
	} {
		j, err := Compile(tables+q, "v.sql")
		if err != nil {
			t.Fatal(err)
		}
		if p := j.Spec.Source.Path; p != "other.jsonl" {
			t.Errorf("%s: path %q", q, p)
		}
	}
	for hint, want := range map[string]string{
		"/*+ BROADCAST(orders) */":              "this hint is not one weir reads",
		"/*+ OPTIONS('pipeline.name' = 'x') */": "pipeline.name is not an option of a query",
	} {
		_, err := Compile(tables+"INSERT INTO out SELECT "+hint+" user_id, TUMBLE_START(ts, INTERVAL '1' MINUTE), COUNT(*) FROM orders GROUP BY user_id, TUMBLE(ts, INTERVAL '1' MINUTE);", "h.sql")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %s", hint, err, want)
		}
	}
}

// TestSQLTerms: what the job spec refuses in a SQL job is said in SQL's
// terms; a JSON sink may name a column as weir's own rows name theirs.
func TestSQLTerms(t *testing.T) {
	const tables = `CREATE TABLE orders (user_id STRING, ms BIGINT, ts AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH ('connector' = 'filesystem', 'path' = 'o.jsonl');
CREATE TABLE out (user_id STRING, job BIGINT, ` + "`watermark`" + ` BIGINT) WITH ('connector' = 'print');
`
	const insert = "INSERT INTO out SELECT user_id, COUNT(*), MAX(ms) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY user_id, window_start, window_end;"
	j, err := Compile(tables+insert, "t.sql")
	if err == nil {
		_, err = j.Plan()
	}
	if err != nil {
		t.Errorf("a print sink's columns named job and watermark: %v", err)
	}
	j, err = Compile("SET 'table.exec.emit.late-fire.delay' = '10 s';\n"+tables+insert, "t.sql")
	if err != nil {
		t.Fatal(err)
	}
	_, err = j.Plan()
	want := "SET 'table.exec.emit.late-fire.delay' (late_firing_interval): late firings come only from allowed lateness, which is 0; SET 'table.exec.emit.allow-lateness' (such as '2 min'), or remove the late-fire delay (line 1)"
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
	// An error the spec finds names the line of the SQL it came from: the
	// HAVING's, the sink table's.
	j, err = Compile("SET 'table.exec.emit.allow-lateness' = '1 min';\n"+tables+strings.TrimSuffix(insert, ";")+"\nHAVING COUNT(*) > 1;", "t.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err = j.Plan(); err == nil || !strings.HasPrefix(err.Error(), "HAVING (having): ") || !strings.HasSuffix(err.Error(), " (line 5)") {
		t.Errorf("HAVING with allowed lateness: %v, want it at line 5", err)
	}
	j, err = Compile(strings.Replace(tables, "WITH ('connector' = 'print')", "WITH ('connector' = 'jdbc', 'url' = 'jdbc:sqlite:x.db', 'table-name' = 'a-b')", 1)+insert, "t.sql")
	if err == nil {
		_, err = j.Plan()
	}
	if err == nil || !strings.Contains(err.Error(), "the sink table (sinks.results.table): \"a-b\" is not a plain SQL name; use letters, digits and _, such as order_stats (line 2)") {
		t.Errorf("a bad table name: %v, want it at line 2", err)
	}
}

// TestEarlyFireDelayAlone: a delay without early-fire.enabled fires
// nothing early, as in Flink, and says so; window_time may be grouped by.
func TestEarlyFireDelayAlone(t *testing.T) {
	j, err := Compile(`SET 'table.exec.emit.early-fire.delay' = '10 s';
CREATE TABLE orders (user_id STRING, ms BIGINT, ts AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR ts AS ts) WITH ('connector' = 'filesystem', 'path' = 'o.jsonl');
CREATE TABLE out (user_id STRING, wt TIMESTAMP(3), n BIGINT) WITH ('connector' = 'print');
INSERT INTO out SELECT user_id, window_time, COUNT(*) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY user_id, window_start, window_end, window_time;`, "e.sql")
	if err != nil {
		t.Fatal(err)
	}
	if j.Spec.Trigger != nil || len(j.Warnings) != 1 || !strings.Contains(j.Warnings[0], "fires nothing early, as in Flink") {
		t.Errorf("trigger %+v, warnings %q", j.Spec.Trigger, j.Warnings)
	}
}

// TestTableWatermarkOptions: Flink's per-table watermark options set the
// job's (over the SET key), and the JSON format's error options are
// warned about.
func TestTableWatermarkOptions(t *testing.T) {
	j, err := Compile(`SET 'table.exec.source.idle-timeout' = '1 min';
CREATE TABLE pay (account STRING, ms BIGINT, ts AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)
  WITH ('connector' = 'kafka', 'topic' = 'p', 'properties.bootstrap.servers' = 'k:9092', 'scan.watermark.idle-timeout' = '15 s',
        'scan.watermark.alignment.group' = 'g', 'scan.watermark.alignment.max-drift' = '30 s',
        'json.ignore-parse-errors' = 'true');
CREATE TABLE out (account STRING, n BIGINT) WITH ('connector' = 'print');
INSERT INTO out SELECT account, COUNT(*) FROM TABLE(TUMBLE(TABLE pay, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY account, window_start, window_end;`, "w.sql")
	if err != nil {
		t.Fatal(err)
	}
	w := j.Spec.Watermark
	if w.IdleTimeout == nil || *w.IdleTimeout != 15_000 || w.MaxDrift == nil || *w.MaxDrift != 30_000 {
		t.Errorf("watermark %+v", w)
	}
	if len(j.Warnings) != 1 || !strings.Contains(j.Warnings[0], "json.ignore-parse-errors is not read: weir sends what it cannot read to dead letters") {
		t.Errorf("warnings %q", j.Warnings)
	}
	if _, err := j.Plan(); err != nil {
		t.Error(err)
	}
	j, err = Compile(`CREATE TABLE f (k STRING, ms BIGINT, ts AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR ts AS ts)
  WITH ('connector' = 'filesystem', 'path' = 'f.jsonl', 'scan.watermark.emit.strategy' = 'on-event');
SELECT k, COUNT(*) FROM TABLE(TUMBLE(TABLE f, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY k, window_start, window_end;`, "f.sql")
	if err != nil || j.Spec.Watermark.Emit != "every_record" {
		t.Errorf("on-event: %v, %+v", err, j)
	}
}

// TestKafkaReads: two reads of one Kafka topic in one consumer group
// would split its partitions between them, so a composed plan that has
// them is refused; sides that read the table the same way share one read
// and pass.
func TestKafkaReads(t *testing.T) {
	const ddl = `CREATE TABLE pay (account STRING, amount BIGINT, ms BIGINT, ts AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR ts AS ts)
  WITH ('connector' = 'kafka', 'topic' = 'p', 'properties.bootstrap.servers' = 'k:9092', 'properties.group.id' = 'g');
CREATE TABLE out (account STRING, n BIGINT, m BIGINT) WITH ('connector' = 'print');
`
	join := func(where string) string {
		return ddl + `INSERT INTO out SELECT A.account, A.n, B.m FROM
  (SELECT account, COUNT(*) AS n, window_start, window_end FROM TABLE(TUMBLE(TABLE pay, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY account, window_start, window_end) A
  JOIN (SELECT account, MAX(amount) AS m, window_start, window_end FROM TABLE(TUMBLE(TABLE pay, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) ` + where + ` GROUP BY account, window_start, window_end) B
  ON A.window_start = B.window_start AND A.window_end = B.window_end AND A.account = B.account;`
	}
	for where, refused := range map[string]bool{"": false, "WHERE amount > 1": true} {
		j, err := Compile(join(where), "k.sql")
		if err != nil {
			t.Fatalf("%q: %v", where, err)
		}
		_, err = j.Plan()
		if got := err != nil && strings.Contains(err.Error(), "two reads of Kafka topic p in consumer group g"); got != refused {
			t.Errorf("where %q: refused %v, want %v (%v)", where, got, refused, err)
		}
	}
}

// TestJDBCPrimaryKey: a jdbc table keyed by its key columns and one
// window bound is keyed as weir keys it (a tumbling window's start names
// it), as is one keyed by both bounds.
func TestJDBCPrimaryKey(t *testing.T) {
	const table = `CREATE TABLE orders (user_id STRING, ms BIGINT, ts AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH ('connector' = 'filesystem', 'path' = 'o.jsonl');
CREATE TABLE out (user_id STRING, window_start TIMESTAMP(3), n BIGINT, PRIMARY KEY (%s) NOT ENFORCED) WITH ('connector' = 'jdbc', 'url' = 'jdbc:sqlite:r.db', 'table-name' = 'out');
INSERT INTO out SELECT user_id, window_start, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY user_id, window_start, window_end;`
	if _, err := Compile(fmt.Sprintf(table, "user_id, window_start"), "job.sql"); err != nil {
		t.Errorf("keyed by user_id, window_start: %v", err)
	}
	if _, err := Compile(fmt.Sprintf(table, "window_start"), "job.sql"); err == nil || !strings.Contains(err.Error(), "leaves out user_id") {
		t.Errorf("keyed by window_start alone: %v", err)
	}
}

// TestPlanWarningsInSQLTerms: the spec's warnings of a SQL job say what
// to SET, not the YAML field (a ledger of too-late rows with appended
// results and no archive); a session job is not told to add an archive,
// which sessions cannot have.
func TestPlanWarningsInSQLTerms(t *testing.T) {
	const job = `SET 'weir.late.sink' = 'late';
CREATE TABLE o (k STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector' = 'filesystem', 'path' = 'o.jsonl', 'format' = 'json');
CREATE TABLE late (k STRING) WITH ('connector' = 'ledger', 'dir' = 'ledger');
CREATE TABLE out (k STRING, n BIGINT) WITH ('connector' = 'filesystem', 'path' = 'out.jsonl');
INSERT INTO out SELECT k, COUNT(*) FROM TABLE(TUMBLE(TABLE o, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY k, window_start, window_end;`
	for _, c := range []struct {
		name, sql string
		archive   bool
	}{
		{"tumbling", job, true},
		{"session", strings.Replace(job, "TUMBLE(TABLE o, DESCRIPTOR(ts), INTERVAL '1' MINUTE)", "SESSION(TABLE o PARTITION BY k, DESCRIPTOR(ts), INTERVAL '1' MINUTE)", 1), false},
	} {
		j, err := Compile(c.sql, c.name+".sql")
		if err != nil {
			t.Fatal(err)
		}
		p, err := j.Plan()
		if err != nil {
			t.Fatal(err)
		}
		var archive []string
		for _, w := range p.Warnings {
			if strings.Contains(w.Path, "archive") {
				archive = append(archive, w.Path+": "+w.Fix)
			}
		}
		switch {
		case c.archive && (len(archive) != 1 || !strings.Contains(archive[0], "SET 'weir.archive.dir' = 'archive'") || strings.Contains(archive[0], "{dir:")):
			t.Errorf("%s: archive warnings %q, want one in SQL terms", c.name, archive)
		case !c.archive && len(archive) != 0:
			t.Errorf("%s: archive warnings %q, want none", c.name, archive)
		}
	}
}

// TestTableColumnsByPosition: into a SQL table, whose columns keep the
// aggregates' names, the query's columns go by position even when its
// aliases are the table's names in another order (COUNT(*) AS b, SUM AS
// a into columns a, b: a holds the count).
func TestTableColumnsByPosition(t *testing.T) {
	src := `CREATE TABLE orders (user_id STRING, amount BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH ('connector' = 'filesystem', 'path' = 'o.jsonl');
CREATE TABLE snk (user_id STRING, window_start BIGINT, window_end BIGINT, a BIGINT, b BIGINT) WITH ('connector' = 'jdbc', 'url' = 'jdbc:sqlite:r.db', 'table-name' = 'snk');
INSERT INTO snk SELECT user_id, window_start, window_end, COUNT(*) AS b, SUM(amount) AS a FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY user_id, window_start, window_end;`
	j, err := Compile(src, "swap.sql")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, a := range j.Spec.Aggregate {
		got[a.Name] = a.Fn
	}
	if got["a"] != "count" || got["b"] != "sum" {
		t.Fatalf("aggregates %+v, want a = count, b = sum", j.Spec.Aggregate)
	}
}

// TestSessionRetractionWarning: a session query whose sink has no firing
// column is warned that merged sessions' rows are retracted only where a
// fired session can merge: with allowed lateness or early firing.
func TestSessionRetractionWarning(t *testing.T) {
	const job = `%sCREATE TABLE orders (user_id STRING, ms BIGINT, ts AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR ts AS ts) WITH ('connector' = 'filesystem', 'path' = 'o.jsonl');
CREATE TABLE out (user_id STRING, ws TIMESTAMP(3), n BIGINT) WITH ('connector' = 'filesystem', 'path' = 'out.jsonl');
INSERT INTO out SELECT user_id, window_start, COUNT(*) FROM TABLE(SESSION(TABLE orders PARTITION BY user_id, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY user_id, window_start, window_end;`
	for set, want := range map[string]bool{
		"": false,
		"SET 'table.exec.emit.allow-lateness' = '1 min';\n":                                                      true,
		"SET 'table.exec.emit.early-fire.enabled' = 'true';\nSET 'table.exec.emit.early-fire.delay' = '10 s';\n": true,
	} {
		j, err := Compile(fmt.Sprintf(job, set), "s.sql")
		if err != nil {
			t.Fatal(err)
		}
		warned := slices.ContainsFunc(j.Warnings, func(w string) bool { return strings.Contains(w, "sessions merge") })
		if warned != want {
			t.Errorf("%q: warned %v, want %v (%q)", set, warned, want, j.Warnings)
		}
	}
}

// TestPostgresName: a jdbc table-name as Postgres reads it, a schema and a
// table each part on its own.
func TestPostgresName(t *testing.T) {
	for in, want := range map[string]string{"trialA_stats": "triala_stats", `"Stats"`: "Stats", "Analytics.Stats": "analytics.stats", `"A".b`: "A.b", `a."B"`: "a.B", `"x""y"`: `x"y`, "a.b.c": "a.b.c", `"a.b"`: "a.b"} {
		if got := postgresName(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}
