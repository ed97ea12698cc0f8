package record

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/connector/fileio"
	"github.com/weirstream/weir/spec"
)

// TestDistinctSums: sum_distinct and avg_distinct over random amounts
// with repeats (1.5 and 1.50 are one value), added in random orders to
// accumulators split at random, round-tripped through the checkpoint
// encoding and merged in random order, are the sum and average of the
// distinct values; a window without a value gives null.
func TestDistinctSums(t *testing.T) {
	p, err := spec.Parse([]byte(`
name: sums
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
key: [k]
window: {type: tumbling, size: 1m}
aggregate:
  - {name: s, fn: sum_distinct, field: v}
  - {name: a, fn: avg_distinct, field: v}
  - {name: n, fn: count_distinct, field: v}
`))
	if err != nil {
		t.Fatal(err)
	}
	dec := NewDecoder(p, clock.Real{})
	agg := NewAggregator(p, false)
	r := rand.New(rand.NewPCG(5, 11))
	for round := range 300 {
		n := 1 + r.IntN(20)
		distinct := map[int64]bool{} // in cents
		recs := make([]Record, n)
		for i := range recs {
			cents := int64(r.IntN(40)) * 25
			text := fmt.Sprintf("%d.%02d", cents/100, cents%100)
			switch r.IntN(3) {
			case 0:
				text = new(big.Rat).SetFrac64(cents, 100).FloatString(3) // 1.500
			case 1:
				if r.IntN(2) == 0 {
					text = "null"
				}
			}
			if text != "null" {
				distinct[cents] = true
			}
			if recs[i], err = dec.Decode(fileio.Line{Kind: fileio.Data, No: int64(i + 1), Text: []byte(`{"k":"a","ts":1767225600000,"v":` + text + `}`)}); err != nil {
				t.Fatal(err)
			}
		}
		got := SplitResult(agg.Result(shuffleSplitMerge(t, r, agg, recs)), 3)
		if len(distinct) == 0 {
			if got[0] != "null" || got[1] != "null" || got[2] != "0" {
				t.Fatalf("round %d: no values: got %v", round, got)
			}
			continue
		}
		var sum int64
		for c := range distinct {
			sum += c
		}
		wantSum := new(big.Rat).SetFrac64(sum, 100)
		if s, ok := new(big.Rat).SetString(got[0]); !ok || s.Cmp(wantSum) != 0 {
			t.Fatalf("round %d: sum of %v distinct cents: got %s, want %s", round, distinct, got[0], wantSum.FloatString(2))
		}
		wantAvg := new(big.Rat).Quo(wantSum, big.NewRat(int64(len(distinct)), 1))
		a, ok := new(big.Rat).SetString(got[1])
		if !ok {
			t.Fatalf("round %d: avg %q", round, got[1])
		}
		if diff := new(big.Rat).Sub(a, wantAvg); diff.Abs(diff).Cmp(big.NewRat(1, 1_000_000)) > 0 {
			t.Fatalf("round %d: avg of %v distinct cents: got %s, want %s", round, distinct, got[1], wantAvg.FloatString(6))
		}
		if got[2] != fmt.Sprint(len(distinct)) {
			t.Fatalf("round %d: count %s, want %d", round, got[2], len(distinct))
		}
	}
}
