package backfill

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/spec"
)

// TestBackfillDailyAppend is the daily pattern: a job runs over a day's
// input, then over the next day's with --fresh --append (the results keep
// both runs), whose input holds some of the first day's orders, arriving
// very late. The complete answer is of the second day's input only, so
// --verify compares the second run's windows and names the windows the
// first run's rows hold as not compared; a dry run and the backfill agree,
// and both find the results equal to the answer (a helper's trial: the
// dry run and the backfill disagreed, and both reported false
// differences, exit 1). A window that never fired gets its first row in
// the run of its entries.
func TestBackfillDailyAppend(t *testing.T) {
	for _, c := range []struct{ name, results, after string }{
		{"sqlite", "{type: sqlite, path: results.db}", ""},
		{"jsonl", "{type: jsonl, path: out.jsonl}", "archive: {dir: archive}\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := spec.Parse([]byte(orderJob("daily", c.results, "{type: ledger, dir: ledger}", c.after)))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			// The first day ends with an order of a user who had none,
			// too late for its window, which never fired.
			day1 := append(articleOrders(31, 3000), `{"$channel":0,"order_id":99999,"user_id":"u99","amount":1.00,"ts":1767225900000}`)
			// The second day: an hour later, with 20 of the first day's
			// orders among its second half.
			var day2 []string
			for i, l := range articleOrders(32, 3000) {
				var m map[string]any
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatal(err)
				}
				m["ts"] = int64(m["ts"].(float64)) + 3_600_000
				m["order_id"] = 100_000 + i
				b, _ := json.Marshal(m)
				day2 = append(day2, string(b))
				if i >= 1500 && i%75 == 0 {
					day2 = append(day2, strings.Replace(day1[i], `"order_id":`, `"order_id":2`, 1))
				}
			}
			var summaries []job.Summary
			for i, in := range [][]string{day1, day2} {
				if err := os.WriteFile(filepath.Join(dir, "in.jsonl"), []byte(strings.Join(in, "\n")+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				j, err := job.Open(p, job.RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow.Add(time.Duration(i) * 24 * time.Hour), Fresh: i > 0, Append: i > 0})
				if err != nil {
					t.Fatal(err)
				}
				sum, err := j.Run(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				summaries = append(summaries, sum)
			}
			if summaries[1].Get("late_side_output") < 20 {
				t.Fatalf("the second day's run: %s", summaries[1].JSON())
			}
			ans, err := Complete(p, dir)
			if err != nil {
				t.Fatal(err)
			}
			dry, err := Backfill(p, BackfillOptions{Dir: dir, DryRun: true, KeepRevisions: true})
			if err != nil {
				t.Fatal(err)
			}
			before, err := ans.CompareRevised(p, dir, 3, dry.Revisions)
			if err != nil || before.N != 0 || before.Earlier == 0 {
				t.Fatalf("the dry run's comparison: %+v, %v; want no difference and some windows of the first run", before, err)
			}
			rep, err := Backfill(p, BackfillOptions{Dir: dir})
			if err != nil || rep.Applied != dry.Applied || rep.Windows != dry.Windows {
				t.Fatalf("the backfill: %+v, %v; the dry run said %d entries in %d windows", rep, err, dry.Applied, dry.Windows)
			}
			after, err := ans.CompareRevised(p, dir, 3, nil)
			if err != nil || fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("after the backfill: %+v, %v; the dry run said %+v", after, err, before)
			}
		})
	}
}
