package spec

import (
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"
)

const fullYAML = `# every field of a spec
name: orders-per-user
time: event
source:
  type: generator
  path: in.jsonl
  format: jsonl
  channels: 4
  final_watermark: false
  timestamp:
    field: ts
    unit: ms
    checks: true
    max_future: 1h
  generator:
    records: 100000
    rate: 2500.5
    keys: 50
    duration: 10m
    start: 2026-01-01T00:00:00Z
    disorder:
      - {share: 0.9, min: 0, max: 250ms}
      - share: 0.1
        min: 1s
        max: 1m30s
    bad: 0.01
    seed: 18446744073709551615
watermark:
  type: bounded_out_of_orderness
  max_out_of_orderness: 5s
  idle_timeout: 30s
  emit: periodic
  interval: 200
  heartbeat: 1.5s
key: [user_id, region]
window:
  type: sliding
  size: 10m
  slide: 1m
  gap: 2d
  offset: -1h
allowed_lateness: 9223372036854775807
trigger:
  type: purging
  nested:
    type: continuous
    interval: 1h30m
    count: 100
aggregate:
  - {name: orders, fn: count}
  - name: revenue
    fn: sum
    field: amount
sinks:
  results: {type: sqlite, path: out.db, table: results}
  late: {type: jsonl, path: late.jsonl}
  late_partial: {type: stdout}
  dead_letter:
    type: jsonl
    path: dead.jsonl
`

const fullJSON = `{
	"name": "orders-per-user",
	"time": "event",
	"source": {
		"type": "generator", "path": "in.jsonl", "format": "jsonl", "channels": 4,
		"final_watermark": false,
		"timestamp": {"field": "ts", "unit": "ms", "checks": true, "max_future": 3600000},
		"generator": {
			"records": 100000, "rate": 2500.5, "keys": 50, "duration": "10m",
			"start": "2026-01-01T00:00:00Z",
			"disorder": [{"share": 0.9, "min": "0ms", "max": 250}, {"share": 0.1, "min": "1s", "max": "90s"}],
			"bad": 0.01, "seed": 18446744073709551615
		}
	},
	"watermark": {
		"type": "bounded_out_of_orderness", "max_out_of_orderness": "5s",
		"idle_timeout": "30s", "emit": "periodic", "interval": "200ms", "heartbeat": 1500
	},
	"key": ["user_id", "region"],
	"window": {"type": "sliding", "size": "10m", "slide": "1m", "gap": "48h", "offset": "-60m"},
	"allowed_lateness": "9223372036854775807ms",
	"trigger": {"type": "purging", "nested": {"type": "continuous", "interval": "1.5h", "count": 100}},
	"aggregate": [{"name": "orders", "fn": "count"}, {"name": "revenue", "fn": "sum", "field": "amount"}],
	"sinks": {
		"results": {"type": "sqlite", "path": "out.db", "table": "results"},
		"late": {"type": "jsonl", "path": "late.jsonl"},
		"late_partial": {"type": "stdout"},
		"dead_letter": {"type": "jsonl", "path": "dead.jsonl"}
	}
}`

func dur(d Duration) *Duration { return &d }
func boolp(b bool) *bool       { return &b }

func fullSpec() *Spec {
	return &Spec{
		Name: "orders-per-user",
		Time: "event",
		Source: Source{
			Type: "generator", Path: "in.jsonl", Format: "jsonl", Channels: 4,
			FinalWatermark: boolp(false),
			Timestamp:      Timestamp{Field: "ts", Unit: "ms", Checks: boolp(true), MaxFuture: dur(3_600_000)},
			Generator: &Generator{
				Records: 100000, Rate: 2500.5, Keys: 50, Duration: dur(600_000),
				Start: "2026-01-01T00:00:00Z",
				Disorder: []DelayBand{
					{Share: 0.9, Min: dur(0), Max: dur(250)},
					{Share: 0.1, Min: dur(1000), Max: dur(90_000)},
				},
				Bad: 0.01, Seed: math.MaxUint64,
			},
		},
		Watermark: Watermark{
			Type: "bounded_out_of_orderness", MaxOutOfOrderness: dur(5000),
			IdleTimeout: dur(30_000), Emit: "periodic", Interval: dur(200), Heartbeat: dur(1500),
		},
		Key:             []string{"user_id", "region"},
		Window:          Window{Type: "sliding", Size: dur(600_000), Slide: dur(60_000), Gap: dur(172_800_000), Offset: dur(-3_600_000)},
		AllowedLateness: dur(math.MaxInt64),
		Trigger:         &Trigger{Type: "purging", Nested: &Trigger{Type: "continuous", Interval: dur(5_400_000), Count: 100}},
		Aggregate:       []Aggregate{{Name: "orders", Fn: "count"}, {Name: "revenue", Fn: "sum", Field: "amount"}},
		Sinks: Sinks{
			Results:     SinkList{{Type: "sqlite", Path: "out.db", Table: "results"}},
			Late:        &Sink{Type: "jsonl", Path: "late.jsonl"},
			LatePartial: &Sink{Type: "stdout"},
			DeadLetter:  &Sink{Type: "jsonl", Path: "dead.jsonl"},
		},
	}
}

func TestLoadOK(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     *Spec
	}{
		{"full yaml", fullYAML, fullSpec()},
		{"full json", fullJSON, fullSpec()},
		{"minimal", "name: x", &Spec{Name: "x"}},
		{"scalar as list", "key: user_id", &Spec{Key: []string{"user_id"}}},
		{"nulls", "name: ~\ntrigger: null\nkey:\nwindow:\n  size:\nsource: {channels: null, final_watermark: ~}",
			&Spec{}},
		{"any scalar is a string", "name: 12\ntime: true\nkey: [1, 2.5, null]",
			&Spec{Name: "12", Time: "true", Key: []string{"1", "2.5", ""}}},
		{"anchors and aliases", "sinks:\n  late: &s {type: jsonl, path: l.jsonl}\n  dead_letter: *s\nwindow: {size: &d 5m, slide: *d}",
			&Spec{
				Sinks:  Sinks{Late: &Sink{Type: "jsonl", Path: "l.jsonl"}, DeadLetter: &Sink{Type: "jsonl", Path: "l.jsonl"}},
				Window: Window{Size: dur(300_000), Slide: dur(300_000)},
			}},
		{"max lateness", "allowed_lateness: 9223372036854775807", &Spec{AllowedLateness: dur(math.MaxInt64)}},
		{"lateness saturates", "allowed_lateness: 99999999999999999999", &Spec{AllowedLateness: dur(math.MaxInt64)}},
		{"negative lateness saturates", "allowed_lateness: -99999999999999999999", &Spec{AllowedLateness: dur(math.MinInt64)}},
		{"largest whole days", `allowed_lateness: "106751991167d"`, &Spec{AllowedLateness: dur(106751991167 * 86_400_000)}},
		{"days saturate", `allowed_lateness: 106751991168d`, &Spec{AllowedLateness: dur(math.MaxInt64)}},
		{"huge days saturate", `allowed_lateness: 99999999999999999999999999d`, &Spec{AllowedLateness: dur(math.MaxInt64)}},
		{"negative durations", "window: {offset: -90s, gap: -1500, size: -0.5s}",
			&Spec{Window: Window{Offset: dur(-90_000), Gap: dur(-1500), Size: dur(-500)}}},
		{"trailing empty document", "name: x\n---\n", &Spec{Name: "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Load([]byte(tc.in))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			// (Warnings: TestBareNumberWarning.)
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(Spec{}, "Warnings")); diff != "" {
				t.Errorf("Load (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBareNumberWarning: a bare number below 1000 for a duration is read
// as milliseconds and warned about with its path, line and the fix; one
// of 1000 or more, 0, or a duration with its unit is not.
func TestBareNumberWarning(t *testing.T) {
	s, err := Load([]byte("allowed_lateness: 10\nwatermark: {max_out_of_orderness: 5000, interval: 200ms}\nwindow: {size: 0}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := "allowed_lateness: the bare number 10 is read as 10 milliseconds; write 10ms to say so, or 10s if you meant seconds (line 1)"
	if len(s.Warnings) != 1 || s.Warnings[0].Error() != want {
		t.Fatalf("warnings %v, want one: %s", s.Warnings, want)
	}
}

const durFix = `; use a duration such as "250ms", "10m" or "1h30m", or an integer number of milliseconds`

func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", "", "the spec is empty"},
		{"only a comment", "# nothing\n", "the spec is empty"},
		{"null document", "~\n", "the spec is empty"},
		{"not a mapping", "- name: x\n", "the spec must be a mapping of fields such as name, source, window (line 1)"},
		{"syntax error", "name: x\nwindow:\n  type: [tumbling\n  size: 1m\n",
			"not valid YAML: did not find expected ',' or ']' (line 3)"},
		{"tab indentation", "window:\n\tsize: 1m\n", "not valid YAML: found character that cannot start any token (line 2)"},
		{"second document", "name: x\n---\nname: y\n",
			`the spec has a second YAML document; remove the "---" line and what follows, or merge the documents (line 2)`},
		{"did you mean", "sinks:\n  reslts: {type: stdout}\n",
			`sinks.reslts: unknown field "reslts"; did you mean "results"? (line 2)`},
		{"did you mean case", "Name: x\n", `Name: unknown field "Name"; did you mean "name"? (line 1)`},
		{"did you mean in list", "aggregate:\n  - {name: n, fm: count}\n",
			`aggregate[0].fm: unknown field "fm"; did you mean "fn"? (line 2)`},
		{"no close field", "window:\n  type: tumbling\n  length: 5m\n",
			`window.length: unknown field "length"; known fields: gap, offset, size, slide, step, type (line 3)`},
		{"mapping for string", "name: {first: x}\n", "name: want a string, got a mapping (line 1)"},
		{"list for string", "window:\n  type:\n    - tumbling\n", "window.type: want a string, got a list (line 3)"},
		{"scalar for struct", "window: 5m\n",
			`window: want a mapping of fields, got "5m"; known fields: gap, offset, size, slide, step, type (line 1)`},
		{"mapping for list", "aggregate: {name: n}\n",
			`aggregate: want a list, got a mapping; put each item on its own line starting with "- " (line 1)`},
		{"bad int", "source:\n  channels: four\n",
			`source.channels: want a whole number, got "four"; use a whole number such as 4 (line 2)`},
		{"float int", "source: {channels: 1.5}",
			`source.channels: want a whole number, got "1.5"; use a whole number such as 4 (line 1)`},
		{"hex int", "source: {channels: 0x10}",
			`source.channels: want a whole number, got "0x10"; use a whole number such as 4 (line 1)`},
		{"quoted int", `source: {channels: "4"}`,
			`source.channels: want a whole number, got "4"; use a whole number such as 4 (line 1)`},
		{"int out of range", "trigger: {count: 9223372036854775808}",
			`trigger.count: 9223372036854775808 is out of range; use a whole number such as 4 (line 1)`},
		{"negative uint", "source: {generator: {seed: -1}}",
			`source.generator.seed: want a whole number of 0 or more, got "-1"; use a whole number such as 4 (line 1)`},
		{"bad float", "source: {generator: {rate: fast}}",
			`source.generator.rate: want a number, got "fast"; use a number such as 0.5 (line 1)`},
		{"bad bool", "source: {final_watermark: yes}",
			`source.final_watermark: want true or false, got "yes" (line 1)`},
		{"duration unit", "window: {size: 5 fortnights}",
			`window.size: bad duration "5 fortnights": unknown unit "fortnights"` + durFix + " (line 1)"},
		{"duration no unit", `window: {size: "250"}`,
			`window.size: bad duration "250": missing unit after 250` + durFix + " (line 1)"},
		{"duration no number", "window: {size: ms}",
			`window.size: bad duration "ms": want a number before "ms"` + durFix + " (line 1)"},
		{"duration empty", `window: {size: ""}`,
			`window.size: bad duration "": no number` + durFix + " (line 1)"},
		{"duration float", "window: {size: 1.5}",
			`window.size: want a duration, got the number 1.5` + durFix + " (line 1)"},
		{"duration mapping", "window: {size: {m: 5}}",
			`window.size: want a duration, got a mapping` + durFix + " (line 1)"},
		{"duration microseconds", "window: {size: 250us}",
			`window.size: bad duration "250us": durations have millisecond precision` + durFix + " (line 1)"},
		{"duration nanoseconds", "window: {size: 1000000ns}",
			`window.size: bad duration "1000000ns": durations have millisecond precision` + durFix + " (line 1)"},
		{"duration sub-ms", "window: {size: 1.0005s}",
			`window.size: bad duration "1.0005s": durations have millisecond precision` + durFix + " (line 1)"},
		{"duration in list", "source:\n  generator:\n    disorder:\n      - {share: 1, max: 1x}\n",
			`source.generator.disorder[0].max: bad duration "1x": unknown unit "x"` + durFix + " (line 4)"},
		{"duplicate", "name: a\nwindow: {size: 1m}\nname: b\n",
			"name: given twice (first on line 1); keep only one (line 3)"},
		{"merge key", "base: &b {type: stdout}\nsinks:\n  results:\n    <<: *b\n",
			`base: unknown field "base"; did you mean "name"? (line 1)` + "\n" +
				`sinks.results: merge keys ("<<") are not supported; write the fields out instead (line 4)`},
		{"alias cycle", "trigger: &t {type: purging, nested: *t}\n",
			"trigger" + strings.Repeat(".nested", 32) + ": nested too deeply; a spec nests at most 64 levels; check for an alias that refers to itself (line 1)"},
		{"many errors in document order", "nmae: x\nwindow:\n  size: 10\n  slide: 1.0005s\n  type: [a]\naggregate:\n  - {name: n, fn: {}}\n  - 5\nkey: {a: b}\nnmae: y\n",
			`nmae: unknown field "nmae"; did you mean "name"? (line 1)` + "\n" +
				`window.slide: bad duration "1.0005s": durations have millisecond precision` + durFix + " (line 4)\n" +
				"window.type: want a string, got a list (line 5)\n" +
				"aggregate[0].fn: want a string, got a mapping (line 7)\n" +
				`aggregate[1]: want a mapping of fields, got "5"; known fields: field, fn, name, nulls, type, when (line 8)` + "\n" +
				"key: want a list, got a mapping; put each item on its own line starting with \"- \" (line 9)\n" +
				"nmae: given twice (first on line 1); keep only one (line 10)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Load([]byte(tc.in))
			if err == nil {
				t.Fatalf("Load = %+v, want error %q", s, tc.want)
			}
			_ = s // the partial spec Parse compiles
			var es Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("error %T %v is not a non-empty Errors", err, err)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("error\n got: %s\nwant: %s", got, tc.want)
			}
		})
	}
}

func TestLoadAliasBudget(t *testing.T) {
	// A mapping of 200 unknown fields referred to by 200 list items would
	// report 40000 errors; the walk stops at the alias budget instead.
	var b strings.Builder
	b.WriteString("x: &a {")
	for i := range 200 {
		b.WriteString("f" + strconv.Itoa(i) + ": 1, ")
	}
	b.WriteString("}\naggregate: [")
	b.WriteString(strings.Repeat("*a, ", 200))
	b.WriteString("]\n")
	_, err := Load([]byte(b.String()))
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("Load: %v", err)
	}
	if len(es) > maxAliasNodes+200 {
		t.Errorf("got %d errors, want at most %d", len(es), maxAliasNodes+200)
	}
	if !strings.Contains(err.Error(), "aliases expand to more than 10000 values; use fewer aliases") {
		t.Errorf("no alias budget error in %d errors", len(es))
	}
}

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Duration
	}{
		{"0s", 0}, {"0ms", 0}, {"-0s", 0}, {"250ms", 250}, {"1.5s", 1500}, {".5s", 500}, {"5.s", 5000},
		{"1.5000000000000000000000000000s", 1500}, {"1h30m", 5_400_000}, {"5 min", 300_000}, {"30 seconds", 30_000}, {"1 hour 30 min", 5_400_000}, {"2 days", 172_800_000}, {"250 ms", 250}, {"1.5h", 5_400_000}, {"90m", 5_400_000},
		{"2d", 172_800_000}, {"1d1h1m1s1ms", 90_061_001}, {"1s1s", 2000}, {"-1h", -3_600_000},
		{"0.001s", 1}, {"0.125d", 10_800_000}, {"000000000000000000000000000001ms", 1},
		{"9223372036854775807ms", math.MaxInt64}, {"9223372036854775808ms", math.MaxInt64},
		{"-9223372036854775808ms", math.MinInt64}, {"-9223372036854775809ms", math.MinInt64},
		{"106751991167d", 9_223_372_036_828_800_000}, {"106751991168d", math.MaxInt64},
		{"106751991167d7h12m55s807ms", math.MaxInt64}, {"106751991167d7h12m55s808ms", math.MaxInt64},
		{"-106751991167d7h12m55s808ms", math.MinInt64}, {"-106751991168d", math.MinInt64},
		{"9223372036854775807d9223372036854775807d", math.MaxInt64},
		{"1844674407370955162ms", 1844674407370955162}, {"20000000000000000000ms", math.MaxInt64},
		{"-18446744073709551617ms", math.MinInt64}, {"922337203685477580.9s", math.MaxInt64},
		{"9223372036854775.807s", math.MaxInt64}, {"-9223372036854775.808s", math.MinInt64},
		{"-9223372036854775808ms9223372036854775808ms", math.MinInt64},
	} {
		got, err := ParseDuration(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseDuration(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"", `bad duration "": no number`},
		{"-", `bad duration "-": no number`},
		{"--1s", `bad duration "--1s": want a number before "-1s"`},
		{"+1s", `bad duration "+1s": want a number before "+1s"`},
		{"10", `bad duration "10": missing unit after 10`},
		{"1.5", `bad duration "1.5": missing unit after 1.5`},
		{"1h30", `bad duration "1h30": missing unit after 30`},
		{".s", `bad duration ".s": want a number before "s"`},
		{"1y", `bad duration "1y": unknown unit "y"`},
		{"1H", `bad duration "1H": unknown unit "H"`},
		{"1s ", `bad duration "1s ": unknown unit "s "`},
		{"1..5s", `bad duration "1..5s": missing unit after 1`},
		{"250us", `bad duration "250us": durations have millisecond precision`},
		{"250µs", `bad duration "250µs": durations have millisecond precision`},
		{"1ns", `bad duration "1ns": durations have millisecond precision`},
		{"0.5ms", `bad duration "0.5ms": durations have millisecond precision`},
		{"1.0005s", `bad duration "1.0005s": durations have millisecond precision`},
		{"0.00000000000000000001d", `bad duration "0.00000000000000000001d": durations have millisecond precision`},
	} {
		got, err := ParseDuration(tc.in)
		if err == nil || err.Error() != tc.want {
			t.Errorf("ParseDuration(%q) = %d, %v; want error %q", tc.in, got, err, tc.want)
		}
	}
}

func TestDurationString(t *testing.T) {
	for _, tc := range []struct {
		d    Duration
		want string
	}{
		{0, "0s"}, {1, "1ms"}, {250, "250ms"}, {1500, "1500ms"}, {30_000, "30s"}, {600_000, "10m"},
		{5_400_000, "1h30m"}, {172_800_000, "2d"}, {90_061_001, "90061001ms"}, {90_000_000, "1d1h"}, {-250, "-250ms"},
		{-5_400_000, "-1h30m"}, {math.MaxInt64, "9223372036854775807ms"}, {math.MinInt64, "-9223372036854775808ms"},
	} {
		if got := tc.d.String(); got != tc.want {
			t.Errorf("Duration(%d).String() = %q, want %q", int64(tc.d), got, tc.want)
		}
	}
}

func checkRoundTrip(t *rapid.T, d Duration) {
	s := d.String()
	back, err := ParseDuration(s)
	if err != nil || back != d {
		t.Fatalf("ParseDuration(%q) = %d, %v; want %d", s, back, err, d)
	}
}

func TestDurationRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		checkRoundTrip(t, Duration(rapid.Int64Min(0).Draw(t, "nonneg")))
		checkRoundTrip(t, Duration(rapid.Int64Max(-1).Draw(t, "neg")))
		// Values made of whole units exercise the unit form, not just ms.
		unit := rapid.SampledFrom([]int64{1, 1000, 60_000, 3_600_000, 86_400_000}).Draw(t, "unit")
		n := rapid.Int64Range(-math.MaxInt64/unit, math.MaxInt64/unit).Draw(t, "n")
		checkRoundTrip(t, Duration(n*unit))
	})
}

// TestParseDurationSaturates compares ParseDuration with exact big-integer
// arithmetic on random sums of terms.
func TestParseDurationSaturates(t *testing.T) {
	units := map[string]int64{"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
	rapid.Check(t, func(t *rapid.T) {
		var s strings.Builder
		neg := rapid.Bool().Draw(t, "neg")
		if neg {
			s.WriteString("-")
		}
		total := new(big.Int)
		for i := range rapid.IntRange(1, 4).Draw(t, "terms") {
			digits := rapid.StringMatching(`[0-9]{1,25}`).Draw(t, "n"+strconv.Itoa(i))
			if rapid.Bool().Draw(t, "long"+strconv.Itoa(i)) { // near the int64 limits
				digits = rapid.StringMatching(`[1-9][0-9]{15,20}`).Draw(t, "long"+strconv.Itoa(i))
			}
			unit := rapid.SampledFrom([]string{"ms", "s", "m", "h", "d"}).Draw(t, "unit"+strconv.Itoa(i))
			n, _ := new(big.Int).SetString(digits, 10)
			total.Add(total, n.Mul(n, big.NewInt(units[unit])))
			s.WriteString(digits + unit)
		}
		if neg {
			total.Neg(total)
		}
		want := Duration(math.MaxInt64)
		switch {
		case total.IsInt64():
			want = Duration(total.Int64())
		case total.Sign() < 0:
			want = math.MinInt64
		}
		got, err := ParseDuration(s.String())
		if err != nil || got != want {
			t.Fatalf("ParseDuration(%q) = %d, %v; want %d", s.String(), got, err, want)
		}
	})
}

func TestParseByteSize(t *testing.T) {
	for in, want := range map[string]ByteSize{"0": 0, "1073741824": 1 << 30, "512MiB": 512 << 20, "2GB": 2e9, "1.5 kB": 1500, "200B": 200, "1 TiB": 1 << 40} {
		if got, err := ParseByteSize(in); err != nil || got != want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MB", "2 parsecs", "1e3", "-5", "1..2GB", "99999999999TB"} {
		if got, err := ParseByteSize(in); err == nil {
			t.Errorf("ParseByteSize(%q) = %d, want an error", in, got)
		}
	}
}
