package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// keyJob sums amount by k in 10 s windows; %s is the results sink.
const keyJob = `
name: keys
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
key: [k]
window: {type: tumbling, size: 10s}
aggregate:
  - {name: n, fn: count}
  - {name: total, fn: sum, field: amount}
sinks:
  results: %s
  dead_letter: {type: jsonl, path: dead.jsonl}
`

// resultLines returns a jsonl results file's lines, sorted.
func resultLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	slices.Sort(lines)
	return lines
}

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
	dir, sum := runSpec(t, fmt.Sprintf(keyJob, "{type: jsonl, path: out.jsonl}"), map[string]string{"in.jsonl": in}, RunOptions{Deterministic: true})
	if sum.Get("accepted") != 7 {
		t.Fatalf("accepted %d of 7", sum.Get("accepted"))
	}
	got := resultLines(t, filepath.Join(dir, "out.jsonl"))
	want := []string{
		`{"k":[1000000,{"x":"s","y":1}],"window_start":1780272000000,"window_end":1780272010000,"firing":"on_time","pane":0,"watermark":9223372036854775807,"n":2,"total":48}`,
		`{"k":{"a":1,"b":2},"window_start":1780272000000,"window_end":1780272010000,"firing":"on_time","pane":0,"watermark":9223372036854775807,"n":1,"total":64}`,
		`{"k":{"a":2,"b":1},"window_start":1780272000000,"window_end":1780272010000,"firing":"on_time","pane":0,"watermark":9223372036854775807,"n":4,"total":15}`,
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
	dir, sum := runSpec(t, fmt.Sprintf(keyJob, "{type: jsonl, path: out.jsonl}"), map[string]string{"in.jsonl": in}, RunOptions{Deterministic: true})
	if sum.Get("accepted") != 2 {
		t.Fatalf("accepted %d of 2", sum.Get("accepted"))
	}
	got := resultLines(t, filepath.Join(dir, "out.jsonl"))
	want := []string{
		`{"k":"b","window_start":1780272020000,"window_end":1780272030000,"firing":"on_time","pane":0,"watermark":9223372036854775807,"n":2,"total":5}`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("results (-want +got):\n%s", d)
	}
}
