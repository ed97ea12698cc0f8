package record

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/connector/fileio"
	"github.com/weirstream/weir/spec"
)

// TestStringMinMax: min and max of type string, over random strings
// (escapes, non-ASCII, numbers and objects that count as their JSON
// text), added in random orders to accumulators split at random,
// round-tripped through the checkpoint encoding and merged in random
// order, give the smallest and largest text by its bytes, written as a
// JSON string; a result seeded from its stored text gives the same.
func TestStringMinMax(t *testing.T) {
	p, err := spec.Parse([]byte(`
name: names
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
key: [k]
window: {type: tumbling, size: 1m}
aggregate:
  - {name: lo, fn: min, field: v, type: string}
  - {name: hi, fn: max, field: v, type: string}
`))
	if err != nil {
		t.Fatal(err)
	}
	dec := NewDecoder(p, clock.Real{})
	agg := NewAggregator(p, false)
	pieces := []string{"a", "B", "z", "é", "\u00e9", "\\\"", "\\n", "\\u0041", "0", "~", "日", " ", "😀", "\uffff"}
	r := rand.New(rand.NewPCG(3, 9))
	for round := range 200 {
		n := 1 + r.IntN(30)
		var texts []string // as the records write them
		var want []string  // the values' texts
		for range n {
			switch r.IntN(6) {
			case 0:
				v := strconv.Itoa(r.IntN(1000))
				texts, want = append(texts, v), append(want, v)
			case 1:
				texts, want = append(texts, `{"b":1,"a":[true]}`), append(want, `{"a":[true],"b":1}`)
			default:
				var b strings.Builder
				for range r.IntN(4) {
					b.WriteString(pieces[r.IntN(len(pieces))])
				}
				var s string
				if err := json.Unmarshal([]byte(`"`+b.String()+`"`), &s); err != nil {
					t.Fatal(err)
				}
				texts, want = append(texts, `"`+b.String()+`"`), append(want, s)
			}
		}
		lo, hi := slices.Min(want), slices.Max(want)
		wantOut := []string{quote(t, lo), quote(t, hi)}
		recs := make([]Record, n)
		for i, text := range texts {
			if recs[i], err = dec.Decode(fileio.Line{Kind: fileio.Data, No: int64(i + 1), Text: []byte(`{"k":"a","ts":1767225600000,"v":` + text + `}`)}); err != nil {
				t.Fatal(err)
			}
		}
		got := SplitResult(agg.Result(shuffleSplitMerge(t, r, agg, recs)), 2)
		if !slices.Equal(got, wantOut) {
			t.Fatalf("round %d: inputs %q: got %v, want %v", round, texts, got, wantOut)
		}
		// A table keeps the text; folding into it starts from there.
		seeded, err := agg.Seed([]any{lo, []byte(hi)})
		if err != nil {
			t.Fatal(err)
		}
		if got := SplitResult(agg.Result(seeded), 2); !slices.Equal(got, wantOut) {
			t.Fatalf("round %d: seeded from %q and %q: got %v", round, lo, hi, got)
		}
	}
}

func quote(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
