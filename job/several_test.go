package job

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/spec"
)

// severalJob is jobtest.OrderJob with three results sinks fed from its
// one source: two files and a SQLite table.
var severalJob = strings.Replace(fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl"), "  results: {type: jsonl, path: out.jsonl}\n",
	"  results:\n    - {type: jsonl, path: out.jsonl}\n    - {type: sqlite, path: results.db}\n    - {type: jsonl, path: copy.jsonl}\n", 1)

// mustParse compiles the YAML job y.
func mustParse(t *testing.T, y string) *spec.Plan {
	t.Helper()
	p, err := spec.Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// readFile is the content of dir/name.
func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSeveralResultsSinks runs a plan whose graph feeds three results
// sinks from one source read: each holds what the same job with that
// sink alone writes, the summary counts each result once, and a run that
// crashes at each checkpointing point and resumes ends with the same
// three outputs.
func TestSeveralResultsSinks(t *testing.T) {
	if !strings.Contains(severalJob, "copy.jsonl") {
		t.Fatal("the job was not rewritten")
	}
	p, err := spec.Parse([]byte(severalJob))
	if err != nil {
		t.Fatal(err)
	}
	path, err := p.Graph.Path()
	if err != nil {
		t.Fatal(err)
	}
	if len(path.Results()) != 3 {
		t.Fatalf("the graph has %d results sinks, want 3:\n%s", len(path.Results()), p.Graph.String())
	}

	jsonlDir, jsonlSum := runSpec(t, fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl"), nil, RunOptions{Deterministic: true})
	sqliteDir, _ := runSpec(t, fmt.Sprintf(jobtest.OrderJob, "sqlite", "results.db"), nil, RunOptions{Deterministic: true})
	want := map[string]string{
		"out.jsonl":  readFile(t, jsonlDir, "out.jsonl"),
		"copy.jsonl": readFile(t, jsonlDir, "out.jsonl"),
		"results.db": dumpOrders(t, filepath.Join(sqliteDir, "results.db")),
		"late.jsonl": readFile(t, jsonlDir, "late.jsonl"),
		"bad.jsonl":  readFile(t, jsonlDir, "bad.jsonl"),
	}
	if want["out.jsonl"] == "" || want["results.db"] == "" {
		t.Fatal("the reference runs wrote no results")
	}
	outputs := func(t *testing.T, dir string) map[string]string {
		return map[string]string{
			"out.jsonl":  readFile(t, dir, "out.jsonl"),
			"copy.jsonl": readFile(t, dir, "copy.jsonl"),
			"results.db": dumpOrders(t, filepath.Join(dir, "results.db")),
			"late.jsonl": readFile(t, dir, "late.jsonl"),
			"bad.jsonl":  readFile(t, dir, "bad.jsonl"),
		}
	}
	check := func(t *testing.T, what string, got map[string]string) {
		t.Helper()
		for name, w := range want {
			if got[name] != w {
				t.Errorf("%s: %s differs from the job with that sink alone: %d bytes, want %d", what, name, len(got[name]), len(w))
			}
		}
	}

	dir, sum := runSpec(t, severalJob, nil, RunOptions{Deterministic: true})
	check(t, "one run", outputs(t, dir))
	if !bytes.Equal(sum.JSON(), jsonlSum.JSON()) {
		t.Errorf("summary with three results sinks:\n%s\nwith one:\n%s", sum.JSON(), jsonlSum.JSON())
	}

	// Crashes while checkpointing, then resumes: the outputs are those of
	// a run that never crashed.
	for _, point := range crashPoints {
		t.Run(point, func(t *testing.T) {
			dir, s := crashResume(t, p, point)
			check(t, "after a crash at "+point, outputs(t, dir))
			if !bytes.Equal(s.JSON(), jsonlSum.JSON()) {
				t.Errorf("summary after the resume:\n%s\nwant\n%s", s.JSON(), jsonlSum.JSON())
			}
		})
	}
}

// crashPoints are the checkpointing points the several-sinks tests crash
// at.
var crashPoints = []string{"part-written", "after-manifest", "sink-committed"}

// crashResume runs plan p with a checkpoint before every read in a new
// directory, crashing at point, then resumes it to its end and returns
// the directory and the resumed run's summary.
func crashResume(t *testing.T, p *spec.Plan, point string) (string, Summary) {
	t.Helper()
	dir := t.TempDir()
	o := RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, CheckpointDir: filepath.Join(dir, "ck"),
		CheckpointInterval: time.Millisecond, CheckpointClock: jobtest.EveryRead()}
	crashRun(t, p, o, point, 25)
	j, err := Open(p, o)
	if err != nil {
		t.Fatal(err)
	}
	if j.RestoredAt().IsZero() {
		t.Fatal("the resume restored no checkpoint")
	}
	s, err := j.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return dir, s
}

// TestResultsSinkAddedAndRemoved: a checkpoint of a job with one results
// sink resumes with a second one added, saying so; a checkpoint of a job
// with two is refused when the second is gone, naming it.
func TestResultsSinkAddedAndRemoved(t *testing.T) {
	one := fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl")
	two := strings.Replace(one, "  results: {type: jsonl, path: out.jsonl}\n",
		"  results:\n    - {type: jsonl, path: out.jsonl}\n    - {type: jsonl, path: copy.jsonl}\n", 1)
	dir := t.TempDir()
	var infos []string
	o := RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, CheckpointDir: filepath.Join(dir, "ck"),
		CheckpointInterval: time.Millisecond, CheckpointClock: jobtest.EveryRead(), Info: func(s string) { infos = append(infos, s) }}
	crashRun(t, mustParse(t, one), o, "after-manifest", 3)
	j, err := Open(mustParse(t, two), o)
	if err != nil {
		t.Fatalf("resuming with a second results sink: %v", err)
	}
	if _, err := j.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(infos, "\n"), "an added sink sinks.results[1]") {
		t.Errorf("the resume did not say the sink was added: %q", infos)
	}
	// The added sink holds what came after the checkpoint: a suffix of
	// the first sink's results. Its run crashed again and resumed, which
	// cut it back to its own length, not the first sink's.
	dir4 := t.TempDir()
	o4 := o
	o4.Dir, o4.CheckpointDir = dir4, filepath.Join(dir4, "ck")
	crashRun(t, mustParse(t, one), o4, "after-manifest", 3)
	crashRun(t, mustParse(t, two), o4, "after-manifest", 5)
	if j, err := Open(mustParse(t, two), o4); err != nil {
		t.Fatal(err)
	} else if _, err := j.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	ref, _ := runSpec(t, one, nil, RunOptions{Deterministic: true})
	out, cp, want := readFile(t, dir4, "out.jsonl"), readFile(t, dir4, "copy.jsonl"), readFile(t, ref, "out.jsonl")
	if out != want || cp == "" || len(cp) >= len(out) || !strings.HasSuffix(out, cp) || !strings.HasPrefix(cp, `{"user_id"`) {
		t.Errorf("after two crashes: out.jsonl %d bytes (want %d, equal: %v), the added copy.jsonl %d bytes, a suffix of it: %v",
			len(out), len(want), out == want, len(cp), strings.HasSuffix(out, cp))
	}

	// A SQLite results sink added on resume starts as at a fresh start:
	// the rows an earlier run of the job left in its table go, and it
	// holds the resumed run's results only.
	withTable := strings.Replace(one, "  results: {type: jsonl, path: out.jsonl}\n",
		"  results:\n    - {type: jsonl, path: out.jsonl}\n    - {type: sqlite, path: results.db}\n", 1)
	dir3 := t.TempDir()
	earlier := RunOptions{Dir: dir3, Deterministic: true, Now: jobtest.TestNow.Add(-time.Hour)}
	if j, err := Open(mustParse(t, fmt.Sprintf(jobtest.OrderJob, "sqlite", "results.db")), earlier); err != nil {
		t.Fatal(err)
	} else if _, err := j.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	o.Dir, o.CheckpointDir = dir3, filepath.Join(dir3, "ck")
	crashRun(t, mustParse(t, one), o, "after-manifest", 3)
	j, err = Open(mustParse(t, withTable), o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir3, "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var runs, rows int64
	if err := db.QueryRow(`SELECT count(DISTINCT run), count(*) FROM results`).Scan(&runs, &rows); err != nil {
		t.Fatal(err)
	}
	var run int64
	if err := db.QueryRow(`SELECT min(run) FROM results`).Scan(&run); err != nil {
		t.Fatal(err)
	}
	if runs != 1 || rows == 0 || run != jobtest.TestNow.UnixMilli() {
		t.Errorf("the added table holds %d rows of %d runs (the lowest %d); want rows of the resumed run %d only", rows, runs, run, jobtest.TestNow.UnixMilli())
	}

	dir2 := t.TempDir()
	o.Dir, o.CheckpointDir = dir2, filepath.Join(dir2, "ck")
	crashRun(t, mustParse(t, two), o, "after-manifest", 3)
	_, err = Open(mustParse(t, one), o)
	if err == nil || !strings.Contains(err.Error(), "sinks.results[1] removed") {
		t.Fatalf("resuming without the second results sink: %v", err)
	}
	// The same sinks in another order: refused, saying so.
	swapped := strings.Replace(two, "    - {type: jsonl, path: out.jsonl}\n    - {type: jsonl, path: copy.jsonl}\n",
		"    - {type: jsonl, path: copy.jsonl}\n    - {type: jsonl, path: out.jsonl}\n", 1)
	_, err = Open(mustParse(t, swapped), o)
	if swapped == two || err == nil || !strings.Contains(err.Error(), "its results sinks are this spec's in another order") ||
		!strings.Contains(err.Error(), "sinks.results[0].path") || strings.Contains(err.Error(), "sinks.results.path") {
		t.Fatalf("resuming with the results sinks swapped: %v", err)
	}
	// Another sink, not a reorder: no such hint.
	other := strings.Replace(two, "copy.jsonl", "other.jsonl", 1)
	if _, err = Open(mustParse(t, other), o); err == nil || strings.Contains(err.Error(), "another order") {
		t.Fatalf("resuming with another second sink: %v", err)
	}
}

// fiveMinuteJob reads jobtest.OrderJob's input into 5-minute windows per
// user, without allowed lateness or early firings: other windows,
// aggregates and late decisions than OrderJob's, from the fields it
// reads too (a record that one window of a path cannot read is one dead
// letter for all: with another key field, a record without it would be
// the other window's dead letter too).
var fiveMinuteJob = strings.NewReplacer(
	"window: {type: tumbling, size: 1m}", "window: {type: tumbling, size: 5m}",
	"allowed_lateness: 3m\n", "",
	"trigger: {type: continuous, interval: 20s}\n", "",
	"  - {name: users, fn: count_distinct, field: user_id}\n", "  - {name: top, fn: max, field: amount}\n",
	"  late: {type: jsonl, path: late.jsonl}\n", "  late: {type: jsonl, path: five_late.jsonl}\n",
	"  dead_letter: {type: jsonl, path: bad.jsonl}\n", "",
).Replace(fmt.Sprintf(jobtest.OrderJob, "jsonl", "five.jsonl"))

// withWindow returns plan a with plan b's window added, fed by a's
// watermarks (one read for both), as window node name with b's results
// and late sinks (named name and name_late).
func withWindow(t *testing.T, a, b *spec.Plan, name string) *spec.Plan {
	t.Helper()
	pb, err := b.Graph.Path()
	if err != nil {
		t.Fatal(err)
	}
	pa, err := a.Graph.Path()
	if err != nil {
		t.Fatal(err)
	}
	var wm spec.NodeID = -1
	for _, n := range a.Graph.Nodes {
		if n.Op == pa.Watermark {
			wm = n.ID
		}
	}
	w := spec.NodeID(len(a.Graph.Nodes))
	bw := pb.Windows[0]
	q := *a
	q.Graph.Nodes = append(slices.Clone(a.Graph.Nodes),
		spec.Node{ID: w, Name: name, Op: bw.Window, Inputs: []spec.Edge{{From: wm}}},
		spec.Node{ID: w + 1, Name: name + ".results", Op: &spec.SinkOp{Role: bw.Results[0].Role, Name: name, Path: name + ".results", Config: bw.Results[0].Config}, Inputs: []spec.Edge{{From: w}}},
		spec.Node{ID: w + 2, Name: name + ".late", Op: &spec.SinkOp{Role: bw.Late.Role, Name: name + "_late", Path: name + ".late", Config: bw.Late.Config}, Inputs: []spec.Edge{{From: w, Port: spec.Late}}})
	if err := q.Graph.Validate(); err != nil {
		t.Fatal(err)
	}
	return &q
}

// TestSeveralWindows runs a plan whose graph feeds two windows from one
// read (what a SQL statement set compiles to): OrderJob's per-user minute
// windows with allowed lateness and early firings, and 5-minute windows
// without lateness. Each window's results and late records are
// byte for byte what a job of that window alone writes, the dead letters
// are written once, and the summary counts each window apart (hourly
// style names: five.accepted), each conserving the records read.
func TestSeveralWindows(t *testing.T) {
	one := fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl")
	oneDir, oneSum := runSpec(t, one, nil, RunOptions{Deterministic: true})
	fiveDir, fiveSum := runSpec(t, fiveMinuteJob, nil, RunOptions{Deterministic: true})

	dir, a := jobtest.Prepare(t, one, nil, "")
	_, b := jobtest.Prepare(t, fiveMinuteJob, nil, dir)
	p := withWindow(t, a, b, "five")
	j, err := Open(p, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := j.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"out.jsonl": readFile(t, oneDir, "out.jsonl"), "late.jsonl": readFile(t, oneDir, "late.jsonl"), "bad.jsonl": readFile(t, oneDir, "bad.jsonl"),
		"five.jsonl": readFile(t, fiveDir, "five.jsonl"), "five_late.jsonl": readFile(t, fiveDir, "five_late.jsonl"),
	} {
		if want == "" && file != "five_late.jsonl" {
			t.Fatalf("the reference run wrote no %s", file)
		}
		// A late line carries its job's spec hash: the plan of two
		// windows is another job than either alone.
		noHash := regexp.MustCompile(`"spec":"[0-9a-f]+"`)
		got := noHash.ReplaceAllString(readFile(t, dir, file), `"spec":"-"`)
		if want = noHash.ReplaceAllString(want, `"spec":"-"`); got != want {
			gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
			for i := range min(len(gl), len(wl)) {
				if gl[i] != wl[i] {
					t.Errorf("%s differs from the run of its window alone at line %d:\n%s\nwant\n%s", file, i+1, gl[i], wl[i])
					break
				}
			}
		}
	}
	if !sum.Conserved() {
		t.Errorf("conservation violated: %s", sum.JSON())
	}
	for _, c := range []struct {
		name string
		got  int64
		want int64
	}{
		{"records_in", sum.Get("records_in"), oneSum.Get("records_in")},
		{"dead_letter", sum.Get("dead_letter"), oneSum.Get("dead_letter")},
		{"window.accepted", sum.Get("window.accepted"), oneSum.Get("accepted")},
		{"window.late_side_output", sum.Get("window.late_side_output"), oneSum.Get("late_side_output")},
		{"window.results", sum.Get("window.results"), oneSum.Get("results")},
		{"window.late_lines", sum.Get("window.late_lines"), oneSum.Get("late_lines")},
		{"five.accepted", sum.Get("five.accepted"), fiveSum.Get("accepted")},
		{"five.late_side_output", sum.Get("five.late_side_output"), fiveSum.Get("late_side_output")},
		{"five.results", sum.Get("five.results"), fiveSum.Get("results")},
		{"five.fired_on_time", sum.Get("five.fired_on_time"), fiveSum.Get("fired_on_time")},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, the run of its window alone %d (summary %s)", c.name, c.got, c.want, sum.JSON())
		}
	}
	if sum.Get("accepted") != 0 || sum.Get("five.late_side_output") == 0 || sum.Get("five.late_side_output") == sum.Get("window.late_side_output") {
		t.Errorf("the windows' counts do not tell them apart: %s", sum.JSON())
	}
	outputs := func(dir string) map[string]string {
		m := map[string]string{}
		for _, f := range []string{"out.jsonl", "late.jsonl", "bad.jsonl", "five.jsonl", "five_late.jsonl"} {
			m[f] = readFile(t, dir, f)
		}
		return m
	}
	// Crashes while checkpointing, then resumes: the outputs and the
	// summary are those of the run that never crashed.
	crashesLeave(t, p, outputs, outputs(dir), sum)
}

// TestSinkNotAnyInput: a sink whose file is the input file of any of the
// plan's reads is refused, the second read's too (a plan of two sources
// checked only the first's).
func TestSinkNotAnyInput(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a.jsonl", "b.jsonl", "out.jsonl"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	j := &Job{runDir: dir, reads: []*read{
		{plan: &spec.Plan{Source: spec.Source{Path: "a.jsonl"}}},
		{plan: &spec.Plan{Source: spec.Source{Path: "b.jsonl"}}},
	}}
	for path, want := range map[string]string{
		"a.jsonl":   "sink a.jsonl is the input file a.jsonl",
		"b.jsonl":   "sink b.jsonl is the input file b.jsonl",
		"out.jsonl": "",
	} {
		err := j.notInput(&spec.Sink{Path: path})
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
}
