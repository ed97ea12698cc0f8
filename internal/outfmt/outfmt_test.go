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
		got := string(AppendResult(nil, p, cols, 7, c.r(r)))
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
	if n := testing.AllocsPerRun(100, func() { b = AppendResult(b[:0], p, cols, 1, r) }); n != 0 {
		t.Errorf("%v allocations per result", n)
	}
}
