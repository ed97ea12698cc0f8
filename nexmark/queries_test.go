package nexmark

import (
	"context"
	"fmt"
	"reflect"
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

// TestQueriesUnderDisorder runs the event-time queries with 2.5 s of
// disorder (out-of-order groups of 1000 at 400 events/s), inside the 4 s
// bound: a later event may open an older window or pane than the first
// one, and no event is late.
func TestQueriesUnderDisorder(t *testing.T) {
	c := DefaultConfig()
	c.Rate, c.OutOfOrderGroupSize, c.NoExtra = 400, 1000, true
	if err := CheckDisorder(c); err != nil {
		t.Fatal(err)
	}
	events, err := Generate(c, 100_000)
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Events: events}
	for _, name := range []string{"count", "q5", "q7", "q8", "q11"} {
		q := Queries[name]
		hand := RunHand(q, in, true)
		got, err := RunWeir(context.Background(), q, in, 1, true)
		if err != nil {
			t.Fatal(err)
		}
		if got.Digest != hand.Digest {
			t.Errorf("%s: weir %d rows, hand loop %d rows; %s", name, len(got.Rows), len(hand.Rows), firstDiff(got.Rows, hand.Rows))
		}
	}
	c.Rate = 200 // 5 s of disorder: beyond the bound
	if err := CheckDisorder(c); err == nil {
		t.Error("CheckDisorder accepted 5 s of disorder with a 4 s bound")
	}
}

// TestTopBinary: q5's and q7's accumulator survives state on disk (the
// Pebble backend writes it back when its cache overflows or a window
// fires) and refuses bytes that are not one.
func TestTopBinary(t *testing.T) {
	in := top{max: 7, rows: []Row{{Start: 1, End: 2, A: -3, B: 7, C: 1 << 40, S: "é"}, {A: 5, B: 7}}}
	b, err := in.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var out top
	if err := out.UnmarshalBinary(b); err != nil || !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip: %+v, %v; want %+v", out, err, in)
	}
	for i := range len(b) {
		if err := new(top).UnmarshalBinary(b[:i]); err == nil {
			t.Fatalf("%d of %d bytes decoded", i, len(b))
		}
	}
}
