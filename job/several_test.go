package job

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
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
	for _, point := range []string{"part-written", "after-manifest", "sink-committed"} {
		t.Run(point, func(t *testing.T) {
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
			check(t, "after a crash at "+point, outputs(t, dir))
			if !bytes.Equal(s.JSON(), jsonlSum.JSON()) {
				t.Errorf("summary after the resume:\n%s\nwant\n%s", s.JSON(), jsonlSum.JSON())
			}
		})
	}
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

// TestSeveralWindowsRefused: a plan whose graph feeds two windows from
// one read (what SQL statement sets compile to) is refused at Open, by
// name, until the runner executes such graphs; nothing is opened.
func TestSeveralWindowsRefused(t *testing.T) {
	p := mustParse(t, fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl"))
	g := p.Graph
	var wm spec.NodeID = -1
	for _, n := range g.Nodes {
		if _, ok := n.Op.(*spec.WatermarkOp); ok {
			wm = n.ID
		}
	}
	second := spec.NodeID(len(g.Nodes))
	path, _ := g.Path()
	p.Graph.Nodes = append(slices.Clone(g.Nodes),
		spec.Node{ID: second, Name: "window2", Op: path.Windows[0].Window, Inputs: []spec.Edge{{From: wm}}},
		spec.Node{ID: second + 1, Name: "sinks.results2", Op: &spec.SinkOp{Name: "results2", Path: "sinks.results2", Config: path.Windows[0].Results[0].Config}, Inputs: []spec.Edge{{From: second}}})
	dir := t.TempDir()
	_, err := Open(p, RunOptions{Dir: dir, Deterministic: true})
	if err == nil || !strings.Contains(err.Error(), "the plan has 2 windows over its read; this runner executes one window per path") {
		t.Fatalf("Open of a plan with two windows: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) > 0 {
		t.Fatalf("the refused plan left %d files", len(ents))
	}
}
