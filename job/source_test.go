package job

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/etime"
)

// memInputs are the inputs of the memsource kind, by their path setting.
var memInputs sync.Map // string → []string

func init() {
	connector.Default.MustRegister(connector.Kind{Name: "memsource", Doc: "reads lines from memory (job tests)",
		// Its settings are its own (Source.Extra): no field of the spec
		// holds them.
		Source: &connector.SourceKind{Fields: []connector.Field{{Name: "mem.input", Required: true, Doc: "the input's name"}},
			Open: func(_ context.Context, so connector.SourceOpen) (connector.OpenedSource, error) {
				v, ok := memInputs.Load(so.Settings.String("mem.input"))
				if !ok {
					return connector.OpenedSource{}, fmt.Errorf("memsource: no input %q", so.Settings.String("mem.input"))
				}
				if v == nil {
					return connector.OpenedSource{Source: unreachable{}, Name: "mem", Bounded: true}, nil
				}
				return connector.OpenedSource{Source: memSource(v.([]string)), Name: "mem", Bounded: true}, nil
			}}})
}

// unreachable is a source whose readers cannot open (a broker that is
// not there): memInputs holds nil for it.
type unreachable struct{}

func (unreachable) Open(context.Context, int, int) (connector.Reader[connector.Line], error) {
	return nil, errors.New("memsource: the input is unreachable")
}

// memSource emits its lines on channel 0, two per Read; other channels
// emit nothing.
type memSource []string

func (s memSource) Open(_ context.Context, ch, _ int) (connector.Reader[connector.Line], error) {
	if ch > 0 {
		return &memReader{}, nil
	}
	return &memReader{lines: s}, nil
}

type memReader struct {
	lines []string
	i     int
}

func (r *memReader) Read(_ context.Context, out connector.Output[connector.Line]) (connector.ReadStatus, error) {
	for n := 0; n < 2; n++ {
		if r.i == len(r.lines) {
			return connector.Done, nil
		}
		r.i++
		out.Emit(etime.MinTime, connector.Line{Kind: connector.Data, No: int64(r.i), Text: []byte(r.lines[r.i-1]), Unchecked: true})
	}
	return connector.Emitted, nil
}

func (r *memReader) Close() error { return nil }

// TestRegisteredSourceKind runs a job whose source is a kind registered
// by this test alone, with a setting of its own, which the runner and
// the spec never heard of: its results, dead letters and summary are
// those of the same lines read from a file.
func TestRegisteredSourceKind(t *testing.T) {
	lines := []string{
		`{"user_id":"a","amount":1,"ts":1767225600000}`,
		`{"user_id":"b","amount":2,"ts":1767225601000}`,
		`{"user_id":"a","amount":`,
		`{"user_id":"a","amount":4,"ts":1767225612000}`,
		`{"user_id":"b","amount":5,"ts":1767225599000}`,
		`{"user_id":"a","amount":6,"ts":1767225625000}`,
	}
	memInputs.Store("orders", lines)
	const job = `
name: mem
source: {type: %s, %s}
watermark: {max_out_of_orderness: 1s}
key: [user_id]
window: {type: tumbling, size: 10s}
allowed_lateness: 0s
aggregate: [{name: total, fn: sum, field: amount}]
sinks:
  results: {type: jsonl, path: out.jsonl}
  late: {type: jsonl, path: late.jsonl}
  dead_letter: {type: jsonl, path: bad.jsonl}
`
	read := func(dir, name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	memDir, memSum := runSpec(t, fmt.Sprintf(job, "memsource", "mem: {input: orders}"), nil, RunOptions{Deterministic: true})
	fileDir, fileSum := runSpec(t, fmt.Sprintf(job, "file", "path: in.jsonl"), map[string]string{"in.jsonl": strings.Join(lines, "\n") + "\n"}, RunOptions{Deterministic: true})
	if !bytes.Equal(memSum.JSON(), fileSum.JSON()) {
		t.Errorf("summaries differ:\nmemsource %s\nfile      %s", memSum.JSON(), fileSum.JSON())
	}
	if memSum.Get("results") == 0 || memSum.Get("dead_letter") != 1 || memSum.Get("late_side_output") != 1 {
		t.Errorf("summary %s: want results, one dead letter and one late record", memSum.JSON())
	}
	if got, want := read(memDir, "out.jsonl"), read(fileDir, "out.jsonl"); got != want {
		t.Errorf("results differ:\nmemsource %s\nfile      %s", got, want)
	}
	if got, want := read(memDir, "late.jsonl"), read(fileDir, "late.jsonl"); got != strings.ReplaceAll(want, `"source":"in.jsonl"`, `"source":"mem"`) {
		t.Errorf("late records differ:\nmemsource %s\nfile      %s", got, want)
	}
	if got := read(memDir, "bad.jsonl"); !strings.Contains(got, `"source":"mem","line":3,"raw":"{\"user_id\":\"a\",\"amount\":"`) {
		t.Errorf("dead letter %s: want line 3 of source mem", got)
	}
}

// TestFailedFreshRunKeepsTheTable: a fresh run that fails before it
// writes a result (its input is unreachable) leaves the rows of the
// job's earlier run in its results table; a fresh run that writes
// replaces them, and says so.
func TestFailedFreshRunKeepsTheTable(t *testing.T) {
	memInputs.Store("table-orders", []string{`{"user_id":"a","amount":1,"ts":1767225600000}`, `{"user_id":"b","amount":2,"ts":1767225601000}`})
	memInputs.Store("nowhere", nil)
	const job = `
name: mem
source: {type: memsource, mem: {input: %s}}
watermark: {max_out_of_orderness: 1s}
key: [user_id]
window: {type: tumbling, size: 10s}
aggregate: [{name: orders, fn: count}]
sinks:
  results: {type: sqlite, path: results.db}
`
	dir := t.TempDir()
	count := func() int {
		db, err := sql.Open("sqlite", filepath.Join(dir, "results.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM results WHERE job = 'mem'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var warned []string
	o := RunOptions{Dir: dir, Deterministic: true, Warn: func(msg string) { warned = append(warned, msg) }}
	runSpec(t, fmt.Sprintf(job, "table-orders"), nil, o)
	if n := count(); n != 2 {
		t.Fatalf("%d rows after the first run, want 2", n)
	}
	j, err := Open(mustParse(t, fmt.Sprintf(job, "nowhere")), o)
	if err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 2 {
		t.Fatalf("opening a fresh run left %d rows of the earlier run, want 2: nothing is removed before the run writes", n)
	}
	if _, err := j.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("the run of an unreachable input: %v", err)
	}
	if n := count(); n != 2 {
		t.Fatalf("a fresh run that failed before writing left %d rows of the earlier run, want 2", n)
	}
	if len(warned) != 0 {
		t.Fatalf("warned %q", warned)
	}
	runSpec(t, fmt.Sprintf(job, "table-orders"), nil, o)
	if n := count(); n != 2 {
		t.Fatalf("%d rows after the third run, want 2", n)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], `removed its 2 rows of earlier runs from table results`) {
		t.Fatalf("warned %q, want the removal of 2 rows said", warned)
	}
}
