package backfill

import (
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
	"github.com/weirstream/weir/connector/all"
	"github.com/weirstream/weir/connector/fileio"
	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/internal/outfmt"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/ledger"
	"github.com/weirstream/weir/spec"
)

// memLedger is a late sink kind of this test alone: it keeps the late
// lines in memory, by the job's name, and reads them back as a ledger.
var memLedger sync.Map // job name → *memLines

type memLines struct {
	mu    sync.Mutex
	lines [][]byte
}

func (m *memLines) Write(_ context.Context, batch []connector.Message) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, msg := range batch {
		m.lines = append(m.lines, append([]byte(nil), msg.Value...))
	}
	return nil
}
func (m *memLines) Flush(context.Context) error { return nil }
func (m *memLines) Close() error                { return nil }

func (m *memLines) Scan(_ context.Context, _ *connector.LedgerCut, fn func([]byte) error) ([]string, error) {
	m.mu.Lock()
	lines := m.lines
	m.mu.Unlock()
	for _, l := range lines {
		if err := fn(l); err != nil {
			return nil, err
		}
	}
	return nil, nil
}
func (m *memLines) Describe(*connector.LedgerCut) string { return "" }
func (m *memLines) Where() string                        { return "memory" }

var memKind = connector.Kind{Name: "memledger", Doc: "late records in memory (backfill tests)", Sink: &connector.SinkKind{Roles: connector.RoleLate, Reasons: true,
	OpenMessages: func(_ context.Context, o connector.MessagesOpen) (connector.Sink[connector.Message], error) {
		m, _ := memLedger.LoadOrStore(o.Job, &memLines{})
		return m.(*memLines), nil
	},
	OpenLedger: func(_ context.Context, o connector.LedgerOpen) (connector.LedgerReader, error) {
		m, ok := memLedger.Load(o.Job)
		if !ok {
			return nil, fmt.Errorf("memledger: no ledger of job %q", o.Job)
		}
		return m.(*memLines), nil
	}}}

// TestRegisteredLedgerKind: a late sink of a kind registered by this test
// alone, which backfill never heard of, is read back through its
// OpenLedger: the backfill folds its entries into the results table,
// which then equals the complete answer, as with a ledger directory.
func TestRegisteredLedgerKind(t *testing.T) {
	memLedger.Delete("memorders") // a run of the test before (-count)
	reg := connector.NewRegistry()
	reg.MustRegister(all.Kinds()...)
	reg.MustRegister(memKind)
	p, err := spec.ParseWith([]byte(orderJob("memorders", "{type: sqlite, path: results.db}", "{type: memledger}", "")), reg)
	if err != nil {
		t.Fatal(err)
	}
	dir, sum, rep := backfillToAnswer(t, p, 11, nil)
	if rep.Entries != int(sum.Get("late_side_output")) {
		t.Fatalf("the backfill read %d entries, the job sent %d to the side output", rep.Entries, sum.Get("late_side_output"))
	}
	var bad, where []string
	entries := 0
	if bad, where, err = ScanLedger(p, dir, func(ledger.Entry) error { entries++; return nil }); err != nil || len(bad) > 0 || entries != rep.Entries || strings.Join(where, ",") != "memory" {
		t.Fatalf("ScanLedger: %d entries from %v (%v, bad %v)", entries, where, err, bad)
	}
}

// TestCheckCompleteAsksTheKind: whether the complete answer can read a
// source again is its kind's to say (connector.SourceKind.Replay); a kind
// without Replay is refused, naming the kinds that replay.
func TestCheckCompleteAsksTheKind(t *testing.T) {
	reg := connector.NewRegistry()
	reg.MustRegister(all.Kinds()...)
	asked := ""
	reg.MustRegister(connector.Kind{Name: "tape", Doc: "a tape", Source: &connector.SourceKind{Fields: []connector.Field{{Name: "reel", Doc: "the reel"}},
		Replay: func(s connector.Settings, _ func(string) string) error {
			asked = s.String("reel")
			if asked == "worn" {
				return errors.New("the reel is worn")
			}
			return nil
		}}},
		connector.Kind{Name: "radio", Doc: "a radio", Source: &connector.SourceKind{}})
	check := func(source string) error {
		p, err := spec.ParseWith([]byte("name: j\nsource: "+source+"\nwatermark: {max_out_of_orderness: 1s}\nkey: [k]\nwindow: {type: tumbling, size: 1m}\naggregate: [{name: n, fn: count}]\nsinks: {results: {type: sqlite, path: r.db}}\n"), reg)
		if err != nil {
			t.Fatal(err)
		}
		return CheckComplete(p, t.TempDir())
	}
	if err := check("{type: tape, reel: new}"); err != nil || asked != "new" {
		t.Fatalf("a tape of reel new: %v (asked %q)", err, asked)
	}
	if err := check("{type: tape, reel: worn}"); err == nil || err.Error() != "the reel is worn" {
		t.Fatalf("a worn tape: %v", err)
	}
	if err := check("{type: radio}"); err == nil || !strings.Contains(err.Error(), "a radio source cannot be read again (weir reads again from file or generator or tape)") {
		t.Fatalf("a radio: %v", err)
	}
}

// memResults is a results kind of this test alone: result lines kept in
// memory by job, which backfill revises as a log (connector.ReviseLog):
// its store reads the lines back and appends revisions after them.
var memResults sync.Map // job name → *memLines

var memResultsKind = connector.Kind{Name: "memresults", Doc: "results in memory (backfill tests)", Sink: &connector.SinkKind{Roles: connector.RoleResults,
	OpenMessages: func(_ context.Context, o connector.MessagesOpen) (connector.Sink[connector.Message], error) {
		m, _ := memResults.LoadOrStore(o.Job, &memLines{})
		return m.(*memLines), nil
	},
	Revise: connector.ReviseLog,
	OpenStore: func(_ context.Context, o connector.StoreOpen) (connector.ResultsStore, error) {
		m, ok := memResults.Load(o.Job)
		if !ok {
			return nil, fmt.Errorf("memresults: no results of job %q", o.Job)
		}
		return memLog{m.(*memLines)}, nil
	}}}

// memLog is memLines as a connector.LogStore.
type memLog struct{ *memLines }

func (l memLog) Scan(ctx context.Context, fn func([]byte) error) error {
	_, err := l.memLines.Scan(ctx, nil, fn)
	return err
}
func (l memLog) Append(ctx context.Context, revs []connector.Message) error {
	return l.Write(ctx, revs)
}
func (l memLog) Forget(context.Context) error { return nil }

// TestRegisteredResultsStoreKind: the results of a kind registered by
// this test alone, which backfill never heard of, are revised through its
// OpenStore: with the job's archive, the backfill appends each window's
// next revision to the kind's log, which then equals the complete answer,
// as with jsonl results.
func TestRegisteredResultsStoreKind(t *testing.T) {
	memResults.Delete("memrevised") // a run of the test before (-count)
	reg := connector.NewRegistry()
	reg.MustRegister(all.Kinds()...)
	reg.MustRegister(memResultsKind)
	yaml := orderJob("memrevised", "{type: memresults}", "{type: ledger, dir: ledger}", "archive: {dir: archive}\n")
	p, err := spec.ParseWith([]byte(yaml), reg)
	if err != nil {
		t.Fatal(err)
	}
	before := 0
	lines := func() int {
		m, _ := memResults.Load("memrevised")
		return len(m.(*memLines).lines)
	}
	dir, _, rep := backfillToAnswer(t, p, 12, func() { before = lines() })
	if lines() == before {
		t.Fatalf("the backfill appended no revision to the kind's log: %+v", rep)
	}

	// Without the archive the kind's results are refused, naming it.
	p2, err := spec.ParseWith([]byte(strings.Replace(yaml, "archive: {dir: archive}\n", "", 1)), reg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Backfill(p2, BackfillOptions{Dir: dir})
	if _, ok := errors.AsType[*RefusedError](err); !ok || !strings.Contains(err.Error(), "for memresults results, set archive: {dir: archive}") {
		t.Fatalf("a backfill of memresults results without the archive: %v", err)
	}
}

// TestRegisteredTableKind: a results table kind registered by this test
// alone (SQLite under another name, with its own dialect's store) is
// revised in place by backfill, which never heard of it.
func TestRegisteredTableKind(t *testing.T) {
	reg := connector.NewRegistry()
	reg.MustRegister(all.Kinds()...)
	sqlite, _ := reg.Lookup("sqlite")
	k := *sqlite.Sink
	reg.MustRegister(connector.Kind{Name: "mytable", Doc: "a SQLite table under another name (backfill tests)", Sink: &k})
	p, err := spec.ParseWith([]byte(orderJob("mytable", "{type: mytable, path: results.db}", "{type: ledger, dir: ledger}", "")), reg)
	if err != nil {
		t.Fatal(err)
	}
	backfillToAnswer(t, p, 13, nil)
}

// orderJob is a job spec of the article's orders over a file of two
// channels, keyed by user, with results and late sinks as given (YAML
// flow mappings) and the lines after the sinks (archive:).
func orderJob(name, results, late, after string) string {
	return "name: " + name + `
source: {type: file, path: in.jsonl, channels: 2}
watermark: {max_out_of_orderness: 5s}
key: [user_id]
window: {type: tumbling, size: 1m}
allowed_lateness: 10s
aggregate:
  - {name: orders, fn: count}
  - {name: total, fn: sum, field: amount}
sinks:
  results: ` + results + `
  late: ` + late + "\n" + after
}

// backfillToAnswer runs job p over 3000 of the article's orders (seed
// seed) in a new directory, checks that its results differ from the
// complete answer, backfills them, checks that they then equal it, and
// returns the directory, the run's summary and the backfill's report;
// before runs just before the backfill.
func backfillToAnswer(t *testing.T, p *spec.Plan, seed uint64, before func()) (string, job.Summary, BackfillReport) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in.jsonl"), []byte(strings.Join(articleOrders(seed, 3000), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	j, err := job.Open(p, job.RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := j.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Get("late_side_output") < 20 {
		t.Fatalf("too few late orders to backfill: %s", sum.JSON())
	}
	ans, err := Complete(p, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, n, err := ans.Compare(p, dir, 3); err != nil || n == 0 {
		t.Fatalf("before the backfill %d windows differ (%v): the test proves nothing", n, err)
	}
	if before != nil {
		before()
	}
	rep, err := Backfill(p, BackfillOptions{Dir: dir})
	if err != nil || rep.Applied == 0 {
		t.Fatalf("backfill: %+v, %v", rep, err)
	}
	if diffs, n, err := ans.Compare(p, dir, 5); err != nil || n > 0 {
		t.Fatalf("after the backfill (%+v), %d windows differ from the complete answer (%v):\n%s", rep, n, err, strings.Join(diffs, "\n"))
	}
	return dir, sum, rep
}

// TestSeveralWindowsRefused: backfill and the complete answer refuse a
// plan whose graph feeds two windows from one read, before they read
// anything.
func TestSeveralWindowsRefused(t *testing.T) {
	p, err := spec.Parse([]byte(orderJob("two", "{type: sqlite, path: results.db}", "{type: ledger, dir: ledger}", "")))
	if err != nil {
		t.Fatal(err)
	}
	path, err := p.Graph.Path()
	if err != nil {
		t.Fatal(err)
	}
	var wm spec.NodeID
	for _, n := range p.Graph.Nodes {
		if n.Op == path.Watermark {
			wm = n.ID
		}
	}
	w := spec.NodeID(len(p.Graph.Nodes))
	r := path.Windows[0].Results[0]
	p.Graph.Nodes = append(p.Graph.Nodes,
		spec.Node{ID: w, Name: "again", Op: path.Windows[0].Window, Inputs: []spec.Edge{{From: wm}}},
		spec.Node{ID: w + 1, Name: "again.results", Op: &spec.SinkOp{Role: r.Role, Name: "again", Path: "again", Config: r.Config}, Inputs: []spec.Edge{{From: w}}})
	const want = "the plan has 2 windows over its read; backfill and the complete answer work on a job of one window"
	_, err = Backfill(p, BackfillOptions{Dir: t.TempDir()})
	if _, ok := errors.AsType[*RefusedError](err); !ok || !strings.Contains(err.Error(), want) {
		t.Errorf("Backfill of two windows: %v", err)
	}
	if err := CheckComplete(p, t.TempDir()); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("CheckComplete of two windows: %v", err)
	}
}

// runArticleJob runs the job spec yaml over 3000 of the article's orders
// (seed 14) in a new directory, deterministically at jobtest.TestNow with
// o's other options, and returns its plan, the directory and the run's
// summary.
func runArticleJob(t *testing.T, yaml string, o job.RunOptions) (*spec.Plan, string, job.Summary) {
	t.Helper()
	p, err := spec.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in.jsonl"), []byte(strings.Join(articleOrders(14, 3000), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o.Dir, o.Deterministic, o.Now = dir, true, jobtest.TestNow
	j, err := job.Open(p, o)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := j.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return p, dir, sum
}

// TestBackfillRefusesMissingResults: a results file or table that is not
// there, or a table of other columns, is a refusal (weir backfill exits
// 2) that changes nothing: no database file, no applied-ids table.
func TestBackfillRefusesMissingResults(t *testing.T) {
	yaml := orderJob("gone", "{type: sqlite, path: results.db}", "{type: ledger, dir: ledger}", "")
	p, dir, _ := runArticleJob(t, yaml, job.RunOptions{})
	for _, c := range []struct{ name, from, to, want string }{
		{"missing file", "path: results.db", "path: nosuch.db", "nosuch.db is not a SQLite file"},
		{"missing table", "path: results.db", "path: results.db, table: nosuch", `table "nosuch" in ` + filepath.Join(dir, "results.db") + " is not there: run the job before a backfill"},
		{"other columns", "  - {name: total, fn: sum, field: amount}\n", "  - {name: total, fn: sum, field: amount}\n  - {name: top, fn: max, field: amount}\n", "exists with other columns"},
		{"missing ledger", "{type: ledger, dir: ledger}", "{type: ledger, dir: noledger}", "ledger " + filepath.Join("noledger", "gone") + " is not there: has the job run here?"},
	} {
		q, err := spec.Parse([]byte(strings.Replace(yaml, c.from, c.to, 1)))
		if err != nil {
			t.Fatal(err)
		}
		_, err = Backfill(q, BackfillOptions{Dir: dir, AcceptSpec: []string{outfmt.SpecHash(p)}})
		if _, ok := errors.AsType[*RefusedError](err); !ok || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v (a %T), want a refusal with %q", c.name, err, err, c.want)
		}
	}
	// A results file that is no database: an error naming it.
	if err := os.WriteFile(filepath.Join(dir, "garbage.db"), []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	q, err := spec.Parse([]byte(strings.Replace(yaml, "path: results.db", "path: garbage.db", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Backfill(q, BackfillOptions{Dir: dir, AcceptSpec: []string{outfmt.SpecHash(p)}}); err == nil || !strings.Contains(err.Error(), "sinks.results: reading "+filepath.Join(dir, "garbage.db")) {
		t.Errorf("a results file that is no database: %v", err)
	}
	for _, made := range []string{"nosuch.db", "noledger"} {
		if _, err := os.Stat(filepath.Join(dir, made)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the refused backfill made %s: %v", made, err)
		}
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name LIKE 'nosuch%'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("the refused backfill made %d tables beside results (%v)", n, err)
	}
}

// TestBackfillRefusesMissingArchive: a job with jsonl results and an
// archive, backfilled with archive.dir misspelt (or the archive removed),
// is refused, naming the directory, and neither a dry run nor a backfill
// makes it (a helper's trial: backfill opened a new, empty archive and
// published revisions of the late records alone, exit 0).
func TestBackfillRefusesMissingArchive(t *testing.T) {
	yaml := orderJob("arch", "{type: jsonl, path: out.jsonl}", "{type: ledger, dir: ledger}", "archive: {dir: archive}\n")
	p, dir, sum := runArticleJob(t, yaml, job.RunOptions{})
	if sum.Get("late_side_output") == 0 {
		t.Fatalf("the run: %s", sum.JSON())
	}
	q, err := spec.Parse([]byte(strings.Replace(yaml, "archive: {dir: archive}", "archive: {dir: archiv}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{true, false} {
		_, err := Backfill(q, BackfillOptions{Dir: dir, DryRun: dry})
		if _, ok := errors.AsType[*RefusedError](err); !ok || !strings.Contains(err.Error(), filepath.Join(dir, "archiv")+" is not there or empty") {
			t.Errorf("dry run %v: %v, want a refusal naming the archive", dry, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "archiv")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused backfills made the archive: %v", err)
	}
	if _, err := os.Stat(fileio.CorrectionsPath(filepath.Join(dir, "out.jsonl"))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused backfills published corrections: %v", err)
	}
	// The right archive still backfills.
	if rep, err := Backfill(p, BackfillOptions{Dir: dir}); err != nil || rep.Applied == 0 {
		t.Errorf("the backfill with the job's archive: %+v, %v", rep, err)
	}
}

// TestBackfillRefusesLostEntries: a ledger that holds fewer of the run's
// entries than its checkpoint says the run wrote there lost some (a
// helper's trial: a Kafka late topic emptied by a broker restart was read
// as no late records, and the backfill said it had nothing to do); the
// backfill fails naming the counts, and changes nothing.
func TestBackfillRefusesLostEntries(t *testing.T) {
	yaml := orderJob("lost", "{type: sqlite, path: results.db}", "{type: ledger, dir: ledger}", "checkpoint: {dir: ck}\n")
	p, dir, sum := runArticleJob(t, yaml, job.RunOptions{CheckpointClock: jobtest.EveryRead()})
	late := sum.Get("late_side_output")
	if late < 4 {
		t.Fatalf("the run: %s", sum.JSON())
	}
	// The ledger as it is passes (a dry run).
	if _, err := Backfill(p, BackfillOptions{Dir: dir, DryRun: true}); err != nil {
		t.Fatalf("the whole ledger: %v", err)
	}
	// Half of its lines gone.
	segs, err := filepath.Glob(filepath.Join(dir, "ledger", "lost", "day=*", "seg-*.jsonl"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("the ledger's segments: %v, %v", segs, err)
	}
	var kept int64
	for _, seg := range segs {
		b, err := os.ReadFile(seg)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitAfter(string(b), "\n")
		lines = lines[:len(lines)/2]
		kept += int64(len(lines))
		if err := os.WriteFile(seg, []byte(strings.Join(lines, "")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := fmt.Sprintf("holds %d entries of the job's run", kept)
	for _, dry := range []bool{true, false} {
		_, err := Backfill(p, BackfillOptions{Dir: dir, DryRun: dry})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), fmt.Sprintf("says the run wrote %d there: %d were lost", late, late-kept)) {
			t.Errorf("dry run %v: %v, want %q", dry, err, want)
		}
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM results WHERE firing = 'backfill'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("the failed backfill revised %d rows (%v)", n, err)
	}
}

// TestBackfillRefusesSessionsWithoutTable: a session job with appended
// results is told that weir does not revise session windows, not to add
// an archive (which session jobs cannot have).
func TestBackfillRefusesSessionsWithoutTable(t *testing.T) {
	yaml := strings.Replace(orderJob("sess", "{type: jsonl, path: out.jsonl}", "{type: ledger, dir: ledger}", ""), "{type: tumbling, size: 1m}", "{type: session, gap: 1m}", 1)
	p, err := spec.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Backfill(p, BackfillOptions{Dir: t.TempDir(), DryRun: true})
	if _, ok := errors.AsType[*RefusedError](err); !ok || !strings.Contains(err.Error(), "weir does not revise session windows") || strings.Contains(err.Error(), "archive:") {
		t.Errorf("got %v, want a refusal saying sessions are not revised", err)
	}
}

// TestBackfillRefusesHaving: a job with a having is refused, saying why
// (a window the having dropped has no row to fold its late records
// into: its revision would be them alone), for a results table and
// appended results with an archive alike, and validate warns of it.
func TestBackfillRefusesHaving(t *testing.T) {
	for results, after := range map[string]string{"{type: sqlite, path: out.db}": "", "{type: jsonl, path: out.jsonl}": "archive: {dir: archive}\n"} {
		yaml := strings.Replace(orderJob("having", results, "{type: ledger, dir: ledger}", after+"having: total >= 10\n"), "allowed_lateness: 10s\n", "", 1)
		p, err := spec.Parse([]byte(yaml))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(p.Warnings.Error(), "weir backfill will not merge") {
			t.Errorf("%s: no warning that backfill will not merge the late records: %q", results, p.Warnings)
		}
		_, err = Backfill(p, BackfillOptions{Dir: t.TempDir(), DryRun: true})
		if _, ok := errors.AsType[*RefusedError](err); !ok || !strings.Contains(err.Error(), "weir does not revise a job with a having (total >= 10)") {
			t.Errorf("%s: got %v, want a refusal saying a having job is not revised", results, err)
		}
	}
}

// TestBackfillRefusesIncompleteTriggers: a job whose trigger publishes
// rows that are not its windows' whole state (a purging trigger's, a
// count trigger's) is refused, saying why, and validate warns of it; the
// default, continuous and final triggers are revised.
func TestBackfillRefusesIncompleteTriggers(t *testing.T) {
	for trig, refuse := range map[string]bool{
		"{type: purging, nested: {type: event_time}}": true,
		"{type: count, count: 3}":                     true,
		"{type: continuous, interval: 10s}":           false,
		"{type: final}":                               false,
	} {
		yaml := orderJob("trig", "{type: sqlite, path: out.db}", "{type: ledger, dir: ledger}", "trigger: "+trig+"\n")
		p, err := spec.Parse([]byte(yaml))
		if err != nil {
			t.Fatalf("%s: %v", trig, err)
		}
		if warned := strings.Contains(p.Warnings.Error(), "weir backfill will not merge"); warned != refuse {
			t.Errorf("%s: warned %v, want %v: %q", trig, warned, refuse, p.Warnings)
		}
		_, err = Backfill(p, BackfillOptions{Dir: t.TempDir(), DryRun: true})
		_, refused := errors.AsType[*RefusedError](err)
		if refused = refused && strings.Contains(err.Error(), "weir does not revise a job whose trigger"); refused != refuse {
			t.Errorf("%s: got %v, want refused %v", trig, err, refuse)
		}
	}
}
