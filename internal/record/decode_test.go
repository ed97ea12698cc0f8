package record

import (
	"fmt"
	"strings"
	"testing"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/connector/fileio"
	"github.com/weirstream/weir/spec"
)

// TestComputedBeforeWhere: the computed fields that the where reads (and
// those they read, and every one before them) are evaluated before it,
// the rest only for a record it keeps; a computed field that shadows a
// record's field, read before and after it is shadowed, gives the values
// of evaluating every field in order; and a Rows decoder, which cuts its
// values' texts from slabs, gives the values of one that does not.
func TestComputedBeforeWhere(t *testing.T) {
	const job = `
name: shadow
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
computed:
  - {name: before, expr: "amount * 2"}
  - {name: amount, expr: "amount + 1"}
  - {name: label, expr: "CASE WHEN amount > 10 THEN 'big' ELSE 'small' END"}
  - {name: after, expr: "amount * 10"}
where: "amount > 5"
key: [label]
window: {type: tumbling, size: 10s}
aggregate: [{name: b, fn: collect, field: before}, {name: a, fn: collect, field: after}, {name: n, fn: first, field: note}]
sinks: {results: {type: jsonl, path: out.jsonl}}
`
	p, err := spec.Parse([]byte(job))
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]string{
		4:  "", // 4 + 1 is not > 5: dropped
		5:  `"\"small\"" "10" "60" "\"n5\""`,
		12: `"\"big\"" "24" "130" "\"n12\""`,
	}
	for _, rows := range []bool{false, true} {
		d := NewDecoder(p, clock.NewFake(testNow))
		d.Rows = rows
		if d.nPre != 2 {
			t.Errorf("%d computed fields before the where, want 2 (before, amount)", d.nPre)
		}
		for amount, w := range want {
			r, err := d.Decode(fileio.Line{Kind: fileio.Data, No: 1, Text: fmt.Appendf(nil, `{"amount":%d,"ts":1780272000000,"note":"n%d"}`, amount, amount)})
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if !r.Filtered {
				got = fmt.Sprintf("%q", r.Key)
				for _, v := range r.vals {
					got += fmt.Sprintf(" %q", v.raw)
				}
			}
			if got != w {
				t.Errorf("rows %v, amount %d: %s, want %s", rows, amount, got, w)
			}
		}
	}
}

// TestEmptyRecord: a record without a value (a Kafka tombstone, an empty
// message) is a dead letter that says so, not a JSON parser's error.
func TestEmptyRecord(t *testing.T) {
	p, err := spec.Parse([]byte(`
name: empty
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
key: [user]
window: {type: tumbling, size: 10s}
aggregate: [{name: n, fn: count}]
sinks: {results: {type: jsonl, path: out.jsonl}}
`))
	if err != nil {
		t.Fatal(err)
	}
	d := NewDecoder(p, clock.Real{})
	for _, text := range [][]byte{nil, {}} {
		_, err := d.Decode(fileio.Line{Kind: fileio.Data, No: 1, Text: text, Unchecked: true})
		if err == nil || !strings.Contains(err.Error(), "json_malformed") || !strings.Contains(err.Error(), "tombstone") {
			t.Errorf("%q: %v", text, err)
		}
	}
}
