package backfill

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/internal/outfmt"
	"github.com/weirstream/weir/internal/sqltest"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/ledger"
	"github.com/weirstream/weir/spec"
)

// dumpTable reads a SQLite results table and its applied table whole, in
// order, as text: two dumps are equal when every row, revision and firing
// is.
func dumpTable(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return sqltest.Dump(t, db, `SELECT * FROM results ORDER BY user_id, window_start`, `SELECT * FROM results_backfill_applied ORDER BY 1, 2, 3, 4`)
}

// firings counts a SQLite results table's rows by firing kind.
func firings(t *testing.T, path string) map[string]int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT firing, COUNT(*) FROM results GROUP BY firing`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var f string
		var n int
		if err := rows.Scan(&f, &n); err != nil {
			t.Fatal(err)
		}
		out[f] = n
	}
	return out
}

// TestBackfillOracle: a stream with 95% of records within the bound, 4%
// within the allowed lateness and 1% beyond it; a live run (those go to
// the ledger), then a backfill. The results table then equals the
// complete answer, every record grouped by key and window without
// watermarks, for every aggregate (count, sum, min and max are their own
// accumulators; avg, first, last, count_distinct and collect keep theirs
// in the row). A dry run changes nothing, a second backfill changes
// nothing. Tumbling and sliding windows, SQLite and Postgres.
func TestBackfillOracle(t *testing.T) {
	for _, w := range []string{"{type: tumbling, size: 1m}", "{type: sliding, size: 2m, slide: 1m}"} {
		for _, store := range []string{"sqlite", "postgres", "jsonl", "pgledger", "kafka"} {
			t.Run(strings.TrimSuffix(strings.Fields(w)[1], ",")+"/"+store, func(t *testing.T) {
				testBackfillOracle(t, fmt.Sprintf(jobtest.BackfillJob, "10s", w), store)
			})
		}
	}
}

// pgResultsTable names a fresh Postgres results table (prefix and a
// random number) that the test drops, with its applied table, at its end.
func pgResultsTable(t *testing.T, prefix string) (url, table string, conn *pgx.Conn) {
	url, conn = jobtest.PgURL(t)
	return url, jobtest.PgTable(t, conn, prefix), conn
}

func testBackfillOracle(t *testing.T, yml, store string) {
	dump := func(dir string) string { return dumpTable(t, filepath.Join(dir, "results.db")) }
	if store == "postgres" {
		url, table, conn := pgResultsTable(t, "weir_bf")
		yml = strings.Replace(yml, "{type: sqlite, path: results.db}", "{type: postgres, url: '"+url+"', table: "+table+"}", 1)
		dump = func(string) string { return jobtest.DumpPG(t, conn, table) }
	}
	if store == "pgledger" {
		// The ledger in a Postgres table, the results in SQLite.
		url, conn := jobtest.PgURL(t)
		table := jobtest.PgTable(t, conn, "weir_bf_late")
		yml = strings.Replace(yml, "late: {type: ledger, dir: ledger}", "late: {type: postgres, url: '"+url+"', table: "+table+"}", 1)
	}
	if store == "kafka" {
		// Kafka results keep their windows in the archive; revisions go
		// to the results topic.
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "out"), kfake.SeedTopics(1, "out-weir-checkpoints"), kfake.SeedTopics(2, "late"), kfake.SeedTopics(2, "late_partial"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		broker := c.ListenAddrs()[0]
		// The ledger is Kafka topics too.
		yml = strings.Replace(yml, "{type: sqlite, path: results.db}", "{type: kafka, brokers: ["+broker+"], topic: out}", 1) + "archive: {dir: archive}\n"
		yml = strings.Replace(yml, "late: {type: ledger, dir: ledger}", "late: {type: kafka, brokers: ["+broker+"], topic: late}\n  late_partial: {type: kafka, brokers: ["+broker+"], topic: late_partial}", 1)
		dump = func(string) string { return strings.Join(jobtest.Committed(t, broker, "out"), "\n") }
	}
	if store == "jsonl" {
		// File results keep their windows in the archive; revisions go
		// to the corrections file.
		yml = strings.Replace(yml, "{type: sqlite, path: results.db}", "{type: jsonl, path: results.jsonl}", 1) + "archive: {dir: archive, horizon: 30d}\n"
		dump = func(dir string) string {
			var b strings.Builder
			for _, f := range []string{"results.jsonl", "results.backfill.jsonl"} {
				data, err := os.ReadFile(filepath.Join(dir, f))
				// The corrections file exists once a backfill wrote one.
				if err != nil && !(f == "results.backfill.jsonl" && errors.Is(err, fs.ErrNotExist)) {
					t.Fatal(err)
				}
				b.Write(data)
			}
			return b.String()
		}
	}
	dir, sum := runSpec(t, yml, nil, job.RunOptions{Deterministic: true})
	if sum.Get("late_side_output") < 50 || sum.Get("accepted_late") < 200 || strings.Contains(yml, "sliding") && sum.Get("late_partial") < 5 {
		t.Fatalf("the stream does not exercise the layers (and, for sliding windows, partial misses): %s", sum.JSON())
	}
	p, err := spec.Parse([]byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	ans, err := Complete(p, dir)
	if err != nil {
		t.Fatal(err)
	}
	if in := sum.Get("records_in"); ans.Records+ans.Bad != in || ans.Records == 0 {
		t.Fatalf("the complete answer read %d records and %d bad lines; the run read %d", ans.Records, ans.Bad, in)
	}
	diffs, n, err := ans.Compare(p, dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("the live run already equals the complete answer: the test proves nothing")
	}
	t.Logf("before the backfill, %d of %d windows differ from the complete answer, such as %s", n, ans.Windows(), diffs[0])
	before := dump(dir)
	var out strings.Builder
	// A dry run changes nothing.
	rep, err := Backfill(p, BackfillOptions{Dir: dir, DryRun: true, Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	if dump(dir) != before || rep.Applied == 0 {
		t.Fatalf("dry run: changed the table or applied nothing (%+v)", rep)
	}
	rep, err = Backfill(p, BackfillOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if diffs, n, err := ans.Compare(p, dir, 5); err != nil || n > 0 {
		t.Fatalf("after the backfill (%+v), %d windows differ from the complete answer (%v): %s", rep, n, err, strings.Join(diffs, "\n"))
	}
	if rep.Entries != int(sum.Get("late_side_output")+sum.Get("late_partial")) || rep.Windows != rep.LateWindows || rep.Windows == 0 || rep.WindowOpen != 0 {
		t.Fatalf("report %+v; run %s", rep, sum.JSON())
	}
	// weir ledger reads the same entries, wherever the ledger is, each
	// with the spec's hash (which the backfill checks).
	n = 0
	if bad, where, err := ScanLedger(p, dir, func(e ledger.Entry) error {
		if e.Spec != rep.SpecHash {
			return fmt.Errorf("entry %s has spec hash %q, want %q", e.ID, e.Spec, rep.SpecHash)
		}
		n++
		return nil
	}); err != nil || len(bad) != 0 || n != rep.Entries {
		t.Fatalf("ScanLedger of %s: %d entries, %q unreadable (%v); the backfill read %d", where, n, bad, err, rep.Entries)
	}
	after := dump(dir)
	// Again: nothing changes, every entry is already applied.
	rep2, err := Backfill(p, BackfillOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if dump(dir) != after || rep2.Applied != 0 || rep2.AlreadyApplied != rep.Applied || rep2.Windows != 0 {
		t.Fatalf("second backfill: %+v", rep2)
	}
	if store == "sqlite" {
		if f := firings(t, filepath.Join(dir, "results.db")); f["backfill"] != rep.Windows {
			t.Fatalf("firings %v, %d windows revised", f, rep.Windows)
		}
	}
	// While another backfill holds the ledger's lock, a run is refused,
	// a dry run too: beside a backfill half applied, its comparison
	// would show differences that are not there (SRE trial).
	var unlock func() error
	switch store {
	case "sqlite":
		if unlock, err = ledger.Lock(job.LedgerDir(p, dir, p.Sinks.Late)); err != nil {
			t.Fatal(err)
		}
	case "pgledger":
		l, err := openLedgerSource(p, BackfillOptions{Dir: dir}, false)
		if err != nil {
			t.Fatal(err)
		}
		unlock = l.close
	default:
		return
	}
	if _, err := Backfill(p, BackfillOptions{Dir: dir}); err == nil || !strings.Contains(err.Error(), "another backfill") {
		t.Fatalf("a backfill beside a running one: %v", err)
	}
	if _, err := Backfill(p, BackfillOptions{Dir: dir, DryRun: true}); err == nil || !strings.Contains(err.Error(), "another backfill") {
		t.Fatalf("a dry run beside a running backfill: %v", err)
	}
	unlock()
	if _, err := Backfill(p, BackfillOptions{Dir: dir, DryRun: true}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d ledger entries, %d windows revised", rep.Entries, rep.Windows)
}

// TestBackfillHorizon: an archive keeps windows for its horizon only; a
// backfill reports the entries of older windows (not applied, never
// skipped silently) and applies the rest.
func TestBackfillHorizon(t *testing.T) {
	yml := strings.Replace(fmt.Sprintf(jobtest.BackfillJob, "10s", "{type: tumbling, size: 1m}"), "{type: sqlite, path: results.db}", "{type: jsonl, path: results.jsonl}", 1) +
		"archive: {dir: archive, horizon: 10m}\n"
	dir, sum := runSpec(t, yml, nil, job.RunOptions{Deterministic: true})
	p, err := spec.Parse([]byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Backfill(p, BackfillOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	late := int(sum.Get("late_side_output"))
	if rep.HorizonExpired == 0 || rep.Applied == 0 || rep.HorizonExpired+rep.Applied != late {
		t.Fatalf("%d too-late records: %+v", late, rep)
	}
	t.Logf("%d entries applied, %d beyond the horizon", rep.Applied, rep.HorizonExpired)
}

// TestBackfillSplitRuns: a backfill split into runs by random filters
// (keys, windows, reasons), with dry runs between them, ends where one
// run ends: the table equals the complete answer and every ledger entry
// is applied exactly once to each window it missed.
func TestBackfillSplitRuns(t *testing.T) {
	yml := fmt.Sprintf(jobtest.BackfillJob, "10s", "{type: sliding, size: 2m, slide: 1m}")
	live, _ := runSpec(t, yml, nil, job.RunOptions{Deterministic: true})
	p, err := spec.Parse([]byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	ans, err := Complete(p, live)
	if err != nil {
		t.Fatal(err)
	}
	var entries []ledger.Entry
	if _, err := ledger.Scan(job.LedgerDir(p, live, p.Sinks.Late), func(e ledger.Entry) error { entries = append(entries, e); return nil }); err != nil {
		t.Fatal(err)
	}
	missed := 0
	for _, e := range entries {
		missed += len(e.Windows)
	}
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(live)); err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(seed, 1))
			var filters []string
			for range 2 + r.IntN(4) {
				var f func(ledger.Entry) bool
				var what string
				switch r.IntN(3) {
				case 0:
					k := fmt.Sprintf(`"u%03d"`, r.IntN(20))
					what = "key " + k
					f = func(e ledger.Entry) bool { return strings.Contains(string(e.Key), k) }
				case 1:
					lo := entries[r.IntN(len(entries))].TS
					what = fmt.Sprintf("windows ending after %d", lo)
					f = func(e ledger.Entry) bool { return e.Windows[len(e.Windows)-1][1] > lo }
				default:
					reason := []string{"window_expired", "window_expired_partial"}[r.IntN(2)]
					what = "reason " + reason
					f = func(e ledger.Entry) bool { return e.Reason == reason }
				}
				filters = append(filters, what)
				if _, err := Backfill(p, BackfillOptions{Dir: dir, Filter: f, DryRun: r.IntN(4) == 0, WindowsPerTx: 1 + r.IntN(100)}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := Backfill(p, BackfillOptions{Dir: dir}); err != nil {
				t.Fatal(err)
			}
			if diffs, n, err := ans.Compare(p, dir, 3); err != nil || n > 0 {
				t.Fatalf("after runs filtered by %v: %d windows differ (%v): %v", filters, n, err, diffs)
			}
			db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "results.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var n, distinct int
			if err := db.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT key || window_start || id) FROM results_backfill_applied`).Scan(&n, &distinct); err != nil {
				t.Fatal(err)
			}
			if n != missed || distinct != missed {
				t.Fatalf("after runs filtered by %v: %d applied ids (%d distinct), want one per missed window: %d", filters, n, distinct, missed)
			}
		})
	}
}

// TestBackfillSpecMismatch: entries written under another spec (here the
// window's size changed) are refused and counted, unless AcceptSpec names
// their hash.
func TestBackfillSpecMismatch(t *testing.T) {
	yml := fmt.Sprintf(jobtest.BackfillJob, "10s", "{type: tumbling, size: 1m}")
	dir, _ := runSpec(t, yml, nil, job.RunOptions{Deterministic: true})
	old, err := spec.Parse([]byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	changed, err := spec.Parse([]byte(strings.Replace(yml, "size: 1m", "size: 2m", 1)))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Backfill(changed, BackfillOptions{Dir: dir, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.SpecMismatch == 0 || rep.SpecMismatch != rep.Entries || rep.Applied != 0 || rep.SpecHash != outfmt.SpecHash(changed) {
		t.Fatalf("under a changed spec: %+v", rep)
	}
	rep, err = Backfill(changed, BackfillOptions{Dir: dir, DryRun: true, AcceptSpec: []string{outfmt.SpecHash(old)}})
	if err != nil || rep.SpecMismatch != 0 || rep.Applied != rep.Entries {
		t.Fatalf("accepting the old hash: %+v %v", rep, err)
	}
}

// TestBackfillForgedEntries: an entry whose record no longer decodes is
// reported and not recorded as applied, so every run reports it again;
// an entry whose own watermark had not closed its window (a ledger
// written by hand) leaves the window to the live job; an entry another
// job wrote is skipped.
func TestBackfillForgedEntries(t *testing.T) {
	yml := fmt.Sprintf(jobtest.BackfillJob, "10s", "{type: tumbling, size: 1m}")
	dir, _ := runSpec(t, yml, nil, job.RunOptions{Deterministic: true})
	p, err := spec.Parse([]byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	w, err := ledger.Open(job.LedgerDir(p, dir, p.Sinks.Late), nil, 0, jobtest.TestNow)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []string{
		// No timestamp: it does not decode (counted once, though it
		// names two windows).
		`{"id":"x1","kind":"late","reason":"window_expired","key":{"user_id":"u001"},"ts":1767225600000,"windows":[[1767225600000,1767225660000],[1767225660000,1767225720000]],"watermark":1767229200000,"lateness_ms":1,"arrived_at":0,"record":{"user_id":"u001","amount":5}}`,
		// Its watermark (1767225600000) is before the window's cleanup.
		`{"id":"x2","kind":"late","reason":"window_expired","key":{"user_id":"u001"},"ts":1767225600000,"windows":[[1767225600000,1767225660000]],"watermark":1767225600000,"lateness_ms":1,"arrived_at":0,"record":{"user_id":"u001","amount":5,"ts":1767225600000}}`,
		// Another job's, in a ledger they share: skipped, whatever it holds.
		`{"id":"x3","kind":"late","reason":"window_expired","key":{"user_id":"u001"},"ts":1767225600000,"windows":[[1767225600000,1767225660000]],"watermark":1767229200000,"lateness_ms":1,"arrived_at":0,"job":"other","record":{"user_id":"u001","amount":5,"ts":1767225600000}}`,
	} {
		if err := w.Append([]byte(e), jobtest.TestNow); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for run := 1; run <= 2; run++ {
		rep, err := Backfill(p, BackfillOptions{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Unreadable != 1 || rep.WindowOpen != 1 || rep.OtherJobs != 1 {
			t.Fatalf("run %d: %+v", run, rep)
		}
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM results_backfill_applied WHERE id IN ('x1', 'x2', 'x3')`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("forged entries recorded as applied: %d %v", n, err)
	}
}

// crashAt panics at the n-th call with point, as a process killed there
// would stop (the deferred closes run, which a kill would skip: the
// archive and the ledger lock are released either way).
type crashAt struct {
	point string
	n     int
}

// TestBackfillKafkaCrash: a backfill of Kafka results stopped after the
// archive committed revisions and before (or after) producing them ends,
// once run again, with the complete answer in the topic; records
// published twice are identical (same key, pane and value).
func TestBackfillKafkaCrash(t *testing.T) {
	for _, point := range []string{"backfill-committed", "backfill-published"} {
		t.Run(point, func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "out"), kfake.SeedTopics(1, "out-weir-checkpoints"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			broker := c.ListenAddrs()[0]
			yml := strings.Replace(fmt.Sprintf(jobtest.BackfillJob, "10s", "{type: sliding, size: 2m, slide: 1m}"), "{type: sqlite, path: results.db}", "{type: kafka, brokers: ["+broker+"], topic: out}", 1) + "archive: {dir: archive}\n"
			dir, _ := runSpec(t, yml, nil, job.RunOptions{Deterministic: true})
			p, err := spec.Parse([]byte(yml))
			if err != nil {
				t.Fatal(err)
			}
			crash := &crashAt{point: point, n: 2}
			func() {
				defer func() {
					if r := recover(); r != crash {
						t.Fatalf("the backfill did not stop at %s: %v", point, r)
					}
				}()
				Backfill(p, BackfillOptions{Dir: dir, WindowsPerTx: 10, Crash: crash.hook})
			}()
			// A dry run says what waits in the outbox; the next backfill
			// says it published it.
			var warned []string
			warn := func(m string) { warned = append(warned, m) }
			if _, err := Backfill(p, BackfillOptions{Dir: dir, DryRun: true, Warn: warn}); err != nil {
				t.Fatal(err)
			}
			rep, err := Backfill(p, BackfillOptions{Dir: dir, WindowsPerTx: 10, Warn: warn})
			if err != nil {
				t.Fatal(err)
			}
			if w := strings.Join(warned, "\n"); !strings.Contains(w, "revisions that an earlier backfill committed wait to be published") || !strings.Contains(w, "published 10 revisions that an earlier backfill committed") {
				t.Errorf("warnings about the outbox: %q", warned)
			}
			if rep.AlreadyApplied == 0 || rep.Applied == 0 {
				t.Fatalf("after the crash: %+v", rep)
			}
			ans, err := Complete(p, dir)
			if err != nil {
				t.Fatal(err)
			}
			if diffs, n, err := ans.Compare(p, dir, 3); err != nil || n > 0 {
				t.Fatalf("%d windows differ (%v): %v", n, err, diffs)
			}
			// Every (key, pane) of the topic has one value.
			seen := map[string]string{}
			dups := 0
			for _, line := range jobtest.Committed(t, broker, "out") {
				k, rest, _ := strings.Cut(line, " ")
				var m struct {
					Pane int64 `json:"pane"`
				}
				json.Unmarshal([]byte(rest[:strings.LastIndex(rest, " ")]), &m)
				id := fmt.Sprint(k, m.Pane)
				if v, ok := seen[id]; ok {
					dups++
					if v != rest {
						t.Fatalf("%s published twice with different values:\n%s\n%s", id, v, rest)
					}
				}
				seen[id] = rest
			}
			if point == "backfill-published" && dups == 0 {
				t.Fatal("a crash after producing and before emptying the outbox left no duplicate: the test proves nothing")
			}
			t.Logf("%d records published twice, identical", dups)
		})
	}
}

// TestBackfillPGLedgerCut: a Postgres ledger's rows are flushed with each
// checkpoint as its epoch; a live job killed after a checkpoint's flush
// but before the checkpoint completed leaves rows of an epoch no
// checkpoint covers, which its restore will delete (and perhaps write
// again, or not). A backfill then reads only the rows of the newest
// checkpoint's epoch and before.
func TestBackfillPGLedgerCut(t *testing.T) {
	url, conn := jobtest.PgURL(t)
	table := jobtest.PgTable(t, conn, "weir_bf_cut")
	yml := strings.Replace(fmt.Sprintf(jobtest.BackfillJob, "10s", "{type: tumbling, size: 1m}"), "late: {type: ledger, dir: ledger}", "late: {type: postgres, url: '"+url+"', table: "+table+"}", 1) +
		"checkpoint: {dir: ck, interval: 1ms}\n"
	p, err := spec.Parse([]byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	count := func(cond string, epoch int64) (n int) {
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM `+table+` WHERE `+cond, epoch).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var j *job.Job
	var epoch int64
	j, err = job.Open(p, job.RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, CheckpointClock: jobtest.EveryRead(), Crash: func(point string) {
		// The third or a later sink commit that flushed late rows.
		if point == "sink-committed" && j.RecordEpoch() >= 3 && count("epoch = $1", j.RecordEpoch()) > 0 {
			epoch = j.RecordEpoch()
			panic("crash at " + point)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Run(context.Background()); err == nil || epoch == 0 {
		t.Fatalf("the live job was not stopped at a sink commit with late rows (%v)", err)
	}
	covered, uncovered := count("epoch < $1", epoch), count("epoch >= $1", epoch)
	rep, err := Backfill(p, BackfillOptions{Dir: dir, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Entries != covered || covered == 0 || uncovered == 0 || !strings.Contains(rep.Cut, fmt.Sprintf("up to checkpoint epoch %d", epoch-1)) {
		t.Fatalf("the backfill read %d entries (cut %q); rows of the checkpoint's epochs: %d, of the uncommitted epoch %d: %d", rep.Entries, rep.Cut, covered, epoch, uncovered)
	}
}

// TestBackfillOldPGLedger: a Postgres late table of weir before jobs and
// epochs, which no job of this weir has opened yet, is read whole.
func TestBackfillOldPGLedger(t *testing.T) {
	url, conn := jobtest.PgURL(t)
	table := fmt.Sprintf("weir_bf_old_%d", rand.Uint32())
	ctx := context.Background()
	t.Cleanup(func() { _, _ = conn.Exec(ctx, `DROP TABLE IF EXISTS `+table) })
	if _, err := conn.Exec(ctx, `CREATE TABLE `+table+` ("id" TEXT PRIMARY KEY, "reason" TEXT NOT NULL, "record" JSONB, "meta" JSONB, "arrived_at" TIMESTAMPTZ NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO `+table+` VALUES ('7', 'window_expired', '{"user_id":"u001","amount":5,"ts":1767225600000}', '{"key":{"user_id":"u001"},"ts":1767225600000,"windows":[[1767225600000,1767225660000]],"watermark":1767229200000,"lateness_ms":3539999}')`); err != nil {
		t.Fatal(err)
	}
	yml := strings.Replace(fmt.Sprintf(jobtest.BackfillJob, "10s", "{type: tumbling, size: 1m}"), "late: {type: ledger, dir: ledger}", "late: {type: postgres, url: '"+url+"', table: "+table+"}", 1)
	p, err := spec.Parse([]byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	bad, where, err := ScanLedger(p, t.TempDir(), func(e ledger.Entry) error { ids = append(ids, e.ID+" "+string(e.Key)); return nil })
	if err != nil || len(bad) != 0 || strings.Join(ids, ",") != `7 {"user_id":"u001"}` {
		t.Fatalf("ScanLedger of %s: %q, %q unreadable, %v", where, ids, bad, err)
	}
}

func (c *crashAt) hook(p string) {
	if p == c.point {
		if c.n--; c.n == 0 {
			panic(c)
		}
	}
}

// countJob is a job counting records per key k and minute, without its
// sinks.
const countJob = `name: count
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
key: k
window: {type: tumbling, size: 1m}
aggregate: [{name: n, fn: count}]
`

// TestBackfillNamesTheTableSink: with jsonl results first and a SQLite
// table second, backfill (which revises the first results sink) says to
// list the table first.
func TestBackfillNamesTheTableSink(t *testing.T) {
	p, err := spec.Parse([]byte(countJob + `sinks:
  results:
    - {type: jsonl, path: out.jsonl}
    - {type: sqlite, path: out.db}
  late: {type: ledger, dir: ledger}
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Backfill(p, BackfillOptions{Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "or list sinks.results[1] (sqlite) first: backfill revises the first results sink") {
		t.Fatalf("backfill with jsonl results first: %v", err)
	}
}

// TestBackfillCheckpointDir: given the live job's checkpoint directory
// (weir backfill --checkpoint-dir, for a job run with --checkpoint-dir),
// the backfill cuts the ledger where that job's newest checkpoint did;
// without it, a spec without checkpoint.dir is taken as a job that has
// ended.
func TestBackfillCheckpointDir(t *testing.T) {
	p, err := spec.Parse([]byte(countJob + `sinks:
  results: {type: sqlite, path: out.db}
  late: {type: ledger, dir: ledger}
`))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The ledger as a run of the job leaves it (a backfill refuses a
	// ledger no run made).
	if err := os.MkdirAll(filepath.Join(dir, "ledger", p.Name), 0o755); err != nil {
		t.Fatal(err)
	}
	rep, err := Backfill(p, BackfillOptions{Dir: dir})
	if err != nil || !strings.Contains(rep.Cut, "the job has no checkpoints") {
		t.Fatalf("without a checkpoint directory: cut %q, %v", rep.Cut, err)
	}
	// A directory that is not there is refused (a misspelt one would
	// read as "no checkpoint yet"); the live job makes it when it starts.
	ck := filepath.Join(dir, "ck")
	if _, err = Backfill(p, BackfillOptions{Dir: dir, CheckpointDir: ck}); err == nil || !strings.Contains(err.Error(), "--checkpoint-dir "+ck+" is not a directory") {
		t.Fatalf("a checkpoint directory that is not there: %v", err)
	}
	if err := os.Mkdir(ck, 0o755); err != nil {
		t.Fatal(err)
	}
	rep, err = Backfill(p, BackfillOptions{Dir: dir, CheckpointDir: ck})
	if err != nil || !strings.Contains(rep.Cut, "the job has not completed a checkpoint") {
		t.Fatalf("with a checkpoint directory: cut %q, %v", rep.Cut, err)
	}
	// The spec's checkpoint.dir, misspelt (a run makes it when it starts):
	// refused, not read as "no checkpoint yet".
	q, err := spec.Parse([]byte(countJob + "sinks:\n  results: {type: sqlite, path: out.db}\n  late: {type: ledger, dir: ledger}\ncheckpoint: {dir: ckk}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err = Backfill(q, BackfillOptions{Dir: dir}); err == nil || !strings.Contains(err.Error(), "checkpoint.dir "+filepath.Join(dir, "ckk")+" is not there") {
		t.Fatalf("a spec's checkpoint directory that is not there: %v", err)
	}
	if _, err = Backfill(q, BackfillOptions{Dir: dir, CheckpointDir: ck}); err != nil {
		t.Fatalf("--checkpoint-dir given beside a spec's checkpoint.dir that is not there: %v", err)
	}
}

// TestBackfillRefusesTableWithoutTheJob: a backfill of a job whose rows
// are gone from its results table (a fresh run of a copy removed them)
// is refused, naming the job; it would otherwise write each window a
// row of its late records alone.
func TestBackfillRefusesTableWithoutTheJob(t *testing.T) {
	yaml := `
name: gone
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
key: [user_id]
window: {type: tumbling, size: 10s}
aggregate: [{name: orders, fn: count}]
sinks:
  results: {type: sqlite, path: results.db}
  late: {type: ledger, dir: ledger}
`
	in := `{"user_id":"a","ts":1767225600000}
{"user_id":"a","ts":1767225625000}
{"user_id":"a","ts":1767225601000}
`
	dir, sum := runSpec(t, yaml, map[string]string{"in.jsonl": in}, job.RunOptions{Deterministic: true})
	if sum.Get("late_side_output") != 1 {
		t.Fatalf("want one late record in the ledger: %s", sum.JSON())
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DELETE FROM results WHERE job = 'gone'`); err != nil {
		t.Fatal(err)
	}
	p, err := spec.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Backfill(p, BackfillOptions{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), `it holds no rows of job "gone": the results of job "gone" are not there`) {
		t.Fatalf("backfill of a table without the job's rows: %v", err)
	}
	if _, ok := errors.AsType[*RefusedError](err); !ok {
		t.Fatalf("the refusal is a %T, not a *RefusedError (weir backfill exits with its usage code for those): %v", err, err)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM results`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d rows after the refused backfill (%v), want 0", n, err)
	}
}

// TestBackfillLegacySpecHash: an entry written before the spec's hash
// counted its where and computed fields (its hash is
// outfmt.LegacySpecHash) is the spec's, folded without --accept-spec;
// one of another hash is refused.
func TestBackfillLegacySpecHash(t *testing.T) {
	yml := strings.Replace(fmt.Sprintf(jobtest.BackfillJob, "10s", "{type: tumbling, size: 1m}"), "aggregate:\n", "where: \"amount >= 0\"\naggregate:\n", 1)
	dir, _ := runSpec(t, yml, nil, job.RunOptions{Deterministic: true})
	p, err := spec.Parse([]byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	now, legacy := outfmt.SpecHash(p), outfmt.LegacySpecHash(p)
	if now == legacy {
		t.Fatalf("a spec with a where has its legacy hash %s", now)
	}
	w, err := ledger.Open(job.LedgerDir(p, dir, p.Sinks.Late), nil, 0, jobtest.TestNow)
	if err != nil {
		t.Fatal(err)
	}
	for id, hash := range map[string]string{"old": legacy, "other": "00000000"} {
		e := `{"id":"` + id + `","kind":"late","reason":"window_expired","key":{"user_id":"u001"},"ts":1767225600000,"windows":[[1767225600000,1767225660000]],"watermark":1767229200000,"lateness_ms":1,"arrived_at":0,"job":"bf","spec":"` + hash + `","record":{"user_id":"u001","amount":5,"order_id":"o","ts":1767225600000}}`
		if err := w.Append([]byte(e), jobtest.TestNow); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Backfill(p, BackfillOptions{Dir: dir, DryRun: true})
	if err != nil || rep.SpecMismatch != 1 || rep.Applied != rep.Entries-1 {
		t.Fatalf("an entry with the legacy hash and one with another: %+v %v", rep, err)
	}
}
