package spec

import (
	"slices"
	"strings"
	"testing"
)

// TestComposePlans: FeedPlan and JoinPlans build the graphs a front end
// composes from plans of one window: the feeding window's results sinks
// move to the new operator, the joined plan's nodes follow under its
// prefix with a read of their own, both definitions are kept (a change
// to the other plan or the operator changes the job), result columns
// are checked against the rows the operator writes, and a second window
// named as the first's stage is refused.
func TestComposePlans(t *testing.T) {
	parse := func(job string) *Plan { return mustParse(t, job) }
	up := parse(checkJob + "sinks: {results: {type: jsonl, path: out.jsonl}, late: {type: jsonl, path: late.jsonl}}\n")
	top := &TopNOp{OrderBy: []SortKey{{Field: "n", Desc: true}}, N: 2, Rank: "rownum"}
	p, err := FeedPlan(up, top, "top", top)
	if err != nil {
		t.Fatal(err)
	}
	want := `0 source (source)
1 decode (decode) ← 0
2 watermark (watermark) ← 1
3 window (window) ← 2
4 sinks.late (sink) ← 3.late
5 top (topn) ← 3
6 sinks.results (sink) ← 5
`
	if got := p.Graph.String(); got != want {
		t.Errorf("the Top-N's graph:\n%s\nwant:\n%s", got, want)
	}
	if err := p.SetResultColumns([]Column{{Name: "rank", From: "rownum"}, {Name: "n"}, {Name: "start", From: "window_start", Time: "ms"}}); err != nil {
		t.Errorf("columns of the Top-N's rows: %v", err)
	}
	if err := p.SetResultColumns([]Column{{Name: "x", From: "amount"}}); err == nil || !strings.Contains(err.Error(), `"amount" is neither a key field`) {
		t.Errorf("a column the rows lack: %v", err)
	}
	if len(p.Definition.Fields) != len(up.Definition.Fields)+1 || !slices.ContainsFunc(p.Definition.Fields, func(f DefField) bool { return f.Path == "top" && f.State }) {
		t.Errorf("the Top-N's definition: %+v", p.Definition.Fields)
	}
	if _, err := FeedPlan(up, &SinkOp{}, "x", nil); err == nil {
		t.Error("FeedPlan of a sink")
	}

	right := parse(strings.Replace(checkJob, "in.jsonl", "pay.jsonl", 1) + "sinks: {results: {type: jsonl, path: unused.jsonl}, dead_letter: {type: jsonl, path: dead.jsonl}}\n")
	join := &JoinOp{On: []JoinOn{{Left: "k", Right: "k"}}, Columns: []JoinColumn{{Name: "paid", Right: true, Field: "n"}, {Name: "n", Field: "n"}}}
	j, err := JoinPlans(up, right, join, "join", "L.", "R.", join)
	if err != nil {
		t.Fatal(err)
	}
	want = `0 source (source)
1 decode (decode) ← 0
2 watermark (watermark) ← 1
3 L.window (window) ← 2
4 sinks.late (sink) ← 3.late
5 R.source (source)
6 R.decode (decode) ← 5
7 R.watermark (watermark) ← 6
8 R.window (window) ← 7
9 R.sinks.dead_letter (sink) ← 6.dead
10 join (join) ← 3, 8
11 sinks.results (sink) ← 10
`
	if got := j.Graph.String(); got != want {
		t.Errorf("the join's graph:\n%s\nwant:\n%s", got, want)
	}
	if src := j.Graph.Nodes[5].Op.(*SourceOp); src.Settings != right || src.Config.Path != "pay.jsonl" {
		t.Errorf("the right read's source: %+v", src)
	}
	if s := j.Graph.Nodes[9].Op.(*SinkOp); s.Name != "R_dead_letter" {
		t.Errorf("the right read's dead letters are named %q", s.Name)
	}
	var rightSource bool
	for _, f := range j.Definition.Fields {
		rightSource = rightSource || f.Path == "R.source.path" && string(f.Value) == `"pay.jsonl"`
	}
	if !rightSource {
		t.Errorf("the join's definition lacks the right source: %+v", j.Definition.Fields)
	}

	// A window after the first may not take the first's stage name, nor
	// another window's name.
	down := *up.Graph.Nodes[3].Op.(*WindowOp)
	down.Aggregates = []Aggregate{{Name: "n", Fn: "sum", Field: "n"}}
	renamed := *up
	renamed.Graph.Nodes = slices.Clone(up.Graph.Nodes)
	renamed.Graph.Nodes[3].Name = "minutes"
	for name, want := range map[string]string{"window": "names the first window's stage", "minutes": "has the name of an earlier window"} {
		if _, err := FeedPlan(&renamed, &down, name, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a second window named %s: %v", name, err)
		}
	}
}

// TestUnitePlans: a statement set's second query is a window on the
// first's read when it reads the same source the same way (its dead
// letters are the first's), and a read of its own otherwise; its nodes
// and sinks go by its prefix and its definition is kept under it.
func TestUnitePlans(t *testing.T) {
	parse := func(job string) *Plan { return mustParse(t, job) }
	first := parse(checkJob + "sinks: {results: {type: jsonl, path: a.jsonl}, dead_letter: {type: jsonl, path: dead.jsonl}}\n")
	hourly := parse(strings.Replace(checkJob, "size: 1m", "size: 1h", 1) + "sinks: {results: {type: jsonl, path: b.jsonl}, dead_letter: {type: jsonl, path: dead.jsonl}}\n")
	u, err := UnitePlans(first, hourly, "b.")
	if err != nil {
		t.Fatal(err)
	}
	want := `0 source (source)
1 decode (decode) ← 0
2 watermark (watermark) ← 1
3 window (window) ← 2
4 sinks.results (sink) ← 3
5 sinks.dead_letter (sink) ← 1.dead
6 b.window (window) ← 2
7 b.sinks.results (sink) ← 6
`
	if got := u.Graph.String(); got != want {
		t.Errorf("a query on the same read:\n%s\nwant:\n%s", got, want)
	}
	if s := u.Graph.Nodes[7].Op.(*SinkOp); s.Name != "b_results" || s.Config.Path != "b.jsonl" {
		t.Errorf("the second query's results sink: %+v", s)
	}
	if !slices.ContainsFunc(u.Definition.Fields, func(f DefField) bool { return f.Path == "b.window.size" && string(f.Value) == "3600000" }) {
		t.Errorf("the definition lacks the second query's window: %+v", u.Definition.Fields)
	}
	filtered := parse(checkJob + "where: k <> 'x'\nsinks: {results: {type: jsonl, path: c.jsonl}}\n")
	u, err = UnitePlans(first, filtered, "c.")
	if err != nil {
		t.Fatal(err)
	}
	path, err := u.Graph.Path()
	if err != nil || len(path.Reads) != 2 || path.Windows[1].Read != 1 || path.Reads[1].Decode.Where != "k <> 'x'" {
		t.Errorf("a query with its own where reads the source again: %v\n%s", err, u.Graph.String())
	}
}

// mustParse parses and compiles job, or fails the test.
func mustParse(t *testing.T, job string) *Plan {
	t.Helper()
	p, err := Parse([]byte(job))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
