package pgio

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// primaryKeyOf returns the primary key columns of table, in key order.
func (d *db) primaryKeyOf(t testing.TB, table string) []string {
	t.Helper()
	var pk []string
	for _, r := range d.query(t, `SELECT a.attname::text FROM pg_index i
		CROSS JOIN unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
		WHERE i.indrelid = to_regclass($1) AND i.indisprimary ORDER BY k.ord`, quoteIdent(table)) {
		pk = append(pk, r[0])
	}
	return pk
}

// TestRunGuard: the pane guard orders revisions by (run, pane): a later
// run's pane 0 replaces an earlier run's pane 5, and then no revision nor
// retraction of the earlier run, whatever its pane, replaces or deletes
// it; within one Flush and across Flushes.
func TestRunGuard(t *testing.T) {
	d := connect(t)
	table := d.table(t, "")
	s := mustOpen(t, d.url, table, []string{"k"}, []string{"v"}, Options{})
	a, b := []string{"k", `"a"`}, []string{"k", `"b"`}
	check := func(when, want string) {
		t.Helper()
		if got := d.dump(t, table, []string{"k"}); got != want {
			t.Fatalf("%s:\n%s\nwant\n%s", when, got, want)
		}
	}

	// a: each step in its own Flush.
	mustWrite(t, s, inRun(1, row(a, 0, 10, "late", 5, 50, "v", "1")))
	mustFlush(t, s)
	check("after run 1 pane 5", `("","""a""",0,10,late,1,5,50,1)`+"\n")
	mustWrite(t, s, inRun(2, row(a, 0, 10, "early", 0, 5, "v", "2")))
	mustFlush(t, s)
	want := `("","""a""",0,10,early,2,0,5,2)` + "\n"
	check("after run 2 pane 0 (replaces run 1 pane 5)", want)
	mustWrite(t, s, inRun(1, row(a, 0, 10, "late", 9, 90, "v", "3")))
	mustFlush(t, s)
	check("after a later-written run 1 pane 9 (must not replace run 2 pane 0)", want)
	mustWrite(t, s, inRun(1, row(a, 0, 10, "retract", 9, 95)))
	mustFlush(t, s)
	check("after a run 1 pane 9 retraction (must not delete run 2's row)", want)
	mustWrite(t, s, inRun(0, row(a, 0, 10, "retract", 1000, 95)))
	mustFlush(t, s)
	check("after a run 0 pane 1000 retraction (must not delete run 2's row)", want)

	// b: the same in one Flush, then a newer pane of run 2 replaces.
	mustWrite(t, s,
		inRun(1, row(b, 0, 10, "late", 5, 50, "v", "1")),
		inRun(2, row(b, 0, 10, "early", 0, 5, "v", "2")),
		inRun(1, row(b, 0, 10, "late", 9, 90, "v", "3")),
		inRun(1, row(b, 0, 10, "retract", 9, 95)),
	)
	mustFlush(t, s)
	want += `("","""b""",0,10,early,2,0,5,2)` + "\n"
	check("after runs 1, 2, 1 and a run 1 retraction of b in one Flush", want)
	mustWrite(t, s, inRun(2, row(b, 0, 10, "on_time", 1, 10, "v", "4")))
	mustFlush(t, s)
	want = strings.Replace(want, `"""b""",0,10,early,2,0,5,2`, `"""b""",0,10,on_time,2,1,10,4`, 1)
	check("after run 2 pane 1 of b", want)

	// A retraction of run 2 at the stored pane deletes; one of a later run
	// at pane 0 deletes too.
	mustWrite(t, s,
		inRun(2, row(a, 0, 10, "retract", 0, 100)),
		inRun(3, row(b, 0, 10, "retract", 0, 100)),
	)
	mustFlush(t, s)
	check("after retractions of run 2 pane 0 (a) and run 3 pane 0 (b)", "")
	if n, err := s.MaxRun(context.Background()); err != nil || n != 0 {
		t.Fatalf("MaxRun of an empty table = %d, %v; want 0", n, err)
	}
}

// TestResultJobs: two sinks of other jobs sharing a table keep their rows
// of the same key and window apart: each one's upserts, guard and
// retractions only see its own rows; Reset removes its job's rows only and
// returns how many (dropping what is buffered); MaxRun is per job.
func TestResultJobs(t *testing.T) {
	d := connect(t)
	table := d.table(t, "")
	ctx := context.Background()
	keys, values := []string{"k"}, []string{"v"}
	sa := mustOpen(t, d.url, table, keys, values, Options{Job: "a"})
	sb := mustOpen(t, d.url, table, keys, values, Options{Job: "b"})
	sd := mustOpen(t, d.url, table, keys, values, Options{}) // job ""
	x, y := []string{"k", `"x"`}, []string{"k", `"y"`}
	check := func(when, want string) {
		t.Helper()
		if got := d.dump(t, table, keys); got != want {
			t.Fatalf("%s:\n%s\nwant\n%s", when, got, want)
		}
	}
	maxRun := func(s *Sink, want int64) {
		t.Helper()
		if n, err := s.MaxRun(ctx); err != nil || n != want {
			t.Fatalf("MaxRun of job %q = %d, %v; want %d", s.job, n, err, want)
		}
	}
	maxRun(sa, 0)

	mustWrite(t, sa, inRun(1, row(x, 0, 10, "on_time", 0, 10, "v", "1")), inRun(1, row(y, 0, 10, "on_time", 0, 10, "v", "1")))
	mustFlush(t, sa)
	mustWrite(t, sb, inRun(3, row(x, 0, 10, "on_time", 0, 10, "v", "2")))
	mustFlush(t, sb)
	check("after a's x, y and b's x", `(a,"""x""",0,10,on_time,1,0,10,1)`+"\n"+
		`(a,"""y""",0,10,on_time,1,0,10,1)`+"\n"+
		`(b,"""x""",0,10,on_time,3,0,10,2)`+"\n")

	// a's run 1 is older than b's run 3, but b's row is not a's: a's
	// revision replaces a's row only.
	mustWrite(t, sa, inRun(1, row(x, 0, 10, "late", 1, 20, "v", "10")))
	mustFlush(t, sa)
	check("after a's pane 1 of x", `(a,"""x""",0,10,late,1,1,20,10)`+"\n"+
		`(a,"""y""",0,10,on_time,1,0,10,1)`+"\n"+
		`(b,"""x""",0,10,on_time,3,0,10,2)`+"\n")

	// b's retraction, newer than every row, deletes b's x only; then b
	// writes x again in run 4.
	mustWrite(t, sb, inRun(9, row(x, 0, 10, "retract", 9, 30)))
	mustFlush(t, sb)
	check("after b's retraction of x", `(a,"""x""",0,10,late,1,1,20,10)`+"\n"+
		`(a,"""y""",0,10,on_time,1,0,10,1)`+"\n")
	mustWrite(t, sb, inRun(4, row(x, 0, 10, "early", 0, 5, "v", "3")))
	mustFlush(t, sb)
	mustWrite(t, sd, inRun(7, row(y, 0, 10, "early", 0, 5, "v", "4")))
	mustFlush(t, sd)
	before := `("","""y""",0,10,early,7,0,5,4)` + "\n" +
		`(a,"""x""",0,10,late,1,1,20,10)` + "\n" +
		`(a,"""y""",0,10,on_time,1,0,10,1)` + "\n" +
		`(b,"""x""",0,10,early,4,0,5,3)` + "\n"
	check("after b's and the default job's writes", before)
	maxRun(sa, 1)
	maxRun(sb, 4)
	maxRun(sd, 7)

	// Reset of a: a's two rows go, and what a buffered, and a's rows of
	// the backfill's record of applied entries; the others stay.
	applied := quoteIdent(AppliedTable(table))
	t.Cleanup(func() { d.admin.Exec(context.Background(), `DROP TABLE IF EXISTS `+applied) })
	if _, err := d.admin.Exec(ctx, `CREATE TABLE `+applied+` (job TEXT NOT NULL, key TEXT NOT NULL, window_start BIGINT NOT NULL, window_end BIGINT NOT NULL, id TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := d.admin.Exec(ctx, `INSERT INTO `+applied+` VALUES ('a', 'k', 0, 10, '1'), ('b', 'k', 0, 10, '1')`); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, sa, inRun(2, row(x, 20, 30, "on_time", 0, 30, "v", "5")))
	if n, err := sa.Reset(ctx); err != nil || n != 2 {
		t.Fatalf("Reset of job a = %d, %v; want 2", n, err)
	}
	var jobs string
	if err := d.admin.QueryRow(ctx, `SELECT string_agg(job, ',' ORDER BY job) FROM `+applied).Scan(&jobs); err != nil || jobs != "b" {
		t.Fatalf("applied entries after Reset of job a: jobs %q (%v), want b's only", jobs, err)
	}
	if sa.Pending() != 0 {
		t.Fatalf("%d rows pending after Reset, want 0", sa.Pending())
	}
	mustFlush(t, sa)
	after := `("","""y""",0,10,early,7,0,5,4)` + "\n" +
		`(b,"""x""",0,10,early,4,0,5,3)` + "\n"
	check("after Reset of job a", after)
	maxRun(sa, 0)
	maxRun(sb, 4)
	maxRun(sd, 7)
	if n, err := sa.Reset(ctx); err != nil || n != 0 {
		t.Fatalf("a second Reset of job a = %d, %v; want 0", n, err)
	}
	// Job "" is a job like another: its Reset leaves b's row.
	if n, err := sd.Reset(ctx); err != nil || n != 1 {
		t.Fatalf("Reset of job \"\" = %d, %v; want 1", n, err)
	}
	check("after Reset of job \"\"", `(b,"""x""",0,10,early,4,0,5,3)`+"\n")
	// a writes again after its Reset.
	mustWrite(t, sa, inRun(2, row(x, 0, 10, "early", 0, 5, "v", "6")))
	mustFlush(t, sa)
	check("after a writes again", `(a,"""x""",0,10,early,2,0,5,6)`+"\n"+`(b,"""x""",0,10,early,4,0,5,3)`+"\n")
	maxRun(sa, 2)

	sb.Close()
	if _, err := sb.Reset(ctx); err != ErrClosed {
		t.Fatalf("Reset after Close = %v, want ErrClosed", err)
	}
}

// TestRecordRuns: record ids are unique per job and run: the same id in two
// runs of a job is stored twice (a later run appends), a replay within a
// run is skipped; Cut only removes rows of the run it names, MaxEpoch reads
// a run's epochs, Reset removes every row of its job only, MaxRun is the
// job's highest run.
func TestRecordRuns(t *testing.T) {
	d := connect(t)
	r, table := openRecords(t, d)
	ctx := context.Background()
	if pk := d.primaryKeyOf(t, table); fmt.Sprint(pk) != "[job run id]" {
		t.Fatalf("primary key of a new record table = %q, want (job, run, id)", pk)
	}
	flush := func(job string, run, epoch int64, ids ...string) {
		t.Helper()
		for _, id := range ids {
			if err := r.WriteRecord(id, "late", []byte(fmt.Sprintf(`{"run": %d}`, run)), nil); err != nil {
				t.Fatal(err)
			}
		}
		r.SetEpoch(job, run, epoch)
		if err := r.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	rows := func() string {
		t.Helper()
		return fmt.Sprint(d.query(t, `SELECT job, run::text, id, epoch::text, record::text FROM `+quoteIdent(table)+` ORDER BY job, run, id`))
	}
	maxRun := func(job string, want int64) {
		t.Helper()
		if n, err := r.MaxRun(ctx, job); err != nil || n != want {
			t.Fatalf("MaxRun(%q) = %d, %v; want %d", job, n, err, want)
		}
	}
	maxRun("a", 0)

	flush("a", 1, 1, "0:7")
	flush("a", 2, 1, "0:7")
	if got, want := rows(), `[[a 1 0:7 1 {"run": 1}] [a 2 0:7 1 {"run": 2}]]`; got != want || r.Skipped() != 0 {
		t.Fatalf("the same id in runs 1 and 2: %s (want %s), %d skipped (want 0)", got, want, r.Skipped())
	}
	flush("a", 2, 1, "0:7") // a replay within run 2
	if r.Skipped() != 1 {
		t.Fatalf("%d skipped after a replay within run 2, want 1", r.Skipped())
	}

	flush("a", 1, 2, "0:8")
	flush("a", 1, 3, "0:9")
	flush("a", 2, 2, "0:8")
	flush("a", 2, 3, "0:9")
	flush("b", 1, 3, "0:9")
	for _, c := range []struct {
		job  string
		run  int64
		want int64
	}{{"a", 1, 3}, {"a", 2, 3}, {"a", 3, 0}, {"b", 1, 3}, {"b", 2, 0}} {
		if e, err := r.MaxEpoch(ctx, c.job, c.run); err != nil || e != c.want {
			t.Fatalf("MaxEpoch(%q, %d) = %d, %v; want %d", c.job, c.run, e, err, c.want)
		}
	}
	maxRun("a", 2)
	maxRun("b", 1)
	maxRun("c", 0)

	// Cut of a's run 1 back to epoch 1: run 2 and b keep their rows of
	// later epochs.
	if n, err := r.Cut(ctx, "a", 1, 1); err != nil || n != 2 {
		t.Fatalf("Cut(a, 1, 1) deleted %d rows (%v), want 2", n, err)
	}
	want := `[[a 1 0:7 1 {"run": 1}] [a 2 0:7 1 {"run": 2}] [a 2 0:8 2 {"run": 2}] [a 2 0:9 3 {"run": 2}] [b 1 0:9 3 {"run": 1}]]`
	if got := rows(); got != want {
		t.Fatalf("after Cut(a, 1, 1):\n%s\nwant\n%s", got, want)
	}
	if e, err := r.MaxEpoch(ctx, "a", 1); err != nil || e != 1 {
		t.Fatalf("MaxEpoch(a, 1) after the Cut = %d, %v; want 1", e, err)
	}
	// A Cut of a run with nothing after the epoch deletes nothing.
	if n, err := r.Cut(ctx, "a", 3, 0); err != nil || n != 0 {
		t.Fatalf("Cut(a, 3, 0) deleted %d rows (%v), want 0", n, err)
	}

	// Reset of a removes its rows of every run; b's stay.
	if n, err := r.Reset(ctx, "a"); err != nil || n != 4 {
		t.Fatalf("Reset(a) deleted %d rows (%v), want 4", n, err)
	}
	if got, want := rows(), `[[b 1 0:9 3 {"run": 1}]]`; got != want {
		t.Fatalf("after Reset(a):\n%s\nwant\n%s", got, want)
	}
	maxRun("a", 0)
	maxRun("b", 1)
	if n, err := r.Reset(ctx, "a"); err != nil || n != 0 {
		t.Fatalf("a second Reset(a) deleted %d rows (%v), want 0", n, err)
	}
	// After the Reset, run 1 of a may store its ids again.
	skipped := r.Skipped()
	flush("a", 1, 1, "0:7")
	if got, want := rows(), `[[a 1 0:7 1 {"run": 1}] [b 1 0:9 3 {"run": 1}]]`; got != want || r.Skipped() != skipped {
		t.Fatalf("after a flush following Reset(a): %s (want %s), %d skipped (want %d)", got, want, r.Skipped(), skipped)
	}

	r.Close()
	for name, f := range map[string]func() error{
		"Reset":  func() error { _, err := r.Reset(ctx, "a"); return err },
		"MaxRun": func() error { _, err := r.MaxRun(ctx, "a"); return err },
	} {
		if err := f(); err != ErrClosed {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
}

// TestRecordMigrateRuns: a record table of weir before runs, primary key
// (job, id), opens: it gets the run column, its rows are run 0, its primary
// key becomes (job, run, id), and a later run of a job stores an id the
// job stored in run 0. A table of weir before jobs that an earlier weir
// gave job and epoch, primary key (id), gets the run column and keeps its
// key.
func TestRecordMigrateRuns(t *testing.T) {
	d := connect(t)
	ctx := context.Background()

	t.Run("job id", func(t *testing.T) {
		table := d.table(t, "")
		qt := quoteIdent(table)
		// As weir before runs created it.
		d.exec(t, `CREATE TABLE `+qt+` ("id" TEXT NOT NULL, "reason" TEXT NOT NULL, "record" JSONB, "meta" JSONB, "arrived_at" TIMESTAMPTZ NOT NULL DEFAULT now(), "job" TEXT NOT NULL DEFAULT '', "epoch" BIGINT, PRIMARY KEY ("job","id"))`)
		d.exec(t, `CREATE INDEX `+quoteIdent(indexName(table, "_job_epoch"))+` ON `+qt+` ("job", "epoch")`)
		d.exec(t, `INSERT INTO `+qt+` (id, reason, record, meta, arrived_at, job, epoch) VALUES ('0:1', 'late', '{"old": true}', '{"offset": 1}', '2001-02-03 04:05:06+00', 'a', 3)`)

		r, err := OpenRecords(ctx, d.url, table, Options{})
		if err != nil {
			t.Fatalf("a record table of the (job, id) layout: %v", err)
		}
		t.Cleanup(func() { r.Close() })
		if pk := d.primaryKeyOf(t, table); fmt.Sprint(pk) != "[job run id]" {
			t.Fatalf("primary key after the migration = %q, want (job, run, id)", pk)
		}
		q := `SELECT job, run::text, id, reason, record::text, meta::text, extract(epoch FROM arrived_at)::bigint::text, coalesce(epoch::text, 'NULL') FROM ` + qt + ` ORDER BY job, run, id`
		if got, want := fmt.Sprint(d.query(t, q)), `[[a 0 0:1 late {"old": true} {"offset": 1} 981173106 3]]`; got != want {
			t.Fatalf("the old row after the migration:\n%s\nwant\n%s", got, want)
		}
		if got := d.query(t, `SELECT is_nullable, column_default FROM information_schema.columns WHERE table_name = $1 AND column_name = 'run'`, table); fmt.Sprint(got) != "[[NO 0]]" {
			t.Fatalf("the run column: nullable, default %v; want NO, 0", got)
		}
		if e, err := r.MaxEpoch(ctx, "a", 0); err != nil || e != 3 {
			t.Fatalf("MaxEpoch(a, 0) = %d, %v; want 3 (the old row is run 0)", e, err)
		}
		if n, err := r.MaxRun(ctx, "a"); err != nil || n != 0 {
			t.Fatalf("MaxRun(a) = %d, %v; want 0", n, err)
		}

		// The same id: skipped in run 0, stored in run 1.
		write := func(run int64) {
			t.Helper()
			if err := r.WriteRecord("0:1", "late", []byte(`{"old": false}`), nil); err != nil {
				t.Fatal(err)
			}
			r.SetEpoch("a", run, 1)
			if err := r.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		write(0)
		if r.Skipped() != 1 {
			t.Fatalf("%d skipped writing the old row's id in run 0 again, want 1", r.Skipped())
		}
		write(1)
		if got, want := fmt.Sprint(d.query(t, `SELECT job, run::text, id, record::text FROM `+qt+` ORDER BY job, run, id`)),
			`[[a 0 0:1 {"old": true}] [a 1 0:1 {"old": false}]]`; got != want || r.Skipped() != 1 {
			t.Fatalf("after writing the id in run 1: %s (want %s), %d skipped (want 1)", got, want, r.Skipped())
		}
		if n, err := r.MaxRun(ctx, "a"); err != nil || n != 1 {
			t.Fatalf("MaxRun(a) = %d, %v; want 1", n, err)
		}
		// Cut of run 0 reaches the old row, not run 1's.
		if n, err := r.Cut(ctx, "a", 0, 2); err != nil || n != 1 {
			t.Fatalf("Cut(a, 0, 2) deleted %d rows (%v), want 1", n, err)
		}

		// Reopening the migrated table works and keeps its key.
		r2, err := OpenRecords(ctx, d.url, table, Options{})
		if err != nil {
			t.Fatalf("reopening the migrated table: %v", err)
		}
		r2.Close()
		if pk := d.primaryKeyOf(t, table); fmt.Sprint(pk) != "[job run id]" {
			t.Fatalf("primary key after reopening = %q, want (job, run, id)", pk)
		}
		if n := d.count(t, table); n != 1 {
			t.Fatalf("%d rows after reopening, want 1", n)
		}
	})

	t.Run("id with job and epoch", func(t *testing.T) {
		table := d.table(t, "")
		qt := quoteIdent(table)
		// As weir before jobs created it, and an earlier weir migrated it.
		d.exec(t, `CREATE TABLE `+qt+` ("id" TEXT PRIMARY KEY, "reason" TEXT NOT NULL, "record" JSONB, "meta" JSONB, "arrived_at" TIMESTAMPTZ NOT NULL DEFAULT now())`)
		d.exec(t, `ALTER TABLE `+qt+` ADD COLUMN IF NOT EXISTS "job" TEXT, ADD COLUMN IF NOT EXISTS "epoch" BIGINT`)
		d.exec(t, `CREATE INDEX `+quoteIdent(indexName(table, "_job_epoch"))+` ON `+qt+` ("job", "epoch")`)
		d.exec(t, `INSERT INTO `+qt+` (id, reason, job, epoch) VALUES ('0:1', 'late', 'a', 3), ('0:2', 'late', NULL, NULL)`)
		r, err := OpenRecords(ctx, d.url, table, Options{})
		if err != nil {
			t.Fatalf("a record table of the (id) layout with job and epoch: %v", err)
		}
		t.Cleanup(func() { r.Close() })
		if pk := d.primaryKeyOf(t, table); fmt.Sprint(pk) != "[id]" {
			t.Fatalf("primary key after the migration = %q, want (id)", pk)
		}
		if got, want := fmt.Sprint(d.query(t, `SELECT id, coalesce(job, 'NULL'), run::text, coalesce(epoch::text, 'NULL') FROM `+qt+` ORDER BY id`)),
			`[[0:1 a 0 3] [0:2 NULL 0 NULL]]`; got != want {
			t.Fatalf("the old rows after the migration:\n%s\nwant\n%s", got, want)
		}
		// Ids stay unique across runs there.
		if err := r.WriteRecord("0:1", "late", nil, nil); err != nil {
			t.Fatal(err)
		}
		r.SetEpoch("a", 1, 1)
		if err := r.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := d.count(t, table); n != 2 || r.Skipped() != 1 {
			t.Fatalf("%d rows, %d skipped after writing id 0:1 in run 1; want 2, 1", n, r.Skipped())
		}
	})
}

// TestRecordOpenConcurrently: openers of one record table of the (job, id)
// layout at once all succeed, whichever migrates it, with its primary key
// named as Postgres names it or otherwise (then an opener that read the
// old key's name finds it gone), and the table ends up with the key (job,
// run, id) and its row.
func TestRecordOpenConcurrently(t *testing.T) {
	d := connect(t)
	ctx := context.Background()
	for _, name := range []string{"", "custom_record_key"} {
		t.Run("key name "+strconv.Quote(name), func(t *testing.T) {
			table := d.table(t, "")
			qt := quoteIdent(table)
			pk := `PRIMARY KEY ("job","id")`
			if name != "" {
				pk = `CONSTRAINT ` + quoteIdent(name) + ` ` + pk
			}
			d.exec(t, `CREATE TABLE `+qt+` ("id" TEXT NOT NULL, "reason" TEXT NOT NULL, "record" JSONB, "meta" JSONB, "arrived_at" TIMESTAMPTZ NOT NULL DEFAULT now(), "job" TEXT NOT NULL DEFAULT '', "epoch" BIGINT, `+pk+`)`)
			d.exec(t, `CREATE INDEX `+quoteIdent(indexName(table, "_job_epoch"))+` ON `+qt+` ("job", "epoch")`)
			d.exec(t, `INSERT INTO `+qt+` (id, reason, job, epoch) VALUES ('0:1', 'late', 'a', 3)`)

			const openers = 4
			var (
				start = make(chan struct{})
				wg    sync.WaitGroup
				sinks [openers]*RecordSink
				errs  [openers]error
			)
			for i := range openers {
				wg.Go(func() {
					<-start
					sinks[i], errs[i] = OpenRecords(ctx, d.url, table, Options{})
				})
			}
			close(start)
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("opener %d: %v", i, err)
					continue
				}
				sinks[i].Close()
			}
			if t.Failed() {
				return
			}
			if pk := d.primaryKeyOf(t, table); fmt.Sprint(pk) != "[job run id]" {
				t.Fatalf("primary key after the concurrent openers = %q, want (job, run, id)", pk)
			}
			if got, want := fmt.Sprint(d.query(t, `SELECT job, run::text, id FROM `+qt)), `[[a 0 0:1]]`; got != want {
				t.Fatalf("rows after the concurrent openers: %s, want %s", got, want)
			}
		})
	}
}
