package group

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weirstream/weir/backfill"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/internal/testenv"
	"github.com/weirstream/weir/spec"
	"github.com/weirstream/weir/state"
)

// pgJob is groupJob with its outputs in Postgres tables (shared by the
// test's jobs: the job column tells them apart).
var pgJob = groupJob[:strings.Index(groupJob, "sinks:")] + `sinks:
  results: {type: postgres, url: '%[3]s', table: %[4]s_results}
  late: {type: postgres, url: '%[3]s', table: %[4]s_late}
  dead_letter: {type: postgres, url: '%[3]s', table: %[4]s_bad}
`

// TestGroupPostgres runs a job whose results, late records and dead
// letters go to Postgres tables: with one member, with three (whose
// tasks move while they run), and with one member that fails between a
// commit and writing its outputs to Postgres, then runs again. The
// tables hold the same rows for the three runs, every too-late record and
// dead letter once, as many as the runs counted.
func TestGroupPostgres(t *testing.T) {
	url := testenv.Postgres(t)
	broker := cluster(t, 3000)
	ctx := context.Background()
	db, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(ctx) }) // after the drops below
	prefix := "weir_group_" + strconv.FormatInt(time.Now().UnixNano()%1e9, 10)
	t.Cleanup(func() {
		for _, s := range []string{"results", "late", "bad", "results_backfill_applied"} {
			db.Exec(ctx, "DROP TABLE IF EXISTS "+prefix+"_"+s)
		}
	})
	plan := func(name string) *spec.Plan {
		p, err := spec.Parse(fmt.Appendf(nil, pgJob, name, broker, url, prefix))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	query := func(q, job string) []string {
		rows, err := db.Query(ctx, q, job)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	// A run's rows, without its run id (each group is a run of its own).
	tables := func(job string) [3][]string {
		return [3][]string{
			query(`SELECT concat_ws(' ', user_id, window_start, window_end, firing, pane, watermark, orders, total) FROM `+prefix+`_results WHERE job = $1 ORDER BY 1`, job),
			query(`SELECT concat_ws(' ', id, reason, record::text, (meta - 'run' - 'job')::text) FROM `+prefix+`_late WHERE job = $1 ORDER BY 1`, job),
			query(`SELECT concat_ws(' ', id, reason, record::text) FROM `+prefix+`_bad WHERE job = $1 ORDER BY 1`, job),
		}
	}
	dir := t.TempDir()
	one := runMembers(t, plan("pg1"), filepath.Join(dir, "1"), "a")
	want := tables("pg1")
	if len(want[0]) < 100 || int64(len(want[1])) != one[0].Get("late_side_output") || len(want[2]) != 2 {
		t.Fatalf("one member: %d result rows, %d late records (counted %d), %d dead letters (want 2)", len(want[0]), len(want[1]), one[0].Get("late_side_output"), len(want[2]))
	}
	check := func(job string) {
		t.Helper()
		got := tables(job)
		for i, what := range []string{"results", "late", "dead letters"} {
			if !slices.Equal(got[i], want[i]) {
				t.Errorf("%s: %s: %d rows, one member wrote %d; first differences:\n%s", job, what, len(got[i]), len(want[i]), jobtest.Diff(got[i], want[i]))
			}
		}
	}
	runMembers(t, plan("pg3"), filepath.Join(dir, "3"), "x", "y", "z")
	check("pg3")

	// A member that fails after its first commit with outputs, before
	// writing them to Postgres: the next run writes them, restoring the
	// commit (or, when the commit ended the group, at its end).
	var applies atomic.Int64
	pgApplyHook = func() error {
		if applies.Add(1) == 1 {
			return errors.New("killed between the commit and Postgres")
		}
		return nil
	}
	defer func() { pgApplyHook = nil }()
	p := plan("pgc")
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	err = Run(rctx, Options{Plan: p, Instance: "c", StateDir: filepath.Join(dir, "c"), SessionTimeout: joinSession, TransactionTimeout: joinTxnTimeout, Info: func(msg string) { t.Log(msg) }})
	cancel()
	if err == nil || !strings.Contains(err.Error(), "killed between the commit and Postgres") {
		t.Fatalf("the failing member returned %v after %d writes", err, applies.Load())
	}
	if got := tables("pgc"); len(got[0]) >= len(want[0]) {
		t.Fatalf("the failing member wrote %d result rows of %d before it failed: it failed too late to test anything", len(got[0]), len(want[0]))
	}
	runMembers(t, p, filepath.Join(dir, "c"), "c")
	check("pgc")

	// weir backfill folds the group's too-late records (its Postgres
	// ledger holds committed ones only) into its results table, once.
	late := len(want[1])
	rep, err := backfill.Backfill(plan("pg3"), backfill.BackfillOptions{Dir: dir, Group: Ran(ctx, plan("pg3"))})
	if err != nil || int(rep.Entries) != late || rep.Applied != late || rep.Windows == 0 {
		t.Fatalf("backfill: %v: %+v, want %d entries applied", err, rep, late)
	}
	if !strings.Contains(rep.Cut, "the job runs as a group") {
		t.Errorf("the backfill's cut of a group's ledger: %q", rep.Cut)
	}
	if n := len(query(`SELECT window_start::text FROM `+prefix+`_results WHERE job = $1 AND firing = 'backfill'`, "pg3")); n != rep.Windows {
		t.Errorf("backfill revised %d windows, the table has %d backfill rows", rep.Windows, n)
	}
	again, err := backfill.Backfill(plan("pg3"), backfill.BackfillOptions{Dir: dir})
	if err != nil || again.Applied != 0 || again.AlreadyApplied != late {
		t.Fatalf("a second backfill: %v: %+v, want all %d already applied", err, again, late)
	}

	// weir reset deletes the group's own rows (its next run's are its
	// own) and no other job's.
	did, err := Reset(ctx, plan("pg3"))
	if err != nil {
		t.Fatal(err)
	}
	t.Log(strings.Join(did, "\n"))
	if got := tables("pg3"); len(got[0])+len(got[1])+len(got[2]) != 0 {
		t.Errorf("after weir reset, job pg3 keeps %d result rows, %d late records and %d dead letters", len(got[0]), len(got[1]), len(got[2]))
	}
	if got := tables("pg1"); !slices.Equal(got[0], want[0]) {
		t.Errorf("weir reset of job pg3 changed job pg1's rows")
	}
}

// TestApplyPGDiscards: a write of a commit's Postgres outputs that stops
// (the member stopping, a rebalance cancelling a restore) discards what
// it did not flush, rather than leave it for the sink's Close to drop
// with a warning that rows were lost: the outputs are committed, and the
// task's next restore writes them again.
func TestApplyPGDiscards(t *testing.T) {
	url := testenv.Postgres(t)
	table := "weir_group_discard_" + strconv.FormatInt(time.Now().UnixNano()%1e9, 10)
	p, err := spec.Parse(fmt.Appendf(nil, pgJob, "discard", "127.0.0.1:1", url, table))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pg, err := openPGTables(ctx, p, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.close()
	db, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	defer func() {
		for _, s := range []string{"results", "late", "bad"} {
			db.Exec(ctx, "DROP TABLE IF EXISTS "+table+"_"+s)
		}
	}()
	var path string
	for p := range pg.results {
		path = p
	}
	w := state.Writer{}
	encodePGRow(&w, path, &connector.Row{Keys: []connector.Column{{Name: "user_id", Value: []byte(`"u1"`)}}, Start: 0, End: 1000, Firing: "on_time", Run: 1,
		Values: []connector.Column{{Name: "orders", Value: []byte("1")}, {Name: "total", Value: []byte("5")}}})
	m := &Member{o: Options{Plan: p, Logger: slog.New(slog.DiscardHandler)}, pg: pg, run: 1}
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	if err := m.applyPG(stopped, 0, &snapshot{ID: 1, Parts: map[string][]byte{pgPart: w.Buf}}); err == nil {
		t.Fatal("a write with a cancelled context succeeded")
	}
	if n := pg.results[path].Pending(); n != 0 {
		t.Errorf("%d rows left pending after the write stopped", n)
	}
	if err := m.applyPG(ctx, 0, &snapshot{ID: 1, Parts: map[string][]byte{pgPart: w.Buf}}); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow(ctx, "SELECT count(*) FROM "+table+"_results").Scan(&n); err != nil || n != 1 {
		t.Errorf("after the next write: %d rows (%v), want 1", n, err)
	}
}
