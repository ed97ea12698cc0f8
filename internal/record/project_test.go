package record

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/connector/fileio"
	"github.com/weirstream/weir/spec"
)

// TestProjectionMatchesTheWindowsOwnDecoder: a record decoded with the
// union plan of several windows and projected onto one window has that
// window's key, and aggregates to the same result, as the record decoded
// with that window's own plan.
func TestProjectionMatchesTheWindowsOwnDecoder(t *testing.T) {
	base, err := spec.Parse([]byte("name: j\nsource: {type: file, path: in.jsonl}\nwatermark: {max_out_of_orderness: 1s}\nkey: [user]\nwindow: {type: tumbling, size: 1m}\naggregate: [{name: n, fn: count}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	windows := []*spec.WindowOp{
		{Key: []string{"user"}, Aggregates: []spec.Aggregate{{Name: "n", Fn: "count"}, {Name: "total", Fn: "sum", Field: "amount"}}},
		{Key: []string{"shop", "user"}, Aggregates: []spec.Aggregate{{Name: "top", Fn: "max", Field: "price"}, {Name: "last", Fn: "last", Field: "note"}}},
		{Aggregates: []spec.Aggregate{{Name: "all", Fn: "count"}}}, // no key: one key
		{Key: []string{"user"}, Aggregates: []spec.Aggregate{{Name: "avg", Fn: "avg", Field: "amount"}}},
		// Adjacent fields in order, not at the start: a substring of the
		// union's key.
		{Key: []string{"shop", "region"}, Aggregates: []spec.Aggregate{{Name: "n", Fn: "count"}}},
		{Key: []string{"region"}, Aggregates: []spec.Aggregate{{Name: "total", Fn: "sum", Field: "amount"}}},
		{Key: []string{"region", "user"}, Aggregates: []spec.Aggregate{{Name: "n", Fn: "count"}}},
	}
	union := Union(base, windows)
	if got := fmt.Sprint(union.Key); got != "[user shop region]" || len(union.Aggregates) != 9 {
		t.Fatalf("union key %s, %d aggregates", got, len(union.Aggregates))
	}
	ud := NewDecoder(union, clock.Real{})
	r := rand.New(rand.NewPCG(3, 4))
	for i, w := range windows {
		plan := base.ForWindow(w)
		own := NewDecoder(plan, clock.Real{})
		agg := NewAggregator(plan, false)
		pr := Project(union, windows, i)
		for n := range 200 {
			line := fmt.Sprintf(`{"user":"u%d","shop":%d,"ts":1767225600000,"amount":%d.%02d,"price":%d,"note":"n%d","region":["r%d"]}`, r.IntN(5), r.IntN(3), r.IntN(1000), r.IntN(100), r.IntN(50), n, r.IntN(2))
			l := fileio.Line{Kind: fileio.Data, No: int64(n + 1), Text: []byte(line)}
			u, err := ud.Decode(l)
			if err != nil {
				t.Fatal(err)
			}
			o, err := own.Decode(l)
			if err != nil {
				t.Fatal(err)
			}
			got := pr.Apply(u)
			if got.Key != o.Key {
				t.Fatalf("window %d, %s: key %q, its own decoder's %q", i, line, got.Key, o.Key)
			}
			a, b := agg.CreateAccumulator(), agg.CreateAccumulator()
			a, b = agg.Add(a, got), agg.Add(b, o)
			if ra, rb := string(agg.Result(a)), string(agg.Result(b)); ra != rb {
				t.Fatalf("window %d, %s: result %s, its own decoder's %s", i, line, ra, rb)
			}
		}
	}
}

// TestProjectionKeepsAdjacentKeysWithoutAllocating: a window whose key
// fields are adjacent among the union's, in order, gets a substring of
// the union's key.
func TestProjectionKeepsAdjacentKeysWithoutAllocating(t *testing.T) {
	base, err := spec.Parse([]byte("name: j\nsource: {type: file, path: in.jsonl}\nwatermark: {max_out_of_orderness: 1s}\nkey: [a]\nwindow: {type: tumbling, size: 1m}\naggregate: [{name: n, fn: count}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	windows := []*spec.WindowOp{{Key: []string{"a", "b", "c"}}, {Key: []string{"b", "c"}}}
	union := Union(base, windows)
	rec, err := NewDecoder(union, clock.Real{}).Decode(fileio.Line{Text: []byte(`{"a":1,"b":"x","c":[2],"ts":1767225600000}`), Channel: -1})
	if err != nil {
		t.Fatal(err)
	}
	pr := Project(union, windows, 1)
	if got := pr.Apply(rec).Key; got != `"x"`+KeySep+`[2]` {
		t.Fatalf("key %q", got)
	}
	if n := testing.AllocsPerRun(100, func() { _ = pr.Apply(rec) }); n != 0 {
		t.Errorf("Apply allocates %v times for adjacent key fields", n)
	}
}
