package spec

import (
	"database/sql"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/ledger"
)

const backfillJob = `
name: bf
source:
  type: generator
  generator:
    records: 20000
    keys: 20
    duration: 30m
    disorder:
      - {share: 0.95, max: 10s}
      - {share: 0.04, min: 10s, max: 2m}
      - {share: 0.01, min: 5m, max: 20m}
    seed: 9
watermark: {max_out_of_orderness: %s}
key: [user_id]
window: %s
allowed_lateness: 2m
aggregate:
  - {name: orders, fn: count}
  - {name: total, fn: sum, field: amount}
  - {name: biggest, fn: max, field: amount}
  - {name: smallest, fn: min, field: amount}
sinks:
  results: {type: sqlite, path: results.db}
  late: {type: ledger, dir: ledger}
`

// table reads the results table: per (user, window) its aggregates, and
// the firings by kind.
func table(t *testing.T, path string) (map[string]string, map[string]int) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT user_id, window_start, window_end, orders, total, biggest, smallest, firing FROM results`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out, firings := map[string]string{}, map[string]int{}
	for rows.Next() {
		var user, firing string
		var start, end int64
		var orders, total, biggest, smallest any
		if err := rows.Scan(&user, &start, &end, &orders, &total, &biggest, &smallest, &firing); err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprintf("%s@%d-%d", user, start, end)] = fmt.Sprint(orders, total, biggest, smallest)
		firings[firing]++
	}
	return out, firings
}

// TestBackfillOracle: a stream with 1% of records beyond the allowed
// lateness, a live run (those records go to the ledger), then a
// backfill: the results table equals the answer over all records (a run
// whose bound covers all the disorder, so nothing is late). A second
// backfill changes nothing. Tumbling and sliding windows.
func TestBackfillOracle(t *testing.T) {
	for _, w := range []string{"{type: tumbling, size: 1m}", "{type: sliding, size: 2m, slide: 1m}"} {
		t.Run(strings.TrimSuffix(strings.Fields(w)[1], ","), func(t *testing.T) {
			dir, sum := runSpec(t, fmt.Sprintf(backfillJob, "10s", w), nil, RunOptions{Deterministic: true})
			late := sum.Get("late_side_output") + sum.Get("late_partial")
			if late < 50 {
				t.Fatalf("only %d records in the ledger: %s", late, sum.JSON())
			}
			oracleDir, osum := runSpec(t, fmt.Sprintf(backfillJob, "1h", w), nil, RunOptions{Deterministic: true})
			if osum.Get("late_side_output")+osum.Get("late_dropped")+osum.Get("accepted_late") != 0 {
				t.Fatalf("the oracle run had late records: %s", osum.JSON())
			}
			want, _ := table(t, filepath.Join(oracleDir, "results.db"))
			before, _ := table(t, filepath.Join(dir, "results.db"))
			if maps.Equal(before, want) {
				t.Fatal("the live run already equals the oracle: the test proves nothing")
			}
			s, err := Parse([]byte(fmt.Sprintf(backfillJob, "10s", w)))
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			// A dry run changes nothing.
			rep, err := Backfill(s, BackfillOptions{Dir: dir, DryRun: true, Out: &out})
			if err != nil {
				t.Fatal(err)
			}
			if now, _ := table(t, filepath.Join(dir, "results.db")); !maps.Equal(now, before) || rep.Applied == 0 {
				t.Fatalf("dry run: changed the table or applied nothing (%+v)", rep)
			}
			rep, err = Backfill(s, BackfillOptions{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			got, firings := table(t, filepath.Join(dir, "results.db"))
			if !maps.Equal(got, want) {
				n := 0
				for k, v := range want {
					if got[k] != v && n < 5 {
						t.Errorf("%s: %q, want %q", k, got[k], v)
						n++
					}
				}
				for k := range got {
					if _, ok := want[k]; !ok && n < 10 {
						t.Errorf("%s: %q, not in the oracle", k, got[k])
						n++
					}
				}
				t.Fatalf("after the backfill (%+v): %d rows, want %d", rep, len(got), len(want))
			}
			if rep.Entries != int(sum.Get("late_side_output")+sum.Get("late_partial")) || firings["backfill"] != rep.Windows || rep.Windows == 0 {
				t.Fatalf("report %+v, firings %v, %d late", rep, firings, late)
			}
			// Again: nothing changes, every entry is already applied.
			rep2, err := Backfill(s, BackfillOptions{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			again, firings2 := table(t, filepath.Join(dir, "results.db"))
			if !maps.Equal(again, got) || !maps.Equal(firings2, firings) || rep2.Applied != 0 || rep2.AlreadyApplied != rep.Applied || rep2.Windows != 0 {
				t.Fatalf("second backfill: %+v", rep2)
			}
			// While another backfill holds the ledger's lock, a run is
			// refused (a dry run, which writes nothing, is not).
			unlock, err := ledger.Lock(LedgerDir(s, dir, s.Spec.Sinks.Late))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Backfill(s, BackfillOptions{Dir: dir}); err == nil || !strings.Contains(err.Error(), "another backfill") {
				t.Fatalf("a backfill beside a running one: %v", err)
			}
			if _, err := Backfill(s, BackfillOptions{Dir: dir, DryRun: true}); err != nil {
				t.Fatal(err)
			}
			unlock()
			t.Logf("%d ledger entries, %d windows revised: %s", rep.Entries, rep.Windows, slices.Sorted(maps.Keys(firings)))
		})
	}
}
