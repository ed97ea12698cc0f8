package outfmt

import (
	"testing"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/record"
	"github.com/weirstream/weir/spec"
	"github.com/weirstream/weir/window"
)

// TestColumns: a results sink's columns render a result in their order,
// under their names, times as Flink's JSON format writes them, and read
// back to the same instants.
func TestColumns(t *testing.T) {
	p := &spec.Plan{Key: []string{"user", "region"}, Aggregates: []spec.Aggregate{{Name: "n", Fn: "count"}, {Name: "total", Fn: "sum"}}}
	cols := []spec.Column{{Name: "r", From: "region"}, {Name: "ws", From: "window_start", Time: "timestamp"}, {Name: "we", From: "window_end"},
		{Name: "wt", From: "window_time", Time: "timestamp_ltz"}, {Name: "total", From: "total"}, {Name: "u", From: "user"}, {Name: "kind", From: "firing"},
		{Name: "run", From: "run"}, {Name: "pane", From: "pane"}, {Name: "wm", From: "watermark", Time: "timestamp"}, {Name: "n", From: "n"}}
	r := window.Result[string, []byte]{Key: `"ann"` + record.KeySep + `"eu"`, Window: window.Window{Start: 1767225600000, End: 1767225660000},
		Firing: window.OnTime, Pane: 2, Watermark: 1767225660123, Value: []byte("3\x0012.50\x00")}
	for _, c := range []struct {
		name string
		r    func(window.Result[string, []byte]) window.Result[string, []byte]
		want string
	}{
		{"on time", func(r window.Result[string, []byte]) window.Result[string, []byte] { return r },
			`{"r":"eu","ws":"2026-01-01 00:00:00.000","we":1767225660000,"wt":"2026-01-01 00:00:59.999Z","total":12.50,"u":"ann","kind":"on_time","run":7,"pane":2,"wm":"2026-01-01 00:01:00.123","n":3}`},
		{"retraction, end of input", func(r window.Result[string, []byte]) window.Result[string, []byte] {
			r.Firing, r.Value, r.Watermark = window.Retract, nil, etime.MaxTime
			return r
		}, `{"r":"eu","ws":"2026-01-01 00:00:00.000","we":1767225660000,"wt":"2026-01-01 00:00:59.999Z","total":null,"u":"ann","kind":"retract","run":7,"pane":2,"wm":null,"n":null}`},
		{"global window", func(r window.Result[string, []byte]) window.Result[string, []byte] {
			r.Window = window.Global
			return r
		}, `{"r":"eu","ws":null,"we":null,"wt":null,"total":12.50,"u":"ann","kind":"on_time","run":7,"pane":2,"wm":"2026-01-01 00:01:00.123","n":3}`},
	} {
		got := string(AppendResult(nil, p, cols, nil, 7, c.r(r)))
		if got != c.want {
			t.Errorf("%s:\ngot  %s\nwant %s", c.name, got, c.want)
		}
	}
	for _, c := range []struct {
		raw, format string
		want        int64
	}{{`"2026-01-01 00:00:59.999Z"`, "timestamp_ltz", 1767225659999}, {`"2026-01-01 00:01:00.123"`, "timestamp", 1767225660123}, {"1767225660000", "ms", 1767225660000}} {
		if got, ok := ParseTime([]byte(c.raw), c.format); !ok || got != c.want {
			t.Errorf("ParseTime(%s, %s) = %d, %v; want %d", c.raw, c.format, got, ok, c.want)
		}
	}
	if _, ok := ParseTime([]byte(`"yesterday"`), "timestamp"); ok {
		t.Error("ParseTime read a time from yesterday")
	}
}

// TestColumnsAllocs: rendering columns allocates nothing per result.
func TestColumnsAllocs(t *testing.T) {
	p := &spec.Plan{Key: []string{"user"}, Aggregates: []spec.Aggregate{{Name: "n", Fn: "count"}}}
	cols := []spec.Column{{Name: "u", From: "user"}, {Name: "ws", From: "window_start", Time: "timestamp"}, {Name: "n", From: "n"}, {Name: "pane", From: "pane"}}
	r := window.Result[string, []byte]{Key: `"ann"`, Window: window.Window{Start: 0, End: 60000}, Firing: window.OnTime, Value: []byte("3\x00")}
	b := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { b = AppendResult(b[:0], p, cols, nil, 1, r) }); n != 0 {
		t.Errorf("%v allocations per result", n)
	}
}

// TestJavaFloat: a DOUBLE or FLOAT column is written as Java's
// Double.toString and Float.toString write it (Flink's JSON format), the
// expected texts being Java's own (JDK 19 and later: the shortest
// digits).
func TestJavaFloat(t *testing.T) {
	for _, c := range []struct{ kind, in, want string }{
		{"double", "7", "7.0"},
		{"double", "-7", "-7.0"},
		{"double", "0", "0.0"},
		{"double", "-0.0", "-0.0"},
		{"double", "0.001", "0.001"},
		{"double", "0.0001", "1.0E-4"},
		{"double", "0.00012345", "1.2345E-4"},
		{"double", "1234567", "1234567.0"},
		{"double", "9999999.5", "9999999.5"},
		{"double", "1e7", "1.0E7"},
		{"double", "2.953724091e+07", "2.953724091E7"},
		{"double", "10.436666666666666", "10.436666666666666"},
		{"double", "0.1", "0.1"},
		{"double", "123.456", "123.456"},
		{"double", "1e300", "1.0E300"},
		{"double", "5e-324", "4.9E-324"},
		{"double", "1.7976931348623157e308", "1.7976931348623157E308"},
		{"float", "0.1", "0.1"},
		{"float", "3.4028235e38", "3.4028235E38"},
		{"float", "16777216", "1.6777216E7"},
		{"double", "null", "null"},
		{"double", `"x"`, `"x"`},
	} {
		b := []byte(`{"a":`)
		got := string(javaFloat(append(b, c.in...), len(b), c.kind)[len(b):])
		if got != c.want {
			t.Errorf("%s %s: %s, want %s", c.kind, c.in, got, c.want)
		}
	}
}

// TestSpecHashReadsWhatAggregatesRead: a changed computed field, where or
// decimal field changes the hash (a backfill would add the new formula's
// values to accumulators of the old one); a plan without them keeps the
// hash it had before they counted.
func TestSpecHashReadsWhatAggregatesRead(t *testing.T) {
	base := func() *spec.Plan {
		return &spec.Plan{Time: spec.EventTime, TSField: "ts", Key: []string{"u"}, Aggregates: []spec.Aggregate{{Name: "total", Fn: "sum", Field: "amount"}}}
	}
	const old = "0e852018" // base's hash before computed fields, wheres and decimals counted
	if h := SpecHash(base()); h != old {
		t.Errorf("a plan without computed fields, where or decimals: hash %s, want %s as before", h, old)
	}
	seen := map[string]string{SpecHash(base()): "base"}
	for name, mod := range map[string]func(p *spec.Plan){
		"computed":         func(p *spec.Plan) { p.Computed = []spec.ComputedField{{Name: "amount", Expr: "p * q"}} },
		"computed changed": func(p *spec.Plan) { p.Computed = []spec.ComputedField{{Name: "amount", Expr: "p * q * 100"}} },
		"where":            func(p *spec.Plan) { p.Where = "amount > 1" },
		"decimals":         func(p *spec.Plan) { p.Decimals = []spec.DecimalField{{Field: "amount", Scale: 2}} },
	} {
		p := base()
		mod(p)
		if l := LegacySpecHash(p); l != old {
			t.Errorf("%s: legacy hash %s, want %s, the hash weir gave it before", name, l, old)
		}
		h := SpecHash(p)
		if other, ok := seen[h]; ok {
			t.Errorf("%s: hash %s, the same as %s's", name, h, other)
		}
		seen[h] = name
	}
}

// TestSpecHashTimeZone: a job's time zone moves its windows, so ledger
// entries of another zone's run are another spec's (a backfill refuses
// them unless told), and no hash of weir before time zones stands for
// a zoned job's; a job without a zone keeps its hash.
func TestSpecHashTimeZone(t *testing.T) {
	p := &spec.Plan{Time: spec.EventTime, TSField: "ts", Key: []string{"u"}, Aggregates: []spec.Aggregate{{Name: "n", Fn: "count"}}}
	utc := SpecHash(p)
	p.Zone = 8 * 3_600_000
	shanghai := SpecHash(p)
	p.Zone = 5*3_600_000 + 1_800_000
	kolkata := SpecHash(p)
	if utc == shanghai || shanghai == kolkata || utc == kolkata {
		t.Errorf("hashes of UTC, +08:00 and +05:30: %s %s %s, want three", utc, shanghai, kolkata)
	}
	if l := LegacySpecHash(p); l != kolkata {
		t.Errorf("legacy hash of a zoned job %s, want its own hash %s", l, kolkata)
	}
	p.Zone = 0
	if h := SpecHash(p); h != utc {
		t.Errorf("without a zone: %s, want %s", h, utc)
	}
}
