package job

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/spec"
)

// memTables are the tables of the memtable kind, by table name: a results
// sink kind that this test registers, which the runner knows nothing of.
var memTables = struct {
	sync.Mutex
	m map[string]*memTable
}{m: map[string]*memTable{}}

func init() {
	connector.Default.MustRegister(connector.Kind{Name: "memtable", Doc: "keeps results in memory (job tests)",
		Sink: &connector.SinkKind{Roles: connector.RoleResults, Abilities: connector.AbilityIdempotent | connector.AbilityUpsert,
			Fields: []connector.Field{{Name: "table", Required: true, Doc: "the table"}, {Name: "capacity", Doc: "a setting of this kind alone"},
				{Name: "fail_write", Doc: "the table's Nth Write (of any opening) fails once, its rows lost, as a refused batch"}},
			OpenResults: func(_ context.Context, o connector.ResultsOpen) (connector.ResultsSink, error) {
				memTables.Lock()
				defer memTables.Unlock()
				name := o.Settings.String("table")
				t := memTables.m[name]
				if t == nil {
					t = &memTable{rows: map[string]connector.Row{}}
					memTables.m[name] = t
				}
				t.opened++
				t.keys, t.values, t.capacity, t.failAt = o.Keys, o.Values, o.Settings.Int("capacity"), o.Settings.Int("fail_write")
				return t, nil
			}}})
}

// memTable upserts rows by (key, window) with the (run, pane) guard, as
// the table sinks do; Write buffers until Flush.
type memTable struct {
	mu           sync.Mutex
	rows         map[string]connector.Row
	pending      []connector.Row
	opened       int
	resets       int
	keys         []string
	values       []connector.ResultColumn
	flushes      int
	capacity     int
	closed       bool
	writtenAfter bool // written after Close
	failAt       int  // the Write call that fails (0: none)
	writes       int
}

func (t *memTable) Write(_ context.Context, rows []connector.Row) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		t.writtenAfter = true
	}
	if t.writes++; t.writes == t.failAt {
		return errors.New("memtable: permission denied (fail_write)")
	}
	for _, r := range rows {
		c := r
		c.Keys, c.Values = slices.Clone(r.Keys), slices.Clone(r.Values)
		for i := range c.Keys {
			c.Keys[i].Value = slices.Clone(c.Keys[i].Value)
		}
		for i := range c.Values {
			c.Values[i].Value = slices.Clone(c.Values[i].Value)
		}
		t.pending = append(t.pending, c)
	}
	return nil
}

func (t *memTable) Flush(context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.flushes++
	for _, r := range t.pending {
		k := fmt.Sprint(string(r.Keys[0].Value), r.Start, r.End)
		old, ok := t.rows[k]
		if ok && (old.Run > r.Run || old.Run == r.Run && old.Pane > r.Pane) {
			continue
		}
		if r.Firing == "retract" {
			delete(t.rows, k)
			continue
		}
		t.rows[k] = r
	}
	t.pending = nil
	return nil
}

func (t *memTable) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	return nil
}

func (t *memTable) Idempotent() {}

func (t *memTable) Reset(context.Context) (int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := int64(len(t.rows))
	t.rows, t.resets = map[string]connector.Row{}, t.resets+1
	return n, nil
}

func (t *memTable) MaxRun(context.Context) (int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var m int64
	for _, r := range t.rows {
		m = max(m, r.Run)
	}
	return m, nil
}

// dump is the table as dumpOrders writes the orders job's SQLite table.
func (t *memTable) dump() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var lines []string
	for _, r := range t.rows {
		var user string
		fmt.Sscanf(string(r.Keys[0].Value), "%q", &user)
		vals := make([]string, len(r.Values))
		for i, v := range r.Values {
			vals[i] = string(v.Value)
		}
		lines = append(lines, fmt.Sprintln(user, int64(r.Start), int64(r.End), strings.Join(vals, " ")))
	}
	slices.SortFunc(lines, func(a, b string) int {
		var ua, ub string
		var sa, sb int64
		fmt.Sscan(a, &ua, &sa)
		fmt.Sscan(b, &ub, &sb)
		if c := strings.Compare(ua, ub); c != 0 {
			return c
		}
		return int(sa - sb)
	})
	return strings.Join(lines, "")
}

// TestRegisteredResultsKind runs the orders job with a results sink of a
// kind only the registry knows (memtable, registered above with an
// OpenResults): the runner opens it with the job's columns, starts it
// fresh, writes every result as a row and flushes it, and it ends with
// the rows the SQLite sink of the same job holds. Its own setting
// (capacity, which no other kind has) reaches it. A crash and a resume
// from the checkpoint give the same rows.
func TestRegisteredResultsKind(t *testing.T) {
	sqliteDir, _ := runSpec(t, fmt.Sprintf(jobtest.OrderJob, "sqlite", "results.db"), nil, RunOptions{Deterministic: true})
	want := dumpOrders(t, filepath.Join(sqliteDir, "results.db"))
	if want == "" {
		t.Fatal("the reference run wrote no results")
	}
	job := strings.Replace(fmt.Sprintf(jobtest.OrderJob, "memtable", "x"), "{type: memtable, path: x}", "{type: memtable, table: %s, capacity: 7}", 1)

	runSpec(t, fmt.Sprintf(job, "one"), nil, RunOptions{Deterministic: true})
	memTables.Lock()
	one := memTables.m["one"]
	memTables.Unlock()
	if one == nil {
		t.Fatal("the runner did not open the memtable sink")
	}
	if got := one.dump(); got != want {
		t.Fatalf("memtable rows differ from the SQLite sink's:\n got %.300s\nwant %.300s", got, want)
	}
	if one.resets != 1 || one.flushes == 0 || !one.closed || one.writtenAfter {
		t.Errorf("memtable: %d resets (want 1, a fresh start), %d flushes, closed %v, written after close %v", one.resets, one.flushes, one.closed, one.writtenAfter)
	}
	if want := []string{"user_id"}; !slices.Equal(one.keys, want) || len(one.values) != 3 || one.values[2].Fn != "count_distinct" || one.capacity != 7 {
		t.Errorf("memtable opened with keys %v, values %+v and capacity %d (want 7: its own setting)", one.keys, one.values, one.capacity)
	}

	// A crash after a checkpoint, then a resume: the same rows.
	crashThenResume(t, mustParse(t, fmt.Sprintf(job, "two")))
	memTables.Lock()
	two := memTables.m["two"]
	memTables.Unlock()
	if got := two.dump(); got != want {
		t.Fatalf("after a crash and a resume the memtable rows differ from the SQLite sink's:\n got %.300s\nwant %.300s", got, want)
	}
	if two.opened != 2 || two.resets != 1 {
		t.Errorf("memtable opened %d times (want 2), reset %d times (want 1: the resume keeps its rows)", two.opened, two.resets)
	}
}

// memLogs are the logs of the memlog kind, by name: a sink kind of late
// records and dead letters that this test registers, which the runner
// knows only through OpenMessages.
var memLogs = struct {
	sync.Mutex
	m map[string]*memLog
}{m: map[string]*memLog{}}

func init() {
	connector.Default.MustRegister(connector.Kind{Name: "memlog", Doc: "keeps late records and dead letters in memory (job tests)",
		Sink: &connector.SinkKind{Roles: connector.RoleLate | connector.RoleDeadLetters, RecordAbilities: connector.AbilityTransactional,
			Fields: []connector.Field{{Name: "log", Required: true, Doc: "the log"}},
			OpenMessages: func(_ context.Context, o connector.MessagesOpen) (connector.Sink[connector.Message], error) {
				memLogs.Lock()
				defer memLogs.Unlock()
				name := o.Settings.String("log")
				l := memLogs.m[name]
				if l == nil || o.Fresh {
					l = &memLog{}
					memLogs.m[name] = l
				}
				l.opened++
				return l, nil
			}}})
}

// memLog appends the messages' lines; it is Transactional: PreCommit
// returns its length, Recover cuts it back there, Abort leaves the tail
// for Recover.
type memLog struct {
	mu       sync.Mutex
	lines    []string
	opened   int
	recovers int
}

func (l *memLog) Write(_ context.Context, ms []connector.Message) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range ms {
		if m.Entry == nil || m.Entry.ID == "" || m.ID == "" {
			return fmt.Errorf("memlog: message %s without an entry id", m.Value)
		}
		l.lines = append(l.lines, string(m.Value))
	}
	return nil
}

func (l *memLog) Flush(context.Context) error         { return nil }
func (l *memLog) Close() error                        { return nil }
func (l *memLog) Commit(context.Context, int64) error { return nil }
func (l *memLog) Abort(context.Context) error         { return nil }

func (l *memLog) PreCommit(context.Context, int64) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return []byte(fmt.Sprint(len(l.lines))), nil
}

func (l *memLog) Recover(_ context.Context, _ int64, state []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int
	if _, err := fmt.Sscan(string(state), &n); err != nil || n > len(l.lines) {
		return fmt.Errorf("memlog: state %q of a log of %d lines", state, len(l.lines))
	}
	l.lines, l.recovers = l.lines[:n], l.recovers+1
	return nil
}

func (l *memLog) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// TestRegisteredRecordsKind runs the orders job with its late records
// and dead letters in a kind only the registry knows (memlog, registered
// above with an OpenMessages): they hold the lines the jsonl sinks of the
// same job hold, also after a crash and a resume, which recovers each
// log to the length its checkpoint recorded.
func TestRegisteredRecordsKind(t *testing.T) {
	refDir, _ := runSpec(t, fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl"), nil, RunOptions{Deterministic: true})
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(refDir, name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSuffix(string(b), "\n")
	}
	wantLate, wantDead := read("late.jsonl"), read("bad.jsonl")
	if wantLate == "" || wantDead == "" {
		t.Fatal("the reference run wrote no late records or dead letters")
	}
	job := strings.NewReplacer("late: {type: jsonl, path: late.jsonl}", "late: {type: memlog, log: %[1]s-late}",
		"dead_letter: {type: jsonl, path: bad.jsonl}", "dead_letter: {type: memlog, log: %[1]s-dead}").Replace(fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl"))
	logs := func(run string) (*memLog, *memLog) {
		memLogs.Lock()
		defer memLogs.Unlock()
		return memLogs.m[run+"-late"], memLogs.m[run+"-dead"]
	}
	runSpec(t, fmt.Sprintf(job, "one"), nil, RunOptions{Deterministic: true})
	late, dead := logs("one")
	if late == nil || dead == nil {
		t.Fatal("the runner did not open the memlog sinks")
	}
	if late.text() != wantLate || dead.text() != wantDead {
		t.Fatalf("memlog lines differ from the jsonl sinks':\nlate %.300s\nwant %.300s\ndead %.300s\nwant %.300s", late.text(), wantLate, dead.text(), wantDead)
	}

	crashThenResume(t, mustParse(t, fmt.Sprintf(job, "two")))
	late, dead = logs("two")
	if late.text() != wantLate || dead.text() != wantDead {
		t.Fatalf("after a crash and a resume the memlog lines differ from the jsonl sinks':\nlate %.300s\nwant %.300s", late.text(), wantLate)
	}
	if late.opened != 2 || late.recovers != 1 {
		t.Errorf("memlog opened %d times (want 2), recovered %d times (want 1)", late.opened, late.recovers)
	}
}

// crashThenResume runs p deterministically with a checkpoint before
// every read, crashes it right after the fifth checkpoint's manifest, and
// runs it again, resuming from that checkpoint.
func crashThenResume(t *testing.T, p *spec.Plan) {
	t.Helper()
	dir := t.TempDir()
	o := RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, CheckpointDir: filepath.Join(dir, "ck"),
		CheckpointInterval: time.Millisecond, CheckpointClock: jobtest.EveryRead()}
	crashRun(t, p, o, "after-manifest", 5)
	j, err := Open(p, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}
