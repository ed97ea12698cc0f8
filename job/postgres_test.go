package job

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/weirstream/weir/connector/pgio"
	"github.com/weirstream/weir/internal/testenv"
	"github.com/weirstream/weir/spec"
)

// pgURL returns the test Postgres and a connection to it, closed at
// cleanup; testenv.Postgres skips the test when it is not reachable
// (failing it when WEIR_REQUIRE_SERVICES=1).
func pgURL(t *testing.T) (string, *pgx.Conn) {
	t.Helper()
	u := testenv.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return u, conn
}

// TestPostgresResults runs the orders job (early, on-time and late
// firings) into Postgres and into a jsonl file: the table holds, per key
// and window, exactly the newest revision the file has; a crashed run that
// resumes from its checkpoint leaves the same table.
func TestPostgresResults(t *testing.T) {
	url, conn := pgURL(t)
	table := pgTable(t, conn, "weir_spec")
	pgJob := strings.Replace(fmt.Sprintf(orderJob, "postgres", "unused"), "path: unused", "url: '"+url+"', table: "+table, 1)

	refDir, refSum := runSpec(t, fmt.Sprintf(orderJob, "jsonl", "out.jsonl"), nil, RunOptions{Deterministic: true})
	b, err := os.ReadFile(filepath.Join(refDir, "out.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// The newest revision per (user, window) of the file.
	want := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		var r struct {
			User   string          `json:"user_id"`
			Start  int64           `json:"window_start"`
			Firing string          `json:"firing"`
			Orders json.RawMessage `json:"orders"`
			Total  json.RawMessage `json:"total"`
			Users  json.RawMessage `json:"users"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		k := fmt.Sprintf("%s@%d", r.User, r.Start)
		if r.Firing == "retract" {
			delete(want, k)
			continue
		}
		want[k] = fmt.Sprintf("%s %s %s", r.Orders, r.Total, r.Users)
	}
	table_ := func() map[string]string {
		rows, err := conn.Query(context.Background(), `SELECT user_id, window_start, orders::text, total::text, users::text FROM `+table)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for rows.Next() {
			var user, orders, total, users string
			var start int64
			if err := rows.Scan(&user, &start, &orders, &total, &users); err != nil {
				t.Fatal(err)
			}
			got[fmt.Sprintf("%s@%d", user, start)] = orders + " " + total + " " + users
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	check := func(what string) {
		t.Helper()
		got := table_()
		if len(got) != len(want) {
			t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("%s: row %s is %q, want %q", what, k, got[k], v)
			}
		}
	}
	_, sum := runSpec(t, pgJob, nil, RunOptions{Deterministic: true})
	if !slices.Equal(sum.JSON(), refSum.JSON()) {
		t.Fatalf("summary %s, want %s", sum.JSON(), refSum.JSON())
	}
	check("a run")

	// Again from scratch, crashing after a checkpoint's sink commit, then
	// resuming: the same table.
	if _, err := conn.Exec(context.Background(), `DROP TABLE `+table); err != nil {
		t.Fatal(err)
	}
	crashAndResume(t, pgJob, 5, nil)
	check("a crashed and resumed run")
}

// crashAndResume runs job with a checkpoint before every read, crashing it
// at the n-th sink commit, calls between (if not nil) with the epoch that
// commit flushed the record tables as (outCounters.Epoch), then runs it
// again from its checkpoint to the end; it returns the run's directory.
func crashAndResume(t *testing.T, job string, n int, between func(epoch int64)) string {
	t.Helper()
	s, err := spec.Parse([]byte(job))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var epoch int64
	for attempt := range 2 {
		hits := 0
		var j *Job
		o := RunOptions{Dir: dir, Deterministic: true, Now: testNow, CheckpointDir: filepath.Join(dir, "ck"), CheckpointInterval: time.Millisecond,
			CheckpointClock: everyRead(), // a checkpoint before every read: the nth comes however fast the machine
			Crash: func(p string) {
				if p == "sink-committed" && attempt == 0 {
					if hits++; hits == n {
						epoch = j.out.c.Epoch // on the checkpoint goroutine, the one that sets it
						panic("crash at " + p)
					}
				}
			}}
		j, err := Open(s, o)
		if err != nil {
			t.Fatal(err)
		}
		_, err = j.Run(context.Background())
		if attempt == 0 && err == nil {
			t.Fatal("the crash hook never fired")
		}
		if attempt == 0 && between != nil {
			between(epoch)
		}
		if attempt == 1 && err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestPostgresLateAndDeadLetters sends the orders job's late records and
// dead letters to Postgres tables: each holds exactly the entries of the
// jsonl files of the same run, by entry id, also after a crash after a
// sink commit (whose checkpoint never completed, so the resumed run writes
// those entries again).
func TestPostgresLateAndDeadLetters(t *testing.T) {
	url, conn := pgURL(t)
	late, dead := fmt.Sprintf("weir_late_%d", rand.Uint32()), fmt.Sprintf("weir_dead_%d", rand.Uint32())
	drop := func() {
		_, _ = conn.Exec(context.Background(), `DROP TABLE IF EXISTS `+late+`, `+dead)
	}
	t.Cleanup(drop)
	refDir, refSum := runSpec(t, fmt.Sprintf(orderJob, "jsonl", "out.jsonl"), nil, RunOptions{Deterministic: true})
	// want: id -> reason and record, from the files.
	want := map[string]string{}
	for _, f := range []string{"late.jsonl", "bad.jsonl"} {
		b, err := os.ReadFile(filepath.Join(refDir, f))
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
			var e struct {
				ID     string          `json:"id"`
				Record json.RawMessage `json:"record"`
				Raw    string          `json:"raw"`
				Reason string          `json:"reason"`
			}
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatal(err)
			}
			if e.Reason == "" {
				e.Reason = "window_expired"
			}
			rec := string(e.Record)
			if rec == "" {
				rec = e.Raw
			}
			if _, dup := want[f+e.ID]; dup || e.ID == "" {
				t.Fatalf("%s: id %q twice or empty", f, e.ID)
			}
			want[f+e.ID] = e.Reason + " " + compactJSON(t, rec)
		}
	}
	if len(want) < 100 {
		t.Fatalf("only %d late records and dead letters; the test proves little", len(want))
	}
	rows := func() map[string]string {
		got := map[string]string{}
		for table, f := range map[string]string{late: "late.jsonl", dead: "bad.jsonl"} {
			rs, err := conn.Query(context.Background(), `SELECT id, reason, record::text FROM `+table+` WHERE job = 'orders'`)
			if err != nil {
				t.Fatal(err)
			}
			for rs.Next() {
				var id, reason, rec string
				if err := rs.Scan(&id, &reason, &rec); err != nil {
					t.Fatal(err)
				}
				var v any
				if json.Unmarshal([]byte(rec), &v) == nil {
					if s, ok := v.(string); ok { // a dead letter that is not JSON
						rec = s
					}
				}
				got[f+id] = reason + " " + compactJSON(t, rec)
			}
			if err := rs.Err(); err != nil {
				t.Fatal(err)
			}
		}
		return got
	}
	check := func(what string) {
		t.Helper()
		got := rows()
		if len(got) != len(want) {
			t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("%s: entry %s is %q, want %q", what, k, got[k], v)
			}
		}
	}
	job := strings.Replace(fmt.Sprintf(orderJob, "jsonl", "out.jsonl"), "late: {type: jsonl, path: late.jsonl}", "late: {type: postgres, url: '"+url+"', table: "+late+"}", 1)
	job = strings.Replace(job, "dead_letter: {type: jsonl, path: bad.jsonl}", "dead_letter: {type: postgres, url: '"+url+"', table: "+dead+"}", 1)
	_, sum := runSpec(t, job, nil, RunOptions{Deterministic: true})
	if !slices.Equal(sum.JSON(), refSum.JSON()) {
		t.Fatalf("summary %s, want %s", sum.JSON(), refSum.JSON())
	}
	check("a run")
	drop()
	// Another job shares both tables and has stored records of every id
	// this one writes, with higher epochs: they are neither in this
	// job's way nor cut by its restore.
	for _, table := range []string{late, dead} {
		r, err := pgio.OpenRecords(context.Background(), url, table, pgio.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		if _, err := conn.Exec(context.Background(), `INSERT INTO `+table+` (id, reason, job, epoch) SELECT g::text, 'window_expired', 'other', 5000 FROM generate_series(1, 40000) g`); err != nil {
			t.Fatal(err)
		}
	}
	// The crash came after the sink commit of a checkpoint that never
	// completed: rows of its epoch are in the tables. Add one more to
	// each, as if a record judged late (or a dead letter) before the crash
	// were not after it: the restore must remove it with the rest of
	// that epoch.
	crashAndResume(t, job, 20, func(epoch int64) {
		if epoch < 2 {
			t.Fatalf("the crash's commit flushed epoch %d; a restore then cuts nothing the test can see", epoch)
		}
		for _, table := range []string{late, dead} {
			if _, err := conn.Exec(context.Background(), `INSERT INTO `+table+` (id, reason, record, job, epoch, run) VALUES ('forged', 'window_expired', '{}', 'orders', $1, (SELECT max(run) FROM `+table+` WHERE job = 'orders'))`, epoch); err != nil {
				t.Fatalf("forging a row of the uncommitted epoch in %s: %v", table, err)
			}
		}
	})
	check("a crashed and resumed run")
	for _, table := range []string{late, dead} {
		var n int
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM `+table+` WHERE job = 'other'`).Scan(&n); err != nil || n != 40000 {
			t.Fatalf("%s: %d of the other job's 40000 rows are left (%v)", table, n, err)
		}
	}
}

// compactJSON is s with insignificant space removed when it is JSON (jsonb
// reorders keys too, so objects are compared decoded and re-encoded).
func compactJSON(t *testing.T, s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPostgresWithoutCheckpoints: a job without checkpoints commits its
// Postgres results and late records every 1,000 rows as it runs, not
// only when the run ends (before, an endless source held every row in
// memory and wrote none).
func TestPostgresWithoutCheckpoints(t *testing.T) {
	url, conn := pgURL(t)
	table := fmt.Sprintf("weir_nock_%d", rand.Uint32())
	t.Cleanup(func() { _, _ = conn.Exec(context.Background(), `DROP TABLE IF EXISTS `+table+`, `+table+`_late`) })
	const records = 60000
	job := fmt.Sprintf(`
name: nock
source:
  type: generator
  generator:
    records: %d
    keys: 50
    duration: 60m
    disorder:
      - {share: 0.9, max: 5s}
      - {share: 0.1, min: 5m, max: 10m}
    seed: 3
watermark: {max_out_of_orderness: 10s}
key: [user_id]
window: {type: tumbling, size: 1m}
aggregate:
  - {name: orders, fn: count}
sinks:
  results: {type: postgres, url: '%s', table: %s}
  late: {type: postgres, url: '%s', table: %s_late}
`, records, url, table, url, table)
	count := func(table string) (n int) {
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM `+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// The generator asks Stop before each batch: sample the tables then.
	type sample struct{ results, late int }
	var samples []sample
	_, sum := runSpec(t, job, nil, RunOptions{Deterministic: true, Stop: func() bool {
		samples = append(samples, sample{count(table), count(table + "_late")})
		return false
	}})
	mid := samples[len(samples)*5/6]
	midResults, midLate := mid.results, mid.late
	if midResults == 0 || midLate == 0 {
		t.Fatalf("with 5/6 of the input read, Postgres held %d results and %d late records", midResults, midLate)
	}
	if n := count(table + "_late"); int64(n) != sum.Get("late_side_output") || n <= midLate {
		t.Fatalf("the late table holds %d rows at the end (%d midway); the summary counts %d", n, midLate, sum.Get("late_side_output"))
	}
	// Every batch is the job's rows of the run's one epoch.
	var other int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM `+table+`_late WHERE job IS DISTINCT FROM 'nock' OR epoch IS DISTINCT FROM 1`).Scan(&other); err != nil || other != 0 {
		t.Fatalf("%d late rows are not job nock's of epoch 1 (%v)", other, err)
	}
	t.Logf("midway: %d result rows, %d late rows", midResults, midLate)
}

// TestPostgresRunsInRecordTables: a fresh start of a job removes its own
// rows of earlier runs from a late table and keeps another job's; with
// Append it keeps its own too; a restore cuts only its run's later
// epochs.
func TestPostgresRunsInRecordTables(t *testing.T) {
	url, conn := pgURL(t)
	for _, appendRuns := range []bool{false, true} {
		late := pgTable(t, conn, "weir_late_runs")
		job := strings.Replace(fmt.Sprintf(orderJob, "jsonl", "out.jsonl"), "late: {type: jsonl, path: late.jsonl}", "late: {type: postgres, url: '"+url+"', table: "+late+"}", 1)
		// An earlier run of this job (epoch 100) and another job (epoch
		// 1000) wrote to the table.
		ctx := context.Background()
		r, err := pgio.OpenRecords(ctx, url, late, pgio.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i, who := range []struct {
			job   string
			epoch int64
		}{{"orders", 100}, {"other", 1000}} {
			r.WriteRecord(fmt.Sprint("earlier-", i), "window_expired", []byte(`{}`), nil)
			r.SetEpoch(who.job, 1, who.epoch)
			if err := r.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		r.Close()
		s, err := spec.Parse([]byte(job))
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		j, err := Open(s, RunOptions{Dir: dir, Deterministic: true, Now: testNow, Append: appendRuns})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := j.Run(ctx); err != nil {
			t.Fatal(err)
		}
		var mine, other, runs int
		if err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE job = 'orders' AND id LIKE 'earlier-%'), count(*) FILTER (WHERE job = 'other'), count(DISTINCT run) FILTER (WHERE job = 'orders') FROM `+late).Scan(&mine, &other, &runs); err != nil {
			t.Fatal(err)
		}
		wantMine, wantRuns := 0, 1
		if appendRuns {
			wantMine, wantRuns = 1, 2
		}
		if mine != wantMine || other != 1 || runs != wantRuns {
			t.Fatalf("append %v: the job's earlier rows %d (want %d), the other job's %d (want 1), the job's runs %d (want %d)", appendRuns, mine, wantMine, other, runs, wantRuns)
		}
	}
	// A crash and a resume: the restore cuts the run's later epochs only,
	// never another job's rows, whatever their epochs.
	late := pgTable(t, conn, "weir_late_runs")
	job := strings.Replace(fmt.Sprintf(orderJob, "jsonl", "out.jsonl"), "late: {type: jsonl, path: late.jsonl}", "late: {type: postgres, url: '"+url+"', table: "+late+"}", 1)
	r, err := pgio.OpenRecords(context.Background(), url, late, pgio.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.WriteRecord("other-1", "window_expired", []byte(`{}`), nil)
	r.SetEpoch("other", 1, 1000)
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.Close()
	crashAndResume(t, job, 20, nil)
	var n, other int
	if err := conn.QueryRow(context.Background(), `SELECT count(DISTINCT run) FILTER (WHERE job = 'orders'), count(*) FILTER (WHERE job = 'other') FROM `+late).Scan(&n, &other); err != nil || n != 1 || other != 1 {
		t.Fatalf("the resumed run's rows are of %d runs, want 1 (a resume is the same run); the other job's rows %d, want 1 (%v)", n, other, err)
	}
}

// TestPostgresLedgerCutAcrossRuns: a Postgres ledger kept across runs
// (--append) is cut by the live run's checkpoint only in that run: an
// earlier run's rows, whatever their epochs (they count within their own
// run), are read whole, the live run's up to its checkpoint's epoch.
func TestPostgresLedgerCutAcrossRuns(t *testing.T) {
	url, conn := pgURL(t)
	late := pgTable(t, conn, "weir_late_cut")
	job := strings.Replace(fmt.Sprintf(orderJob, "sqlite", "results.db"), "late: {type: jsonl, path: late.jsonl}", "late: {type: postgres, url: '"+url+"', table: "+late+"}", 1) + "checkpoint: {dir: ck}\n"
	dir := t.TempDir()
	// Run 1 ends, after many checkpoints (many epochs).
	_, first := runSpec(t, job, nil, RunOptions{Dir: dir, Deterministic: true, CheckpointInterval: time.Millisecond, CheckpointClock: everyRead()})
	// Run 2, on other input, appends, and crashes after its second
	// checkpoint's sink commit: its newest checkpoint has a low epoch.
	p, err := spec.Parse([]byte(strings.Replace(job, "seed: 3", "seed: 4", 1)))
	if err != nil {
		t.Fatal(err)
	}
	hits := 0
	j, err := Open(p, RunOptions{Dir: dir, Deterministic: true, Now: testNow.Add(time.Hour), CheckpointInterval: time.Millisecond, CheckpointClock: everyRead(), Append: true,
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
	cut, _, _, _, err := backfillCut(p, dir)
	if err != nil || cut == nil {
		t.Fatalf("cut %v, %v", cut, err)
	}
	ctx := context.Background()
	var runs, firstRows, firstAbove, live int
	if err := conn.QueryRow(ctx, `SELECT count(DISTINCT run), count(*) FILTER (WHERE run < $1), count(*) FILTER (WHERE run < $1 AND epoch > $2), count(*) FILTER (WHERE run = $1 AND epoch <= $2) FROM `+late+` WHERE job = 'orders'`, cut.run, cut.epoch).Scan(&runs, &firstRows, &firstAbove, &live); err != nil {
		t.Fatal(err)
	}
	if runs != 2 || firstRows != int(first.Get("late_side_output")) || firstAbove == 0 {
		t.Fatalf("%d runs in the table, the first's %d rows (its summary: %d), %d of them above the cut's epoch %d: the test needs both runs and such rows", runs, firstRows, first.Get("late_side_output"), firstAbove, cut.epoch)
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
	url, conn := pgURL(t)
	table := pgTable(t, conn, "weir_typed")
	job := fmt.Sprintf(typedJob, url, table)
	dir, sum := runSpec(t, job, map[string]string{"in.jsonl": typedInput}, RunOptions{Deterministic: true})
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
	p, err := spec.Parse([]byte(job))
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
	url, conn := pgURL(t)
	table := pgTable(t, conn, "weir_old")
	job := fmt.Sprintf(typedJob, url, table)
	p, err := spec.Parse([]byte(job))
	if err != nil {
		t.Fatal(err)
	}
	// The table as weir wrote it before: the same columns, all jsonb.
	keys, vals := pgColumns(p)
	old, err := pgio.Open(context.Background(), url, table, pgio.Defs(pgio.JSONB, defNames(keys)...), pgio.Defs(pgio.JSONB, defNames(vals)...), pgio.Options{Job: "typed"})
	if err != nil {
		t.Fatal(err)
	}
	old.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in.jsonl"), []byte(typedInput), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(p, RunOptions{Dir: dir, Deterministic: true, Now: testNow})
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
	runSpec(t, fmt.Sprintf(typedJob, url, pgTable(t, conn, "weir_new")), nil, RunOptions{Dir: dir, Deterministic: true})
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
