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
	for _, s := range []string{"a > 1 AND b IN ('x', NULL)", "CASE a WHEN 1 THEN b.c END IS NULL", "MOD(a, 0) = -a / 0", "CAST(b AS BIGINT) BETWEEN 1 AND 2"} {
		f.Add(s, `{"a": 1, "b": {"c": "x"}}`)
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
		})
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
