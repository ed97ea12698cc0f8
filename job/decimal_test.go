package job

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/outfmt"
	"github.com/weirstream/weir/spec"
)

// sumJob sums amount, of type typ (empty: the default), into jsonl
// results.
const sumJob = `
name: sums
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
window: {type: tumbling, size: 1m}
aggregate:
  - {name: total, fn: sum, field: amount%s}
  - {name: mean, fn: avg, field: amount%s}
  - {name: smallest, fn: min, field: amount%s}
sinks:
  results: {type: jsonl, path: results.jsonl}
`

// sumResult runs sumJob over amounts and returns its one result line, its
// summary and its warnings.
func sumResult(t *testing.T, typ string, amounts ...string) (string, Summary, []string) {
	t.Helper()
	if typ != "" {
		typ = ", type: " + typ
	}
	var in strings.Builder
	for i, a := range amounts {
		fmt.Fprintf(&in, `{"ts":%d,"amount":%s}`+"\n", 1767225600000+int64(i), a)
	}
	var warnings []string
	dir, sum := runSpec(t, fmt.Sprintf(sumJob, typ, typ, typ), map[string]string{"in.jsonl": in.String()},
		RunOptions{Deterministic: true, Warn: func(m string) { warnings = append(warnings, m) }})
	b, err := os.ReadFile(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSpace(string(b))
	_, line, _ = strings.Cut(line, `"watermark":9223372036854775807,`)
	return line, sum, warnings
}

// TestFloatType: an aggregate of type: float keeps float64 arithmetic
// (0.1 + 0.2 is 0.30000000000000004, an int64 overflow becomes a float),
// where the default is exact (0.3, the int64 overflow exact as a
// decimal).
func TestFloatType(t *testing.T) {
	for _, c := range []struct {
		typ     string
		amounts []string
		want    string
	}{
		{"float", []string{"0.1", "0.2"}, `"total":0.30000000000000004,"mean":0.15000000000000002,"smallest":0.1}`},
		{"", []string{"0.1", "0.2"}, `"total":0.3,"mean":0.150000,"smallest":0.1}`},
		{"decimal", []string{"0.10", "0.2", "1.1", "1.10"}, `"total":2.50,"mean":0.625000,"smallest":0.10}`},
		{"float", []string{"9223372036854775807", "1"}, `"total":9.223372036854776e+18,"mean":4.611686018427388e+18,"smallest":1}`},
		{"", []string{"9223372036854775807", "1"}, `"total":9223372036854775808,"mean":4611686018427387904.000000,"smallest":1}`},
	} {
		got, sum, warnings := sumResult(t, c.typ, c.amounts...)
		if got != c.want || sum.Get("decimal_overflow")+sum.Get("float_overflow") != 0 || len(warnings) != 0 {
			t.Errorf("type %q, %v: got %s %s %q, want %s", c.typ, c.amounts, got, sum.JSON(), warnings, c.want)
		}
	}
	// The type is checked, with a suggestion.
	_, err := spec.Parse([]byte(fmt.Sprintf(sumJob, ", type: flaot", "", "")))
	if err == nil || !strings.Contains(err.Error(), `aggregate[0].type: unknown value "flaot"`) || !strings.Contains(err.Error(), `did you mean "float"?`) {
		t.Fatalf("type: flaot: %v", err)
	}
	if _, err := spec.Parse([]byte(`
name: x
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
window: {type: tumbling, size: 1m}
aggregate: [{name: n, fn: count, type: float}]
`)); err == nil || !strings.Contains(err.Error(), "aggregate[0].type: count takes no type") {
		t.Fatalf("count with a type: %v", err)
	}
	// string is min's and max's alone.
	_, err = spec.Parse([]byte(fmt.Sprintf(sumJob, ", type: string", "", "")))
	if err == nil || !strings.Contains(err.Error(), "aggregate[0].type: string is min's and max's") {
		t.Fatalf("sum of type string: %v", err)
	}
	if _, err := spec.Parse([]byte(fmt.Sprintf(sumJob, "", "", ", type: string"))); err != nil {
		t.Fatalf("min of type string: %v", err)
	}
}

// TestSumOverflow: a sum beyond what it can hold is counted and warned
// about, never a silent null: two values of 1e308 (beyond 38 digits, so
// float64 from the start) overflow float64 (float_overflow; the sum is
// written as null, as JSON has no infinity); a decimal sum beyond 38
// digits, or an input beyond them, falls back to float64
// (decimal_overflow).
func TestSumOverflow(t *testing.T) {
	nines := strings.Repeat("9", 38)
	for _, c := range []struct {
		typ     string
		amounts []string
		want    string
		counter string
	}{
		{"float", []string{"1e308", "1e308"}, `"total":null,"mean":null,"smallest":1e+308}`, "float_overflow"},
		{"", []string{"1e308", "1e308"}, `"total":null,"mean":null,"smallest":1e+308}`, "float_overflow"},
		{"", []string{nines, "1"}, `"total":1e+38,"mean":5e+37,"smallest":1}`, "decimal_overflow"},
		{"", []string{"0." + nines + "12", "1"}, `"total":2,"mean":1,"smallest":1}`, "decimal_overflow"},
	} {
		got, sum, warnings := sumResult(t, c.typ, c.amounts...)
		if got != c.want {
			t.Errorf("type %q, %v: got %s, want %s", c.typ, c.amounts, got, c.want)
		}
		// One result, two aggregates (total and mean) overflowed.
		if sum.Get(c.counter) != 2 || len(warnings) != 2 || !strings.Contains(warnings[0], `aggregate "total" (sum of amount): `+c.counter) {
			t.Errorf("type %q, %v: summary %s, warnings %q", c.typ, c.amounts, sum.JSON(), warnings)
		}
	}
}

// TestDecimalTypeHash: type: decimal is the default, so a spec that says
// it has the hash (which ledger entries carry) of one that does not.
func TestDecimalTypeHash(t *testing.T) {
	hash := func(typ string) string {
		p, err := spec.Parse([]byte(fmt.Sprintf(sumJob, typ, "", "")))
		if err != nil {
			t.Fatal(err)
		}
		return outfmt.SpecHash(p)
	}
	if a, b, c := hash(""), hash(", type: decimal"), hash(", type: float"); a != b || a == c {
		t.Fatalf("spec hashes: default %s, decimal %s, float %s", a, b, c)
	}
}

// TestNumbersInStrings: with source.numbers_in_strings, an amount sent as
// a JSON string holding a number ("12.50") is that number, exactly;
// without it, and for a string that holds no JSON number, the record is
// a dead letter (value_not_number).
func TestNumbersInStrings(t *testing.T) {
	in := `{"ts":1767225600000,"amount":"12.50"}
{"ts":1767225600001,"amount":"0.25"}
{"ts":1767225600002,"amount":1}
{"ts":1767225600003,"amount":"12,50"}
{"ts":1767225600004,"amount":" 3"}
{"ts":1767225600005,"amount":"2024-01-05"}
{"ts":1767225600006,"amount":"1.2.3"}
{"ts":1767225600007,"amount":"nan"}
`
	for _, c := range []struct {
		option string
		want   string
		dead   int64
	}{
		{"", `"total":1,"mean":1,"smallest":1`, 7},
		{"\n  numbers_in_strings: true", `"total":13.75,"mean":4.583333,"smallest":0.25`, 5},
	} {
		job := strings.Replace(fmt.Sprintf(sumJob, "", "", ""), "source: {type: file, path: in.jsonl}", "source:\n  type: file\n  path: in.jsonl"+c.option, 1)
		dir, sum := runSpec(t, job, map[string]string{"in.jsonl": in}, RunOptions{Deterministic: true})
		b, err := os.ReadFile(filepath.Join(dir, "results.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), c.want) || sum.Get("dead_letter") != c.dead || sum.Get("dead_letter_value_not_number") != c.dead {
			t.Errorf("numbers_in_strings %q: %s, summary %s; want %s and %d dead letters", c.option, b, sum.JSON(), c.want, c.dead)
		}
	}
}
