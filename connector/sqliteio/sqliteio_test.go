package sqliteio

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/weirstream/weir/etime"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// ctx is the context of the sink calls of the tests.
var ctx = context.Background()

// tb is the part of testing.TB that *rapid.T also has.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// row builds a Row from alternating name, JSON pairs.
func row(keys []string, start, end etime.Time, firing string, pane int64, wm etime.Time, values ...string) Row {
	r := Row{Start: start, End: end, Firing: firing, Pane: pane, Watermark: wm}
	for i := 0; i < len(keys); i += 2 {
		r.Keys = append(r.Keys, Column{Name: keys[i], Value: []byte(keys[i+1])})
	}
	for i := 0; i < len(values); i += 2 {
		r.Values = append(r.Values, Column{Name: values[i], Value: []byte(values[i+1])})
	}
	return r
}

func mustOpen(t testing.TB, path string, keys, values []string, o Options) *Sink {
	t.Helper()
	s, err := Open(path, keys, values, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustWrite(t testing.TB, s *Sink, rows ...Row) {
	t.Helper()
	for _, r := range rows {
		if err := s.Write(ctx, []Row{r}); err != nil {
			t.Fatal(err)
		}
	}
}

func mustClose(t testing.TB, s *Sink) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// query opens path read-only-ish with its own connection and runs q,
// returning each row's cells printed as "typeof:value".
func query(t tb, path, q string, args ...any) [][]string {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for rows.Next() {
		cells := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range cells {
			ptrs[i] = &cells[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		line := make([]string, len(cols))
		for i, c := range cells {
			switch c := c.(type) {
			case nil:
				line[i] = "null"
			case int64:
				line[i] = "int:" + strconv.FormatInt(c, 10)
			case float64:
				line[i] = "real:" + strconv.FormatFloat(c, 'g', -1, 64)
			case string:
				line[i] = "text:" + strconv.Quote(c)
			case []byte:
				line[i] = "blob:" + strconv.Quote(string(c))
			default:
				line[i] = fmt.Sprintf("%T:%v", c, c)
			}
		}
		out = append(out, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// inRun returns r written by run (row leaves Run 0).
func inRun(run int64, r Row) Row {
	r.Run = run
	return r
}

// dump returns the whole table ordered by job, keys and window.
func dump(t tb, path, table string, keys []string) string {
	t.Helper()
	order := make([]string, 0, 1+len(keys)+2)
	order = append(order, "job")
	for _, k := range keys {
		order = append(order, quote(k))
	}
	order = append(order, "window_start", "window_end")
	var b strings.Builder
	for _, r := range query(t, path, "SELECT * FROM "+quote(table)+" ORDER BY "+strings.Join(order, ", ")) {
		b.WriteString(strings.Join(r, " "))
		b.WriteByte('\n')
	}
	return b.String()
}

func TestUpsertOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.db")
	s := mustOpen(t, path, []string{"user"}, []string{"count", "sum"}, Options{})
	k := []string{"user", `"alice"`}
	mustWrite(t, s,
		row(k, 0, 1000, "early", 0, -5, "count", "1", "sum", "1.5"),
		row(k, 0, 1000, "on_time", 1, 999, "count", "2", "sum", "3"),
		row(k, 0, 1000, "late", 2, 1500, "count", "3", "sum", "4.25"),
	)
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want := `text:"" text:"alice" int:0 int:1000 text:"late" int:0 int:2 int:1500 int:3 real:4.25` + "\n"
	if got := dump(t, path, "results", []string{"user"}); got != want {
		t.Fatalf("after panes 0,1,2:\n%s\nwant\n%s", got, want)
	}
	// A replayed older pane does not overwrite the newer one.
	mustWrite(t, s, row(k, 0, 1000, "on_time", 1, 999, "count", "2", "sum", "3"))
	mustClose(t, s)
	if got := dump(t, path, "results", []string{"user"}); got != want {
		t.Fatalf("after replaying pane 1:\n%s\nwant\n%s", got, want)
	}
	// The same pane again is applied (it is the same revision).
	s = mustOpen(t, path, []string{"user"}, []string{"count", "sum"}, Options{})
	mustWrite(t, s, row(k, 0, 1000, "late", 2, 1500, "count", "3", "sum", "4.25"))
	mustClose(t, s)
	if got := dump(t, path, "results", []string{"user"}); got != want {
		t.Fatalf("after replaying pane 2:\n%s\nwant\n%s", got, want)
	}
}

// stream is a deterministic stream of about 2000 revisions over several
// string and integer keys, tumbling and session windows, with retractions.
func stream() []Row {
	rng := rand.New(rand.NewPCG(1, 2))
	var out []Row
	users := []string{`"alice"`, `"bob"`, `"carol"`, `"d\"q"`, `"ünï"`}
	for len(out) < 2000 {
		u := users[rng.IntN(len(users))]
		shard := strconv.Itoa(rng.IntN(4) - 1)
		start := etime.Time(rng.IntN(50) * 1000)
		end := start + etime.Time(1000*(1+rng.IntN(3)))
		panes := 1 + rng.IntN(4)
		k := []string{"user", u, "shard", shard}
		for p := range panes {
			firing := "late"
			switch {
			case p == 0 && panes > 1:
				firing = "early"
			case p <= 1:
				firing = "on_time"
			}
			sum := strconv.FormatFloat(float64(rng.IntN(10000))/8, 'g', -1, 64)
			tags := fmt.Sprintf(`[%d, "x"]`, p)
			out = append(out, row(k, start, end, firing, int64(p), end+etime.Time(p*100),
				"n", strconv.Itoa(p+1), "sum", sum, "tags", tags))
		}
		if rng.IntN(10) == 0 {
			// Retract the window's last pane (absorbed by a session merge),
			// or an older pane that must not delete it.
			out = append(out, row(k, start, end, "retract", int64(panes-1-rng.IntN(2)), end+5000))
		}
	}
	return out
}

func TestIdempotentReplay(t *testing.T) {
	dir := t.TempDir()
	keys, values := []string{"user", "shard"}, []string{"n", "sum", "tags"}
	rows := stream()
	write := func(path string, batch int) string {
		s := mustOpen(t, path, keys, values, Options{Table: "agg", BatchRows: batch})
		mustWrite(t, s, rows...)
		mustClose(t, s)
		return dump(t, path, "agg", keys)
	}
	a := filepath.Join(dir, "a.db")
	first := write(a, 0)
	if n := strings.Count(first, "\n"); n < 100 {
		t.Fatalf("only %d rows in the table:\n%s", n, first)
	}
	if !strings.Contains(first, "text:\"d\\\"q\"") || !strings.Contains(first, "int:-1") {
		t.Fatalf("expected string and integer keys in the table:\n%s", first)
	}
	if second := write(a, 0); second != first {
		t.Fatalf("replay changed the table:\n%s\nfirst:\n%s", second, first)
	}
	if third := write(filepath.Join(dir, "b.db"), 7); third != first {
		t.Fatalf("batch size 7 gives another table:\n%s\nbatch 1000:\n%s", third, first)
	}
	if fourth := write(filepath.Join(dir, "c.db"), 1); fourth != first {
		t.Fatalf("batch size 1 gives another table:\n%s\nbatch 1000:\n%s", fourth, first)
	}
}

func TestRetract(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.db")
	s := mustOpen(t, path, []string{"k"}, []string{"v"}, Options{})
	defer mustClose(t, s)
	a, b := []string{"k", `"a"`}, []string{"k", `"b"`}
	mustWrite(t, s,
		row(a, 0, 10, "on_time", 0, 10, "v", "1"),
		row(a, 0, 10, "late", 1, 20, "v", "2"),
		row(b, 0, 10, "on_time", 0, 10, "v", "3"),
		row(b, 0, 10, "late", 1, 20, "v", "4"),
		row(a, 0, 10, "retract", 1, 30), // the last pane: deleted
		row(b, 0, 10, "retract", 0, 30), // an older pane: kept
		row(b, 5, 10, "retract", 9, 30), // no such window: nothing
	)
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want := `text:"" text:"b" int:0 int:10 text:"late" int:0 int:1 int:20 int:4` + "\n"
	if got := dump(t, path, "results", []string{"k"}); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	// Retract values are ignored, even if absent or invalid.
	r := row(b, 0, 10, "retract", 1, 30, "bogus", "{")
	mustWrite(t, s, r)
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := dump(t, path, "results", []string{"k"}); got != "" {
		t.Fatalf("got\n%s\nwant an empty table", got)
	}
}

func TestGlobalWindow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.db")
	s := mustOpen(t, path, nil, []string{"total"}, Options{})
	mustWrite(t, s,
		row(nil, etime.MinTime, etime.MaxTime, "early", 0, etime.MinTime, "total", "5"),
		row(nil, etime.MinTime, etime.MaxTime, "on_time", 1, etime.MaxTime, "total", "7"),
	)
	mustClose(t, s)
	got := query(t, path, "SELECT window_start, window_end, watermark, total FROM results WHERE window_start = ? AND window_end = ?",
		int64(math.MinInt64), int64(math.MaxInt64))
	want := [][]string{{"int:-9223372036854775808", "int:9223372036854775807", "int:9223372036854775807", "int:7"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestTypeMapping(t *testing.T) {
	cases := []struct {
		json, typ, value string
	}{
		{`42`, "integer", "int:42"},
		{`-0`, "integer", "int:0"},
		{`-9223372036854775808`, "integer", "int:-9223372036854775808"},
		{`9223372036854775807`, "integer", "int:9223372036854775807"},
		{`9223372036854775808`, "blob", `blob:"9223372036854775808"`},
		{`-9223372036854775809`, "blob", `blob:"-9223372036854775809"`},
		{`9223372036854775809.0`, "blob", `blob:"9223372036854775809"`},
		{`9223372036854776000`, "real", "real:9.223372036854776e+18"},
		{`100000000000000000000`, "real", "real:1e+20"},
		{`1e400`, "blob", `blob:"1e+400"`},
		{`-10E399`, "blob", `blob:"-1e+400"`},
		{`1e-400`, "blob", `blob:"1e-400"`},
		{`0.1000000000000000001`, "blob", `blob:"0.1000000000000000001"`},
		{`0.1`, "real", "real:0.1"},
		{`1.5`, "real", "real:1.5"},
		{`1.0`, "real", "real:1"},
		{`-2e3`, "real", "real:-2000"},
		{`1E-2`, "real", "real:0.01"},
		{` 7 `, "integer", "int:7"},
		{`"hi"`, "text", `text:"hi"`},
		{`""`, "text", `text:""`},
		{`"a\"b\\c\n\u00e9\ud83d\ude00"`, "text", `text:"a\"b\\c\né😀"`},
		{`"ünï"`, "text", `text:"ünï"`},
		{`"42"`, "text", `text:"42"`},
		{`true`, "integer", "int:1"},
		{`false`, "integer", "int:0"},
		{`null`, "null", "null"},
		{`[1, 2.5, "x", [ ], {"b": null}]`, "text", `text:"[1,2.5,\"x\",[],{\"b\":null}]"`},
		{"{\n \"b\" : 1 ,\t\"a\": [true] }", "text", `text:"{\"b\":1,\"a\":[true]}"`},
	}
	path := filepath.Join(t.TempDir(), "types.db")
	s := mustOpen(t, path, []string{"id"}, []string{"v"}, Options{})
	for i, c := range cases {
		mustWrite(t, s, row([]string{"id", strconv.Itoa(i)}, 0, 1, "on_time", 0, 1, "v", c.json))
	}
	mustClose(t, s)
	got := query(t, path, "SELECT typeof(v), v FROM results ORDER BY id")
	if len(got) != len(cases) {
		t.Fatalf("%d rows, want %d", len(got), len(cases))
	}
	for i, c := range cases {
		if got[i][0] != "text:"+strconv.Quote(c.typ) || got[i][1] != c.value {
			t.Errorf("%s: got typeof %s value %s, want %s %s", c.json, got[i][0], got[i][1], c.typ, c.value)
		}
	}
}

func TestKeyTypes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.db")
	s := mustOpen(t, path, []string{"k"}, []string{"v"}, Options{})
	keys := []string{`1`, `"1"`, `1.0`, `true`, `[1]`, `{"a":1}`, `1.5`}
	for i, k := range keys {
		mustWrite(t, s, row([]string{"k", k}, 0, 1, "on_time", int64(i), 1, "v", strconv.Itoa(i)))
	}
	// null keys are refused.
	err := s.Write(ctx, []Row{row([]string{"k", "null"}, 0, 1, "on_time", 0, 1, "v", "0")})
	if err == nil || !strings.Contains(err.Error(), `key "k" is null`) {
		t.Fatalf("null key: got %v", err)
	}
	mustClose(t, s)
	// 1, 1.0 and true are the same SQLite value (the integer 1 and the real
	// 1.0 compare equal); "1", [1], {"a":1} and 1.5 are distinct.
	got := query(t, path, "SELECT typeof(k), k, v FROM results ORDER BY v")
	want := `[[text:"text" text:"1" int:1] [text:"integer" int:1 int:3] [text:"text" text:"[1]" int:4] [text:"text" text:"{\"a\":1}" int:5] [text:"real" real:1.5 int:6]]`
	if fmt.Sprint(got) != want {
		t.Fatalf("got  %v\nwant %s", got, want)
	}
}

// TestBigNumberKeys writes keys that neither an int64 nor a float64 tells
// apart: each keeps its own row and value, an upsert of another spelling
// of one of them replaces that row only, and the string of the same
// digits is another key.
func TestBigNumberKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.db")
	s := mustOpen(t, path, []string{"k"}, []string{"v"}, Options{})
	keys := []string{`9223372036854775808`, `9223372036854775809`, `1e400`, `1e500`, `"9223372036854775809"`, `0.1`, `0.1000000000000000001`}
	for i, k := range keys {
		mustWrite(t, s, row([]string{"k", k}, 0, 1, "on_time", 0, 1, "v", strconv.Itoa(i)))
	}
	// Pane 1 of two of them, spelled otherwise.
	mustWrite(t, s, row([]string{"k", `9223372036854775809.000`}, 0, 1, "late", 1, 1, "v", "11"))
	mustWrite(t, s, row([]string{"k", `10e399`}, 0, 1, "late", 1, 1, "v", "12"))
	mustClose(t, s)
	got := query(t, path, "SELECT typeof(k), k, pane, v FROM results ORDER BY v")
	want := `[[text:"blob" blob:"9223372036854775808" int:0 int:0] [text:"blob" blob:"1e+500" int:0 int:3] ` +
		`[text:"text" text:"9223372036854775809" int:0 int:4] [text:"real" real:0.1 int:0 int:5] ` +
		`[text:"blob" blob:"0.1000000000000000001" int:0 int:6] [text:"blob" blob:"9223372036854775809" int:1 int:11] ` +
		`[text:"blob" blob:"1e+400" int:1 int:12]]`
	if fmt.Sprint(got) != want {
		t.Fatalf("got  %v\nwant %s", got, want)
	}
}

func TestInvalidRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.db")
	s := mustOpen(t, path, []string{"k"}, []string{"v"}, Options{BatchRows: 2})
	defer mustClose(t, s)
	good := row([]string{"k", `"a"`}, 0, 1, "on_time", 0, 1, "v", "1")
	mustWrite(t, s, good)
	for _, c := range []struct {
		r    Row
		want string
	}{
		{row([]string{"k", `"a"`}, 0, 1, "on_time", 1, 1, "v", "{"), `value "v": invalid JSON "{"`},
		{row([]string{"k", `"a"`}, 0, 1, "on_time", 1, 1, "v", ""), `value "v": invalid JSON: empty value`},
		{row([]string{"k", `'a'`}, 0, 1, "on_time", 1, 1, "v", "1"), `key "k": invalid JSON "'a'"`},
		{row([]string{"k", `"a`}, 0, 1, "on_time", 1, 1, "v", "1"), `key "k": invalid JSON`},
		{row([]string{"k", `"a"`}, 0, 1, "on_time", 1, 1, "v", "01"), `invalid JSON "01"`},
		{row([]string{"k", `"a"`}, 0, 1, "on_time", 1, 1, "v", "1."), `invalid JSON "1."`},
		{row([]string{"k", `"a"`}, 0, 1, "on_time", 1, 1, "v", "+1"), `invalid JSON "+1"`},
		{row([]string{"k", `"a"`}, 0, 1, "on_time", 1, 1, "v", "NaN"), `invalid JSON "NaN"`},
		{row([]string{"k", `"a"`}, 0, 1, "on_time", 1, 1, "v", "nul"), `invalid JSON "nul"`},
		{row([]string{"k", `"a"`}, 0, 1, "on_time", 1, 1, "v", "1 2"), `invalid JSON "1 2"`},
		{row([]string{"k", `"a"`}, 0, 1, "on_time", 1, 1, "v", "\"\x01\""), `invalid JSON`},
		{row([]string{"k", `"a"`}, 0, 1, "on_time", 1, 1, "v", `[1,]`), `invalid JSON "[1,]"`},
		{row([]string{"k", `"a"`}, 0, 1, "on_time", 1, 1, "v", `{"a":1}x`), `invalid JSON`},
		{row([]string{"k", `"a"`}, 0, 1, "fired", 1, 1, "v", "1"), `firing "fired"`},
		{row(nil, 0, 1, "on_time", 1, 1, "v", "1"), "row has 0 keys, the sink has 1 (k)"},
		{row([]string{"k", `"a"`}, 0, 1, "on_time", 1, 1), "row has 0 values, the sink has 1 (v)"},
		{row([]string{"x", `"a"`}, 0, 1, "on_time", 1, 1, "v", "1"), `row key 1 is "x", want "k"`},
		{row([]string{"k", `"a"`}, 0, 1, "on_time", 1, 1, "w", "1"), `row value 1 is "w", want "v"`},
	} {
		err := s.Write(ctx, []Row{c.r})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want an error containing %q", err, c.want)
		}
	}
	// The invalid rows changed nothing and the batch is still open.
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want := `text:"" text:"a" int:0 int:1 text:"on_time" int:0 int:0 int:1 int:1` + "\n"
	if got := dump(t, path, "results", []string{"k"}); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestSchemaMismatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.db")
	mustClose(t, mustOpen(t, path, []string{"k"}, []string{"v"}, Options{}))
	for _, c := range []struct{ keys, values []string }{
		{[]string{"k"}, []string{"v", "w"}},
		{[]string{"k"}, nil},
		{[]string{"k", "j"}, []string{"v"}},
		{[]string{"v"}, []string{"k"}},
		{nil, []string{"k", "v"}},
	} {
		_, err := Open(path, c.keys, c.values, Options{})
		if err == nil {
			t.Fatalf("keys %v values %v: no error", c.keys, c.values)
		}
		msg := err.Error()
		pk := append(append([]string{"job"}, c.keys...), "window_start", "window_end")
		for _, want := range []string{
			`table "results" in ` + path + ` exists with other columns`,
			"found    columns (job, k, window_start, window_end, firing, run, pane, watermark, v), primary key (job, k, window_start, window_end)",
			"expected columns (" + strings.Join(append(append(append([]string{"job"}, c.keys...), fixedColumns[:]...), c.values...), ", ") + "), primary key (" + strings.Join(pk, ", ") + ")",
			"name another table (a job spec's sinks.results.table; Options.Table in Go), or, if its rows are no longer needed, drop it",
		} {
			if !strings.Contains(msg, want) {
				t.Errorf("keys %v values %v: error\n%s\ndoes not contain\n%s", c.keys, c.values, msg, want)
			}
		}
	}
	// The same columns (names compare case-insensitively, like SQLite) and
	// another table are fine.
	mustClose(t, mustOpen(t, path, []string{"K"}, []string{"v"}, Options{}))
	mustClose(t, mustOpen(t, path, []string{"k"}, []string{"v", "w"}, Options{Table: "other"}))
}

func TestNameValidation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.db")
	for _, c := range []struct {
		keys, values []string
		o            Options
		want         string
	}{
		{[]string{""}, nil, Options{}, "key column 1 has an empty name"},
		{[]string{"k"}, []string{"v", ""}, Options{}, "value column 2 has an empty name"},
		{[]string{"k", "k"}, nil, Options{}, `key column 2 name "k" is the same as key column 1 name "k"`},
		{[]string{"k"}, []string{"K"}, Options{}, `value column 1 name "K" is the same as key column 1 name "k" (the database compares names ignoring case); rename one of them`},
		{[]string{"pane"}, nil, Options{}, `key column 1 name "pane" collides with the fixed column "pane"; rename it (for example to "key_pane")`},
		{nil, []string{"Window_Start"}, Options{}, `value column 1 name "Window_Start" collides with the fixed column "window_start"`},
		{nil, []string{"firing"}, Options{}, `fixed column "firing"`},
		{nil, []string{"watermark"}, Options{}, `fixed column "watermark"`},
		{nil, []string{"window_end"}, Options{}, `fixed column "window_end"`},
		{[]string{"job"}, nil, Options{}, `key column 1 name "job" collides with the fixed column "job"; rename it (for example to "key_job")`},
		{nil, []string{"Job"}, Options{}, `value column 1 name "Job" collides with the fixed column "job"`},
		{[]string{"k", "RUN"}, nil, Options{}, `key column 2 name "RUN" collides with the fixed column "run"`},
		{nil, []string{"run"}, Options{}, `value column 1 name "run" collides with the fixed column "run"; rename it (for example to "value_run")`},
		{nil, []string{"a\x00b"}, Options{}, "contains a NUL byte"},
		{nil, nil, Options{Table: "t\x00"}, "table name"},
		{nil, nil, Options{BatchRows: -1}, "BatchRows is -1"},
	} {
		s, err := Open(path, c.keys, c.values, c.o)
		if err == nil {
			s.Close()
			t.Errorf("keys %q values %q: no error", c.keys, c.values)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("keys %q values %q: error %q does not contain %q", c.keys, c.values, err, c.want)
		}
	}
}

func TestQuotedNames(t *testing.T) {
	// Names and a path that need quoting or escaping.
	dir := filepath.Join(t.TempDir(), "a?b#c%20d")
	path := filepath.Join(dir, "out 1.db")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	keys := []string{`user "id"`, "select", "ключ"}
	values := []string{`a"); DROP TABLE x; --`, "group by"}
	o := Options{Table: `my "table"`}
	s := mustOpen(t, path, keys, values, o)
	mustWrite(t, s, row([]string{keys[0], `"u"`, keys[1], "1", keys[2], `"k"`}, 0, 1, "on_time", 0, 1, values[0], "1", values[1], `"g"`))
	mustClose(t, s)
	if got, want := s.Path(), path; got != want {
		t.Fatalf("Path() = %q, want %q", got, want)
	}
	s = mustOpen(t, path, keys, values, o)
	mustClose(t, s)
	want := `text:"" text:"u" int:1 text:"k" int:0 int:1 text:"on_time" int:0 int:0 int:1 int:1 text:"g"` + "\n"
	if got := dump(t, "file:"+strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace(path), o.Table, keys); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestWALAndClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.db")
	s := mustOpen(t, path, []string{"k"}, []string{"v"}, Options{})
	var mode string
	if err := s.db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	var timeout, sync int
	if err := s.db.QueryRow("PRAGMA busy_timeout").Scan(&timeout); err != nil {
		t.Fatal(err)
	}
	if err := s.db.QueryRow("PRAGMA synchronous").Scan(&sync); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" || timeout != BusyTimeoutMillis || sync != 2 {
		t.Fatalf("journal_mode %q busy_timeout %d synchronous %d, want wal %d 2", mode, timeout, sync, BusyTimeoutMillis)
	}
	// Rows are buffered until Flush.
	mustWrite(t, s, row([]string{"k", `"a"`}, 0, 1, "on_time", 0, 1, "v", "1"))
	if got := dump(t, path, "results", []string{"k"}); got != "" {
		t.Fatalf("visible before Flush:\n%s", got)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := dump(t, path, "results", []string{"k"}); got == "" {
		t.Fatal("not visible after Flush")
	}
	// Close flushes and is idempotent.
	mustWrite(t, s, row([]string{"k", `"b"`}, 0, 1, "on_time", 0, 1, "v", "1"))
	mustClose(t, s)
	mustClose(t, s)
	if got := dump(t, path, "results", []string{"k"}); strings.Count(got, "\n") != 2 {
		t.Fatalf("Close did not flush:\n%s", got)
	}
	if err := s.Write(ctx, []Row{row([]string{"k", `"c"`}, 0, 1, "on_time", 0, 1, "v", "1")}); err != ErrClosed {
		t.Fatalf("Write after Close: %v", err)
	}
	if err := s.Flush(ctx); err != ErrClosed {
		t.Fatalf("Flush after Close: %v", err)
	}
}

func TestBatchCommits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.db")
	s := mustOpen(t, path, []string{"k"}, []string{"v"}, Options{BatchRows: 3})
	defer mustClose(t, s)
	for i := range 7 {
		mustWrite(t, s, row([]string{"k", strconv.Itoa(i)}, 0, 1, "on_time", 0, 1, "v", "1"))
	}
	// Two batches of 3 are committed, the 7th row is buffered.
	if got := strings.Count(dump(t, path, "results", []string{"k"}), "\n"); got != 6 {
		t.Fatalf("%d rows committed, want 6", got)
	}
}

func TestSQLiteErrorRollsBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.db")
	s := mustOpen(t, path, []string{"k"}, []string{"v"}, Options{})
	defer mustClose(t, s)
	mustWrite(t, s, row([]string{"k", `"a"`}, 0, 1, "on_time", 0, 1, "v", "1"))
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, row([]string{"k", `"b"`}, 0, 1, "on_time", 0, 1, "v", "1"))
	// Break the table behind the sink's back: the next write fails and the
	// open batch (row b) is rolled back.
	s.rollback()
	if _, err := s.db.Exec(`CREATE TRIGGER boom BEFORE INSERT ON results WHEN NEW.k = 'c' BEGIN SELECT RAISE(ABORT, 'boom'); END`); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, row([]string{"k", `"b"`}, 0, 1, "on_time", 0, 1, "v", "1"))
	err := s.Write(ctx, []Row{row([]string{"k", `"c"`}, 0, 1, "on_time", 0, 1, "v", "1")})
	if err == nil || !strings.Contains(err.Error(), "boom") || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("got %v", err)
	}
	mustWrite(t, s, row([]string{"k", `"d"`}, 0, 1, "on_time", 0, 1, "v", "1"))
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want := "text:\"\" text:\"a\" int:0 int:1 text:\"on_time\" int:0 int:0 int:1 int:1\n" +
		"text:\"\" text:\"d\" int:0 int:1 text:\"on_time\" int:0 int:0 int:1 int:1\n"
	if got := dump(t, path, "results", []string{"k"}); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func BenchmarkUpsert(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bench.db")
	s := mustOpen(b, path, []string{"user", "region"}, []string{"count", "sum", "last"}, Options{})
	users := make([][]byte, 1000)
	for i := range users {
		users[i] = []byte(strconv.Quote("user-" + strconv.Itoa(i)))
	}
	r := Row{
		Keys:   []Column{{Name: "user"}, {Name: "region", Value: []byte("7")}},
		Values: []Column{{Name: "count"}, {Name: "sum", Value: []byte("1234.5")}, {Name: "last", Value: []byte(`"x"`)}},
	}
	var cnt []byte
	i := 0
	b.ReportAllocs()
	for ; b.Loop(); i++ {
		// 1000 users x 100 windows, each revised by 4 panes.
		n := i / 4
		r.Keys[0].Value = users[n%len(users)]
		r.Start = etime.Time(n / len(users) % 100 * 60000)
		r.End = r.Start + 60000
		r.Pane = int64(i % 4)
		r.Firing = "late"
		if r.Pane == 0 {
			r.Firing = "on_time"
		}
		r.Watermark = r.End + etime.Time(r.Pane)
		cnt = strconv.AppendInt(cnt[:0], int64(i), 10)
		r.Values[0].Value = cnt
		if err := s.Write(ctx, []Row{r}); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "rows/s")
	b.StopTimer()
	mustClose(b, s)
}

func TestRelativeAndMemoryPaths(t *testing.T) {
	t.Chdir(t.TempDir())
	s := mustOpen(t, "rel.db", []string{"k"}, []string{"v"}, Options{})
	mustWrite(t, s, row([]string{"k", "1"}, 0, 1, "on_time", 0, 1, "v", "1"))
	mustClose(t, s)
	if _, err := os.Stat("rel.db"); err != nil {
		t.Fatal(err)
	}
	if got := dump(t, "rel.db", "results", []string{"k"}); strings.Count(got, "\n") != 1 {
		t.Fatalf("got\n%s", got)
	}
	s = mustOpen(t, ":memory:", []string{"k"}, []string{"v"}, Options{})
	mustWrite(t, s, row([]string{"k", "1"}, 0, 1, "on_time", 0, 1, "v", "1"))
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.db.QueryRow("SELECT count(*) FROM results").Scan(&n); err != nil || n != 1 {
		t.Fatalf("in-memory table has %d rows (%v), want 1", n, err)
	}
	mustClose(t, s)
	if _, err := os.Stat(":memory:"); err == nil {
		t.Fatal("a file named :memory: was created")
	}
}

// TestRunGuard checks that (run, pane) orders a window's revisions: a later
// run's pane 0 replaces an earlier run's pane 5, an earlier run's higher
// pane written afterwards does not replace it, and an earlier run's
// retraction does not delete it, while the later run's own retraction does.
func TestRunGuard(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.db")
	s := mustOpen(t, path, []string{"k"}, []string{"v"}, Options{Job: "j"})
	defer mustClose(t, s)
	k := []string{"k", `"a"`}
	check := func(when, want string) {
		t.Helper()
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if got := dump(t, path, "results", []string{"k"}); got != want {
			t.Fatalf("%s: got\n%s\nwant\n%s", when, got, want)
		}
	}
	mustWrite(t, s, inRun(1, row(k, 0, 10, "late", 5, 50, "v", "15")))
	check("after run 1 pane 5", `text:"j" text:"a" int:0 int:10 text:"late" int:1 int:5 int:50 int:15`+"\n")

	run2 := `text:"j" text:"a" int:0 int:10 text:"on_time" int:2 int:0 int:10 int:20` + "\n"
	mustWrite(t, s, inRun(2, row(k, 0, 10, "on_time", 0, 10, "v", "20")))
	check("after run 2 pane 0", run2)

	mustWrite(t, s, inRun(1, row(k, 0, 10, "late", 9, 90, "v", "19")))
	check("after run 1 pane 9 (written after run 2 pane 0)", run2)

	// In one batch too: the guard is per statement, not per commit.
	mustWrite(t, s,
		inRun(1, row(k, 0, 10, "late", 9, 90, "v", "19")),
		inRun(2, row(k, 0, 10, "on_time", 0, 10, "v", "20")),
		inRun(1, row(k, 0, 10, "late", 7, 70, "v", "17")),
	)
	check("after a batch of runs 1, 2, 1", run2)

	mustWrite(t, s, inRun(1, row(k, 0, 10, "retract", 9, 99)))
	check("after a retraction of run 1 pane 9", run2)
	mustWrite(t, s, inRun(1, row(k, 0, 10, "retract", 1<<40, 99)))
	check("after a retraction of run 1 with a huge pane", run2)

	if n, err := s.MaxRun(); err != nil || n != 2 {
		t.Fatalf("MaxRun = %d, %v; want 2", n, err)
	}

	// Run 2's retraction, at a higher pane, deletes its row, and so does
	// a later run's retraction at a lower pane.
	mustWrite(t, s, inRun(2, row(k, 0, 10, "retract", 3, 99)))
	check("after a retraction of run 2 pane 3", "")
	mustWrite(t, s, inRun(3, row(k, 0, 10, "late", 4, 40, "v", "34")))
	mustWrite(t, s, inRun(4, row(k, 0, 10, "retract", 0, 99)))
	check("after run 3 pane 4 retracted by run 4 pane 0", "")
	// A retraction is a delete, not a tombstone: an older run's revision
	// written after it is inserted again.
	mustWrite(t, s, inRun(1, row(k, 0, 10, "late", 9, 90, "v", "19")))
	check("after run 1 pane 9 (written after the retractions)", `text:"j" text:"a" int:0 int:10 text:"late" int:1 int:9 int:90 int:19`+"\n")
}

// TestJobsShareTable writes the same key and window from two jobs into one
// table: each job keeps its own row, with its own guard, retractions and
// MaxRun, and Reset removes the resetting job's rows only.
func TestJobsShareTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.db")
	keys, values := []string{"k"}, []string{"v"}
	a := mustOpen(t, path, keys, values, Options{Table: "shared", Job: "a"})
	defer mustClose(t, a)
	b := mustOpen(t, path, keys, values, Options{Table: "shared", Job: "b"})
	defer mustClose(t, b)
	x, y, z := []string{"k", `"x"`}, []string{"k", `"y"`}, []string{"k", `"z"`}

	// The two sinks share the file's write lock: each commits before the
	// other writes.
	mustWrite(t, b, inRun(2, row(x, 0, 10, "on_time", 0, 10, "v", "20")))
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// Job a's run 1 is not older than job b's run 2: they are other rows.
	mustWrite(t, a,
		inRun(1, row(x, 0, 10, "on_time", 0, 10, "v", "10")),
		inRun(3, row(y, 0, 10, "late", 1, 20, "v", "11")),
		inRun(1, row(z, 0, 10, "on_time", 0, 10, "v", "12")),
		// A retraction deletes the retracting job's row only.
		inRun(9, row(x, 0, 10, "retract", 9, 99)),
		inRun(1, row(x, 0, 10, "on_time", 0, 10, "v", "10")),
		inRun(9, row(z, 0, 10, "retract", 9, 99)),
	)
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want := `text:"a" text:"x" int:0 int:10 text:"on_time" int:1 int:0 int:10 int:10` + "\n" +
		`text:"a" text:"y" int:0 int:10 text:"late" int:3 int:1 int:20 int:11` + "\n" +
		`text:"b" text:"x" int:0 int:10 text:"on_time" int:2 int:0 int:10 int:20` + "\n"
	if got := dump(t, path, "shared", keys); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}

	c := mustOpen(t, path, keys, values, Options{Table: "shared", Job: "c"})
	for _, m := range []struct {
		s    *Sink
		want int64
	}{{a, 3}, {b, 2}, {c, 0}} {
		if n, err := m.s.MaxRun(); err != nil || n != m.want {
			t.Fatalf("job %q: MaxRun = %d, %v; want %d", m.s.job, n, err, m.want)
		}
	}
	// Resetting a job without rows removes nothing.
	if n, err := c.Reset(); err != nil || n != 0 {
		t.Fatalf("job c: Reset = %d, %v; want 0", n, err)
	}
	mustClose(t, c)

	// Reset commits the open batch first, and removes its rows too.
	mustWrite(t, a, inRun(3, row(z, 20, 30, "on_time", 0, 30, "v", "13")))
	if n, err := a.Reset(); err != nil || n != 3 {
		t.Fatalf("job a: Reset = %d, %v; want 3", n, err)
	}
	wantB := `text:"b" text:"x" int:0 int:10 text:"on_time" int:2 int:0 int:10 int:20` + "\n"
	if got := dump(t, path, "shared", keys); got != wantB {
		t.Fatalf("after Reset of job a: got\n%s\nwant\n%s", got, wantB)
	}
	if n, err := a.MaxRun(); err != nil || n != 0 {
		t.Fatalf("job a after Reset: MaxRun = %d, %v; want 0", n, err)
	}
	if n, err := b.MaxRun(); err != nil || n != 2 {
		t.Fatalf("job b after Reset of job a: MaxRun = %d, %v; want 2", n, err)
	}
	if n, err := a.Reset(); err != nil || n != 0 {
		t.Fatalf("job a: second Reset = %d, %v; want 0", n, err)
	}

	// After its Reset, job a starts again from run 1.
	mustWrite(t, a, inRun(1, row(y, 0, 10, "early", 0, 5, "v", "1")))
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want = `text:"a" text:"y" int:0 int:10 text:"early" int:1 int:0 int:5 int:1` + "\n" + wantB
	if got := dump(t, path, "shared", keys); got != want {
		t.Fatalf("after job a's new run 1: got\n%s\nwant\n%s", got, want)
	}

	// Reset after Close fails.
	mustClose(t, b)
	if _, err := b.Reset(); err != ErrClosed {
		t.Fatalf("Reset after Close: %v, want ErrClosed", err)
	}
}

// TestOldLayoutRefused opens a table made by a weir before runs (no job
// and no run columns): Open refuses it, saying to use another table or
// delete it, and leaves it as it was.
func TestOldLayoutRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`CREATE TABLE "results" ("k", "window_start" INTEGER NOT NULL, "window_end" INTEGER NOT NULL, "firing" TEXT NOT NULL, "pane" INTEGER NOT NULL, "watermark" INTEGER NOT NULL, "v", PRIMARY KEY ("k", "window_start", "window_end"))`,
		`INSERT INTO "results" VALUES ('a', 0, 10, 'on_time', 3, 10, 7)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	const old = `[[text:"a" int:0 int:10 text:"on_time" int:3 int:10 int:7]]`

	s, err := Open(path, []string{"k"}, []string{"v"}, Options{Job: "j"})
	if err == nil {
		s.Close()
		t.Fatal("Open accepted a table without job and run")
	}
	for _, want := range []string{
		`table "results" in ` + path + ` exists with other columns`,
		"expected columns (job, k, window_start, window_end, firing, run, pane, watermark, v), primary key (job, k, window_start, window_end)",
		"found    columns (k, window_start, window_end, firing, pane, watermark, v), primary key (k, window_start, window_end)",
		"name another table (a job spec's sinks.results.table; Options.Table in Go), or, if its rows are no longer needed, drop it",
		"lacks job and run",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error\n%s\ndoes not contain\n%s", err, want)
		}
	}
	if got := fmt.Sprint(query(t, path, `SELECT * FROM "results"`)); got != old {
		t.Fatalf("the old table changed: got %s, want %s", got, old)
	}

	// Another table in the same file is fine, and so is the table once
	// deleted.
	mustClose(t, mustOpen(t, path, []string{"k"}, []string{"v"}, Options{Table: "results2", Job: "j"}))
	if _, err := db.Exec(`DROP TABLE "results"`); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, path, []string{"k"}, []string{"v"}, Options{Job: "j"})
	mustWrite(t, s, inRun(1, row([]string{"k", `"a"`}, 0, 10, "on_time", 0, 10, "v", "7")))
	mustClose(t, s)
	want := `text:"j" text:"a" int:0 int:10 text:"on_time" int:1 int:0 int:10 int:7` + "\n"
	if got := dump(t, path, "results", []string{"k"}); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
