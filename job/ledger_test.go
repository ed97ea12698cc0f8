package job

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/ledger"
)

// ledgerEntries reads a job's ledger: id, reason, ts, windows, watermark,
// lateness and record of each entry, sorted, and fails on corrupt lines
// or a duplicated id.
func ledgerEntries(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	seen := map[string]bool{}
	bad, err := ledger.Scan(dir, func(e ledger.Entry) error {
		if seen[e.ID] {
			return fmt.Errorf("entry %s twice", e.ID)
		}
		seen[e.ID] = true
		out = append(out, fmt.Sprintf("%s %s %d %v %d %d %s %s", e.ID, e.Reason, e.TS, e.Windows, e.Watermark, e.LatenessMS, e.Key, compactJSON(t, string(e.Record))))
		return nil
	})
	if err != nil || len(bad) > 0 {
		t.Fatalf("ledger %s: %v %v", dir, err, bad)
	}
	slices.Sort(out)
	return out
}

// TestLedgerSink sends the orders job's too-late records to a ledger:
// it holds exactly the records of late.jsonl (same ids, timestamps,
// windows, watermarks, lateness, keys and records), one entry each, and
// a run crashed after sink commits (checkpoints never completed) and
// resumed leaves the same ledger: the restore cut it back.
func TestLedgerSink(t *testing.T) {
	refDir, refSum := runSpec(t, fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl"), nil, RunOptions{Deterministic: true})
	b, err := os.ReadFile(filepath.Join(refDir, "late.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		var l struct {
			ID         string          `json:"id"`
			TS         int64           `json:"ts"`
			Windows    [][2]int64      `json:"windows"`
			Watermark  int64           `json:"watermark"`
			LatenessMS int64           `json:"lateness_ms"`
			Key        json.RawMessage `json:"key"`
			Record     json.RawMessage `json:"record"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("%s window_expired %d %v %d %d %s %s", l.ID, l.TS, l.Windows, l.Watermark, l.LatenessMS, l.Key, compactJSON(t, string(l.Record))))
	}
	slices.Sort(want)
	if int64(len(want)) != refSum.Get("late_side_output") || len(want) < 100 {
		t.Fatalf("%d late lines, %d side output", len(want), refSum.Get("late_side_output"))
	}
	job := strings.Replace(fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl"), "late: {type: jsonl, path: late.jsonl}", "late: {type: ledger, dir: ledger}", 1)
	dir, sum := runSpec(t, job, nil, RunOptions{Deterministic: true})
	if !slices.Equal(sum.JSON(), refSum.JSON()) {
		t.Fatalf("summary %s, want %s", sum.JSON(), refSum.JSON())
	}
	if got := ledgerEntries(t, filepath.Join(dir, "ledger", "orders")); !slices.Equal(got, want) {
		t.Fatalf("ledger: %d entries, want %d\n%v\nwant\n%v", len(got), len(want), got[:3], want[:3])
	}
	// Crashed at the 20th sink commit, then resumed: the same entries.
	crashDir := crashAndResume(t, job, 20, nil)
	if got := ledgerEntries(t, filepath.Join(crashDir, "ledger", "orders")); !slices.Equal(got, want) {
		t.Fatalf("after a crash: %d entries, want %d", len(got), len(want))
	}
}
