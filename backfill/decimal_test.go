package backfill

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/spec"
)

// articleOrders writes orders with amounts of two decimals, the articles'
// "double amount", as lines of a file: n orders of 20 users over 30
// minutes, most within 5 s of their event time, some a few minutes late,
// on two source channels (the complete answer reads one channel after the
// other, so it adds a window's amounts in another order than the live
// job, as a backfill does).
func articleOrders(seed uint64, n int) []string {
	r := rand.New(rand.NewPCG(seed, 1))
	type order struct {
		arrive int64
		line   string
	}
	orders := make([]order, n)
	for i := range orders {
		ts := int64(1767225600000) + int64(i)*1800_000/int64(n)
		delay := int64(r.IntN(5000))
		if r.IntN(20) == 0 {
			delay = 60_000 + int64(r.IntN(240_000))
		}
		cents := 1 + r.IntN(99_999)
		orders[i] = order{ts + delay, fmt.Sprintf(`{"$channel":%d,"order_id":%d,"user_id":"u%02d","amount":%d.%02d,"ts":%d}`, r.IntN(2), i+1, r.IntN(20), cents/100, cents%100, ts)}
	}
	slices.SortStableFunc(orders, func(a, b order) int { return int(a.arrive - b.arrive) })
	lines := make([]string, n)
	for i, o := range orders {
		lines[i] = o.line
	}
	return lines
}

// TestBackfillFractionalAmounts is the articles' case: orders with
// amounts of two decimals, live with late ones in the ledger, then a
// backfill; the results equal the complete answer (weir backfill
// --verify), for SQLite and Postgres results and for jsonl results with
// an archive, whose sums are compared digit for digit. In float64 the live sum plus
// the late amounts differs from the sum in file order (16452.050000000003
// against 16452.05). The same orders in another arrival order give the
// same text.
func TestBackfillFractionalAmounts(t *testing.T) {
	lines := articleOrders(7, 6000)
	yml := `
name: articles
source: {type: file, path: in.jsonl, channels: 2}
watermark: {max_out_of_orderness: 5s}
key: [user_id]
window: {type: tumbling, size: 1m}
allowed_lateness: 30s
aggregate:
  - {name: orders, fn: count}
  - {name: total, fn: sum, field: amount}
  - {name: mean, fn: avg, field: amount}
  - {name: biggest, fn: max, field: amount}
sinks:
  results: %s
  late: {type: ledger, dir: ledger}
`
	for _, results := range []string{"sqlite, path: results.db", "jsonl, path: results.jsonl", "postgres"} {
		t.Run(strings.TrimSuffix(strings.Fields(results)[0], ","), func(t *testing.T) {
			if results == "postgres" {
				url, table, _ := pgResultsTable(t, "weir_dec")
				results = "postgres, url: '" + url + "', table: " + table
			}
			yaml := fmt.Sprintf(yml, "{type: "+results+"}")
			if strings.HasPrefix(results, "jsonl") {
				yaml += "archive: {dir: archive, horizon: 30d}\n"
			}
			dir, sum := runSpec(t, yaml, map[string]string{"in.jsonl": strings.Join(lines, "\n") + "\n"}, job.RunOptions{Deterministic: true})
			if sum.Get("late_side_output") < 50 {
				t.Fatalf("too few late orders to backfill: %s", sum.JSON())
			}
			p, err := spec.Parse([]byte(yaml))
			if err != nil {
				t.Fatal(err)
			}
			ans, err := Complete(p, dir)
			if err != nil {
				t.Fatal(err)
			}
			if _, n, err := ans.Compare(p, dir, 3); err != nil || n == 0 {
				t.Fatalf("before the backfill %d windows differ (%v): the test proves nothing", n, err)
			}
			rep, err := Backfill(p, BackfillOptions{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			if diffs, n, err := ans.Compare(p, dir, 5); err != nil || n > 0 {
				t.Fatalf("after the backfill (%+v), %d of %d windows differ from the complete answer (%v):\n%s", rep, n, ans.Windows(), err, strings.Join(diffs, "\n"))
			}
		})
	}
	// Another arrival order, nothing late: the same results, byte for byte.
	byOrder := func(lines []string) string {
		yaml := strings.Replace(fmt.Sprintf(yml, "{type: jsonl, path: results.jsonl}"), "allowed_lateness: 30s", "allowed_lateness: 1h", 1)
		yaml = strings.Replace(yaml, "max_out_of_orderness: 5s", "max_out_of_orderness: 1h", 1)
		dir, _ := runSpec(t, yaml, map[string]string{"in.jsonl": strings.Join(lines, "\n") + "\n"}, job.RunOptions{Deterministic: true})
		b, err := os.ReadFile(filepath.Join(dir, "results.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		out := strings.Split(strings.TrimSpace(string(b)), "\n")
		slices.Sort(out)
		return strings.Join(out, "\n")
	}
	shuffled := slices.Clone(lines)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	if a, b := byOrder(lines), byOrder(shuffled); a != b {
		x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
		for i := range min(len(x), len(y)) {
			if x[i] != y[i] {
				t.Fatalf("two arrival orders differ:\n%s\n%s", x[i], y[i])
			}
		}
		t.Fatalf("two arrival orders give %d and %d results", len(x), len(y))
	}
}

// TestBackfillOverflow: a backfill that folds a late amount into a
// decimal sum of 38 digits (kept exactly by the archive, or by SQLite as
// the text of a number beyond int64 and float64) counts the fallback to
// float64 in its report.
func TestBackfillOverflow(t *testing.T) {
	t.Run("archive", func(t *testing.T) {
		testBackfillOverflow(t, "{type: jsonl, path: results.jsonl}", "archive: {dir: archive, horizon: 30d}")
	})
	t.Run("sqlite", func(t *testing.T) { testBackfillOverflow(t, "{type: sqlite, path: results.db}", "") })
}

func testBackfillOverflow(t *testing.T, results, archive string) {
	yml := `
name: bfover
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
window: {type: tumbling, size: 1m}
aggregate: [{name: total, fn: sum, field: amount}]
sinks:
  results: ` + results + `
  late: {type: ledger, dir: ledger}
` + archive + `
`
	in := `{"ts":1767225600000,"amount":` + strings.Repeat("9", 38) + `}
{"ts":1767225700000,"amount":1}
{"ts":1767225600001,"amount":1}
`
	dir, sum := runSpec(t, yml, map[string]string{"in.jsonl": in}, job.RunOptions{Deterministic: true})
	if sum.Get("late_side_output") != 1 || sum.Get("decimal_overflow") != 0 {
		t.Fatalf("live run: %s", sum.JSON())
	}
	p, err := spec.Parse([]byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Backfill(p, BackfillOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Windows != 1 || rep.DecimalOverflow != 1 || rep.FloatOverflow != 0 {
		t.Fatalf("report %+v", rep)
	}
}
