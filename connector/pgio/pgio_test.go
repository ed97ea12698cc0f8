package pgio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/pgproxy"
	"github.com/weirstream/weir/internal/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// defaultURL is the test server when WEIR_PG_URL is not set.
const defaultURL = testenv.DefaultPostgresURL

// db is the test server: its connection string and an admin connection for
// checks and cleanup.
type db struct {
	url   string
	admin *pgx.Conn
}

// connect returns the test server; testenv.Postgres skips the test if it
// is not reachable (failing it if WEIR_REQUIRE_SERVICES=1). The admin
// connection is closed at cleanup.
func connect(t testing.TB) *db {
	t.Helper()
	u := testenv.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return &db{url: u, admin: conn}
}

// table returns a table name unique to this test run, with prefix (default
// the test's name), dropped at cleanup.
func (d *db) table(t testing.TB, prefix string) string {
	t.Helper()
	if prefix == "" {
		var b strings.Builder
		for _, r := range strings.ToLower(t.Name()) {
			if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' {
				b.WriteRune(r)
			} else {
				b.WriteByte('_')
			}
		}
		prefix = "weir_" + b.String()
	}
	suffix := fmt.Sprintf("_%08x", rand.Uint32())
	for len(prefix)+len(suffix) > MaxIdentifierLen || !utf8.ValidString(prefix) {
		prefix = prefix[:len(prefix)-1]
	}
	name := prefix + suffix
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := d.admin.Exec(ctx, "DROP TABLE IF EXISTS "+quoteIdent(name)); err != nil {
			t.Errorf("drop table %s: %v", quoteIdent(name), err)
		}
	})
	return name
}

// exec runs a statement on the admin connection.
func (d *db) exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	if _, err := d.admin.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// query runs q on the admin connection and returns each row's cells as text
// (q should cast to text), "NULL" for SQL NULL.
func (d *db) query(t testing.TB, q string, args ...any) [][]string {
	t.Helper()
	rows, err := d.admin.Query(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		line := make([]string, len(vals))
		for i, v := range vals {
			if v == nil {
				line[i] = "NULL"
			} else {
				line[i] = fmt.Sprint(v)
			}
		}
		out = append(out, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

// dump returns the whole table, one row per line as Postgres prints a row,
// ordered by the job, the keys and the window.
func (d *db) dump(t testing.TB, table string, keys []string) string {
	t.Helper()
	order := make([]string, 0, len(keys)+3)
	order = append(order, `dump_row_."job"`)
	for _, k := range keys {
		order = append(order, "dump_row_."+quoteIdent(k))
	}
	order = append(order, `dump_row_."window_start"`, `dump_row_."window_end"`)
	var b strings.Builder
	for _, r := range d.query(t, "SELECT dump_row_::text FROM "+quoteIdent(table)+" AS dump_row_ ORDER BY "+strings.Join(order, ", ")) {
		b.WriteString(r[0])
		b.WriteByte('\n')
	}
	return b.String()
}

func (d *db) count(t testing.TB, table string) int {
	t.Helper()
	n, err := strconv.Atoi(d.query(t, "SELECT count(*)::text FROM "+quoteIdent(table))[0][0])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// row builds a Row of run 0 from alternating name, JSON pairs.
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

// inRun returns r with run run.
func inRun(run int64, r Row) Row {
	r.Run = run
	return r
}

// openJSONB opens a sink whose key and value columns are all jsonb: the
// tests of what does not depend on the column types use it.
func openJSONB(ctx context.Context, connString, table string, keys, values []string, o Options) (*Sink, error) {
	return Open(ctx, connString, table, Defs(JSONB, keys...), Defs(JSONB, values...), o)
}

// mustOpen opens a sink of jsonb columns (openJSONB), closed at cleanup.
func mustOpen(t testing.TB, connString, table string, keys, values []string, o Options) *Sink {
	t.Helper()
	s, err := openJSONB(context.Background(), connString, table, keys, values, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustWrite(t testing.TB, s *Sink, rows ...Row) {
	t.Helper()
	for _, r := range rows {
		if err := s.Write(context.Background(), []Row{r}); err != nil {
			t.Fatal(err)
		}
	}
}

func mustFlush(t testing.TB, s *Sink) {
	t.Helper()
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestUpsertPaneGuard: a newer pane replaces the stored row, an older one
// does not, the same one rewrites it; within one Flush and across Flushes.
func TestUpsertPaneGuard(t *testing.T) {
	d := connect(t)
	table := d.table(t, "")
	s := mustOpen(t, d.url, table, []string{"user"}, []string{"count", "sum"}, Options{})
	a, b := []string{"user", `"alice"`}, []string{"user", `"bob"`}
	// alice: panes 0, 2, 1, each in its own Flush.
	mustWrite(t, s, row(a, 0, 1000, "early", 0, -5, "count", "1", "sum", "1.5"))
	mustFlush(t, s)
	mustWrite(t, s, row(a, 0, 1000, "late", 2, 1500, "count", "3", "sum", "4.25"))
	mustFlush(t, s)
	mustWrite(t, s, row(a, 0, 1000, "on_time", 1, 999, "count", "2", "sum", "3"))
	mustFlush(t, s)
	// bob: panes 0, 2, 1 in one Flush.
	mustWrite(t, s,
		row(b, 0, 1000, "early", 0, -5, "count", "10", "sum", "1"),
		row(b, 0, 1000, "late", 2, 1600, "count", "30", "sum", `{"x": [1, 2]}`),
		row(b, 0, 1000, "on_time", 1, 999, "count", "20", "sum", "2"),
	)
	mustFlush(t, s)
	want := `("","""alice""",0,1000,late,0,2,1500,3,4.25)` + "\n" +
		`("","""bob""",0,1000,late,0,2,1600,30,"{""x"": [1, 2]}")` + "\n"
	if got := d.dump(t, table, []string{"user"}); got != want {
		t.Fatalf("after panes 0, 2, 1:\n%s\nwant (pane 2 kept):\n%s", got, want)
	}
	// The same pane again is applied (it is the same revision, so a replay
	// rewrites the same values).
	mustWrite(t, s, row(a, 0, 1000, "late", 2, 1500, "count", "3", "sum", "4.25"))
	mustFlush(t, s)
	if got := d.dump(t, table, []string{"user"}); got != want {
		t.Fatalf("after replaying pane 2:\n%s\nwant:\n%s", got, want)
	}
	mustWrite(t, s, row(a, 0, 1000, "late", 2, 1700, "count", "4", "sum", "5"))
	mustFlush(t, s)
	want = strings.Replace(want, "late,0,2,1500,3,4.25", "late,0,2,1700,4,5", 1)
	if got := d.dump(t, table, []string{"user"}); got != want {
		t.Fatalf("after an equal pane with other values:\n%s\nwant:\n%s", got, want)
	}
	// A newer pane replaces.
	mustWrite(t, s, row(a, 0, 1000, "late", 3, 1800, "count", "5", "sum", "6"))
	mustFlush(t, s)
	want = strings.Replace(want, "late,0,2,1700,4,5", "late,0,3,1800,5,6", 1)
	if got := d.dump(t, table, []string{"user"}); got != want {
		t.Fatalf("after pane 3:\n%s\nwant:\n%s", got, want)
	}
}

// TestRetract: a retraction deletes the window's row unless it holds a newer
// pane, and ignores its values.
func TestRetract(t *testing.T) {
	d := connect(t)
	table := d.table(t, "")
	s := mustOpen(t, d.url, table, []string{"k"}, []string{"v"}, Options{})
	a, b := []string{"k", `"a"`}, []string{"k", `"b"`}
	mustWrite(t, s,
		row(a, 0, 10, "on_time", 0, 10, "v", "1"),
		row(a, 0, 10, "late", 1, 20, "v", "2"),
		row(b, 0, 10, "on_time", 0, 10, "v", "3"),
		row(b, 0, 10, "late", 1, 20, "v", "4"),
	)
	mustFlush(t, s)
	mustWrite(t, s,
		row(a, 0, 10, "retract", 1, 30), // the last pane: deleted
		row(b, 0, 10, "retract", 0, 30), // an older pane: kept
		row(b, 5, 10, "retract", 9, 30), // no such window: nothing
	)
	mustFlush(t, s)
	want := `("","""b""",0,10,late,0,1,20,4)` + "\n"
	if got := d.dump(t, table, []string{"k"}); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	// Retract values are ignored, even if absent or invalid; a newer pane
	// retraction deletes.
	mustWrite(t, s, row(b, 0, 10, "retract", 5, 30, "bogus", "{"))
	mustFlush(t, s)
	if got := d.dump(t, table, []string{"k"}); got != "" {
		t.Fatalf("got\n%s\nwant an empty table", got)
	}
	// Within one batch: insert, retract, insert an older pane again.
	mustWrite(t, s,
		row(a, 0, 10, "on_time", 3, 10, "v", "7"),
		row(a, 0, 10, "retract", 3, 30),
		row(a, 0, 10, "late", 2, 40, "v", "8"),
	)
	mustFlush(t, s)
	if got, want := d.dump(t, table, []string{"k"}), `("","""a""",0,10,late,0,2,40,8)`+"\n"; got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// stream is a deterministic stream of about 2000 revisions over string and
// integer keys, several windows, in runs 0 to 2, with retractions, some of
// an older pane. A window's revisions come in (run, pane) order, but a
// window written again later may be of an older run or pane.
func stream() []Row {
	rng := rand.New(rand.NewPCG(1, 2))
	runs := rand.New(rand.NewPCG(3, 4)) // apart, so rng gives the same rows as before runs
	var out []Row
	users := []string{`"alice"`, `"bob"`, `"carol"`, `"d\"q"`, `"ünï"`, `null`}
	for len(out) < 2000 {
		u := users[rng.IntN(len(users))]
		shard := strconv.Itoa(rng.IntN(4) - 1)
		start := etime.Time(rng.IntN(50) * 1000)
		end := start + etime.Time(1000*(1+rng.IntN(3)))
		panes := 1 + rng.IntN(4)
		run := int64(runs.IntN(3))
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
			tags := fmt.Sprintf(`[%d, "x", {"p": %d}]`, p, rng.IntN(3))
			out = append(out, inRun(run, row(k, start, end, firing, int64(p), end+etime.Time(p*100),
				"n", strconv.Itoa(p+1), "sum", sum, "tags", tags)))
		}
		if rng.IntN(8) == 0 {
			// Retract the window's last pane, or an older pane that must
			// not delete it.
			out = append(out, inRun(run, row(k, start, end, "retract", int64(panes-1-rng.IntN(2)), end+5000)))
		}
	}
	return out
}

// model applies rows with the documented semantics and returns each
// remaining window's last revision, in first-written order.
func model(rows []Row) []Row {
	id := func(r Row) string {
		var b strings.Builder
		for _, k := range r.Keys {
			b.Write(k.Value)
			b.WriteByte(0)
		}
		fmt.Fprint(&b, r.Start, ",", r.End)
		return b.String()
	}
	// notNewer reports whether a's (run, pane) is not after b's.
	notNewer := func(a, b Row) bool { return a.Run < b.Run || a.Run == b.Run && a.Pane <= b.Pane }
	state := map[string]Row{}
	var order []string
	for _, r := range rows {
		k := id(r)
		cur, ok := state[k]
		if r.Firing == FiringRetract {
			if ok && notNewer(cur, r) {
				delete(state, k)
			}
			continue
		}
		if !ok || notNewer(cur, r) {
			if !ok {
				order = append(order, k)
			}
			state[k] = r
		}
	}
	var out []Row
	for _, k := range order {
		if r, ok := state[k]; ok {
			out = append(out, r)
			delete(state, k) // once, even if re-inserted after a retraction
		}
	}
	return out
}

// TestReplayIdempotent: writing a stream of results and retractions twice,
// replaying a suffix from an earlier point, or flushing in batches of other
// sizes leaves the same table as writing it once, and that table is the one
// the documented semantics give.
func TestReplayIdempotent(t *testing.T) {
	d := connect(t)
	keys, values := []string{"user", "shard"}, []string{"n", "sum", "tags"}
	rows := stream()
	write := func(s *Sink, rows []Row, batch int) {
		t.Helper()
		for i, r := range rows {
			mustWrite(t, s, r)
			if (i+1)%batch == 0 {
				mustFlush(t, s)
			}
		}
		mustFlush(t, s)
	}
	table := func(name string) (*Sink, string) {
		tb := d.table(t, "weir_replay_"+name)
		return mustOpen(t, d.url, tb, keys, values, Options{}), tb
	}

	once, onceT := table("once")
	write(once, rows, len(rows))
	first := d.dump(t, onceT, keys)
	if n := strings.Count(first, "\n"); n < 100 {
		t.Fatalf("only %d rows in the table:\n%s", n, first)
	}
	if !strings.Contains(first, `"""d\\""q"""`) || !strings.Contains(first, `("",null,-1,`) {
		t.Fatalf("expected escaped string, null and negative keys in the table:\n%s", first)
	}
	if got := d.query(t, `SELECT count(DISTINCT run)::text FROM `+quoteIdent(onceT)); fmt.Sprint(got) != "[[3]]" {
		t.Fatalf("the table holds rows of %v runs, want 3", got)
	}

	// The model's final rows, written alone, give the same table.
	m, mT := table("model")
	write(m, model(rows), 1000)
	if want := d.dump(t, mT, keys); first != want {
		t.Fatalf("table differs from the model:\n%s\nmodel:\n%s", first, want)
	}

	// The same rows again.
	write(once, rows, len(rows))
	if again := d.dump(t, onceT, keys); again != first {
		t.Fatalf("replay changed the table:\n%s\nfirst:\n%s", again, first)
	}
	// Other batch sizes, and a replay from an earlier point (as after a
	// restore from a checkpoint).
	for _, batch := range []int{1, 7, 333} {
		s, tb := table(strconv.Itoa(batch))
		write(s, rows, batch)
		if got := d.dump(t, tb, keys); got != first {
			t.Fatalf("batch size %d gives another table:\n%s\nall in one batch:\n%s", batch, got, first)
		}
	}
	s, tb := table("restore")
	write(s, rows[:1200], 100)
	write(s, rows[500:], 250)
	if got := d.dump(t, tb, keys); got != first {
		t.Fatalf("replaying rows 500.. after 1200 gives another table:\n%s\nonce:\n%s", got, first)
	}
}

// TestTypes: every JSON kind is stored as jsonb, null keys work, jsonb
// equality decides which keys are the same, the global window fits.
func TestTypes(t *testing.T) {
	d := connect(t)
	table := d.table(t, "")
	s := mustOpen(t, d.url, table, []string{"k"}, []string{"v"}, Options{})
	for _, v := range []string{`1`, `"1"`, `null`, `true`, `{"b": 1, "a": [2, "x"]}`, `-2.5e-3`, ` "ünï\u00e9\ud83d\ude00" `, `9223372036854775808`} {
		mustWrite(t, s, row([]string{"k", v}, etime.MinTime, etime.MaxTime, "on_time", 0, etime.MaxTime, "v", v))
	}
	// jsonb equality: 1.0 is the key 1, a reordered object the same key.
	mustWrite(t, s,
		row([]string{"k", `1.0`}, etime.MinTime, etime.MaxTime, "late", 1, etime.MaxTime, "v", `"one"`),
		row([]string{"k", `{"a":[2,"x"],"b":1}`}, etime.MinTime, etime.MaxTime, "late", 1, etime.MaxTime, "v", `"obj"`),
	)
	mustFlush(t, s)
	// jsonb sorts strings < numbers < null < booleans < objects.
	got := d.query(t, `SELECT k::text, jsonb_typeof(k), window_start::text, window_end::text, pane::text, v::text FROM `+quoteIdent(table)+` ORDER BY k`)
	want := [][]string{
		{`"1"`, `string`, "-9223372036854775808", "9223372036854775807", "0", `"1"`},
		{`"ünïé😀"`, `string`, "-9223372036854775808", "9223372036854775807", "0", `"ünïé😀"`},
		{`-0.0025`, `number`, "-9223372036854775808", "9223372036854775807", "0", `-0.0025`},
		{`1`, `number`, "-9223372036854775808", "9223372036854775807", "1", `"one"`},
		{`9223372036854775808`, `number`, "-9223372036854775808", "9223372036854775807", "0", `9223372036854775808`},
		{`null`, `null`, "-9223372036854775808", "9223372036854775807", "0", `null`},
		{`true`, `boolean`, "-9223372036854775808", "9223372036854775807", "0", `true`},
		{`{"a": [2, "x"], "b": 1}`, `object`, "-9223372036854775808", "9223372036854775807", "1", `"obj"`},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
}

// TestNoKeys: a non-keyed stream is identified by its window alone.
func TestNoKeys(t *testing.T) {
	d := connect(t)
	table := d.table(t, "")
	s := mustOpen(t, d.url, table, nil, []string{"total"}, Options{})
	mustWrite(t, s,
		row(nil, 0, 10, "early", 0, 5, "total", "5"),
		row(nil, 0, 10, "on_time", 1, 10, "total", "7"),
		row(nil, 10, 20, "on_time", 0, 20, "total", "1"),
		row(nil, 10, 20, "retract", 0, 20),
	)
	mustFlush(t, s)
	if got, want := d.dump(t, table, nil), `("",0,10,on_time,0,1,10,7)`+"\n"; got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// TestBuffered: nothing reaches the table before Flush; Close drops the
// buffer; Flush with nothing buffered does not need the server.
func TestBuffered(t *testing.T) {
	d := connect(t)
	table := d.table(t, "")
	s := mustOpen(t, d.url, table, []string{"k"}, []string{"v"}, Options{})
	mustWrite(t, s, row([]string{"k", "1"}, 0, 10, "on_time", 0, 10, "v", "1"))
	if n := d.count(t, table); n != 0 || s.Pending() != 1 {
		t.Fatalf("before Flush: %d rows in the table, %d pending; want 0, 1", n, s.Pending())
	}
	mustFlush(t, s)
	if n := d.count(t, table); n != 1 || s.Pending() != 0 {
		t.Fatalf("after Flush: %d rows in the table, %d pending; want 1, 0", n, s.Pending())
	}
	mustWrite(t, s, row([]string{"k", "2"}, 0, 10, "on_time", 0, 10, "v", "1"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if n := d.count(t, table); n != 1 {
		t.Fatalf("after Close: %d rows, want 1 (Close does not flush)", n)
	}
	if err := s.Write(context.Background(), []Row{row([]string{"k", "3"}, 0, 10, "on_time", 0, 10, "v", "1")}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Close: %v, want ErrClosed", err)
	}
	if err := s.Flush(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Flush after Close: %v, want ErrClosed", err)
	}

	// An empty Flush while the server is away returns at once.
	p := startProxy(t, d.url)
	s2 := mustOpen(t, p.connString(t, d.url), table, []string{"k"}, []string{"v"}, Options{})
	p.stop()
	start := time.Now()
	if err := s2.Flush(context.Background()); err != nil || time.Since(start) > time.Second {
		t.Fatalf("empty Flush with the server away: %v after %v", err, time.Since(start))
	}
}

// TestWriteValidation: invalid rows are refused by Write, naming the
// problem, and not buffered.
func TestWriteValidation(t *testing.T) {
	d := connect(t)
	s := mustOpen(t, d.url, d.table(t, ""), []string{"k"}, []string{"v"}, Options{})
	k := []string{"k", `"a"`}
	cases := []struct {
		r    Row
		want string
	}{
		{row(nil, 0, 1, "on_time", 0, 0, "v", "1"), "row has 0 keys, the sink has 1 (k)"},
		{row([]string{"x", "1"}, 0, 1, "on_time", 0, 0, "v", "1"), `row key 1 is "x", want "k"`},
		{row(k, 0, 1, "final", 0, 0, "v", "1"), `firing "final"`},
		{row(k, 0, 1, "on_time", 0, 0), "row has 0 values, the sink has 1 (v)"},
		{row(k, 0, 1, "on_time", 0, 0, "w", "1"), `row value 1 is "w", want "v"`},
		{row(k, 0, 1, "on_time", 0, 0, "v", ""), `value "v": invalid JSON: empty value`},
		{row(k, 0, 1, "on_time", 0, 0, "v", "{"), `value "v": invalid JSON "{"`},
		{row([]string{"k", "'a'"}, 0, 1, "on_time", 0, 0, "v", "1"), `key "k": invalid JSON`},
		{row(k, 0, 1, "on_time", 0, 0, "v", `"a\u0000b"`), `\u0000 is not allowed`},
		{row(k, 0, 1, "on_time", 0, 0, "v", `["\udc00"]`), `low surrogate`},
		{row(k, 0, 1, "on_time", 0, 0, "v", "\"\xff\""), `not valid UTF-8`},
		{row(k, 0, 1, "on_time", 0, 0, "v", `1e200000`), `too large for Postgres numeric`},
		{row([]string{"k", `"\ud800x"`}, 0, 1, "retract", 0, 0), `key "k": invalid JSON`},
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
}

// TestCheckJSONAgreesWithServer: Write's JSON check accepts exactly what the
// server accepts as jsonb, at the edges.
func TestCheckJSONAgreesWithServer(t *testing.T) {
	d := connect(t)
	cases := []string{
		`1`, `-0`, `1.5e3`, `1E+2`, `"x"`, `"\u00e9\ud83d\ude00"`, `"\uD83D\uDE00"`, `"\\u0000"`, `[1, {"a": null}]`, `  true  `,
		`1e131071`, `1e131072`, `100e131069`, `100e131070`, `-100e131070`, `0.000000001e131080`, `0.000000001e131081`,
		`1e-16383`, `1e-16384`, `1.000e-16383`, `10e-16384`, `0.0e-16382`, `0.0e-16383`, `0e-16383`, `0e-16384`,
		`0e999999`, `0e1073741822`, `0e1073741823`, `0e-1073741823`, `1e99999999999999999999`,
		`"\ud83d"`, `"\ude00"`, `"\ud83d\u0041"`, `"\ud83d\n"`, `{"a\u0000":1}`, `"\u0000"`,
		``, ` `, `{`, `nul`, `01`, `1.`, `NaN`, `[1,]`, `"a` + "\t" + `b"`,
	}
	for _, c := range cases {
		local := checkJSON([]byte(c))
		var ok bool
		serr := d.admin.QueryRow(context.Background(), "SELECT $1::text::jsonb IS NOT NULL", c).Scan(&ok)
		if (local == nil) != (serr == nil) {
			t.Errorf("%q: checkJSON says %v, the server says %v", c, local, serr)
		}
	}
}

// TestIdentifiers: any valid name is quoted and stored as is; invalid names
// are refused, naming the field.
func TestIdentifiers(t *testing.T) {
	d := connect(t)
	table := d.table(t, `Weir "Tab" ü`)
	keys := []string{`User "Name"`, "ÜNÏ", "a;b", `x"); DROP TABLE t; --`}
	values := []string{"Sum Of", `"q"`, "count", strings.Repeat("é", 31)} // 62 bytes
	s := mustOpen(t, d.url, table, keys, values, Options{})
	r := Row{Start: 0, End: 10, Firing: "on_time", Pane: 0, Watermark: 10}
	for i, k := range keys {
		r.Keys = append(r.Keys, Column{Name: k, Value: []byte(strconv.Itoa(i))})
	}
	for i, v := range values {
		r.Values = append(r.Values, Column{Name: v, Value: []byte(strconv.Itoa(10 + i))})
	}
	mustWrite(t, s, r)
	mustFlush(t, s)
	r.Firing, r.Pane = "retract", 0
	mustWrite(t, s, r)
	mustFlush(t, s)
	mustWrite(t, s, Row{Keys: r.Keys, Start: 0, End: 10, Firing: "late", Pane: 1, Watermark: 20, Values: r.Values})
	mustFlush(t, s)
	got := d.query(t, `SELECT attname::text FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped ORDER BY attnum`, quoteIdent(table))
	want := append(append(append([]string{"job"}, keys...), fixedColumns[:]...), values...)
	if fmt.Sprint(got) != fmt.Sprint(func() (w [][]string) {
		for _, n := range want {
			w = append(w, []string{n})
		}
		return
	}()) {
		t.Fatalf("columns of %q:\n%q\nwant\n%q", table, got, want)
	}
	if got, want := d.dump(t, table, keys), `("",0,1,2,3,0,10,late,0,1,20,10,11,12,13)`+"\n"; got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	// Reopening the same table works.
	s.Close()
	mustOpen(t, d.url, table, keys, values, Options{}).Close()

	tn := d.table(t, "weir_invalid") // in case a bad name is accepted
	long := strings.Repeat("x", 64)
	cases := []struct {
		table        string
		keys, values []string
		want         string
	}{
		{"", keys, values, "table name is empty"},
		{long, nil, nil, "table name \"" + long + "\" is 64 bytes long"},
		{"a\x00b", nil, nil, "table name \"a\\x00b\" contains a NUL byte"},
		{"a\xffb", nil, nil, "table name \"a\\xffb\" is not valid UTF-8"},
		{tn, []string{"a", ""}, nil, "key column 2 name is empty"},
		{tn, nil, []string{"a", strings.Repeat("é", 32)}, "value column 2 name \"" + strings.Repeat("é", 32) + "\" is 64 bytes long"},
		{tn, []string{"a\x00"}, nil, "key column 1 name \"a\\x00\" contains a NUL byte"},
		{tn, []string{"a"}, []string{"b", "\xff"}, "value column 2 name \"\\xff\" is not valid UTF-8"},
		{tn, []string{"Foo"}, []string{"foo"}, `value column 1 name "foo" is the same as key column 1 name "Foo"`},
		{tn, []string{"a", "a"}, nil, `key column 2 name "a" is the same as key column 1 name "a"`},
		{tn, []string{"Window_Start"}, nil, `key column 1 name "Window_Start" collides with the fixed column "window_start"`},
		{tn, nil, []string{"v", "pane"}, `value column 2 name "pane" collides with the fixed column "pane"`},
		{tn, nil, []string{"watermark"}, `collides with the fixed column "watermark"`},
		{tn, []string{"Job"}, nil, `key column 1 name "Job" collides with the fixed column "job"`},
		{tn, nil, []string{"v", "run"}, `value column 2 name "run" collides with the fixed column "run"`},
	}
	for _, c := range cases {
		s, err := openJSONB(context.Background(), d.url, c.table, c.keys, c.values, Options{})
		if err == nil {
			s.Close()
			t.Errorf("Open(%q, %q, %q) succeeded; want an error containing %q", c.table, c.keys, c.values, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%q, %q, %q) = %v\nwant an error containing %q", c.table, c.keys, c.values, err, c.want)
		}
	}
}

// TestSchemaMismatch: reopening an existing table with other columns, other
// types or another primary key is refused with a message naming each
// difference.
func TestSchemaMismatch(t *testing.T) {
	d := connect(t)
	table := d.table(t, "")
	s := mustOpen(t, d.url, table, []string{"k"}, []string{"a", "b"}, Options{})
	s.Close()
	// Same columns: fine.
	mustOpen(t, d.url, table, []string{"k"}, []string{"a", "b"}, Options{}).Close()

	cases := []struct {
		keys, values []string
		want         []string
	}{
		{[]string{"k"}, []string{"a", "c"}, []string{`column "c" (jsonb) is missing`, `column "b" (jsonb) is not expected`}},
		{[]string{"k"}, []string{"a"}, []string{`column "b" (jsonb) is not expected`}},
		{[]string{"k"}, []string{"A", "b"}, []string{`column "A" (jsonb) is missing`, `column "a" (jsonb) is not expected`}},
		{[]string{"k", "a"}, []string{"b"}, []string{`the primary key is ("job", "k", "window_start", "window_end"), expected ("job", "k", "a", "window_start", "window_end")`}},
		{nil, []string{"k", "a", "b"}, []string{`the primary key is ("job", "k", "window_start", "window_end"), expected ("job", "window_start", "window_end")`}},
	}
	for _, c := range cases {
		s, err := openJSONB(context.Background(), d.url, table, c.keys, c.values, Options{})
		if err == nil {
			s.Close()
			t.Errorf("Open(%q, %q) succeeded on the table with (k; a, b)", c.keys, c.values)
			continue
		}
		msg := err.Error()
		for _, w := range append(c.want, "exists with other columns", quoteIdent(table)) {
			if !strings.Contains(msg, w) {
				t.Errorf("Open(%q, %q) = %v\nwant it to contain %q", c.keys, c.values, msg, w)
			}
		}
	}

	// Another type.
	d.exec(t, "ALTER TABLE "+quoteIdent(table)+` ALTER COLUMN "b" TYPE text USING "b"::text, ALTER COLUMN "pane" TYPE integer`)
	_, err := openJSONB(context.Background(), d.url, table, []string{"k"}, []string{"a", "b"}, Options{})
	if err == nil || !strings.Contains(err.Error(), `column "b" has type text, expected jsonb`) ||
		!strings.Contains(err.Error(), `column "pane" has type integer, expected bigint`) {
		t.Fatalf("Open after changing types = %v", err)
	}
	// A result table of weir before jobs and runs is refused, naming both
	// columns and the primary key, and left unaltered.
	pre := d.table(t, "")
	d.exec(t, `CREATE TABLE `+quoteIdent(pre)+` ("k" jsonb NOT NULL, "window_start" bigint NOT NULL, "window_end" bigint NOT NULL, "firing" text NOT NULL, "pane" bigint NOT NULL, "watermark" bigint NOT NULL, "v" jsonb, PRIMARY KEY ("k", "window_start", "window_end"))`)
	if s, err := openJSONB(context.Background(), d.url, pre, []string{"k"}, []string{"v"}, Options{}); err == nil {
		s.Close()
		t.Errorf("Open on a result table without job and run succeeded")
	} else {
		for _, w := range []string{`column "job" (text) is missing`, `column "run" (bigint) is missing`,
			`the primary key is ("k", "window_start", "window_end"), expected ("job", "k", "window_start", "window_end")`, quoteIdent(pre)} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Open on a result table without job and run = %v\nwant it to contain %q", err, w)
			}
		}
	}
	if n := d.query(t, `SELECT count(*)::text FROM information_schema.columns WHERE table_name = $1`, pre); n[0][0] != "7" {
		t.Fatalf("the refused table now has %s columns, want 7", n[0][0])
	}

	// A record table is not a result table, and the other way round.
	r, err := OpenRecords(context.Background(), d.url, table, Options{})
	if err == nil {
		r.Close()
	}
	if err == nil || !strings.Contains(err.Error(), `column "id" (text) is missing`) {
		t.Fatalf("OpenRecords on a result table = %v", err)
	}
}

// TestNonTransientError: an error that is not about availability fails the
// Flush at once, names the row and the statement, commits none of the
// batch, and keeps it buffered for the next Flush.
func TestNonTransientError(t *testing.T) {
	d := connect(t)
	table := d.table(t, "")
	var logs syncBuffer
	s := mustOpen(t, d.url, table, []string{"k"}, []string{"v"}, Options{MinBackoff: 10 * time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	d.exec(t, "ALTER TABLE "+quoteIdent(table)+" ADD CONSTRAINT small_pane CHECK (pane < 100)")
	mustWrite(t, s,
		row([]string{"k", `"a"`}, 0, 10, "on_time", 1, 10, "v", "1"),
		inRun(2, row([]string{"k", `"b"`}, 0, 10, "on_time", 100, 10, "v", "2")),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.Flush(ctx)
	if err == nil {
		t.Fatal("Flush succeeded despite the CHECK constraint")
	}
	if ctx.Err() != nil {
		t.Fatalf("Flush = %v: it retried a non-transient error", err)
	}
	for _, w := range []string{`row 2 of the batch`, `keys (k="b"), window [0, 10), firing on_time, run 2, pane 100`, "23514", "small_pane", "statement: INSERT INTO " + quoteIdent(table)} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q\ndoes not contain %q", err, w)
		}
	}
	if n := d.count(t, table); n != 0 {
		t.Fatalf("%d rows committed by a failed Flush, want 0", n)
	}
	if logs.String() != "" {
		t.Fatalf("a non-transient error was retried:\n%s", logs.String())
	}
	if s.Pending() != 2 {
		t.Fatalf("%d rows pending after a failed Flush, want 2", s.Pending())
	}
	d.exec(t, "ALTER TABLE "+quoteIdent(table)+" DROP CONSTRAINT small_pane")
	mustFlush(t, s)
	if n := d.count(t, table); n != 2 {
		t.Fatalf("%d rows after the retried Flush, want 2", n)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proxy is a pgproxy.Proxy in front of the test server: stop refuses
// connections and kills the live ones, restart listens on the same port
// again.
type proxy struct{ *pgproxy.Proxy }

func startProxy(t testing.TB, connString string) *proxy {
	t.Helper()
	p, err := pgproxy.Start(connString)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return &proxy{p}
}

// connString is connString with the proxy as its host.
func (p *proxy) connString(t testing.TB, connString string) string {
	cs, err := p.ConnString(connString)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func (p *proxy) stop()          { p.Refuse() }
func (p *proxy) restart() error { return p.Heal() }

// ensureUp restarts the proxy if it is stopped, so that a failed subtest
// does not leave the next one without a server.
func (p *proxy) ensureUp(t testing.TB) {
	if err := p.Heal(); err != nil {
		t.Error(err)
	}
}

// TestRetry: a Flush while the server is away waits and succeeds once it is
// back; a Flush whose context is cancelled, or whose RetryFor passes, while
// it is away returns that error and keeps the rows for the next Flush; a
// backend terminated by the server is replaced.
func TestRetry(t *testing.T) {
	d := connect(t)
	table := d.table(t, "")
	p := startProxy(t, d.url)
	var logs syncBuffer
	o := Options{MinBackoff: 10 * time.Millisecond, MaxBackoff: 80 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	s := mustOpen(t, p.connString(t, d.url), table, []string{"k"}, []string{"v"}, o)
	mustWrite(t, s, row([]string{"k", "1"}, 0, 10, "on_time", 0, 10, "v", "1"))
	mustFlush(t, s)

	t.Run("server back after 300ms", func(t *testing.T) {
		defer p.ensureUp(t)
		mustWrite(t, s, row([]string{"k", "2"}, 0, 10, "on_time", 0, 10, "v", "2"))
		p.stop()
		back := make(chan error, 1)
		go func() {
			time.Sleep(300 * time.Millisecond)
			back <- p.restart()
		}()
		start := time.Now()
		err := s.Flush(context.Background())
		if rerr := <-back; rerr != nil {
			t.Fatal(rerr)
		}
		if err != nil {
			t.Fatalf("Flush: %v", err)
		}
		if waited := time.Since(start); waited < 250*time.Millisecond {
			t.Fatalf("Flush returned after %v, before the server was back", waited)
		}
		if got := d.query(t, "SELECT v::text FROM "+quoteIdent(table)+" WHERE k = '2'"); fmt.Sprint(got) != "[[2]]" {
			t.Fatalf("row 2 after the retried Flush: %v", got)
		}
		l := logs.String()
		if !strings.Contains(l, "level=WARN msg=\"pgio: Postgres unavailable, retrying\"") || !strings.Contains(l, "attempt=2") ||
			!strings.Contains(l, "msg=\"pgio: Postgres is available again\"") {
			t.Fatalf("log:\n%s", l)
		}
	})

	t.Run("context cancelled while the server is away", func(t *testing.T) {
		defer p.ensureUp(t)
		mustWrite(t, s, row([]string{"k", "3"}, 0, 10, "on_time", 0, 10, "v", "3"))
		p.stop()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := s.Flush(ctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Flush = %v, want context.DeadlineExceeded", err)
		}
		if waited := time.Since(start); waited < 250*time.Millisecond || waited > 5*time.Second {
			t.Fatalf("Flush returned after %v, want about 300ms", waited)
		}
		if n := d.count(t, table); n != 2 || s.Pending() != 1 {
			t.Fatalf("%d rows in the table and %d pending, want 2 and 1", n, s.Pending())
		}
		if err := p.restart(); err != nil {
			t.Fatal(err)
		}
		mustFlush(t, s)
		if n := d.count(t, table); n != 3 {
			t.Fatalf("%d rows after the next Flush, want 3", n)
		}
	})

	t.Run("Open context cancelled", func(t *testing.T) {
		defer p.ensureUp(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s2, err := openJSONB(ctx, p.connString(t, d.url), table, []string{"k"}, []string{"v"}, o)
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		mustWrite(t, s2, row([]string{"k", "4"}, 0, 10, "on_time", 0, 10, "v", "4"))
		p.stop()
		time.AfterFunc(200*time.Millisecond, cancel)
		if err := s2.Flush(context.Background()); !errors.Is(err, context.Canceled) {
			t.Fatalf("Flush = %v, want context.Canceled", err)
		}
		if err := p.restart(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("RetryFor", func(t *testing.T) {
		defer p.ensureUp(t)
		o := o
		o.RetryFor = 300 * time.Millisecond
		s2 := mustOpen(t, p.connString(t, d.url), table, []string{"k"}, []string{"v"}, o)
		mustWrite(t, s2, row([]string{"k", "5"}, 0, 10, "on_time", 0, 10, "v", "5"))
		p.stop()
		start := time.Now()
		err := s2.Flush(context.Background())
		if err == nil || !strings.Contains(err.Error(), "gave up after") || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Flush = %v, want a gave-up error", err)
		}
		if waited := time.Since(start); waited > 2*time.Second {
			t.Fatalf("Flush gave up after %v, want about 300ms", waited)
		}
		// Open retries too, within RetryFor.
		if _, err := openJSONB(context.Background(), p.connString(t, d.url), table, []string{"k"}, []string{"v"}, o); err == nil || !strings.Contains(err.Error(), "gave up after") {
			t.Fatalf("Open with the server away = %v, want a gave-up error", err)
		}
		if err := p.restart(); err != nil {
			t.Fatal(err)
		}
		mustFlush(t, s2)
	})

	t.Run("backend terminated", func(t *testing.T) {
		app := fmt.Sprintf("weir_test_%08x", rand.Uint32())
		cs := d.url + "&application_name=" + app
		if !strings.Contains(d.url, "?") {
			cs = d.url + "?application_name=" + app
		}
		if !strings.HasPrefix(d.url, "postgres") {
			cs = d.url + " application_name=" + app
		}
		s2 := mustOpen(t, cs, table, []string{"k"}, []string{"v"}, o)
		if got := d.query(t, "SELECT pg_terminate_backend(pid)::text FROM pg_stat_activity WHERE application_name = $1", app); fmt.Sprint(got) != "[[true]]" {
			t.Fatalf("pg_terminate_backend: %v, want one backend terminated", got)
		}
		for i := 0; d.query(t, "SELECT count(*)::text FROM pg_stat_activity WHERE application_name = $1", app)[0][0] != "0"; i++ {
			if i == 500 {
				t.Fatal("the terminated backend is still there after 5s")
			}
			time.Sleep(10 * time.Millisecond)
		}
		before := len(logs.String())
		mustWrite(t, s2, row([]string{"k", "6"}, 0, 10, "on_time", 0, 10, "v", "6"))
		mustFlush(t, s2)
		if l := logs.String()[before:]; !strings.Contains(l, "retrying") {
			t.Fatalf("no retry logged after the backend was terminated:\n%s", l)
		}
		if n := d.count(t, table); n != 5 {
			t.Fatalf("%d rows, want 5", n)
		}
	})
}

// openRecords opens a record table of a new name for the test; it is
// closed when the test ends.
func openRecords(t *testing.T, d *db) (*RecordSink, string) {
	t.Helper()
	table := d.table(t, "")
	r, err := OpenRecords(context.Background(), d.url, table, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, table
}

// TestRecords: the record table for late data and dead letters.
func TestRecords(t *testing.T) {
	d := connect(t)
	r, table := openRecords(t, d)
	write := func(id, reason string, rec, meta []byte) {
		t.Helper()
		if err := r.WriteRecord(id, reason, rec, meta); err != nil {
			t.Fatal(err)
		}
	}
	write("0:1", "late", []byte(`{"user": "alice", "ts": 5}`), []byte(`{"watermark": 10, "window_end": 6}`))
	write("0:2", "parse error: bad\x00reason\xff", []byte("not json \x00 \xff {"), []byte(`{"offset": 7}`))
	write("0:3", "empty", nil, nil)
	write("0:4", "string", []byte(`"\u0000"`), nil) // JSON jsonb cannot hold: stored as its text
	if err := r.WriteRecord("0:5", "bad meta", nil, []byte("{")); err == nil || !strings.Contains(err.Error(), "record meta: invalid JSON") {
		t.Fatalf("WriteRecord with invalid meta = %v", err)
	}
	if err := r.WriteRecord("", "no id", nil, nil); err == nil || !strings.Contains(err.Error(), "without an id") {
		t.Fatalf("WriteRecord without an id = %v", err)
	}
	if n := d.count(t, table); n != 0 || r.Pending() != 4 {
		t.Fatalf("before Flush: %d records in the table, %d pending; want 0, 4", n, r.Pending())
	}
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	q := `SELECT id::text, reason, record::text, meta::text, (arrived_at > now() - interval '1 minute')::text FROM ` + quoteIdent(table) + ` ORDER BY id`
	got := d.query(t, q)
	want := [][]string{
		{"0:1", "late", `{"ts": 5, "user": "alice"}`, `{"watermark": 10, "window_end": 6}`, "true"},
		{"0:2", "parse error: bad\uFFFDreason\uFFFD", `"not json ` + "\uFFFD \uFFFD" + ` {"`, `{"offset": 7}`, "true"},
		{"0:3", "empty", "NULL", "NULL", "true"},
		{"0:4", "string", `"\"\\u0000\""`, "NULL", "true"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
	// A replay writes the same ids again and changes nothing, even with
	// other contents; a new id is added.
	write("0:1", "late", []byte(`{"user": "alice", "ts": 5}`), []byte(`{"watermark": 10, "window_end": 6}`))
	write("0:2", "other", []byte(`{}`), nil)
	write("1:1", "late", []byte(`2`), nil)
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := d.query(t, q); fmt.Sprint(got[:4]) != fmt.Sprint(want) || len(got) != 5 || got[4][0] != "1:1" {
		t.Fatalf("after a replay:\n%q", got)
	}
	// Reopening works; a result table is refused.
	r2, err := OpenRecords(context.Background(), d.url, table, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r2.Close()
	if s, err := openJSONB(context.Background(), d.url, table, []string{"k"}, nil, Options{}); err == nil || !strings.Contains(err.Error(), `column "reason" (text) is not expected`) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("Open on a record table = %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteRecord("x", "x", nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("WriteRecord after Close = %v", err)
	}
}

// TestRecordEpochs: flushes stamp their rows with the job, run and epoch
// set; Cut removes that job's run's later epochs (not rows of no epoch, nor
// of another job, nor what is not flushed yet); MaxEpoch reads a job's
// run's highest. A table of the layout before jobs and epochs gets the
// columns (run too) and keeps its primary key (id), its rows keep NULL job
// and epoch and are run 0; a table of another layout is refused and left
// unaltered.
func TestRecordEpochs(t *testing.T) {
	d := connect(t)
	table := d.table(t, "")
	d.exec(t, `CREATE TABLE `+quoteIdent(table)+` ("id" TEXT PRIMARY KEY, "reason" TEXT NOT NULL, "record" JSONB, "meta" JSONB, "arrived_at" TIMESTAMPTZ NOT NULL DEFAULT now())`)
	d.exec(t, `INSERT INTO `+quoteIdent(table)+` (id, reason) VALUES ('old', 'late')`)
	ctx := context.Background()
	r, err := OpenRecords(ctx, d.url, table, Options{})
	if err != nil {
		t.Fatalf("a table without the job and epoch columns: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	if got := d.query(t, `SELECT a.attname::text FROM pg_index i CROSS JOIN unnest(i.indkey::int2[]) AS k(attnum)
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
		WHERE i.indrelid = to_regclass($1) AND i.indisprimary`, quoteIdent(table)); fmt.Sprint(got) != "[[id]]" {
		t.Fatalf("the primary key of the table of before jobs is now %q, want (id)", got)
	}
	if e, err := r.MaxEpoch(ctx, "a", 1); err != nil || e != 0 {
		t.Fatalf("MaxEpoch of rows without epochs = %d, %v", e, err)
	}
	flush := func(job string, run, epoch int64, ids ...string) {
		t.Helper()
		for _, id := range ids {
			r.WriteRecord(id, "late", nil, nil)
		}
		r.SetEpoch(job, run, epoch)
		if err := r.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	flush("a", 1, 1, "a1")
	flush("a", 1, 2, "a2")
	flush("b", 1, 5, "b5") // another job sharing the table
	flush("a", 1, 3, "a3")
	r.WriteRecord("pending", "late", nil, nil)
	if e, err := r.MaxEpoch(ctx, "a", 1); err != nil || e != 3 {
		t.Fatalf("MaxEpoch(a, 1) = %d, %v; want 3", e, err)
	}
	if n, err := r.Cut(ctx, "a", 1, 1); err != nil || n != 2 {
		t.Fatalf("Cut(a, 1, 1) deleted %d rows (%v), want 2", n, err)
	}
	r.SetEpoch("a", 1, 2)
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := d.query(t, `SELECT id, coalesce(job, 'NULL'), run::text, coalesce(epoch::text, 'NULL') FROM `+quoteIdent(table)+` ORDER BY id`)
	if want := [][]string{{"a1", "a", "1", "1"}, {"b5", "b", "1", "5"}, {"old", "NULL", "0", "NULL"}, {"pending", "a", "1", "2"}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after Cut(a, 1, 1) and a flush as epoch 2: %q, want %q", got, want)
	}
	// Reopening the migrated table works and changes nothing.
	r2, err := OpenRecords(ctx, d.url, table, Options{})
	if err != nil {
		t.Fatalf("reopening the migrated table: %v", err)
	}
	r2.Close()

	// The refused layout of older weir (a bigint id) keeps its columns.
	old := d.table(t, "")
	d.exec(t, `CREATE TABLE `+quoteIdent(old)+` ("id" BIGSERIAL PRIMARY KEY, "reason" TEXT NOT NULL, "record" JSONB, "meta" JSONB, "arrived_at" TIMESTAMPTZ NOT NULL DEFAULT now())`)
	if r2, err := OpenRecords(ctx, d.url, old, Options{}); err == nil || !strings.Contains(err.Error(), `column "id" has type bigint`) {
		if err == nil {
			r2.Close()
		}
		t.Fatalf("OpenRecords on a table with a bigint id = %v", err)
	}
	if n := d.query(t, `SELECT count(*)::text FROM information_schema.columns WHERE table_name = $1`, old); n[0][0] != "5" {
		t.Fatalf("the refused table now has %s columns", n[0][0])
	}
}

// TestRecordJobs: ids are unique per job: two jobs sharing a table (the
// default names are shared) both store their record of one id; a job's
// record whose id it stored already is skipped and counted.
func TestRecordJobs(t *testing.T) {
	d := connect(t)
	r, table := openRecords(t, d)
	for _, job := range []string{"a", "b", "a"} {
		r.WriteRecord("0:7", "late", []byte(`{"job":"`+job+`"}`), nil)
		r.SetEpoch(job, 1, 1)
		if err := r.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	got := d.query(t, `SELECT job, id, record::text FROM `+quoteIdent(table)+` ORDER BY job`)
	if want := [][]string{{"a", "0:7", `{"job": "a"}`}, {"b", "0:7", `{"job": "b"}`}}; fmt.Sprint(got) != fmt.Sprint(want) || r.Skipped() != 1 {
		t.Fatalf("rows %q (want %q), %d skipped (want 1)", got, want, r.Skipped())
	}
}

// TestRecordsRetry: record flushes wait for the server like result flushes.
func TestRecordsRetry(t *testing.T) {
	d := connect(t)
	table := d.table(t, "")
	p := startProxy(t, d.url)
	r, err := OpenRecords(context.Background(), p.connString(t, d.url), table, Options{MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if err := r.WriteRecord("0:7", "late", []byte(`1`), nil); err != nil {
		t.Fatal(err)
	}
	p.stop()
	back := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		back <- p.restart()
	}()
	err = r.Flush(context.Background())
	if rerr := <-back; rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if n := d.count(t, table); n != 1 {
		t.Fatalf("%d records, want 1", n)
	}
}

// TestOpenOptions: invalid options and connection strings are refused.
func TestOpenOptions(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{MinBackoff: -1}, "Options.MinBackoff is -1ns"},
		{Options{MaxBackoff: -1}, "Options.MaxBackoff is -1ns"},
		{Options{RetryFor: -1}, "Options.RetryFor is -1ns"},
	} {
		if _, err := openJSONB(context.Background(), defaultURL, "t", nil, nil, c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%+v) = %v, want an error containing %q", c.o, err, c.want)
		}
	}
	if _, err := openJSONB(context.Background(), "postgres://u:secret@[bad", "t", nil, nil, Options{}); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("Open with a bad connection string = %v, want an error without the password", err)
	}
}

// TestTransient classifies errors.
func TestTransient(t *testing.T) {
	_, refused := net.Dial("tcp", "127.0.0.1:1")
	cases := []struct {
		err  error
		want bool
	}{
		{refused, true},
		{io.ErrUnexpectedEOF, true},
		{fmt.Errorf("x: %w", &net.DNSError{Err: "no such host", IsNotFound: true}), false},
		{&net.DNSError{Err: "timeout", IsTimeout: true}, true},
		{errors.New("some bug"), false},
		{retryable{errors.New("race")}, true},
	}
	for _, c := range cases {
		if got := transient(c.err); got != c.want {
			t.Errorf("transient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// BenchmarkUpsert measures rows per second for Flushes of 1000 rows: new
// keys (inserts) and the same keys again with a newer pane (updates), into
// typed columns (text keys, a bigint count and a numeric sum, as a job's)
// and into jsonb ones.
func BenchmarkUpsert(b *testing.B) {
	d := connect(b)
	layouts := map[string][2][]ColumnDef{
		"typed": {Defs(Text, "user", "shard"), {{Name: "count", Type: BigInt}, {Name: "sum", Type: Numeric}}},
		"jsonb": {Defs(JSONB, "user", "shard"), Defs(JSONB, "count", "sum")},
	}
	for _, layout := range []string{"typed", "jsonb"} {
		for _, mode := range []string{"insert", "update"} {
			b.Run(layout+"/"+mode, func(b *testing.B) {
				table := d.table(b, "weir_bench_"+mode)
				s, err := Open(context.Background(), d.url, table, layouts[layout][0], layouts[layout][1], Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				const batch = 1000
				users := make([][]byte, batch)
				for i := range users {
					users[i] = []byte(strconv.Quote("user-" + strconv.Itoa(i)))
				}
				r := Row{
					Keys:   []Column{{Name: "user"}, {Name: "shard"}},
					Firing: FiringOnTime,
					Values: []Column{{Name: "count"}, {Name: "sum"}},
				}
				n := 0
				b.ResetTimer()
				for b.Loop() {
					for i := range batch {
						r.Keys[0].Value = users[i]
						r.Keys[1].Value = strconv.AppendInt(r.Keys[1].Value[:0], int64(i%7), 10)
						if mode == "insert" {
							r.Start = etime.Time(n) * 1000
							r.Pane = 0
						} else {
							r.Pane = int64(n)
						}
						r.End = r.Start + 1000
						r.Watermark = r.End
						r.Values[0].Value = strconv.AppendInt(r.Values[0].Value[:0], int64(n*batch+i), 10)
						r.Values[1].Value = strconv.AppendFloat(r.Values[1].Value[:0], float64(i)*1.5, 'g', -1, 64)
						if err := s.Write(context.Background(), []Row{r}); err != nil {
							b.Fatal(err)
						}
					}
					if err := s.Flush(context.Background()); err != nil {
						b.Fatal(err)
					}
					n++
				}
				b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rows/s")
			})
		}
	}
}
