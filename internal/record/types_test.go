package record

import (
	"errors"
	"fmt"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/connector/fileio"
	"github.com/weirstream/weir/spec"
)

// TestTypedFields: source.types reads each value into its field's type
// as Flink's JSON format does (JsonToRowDataConverters), in a nested
// object too, and refuses what the type cannot take with a reason.
func TestTypedFields(t *testing.T) {
	const job = `
name: types
source:
  type: file
  path: in.jsonl
  types: [{field: v, type: %s}]
watermark: {max_out_of_orderness: 1s}
key: [v]
window: {type: tumbling, size: 10s}
aggregate: [{name: n, fn: count}]
sinks: {results: {type: jsonl, path: out.jsonl}}
`
	for _, c := range []struct {
		typ, in, key string // key "": a dead letter of reason
		reason       string
	}{
		{"bigint", `12`, `12`, ""},
		{"bigint", `"12"`, `12`, ""},
		{"bigint", `" -12 "`, `-12`, ""},
		{"bigint", `12.0`, `12`, ""},
		{"bigint", `12.9`, `12`, ""},
		{"bigint", `-12.9`, `-12`, ""},
		{"bigint", `1e3`, `1000`, ""},
		{"bigint", `9223372036854775807`, `9223372036854775807`, ""},
		{"bigint", `9223372036854775808`, "", "value_out_of_range"},
		{"bigint", `1e19`, "", "value_out_of_range"},
		{"bigint", `"12.5"`, "", "value_not_number"},
		{"bigint", `"x"`, "", "value_not_number"},
		{"bigint", `true`, "", "value_not_number"},
		{"bigint", `null`, "", "key_missing"}, // null stays null (and a key may not be)
		{"int", `2147483647`, `2147483647`, ""},
		{"int", `2147483648`, "", "value_out_of_range"},
		{"int", `"-2147483649"`, "", "value_out_of_range"},
		{"smallint", `32767`, `32767`, ""},
		{"smallint", `32768`, "", "value_out_of_range"},
		{"smallint", `1.5`, "", "value_not_number"},
		{"tinyint", `"-128"`, `-128`, ""},
		{"tinyint", `128`, "", "value_out_of_range"},
		{"boolean", `true`, `true`, ""},
		{"boolean", `" True "`, `true`, ""},
		{"boolean", `"yes"`, `false`, ""},
		{"boolean", `1`, `false`, ""},
		{"string", `"a"`, `"a"`, ""},
		{"string", `123`, `"123"`, ""},
		{"string", `12.50`, `"12.50"`, ""},
		{"string", `false`, `"false"`, ""},
		{"string", `{"b":1,"a":[2]}`, `"{\"b\":1,\"a\":[2]}"`, ""}, // in its order, as Flink
		{"string", `{ "b" : 1.50 , "a":[ 2 ,"x"] }`, `"{\"b\":1.50,\"a\":[2,\"x\"]}"`, ""},
		{"double", `3`, `3`, ""},
		{"double", `"3.0"`, `3`, ""},
		{"double", `" 2.5e1 "`, `25`, ""},
		{"double", `"x"`, "", "value_not_number"},
		{"double", `"1e999"`, "", "value_out_of_range"},
		{"float", `"0.5"`, `0.5`, ""},
	} {
		p, err := spec.Parse(fmt.Appendf(nil, job, c.typ))
		if err != nil {
			t.Fatal(err)
		}
		d := NewDecoder(p, clock.NewFake(testNow))
		r, err := d.Decode(fileio.Line{Kind: fileio.Data, No: 1, Text: fmt.Appendf(nil, `{"v":%s,"ts":1780272000000}`, c.in)})
		var bi *weir.BadInput
		switch {
		case c.reason != "":
			if !errors.As(err, &bi) || bi.Reason != c.reason {
				t.Errorf("%s %s: %v (key %q), want a dead letter %s", c.typ, c.in, err, r.Key, c.reason)
			}
		case err != nil:
			t.Errorf("%s %s: %v, want the key %s", c.typ, c.in, err, c.key)
		case r.Key != c.key:
			t.Errorf("%s %s: the key %s, want %s", c.typ, c.in, r.Key, c.key)
		}
	}
	// A field of a nested object, read in place.
	p, err := spec.Parse([]byte(`
name: nested
source: {type: file, path: in.jsonl, types: [{field: o.v, type: bigint}]}
watermark: {max_out_of_orderness: 1s}
key: [o]
window: {type: tumbling, size: 10s}
aggregate: [{name: n, fn: count}]
sinks: {results: {type: jsonl, path: out.jsonl}}
`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewDecoder(p, clock.NewFake(testNow)).Decode(fileio.Line{Kind: fileio.Data, No: 1, Text: []byte(`{"o":{"v":"7","w":1},"ts":1780272000000}`)})
	if err != nil || r.Key != `{"v":7,"w":1}` {
		t.Errorf("a nested field: the key %s (%v), want {\"v\":7,\"w\":1}", r.Key, err)
	}
}
