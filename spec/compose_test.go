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
	parse := func(job string) *Plan {
		t.Helper()
		p, err := Parse([]byte(job))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
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
