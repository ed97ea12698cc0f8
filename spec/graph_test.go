package spec

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/trigger"
	"github.com/weirstream/weir/window"
)

// TestGraphOfAJob: a YAML job compiles to one path, with every results
// sink of a list fed from the window's results, the late sinks from its
// side outputs and the dead letters from decode.
func TestGraphOfAJob(t *testing.T) {
	p, err := Parse([]byte(checkJob + `sinks:
  results:
    - {type: jsonl, path: a.jsonl}
    - {type: sqlite, path: b.db}
  late: {type: ledger, dir: ledger}
  late_partial: {type: jsonl, path: partial.jsonl}
  dead_letter: {type: jsonl, path: dead.jsonl}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := `0 source (source)
1 decode (decode) ← 0
2 watermark (watermark) ← 1
3 window (window) ← 2
4 sinks.results[0] (sink) ← 3
5 sinks.results[1] (sink) ← 3
6 sinks.late (sink) ← 3.late
7 sinks.late_partial (sink) ← 3.late_partial
8 sinks.dead_letter (sink) ← 1.dead
`
	if got := p.Graph.String(); got != want {
		t.Errorf("graph:\n%s\nwant:\n%s", got, want)
	}
	path, err := p.Graph.Path()
	if err != nil {
		t.Fatal(err)
	}
	if len(path.Windows) != 1 {
		t.Fatalf("%d windows, want 1", len(path.Windows))
	}
	w := path.Windows[0]
	if len(w.Results) != 2 || w.Results[0].Config.Path != "a.jsonl" || w.Results[1].Name != "results[1]" || w.Results[1].Config.Type != "sqlite" {
		t.Errorf("results sinks: %+v, %+v", w.Results[0], w.Results[1])
	}
	if w.Late.Config.Type != "ledger" || w.LatePartial.Config.Path != "partial.jsonl" || path.DeadLetter.Config.Path != "dead.jsonl" {
		t.Errorf("side sinks: %+v %+v %+v", w.Late, w.LatePartial, path.DeadLetter)
	}
	if w.Window.Assigner != p.Assigner || path.Watermark.Bound != p.Bound || path.Source.Type != "file" {
		t.Errorf("the path's operators do not hold the plan's values")
	}
	if q := p.ForWindow(w.Window); !reflect.DeepEqual(q, p) {
		t.Errorf("the plan for its one window differs from the plan:\n%+v\n%+v", q, p)
	}

	// One sink (a mapping) is a list of one, named results.
	one, err := Parse([]byte(checkJob))
	if err != nil {
		t.Fatal(err)
	}
	if got := one.Graph.String(); !strings.HasSuffix(got, "4 sinks.results (sink) ← 3\n") || strings.Count(got, "\n") != 5 {
		t.Errorf("graph of a job with the default results sink:\n%s", got)
	}
}

// TestGraphValidate: malformed graphs are refused with what is wrong.
func TestGraphValidate(t *testing.T) {
	src := &SourceOp{Type: "file"}
	for _, c := range []struct {
		name  string
		nodes []Node
		want  string
	}{
		{"forward edge", []Node{{ID: 0, Name: "a", Op: src}, {ID: 1, Name: "b", Op: &DecodeOp{}, Inputs: []Edge{{From: 2}}}, {ID: 2, Name: "c", Op: &DecodeOp{}, Inputs: []Edge{{From: 1}}}},
			"node 1 (b) reads node 2, which does not come before it"},
		{"no such port", []Node{{ID: 0, Name: "a", Op: src}, {ID: 1, Name: "b", Op: &SinkOp{}, Inputs: []Edge{{From: 0, Port: Late}}}},
			"node 1 (b) reads port late of node 0 (a), which has no such output"},
		{"source with an input", []Node{{ID: 0, Name: "a", Op: src}, {ID: 1, Name: "b", Op: src, Inputs: []Edge{{From: 0}}}},
			"node 1 (b): a source with 1 inputs"},
		{"operator without input", []Node{{ID: 0, Name: "a", Op: &WindowOp{}}}, "node 0 (a): a window with 0 inputs"},
		{"wrong id", []Node{{ID: 3, Name: "a", Op: src}}, "node 0 (a) has id 3"},
	} {
		g := Graph{Nodes: c.nodes}
		if err := g.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Validate = %v, want %q", c.name, err, c.want)
		}
	}
}

// TestGraphPathRefuses: a runner of paths is told which node of another
// shape it cannot run.
func TestGraphPathRefuses(t *testing.T) {
	p, err := Parse([]byte(checkJob))
	if err != nil {
		t.Fatal(err)
	}
	g := p.Graph
	// A window fed from a window's side output (a cascade reads its
	// results).
	cascade := Graph{Nodes: append(g.Nodes[:4:4], Node{ID: 4, Name: "window2", Op: &WindowOp{}, Inputs: []Edge{{From: 3, Port: Late}}})}
	if err := cascade.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := cascade.Path(); err == nil || !strings.Contains(err.Error(), "node 4 (window2, a window) reads neither the watermarks alone nor one window's results") {
		t.Errorf("Path of a window fed by late records: %v", err)
	}
	// Two sinks of the late stream.
	late := Graph{Nodes: append(g.Nodes[:4:4],
		Node{ID: 4, Name: "r", Op: &SinkOp{}, Inputs: []Edge{{From: 3}}},
		Node{ID: 5, Name: "l1", Op: &SinkOp{}, Inputs: []Edge{{From: 3, Port: Late}}},
		Node{ID: 6, Name: "l2", Op: &SinkOp{}, Inputs: []Edge{{From: 3, Port: Late}}})}
	if _, err := late.Path(); err == nil || !strings.Contains(err.Error(), "node 6 (l2, a sink) is a second sink of its stream") {
		t.Errorf("Path with two late sinks: %v", err)
	}
	// No results sink.
	bare := Graph{Nodes: g.Nodes[:4:4]}
	if _, err := bare.Path(); err == nil || !strings.Contains(err.Error(), "the plan's window window has no results sink") {
		t.Errorf("Path without results: %v", err)
	}
}

// TestGraphPathOfSeveralWindows: windows that read the same watermarks
// (SQL's statement sets: several queries sharing one read) are the
// branches of a path, each with its sinks, and the plan reads for each
// window with that window's key, aggregates and assigner.
func TestGraphPathOfSeveralWindows(t *testing.T) {
	p, err := Parse([]byte(checkJob + "sinks: {results: {type: jsonl, path: a.jsonl}, late: {type: jsonl, path: late.jsonl}, dead_letter: {type: jsonl, path: dead.jsonl}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	g := p.Graph
	tumbling, err := window.Tumbling(3_600_000, 0)
	if err != nil {
		t.Fatal(err)
	}
	hourly := &WindowOp{Key: []string{"user", "shop"}, WindowKind: Tumbling, Span: 3_600_000, Assigner: tumbling,
		Aggregates: []Aggregate{{Name: "total", Fn: "sum", Field: "amount"}}}
	nodes := append(slices.Clone(g.Nodes),
		Node{ID: NodeID(len(g.Nodes)), Name: "hourly", Op: hourly, Inputs: []Edge{{From: 2}}},
		Node{ID: NodeID(len(g.Nodes) + 1), Name: "hourly.results", Op: &SinkOp{Name: "hourly"}, Inputs: []Edge{{From: NodeID(len(g.Nodes))}}},
		Node{ID: NodeID(len(g.Nodes) + 2), Name: "hourly.late", Op: &SinkOp{Name: "hourly_late"}, Inputs: []Edge{{From: NodeID(len(g.Nodes)), Port: Late}}})
	two := Graph{Nodes: nodes}
	if err := two.Validate(); err != nil {
		t.Fatal(err)
	}
	path, err := two.Path()
	if err != nil {
		t.Fatal(err)
	}
	if len(path.Windows) != 2 || path.Windows[1].Name != "hourly" || path.Windows[1].Window != hourly || len(path.Windows[1].Results) != 1 ||
		path.Windows[1].Late.Name != "hourly_late" || path.Windows[0].Late.Name != "late" || path.DeadLetter == nil {
		t.Fatalf("the path of two windows: %+v", path)
	}
	if got := len(path.Sinks()); got != 5 {
		t.Errorf("%d sinks, want 5 (two results, two late, dead letters)", got)
	}
	q := p.ForWindow(hourly)
	if !slices.Equal(q.Key, hourly.Key) || q.Aggregates[0].Name != "total" || q.WindowSpan != 3_600_000 || q.Name != p.Name || !slices.Equal(p.Key, []string{"k"}) {
		t.Errorf("the plan for the hourly window: key %v, aggregates %v, span %v (the plan's key is now %v)", q.Key, q.Aggregates, q.WindowSpan, p.Key)
	}
	// A window without a results sink is refused, naming it.
	if _, err := (&Graph{Nodes: nodes[:len(g.Nodes)+1]}).Path(); err == nil || !strings.Contains(err.Error(), "window hourly has no results sink") {
		t.Errorf("Path of a window without results: %v", err)
	}
}

// TestSeveralResultsSinksChecked: each sink of a results list is checked
// at its own path, with its kind's defaults (the table a SQL sink takes
// is results, whichever item it is), and sinks that would collide are
// refused.
func TestSeveralResultsSinksChecked(t *testing.T) {
	for _, c := range []struct {
		results string
		want    []string // path: msg; fix
	}{
		{"[{type: jsonl, path: a.jsonl}, {type: sqlite}]", []string{
			"sinks.results[1].path: missing; a sqlite sink needs a file path, such as results.db"}},
		{"[{type: jsonl, path: a.jsonl}, {type: jsonl, path: ./a.jsonl}]", []string{
			"sinks.results[1].path: ./a.jsonl is also the path of sinks.results[0]; give each sink its own file"}},
		{"[{type: kafka, brokers: ['127.0.0.1:9092'], topic: a}, {type: kafka, brokers: ['127.0.0.1:9092'], topic: b}]", []string{
			"sinks.results[1].type: a second kafka results sink (sinks.results[0] is one); write the results to one kafka topic; a job has one Kafka producer, whose transactions carry every topic it writes"}},
		{"[{type: postgres, url: 'postgres://x'}, {type: postgres, url: 'postgres://x'}]", []string{
			"sinks.results[1].table: results is also the table of sinks.results[0] in the same database; give each sink its own table"}},
		{"[{type: jsonl, path: a.jsonl}, ~]", []string{
			"sinks.results[1]: missing; give the sink's type and settings, or remove the empty list item"}},
		{"[{type: jsonl, path: a.jsonl}, {type: ledger, dir: l}]", []string{
			`sinks.results[1].type: unknown value "ledger"; use one of jsonl, stdout, blackhole, kafka, postgres, nats, sqlite`}},
	} {
		wantErrors(t, checkJob+"sinks: {results: "+c.results+"}\n", c.want)
	}
	p, err := Parse([]byte(checkJob + "sinks: {results: [{type: jsonl, path: a.jsonl}, {type: postgres, url: 'postgres://x'}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r := p.Sinks.Results; len(r) != 2 || r[1].Table != "results" || p.Sinks.Primary().Path != "a.jsonl" {
		t.Errorf("results sinks: %+v", r)
	}
	if len(p.Warnings) != 0 {
		t.Errorf("warnings without a late ledger: %v", p.Warnings)
	}
	// With a ledger, backfill revises the first sink alone: the others
	// are warned about.
	p, err = Parse([]byte(checkJob + "archive: {dir: ar}\nsinks: {results: [{type: jsonl, path: a.jsonl}, {type: stdout}], late: {type: ledger, dir: l}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := "sinks.results[1]: weir backfill revises the first results sink (sinks.results[0]) alone; this one keeps what the live job wrote"
	if len(p.Warnings) != 1 || !strings.HasPrefix(p.Warnings[0].Error(), want) {
		t.Errorf("warnings: %v, want %q", p.Warnings, want)
	}
}

// TestResultsListShapes: a value that is neither a sink nor a list of
// them is refused as a sink would be, and an empty list is refused.
func TestResultsListShapes(t *testing.T) {
	wantErrors(t, checkJob+"sinks: {results: stdout}\n", []string{
		"sinks.results: want a mapping of fields, got \"stdout\"; known fields: batch_rows, brokers, columns, connect_retry_for, dir, layout, marker_topic, path, primary_key, retention, retry_for, sasl, subject, table, timeout, tls, topic, type, url"})
	wantErrors(t, checkJob+"sinks: {results: []}\n", []string{
		"sinks.results: an empty list; list one sink at least, or leave results out for stdout"})
}

// TestSameTableOtherUser: two Postgres sinks that reach one table as
// different users, or spell the server differently, share it.
func TestSameTableOtherUser(t *testing.T) {
	wantErrors(t, checkJob+"sinks: {results: [{type: postgres, url: 'postgres://root@127.0.0.1:5432/test'}, {type: postgres, url: 'postgresql://postgres:secret@localhost/test?sslmode=disable'}]}\n", []string{
		"sinks.results[1].table: results is also the table of sinks.results[0] in the same database; give each sink its own table"})
	wantErrors(t, checkJob+"sinks: {results: [{type: postgres, url: 'host=127.0.0.1 dbname=test user=a'}, {type: postgres, url: 'postgres://b@127.0.0.1/test'}]}\n", []string{
		"sinks.results[1].table: results is also the table of sinks.results[0] in the same database; give each sink its own table"})
	// Other databases, or ports: no conflict.
	for _, urls := range [][2]string{
		{"postgres://a@127.0.0.1/one", "postgres://a@127.0.0.1/two"},
		{"postgres://a@127.0.0.1:5432/x", "postgres://a@127.0.0.1:5433/x"},
		{"postgres://a@127.0.0.1", "postgres://b@127.0.0.1"}, // each user's own database
	} {
		if _, err := Parse([]byte(checkJob + "sinks: {results: [{type: postgres, url: '" + urls[0] + "'}, {type: postgres, url: '" + urls[1] + "'}]}\n")); err != nil {
			t.Errorf("%v: %v", urls, err)
		}
	}
}

// TestExplainDeadLetters: explain says where unreadable records go: to
// the dead port a sink reads, or counted and not kept.
func TestExplainDeadLetters(t *testing.T) {
	const job = `
name: d
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
window: {type: tumbling, size: 1m}
aggregate: [{name: n, fn: count}]
sinks:
  results: {type: jsonl, path: out.jsonl}
`
	for _, c := range []struct{ extra, want string }{
		{"", "; unreadable records counted as dead letters, not kept (no sinks.dead_letter)\n"},
		{"  dead_letter: {type: jsonl, path: bad.jsonl}\n", "; unreadable records to dead\n"},
	} {
		p, err := Parse([]byte(job + c.extra))
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Explain(); !strings.Contains(got, c.want) {
			t.Errorf("explain with %q:\n%s\nwant a line ending %q", c.extra, got, c.want)
		}
	}
}

// TestGraphPathOfACascade: a window fed by a window's results (semantics
// W12) is a branch that names the window feeding it; a feeding window
// need not have results sinks of its own. A window that may fire a
// window twice, or fields the feeding results lack or hold no number
// in, are refused with the reason.
func TestGraphPathOfACascade(t *testing.T) {
	p, err := Parse([]byte(strings.Replace(checkJob, "aggregate: [{fn: count, name: n}]", "aggregate: [{fn: count, name: n}, {fn: sum, name: total, field: amount}, {fn: last, name: note, field: note}]", 1)))
	if err != nil {
		t.Fatal(err)
	}
	g := p.Graph
	hour, err := window.Tumbling(3_600_000, 0)
	if err != nil {
		t.Fatal(err)
	}
	hourly := func(aggs ...Aggregate) *WindowOp {
		return &WindowOp{Key: []string{"k"}, WindowKind: Tumbling, Span: 3_600_000, Assigner: hour, Aggregates: aggs}
	}
	// source, decode, watermark, window, then the hourly window fed by
	// the window (which has no sink) and its results.
	chain := func(up, down *WindowOp) *Graph {
		nodes := slices.Clone(g.Nodes[:3])
		nodes = append(nodes, Node{ID: 3, Name: "minutes", Op: up, Inputs: []Edge{{From: 2}}},
			Node{ID: 4, Name: "hourly", Op: down, Inputs: []Edge{{From: 3}}},
			Node{ID: 5, Name: "hourly.results", Op: &SinkOp{Name: "hourly"}, Inputs: []Edge{{From: 4}}})
		return &Graph{Nodes: nodes}
	}
	up := p.Graph.Nodes[3].Op.(*WindowOp)
	ok := hourly(Aggregate{Name: "n", Fn: "sum", Field: "n"}, Aggregate{Name: "t", Fn: "max", Field: "total"},
		Aggregate{Name: "first", Fn: "min", Field: "window_start"}, Aggregate{Name: "note", Fn: "last", Field: "note"}, Aggregate{Name: "rows", Fn: "count"})
	path, err := chain(up, ok).Path()
	if err != nil {
		t.Fatal(err)
	}
	if len(path.Windows) != 2 || path.Windows[0].From != -1 || path.Windows[1].From != 0 || len(path.Windows[0].Results) != 0 || len(path.Windows[1].Results) != 1 {
		t.Fatalf("the path of a cascade: %+v", path.Windows)
	}
	// A third window fed by the hourly one.
	three := chain(up, ok)
	three.Nodes = append(three.Nodes, Node{ID: 6, Name: "daily", Op: hourly(Aggregate{Name: "n", Fn: "sum", Field: "n"}), Inputs: []Edge{{From: 4}}},
		Node{ID: 7, Name: "daily.results", Op: &SinkOp{Name: "daily"}, Inputs: []Edge{{From: 6}}})
	if path, err := three.Path(); err != nil || path.Windows[2].From != 1 {
		t.Fatalf("a chain of three windows: %v", err)
	}

	withLateness, continuous, global := *up, *up, *up
	withLateness.Lateness = 60_000
	continuous.Trigger, err = trigger.Continuous(10_000)
	if err != nil {
		t.Fatal(err)
	}
	global.Assigner = window.GlobalWindows()
	for _, c := range []struct {
		name     string
		up, down *WindowOp
		want     string
	}{
		{"lateness", &withLateness, ok, "minutes has allowed lateness 1m0s: a late firing would revise a result hourly has already counted"},
		{"early firings", &continuous, ok, "may fire a window more than once"},
		{"global", &global, ok, "minutes is a global window"},
		{"unknown key", up, &WindowOp{Key: []string{"user"}, Assigner: hour}, `its key reads "user", which minutes's results do not have`},
		{"unknown field", up, hourly(Aggregate{Name: "x", Fn: "sum", Field: "amount"}), `aggregate x (sum) reads "amount"`},
		{"sum of a key", up, hourly(Aggregate{Name: "x", Fn: "sum", Field: "k"}), `aggregate x takes the sum of "k", which is no number`},
		{"avg of last", up, hourly(Aggregate{Name: "x", Fn: "avg", Field: "note"}), `aggregate x takes the avg of "note", which is no number`},
	} {
		_, err := chain(c.up, c.down).Path()
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "W12") {
			t.Errorf("%s: Path = %v, want %q", c.name, err, c.want)
		}
	}
	// A window without results sinks that feeds no window is refused.
	bare := chain(up, ok)
	bare.Nodes = bare.Nodes[:5]
	if _, err := bare.Path(); err == nil || !strings.Contains(err.Error(), "window hourly has no results sink and feeds no window") {
		t.Errorf("Path of a window without results: %v", err)
	}
}

// TestGraphPathOfATopN: a Top-N of a window's results (semantics W13)
// is a branch whose window view keys its rows by partition and rank and
// carries the other columns; one that cannot rank (no order, an order
// that is no number, a partition column the results lack, N out of
// range, a rank named as a column, a window that may fire twice, a
// Top-N of a Top-N, a window fed by a Top-N) is refused with the reason.
func TestGraphPathOfATopN(t *testing.T) {
	p, err := Parse([]byte(strings.Replace(checkJob, "aggregate: [{fn: count, name: n}]", "aggregate: [{fn: count, name: n}, {fn: sum, name: total, field: amount}, {fn: last, name: note, field: note}]", 1)))
	if err != nil {
		t.Fatal(err)
	}
	up := p.Graph.Nodes[3].Op.(*WindowOp)
	chain := func(up *WindowOp, ops ...Op) *Graph {
		nodes := slices.Clone(p.Graph.Nodes[:3])
		nodes = append(nodes, Node{ID: 3, Name: "minutes", Op: up, Inputs: []Edge{{From: 2}}})
		for _, op := range ops {
			id := NodeID(len(nodes))
			nodes = append(nodes, Node{ID: id, Name: "top" + string(rune('a'+len(nodes)-4)), Op: op, Inputs: []Edge{{From: id - 1}}})
		}
		last := NodeID(len(nodes) - 1)
		nodes = append(nodes, Node{ID: last + 1, Name: "results", Op: &SinkOp{Name: "results"}, Inputs: []Edge{{From: last}}})
		return &Graph{Nodes: nodes}
	}
	top := func(mod func(*TopNOp)) *TopNOp {
		t := &TopNOp{PartitionBy: []string{"k"}, OrderBy: []SortKey{{Field: "total", Desc: true}}, N: 3, Rank: "rownum"}
		if mod != nil {
			mod(t)
		}
		return t
	}
	path, err := chain(up, top(nil)).Path()
	if err != nil {
		t.Fatal(err)
	}
	b := path.Windows[1]
	if b.TopN == nil || b.From != 0 || !slices.Equal(b.Window.Key, []string{"k", "rownum"}) || len(b.Window.Aggregates) != 3 ||
		b.Window.Aggregates[0].Name != "n" || b.Window.Aggregates[0].Fn != "count" || b.Window.Aggregates[2].Name != "note" || b.Window.Assigner != up.Assigner {
		t.Fatalf("the Top-N branch: %+v, its window view %+v", b, b.Window)
	}
	// No partition: the key's field is a value of the rows.
	path, err = chain(up, top(func(t *TopNOp) { t.PartitionBy = nil })).Path()
	if err != nil || !slices.Equal(path.Windows[1].Window.Key, []string{"rownum"}) || path.Windows[1].Window.Aggregates[0].Name != "k" {
		t.Fatalf("a Top-N without partition: %v %+v", err, path)
	}
	// A key field orders as its values do (strings by their bytes).
	if _, err := chain(up, top(func(t *TopNOp) { t.PartitionBy, t.OrderBy = nil, []SortKey{{Field: "k"}} })).Path(); err != nil {
		t.Fatalf("a Top-N ordered by a key field: %v", err)
	}
	withLateness := *up
	withLateness.Lateness = 1000
	window2 := &WindowOp{Key: []string{"k"}, Assigner: up.Assigner, Aggregates: []Aggregate{{Name: "n", Fn: "count"}}}
	for _, c := range []struct {
		name string
		g    *Graph
		want string
	}{
		{"no order", chain(up, top(func(t *TopNOp) { t.OrderBy = nil })), "it has no order"},
		{"order by text", chain(up, top(func(t *TopNOp) { t.OrderBy = []SortKey{{Field: "note"}} })), `it orders by "note", which is neither a number nor a key field or string`},
		{"unknown partition", chain(up, top(func(t *TopNOp) { t.PartitionBy = []string{"shop"} })), `it partitions by "shop"`},
		{"n 0", chain(up, top(func(t *TopNOp) { t.N = 0 })), "it keeps 0 rows"},
		{"n too big", chain(up, top(func(t *TopNOp) { t.N = MaxTopN + 1 })), "keep 1 to 10000"},
		{"rank named as a column", chain(up, top(func(t *TopNOp) { t.Rank = "total" })), `its rank column "total"`},
		{"lateness", chain(&withLateness, top(nil)), "minutes has allowed lateness 1s"},
		{"top of a top", chain(up, top(nil), top(nil)), "(topb, a topn) does not read one window's results"},
		{"window of a top", chain(up, top(nil), window2), "(topb, a window) reads neither the watermarks alone nor one window's results"},
	} {
		_, err := c.g.Path()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Path = %v, want %q", c.name, err, c.want)
		}
	}
}

// TestGraphPathOfAJoin: a join of two windows' results (semantics W14)
// is a branch reading both, whose window view keys a joined row by the
// equalities and the key fields outside them; one that cannot join is
// refused with the reason.
func TestGraphPathOfAJoin(t *testing.T) {
	p, err := Parse([]byte(strings.Replace(checkJob, "aggregate: [{fn: count, name: n}]", "aggregate: [{fn: count, name: n}, {fn: sum, name: total, field: amount}]", 1)))
	if err != nil {
		t.Fatal(err)
	}
	left := p.Graph.Nodes[3].Op.(*WindowOp)
	right := &WindowOp{Key: []string{"user", "shop"}, WindowKind: Tumbling, Span: left.Span, Assigner: left.Assigner,
		Aggregates: []Aggregate{{Name: "top", Fn: "max", Field: "amount"}}}
	graph := func(l, r *WindowOp, op *JoinOp, swap bool) *Graph {
		nodes := slices.Clone(p.Graph.Nodes[:3])
		in := []Edge{{From: 3}, {From: 4}}
		if swap {
			in = []Edge{{From: 3}, {From: 3}}
		}
		nodes = append(nodes, Node{ID: 3, Name: "l", Op: l, Inputs: []Edge{{From: 2}}}, Node{ID: 4, Name: "r", Op: r, Inputs: []Edge{{From: 2}}},
			Node{ID: 5, Name: "j", Op: op, Inputs: in}, Node{ID: 6, Name: "results", Op: &SinkOp{Name: "results"}, Inputs: []Edge{{From: 5}}})
		return &Graph{Nodes: nodes}
	}
	op := func(mod func(*JoinOp)) *JoinOp {
		j := &JoinOp{Type: FullJoin, On: []JoinOn{{Left: "k", Right: "user"}}, Columns: []JoinColumn{{Name: "total", Field: "total"}, {Name: "top", Right: true, Field: "top"}}}
		if mod != nil {
			mod(j)
		}
		return j
	}
	path, err := graph(left, right, op(nil), false).Path()
	if err != nil {
		t.Fatal(err)
	}
	b := path.Windows[2]
	if b.Join == nil || b.From != 0 || b.Right != 1 || !slices.Equal(b.Window.Key, []string{"k", "shop"}) ||
		len(b.Window.Aggregates) != 2 || b.Window.Aggregates[0].Fn != "sum" || b.Window.Aggregates[1].Fn != "max" || len(path.Windows[0].Results) != 0 {
		t.Fatalf("the join branch: %+v, its view %+v", b, b.Window)
	}
	// No equality besides the window, and a condition: every pair of a
	// window's rows for which it holds.
	if _, err := graph(left, right, op(func(j *JoinOp) {
		j.On, j.Cond, j.CondCols = nil, "a >= b", []JoinColumn{{Name: "a", Field: "total"}, {Name: "b", Right: true, Field: "top"}}
	}), false).Path(); err != nil {
		t.Errorf("a join on the window alone, with a condition: %v", err)
	}
	withLateness := *right
	withLateness.Lateness = 1000
	for _, c := range []struct {
		name string
		g    *Graph
		want string
	}{
		{"condition of an unknown column", graph(left, right, op(func(j *JoinOp) {
			j.Cond, j.CondCols = "a >= b", []JoinColumn{{Name: "a", Field: "total"}, {Name: "b", Right: true, Field: "nope"}}
		}), false), `r's results have no column "nope"`},
		{"condition over an unnamed column", graph(left, right, op(func(j *JoinOp) {
			j.Cond, j.CondCols = "a >= c", []JoinColumn{{Name: "a", Field: "total"}}
		}), false), `its condition "a >= c"`},
		{"condition columns without a condition", graph(left, right, op(func(j *JoinOp) {
			j.CondCols = []JoinColumn{{Name: "a", Field: "total"}}
		}), false), "no condition"},
		{"unknown column", graph(left, right, op(func(j *JoinOp) { j.On[0].Right = "uid" }), false), `r's results have no column "uid"`},
		{"window column", graph(left, right, op(func(j *JoinOp) { j.On[0].Left = "window_start" }), false), `l's results have no column "window_start"`},
		{"column named as a key", graph(left, right, op(func(j *JoinOp) { j.Columns[0].Name = "shop" }), false), `a column of the joined row is named "shop"`},
		{"column named as an equality", graph(left, right, op(func(j *JoinOp) { j.On = []JoinOn{{Left: "total", Right: "top"}} }), false), `a column of the joined row is named "total"`},
		{"lateness", graph(left, &withLateness, op(nil), false), "r has allowed lateness 1s"},
		{"itself", graph(left, right, op(nil), true), "it joins a window with itself"},
	} {
		_, err := c.g.Path()
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "W14") {
			t.Errorf("%s: Path = %v, want %q", c.name, err, c.want)
		}
	}
	// A key field of both sides outside the equalities is the key's
	// twice, the right one's named as Flink names a second column of one
	// name (k0).
	same := *right
	same.Key = []string{"k"}
	j := op(func(j *JoinOp) { j.On = []JoinOn{{Left: "total", Right: "top"}}; j.Columns = j.Columns[:0] })
	path, err = graph(left, &same, j, false).Path()
	if err != nil {
		t.Fatalf("a key of both sides outside the equalities: %v", err)
	}
	if k := path.Windows[2].Window.Key; !slices.Equal(k, []string{"total", "k", "k0"}) {
		t.Errorf("a key of both sides outside the equalities: the joined key is %q, want total, k, k0", k)
	}
	for _, c := range []struct {
		right bool
		field string
		want  string
	}{{false, "total", "total"}, {true, "top", "total"}, {false, "k", "k"}, {true, "k", "k0"}} {
		if got, ok := j.KeyName(left.Key, same.Key, c.right, c.field); !ok || got != c.want {
			t.Errorf("KeyName(right %v, %s) = %q, %v; want %q", c.right, c.field, got, ok, c.want)
		}
	}
	if _, ok := j.KeyName(left.Key, same.Key, true, "top2"); ok {
		t.Errorf("KeyName of no key field is found")
	}
}

// TestPartialMissWarning: sliding windows whose too-late records go to a
// kind that keeps them without their reasons (a Kafka topic), and no
// late_partial, are warned about: weir backfill cannot complete the
// windows partial misses left out. A ledger directory keeps them, and
// late_partial does.
func TestPartialMissWarning(t *testing.T) {
	sliding := strings.Replace(checkJob, "{type: tumbling, size: 1m}", "{type: sliding, size: 2m, slide: 1m}", 1)
	late := map[string]bool{
		"late: {type: kafka, brokers: ['127.0.0.1:9092'], topic: l}": true,
		"late: {type: ledger, dir: l}":                               false,
		"late: {type: kafka, brokers: ['127.0.0.1:9092'], topic: l}, late_partial: {type: kafka, brokers: ['127.0.0.1:9092'], topic: p}": false,
	}
	for sinks, warned := range late {
		p, err := Parse([]byte(sliding + "archive: {dir: a}\nsinks: {results: {type: kafka, brokers: ['127.0.0.1:9092'], topic: r}, " + sinks + "}\n"))
		if err != nil {
			t.Fatal(err)
		}
		got := slices.ContainsFunc(p.Warnings, func(e FieldError) bool { return e.Path == "sinks.late_partial" })
		if got != warned {
			t.Errorf("%s: warned %v, want %v (%v)", sinks, got, warned, p.Warnings)
		}
	}
}
