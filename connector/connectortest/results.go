package connectortest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/internal/tablerow"
)

// MapSettings is connector.Settings over a map from setting names to
// values (string, int, []string or time.Duration), for opening a kind in
// a test.
type MapSettings map[string]any

func (m MapSettings) String(f string) string    { s, _ := m[f].(string); return s }
func (m MapSettings) Strings(f string) []string { s, _ := m[f].([]string); return s }
func (m MapSettings) Int(f string) int          { n, _ := m[f].(int); return n }
func (m MapSettings) Float(f string) float64 {
	switch x := m[f].(type) {
	case float64:
		return x
	case int:
		return float64(x)
	}
	return 0
}
func (m MapSettings) List(f string) []connector.Settings {
	l, _ := m[f].([]MapSettings)
	out := make([]connector.Settings, len(l))
	for i, x := range l {
		out[i] = x
	}
	return out
}
func (m MapSettings) Set(f string) bool  { _, ok := m[f]; return ok }
func (m MapSettings) Bool(f string) bool { b, _ := m[f].(bool); return b }

func (m MapSettings) Duration(f string) (time.Duration, bool) {
	d, ok := m[f].(time.Duration)
	return d, ok
}

// Results describes a results sink kind under test: a kind whose
// SinkKind.OpenResults a job spec's runner opens.
type Results struct {
	Kind connector.Kind
	// New starts a test on a fresh, empty output (a file, a table of its
	// own): the settings that open the kind on it, and read, which returns
	// the rows of job there, one per ID in any order.
	New func(t testing.TB) (settings connector.Settings, read func(t testing.TB, job string) []Rec)
}

// RunResults runs the suite of a results sink kind, opened through its
// OpenResults as a job spec's runner opens it: a key column id and one
// value column value (a count), rows of ConformanceRow's shape. The sink
// suite's upsert rules come first (RunSink); then the runner's: jobs
// share the output, Reset removes its job's rows only and says how many,
// MaxRun is the highest run among its job's rows (0 with none), and a
// job writes again after its Reset.
func RunResults(t *testing.T, r Results) {
	if r.Kind.Sink == nil || r.Kind.Sink.OpenResults == nil {
		t.Fatalf("kind %s has no OpenResults", r.Kind.Name)
	}
	open := func(t testing.TB, s connector.Settings, job string) connector.ResultsSink {
		t.Helper()
		rs, err := r.Kind.Sink.OpenResults(context.Background(), connector.ResultsOpen{Settings: s, Output: "sinks.results",
			Path: func(p string) string { return p }, Job: job, Keys: []string{"id"},
			Values: []connector.ResultColumn{{Name: "value", Fn: "count"}}, Stopping: context.Background()})
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	row := func(x Rec) connector.Row { return tablerow.ConformanceRow(x.ID, x.Run, x.Pane, x.Retract, x.Value) }
	t.Run("sink", func(t *testing.T) {
		RunSink(t, Sink[connector.Row]{Kind: Upsert, Make: row,
			New: func(t testing.TB) (func(testing.TB) connector.Sink[connector.Row], func(testing.TB) []Rec) {
				s, read := r.New(t)
				return func(t testing.TB) connector.Sink[connector.Row] { return open(t, s, "conformance") },
					func(t testing.TB) []Rec { return read(t, "conformance") }
			}})
	})
	t.Run("runs", func(t *testing.T) {
		ctx := context.Background()
		s, read := r.New(t)
		a, b := open(t, s, "a"), open(t, s, "b")
		defer a.Close()
		defer b.Close()
		maxRun := func(what string, s connector.ResultsSink, want int64) {
			t.Helper()
			if n, err := s.MaxRun(ctx); err != nil || n != want {
				t.Fatalf("%s: MaxRun = %d, %v; want %d", what, n, err, want)
			}
		}
		write := func(s connector.ResultsSink, recs ...Rec) {
			t.Helper()
			rows := make([]connector.Row, len(recs))
			for i, x := range recs {
				rows[i] = row(x)
			}
			if err := s.Write(ctx, rows); err != nil {
				t.Fatal(err)
			}
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
		rows := func(job string) string {
			if got := read(t, job); len(got) > 0 {
				return sortedRecs(got)
			}
			return ""
		}
		maxRun("an empty output", a, 0)
		write(a, Rec{ID: "x", Run: 2, Value: 1}, Rec{ID: "y", Run: 3, Pane: 1, Value: 2})
		write(b, Rec{ID: "x", Run: 7, Value: 5})
		maxRun("job a", a, 3)
		maxRun("job b", b, 7)
		if n, err := a.Reset(ctx); err != nil || n != 2 {
			t.Fatalf("Reset of job a = %d, %v; want its 2 rows", n, err)
		}
		if got := rows("a"); got != "" {
			t.Fatalf("job a after its Reset: %s", got)
		}
		if got, want := rows("b"), sortedRecs([]Rec{{ID: "x", Run: 7, Value: 5}}); got != want {
			t.Fatalf("job b after job a's Reset: %s, want %s", got, want)
		}
		maxRun("job a after its Reset", a, 0)
		maxRun("job b after job a's Reset", b, 7)
		write(a, Rec{ID: "x", Run: 1, Value: 9})
		if got, want := rows("a"), sortedRecs([]Rec{{ID: "x", Run: 1, Value: 9}}); got != want {
			t.Fatalf("job a writing after its Reset: %s, want %s", got, want)
		}
	})
}

// sortedRecs is rs by ID, for comparing outputs that keep no order.
func sortedRecs(rs []Rec) string {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b Rec) int { return cmp.Compare(a.ID, b.ID) })
	return fmt.Sprint(rs)
}

// Rows are a query's rows, as database/sql and pgx give them.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ScanRecs reads Recs from rows: each row's columns are scanned by scan
// (nil: id, run, pane and value, in that order).
func ScanRecs(t testing.TB, rows Rows, scan func(rows Rows, r *Rec) error) []Rec {
	t.Helper()
	if scan == nil {
		scan = func(rows Rows, r *Rec) error { return rows.Scan(&r.ID, &r.Run, &r.Pane, &r.Value) }
	}
	var out []Rec
	for rows.Next() {
		var r Rec
		if err := scan(rows, &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
