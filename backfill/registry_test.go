package backfill

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/all"
	"github.com/weirstream/weir/internal/jobtest"
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
	lines := articleOrders(11, 3000)
	yaml := `
name: memorders
source: {type: file, path: in.jsonl, channels: 2}
watermark: {max_out_of_orderness: 5s}
key: [user_id]
window: {type: tumbling, size: 1m}
allowed_lateness: 10s
aggregate:
  - {name: orders, fn: count}
  - {name: total, fn: sum, field: amount}
sinks:
  results: {type: sqlite, path: results.db}
  late: {type: memledger}
`
	p, err := spec.ParseWith([]byte(yaml), reg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
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
	rep, err := Backfill(p, BackfillOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Entries != int(sum.Get("late_side_output")) {
		t.Fatalf("the backfill read %d entries, the job sent %d to the side output", rep.Entries, sum.Get("late_side_output"))
	}
	if diffs, n, err := ans.Compare(p, dir, 5); err != nil || n > 0 {
		t.Fatalf("after the backfill (%+v), %d windows differ from the complete answer (%v):\n%s", rep, n, err, strings.Join(diffs, "\n"))
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
