package record

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/nexmarkio"
	"github.com/weirstream/weir/internal/sqljob"
	"github.com/weirstream/weir/nexmark"
	"github.com/weirstream/weir/spec"
)

// sameDecoding decodes each pair of lines (a typed record, and the same
// record's JSON text) with a decoder of p that reads typed records and
// one that does not, and fails where the two differ: the record (time,
// key, values, whether the where dropped it, its JSON form), the error,
// and the NULLs counted.
func sameDecoding(t *testing.T, name string, p *spec.Plan, cols []connector.TypedColumn, lines func(i int) (typed, text connector.Line), n int) (asText int64) {
	t.Helper()
	typed, text := NewDecoder(p, clock.Real{}), NewDecoder(p, clock.Real{})
	typed.KeepRaw = true
	if !typed.UseColumns(cols) {
		t.Fatalf("%s: the decoder does not read the typed records", name)
	}
	for i := range n {
		tl, jl := lines(i)
		tr, terr := typed.Decode(tl)
		jr, jerr := text.Decode(jl)
		if fmt.Sprint(terr) != fmt.Sprint(jerr) {
			t.Fatalf("%s: record %d (%s): typed error %v, text error %v", name, i, jl.Text, terr, jerr)
		}
		if terr != nil {
			continue
		}
		if tr.TS != jr.TS || tr.Key != jr.Key || tr.Filtered != jr.Filtered || tr.No != jr.No || tr.Promised != jr.Promised ||
			!bytes.Equal(tr.AppendValues(nil), jr.AppendValues(nil)) || !bytes.Equal(tr.Raw, jr.Raw) {
			t.Fatalf("%s: record %d (%s):\ntyped %d %q %q filtered=%v raw=%s\ntext  %d %q %q filtered=%v raw=%s", name, i, jl.Text,
				tr.TS, tr.Key, tr.AppendValues(nil), tr.Filtered, tr.Raw, jr.TS, jr.Key, jr.AppendValues(nil), jr.Filtered, jr.Raw)
		}
	}
	for k := range NullCounters {
		if a, b := typed.Nulls.Load(k), text.Nulls.Load(k); a != b {
			t.Errorf("%s: %s typed %d, text %d", name, NullCounters[k], a, b)
		}
	}
	return typed.asText.Load()
}

// TestTypedNexmark: every Nexmark query of the project's SQL reads the
// nexmark source's typed events as it reads their JSON rows.
func TestTypedNexmark(t *testing.T) {
	c := nexmark.DefaultConfig()
	g, err := nexmark.NewGenerator(c)
	if err != nil {
		t.Fatal(err)
	}
	const n = 5000
	evs := make([]nexmarkio.Event, n)
	for i := range evs {
		evs[i] = nexmarkio.Event(g.Event(int64(i)))
	}
	lines := func(i int) (connector.Line, connector.Line) {
		return connector.Line{Kind: connector.Data, No: int64(i + 1), Typed: &evs[i]},
			connector.Line{Kind: connector.Data, No: int64(i + 1), Text: evs[i].AppendJSON(nil), Valid: true}
	}
	for name, q := range nexmark.SQL {
		j, err := sqljob.Compile(q.Text(n, 10000), name+".sql")
		if err != nil {
			t.Fatal(err)
		}
		p, err := j.Plan()
		if err != nil {
			t.Fatal(err)
		}
		if k := sameDecoding(t, name, p, nexmarkio.Columns, lines, n); k > 0 {
			t.Errorf("%s: %d events read as JSON rows", name, k)
		}
	}
}

// fakeRecord is a typed record of fakeColumns: a, s, o.x, o.y, ts and
// amount, any of them null (or, to see the JSON form take over, of
// another kind than its column's).
type fakeRecord [6]connector.Value

var fakeColumns = []connector.TypedColumn{
	{Name: "a", Kind: connector.ValueInt}, {Name: "s", Kind: connector.ValueString},
	{Name: "o.x", Kind: connector.ValueInt}, {Name: "o.y", Kind: connector.ValueString},
	{Name: "ts", Kind: connector.ValueInt}, {Name: "amount", Kind: connector.ValueInt},
}

func (r *fakeRecord) Column(c int) connector.Value { return r[c] }

func (r *fakeRecord) AppendJSON(b []byte) []byte {
	val := func(b []byte, v connector.Value) []byte {
		switch v.Kind {
		case connector.ValueInt:
			return strconv.AppendInt(b, v.Int, 10)
		case connector.ValueString:
			return weir.AppendJSONString(b, v.Str)
		}
		return append(b, "null"...)
	}
	b = append(b, `{"a":`...)
	b = val(b, r[0])
	b = append(b, `,"s":`...)
	b = val(b, r[1])
	b = append(b, `,"o":{"x":`...)
	b = val(b, r[2])
	b = append(b, `,"y":`...)
	b = val(b, r[3])
	b = append(b, `},"ts":`...)
	b = val(b, r[4])
	b = append(b, `,"amount":`...)
	b = val(b, r[5])
	return append(b, '}')
}

// TestTypedRecords: typed records of other columns, values (null, out of
// an INT's range, of another kind than the column's, strings to escape)
// and plans (computed fields shadowing a column, CASE, casts, string
// functions, where, keys and aggregates of every need) read as their
// JSON form does.
func TestTypedRecords(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	strs := []string{"", "x", "Ünï \"q\" \\ \n", "12", "1.10", "big", "small", "a\x01b\v\x7f", "\U0001F600 \U000E0001"}
	value := func(kind connector.ValueKind) connector.Value {
		switch r := rng.IntN(10); {
		case r == 0:
			return connector.Value{}
		case r == 1 && kind == connector.ValueInt:
			return connector.Value{Kind: connector.ValueString, Str: strs[rng.IntN(len(strs))]}
		case r == 1:
			return connector.Value{Kind: connector.ValueInt, Int: rng.Int64N(100)}
		case kind == connector.ValueInt && r == 2:
			return connector.Value{Kind: connector.ValueInt, Int: 1<<31 + rng.Int64N(10)} // beyond INT
		case kind == connector.ValueInt:
			return connector.Value{Kind: connector.ValueInt, Int: rng.Int64N(40) - 5}
		}
		return connector.Value{Kind: connector.ValueString, Str: strs[rng.IntN(len(strs))]}
	}
	const n = 4000
	recs := make([]fakeRecord, n)
	for i := range recs {
		for c, col := range fakeColumns {
			recs[i][c] = value(col.Kind)
		}
		if rng.IntN(10) > 0 {
			recs[i][4] = connector.Value{Kind: connector.ValueInt, Int: 1767225600000 + int64(i)*100}
		}
	}
	lines := func(i int) (connector.Line, connector.Line) {
		return connector.Line{Kind: connector.Data, No: int64(i + 1), Typed: &recs[i]},
			connector.Line{Kind: connector.Data, No: int64(i + 1), Text: recs[i].AppendJSON(nil), Valid: true}
	}
	sqls := map[string]string{
		"window": `CREATE TABLE t (a INT, s STRING, o ROW<x BIGINT, y STRING>, ts BIGINT, amount BIGINT,
  rt AS TO_TIMESTAMP_LTZ(ts, 3), WATERMARK FOR rt AS rt - INTERVAL '1' SECOND) WITH ('connector' = 'filesystem', 'path' = 'in.jsonl');
CREATE TABLE out (s STRING, n BIGINT, total BIGINT, ys BIGINT, top STRING, first_x BIGINT) WITH ('connector' = 'filesystem', 'path' = 'out.jsonl');
INSERT INTO out SELECT UPPER(s), COUNT(*), SUM(a + o.x), COUNT(DISTINCT o.y), MAX(s), FIRST_VALUE(o.x)
FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(rt), INTERVAL '1' SECOND))
WHERE a > 0 OR o.y LIKE '%i%' GROUP BY UPPER(s), window_start, window_end;`,
		"rows": `CREATE TABLE t (a BIGINT, s STRING, o ROW<x BIGINT, y STRING>, ts BIGINT, amount BIGINT,
  rt AS TO_TIMESTAMP_LTZ(ts, 3), WATERMARK FOR rt AS rt - INTERVAL '1' SECOND) WITH ('connector' = 'filesystem', 'path' = 'in.jsonl');
CREATE TABLE out (k STRING, v DECIMAL(10, 2), c STRING, t BIGINT) WITH ('connector' = 'filesystem', 'path' = 'out.jsonl');
INSERT INTO out SELECT CASE WHEN a > 10 THEN s ELSE o.y END, CAST(a AS DECIMAL(10, 2)) / 3, CONCAT(s, '-', CAST(o.x AS STRING)), ts / 7 FROM t WHERE s <> 'big';`,
	}
	for name, text := range sqls {
		j, err := sqljob.Compile(text, name+".sql")
		if err != nil {
			t.Fatal(err)
		}
		p, err := j.Plan()
		if err != nil {
			t.Fatal(err)
		}
		// Values of another kind than their column's, or beyond an
		// INT, are read as their JSON form: about half the records.
		if k := sameDecoding(t, name, p, fakeColumns, lines, n); k > 3*n/4 {
			t.Errorf("%s: %d of %d records read as their JSON form", name, k, n)
		}
	}
	// A YAML job whose computed field amount shadows the column amount,
	// read before and after it is computed.
	p, err := spec.Parse([]byte(`
name: shadow
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
computed:
  - {name: before, expr: "amount * 2"}
  - {name: amount, expr: "amount + 1"}
  - {name: label, expr: "CASE WHEN amount > 10 THEN 'big' ELSE 'small' END"}
  - {name: after, expr: "amount * 10"}
where: "amount > 5"
key: [label, s]
window: {type: tumbling, size: 10s}
aggregate: [{name: b, fn: collect, field: before}, {name: x, fn: sum, field: a}, {name: m, fn: min, field: s, type: string}, {name: n, fn: count, field: amount}]
sinks: {results: {type: jsonl, path: out.jsonl}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if k := sameDecoding(t, "shadow", p, fakeColumns, lines, n); k > 3*n/4 {
		t.Errorf("shadow: %d of %d records read as their JSON form", k, n)
	}
}

// TestTypedRefused: a decoder reads the JSON form of typed records where
// it reads what no column is, or a type would convert a column's values.
func TestTypedRefused(t *testing.T) {
	for name, text := range map[string]string{
		"row whole": `CREATE TABLE t (a BIGINT, o ROW<x BIGINT, y STRING>, ts BIGINT, rt AS TO_TIMESTAMP_LTZ(ts, 3), WATERMARK FOR rt AS rt)
  WITH ('connector' = 'filesystem', 'path' = 'in.jsonl');
CREATE TABLE out (o STRING) WITH ('connector' = 'filesystem', 'path' = 'out.jsonl');
INSERT INTO out SELECT CAST(o AS STRING) FROM t;`,
		"converting type": `CREATE TABLE t (a STRING, ts BIGINT, rt AS TO_TIMESTAMP_LTZ(ts, 3), WATERMARK FOR rt AS rt)
  WITH ('connector' = 'filesystem', 'path' = 'in.jsonl');
CREATE TABLE out (a STRING) WITH ('connector' = 'filesystem', 'path' = 'out.jsonl');
INSERT INTO out SELECT a FROM t;`,
		"decimal": `CREATE TABLE t (amount DECIMAL(10, 2), ts BIGINT, rt AS TO_TIMESTAMP_LTZ(ts, 3), WATERMARK FOR rt AS rt)
  WITH ('connector' = 'filesystem', 'path' = 'in.jsonl');
CREATE TABLE out (amount DECIMAL(10, 2)) WITH ('connector' = 'filesystem', 'path' = 'out.jsonl');
INSERT INTO out SELECT amount FROM t;`,
	} {
		j, err := sqljob.Compile(text, "t.sql")
		if err != nil {
			t.Fatal(name, err)
		}
		p, err := j.Plan()
		if err != nil {
			t.Fatal(name, err)
		}
		if NewDecoder(p, clock.Real{}).UseColumns(fakeColumns) {
			t.Errorf("%s: read as typed records", name)
		}
	}
	for name, yml := range map[string]string{
		// o is the record's object until the computed field o replaces
		// it: only the JSON form has the object.
		"object before its shadow": "computed: [{name: isobj, expr: \"o IS NOT NULL\"}, {name: o, expr: \"o.x\"}]\nkey: [isobj]\n",
		// A type of a whole object converts it (its JSON text).
		"type of an object": "source: {type: file, path: in.jsonl, types: [{field: o, type: string}]}\ncomputed: [{name: k, expr: \"o.x\"}]\nkey: [k]\n",
	} {
		text := "name: t\nwatermark: {max_out_of_orderness: 1s}\nwindow: {type: tumbling, size: 10s}\naggregate: [{name: n, fn: count}]\nsinks: {results: {type: jsonl, path: out.jsonl}}\n" + yml
		if !strings.Contains(yml, "source:") {
			text += "source: {type: file, path: in.jsonl}\n"
		}
		p, err := spec.Parse([]byte(text))
		if err != nil {
			t.Fatal(name, err)
		}
		if NewDecoder(p, clock.Real{}).UseColumns(fakeColumns) {
			t.Errorf("%s: read as typed records", name)
		}
	}
}
