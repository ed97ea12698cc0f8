package winop

import (
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/window"
)

// TestItemsUnique: every mode's snapshot cuts into items with distinct
// ids, which put together and restored snapshot to the same items again
// (processing-time windows and lazy sessions here; the other modes in
// TestSnapshotRestore and TestAlignedMatchesPerKeyTimers).
func TestItemsUnique(t *testing.T) {
	cases := []struct {
		name string
		a    window.Assigner
	}{
		{"processing", mustA(window.TumblingProcessing(100_000, 0))},
		{"session", mustA(window.Session(60))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out lines
			op := newSnapOp(t, c.a, nil, 800, false, &out)
			r := rand.New(rand.NewPCG(5, 6))
			for i := range 3000 {
				op.AdvanceProcessingTime(etime.Time(i / 3))
				ts := etime.Time(i*5 - r.IntN(300))
				if err := op.ProcessElement(r.Uint64N(40), snapEvent{key: r.Uint64N(40), ts: ts}, ts); err != nil {
					t.Fatal(err)
				}
				if i%50 == 49 {
					op.AdvanceWatermark(ts - 500)
				}
			}
			snap, err := op.Snapshot(nil)
			if err != nil {
				t.Fatal(err)
			}
			items := func(b []byte) map[string]string {
				m := map[string]string{}
				if err := SplitSnapshot(b, func(id, val []byte) { m[string(id)] = string(val) }); err != nil {
					t.Fatal(err)
				}
				return m
			}
			var again lines
			op2 := newSnapOp(t, c.a, nil, 800, false, &again)
			if err := op2.Restore(rejoin(t, snap, r), 0, 127, true); err != nil {
				t.Fatal(err)
			}
			snap2, err := op2.Snapshot(nil)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := items(snap), items(snap2); !maps.Equal(a, b) || len(a) < 10 {
				t.Fatalf("%d items, %d after a restore through them", len(a), len(b))
			}
		})
	}
}
