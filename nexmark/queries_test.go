package nexmark

import (
	"context"
	"fmt"
	"testing"
)

// TestQueriesMatchHandLoops runs every query on weir (parallelism 1 and 2)
// and as its hand-written loop over the same events, and requires the
// same rows. Events: 1M in -short mode's absence, with out-of-order
// groups of 1000 (0.1 s of disorder, inside the 4 s bound).
func TestQueriesMatchHandLoops(t *testing.T) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	c := DefaultConfig()
	c.OutOfOrderGroupSize = 1000
	c.NoExtra = true
	events, err := Generate(c, n)
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Events: events}
	for _, name := range QueryNames() {
		q := Queries[name]
		t.Run(name, func(t *testing.T) {
			hand := RunHand(q, in, true)
			if hand.Digest.N == 0 {
				t.Fatalf("the hand loop produced no rows")
			}
			for _, p := range []int{1, 2} {
				got, err := RunWeir(context.Background(), q, in, p, true)
				if err != nil {
					t.Fatal(err)
				}
				if got.Digest != hand.Digest {
					t.Fatalf("parallelism %d: weir %d rows, hand loop %d rows; first difference: %s",
						p, len(got.Rows), len(hand.Rows), firstDiff(got.Rows, hand.Rows))
				}
			}
			t.Logf("%s: %d rows", name, hand.Digest.N)
		})
	}
}

func firstDiff(a, b []Row) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("row %d: weir %+v, hand %+v", i, a[i], b[i])
		}
	}
	if len(a) > len(b) {
		return fmt.Sprintf("weir has more: %+v", a[len(b)])
	}
	if len(b) > len(a) {
		return fmt.Sprintf("hand loop has more: %+v", b[len(a)])
	}
	return "none (same rows, different digest?)"
}
