package backfill

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/pgio"
	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/internal/outfmt"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/spec"
)

// TestPostgresLedgerCutAcrossRuns: a Postgres ledger kept across runs
// (--append) is cut by the live run's checkpoint only in that run: an
// earlier run's rows, whatever their epochs (they count within their own
// run), are read whole, the live run's up to its checkpoint's epoch.
func TestPostgresLedgerCutAcrossRuns(t *testing.T) {
	url, conn := jobtest.PgURL(t)
	late := jobtest.PgTable(t, conn, "weir_late_cut")
	yml := strings.Replace(fmt.Sprintf(jobtest.OrderJob, "sqlite", "results.db"), "late: {type: jsonl, path: late.jsonl}", "late: {type: postgres, url: '"+url+"', table: "+late+"}", 1) + "checkpoint: {dir: ck}\n"
	dir := t.TempDir()
	// Run 1 ends, after many checkpoints (many epochs).
	_, first := runSpec(t, yml, nil, job.RunOptions{Dir: dir, Deterministic: true, CheckpointInterval: time.Millisecond, CheckpointClock: jobtest.EveryRead()})
	// Run 2, on other input, appends, and crashes after its second
	// checkpoint's sink commit: its newest checkpoint has a low epoch.
	p, err := spec.Parse([]byte(strings.Replace(yml, "seed: 3", "seed: 4", 1)))
	if err != nil {
		t.Fatal(err)
	}
	hits := 0
	j, err := job.Open(p, job.RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow.Add(time.Hour), CheckpointInterval: time.Millisecond, CheckpointClock: jobtest.EveryRead(), Append: true,
		Crash: func(point string) {
			if point == "sink-committed" {
				if hits++; hits == 3 {
					panic("crash at " + point)
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Run(context.Background()); err == nil {
		t.Fatal("the crash hook never fired")
	}
	src, err := openLedgerSource(p, BackfillOptions{Dir: dir, DryRun: true}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer src.close()
	cut, _, _, _, err := backfillCut(p, job.RunOptions{Dir: dir}, src)
	if err != nil || cut == nil {
		t.Fatalf("cut %v, %v", cut, err)
	}
	epoch, err := strconv.ParseInt(string(cut.states["late"]), 10, 64)
	if err != nil {
		t.Fatalf("the late table's state in the checkpoint: %q", cut.states["late"])
	}
	ctx := context.Background()
	var runs, firstRows, firstAbove, live int
	if err := conn.QueryRow(ctx, `SELECT count(DISTINCT run), count(*) FILTER (WHERE run < $1), count(*) FILTER (WHERE run < $1 AND epoch > $2), count(*) FILTER (WHERE run = $1 AND epoch <= $2) FROM `+late+` WHERE job = 'orders'`, cut.run, epoch).Scan(&runs, &firstRows, &firstAbove, &live); err != nil {
		t.Fatal(err)
	}
	if runs != 2 || firstRows != int(first.Get("late_side_output")) || firstAbove == 0 {
		t.Fatalf("%d runs in the table, the first's %d rows (its summary: %d), %d of them above the cut's epoch %d: the test needs both runs and such rows", runs, firstRows, first.Get("late_side_output"), firstAbove, epoch)
	}
	rep, err := Backfill(p, BackfillOptions{Dir: dir, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Entries != firstRows+live {
		t.Fatalf("the backfill read %d entries, want the first run's %d and the live run's %d up to its checkpoint", rep.Entries, firstRows, live)
	}
}

// typedJob has a string key, a count, an integer sum, a float average,
// an exact decimal sum and a collect, into Postgres (%s: url, %s: table),
// with a ledger for its too-late records.
const typedJob = `
name: typed
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s, emit: every_record}
key: [userId]
window: {type: tumbling, size: 1m}
aggregate:
  - {name: orders, fn: count}
  - {name: qty, fn: sum, field: qty}
  - {name: mean, fn: avg, field: price, type: float}
  - {name: total, fn: sum, field: amount}
  - {name: items, fn: collect, field: item}
sinks:
  results: {type: postgres, url: '%s', table: %s}
  late: {type: ledger, dir: ledger}
  dead_letter: {type: jsonl, path: dead.jsonl}
`

// typedInput is typedJob's input: two users, three windows, and a record
// of user-001's first window that comes too late (the ledger keeps it).
const typedInput = `{"userId":"user-001","ts":1780272001000,"qty":2,"amount":10.10,"price":1.5,"item":"a"}
{"userId":"user-001","ts":1780272002000,"qty":3,"amount":0.05,"price":2.5,"item":"b"}
{"userId":"user-002","ts":1780272003000,"qty":5,"amount":100,"price":4,"item":"c"}
{"userId":"user-001","ts":1780272061000,"qty":7,"amount":1.111,"price":0.1,"item":"d"}
{"userId":"user-002","ts":1780272125000,"qty":1,"amount":1,"price":1,"item":"e"}
{"userId":"user-001","ts":1780272004000,"qty":10,"amount":2.00,"price":3,"item":"f"}
`

// TestPostgresTypedColumns: the results table of a job has the SQL type
// of each aggregate and key (information_schema.columns), so sum() of
// its aggregates and a key compared with a string work in plain SQL;
// the complete answer and a backfill read and write the typed columns
// (the backfill's revision is in the sums, and the table then equals
// the complete answer).
func TestPostgresTypedColumns(t *testing.T) {
	url, conn := jobtest.PgURL(t)
	table := jobtest.PgTable(t, conn, "weir_typed")
	yml := fmt.Sprintf(typedJob, url, table)
	dir, sum := runSpec(t, yml, map[string]string{"in.jsonl": typedInput}, job.RunOptions{Deterministic: true})
	if sum.Get("late_side_output") != 1 {
		t.Fatalf("%d records too late, want 1: %s", sum.Get("late_side_output"), sum.JSON())
	}
	ctx := context.Background()
	query := func(q string) [][]string {
		t.Helper()
		rows, err := conn.Query(ctx, q)
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
				line[i] = fmt.Sprint(v)
			}
			out = append(out, line)
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return out
	}
	cols := query(`SELECT column_name::text, data_type::text FROM information_schema.columns WHERE table_name = '` + table + `' AND table_schema = current_schema() ORDER BY ordinal_position`)
	want := [][]string{
		{"job", "text"}, {"userId", "text"},
		{"window_start", "bigint"}, {"window_end", "bigint"}, {"firing", "text"}, {"run", "bigint"}, {"pane", "bigint"}, {"watermark", "bigint"},
		{"orders", "bigint"}, {"qty", "numeric"}, {"mean", "double precision"}, {"total", "numeric"}, {"items", "jsonb"}, {"weir_acc", "text"},
	}
	if d := cmp.Diff(want, cols); d != "" {
		t.Fatalf("columns of %s (-want +got):\n%s", table, d)
	}
	sums := `SELECT sum(orders)::text, sum(qty)::text, sum(total)::text, count(*)::text FROM ` + table + ` WHERE "userId" = 'user-001'`
	if d := cmp.Diff([][]string{{"3", "12", "11.261", "2"}}, query(sums)); d != "" {
		t.Fatalf("%s (-want +got):\n%s", sums, d)
	}
	row := `SELECT mean::text, items::text, (SELECT avg(mean)::text FROM ` + table + ` WHERE "userId" = 'user-002') FROM ` + table + ` WHERE "userId" = 'user-002' AND window_start = 1780272000000`
	if d := cmp.Diff([][]string{{"4", `["c"]`, "2.5"}}, query(row)); d != "" {
		t.Fatalf("%s (-want +got):\n%s", row, d)
	}

	// The complete answer reads the typed table: one window (the late
	// record's) differs, and after the backfill none does.
	p, err := spec.Parse([]byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	ans, err := Complete(p, dir)
	if err != nil {
		t.Fatal(err)
	}
	if diffs, n, err := ans.Compare(p, dir, 5); err != nil || n != 1 {
		t.Fatalf("before the backfill %d windows differ (%v), want 1: %v", n, err, diffs)
	}
	rep, err := Backfill(p, BackfillOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Applied != 1 || rep.Windows != 1 {
		t.Fatalf("the backfill applied %d entries to %d windows, want 1 and 1: %+v", rep.Applied, rep.Windows, rep)
	}
	if diffs, n, err := ans.Compare(p, dir, 5); err != nil || n != 0 {
		t.Fatalf("after the backfill %d windows differ (%v): %v", n, err, diffs)
	}
	if d := cmp.Diff([][]string{{"4", "22", "13.261", "2"}}, query(sums)); d != "" {
		t.Fatalf("after the backfill, %s (-want +got):\n%s", sums, d)
	}
	row = `SELECT firing, pane::text, mean::text, items::text FROM ` + table + ` WHERE "userId" = 'user-001' AND window_start = 1780272000000`
	if d := cmp.Diff([][]string{{"backfill", "1", "2.3333333333333335", `["a", "b", "f"]`}}, query(row)); d != "" {
		t.Fatalf("after the backfill, %s (-want +got):\n%s", row, d)
	}
}

// TestPostgresJSONBTableRefused: a results table of weir before typed
// columns (every key and aggregate jsonb) is refused when the job
// starts, with a message naming the table, each column with its type and
// the type expected, and the fix; the table is left as it was.
func TestPostgresJSONBTableRefused(t *testing.T) {
	url, conn := jobtest.PgURL(t)
	table := jobtest.PgTable(t, conn, "weir_old")
	yml := fmt.Sprintf(typedJob, url, table)
	p, err := spec.Parse([]byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	// The table as weir wrote it before: the same columns, all jsonb.
	keys, vals := connector.TableColumns(p.Key, outfmt.ResultColumns(p))
	old, err := pgio.Open(context.Background(), url, table, pgio.Defs(pgio.JSONB, defNames(keys)...), pgio.Defs(pgio.JSONB, defNames(vals)...), pgio.Options{Job: "typed"})
	if err != nil {
		t.Fatal(err)
	}
	old.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in.jsonl"), []byte(typedInput), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = job.Open(p, job.RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow})
	if err == nil {
		t.Fatal("the job started on a table of jsonb columns")
	}
	for _, w := range []string{
		`sinks.results: pgio: table "` + table + `" has the layout of weir before typed result columns`,
		`column "userId" is jsonb, expected text`,
		`column "orders" is jsonb, expected bigint`,
		`column "qty" is jsonb, expected numeric`,
		`column "mean" is jsonb, expected double precision`,
		`column "total" is jsonb, expected numeric`,
		`column "weir_acc" is jsonb, expected text`,
		`drop it (DROP TABLE "` + table + `") or rename it (ALTER TABLE "` + table + `" RENAME TO "` + table + `_jsonb")`,
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Open = %v\nwant it to contain %q", err, w)
		}
	}
	// A backfill and the complete answer's comparison refuse it too (the
	// ledger's entry comes from a run into another table).
	runSpec(t, fmt.Sprintf(typedJob, url, jobtest.PgTable(t, conn, "weir_new")), nil, job.RunOptions{Dir: dir, Deterministic: true})
	const refused = "has the layout of weir before typed result columns"
	if _, err := Backfill(p, BackfillOptions{Dir: dir}); err == nil || !strings.Contains(err.Error(), refused) {
		t.Errorf("Backfill on the jsonb table = %v, want an error containing %q", err, refused)
	}
	ans, err := Complete(p, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ans.Compare(p, dir, 5); err == nil || !strings.Contains(err.Error(), refused) {
		t.Errorf("Compare with the jsonb table = %v, want an error containing %q", err, refused)
	}
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM information_schema.columns WHERE table_name = $1 AND data_type = 'jsonb'`, table).Scan(&n); err != nil || n != 7 {
		t.Fatalf("the refused table has %d jsonb columns (%v), want its 7", n, err)
	}
}

func defNames(defs []pgio.ColumnDef) []string {
	out := make([]string, len(defs))
	for i, d := range defs {
		out[i] = d.Name
	}
	return out
}
