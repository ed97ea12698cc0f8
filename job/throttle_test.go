package job

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// W11 at the articles' shape (tumbling windows, allowed lateness, a stream
// with a late tail): with the late-firing throttle every window emits at
// most one late revision in a deterministic run (processing time stands
// still, so each pending firing comes at cleanup), far fewer lines than one
// per late record, while every counter and every window's last revision
// equal the run without the throttle.
func TestLateFiringThrottle(t *testing.T) {
	body, _ := disorderedOrders(20_000, 50, 3, 11)
	job := `
name: throttle
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 5s}
key: [user_id]
window: {type: tumbling, size: 10s}
allowed_lateness: 30s
%s
aggregate: [{name: orders, fn: count}, {name: total, fn: sum, field: amount}]
sinks:
  results: {type: jsonl, path: out.jsonl}
  late: {type: jsonl, path: late.jsonl}
`
	type rev struct {
		User   string `json:"user_id"`
		Start  int64  `json:"window_start"`
		Firing string `json:"firing"`
		Pane   int64  `json:"pane"`
		Orders int64  `json:"orders"`
	}
	run := func(extra string) (Summary, map[[2]any]rev, map[[2]any]int) {
		dir, sum := runSpec(t, strings.Replace(job, "%s", extra, 1), map[string]string{"in.jsonl": body}, RunOptions{Deterministic: true})
		b, err := os.ReadFile(filepath.Join(dir, "out.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		last, lates := map[[2]any]rev{}, map[[2]any]int{}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var r rev
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			k := [2]any{r.User, r.Start}
			if p, ok := last[k]; ok && r.Pane != p.Pane+1 {
				t.Fatalf("window %v: pane %d after %d", k, r.Pane, p.Pane)
			}
			last[k] = r
			if r.Firing == "late" {
				lates[k]++
			}
		}
		return sum, last, lates
	}
	plainSum, plainLast, plainLates := run("")
	sum, last, lates := run("late_firing_interval: 1m")
	for _, c := range []string{"records_in", "accepted", "accepted_late", "late_side_output", "late_dropped", "window_misses"} {
		if sum.Get(c) != plainSum.Get(c) {
			t.Errorf("%s: %d with the throttle, %d without", c, sum.Get(c), plainSum.Get(c))
		}
	}
	plainN, n := 0, 0
	for k, c := range lates {
		if c > 1 {
			t.Errorf("window %v: %d late revisions with the throttle, want at most 1", k, c)
		}
		n += c
	}
	for _, c := range plainLates {
		plainN += c
	}
	if plainN < 2*n || n == 0 {
		t.Errorf("late revisions: %d with the throttle, %d without; want some, and far fewer", n, plainN)
	}
	if len(last) != len(plainLast) {
		t.Fatalf("%d windows with the throttle, %d without", len(last), len(plainLast))
	}
	for k, r := range plainLast {
		if got := last[k]; got.Orders != r.Orders {
			t.Errorf("window %v: last revision counts %d orders with the throttle, %d without", k, got.Orders, r.Orders)
		}
	}
	t.Logf("late revisions: %d without the throttle, %d with it, over %d windows", plainN, n, len(last))
}
