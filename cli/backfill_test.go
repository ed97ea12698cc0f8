package cli

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/internal/sqltest"
)

// backfillCrashJob is a job whose ledger has a few thousand entries in
// about as many windows, so that a backfill takes long enough to be
// killed at random moments.
const backfillCrashJob = `
name: bfcrash
source:
  type: generator
  generator:
    records: %d
    keys: 200
    duration: 2h
    disorder:
      - {share: 0.95, max: 10s}
      - {share: 0.04, min: 10s, max: 2m}
      - {share: 0.01, min: 5m, max: 20m}
    seed: 5
watermark: {max_out_of_orderness: 10s}
key: [user_id]
window: {type: sliding, size: 2m, slide: 1m}
allowed_lateness: 2m
aggregate:
  - {name: orders, fn: count}
  - {name: total, fn: sum, field: amount}
  - {name: mean, fn: avg, field: amount}
  - {name: last_order, fn: last, field: order_id}
  - {name: amounts, fn: count_distinct, field: amount}
sinks:
  results: {type: sqlite, path: results.db}
  late: {type: ledger, dir: ledger}
  dead_letter: {type: jsonl, path: bad.jsonl}
%s`

// dumpSQLite is every row of a SQLite database's results and applied
// tables, in order, as text: equal dumps mean equal rows, revisions,
// firings and applied ids.
func dumpSQLite(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return sqltest.Dump(t, db, `SELECT * FROM results ORDER BY 1, 2, 3, 4`, `SELECT * FROM results_backfill_applied ORDER BY 1, 2, 3, 4, 5`)
}

// weirIn runs the weir binary in dir and returns its exit code and
// output; killAfter > 0 kills it then (the code is then -1).
func weirIn(t *testing.T, dir string, env []string, killAfter time.Duration, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(weirBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if killAfter > 0 {
		timer := time.AfterFunc(killAfter, func() { cmd.Process.Kill() })
		defer timer.Stop()
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		if !ee.Exited() {
			return -1, out.String()
		}
		return ee.ExitCode(), out.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, out.String()
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", from+"/.", to).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
}

// TestBackfillCrash kills weir backfill at each named crash point of its
// transactions and at random moments, re-running it each time: the final
// state is the same as an uninterrupted backfill's, and equals the
// complete answer. SQLite results: the database (results, revisions,
// firings, applied ids) byte for byte. jsonl results with the archive:
// the corrections file's distinct lines (a revision published again after
// a crash between the archive's commit and the file's write is the same
// line) and the archive's answer to a further backfill (nothing to do).
func TestBackfillCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the crash test runs weir many times")
	}
	for _, store := range []string{"sqlite", "jsonl"} {
		t.Run(store, func(t *testing.T) { testBackfillCrash(t, store) })
	}
}

func testBackfillCrash(t *testing.T, store string) {
	records := max(crashRecords(t)/5, 20000)
	job := fmt.Sprintf(backfillCrashJob, records, "")
	state := func(dir string) string { return dumpSQLite(t, filepath.Join(dir, "results.db")) }
	plan := []string{"backfill-begun:3", "backfill-written:50", "backfill-committed:100", "", "", "", "", ""}
	if store == "jsonl" {
		job = strings.Replace(job, "{type: sqlite, path: results.db}", "{type: jsonl, path: results.jsonl}", 1) + "archive: {dir: archive}\n"
		state = func(dir string) string {
			b, err := os.ReadFile(filepath.Join(dir, "results.backfill.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			return strings.Join(slices.Compact(slices.Sorted(strings.SplitSeq(string(b), "\n"))), "\n")
		}
		plan = []string{"backfill-begun:3", "backfill-written:50", "backfill-published:20", "backfill-committed:100", "", "", "", "", ""}
	}
	live := t.TempDir()
	os.WriteFile(filepath.Join(live, "job.yaml"), []byte(job), 0o644)
	if code, out := weirIn(t, live, nil, 0, "run", "job.yaml", "--deterministic", "--now", "2026-06-01T00:00:00Z"); code != 0 {
		t.Fatalf("weir run: exit %d\n%s", code, out)
	}
	ref, dir := t.TempDir(), t.TempDir()
	copyDir(t, live, ref)
	copyDir(t, live, dir)
	start := time.Now()
	if code, out := weirIn(t, ref, nil, 0, "backfill", "job.yaml", "--verify"); code != 0 {
		t.Fatalf("weir backfill: exit %d\n%s", code, out)
	}
	took := time.Since(start)
	want := state(ref)

	if store == "jsonl" {
		// Killed after the archive committed one key's revisions, before
		// the file has them; a re-run has nothing left to fold for that
		// key and must still publish them.
		if code, out := weirIn(t, dir, []string{"WEIR_TEST_CRASH=backfill-committed:1"}, 0, "backfill", "job.yaml", "--key", "user_id=u007"); code != -1 {
			t.Fatalf("the backfill of one key was not killed: exit %d\n%s", code, out)
		}
		if code, out := weirIn(t, dir, nil, 0, "backfill", "job.yaml", "--key", "user_id=u007"); code != 0 || !strings.Contains(out, "applied 0 entries") {
			t.Fatalf("the re-run for one key: exit %d\n%s", code, out)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "results.backfill.jsonl")); !strings.Contains(string(b), `"user_id":"u007"`) {
			t.Fatalf("the revisions committed before the kill were not published:\n%s", b)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	// Killed at random moments within the first part of what an
	// uninterrupted backfill takes (fixed times were either all before
	// it began or after it ended on a faster or slower machine).
	kills := killUntilDone(t, plan, func() time.Duration { return took/10 + time.Duration(r.Int64N(int64(took*3/10))) },
		func(env []string, after time.Duration) bool {
			code, out := weirIn(t, dir, env, after, "backfill", "job.yaml", "--windows-per-tx", strconv.Itoa(1+r.IntN(3)))
			if code > 0 {
				t.Fatalf("weir backfill: exit %d\n%s", code, out)
			}
			return code < 0
		})
	// The crash points kill every time; of the timed kills, later runs
	// have less left to do, and on a loaded machine may finish first. One
	// timed kill is required: without one above, a fresh copy is killed
	// while all of its work is ahead (sooner each try), then finished,
	// and must end in the same state.
	if points := len(slices.DeleteFunc(slices.Clone(plan), func(p string) bool { return p == "" })); kills < points+1 {
		var fresh string
		killed := false
		for try := range 3 {
			fresh = t.TempDir()
			copyDir(t, live, fresh)
			after := took/time.Duration(10<<try) + time.Duration(r.Int64N(int64(took/10)))
			code, out := weirIn(t, fresh, nil, after, "backfill", "job.yaml")
			if code > 0 {
				t.Fatalf("weir backfill: exit %d\n%s", code, out)
			}
			if killed = code < 0; killed {
				break
			}
		}
		if !killed {
			t.Fatalf("only %d kills happened (%d crash points and no timed kill, even on a fresh copy); the test proves little", kills, points)
		}
		if code, out := weirIn(t, fresh, nil, 0, "backfill", "job.yaml"); code != 0 {
			t.Fatalf("weir backfill after the timed kill: exit %d\n%s", code, out)
		}
		if got := state(fresh); got != want {
			t.Fatalf("after a timed kill of a fresh copy the state differs from an uninterrupted backfill's (%d bytes, want %d)", len(got), len(want))
		}
	}
	if got := state(dir); got != want {
		t.Fatalf("after %d kills the state differs from an uninterrupted backfill's (%d bytes, want %d)", kills, len(got), len(want))
	}
	code, out := weirIn(t, dir, nil, 0, "backfill", "job.yaml", "--verify")
	if code != 0 || !strings.Contains(out, "backfill applied 0 entries") || !strings.Contains(out, "results now equal the complete answer") {
		t.Fatalf("a backfill after the crashes: exit %d\n%s", code, out)
	}
	t.Logf("%d records, %d kills; %s", records, kills, strings.SplitN(out, "\n", 2)[0])
}

// TestBackfillBesideLiveJob runs a backfill while the live job is down
// half way (killed; its newest checkpoint is the backfill's cut): the
// backfill reads only the ledger the checkpoint covers and touches no
// window the live job still holds. The live job then resumes and
// finishes, a second backfill applies the rest, and the results equal
// the complete answer.
func TestBackfillBesideLiveJob(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs weir several times")
	}
	records := max(crashRecords(t)/2, 50000)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(fmt.Sprintf(backfillCrashJob, records, "checkpoint: {dir: ck, interval: 100ms}\n")), 0o644)
	// Kill the live job after a few checkpoints (a crash point: the
	// fourth checkpoint's sink commit).
	code, out := weirIn(t, dir, []string{"WEIR_TEST_CRASH=sink-committed:4"}, 0, "run", "job.yaml", "--deterministic", "--now", "2026-06-01T00:00:00Z")
	if code != -1 {
		t.Fatalf("the live job was not killed: exit %d\n%s", code, out)
	}
	before := rowsByWindow(t, filepath.Join(dir, "results.db"))
	code, out = weirIn(t, dir, nil, 0, "backfill", "job.yaml")
	if code != 0 || !strings.Contains(out, "ledger cut: checkpoint ") {
		t.Fatalf("backfill beside the live job: exit %d\n%s", code, out)
	}
	var wm int64
	if _, err := fmt.Sscanf(out[strings.Index(out, "live watermark ")+len("live watermark "):], "%d", &wm); err != nil {
		t.Fatalf("no live watermark in the report: %v\n%s", err, out)
	}
	const lateness = 2 * 60_000
	after := rowsByWindow(t, filepath.Join(dir, "results.db"))
	changed, open, stillOpen := 0, 0, 0
	for k, row := range after {
		if row.end-1+lateness > wm {
			stillOpen++
		}
		if before[k] != row {
			changed++
			if row.end-1+lateness > wm {
				open++
			}
		}
	}
	if changed == 0 || open > 0 || stillOpen == 0 {
		t.Fatalf("the backfill beside the live job (watermark %d) changed %d windows, %d of them still open; %d windows are open\n%s", wm, changed, open, stillOpen, out)
	}
	code, out = weirIn(t, dir, nil, 0, "run", "job.yaml", "--deterministic", "--now", "2026-06-01T00:00:00Z")
	if code != 0 || !strings.Contains(out, "resuming from checkpoint") {
		t.Fatalf("the live job's resumed run: exit %d\n%s", code, out)
	}
	code, out = weirIn(t, dir, nil, 0, "backfill", "job.yaml", "--verify")
	if code != 0 || !strings.Contains(out, "results now equal the complete answer") {
		t.Fatalf("the backfill after the live job finished: exit %d\n%s", code, out)
	}
	t.Logf("beside the live job: %d windows revised; after it finished: %s", changed, strings.TrimSpace(out))
}

type tableRow struct {
	end  int64
	text string
}

// rowsByWindow reads the results table by (user, window).
func rowsByWindow(t *testing.T, path string) map[string]tableRow {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT user_id, window_start, window_end, orders, total, firing, pane FROM results`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]tableRow{}
	for rows.Next() {
		var user, firing string
		var start, end, orders, total, pane int64
		if err := rows.Scan(&user, &start, &end, &orders, &total, &firing, &pane); err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprint(user, start)] = tableRow{end: end, text: fmt.Sprint(orders, total, firing, pane)}
	}
	return out
}

// TestBackfillDuringLiveRun runs backfills again and again while the live
// job runs (checkpoints every 100 ms), for SQLite results and for jsonl
// results with the archive, which the live job opens only for each
// commit: some backfills apply entries while it runs, none fails other
// than by waiting for the job's next checkpoint, the job ends well, and a
// last backfill after it leaves the results equal to the complete answer.
func TestBackfillDuringLiveRun(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs weir many times")
	}
	for _, store := range []string{"sqlite", "jsonl"} {
		t.Run(store, func(t *testing.T) {
			records := max(crashRecords(t), 100000)
			job := fmt.Sprintf(backfillCrashJob, records, "checkpoint: {dir: ck, interval: 100ms}\n")
			if store == "jsonl" {
				job = strings.Replace(job, "{type: sqlite, path: results.db}", "{type: jsonl, path: results.jsonl}", 1) + "archive: {dir: archive}\n"
			}
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644)
			live := exec.Command(weirBinary(t), "run", "job.yaml")
			live.Dir = dir
			var liveOut bytes.Buffer
			live.Stdout, live.Stderr = &liveOut, &liveOut
			if err := live.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- live.Wait() }()
			runs, applied, waited := 0, 0, 0
			var liveErr error
		loop:
			for {
				select {
				case liveErr = <-done:
					break loop
				default:
				}
				code, out := weirIn(t, dir, nil, 0, "backfill", "job.yaml")
				runs++
				switch {
				case code == 0:
					var n int
					if _, err := fmt.Sscanf(out[strings.Index(out, "backfill applied ")+len("backfill applied "):], "%d", &n); err == nil {
						applied += n
					}
				case strings.Contains(out, "run again after its next checkpoint"):
					waited++
				case code == 2 && (strings.Contains(out, "is not there: has the job run here?") || strings.Contains(out, "checkpoint.dir ck is not there")) && applied == 0:
					// The live run has not made its checkpoint directory
					// or ledger yet: a backfill before any run is refused.
					waited++
				default:
					t.Fatalf("a backfill during the live run: exit %d\n%s", code, out)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if liveErr != nil {
				t.Fatalf("the live run: %v\n%s", liveErr, liveOut.String())
			}
			if applied == 0 {
				t.Fatalf("%d backfills during the live run applied nothing (the run was too short?)\n%s", runs, liveOut.String())
			}
			code, out := weirIn(t, dir, nil, 0, "backfill", "job.yaml", "--verify")
			if code != 0 || !strings.Contains(out, "results now equal the complete answer") {
				t.Fatalf("the backfill after the live run: exit %d\n%s", code, out)
			}
			t.Logf("%d records; %d backfills during the live run applied %d entries (%d waited for a checkpoint); after it: %s", records, runs, applied, waited, strings.SplitN(out, "\n", 3)[1])
		})
	}
}

// TestBackfillKafkaSilent: the backfill of a Kafka job without
// checkpoints whose brokers do not answer says it cannot tell whether
// the job runs as a group (whose archive and cut are in Kafka), rather
// than backfill it as a job of one process.
func TestBackfillKafkaSilent(t *testing.T) {
	defer func(w time.Duration) { groupProbeWait = w }(groupProbeWait)
	groupProbeWait = 500 * time.Millisecond
	dir := t.TempDir()
	job := `name: silent
source: {type: kafka, kafka: {brokers: ['127.0.0.1:1'], topic: in}}
watermark: {max_out_of_orderness: 1s}
key: [user_id]
window: {type: tumbling, size: 1m}
aggregate: [{name: n, fn: count}]
archive: {dir: archive}
sinks:
  results: {type: kafka, brokers: ['127.0.0.1:1'], topic: out}
  late: {type: kafka, brokers: ['127.0.0.1:1'], topic: late}
`
	if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	code := Main(context.Background(), []string{"backfill", "job.yaml"}, IO{Dir: dir, Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" }})
	if code != ExitFailed || !strings.Contains(out.String(), "cannot tell whether the job runs as a group") {
		t.Errorf("exit %d:\n%s", code, out.String())
	}
}

// TestBackfillInterrupted: a backfill asked to stop (Ctrl-C) says what
// it committed and that running it again finishes the work.
func TestBackfillInterrupted(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "job.yaml"), fmt.Appendf(nil, jobtest.BackfillJob, "10s", "{type: tumbling, size: 1m}"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	std := IO{Dir: dir, Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" }}
	if code := Main(context.Background(), []string{"run", "job.yaml", "--deterministic"}, std); code != ExitOK {
		t.Fatalf("run: exit %d:\n%s", code, out.String())
	}
	out.Reset()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if code := Main(ctx, []string{"backfill", "job.yaml"}, std); code != ExitFailed || !strings.Contains(out.String(), "stopped (interrupted) after revising 0 windows") {
		t.Errorf("an interrupted backfill: exit %d:\n%s", code, out.String())
	}
}
