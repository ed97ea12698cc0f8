package record

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/connector/fileio"
	"github.com/weirstream/weir/spec"
)

// TestArrivalOrder: first_value and last_value (Flink's FIRST_VALUE and
// LAST_VALUE) keep the values of the records that arrived first and last
// (lowest and highest line number), whatever their event times, in any
// order of adding, across merges of partial accumulators and through a
// checkpoint; first and last keep the earliest and latest event time.
func TestArrivalOrder(t *testing.T) {
	p, err := spec.Parse([]byte(`name: a
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1m}
window: {type: tumbling, size: 1h}
aggregate:
  - {name: fv, fn: first_value, field: v}
  - {name: lv, fn: last_value, field: v}
  - {name: f, fn: first, field: v}
  - {name: l, fn: last, field: v}
`))
	if err != nil {
		t.Fatal(err)
	}
	dec, agg := NewDecoder(p, clock.Real{}), NewAggregator(p, false)
	var recs []Record
	for no := int64(1); no <= 40; no++ {
		// Event times out of order.
		ts := 1767225600000 + (no*7919)%40*1000
		r, err := dec.Decode(fileio.Line{Kind: fileio.Data, No: no, Text: fmt.Appendf(nil, `{"ts":%d,"v":"line%d"}`, ts, no)})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	// The records of the earliest and latest event times.
	first, last := recs[0], recs[0]
	for _, r := range recs {
		if r.TS < first.TS {
			first = r
		}
		if r.TS > last.TS {
			last = r
		}
	}
	want := fmt.Sprintf("\"line1\"\x00\"line40\"\x00\"line%d\"\x00\"line%d\"\x00", first.No, last.No)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		order := rng.Perm(len(recs))
		cut := rng.IntN(len(recs))
		x, y := agg.CreateAccumulator(), agg.CreateAccumulator()
		for i, k := range order {
			if i < cut {
				x = agg.Add(x, recs[k])
			} else {
				y = agg.Add(y, recs[k])
			}
		}
		merged := agg.Merge(throughCheckpoint(t, x), throughCheckpoint(t, y))
		if got := string(agg.Result(merged)); got != want {
			t.Fatalf("order %v cut %d: %q, want %q", order, cut, got, want)
		}
	}
}
