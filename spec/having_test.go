package spec

import (
	"strings"
	"testing"
)

// TestHavingChecked: a having compiles over the key fields and the
// aggregates, and is refused with the reason for a name it cannot read
// and for a window that may fire more than once.
func TestHavingChecked(t *testing.T) {
	for _, c := range []struct{ extra, want string }{
		{"having: n > 2 AND k <> 'x'\n", ""},
		{"having: amount > 2\n", "having: column 1: amount is neither a key field, an aggregate nor a window bound; name one of k, n, window_start, window_end, window_time"},
		{"having: n >\n", "having: column"},
		{"having: n > 2\nallowed_lateness: 1m\n", "a late firing with allowed lateness could not take back"},
		{"having: n > 2\ntrigger: {type: continuous, interval: 10s}\n", "may fire a window more than once"},
	} {
		p, err := Parse([]byte(checkJob + c.extra))
		switch {
		case c.want == "" && (err != nil || p.Having != "n > 2 AND k <> 'x'" || p.Graph.Nodes[3].Op.(*WindowOp).Having != p.Having):
			t.Errorf("%q: %v", c.extra, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: %v, want %q", c.extra, err, c.want)
		}
	}
}

// TestColumnExprChecked: a results column's expression compiles over the
// key fields and aggregates, takes no from, and a time format (of the
// expression's epoch milliseconds) only if it is one.
func TestColumnExprChecked(t *testing.T) {
	for _, c := range []struct{ cols, want string }{
		{"[{name: k}, {name: twice, expr: n * 2}]", ""},
		{"[{name: x, expr: amount * 2}]", "columns[0].expr: column 1: amount is neither a key field, an aggregate nor a window bound"},
		{"[{name: x, expr: n * 2, from: n}]", "a column has from, or expr"},
		{"[{name: x, expr: n * 2, time: timestamp}]", ""},
		{"[{name: x, expr: n * 2, time: iso}]", `columns[0].time: "iso" is not a time format`},
		{"[{name: x, expr: 'n +'}]", "columns[0].expr: column"},
	} {
		_, err := Parse([]byte(checkJob + "sinks: {results: {type: jsonl, path: o.jsonl, columns: " + c.cols + "}}\n"))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.cols, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.cols, err, c.want)
		}
	}
}
