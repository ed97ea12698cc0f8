package sqljob

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/valyala/fastjson"
	"github.com/weirstream/weir/internal/expr"
	"github.com/weirstream/weir/internal/sqlparse"
)

// FuzzCompile: compiling any text, and the plan of what compiles, never
// panics; an error is always a *sqlparse.Error or the spec's.
func FuzzCompile(f *testing.F) {
	files, _ := filepath.Glob("../../examples/*/job.sql")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b))
		}
	}
	f.Add(`CREATE TABLE t (a INT, b ROW<c BIGINT>, ms BIGINT, ts AS TO_TIMESTAMP_LTZ(ms, 3), WATERMARK FOR ts AS ts) WITH ('connector' = 'filesystem', 'path' = 'x');
CREATE VIEW v AS SELECT b.c, ts FROM t WHERE a = 1;
SELECT c, window_start, COUNT(*) FROM TABLE(HOP(TABLE v, DESCRIPTOR(ts), INTERVAL '1' SECOND, INTERVAL '2' SECOND)) WHERE c > 2 GROUP BY c, window_start, window_end;`)
	// A join of records (W19), an aggregation per window (W18) with a
	// join on the window alone and a condition (W14).
	f.Add(`CREATE TABLE b (i BIGINT, p DECIMAL(5, 2), ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH ('connector' = 'filesystem', 'path' = 'x');
CREATE TABLE o (i BIGINT, p DECIMAL(5, 2), ts TIMESTAMP(3)) WITH ('connector' = 'filesystem', 'path' = 'y');
INSERT INTO o SELECT B.i, B.p, B.ts FROM b B JOIN (SELECT MAX(p) AS m, window_end AS e FROM TABLE(HOP(TABLE b, DESCRIPTOR(ts), INTERVAL '3' SECOND, INTERVAL '10' SECOND)) GROUP BY window_start, window_end) W
ON B.p = W.m WHERE B.ts >= W.e - INTERVAL '3' SECOND AND B.ts <= W.e;`)
	// Decimal types (types.go): quotients, aggregates' expressions, ROW
	// decimals, sink casts, LTZ times.
	f.Add(`CREATE TABLE p (u STRING, a DECIMAL(8, 2), r ROW<f DECIMAL(5, 2)>, ms BIGINT, lt AS TO_TIMESTAMP_LTZ(ms / 1000, 3), WATERMARK FOR lt AS lt) WITH ('connector' = 'filesystem', 'path' = 'x');
CREATE TABLE o (u STRING, x DECIMAL(10, 4), y DECIMAL(38, 6), t TIMESTAMP_LTZ(3)) WITH ('connector' = 'filesystem', 'path' = 'y');
INSERT INTO o SELECT u, SUM(a) / COUNT(*), AVG(r.f) * 2 - MAX(a) % 3, MAX(lt) FROM TABLE(TUMBLE(TABLE p, DESCRIPTOR(lt), INTERVAL '1' MINUTE)) GROUP BY u, window_start, window_end;`)
	f.Add(`CREATE TABLE b (a BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH ('connector' = 'filesystem', 'path' = 'x');
CREATE TABLE o (a BIGINT, n BIGINT) WITH ('connector' = 'filesystem', 'path' = 'y');
INSERT INTO o SELECT A.a, A.n FROM (SELECT a, COUNT(*) AS n, window_start AS s, window_end AS e FROM TABLE(TUMBLE(TABLE b, DESCRIPTOR(ts), INTERVAL '2' SECOND)) GROUP BY a, window_start, window_end) A
JOIN (SELECT MAX(C.n) AS m, DATE_FORMAT(C.s, 'HH:mm') AS f, C.s, C.e FROM (SELECT COUNT(*) AS n, window_start AS s, window_end AS e FROM TABLE(TUMBLE(TABLE b, DESCRIPTOR(ts), INTERVAL '2' SECOND)) GROUP BY a, window_start, window_end) C GROUP BY C.s, C.e) M
ON A.s = M.s AND A.e = M.e AND A.n >= M.m;`)
	f.Fuzz(func(t *testing.T, src string) {
		j, err := Compile(src, "f.sql")
		if err != nil {
			return
		}
		_, _ = j.Plan()
	})
}

// FuzzExpr: any expression that parses compiles without a panic, and
// its predicate evaluates without one on records of any shape.
func FuzzExpr(f *testing.F) {
	for _, s := range []string{"a > 1 AND b IN ('x', NULL)", "CASE a WHEN 1 THEN b.c END IS NULL", "MOD(a, 0) = -a / 0", "CAST(b AS BIGINT) BETWEEN 1 AND 2",
		"SUBSTRING(b.c, a, -a) || CONCAT(a, b) = TRIM(REPLACE(b.c, 'x', ''))", "ROUND(a, -a) = FLOOR(CEIL(POWER(a, a)))",
		"DATE_FORMAT(a, 'yyyy-MM-dd''T''HH:mm:ss.SSS a EEE') = FROM_UNIXTIME(a, 'y') AND HOUR(b.c) > MINUTE(a)",
		// Decimals (d is a DECIMAL field of scale 2), past 18 digits too.
		"CAST(d / a AS DECIMAL(38, 20)) > ROUND(CAST(d / 3 AS DECIMAL(30, 25)), 2)",
		"ABS(-CAST(d * 1e0 AS DECIMAL(38, 30))) + FLOOR(CAST(d AS DECIMAL(38, 37))) <> CEIL(CAST(d * d AS DECIMAL(38, 2)) - 1)",
		"CAST(CAST(d / 7 AS DECIMAL(38, 30)) AS BIGINT) = MOD(CAST(d AS DECIMAL(38, 36)), 3)"} {
		f.Add(s, `{"a": 1, "b": {"c": "x"}, "d": 123456789.25}`)
	}
	f.Fuzz(func(t *testing.T, src, record string) {
		x, err := sqlparse.ParseExpr(src)
		if err != nil {
			return
		}
		var names []string
		p, err := expr.Compile(x, func(id sqlparse.Ident) (int, *sqlparse.Error) {
			names = append(names, id.Name)
			return len(names) - 1, nil
		}, expr.Decimals(func(f string) (int, bool) { return 2, f == "d" }))
		if err != nil {
			return
		}
		v, err := parseRecord(record)
		if err != nil {
			return
		}
		got := make([]*fastjsonValue, len(names))
		for i, n := range names {
			got[i] = v.Get(n)
		}
		p.Keep(got)
	})
}

type fastjsonValue = fastjson.Value

func parseRecord(s string) (*fastjson.Value, error) { return fastjson.Parse(s) }
