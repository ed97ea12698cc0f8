package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/weirstream/weir/connector/sqliteio"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/archive"
	"github.com/weirstream/weir/window"
)

// CorrectionsPath is where weir backfill appends the revisions of a job
// with jsonl results: beside the results file, with .backfill before the
// extension (results.jsonl: results.backfill.jsonl). Not the results file
// itself: a restore of the live job cuts that back to its checkpoint.
func CorrectionsPath(p *Plan, dir string) string {
	path := RunOptions{Dir: dir}.path(p.Spec.Sinks.Results.Path)
	base, ext := path, ""
	if i := strings.LastIndexByte(path, '.'); i > strings.LastIndexByte(path, '/') {
		base, ext = path[:i], path[i:]
	}
	return base + ".backfill" + ext
}

// archiveStore is the archive of a job with jsonl results: a window's
// new revision, its applied ids and its line go into the archive in one
// batch (the line in the outbox), then the line is appended to the
// corrections file and leaves the outbox. A crash between the two
// publishes the line again at the next backfill: the same window and
// pane, byte for byte, which readers fold by pane.
type archiveStore struct {
	a    *archive.Archive
	p    *Plan
	o    *BackfillOptions
	path string // the corrections file
	key  string // the result key (values joined by keySep) of the window begun
	revs []archive.Revision
	open bool // a batch is begun
}

func openArchiveStore(p *Plan, o BackfillOptions) (*archiveStore, error) {
	r := p.Spec.Sinks.Results
	if r.Type != "jsonl" || r.Path == "" || r.Path == "-" {
		return nil, fmt.Errorf("backfill publishes the revisions of archived windows to a jsonl results file; sinks.results is %s %s", r.Type, r.Path)
	}
	a, err := archive.Open(RunOptions{Dir: o.Dir}.path(p.Spec.Archive.Dir))
	if err != nil {
		return nil, err
	}
	st := &archiveStore{a: a, p: p, o: &o, path: CorrectionsPath(p, o.Dir)}
	if !o.DryRun {
		// What a killed backfill committed and did not publish.
		if err := st.publish(); err != nil {
			a.Close()
			return nil, err
		}
	}
	return st, nil
}

func (s *archiveStore) horizon() (etime.Time, error) { return s.a.Horizon() }

func (s *archiveStore) begin(w *backfillWindow) error {
	var keyVals map[string]json.RawMessage
	if err := json.Unmarshal([]byte(w.key), &keyVals); err != nil {
		return fmt.Errorf("ledger entry key: %w", err)
	}
	parts := make([]string, len(s.p.Spec.Key))
	for i, k := range s.p.Spec.Key {
		parts[i] = string(keyVals[k]) // as the live job wrote it: its canonical value
	}
	s.key = strings.Join(parts, keySep)
	if !s.open {
		s.open = true
		s.o.crash("backfill-begun")
	}
	return nil
}

func (s *archiveStore) applied(w *backfillWindow) (map[string]bool, error) {
	return s.a.Applied(s.key, etime.Time(w.start), etime.Time(w.end))
}

func (s *archiveStore) load(w *backfillWindow) (*acc, int64, error) {
	pane, value, ok, err := s.a.Row(s.key, etime.Time(w.start), etime.Time(w.end))
	if err != nil {
		return nil, 0, err
	}
	if !ok {
		return w.agg.CreateAccumulator(), -1, nil
	}
	n := len(w.agg.fns)
	if w.agg.withAcc {
		n++
	}
	parts := splitResult(value, n)
	if len(parts) != n {
		return nil, 0, fmt.Errorf("the archive's row has %d values, want %d", len(parts), n)
	}
	vals := make([]any, n)
	for i, v := range parts {
		if vals[i], err = sqliteio.Value([]byte(v)); err != nil {
			return nil, 0, err
		}
	}
	ac, err := w.agg.seed(vals)
	return ac, pane, err
}

func (s *archiveStore) write(w *backfillWindow, pane int64, values []string, ids []string) error {
	var value []byte
	for _, v := range values {
		value = append(append(value, v...), 0)
	}
	r := window.Result[string, []byte]{Key: s.key, Window: window.Window{Start: etime.Time(w.start), End: etime.Time(w.end)},
		Firing: window.Backfill, Pane: pane, Watermark: w.wm, Value: value}
	line := append(appendResult(nil, s.p, r), '\n')
	s.revs = append(s.revs, archive.Revision{Key: s.key, Start: r.Window.Start, End: r.Window.End, Pane: pane, Value: value, IDs: ids, Line: line})
	return nil
}

func (s *archiveStore) commit() error {
	s.open = false
	if len(s.revs) == 0 {
		return nil
	}
	s.o.crash("backfill-written")
	err := s.a.Apply(s.revs)
	s.revs = s.revs[:0]
	if err != nil {
		return err
	}
	s.o.crash("backfill-committed")
	return s.publish()
}

// publish appends the outbox's lines to the corrections file, makes them
// durable, then empties the outbox.
func (s *archiveStore) publish() error {
	pending, err := s.a.Outbox()
	if err != nil || len(pending) == 0 {
		return err
	}
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	var b []byte
	seqs := make([]uint64, len(pending))
	for i, p := range pending {
		b = append(b, p.Line...)
		seqs[i] = p.Seq
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return fmt.Errorf("corrections %s: %w", s.path, err)
	}
	s.o.crash("backfill-published")
	return s.a.Published(seqs)
}

func (s *archiveStore) close() error { return s.a.Close() }
