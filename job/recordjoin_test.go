package job

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/internal/sqljob"
)

// TestRecordJoin runs a join of records with a window's results
// (semantics W19), Nexmark q7's shape: each bid whose price is the
// highest of a tumbling 10 s window and whose time lies in [window_end -
// 10 s, window_end], both ends included. Bids come out of order within
// the watermark's bound, with tied prices and bids at exactly a window's
// end (which meet two windows). The rows equal a brute-force oracle, and
// are the same at parallelism 2 and after a crash at each checkpointing
// point; conservation holds.
func TestRecordJoin(t *testing.T) {
	in := filepath.Join(t.TempDir(), "bids.jsonl")
	rng := rand.New(rand.NewPCG(7, 19))
	type bid struct {
		item  int
		price int
		ts    int64 // ms after base
	}
	const base = int64(1767225600000) // 2026-01-01
	var bids []bid
	var lines []string
	for i := range 6000 { // enough reads for crashResume's 25 checkpoints
		ts := int64(i)*50 + int64(rng.IntN(2000)) // out of order, within the 5 s bound
		if ts%10_000 < 2000 && i%7 == 0 {
			ts -= ts % 10_000 // exactly a window's end
		}
		b := bid{item: i, price: 1 + rng.IntN(6), ts: ts}
		bids = append(bids, b)
		at := time.UnixMilli(base + b.ts).UTC().Format("2006-01-02 15:04:05.000")
		lines = append(lines, fmt.Sprintf(`{"item": %d, "price": %d, "ts": "%s"}`, b.item, b.price, at))
	}
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := fmt.Sprintf(`CREATE TABLE bids (item BIGINT, price BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
  WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json');
CREATE TABLE top (item BIGINT, price BIGINT, at BIGINT) WITH ('connector' = 'filesystem', 'path' = 'top.jsonl');
INSERT INTO top
SELECT B.item, B.price, B.ts
FROM bids B
JOIN (
  SELECT MAX(price) AS highest, window_end AS wend
  FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND))
  GROUP BY window_start, window_end
) W
ON B.price = W.highest
WHERE B.ts BETWEEN W.wend - INTERVAL '10' SECOND AND W.wend;
`, in)
	jb, err := sqljob.Compile(src, "top.sql")
	if err != nil {
		t.Fatal(err)
	}
	p, err := jb.Plan()
	if err != nil {
		t.Fatal(err)
	}
	// The oracle: the highest price per window, then every bid in a
	// window's inclusive range at that price.
	highest := map[int64]int{}
	for _, b := range bids {
		end := b.ts - b.ts%10_000 + 10_000
		highest[end] = max(highest[end], b.price)
	}
	var want []string
	for _, b := range bids {
		for end, top := range highest {
			if b.ts >= end-10_000 && b.ts <= end && b.price == top {
				want = append(want, fmt.Sprintf(`{"item":%d,"price":%d,"at":%d}`, b.item, b.price, base+b.ts))
			}
		}
	}
	slices.Sort(want)
	rows := func(dir string) []string {
		got := strings.Split(strings.TrimSpace(readFile(t, dir, "top.jsonl")), "\n")
		slices.Sort(got)
		return got
	}
	dir := t.TempDir()
	sum := runPlan(t, p, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow})
	sameRows(t, "the join's rows", rows(dir), want)
	ends := 0
	for _, b := range bids {
		if b.ts%10_000 == 0 && b.price == highest[b.ts] {
			ends++ // a bid that meets the window it ends
		}
	}
	if ends == 0 || !sum.Conserved() || sum.Get("B.records.accepted") != int64(len(bids)) || sum.Get("join.late_dropped") != 0 {
		t.Errorf("%d bids at an end that meet its window; summary %s", ends, sum.JSON())
	}
	dir2 := t.TempDir()
	sum2 := runPlan(t, p, RunOptions{Dir: dir2, Deterministic: true, Parallelism: 2, Now: jobtest.TestNow})
	sameRows(t, "at parallelism 2", rows(dir2), want)
	if !sum2.Conserved() {
		t.Errorf("at parallelism 2: %s", sum2.JSON())
	}
	outputs := func(dir string) map[string]string {
		return map[string]string{"top.jsonl": readFile(t, dir, "top.jsonl")}
	}
	crashesLeave(t, p, outputs, outputs(dir), sum)
}
