package job

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/big"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/spec"
)

// minuteJob is jobtest.OrderJob's input in minute windows per user that
// fire once (no allowed lateness, no early firings): a window that may
// feed another (semantics W12).
var minuteJob = strings.NewReplacer(
	"allowed_lateness: 3m\n", "",
	"trigger: {type: continuous, interval: 20s}\n", "",
	"  - {name: users, fn: count_distinct, field: user_id}\n", "  - {name: top, fn: max, field: amount}\n",
).Replace(fmt.Sprintf(jobtest.OrderJob, "jsonl", "minute.jsonl"))

// tenMinuteJob is the window the minute windows feed: ten minutes per
// user over their results' columns.
const tenMinuteJob = `
name: ten
source: {type: file, path: none.jsonl}
watermark: {max_out_of_orderness: 0s}
key: [user_id]
window: {type: tumbling, size: 10m}
aggregate:
  - {name: orders, fn: sum, field: orders}
  - {name: total, fn: sum, field: total}
  - {name: top, fn: max, field: top}
  - {name: minutes, fn: count}
  - {name: last_minute, fn: last, field: window_start}
sinks:
  results: {type: jsonl, path: ten.jsonl}
`

// cascadePlan is plan up with op (a window or a Top-N) fed by up's
// window, named name, writing its results to the results sink of plan of.
func cascadePlan(t *testing.T, up *spec.Plan, op spec.Op, name string, of *spec.Plan) *spec.Plan {
	t.Helper()
	po, err := of.Graph.Path()
	if err != nil {
		t.Fatal(err)
	}
	var win spec.NodeID = -1
	for _, n := range up.Graph.Nodes {
		if _, ok := n.Op.(*spec.WindowOp); ok {
			win = n.ID
		}
	}
	w := spec.NodeID(len(up.Graph.Nodes))
	r := po.Windows[0].Results[0]
	q := *up
	q.Graph.Nodes = append(slices.Clone(up.Graph.Nodes),
		spec.Node{ID: w, Name: name, Op: op, Inputs: []spec.Edge{{From: win}}},
		spec.Node{ID: w + 1, Name: name + ".results", Op: &spec.SinkOp{Role: r.Role, Name: name, Path: name + ".results", Config: r.Config}, Inputs: []spec.Edge{{From: w}}})
	if err := q.Graph.Validate(); err != nil {
		t.Fatal(err)
	}
	return &q
}

// tenFromMinutes is the oracle of the cascade: the minute windows'
// results (minute.jsonl) grouped by user and ten-minute window, as the
// lines of ten.jsonl would give them (key, window, aggregates; sorted).
func tenFromMinutes(t *testing.T, minutes string) []string {
	t.Helper()
	type acc struct {
		orders, total *big.Rat
		top           *big.Rat
		n, last       int64
	}
	groups := map[[3]string]*acc{}
	for _, l := range strings.Split(strings.TrimSpace(minutes), "\n") {
		var r struct {
			User       json.RawMessage `json:"user_id"`
			Start      int64           `json:"window_start"`
			Orders     json.Number     `json:"orders"`
			Total, Top json.Number
		}
		d := json.NewDecoder(strings.NewReader(l))
		d.UseNumber()
		if err := d.Decode(&r); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		s := r.Start - r.Start%600000
		k := [3]string{string(r.User), fmt.Sprint(s), fmt.Sprint(s + 600000)}
		a := groups[k]
		if a == nil {
			a = &acc{orders: new(big.Rat), total: new(big.Rat)}
			groups[k] = a
		}
		rat := func(n json.Number) *big.Rat {
			v, ok := new(big.Rat).SetString(string(n))
			if !ok {
				t.Fatalf("%s: not a number %q", l, n)
			}
			return v
		}
		a.orders.Add(a.orders, rat(r.Orders))
		a.total.Add(a.total, rat(r.Total))
		if v := rat(r.Top); a.top == nil || v.Cmp(a.top) > 0 {
			a.top = v
		}
		a.n++
		a.last = max(a.last, r.Start)
	}
	var out []string
	for k, a := range groups {
		out = append(out, fmt.Sprintf("%s %s %s orders=%s total=%s top=%s minutes=%d last=%d", k[0], k[1], k[2],
			a.orders.RatString(), a.total.RatString(), a.top.RatString(), a.n, a.last))
	}
	sort.Strings(out)
	return out
}

// tenLines reads ten.jsonl as tenFromMinutes renders it.
func tenLines(t *testing.T, ten string) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(ten), "\n") {
		var r struct {
			User               json.RawMessage `json:"user_id"`
			Start              int64           `json:"window_start"`
			End                int64           `json:"window_end"`
			Firing             string          `json:"firing"`
			Orders, Total, Top json.Number
			Minutes            int64 `json:"minutes"`
			LastMinute         int64 `json:"last_minute"`
		}
		d := json.NewDecoder(strings.NewReader(l))
		d.UseNumber()
		if err := d.Decode(&r); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		if r.Firing != "on_time" {
			t.Errorf("a ten-minute result fired %s, want on_time: %s", r.Firing, l)
		}
		rat := func(n json.Number) string {
			v, ok := new(big.Rat).SetString(string(n))
			if !ok {
				t.Fatalf("%s: not a number %q", l, n)
			}
			return v.RatString()
		}
		out = append(out, fmt.Sprintf("%s %d %d orders=%s total=%s top=%s minutes=%d last=%d", r.User, r.Start, r.End,
			rat(r.Orders), rat(r.Total), rat(r.Top), r.Minutes, r.LastMinute))
	}
	sort.Strings(out)
	return out
}

// runPlan opens plan p with o and runs it to its end.
func runPlan(t *testing.T, p *spec.Plan, o RunOptions) Summary {
	t.Helper()
	j, err := Open(p, o)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := j.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// sameRows reports rows that differ from want's: their counts and the
// first difference (both sorted).
func sameRows(t *testing.T, what string, got, want []string) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	t.Errorf("%s: %d rows, want %d", what, len(got), len(want))
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Errorf("first difference:\n got %s\nwant %s", got[i], want[i])
			return
		}
	}
}

// crashesLeave runs plan p crashing at each checkpointing point and
// resuming (crashResume), and checks that the files outputs reads and
// the summary are those of the run that never crashed (want, sum).
func crashesLeave(t *testing.T, p *spec.Plan, outputs func(dir string) map[string]string, want map[string]string, sum Summary) {
	t.Helper()
	for _, point := range crashPoints {
		t.Run(point, func(t *testing.T) {
			dir, s := crashResume(t, p, point)
			for f, w := range outputs(dir) {
				if w != want[f] {
					t.Errorf("after a crash at %s: %s differs from the run that never crashed (%d bytes, want %d)", point, f, len(w), len(want[f]))
				}
			}
			if !bytes.Equal(s.JSON(), sum.JSON()) {
				t.Errorf("summary after the resume:\n%s\nwant\n%s", s.JSON(), sum.JSON())
			}
		})
	}
}

// TestCascadingWindows runs a plan whose minute windows feed ten-minute
// windows (semantics W12, what a SQL window aggregation over a windowed
// result compiles to): the minute windows write what they write alone,
// the ten-minute windows hold exactly the minute results grouped by user
// and ten minutes (an oracle over minute.jsonl), every result reaches
// them on time, conservation holds per window, and the outputs are the
// same at parallelism 2 and after a crash at each checkpointing point.
func TestCascadingWindows(t *testing.T) {
	aloneDir, _ := runSpec(t, minuteJob, nil, RunOptions{Deterministic: true})
	dir, up := jobtest.Prepare(t, minuteJob, nil, "")
	_, ten := jobtest.Prepare(t, tenMinuteJob, nil, dir)
	pt, err := ten.Graph.Path()
	if err != nil {
		t.Fatal(err)
	}
	p := cascadePlan(t, up, pt.Windows[0].Window, "ten", ten)
	path, err := p.Graph.Path()
	if err != nil {
		t.Fatalf("the cascade's graph: %v\n%s", err, p.Graph.String())
	}
	if len(path.Windows) != 2 || path.Windows[1].From != 0 || path.Windows[0].From != -1 {
		t.Fatalf("the path's windows: %+v", path.Windows)
	}
	sum := runPlan(t, p, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow})
	minutes := readFile(t, dir, "minute.jsonl")
	if want := readFile(t, aloneDir, "minute.jsonl"); minutes != want {
		t.Errorf("minute.jsonl differs from the minute job's alone: %d bytes, want %d", len(minutes), len(want))
	}
	got, want := tenLines(t, readFile(t, dir, "ten.jsonl")), tenFromMinutes(t, minutes)
	if len(want) < 100 {
		t.Errorf("the oracle has %d rows", len(want))
	}
	sameRows(t, "ten.jsonl against the minute results grouped", got, want)
	if !sum.Conserved() {
		t.Errorf("conservation violated: %s", sum.JSON())
	}
	fired := sum.Get("window.fired_on_time") + sum.Get("window.fired_late")
	if in := sum.Get("ten.records_in"); in != fired || in != sum.Get("ten.accepted") || in == 0 ||
		sum.Get("ten.late_side_output")+sum.Get("ten.late_dropped") != 0 || sum.Get("ten.results") != int64(len(got)) ||
		sum.Get("window.late_side_output") == 0 {
		t.Errorf("counts: the minute windows fired %d, the ten-minute windows read %d and accepted %d; %s", fired, in, sum.Get("ten.accepted"), sum.JSON())
	}
	outputs := func(dir string) map[string]string {
		m := map[string]string{}
		for _, f := range []string{"minute.jsonl", "late.jsonl", "bad.jsonl", "ten.jsonl"} {
			m[f] = readFile(t, dir, f)
		}
		return m
	}
	wantOut := outputs(dir)

	// At parallelism 2 the lines come in another order; the rows are the
	// same.
	dir2, _ := jobtest.Prepare(t, minuteJob, nil, "")
	sum2 := runPlan(t, p, RunOptions{Dir: dir2, Deterministic: true, Parallelism: 2, Now: jobtest.TestNow})
	if got2 := tenLines(t, readFile(t, dir2, "ten.jsonl")); !slices.Equal(got2, got) {
		t.Errorf("at parallelism 2, ten.jsonl has %d rows, %d at parallelism 1 (or other ones)", len(got2), len(got))
	}
	if !sum2.Conserved() || sum2.Get("ten.records_in") != sum.Get("ten.records_in") {
		t.Errorf("at parallelism 2: %s", sum2.JSON())
	}

	crashesLeave(t, p, outputs, wantOut, sum)
}

// TestTopN ranks the minute windows' results (semantics W13): the three
// users of each minute with the highest totals, ties by fewer orders,
// then by the key. The rows equal an oracle over the minute results, at
// parallelism 1 and 2 and after a crash at each checkpointing point; a
// SQLite table keyed by window and rank holds the same rows.
func TestTopN(t *testing.T) {
	dir, up := jobtest.Prepare(t, minuteJob, nil, "")
	_, top := jobtest.Prepare(t, strings.Replace(tenMinuteJob, "ten.jsonl", "top.jsonl", 1), nil, dir)
	op := &spec.TopNOp{OrderBy: []spec.SortKey{{Field: "total", Desc: true}, {Field: "orders"}}, N: 3, Rank: "rownum"}
	p := cascadePlan(t, up, op, "top", top)
	sum := runPlan(t, p, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow})
	// The oracle: the minute results by window, ranked.
	type row struct {
		start       int64
		user        string
		orders, tot *big.Rat
		line        string
	}
	byWindow := map[int64][]row{}
	for _, l := range strings.Split(strings.TrimSpace(readFile(t, dir, "minute.jsonl")), "\n") {
		var r struct {
			User               json.RawMessage `json:"user_id"`
			Start, End         int64
			Orders, Total, Top json.Number
		}
		var m map[string]json.RawMessage
		d := json.NewDecoder(strings.NewReader(l))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			t.Fatal(err)
		}
		r.User = m["user_id"]
		for k, dst := range map[string]*int64{"window_start": &r.Start, "window_end": &r.End} {
			if err := json.Unmarshal(m[k], dst); err != nil {
				t.Fatal(err)
			}
		}
		o, _ := new(big.Rat).SetString(string(m["orders"]))
		tot, _ := new(big.Rat).SetString(string(m["total"]))
		byWindow[r.Start] = append(byWindow[r.Start], row{start: r.Start, user: string(r.User), orders: o, tot: tot,
			line: fmt.Sprintf("%d %d user=%s orders=%s total=%s top=%s", r.Start, r.End, r.User, m["orders"], m["total"], m["top"])})
	}
	var want []string
	for _, rows := range byWindow {
		sort.Slice(rows, func(a, b int) bool {
			if c := rows[a].tot.Cmp(rows[b].tot); c != 0 {
				return c > 0
			}
			if c := rows[a].orders.Cmp(rows[b].orders); c != 0 {
				return c < 0
			}
			return rows[a].user < rows[b].user
		})
		for i, r := range rows[:min(3, len(rows))] {
			want = append(want, fmt.Sprintf("rank=%d %s", i+1, r.line))
		}
	}
	sort.Strings(want)
	lines := func(dir string) []string {
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(readFile(t, dir, "top.jsonl")), "\n") {
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatal(err)
			}
			if string(m["firing"]) != `"on_time"` {
				t.Errorf("a ranked row fired %s: %s", m["firing"], l)
			}
			got = append(got, fmt.Sprintf("rank=%s %s %s user=%s orders=%s total=%s top=%s", m["rownum"], m["window_start"], m["window_end"], m["user_id"], m["orders"], m["total"], m["top"]))
		}
		sort.Strings(got)
		return got
	}
	got := lines(dir)
	if len(want) < 3*len(byWindow)-5 {
		t.Errorf("the oracle has %d rows for %d windows", len(want), len(byWindow))
	}
	sameRows(t, "top.jsonl against the oracle", got, want)
	if !sum.Conserved() || sum.Get("top.results") != int64(len(want)) || sum.Get("top.records_in") != sum.Get("window.fired_on_time") {
		t.Errorf("counts: %s", sum.JSON())
	}

	dir2, _ := jobtest.Prepare(t, minuteJob, nil, "")
	runPlan(t, p, RunOptions{Dir: dir2, Deterministic: true, Parallelism: 2, Now: jobtest.TestNow})
	if got2 := lines(dir2); !slices.Equal(got2, got) {
		t.Errorf("at parallelism 2 top.jsonl has %d rows (or other ones), %d at parallelism 1", len(got2), len(got))
	}
	topFile := func(dir string) map[string]string {
		return map[string]string{"top.jsonl": readFile(t, dir, "top.jsonl")}
	}
	crashesLeave(t, p, topFile, topFile(dir), sum)

	// In a SQLite table the rows are keyed by rank and window.
	dir3, _ := jobtest.Prepare(t, minuteJob, nil, "")
	_, topDB := jobtest.Prepare(t, strings.Replace(tenMinuteJob, "results: {type: jsonl, path: ten.jsonl}", "results: {type: sqlite, path: top.db}", 1), nil, dir3)
	runPlan(t, cascadePlan(t, up, op, "top", topDB), RunOptions{Dir: dir3, Deterministic: true, Now: jobtest.TestNow})
	db, err := sql.Open("sqlite", filepath.Join(dir3, "top.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n, ranks int
	if err := db.QueryRow(`SELECT count(*), count(DISTINCT rownum) FROM results`).Scan(&n, &ranks); err != nil {
		t.Fatal(err)
	}
	if n != len(want) || ranks != 3 {
		t.Errorf("the table holds %d rows of %d ranks, want %d of 3", n, ranks, len(want))
	}
}

// rightJob reads jobtest.OrderJob's input into the minute windows per
// user of a join's right side: how many distinct amounts, and the top.
const rightJob = `
name: right
source: {type: file, path: none.jsonl}
watermark: {max_out_of_orderness: 20s}
key: [user_id]
window: {type: tumbling, size: 1m}
aggregate:
  - {name: amounts, fn: count_distinct, field: amount}
  - {name: top, fn: max, field: amount}
sinks:
  results: {type: jsonl, path: right.jsonl}
  late: {type: jsonl, path: right_late.jsonl}
`

// TestWindowJoin joins two windows over one read (semantics W14): the
// minute windows per user (orders, total) with the minute windows per
// user of distinct amounts (amounts, top), on the user and orders =
// amounts, which some groups meet and some do not. For each join type
// the joined rows equal an oracle over the two windows' own results;
// the full join's are the same at parallelism 2 and after a crash at
// each checkpointing point.
func TestWindowJoin(t *testing.T) {
	dir, left := jobtest.Prepare(t, minuteJob, nil, "")
	_, right := jobtest.Prepare(t, rightJob, nil, dir)
	_, joined := jobtest.Prepare(t, strings.Replace(tenMinuteJob, "ten.jsonl", "joined.jsonl", 1), nil, dir)
	two := withWindow(t, left, right, "right")
	plan := func(typ spec.JoinType) *spec.Plan {
		var l, r spec.NodeID = -1, -1
		for _, n := range two.Graph.Nodes {
			if _, ok := n.Op.(*spec.WindowOp); ok {
				if l < 0 {
					l = n.ID
				} else {
					r = n.ID
				}
			}
		}
		op := &spec.JoinOp{Type: typ, On: []spec.JoinOn{{Left: "user_id", Right: "user_id"}, {Left: "orders", Right: "amounts"}},
			Columns: []spec.JoinColumn{{Name: "total", Field: "total"}, {Name: "top", Right: true, Field: "top"}}}
		po, err := joined.Graph.Path()
		if err != nil {
			t.Fatal(err)
		}
		res := po.Windows[0].Results[0]
		q := *two
		id := spec.NodeID(len(two.Graph.Nodes))
		q.Graph.Nodes = append(slices.Clone(two.Graph.Nodes),
			spec.Node{ID: id, Name: "joined", Op: op, Inputs: []spec.Edge{{From: l}, {From: r}}},
			spec.Node{ID: id + 1, Name: "joined.results", Op: &spec.SinkOp{Role: res.Role, Name: "joined", Path: "joined.results", Config: res.Config}, Inputs: []spec.Edge{{From: id}}})
		if err := q.Graph.Validate(); err != nil {
			t.Fatal(err)
		}
		return &q
	}
	// rows reads a results file as (window_start, user) → line fields.
	type side struct{ user, count, val string }
	rows := func(dir, file, count, val string) map[[2]string]side {
		m := map[[2]string]side{}
		for _, l := range strings.Split(strings.TrimSpace(readFile(t, dir, file)), "\n") {
			var r map[string]json.RawMessage
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			m[[2]string{string(r["window_start"]), string(r["user_id"])}] = side{string(r["user_id"]), string(r[count]), string(r[val])}
		}
		return m
	}
	oracle := func(dir string, typ spec.JoinType) []string {
		ls, rs := rows(dir, "minute.jsonl", "orders", "total"), rows(dir, "right.jsonl", "amounts", "top")
		var out []string
		for k, l := range ls {
			r, ok := rs[k]
			switch {
			case ok && r.count == l.count:
				out = append(out, fmt.Sprintf("%s %s orders=%s total=%s top=%s", k[0], l.user, l.count, l.val, r.val))
			case typ == spec.LeftJoin || typ == spec.FullJoin:
				out = append(out, fmt.Sprintf("%s %s orders=%s total=%s top=null", k[0], l.user, l.count, l.val))
			}
		}
		for k, r := range rs {
			if l, ok := ls[k]; (!ok || l.count != r.count) && (typ == spec.RightJoin || typ == spec.FullJoin) {
				out = append(out, fmt.Sprintf("%s %s orders=%s total=null top=%s", k[0], r.user, r.count, r.val))
			}
		}
		sort.Strings(out)
		return out
	}
	got := func(dir string) []string {
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(readFile(t, dir, "joined.jsonl")), "\n") {
			var r map[string]json.RawMessage
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s %s orders=%s total=%s top=%s", r["window_start"], r["user_id"], r["orders"], r["total"], r["top"]))
		}
		sort.Strings(out)
		return out
	}
	var fullSum Summary
	var fullDir string
	var p *spec.Plan
	for _, typ := range []spec.JoinType{spec.InnerJoin, spec.LeftJoin, spec.RightJoin, spec.FullJoin} {
		d := t.TempDir()
		p = plan(typ)
		sum := runPlan(t, p, RunOptions{Dir: d, Deterministic: true, Now: jobtest.TestNow})
		g, w := got(d), oracle(d, typ)
		sameRows(t, fmt.Sprintf("the %v join against the oracle", typ), g, w)
		in := sum.Get("window.fired_on_time") + sum.Get("right.fired_on_time")
		if !sum.Conserved() || sum.Get("joined.records_in") != in || sum.Get("joined.accepted") != in || sum.Get("joined.results") != int64(len(g)) {
			t.Errorf("%v join: counts %s", typ, sum.JSON())
		}
		switch typ {
		case spec.InnerJoin:
			if len(g) < 50 || len(g) > len(rows(d, "minute.jsonl", "orders", "total"))-50 {
				t.Errorf("the inner join has %d rows: the test needs groups that match and groups that do not", len(g))
			}
		case spec.FullJoin:
			fullSum, fullDir = sum, d
		}
	}

	d2 := t.TempDir()
	runPlan(t, p, RunOptions{Dir: d2, Deterministic: true, Parallelism: 2, Now: jobtest.TestNow})
	if g2, w := got(d2), oracle(d2, spec.FullJoin); !slices.Equal(g2, w) {
		t.Errorf("at parallelism 2 the full join has %d rows, the oracle %d", len(g2), len(w))
	}
	joinedFile := func(dir string) map[string]string {
		return map[string]string{"joined.jsonl": readFile(t, dir, "joined.jsonl")}
	}
	crashesLeave(t, p, joinedFile, joinedFile(fullDir), fullSum)
}

// payJob is a second source for TestTwoSources: other orders (another
// seed, fewer records) over the same half hour, in minute windows per
// user, with dead letters of its own.
var payJob = strings.NewReplacer(
	"name: orders", "name: pay",
	"records: 30000", "records: 12000",
	"seed: 3", "seed: 11",
	"allowed_lateness: 3m\n", "",
	"trigger: {type: continuous, interval: 20s}\n", "",
	"  - {name: users, fn: count_distinct, field: user_id}\n", "",
	"  - {name: orders, fn: count}\n", "  - {name: pays, fn: count}\n",
	"  - {name: total, fn: sum, field: amount}\n", "  - {name: paid, fn: sum, field: amount}\n",
	"late: {type: jsonl, path: late.jsonl}", "late: {type: jsonl, path: pay_late.jsonl}",
	"dead_letter: {type: jsonl, path: bad.jsonl}", "dead_letter: {type: jsonl, path: pay_bad.jsonl}",
).Replace(fmt.Sprintf(jobtest.OrderJob, "jsonl", "pay.jsonl"))

// TestTwoSources runs a plan that reads two sources, each with its own
// decode, watermarks, dead letters and minute windows, and joins the two
// windows' results per user (semantics W14; the join fires a window once
// the watermarks of both sides passed it). Each source's outputs are
// what its job alone writes, the joined rows equal an oracle over the
// two windows' results, conservation holds per window with its own
// source's counts, and the outputs are the same after a crash at each
// checkpointing point (both sources resume from their positions).
func TestTwoSources(t *testing.T) {
	if !strings.Contains(payJob, "seed: 11") || !strings.Contains(payJob, "paid") {
		t.Fatal("the pay job was not rewritten")
	}
	minuteDir, minuteSum := runSpec(t, minuteJob, nil, RunOptions{Deterministic: true})
	payDir, paySum := runSpec(t, payJob, nil, RunOptions{Deterministic: true})

	dir, left := jobtest.Prepare(t, minuteJob, nil, "")
	_, right := jobtest.Prepare(t, payJob, nil, dir)
	_, joined := jobtest.Prepare(t, strings.Replace(tenMinuteJob, "ten.jsonl", "joined.jsonl", 1), nil, dir)
	// The right plan's nodes, renumbered after the left plan's, its
	// source carrying its settings; then the join of the two windows.
	q := *left
	q.Graph.Nodes = slices.Clone(left.Graph.Nodes)
	off := spec.NodeID(len(q.Graph.Nodes))
	var lw, rw spec.NodeID = -1, -1
	for _, n := range q.Graph.Nodes {
		if _, ok := n.Op.(*spec.WindowOp); ok {
			lw = n.ID
		}
	}
	for _, n := range right.Graph.Nodes {
		m := spec.Node{ID: n.ID + off, Name: "pay." + n.Name, Op: n.Op}
		for _, e := range n.Inputs {
			m.Inputs = append(m.Inputs, spec.Edge{From: e.From + off, Port: e.Port})
		}
		switch op := n.Op.(type) {
		case *spec.SourceOp:
			src := *op
			src.Settings = right
			m.Op = &src
		case *spec.WindowOp:
			rw = m.ID
		case *spec.SinkOp:
			s := *op
			s.Name = "pay_" + s.Name
			m.Op = &s
		}
		q.Graph.Nodes = append(q.Graph.Nodes, m)
	}
	po, err := joined.Graph.Path()
	if err != nil {
		t.Fatal(err)
	}
	res := po.Windows[0].Results[0]
	id := spec.NodeID(len(q.Graph.Nodes))
	q.Graph.Nodes = append(q.Graph.Nodes,
		spec.Node{ID: id, Name: "joined", Op: &spec.JoinOp{Type: spec.FullJoin, On: []spec.JoinOn{{Left: "user_id", Right: "user_id"}},
			Columns: []spec.JoinColumn{{Name: "orders", Field: "orders"}, {Name: "pays", Right: true, Field: "pays"}, {Name: "paid", Right: true, Field: "paid"}}},
			Inputs: []spec.Edge{{From: lw}, {From: rw}}},
		spec.Node{ID: id + 1, Name: "joined.results", Op: &spec.SinkOp{Role: res.Role, Name: "joined", Path: "joined.results", Config: res.Config}, Inputs: []spec.Edge{{From: id}}})
	if err := q.Graph.Validate(); err != nil {
		t.Fatal(err)
	}
	p := &q
	path, err := p.Graph.Path()
	if err != nil {
		t.Fatalf("%v\n%s", err, p.Graph.String())
	}
	if len(path.Reads) != 2 || path.Windows[1].Read != 1 || path.Reads[1].DeadLetter == nil {
		t.Fatalf("the path's reads: %+v", path.Reads)
	}
	sum := runPlan(t, p, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow})
	for file, want := range map[string]string{
		"minute.jsonl": readFile(t, minuteDir, "minute.jsonl"), "bad.jsonl": readFile(t, minuteDir, "bad.jsonl"), "late.jsonl": readFile(t, minuteDir, "late.jsonl"),
		"pay.jsonl": readFile(t, payDir, "pay.jsonl"), "pay_bad.jsonl": readFile(t, payDir, "pay_bad.jsonl"), "pay_late.jsonl": readFile(t, payDir, "pay_late.jsonl"),
	} {
		// A late line carries its job's spec hash and name: the plan of
		// two sources is another job than either alone.
		noHash := regexp.MustCompile(`"spec":"[0-9a-f]+"|"job":"[^"]*"`)
		if got := noHash.ReplaceAllString(readFile(t, dir, file), `-`); got != noHash.ReplaceAllString(want, `-`) || want == "" {
			t.Errorf("%s differs from its job's alone (%d bytes, want %d)", file, len(got), len(want))
		}
	}
	// The oracle: the two windows' results joined by user and window.
	type row struct{ orders, pays, paid string }
	rows := map[[2]string]*row{}
	at := func(m map[string]json.RawMessage) *row {
		k := [2]string{string(m["window_start"]), string(m["user_id"])}
		if rows[k] == nil {
			rows[k] = &row{"null", "null", "null"}
		}
		return rows[k]
	}
	each := func(dir, file string, fn func(map[string]json.RawMessage)) {
		for _, l := range strings.Split(strings.TrimSpace(readFile(t, dir, file)), "\n") {
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatal(err)
			}
			fn(m)
		}
	}
	each(dir, "minute.jsonl", func(m map[string]json.RawMessage) { at(m).orders = string(m["orders"]) })
	each(dir, "pay.jsonl", func(m map[string]json.RawMessage) { r := at(m); r.pays, r.paid = string(m["pays"]), string(m["paid"]) })
	var want, got []string
	for k, r := range rows {
		want = append(want, fmt.Sprintf("%s %s orders=%s pays=%s paid=%s", k[0], k[1], r.orders, r.pays, r.paid))
	}
	joinedRows := func(dir string) []string {
		var out []string
		each(dir, "joined.jsonl", func(m map[string]json.RawMessage) {
			out = append(out, fmt.Sprintf("%s %s orders=%s pays=%s paid=%s", m["window_start"], m["user_id"], m["orders"], m["pays"], m["paid"]))
		})
		sort.Strings(out)
		return out
	}
	sort.Strings(want)
	got = joinedRows(dir)
	sameRows(t, "joined.jsonl against the oracle", got, want)
	if !sum.Conserved() {
		t.Errorf("conservation violated: %s", sum.JSON())
	}
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"records_in", sum.Get("records_in"), minuteSum.Get("records_in") + paySum.Get("records_in")},
		{"window.records_in", sum.Get("window.records_in"), minuteSum.Get("records_in")},
		{"window.dead_letter", sum.Get("window.dead_letter"), minuteSum.Get("dead_letter")},
		{"window.late_side_output", sum.Get("window.late_side_output"), minuteSum.Get("late_side_output")},
		{"pay.window.records_in", sum.Get("pay.window.records_in"), paySum.Get("records_in")},
		{"pay.window.dead_letter", sum.Get("pay.window.dead_letter"), paySum.Get("dead_letter")},
		{"pay.window.results", sum.Get("pay.window.results"), paySum.Get("results")},
		{"joined.results", sum.Get("joined.results"), int64(len(want))},
	} {
		if c.got != c.want || c.want == 0 {
			t.Errorf("%s = %d, want %d (%s)", c.name, c.got, c.want, sum.JSON())
		}
	}

	d2 := t.TempDir()
	runPlan(t, p, RunOptions{Dir: d2, Deterministic: true, Parallelism: 2, Now: jobtest.TestNow})
	if g2 := joinedRows(d2); !slices.Equal(g2, got) {
		t.Errorf("at parallelism 2 joined.jsonl has %d rows (or other ones), %d at parallelism 1", len(g2), len(got))
	}
	outputs := func(dir string) map[string]string {
		m := map[string]string{}
		for _, f := range []string{"minute.jsonl", "bad.jsonl", "late.jsonl", "pay.jsonl", "pay_bad.jsonl", "pay_late.jsonl", "joined.jsonl"} {
			m[f] = readFile(t, dir, f)
		}
		return m
	}
	crashesLeave(t, p, outputs, outputs(dir), sum)
}
