package job

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/spec"
)

// selectJob is jobtest.OrderJob's input as a query without a window
// (what SQL's SELECT ... WHERE compiles to): its spec's window, which
// spec.SelectPlan replaces, is global with a count trigger; the rows
// are the orders over 50, with a computed column.
var selectJob = strings.NewReplacer(
	"window: {type: tumbling, size: 1m}\n", "window: {type: global}\nwhere: amount > 50\ncomputed: [{name: cents, expr: amount * 100}]\n",
	"allowed_lateness: 3m\n", "",
	"trigger: {type: continuous, interval: 20s}\n", "trigger: {type: count, count: 1}\n",
	"  - {name: orders, fn: count}\n  - {name: total, fn: sum, field: amount}\n  - {name: users, fn: count_distinct, field: user_id}\n",
	"  - {name: order_id, fn: first, field: order_id}\n  - {name: amount, fn: first, field: amount}\n  - {name: cents, fn: first, field: cents}\n",
	"  results: {type: jsonl, path: rows.jsonl}\n", "  results: {type: jsonl, path: rows.jsonl, columns: [{name: id, from: order_id}, {name: amount}, {name: cents}, {name: at, from: window_start}]}\n",
	"  late: {type: jsonl, path: late.jsonl}\n", "",
).Replace(fmt.Sprintf(jobtest.OrderJob, "jsonl", "rows.jsonl"))

// TestSelect runs a query without a window (spec.SelectOp): every record
// past the where is one row, at once, with its computed column and its
// time; conservation counts rows, dead letters and filtered records; the
// rows are the same at parallelism 2 (in another order) and after a
// crash at each checkpointing point.
func TestSelect(t *testing.T) {
	if !strings.Contains(selectJob, "where: amount > 50") || !strings.Contains(selectJob, "columns:") || strings.Contains(selectJob, "late.jsonl") {
		t.Fatal("the select job was not rewritten")
	}
	dir, p := jobtest.Prepare(t, selectJob, nil, "")
	p, err := spec.SelectPlan(p, &spec.SelectOp{Fields: []string{"order_id", "amount", "cents"}}, "select", nil)
	if err != nil {
		t.Fatal(err)
	}
	sum := runPlan(t, p, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow})
	rows := strings.Split(strings.TrimSpace(readFile(t, dir, "rows.jsonl")), "\n")
	ids := map[string]bool{}
	for _, l := range rows {
		var r struct {
			ID            json.RawMessage `json:"id"`
			Amount, Cents json.Number
			At            int64
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		a, _ := r.Amount.Float64()
		c, _ := r.Cents.Float64()
		if a <= 50 || c != a*100 || r.At < 1_700_000_000_000 || ids[string(r.ID)] {
			t.Fatalf("row %s: not an order over 50 with its cents and time, or a second row of its order", l)
		}
		ids[string(r.ID)] = true
	}
	in, dead, filtered := sum.Get("records_in"), sum.Get("dead_letter"), sum.Get("filtered")
	if int64(len(rows)) != in-dead-filtered || sum.Get("results") != int64(len(rows)) || sum.Get("accepted") != int64(len(rows)) ||
		filtered == 0 || dead == 0 || !sum.Conserved() || sum.Get("fired_on_time") != 0 {
		t.Errorf("%d rows of %d records (%d dead letters, %d filtered): %s", len(rows), in, dead, filtered, sum.JSON())
	}
	outputs := func(dir string) map[string]string {
		return map[string]string{"rows.jsonl": readFile(t, dir, "rows.jsonl"), "bad.jsonl": readFile(t, dir, "bad.jsonl")}
	}
	want := outputs(dir)

	dir2, _ := jobtest.Prepare(t, selectJob, nil, "")
	sum2 := runPlan(t, p, RunOptions{Dir: dir2, Deterministic: true, Parallelism: 2, Now: jobtest.TestNow})
	rows2 := strings.Split(strings.TrimSpace(readFile(t, dir2, "rows.jsonl")), "\n")
	slices.Sort(rows)
	slices.Sort(rows2)
	sameRows(t, "at parallelism 2", rows2, rows)
	if !sum2.Conserved() || sum2.Get("results") != sum.Get("results") {
		t.Errorf("at parallelism 2: %s", sum2.JSON())
	}
	crashesLeave(t, p, outputs, want, sum)
}

// TestHaving: a window's having (Spec.Having) writes exactly the results
// of the same window without it for which the condition holds, counts
// the others in having_filtered, and resumes after a crash at each
// checkpointing point to the same rows and counts.
func TestHaving(t *testing.T) {
	withHaving := strings.Replace(minuteJob, "aggregate:\n", "having: orders >= 3 AND total > 100\naggregate:\n", 1)
	if withHaving == minuteJob {
		t.Fatal("the having job was not rewritten")
	}
	allDir, _ := runSpec(t, minuteJob, nil, RunOptions{Deterministic: true})
	var want []string
	for _, l := range strings.Split(strings.TrimSpace(readFile(t, allDir, "minute.jsonl")), "\n") {
		var r struct {
			Orders int64
			Total  json.Number
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if tot, _ := r.Total.Float64(); r.Orders >= 3 && tot > 100 {
			want = append(want, l)
		}
	}
	dir, p := jobtest.Prepare(t, withHaving, nil, "")
	sum := runPlan(t, p, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow})
	got := strings.Split(strings.TrimSpace(readFile(t, dir, "minute.jsonl")), "\n")
	sameRows(t, "the having's rows against the rows it keeps", got, want)
	all := strings.Count(readFile(t, allDir, "minute.jsonl"), "\n")
	if len(want) < 10 || sum.Get("having_filtered") != int64(all-len(want)) || sum.Get("results") != int64(len(want)) || !sum.Conserved() {
		t.Errorf("%d of %d rows kept: %s", len(want), all, sum.JSON())
	}
	outputs := func(dir string) map[string]string {
		return map[string]string{"minute.jsonl": readFile(t, dir, "minute.jsonl"), "late.jsonl": readFile(t, dir, "late.jsonl")}
	}
	crashesLeave(t, p, outputs, outputs(dir), sum)
}
