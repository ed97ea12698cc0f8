package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/connector/pgio"
	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/spec"
)

// TestPostgresResults runs the orders job (early, on-time and late
// firings) into Postgres and into a jsonl file: the table holds, per key
// and window, exactly the newest revision the file has; a crashed run that
// resumes from its checkpoint leaves the same table.
func TestPostgresResults(t *testing.T) {
	url, conn := jobtest.PgURL(t)
	table := jobtest.PgTable(t, conn, "weir_spec")
	pgJob := strings.Replace(fmt.Sprintf(jobtest.OrderJob, "postgres", "unused"), "path: unused", "url: '"+url+"', table: "+table, 1)

	refDir, refSum := runSpec(t, fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl"), nil, RunOptions{Deterministic: true})
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

// TestPostgresDeclaredTable writes the orders job (early, on-time and
// late firings) into a table made beforehand as for a Flink job's JDBC
// sink (layout: declared): timestamps, a DECIMAL of scale 2, its own
// primary key and no job column. It holds, per key and window, the newest
// revision the jsonl file has; a second run and a crashed run resumed
// from its checkpoint leave the same table, not a row more.
func TestPostgresDeclaredTable(t *testing.T) {
	url, conn := jobtest.PgURL(t)
	table := jobtest.PgTable(t, conn, "weir_declared")
	ctx := context.Background()
	create := func() {
		t.Helper()
		if _, err := conn.Exec(ctx, `DROP TABLE IF EXISTS `+table); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `CREATE TABLE `+table+` (u varchar(32), window_start timestamp(3), window_end timestamp(3),
			orders bigint, total numeric(38, 2), firing text, pane bigint, run bigint, note text, PRIMARY KEY (u, window_start, window_end))`); err != nil {
			t.Fatal(err)
		}
	}
	pgJob := strings.Replace(fmt.Sprintf(jobtest.OrderJob, "postgres", "unused"), "path: unused", "url: '"+url+"', table: "+table+`, layout: declared,
    columns: [{name: u, from: user_id}, {name: window_start, time: timestamp}, {name: window_end, time: timestamp}, {name: orders}, {name: total}, {name: firing}, {name: pane}, {name: run}]`, 1)
	pgJob = strings.Replace(pgJob, "  - {name: users, fn: count_distinct, field: user_id}\n", "", 1)

	refDir, _ := runSpec(t, fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl"), nil, RunOptions{Deterministic: true})
	b, err := os.ReadFile(filepath.Join(refDir, "out.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		var r struct {
			User   string          `json:"user_id"`
			Start  int64           `json:"window_start"`
			End    int64           `json:"window_end"`
			Firing string          `json:"firing"`
			Pane   int64           `json:"pane"`
			Orders json.RawMessage `json:"orders"`
			Total  json.RawMessage `json:"total"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		k := fmt.Sprintf("%s@%s", r.User, time.UnixMilli(r.Start).UTC().Format("2006-01-02 15:04:05.000"))
		if r.Firing == "retract" {
			delete(want, k)
			continue
		}
		var total float64
		if err := json.Unmarshal(r.Total, &total); err != nil {
			t.Fatal(err)
		}
		want[k] = fmt.Sprintf("%s %s %.2f %s %d", time.UnixMilli(r.End).UTC().Format("2006-01-02 15:04:05.000"), r.Orders, total, r.Firing, r.Pane)
	}
	check := func(what string) {
		t.Helper()
		rows, err := conn.Query(ctx, `SELECT u, to_char(window_start, 'YYYY-MM-DD HH24:MI:SS.MS'), to_char(window_end, 'YYYY-MM-DD HH24:MI:SS.MS'), orders, total::text, firing, pane FROM `+table)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for rows.Next() {
			var u, start, end, total, firing string
			var orders, pane int64
			if err := rows.Scan(&u, &start, &end, &orders, &total, &firing, &pane); err != nil {
				t.Fatal(err)
			}
			got[u+"@"+start] = fmt.Sprintf("%s %d %s %s %d", end, orders, total, firing, pane)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("%s: row %s is %q, want %q", what, k, got[k], v)
			}
		}
	}
	create()
	runSpec(t, pgJob, nil, RunOptions{Deterministic: true})
	check("a run")
	runSpec(t, pgJob, nil, RunOptions{Deterministic: true})
	check("a second run")
	// A run whose clock is behind the last one's still takes every row:
	// its run goes above the newest the table holds.
	var before, after int64
	if err := conn.QueryRow(ctx, `SELECT max(run) FROM `+table).Scan(&before); err != nil {
		t.Fatal(err)
	}
	runSpec(t, pgJob, nil, RunOptions{Deterministic: true, Now: jobtest.TestNow.Add(-24 * time.Hour)})
	if err := conn.QueryRow(ctx, `SELECT min(run) FROM `+table).Scan(&after); err != nil || after <= before {
		t.Fatalf("after a run with an earlier clock the oldest row's run is %d (%v), the last run's was %d: its rows were refused", after, err, before)
	}
	check("a run with an earlier clock")
	create()
	crashAndResume(t, pgJob, 5, nil)
	check("a crashed and resumed run")
	// Missing, the table is made with the declared columns.
	if _, err := conn.Exec(ctx, `DROP TABLE `+table); err != nil {
		t.Fatal(err)
	}
	runSpec(t, pgJob, nil, RunOptions{Deterministic: true})
	var typ string
	if err := conn.QueryRow(ctx, `SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = $1::regclass AND attname = 'window_start'`, table).Scan(&typ); err != nil || typ != "timestamp(3) without time zone" {
		t.Fatalf("the table made for the declared columns has window_start %q (%v)", typ, err)
	}
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
		o := RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, CheckpointDir: filepath.Join(dir, "ck"), CheckpointInterval: time.Millisecond,
			CheckpointClock: jobtest.EveryRead(), // a checkpoint before every read: the nth comes however fast the machine
			Crash: func(p string) {
				if p == "sink-committed" && attempt == 0 {
					if hits++; hits == n {
						epoch = j.RecordEpoch() // on the checkpoint goroutine, the one that sets it
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
	url, conn := jobtest.PgURL(t)
	late, dead := fmt.Sprintf("weir_late_%d", rand.Uint32()), fmt.Sprintf("weir_dead_%d", rand.Uint32())
	drop := func() {
		_, _ = conn.Exec(context.Background(), `DROP TABLE IF EXISTS `+late+`, `+dead)
	}
	t.Cleanup(drop)
	refDir, refSum := runSpec(t, fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl"), nil, RunOptions{Deterministic: true})
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
	job := strings.Replace(fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl"), "late: {type: jsonl, path: late.jsonl}", "late: {type: postgres, url: '"+url+"', table: "+late+"}", 1)
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
	url, conn := jobtest.PgURL(t)
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
	url, conn := jobtest.PgURL(t)
	for _, appendRuns := range []bool{false, true} {
		late := jobtest.PgTable(t, conn, "weir_late_runs")
		job := strings.Replace(fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl"), "late: {type: jsonl, path: late.jsonl}", "late: {type: postgres, url: '"+url+"', table: "+late+"}", 1)
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
		j, err := Open(s, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, Append: appendRuns})
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
	late := jobtest.PgTable(t, conn, "weir_late_runs")
	job := strings.Replace(fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl"), "late: {type: jsonl, path: late.jsonl}", "late: {type: postgres, url: '"+url+"', table: "+late+"}", 1)
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

// TestPostgresSecondRunRefused: while a run of a job writes its rows of
// a Postgres results table, a second run of the job on the table (a copy
// with its own directory) is refused at Open, before it changes
// anything; once the first has ended, it opens.
func TestPostgresSecondRunRefused(t *testing.T) {
	url, conn := jobtest.PgURL(t)
	table := jobtest.PgTable(t, conn, "weir_twice")
	pgJob := strings.Replace(fmt.Sprintf(jobtest.OrderJob, "postgres", "unused"), "path: unused", "url: '"+url+"', table: "+table, 1)
	_, p := jobtest.Prepare(t, pgJob, nil, "")
	first, err := Open(p, RunOptions{Dir: t.TempDir(), Deterministic: true, Now: jobtest.TestNow})
	if err != nil {
		t.Fatal(err)
	}
	copyDir, p2 := jobtest.Prepare(t, pgJob, nil, "")
	if _, err := Open(p2, RunOptions{Dir: copyDir, Deterministic: true, Now: jobtest.TestNow}); !errors.Is(err, pgio.ErrRowsLocked) || !strings.Contains(err.Error(), "another live run of job") {
		t.Fatalf("a second run of the job on the table: %v, want pgio.ErrRowsLocked", err)
	}
	if _, err := first.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	second, err := Open(p2, RunOptions{Dir: copyDir, Deterministic: true, Now: jobtest.TestNow})
	if err != nil {
		t.Fatalf("after the first run ended: %v", err)
	}
	if _, err := second.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestPostgresSecondRunRefusedLate: with results in a file, a second live
// run of the job (another directory) is refused at the Postgres late and
// dead-letter tables, whose rows of the first run its fresh start would
// remove (an SRE trial lost a live run's late rows so).
func TestPostgresSecondRunRefusedLate(t *testing.T) {
	url, conn := jobtest.PgURL(t)
	table := jobtest.PgTable(t, conn, "weir_twice_late")
	job := strings.Replace(fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl"), "late: {type: jsonl, path: late.jsonl}", "late: {type: postgres, url: '"+url+"', table: "+table+"}", 1)
	bad := jobtest.PgTable(t, conn, "weir_twice_bad")
	job = strings.Replace(job, "dead_letter: {type: jsonl, path: bad.jsonl}", "dead_letter: {type: postgres, url: '"+url+"', table: "+bad+"}", 1)
	_, p := jobtest.Prepare(t, job, nil, "")
	first, err := Open(p, RunOptions{Dir: t.TempDir(), Deterministic: true, Now: jobtest.TestNow})
	if err != nil {
		t.Fatal(err)
	}
	copyDir, p2 := jobtest.Prepare(t, job, nil, "")
	if _, err := Open(p2, RunOptions{Dir: copyDir, Deterministic: true, Now: jobtest.TestNow}); !errors.Is(err, pgio.ErrRowsLocked) || !strings.Contains(err.Error(), "this run would remove them") {
		t.Fatalf("a second run of the job on the late table: %v, want pgio.ErrRowsLocked", err)
	}
	sum, err := first.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := conn.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM `+table+`) + (SELECT count(*) FROM `+bad+`)`).Scan(&n); err != nil || n != sum.Get("late_side_output")+sum.Get("dead_letter") || n == 0 {
		t.Fatalf("the table holds %d rows (%v); the run sent %d late records and %d dead letters", n, err, sum.Get("late_side_output"), sum.Get("dead_letter"))
	}
	second, err := Open(p2, RunOptions{Dir: copyDir, Deterministic: true, Now: jobtest.TestNow})
	if err != nil {
		t.Fatalf("after the first run ended: %v", err)
	}
	if _, err := second.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}
