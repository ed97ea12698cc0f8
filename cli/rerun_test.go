package cli

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// rerunJob is a job with a ledger and checkpoints whose input is a
// generator: the seed and start make a new input. Its results sink and
// the archive are filled in.
const rerunJob = `
name: rerun
source:
  type: generator
  generator:
    records: 6000
    keys: 40
    duration: 1h
    start: %s
    disorder:
      - {share: 0.95, max: 10s}
      - {share: 0.05, min: 5m, max: 20m}
    seed: %d
watermark: {max_out_of_orderness: 10s}
key: [user_id]
window: {type: tumbling, size: 1m}
allowed_lateness: 1m
aggregate:
  - {name: orders, fn: count}
  - {name: total, fn: sum, field: amount}
checkpoint: {dir: ck}
sinks:
  results: %s
  late: {type: ledger, dir: ledger}
  dead_letter: {type: jsonl, path: bad.jsonl}
%s`

// rerunSinks are the results sinks a rerun must start over: a SQLite
// table, and a jsonl file with the archive (and its corrections file).
var rerunSinks = map[string][2]string{
	"sqlite": {"{type: sqlite, path: results.db}", ""},
	"jsonl":  {"{type: jsonl, path: results.jsonl}", "archive: {dir: archive}\n"},
}

var tooLate = regexp.MustCompile(`too late: ([0-9]+) to the side output`)

// runTooLate runs weir in dir and returns how many records the run sent
// to the side output.
func runTooLate(t *testing.T, dir string, args ...string) int {
	t.Helper()
	code, out := weirIn(t, dir, nil, 0, append([]string{"run", "job.yaml"}, args...)...)
	m := tooLate.FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("weir run %v: exit %d\n%s", args, code, out)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// ledgerEntries counts the entries of the job's ledger.
func ledgerEntries(t *testing.T, dir string) int {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(dir, "ledger", "rerun", "day=*", "seg-*.jsonl"))
	n := 0
	for _, s := range segs {
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		n += strings.Count(string(b), "\n")
	}
	return n
}

// TestRerun: a second run in the same directory on new input (the run
// after a finished one, and a --fresh one) starts the job's outputs over:
// the ledger holds the new run's too-late records only, the table or the
// archive and corrections the new run's windows, and weir backfill
// --verify finds the results equal to the new input's complete answer.
// (Before runs, the ledger grew by a copy each time and the old run's
// later panes beat the new run's pane 0.)
func TestRerun(t *testing.T) {
	for _, store := range []string{"sqlite", "jsonl"} {
		t.Run(store, func(t *testing.T) {
			dir := t.TempDir()
			write := func(seed int) {
				job := fmt.Sprintf(rerunJob, "2026-01-01T00:00:00Z", seed, rerunSinks[store][0], rerunSinks[store][1])
				if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for i, c := range []struct {
				seed int
				args []string
			}{{5, nil}, {6, nil}, {7, []string{"--fresh"}}} {
				write(c.seed)
				late := runTooLate(t, dir, c.args...)
				if late == 0 {
					t.Fatalf("run %d sent nothing to the side output; the test proves little", i+1)
				}
				if n := ledgerEntries(t, dir); n != late {
					t.Fatalf("run %d (seed %d %v): the ledger holds %d entries, the run sent %d to it", i+1, c.seed, c.args, n, late)
				}
				code, out := weirIn(t, dir, nil, 0, "backfill", "job.yaml", "--verify")
				if code != 0 || !strings.Contains(out, "results now equal the complete answer") {
					t.Fatalf("run %d (seed %d %v): weir backfill --verify: exit %d\n%s", i+1, c.seed, c.args, code, out)
				}
			}
		})
	}
}

// TestRerunAppend: the daily-file pattern. Two days' inputs run one
// after the other with --append into one table and ledger: the table
// holds both runs' rows, the ledger both runs' entries, and after weir
// backfill the table equals, row for row, those of the two days run and
// backfilled apart.
func TestRerunAppend(t *testing.T) {
	days := []string{"2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"}
	job := func(day, seed int) string {
		return fmt.Sprintf(rerunJob, days[day], seed, rerunSinks["sqlite"][0], "")
	}
	rows := func(dir string) []string {
		db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "results.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		r, err := db.Query(`SELECT user_id, window_start, window_end, firing, pane, orders, total FROM results`)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var out []string
		for r.Next() {
			var k, f string
			var s, e, p, n, tot int64
			if err := r.Scan(&k, &s, &e, &f, &p, &n, &tot); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprint(k, s, e, f, p, n, tot))
		}
		slices.Sort(out)
		return out
	}
	var want []string
	wantLate := 0
	for day, seed := range []int{5, 6} {
		apart := t.TempDir()
		os.WriteFile(filepath.Join(apart, "job.yaml"), []byte(job(day, seed)), 0o644)
		wantLate += runTooLate(t, apart)
		if code, out := weirIn(t, apart, nil, 0, "backfill", "job.yaml"); code != 0 {
			t.Fatalf("backfill of day %d apart: exit %d\n%s", day+1, code, out)
		}
		want = append(want, rows(apart)...)
	}
	slices.Sort(want)

	dir := t.TempDir()
	for day, seed := range []int{5, 6} {
		os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job(day, seed)), 0o644)
		runTooLate(t, dir, "--append")
	}
	if n := ledgerEntries(t, dir); n != wantLate {
		t.Fatalf("the ledger holds %d entries, the two runs sent %d", n, wantLate)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	var runs int
	if err := db.QueryRow(`SELECT COUNT(DISTINCT run) FROM results`).Scan(&runs); err != nil || runs != 2 {
		t.Fatalf("the table holds rows of %d runs (%v), want 2", runs, err)
	}
	db.Close()
	code, out := weirIn(t, dir, nil, 0, "backfill", "job.yaml")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("applied %s entries", thousands(wantLate))) {
		t.Fatalf("weir backfill of both runs' entries (%d): exit %d\n%s", wantLate, code, out)
	}
	if got := rows(dir); !slices.Equal(got, want) {
		t.Fatalf("the appended table has %d rows, the days apart %d; first difference at %v", len(got), len(want), firstDiff(got, want))
	}

	// A third day whose window changed is refused with --append, naming
	// the change, before it touches the outputs; without --append it
	// starts the outputs over (and records its definition), after which
	// --append of the changed job runs.
	changed := strings.Replace(job(1, 7), "size: 1m}", "size: 5m}", 1)
	// The same table spelt another way, and another dead-letter file:
	// the same results.
	changed = strings.Replace(changed, "path: results.db}", "path: ./results.db}", 1)
	changed = strings.Replace(changed, "path: bad.jsonl}", "path: bad2.jsonl}", 1)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(changed), 0o644)
	code, out = weirIn(t, dir, nil, 0, "run", "job.yaml", "--append")
	if code == 0 || !strings.Contains(out, `--append: the outputs of job "rerun" hold earlier runs of another definition (changed: window.size)`) {
		t.Fatalf("an appended run with another window: exit %d\n%s", code, out)
	}
	if got := rows(dir); !slices.Equal(got, want) || ledgerEntries(t, dir) != wantLate {
		t.Fatal("the refused run changed the outputs")
	}
	runTooLate(t, dir)
	runTooLate(t, dir, "--append")
}

// firstDiff is the first row where a and b differ.
func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return a[i] + " / " + b[i]
		}
	}
	return "the end of the shorter"
}
