package job

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/connector/fileio"
	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/internal/record"
	"github.com/weirstream/weir/spec"
)

// TestKeyCanonical checks that key values that are one JSON value are one
// key: objects whatever their member order (and with a repeated member,
// its last value), numbers however written, arrays of either.
func TestKeyCanonical(t *testing.T) {
	const ts = 1780272000000 // 2026-06-01, testNow
	in := fmt.Sprintf(`{"k":{"b":1,"a":2},"amount":1,"ts":%[1]d}
{"k":{"a":2,"b":1},"amount":2,"ts":%[1]d}
{"k":{"a":2.0,"b":1e0},"amount":4,"ts":%[1]d}
{"k":{"a":7,"b":1,"a":2},"amount":8,"ts":%[1]d}
{"k":[1e6,{"y":1,"x":"s"}],"amount":16,"ts":%[1]d}
{"k":[1000000.0,{"x":"s","y":1.0}],"amount":32,"ts":%[1]d}
{"k":{"a":1,"b":2},"amount":64,"ts":%[1]d}
`, ts)
	dir, sum := runSpec(t, fmt.Sprintf(jobtest.KeyJob, "{type: jsonl, path: out.jsonl}"), map[string]string{"in.jsonl": in}, RunOptions{Deterministic: true})
	if sum.Get("accepted") != 7 {
		t.Fatalf("accepted %d of 7", sum.Get("accepted"))
	}
	got := jobtest.ResultLines(t, filepath.Join(dir, "out.jsonl"))
	want := []string{
		`{"k":[1000000,{"x":"s","y":1}],"window_start":1780272000000,"window_end":1780272010000,"firing":"on_time","run":1780272000000,"pane":0,"watermark":9223372036854775807,"n":2,"total":48}`,
		`{"k":{"a":1,"b":2},"window_start":1780272000000,"window_end":1780272010000,"firing":"on_time","run":1780272000000,"pane":0,"watermark":9223372036854775807,"n":1,"total":64}`,
		`{"k":{"a":2,"b":1},"window_start":1780272000000,"window_end":1780272010000,"firing":"on_time","run":1780272000000,"pane":0,"watermark":9223372036854775807,"n":4,"total":15}`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("results (-want +got):\n%s", d)
	}
}

// TestDuplicateFields checks that a record repeating a field is read with
// the field's last value, the same way for the key, the timestamp and the
// aggregate inputs.
func TestDuplicateFields(t *testing.T) {
	const ts = 1780272000000
	in := fmt.Sprintf(`{"k":"a","k":"b","amount":1,"amount":5,"ts":%d,"ts":%d}
{"k":"b","amount":100,"amount":null,"ts":%d}
`, ts, ts+20000, ts+20000)
	dir, sum := runSpec(t, fmt.Sprintf(jobtest.KeyJob, "{type: jsonl, path: out.jsonl}"), map[string]string{"in.jsonl": in}, RunOptions{Deterministic: true})
	if sum.Get("accepted") != 2 {
		t.Fatalf("accepted %d of 2", sum.Get("accepted"))
	}
	got := jobtest.ResultLines(t, filepath.Join(dir, "out.jsonl"))
	want := []string{
		`{"k":"b","window_start":1780272020000,"window_end":1780272030000,"firing":"on_time","run":1780272000000,"pane":0,"watermark":9223372036854775807,"n":2,"total":5}`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("results (-want +got):\n%s", d)
	}
}

// TestUTF8Keys: a record that is not UTF-8 is a dead letter whatever its
// source (fastjson takes it, and canonical text would write both keys
// "\xae" and "\xff" as "\ufffd", one key); a key holding U+FFFD
// itself is a key like any other.
func TestUTF8Keys(t *testing.T) {
	p, err := spec.Parse([]byte(fmt.Sprintf(jobtest.KeyJob, "{type: jsonl, path: out.jsonl}")))
	if err != nil {
		t.Fatal(err)
	}
	d := record.NewDecoder(p, clock.NewFake(jobtest.TestNow))
	for _, c := range []struct{ line, err string }{
		{"{\"k\":\"\xae\",\"ts\":1780272000000}", "utf8_invalid: invalid UTF-8 at byte offset 6 of the record"},
		{"{\"k\":\"\xff\",\"ts\":1780272000000}", "utf8_invalid: invalid UTF-8 at byte offset 6 of the record"},
		{"{\"k\":\"\ufffd\",\"ts\":1780272000000}", ""},
	} {
		r, err := d.Decode(fileio.Line{Kind: fileio.Data, No: 1, Text: []byte(c.line), Unchecked: true})
		var got string
		if b, ok := err.(*weir.BadInput); ok {
			got = b.Reason + ": " + b.Detail
		} else if err != nil {
			t.Fatalf("%q: %v", c.line, err)
		}
		if got != c.err {
			t.Errorf("%q: got %q, want %q", c.line, got, c.err)
		}
		if err == nil && r.Key != "\"\ufffd\"" {
			t.Errorf("%q: key %q", c.line, r.Key)
		}
	}
}
