package backfill

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/sqliteio"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/archive"
	"github.com/weirstream/weir/internal/outfmt"
	"github.com/weirstream/weir/internal/record"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/spec"
	"github.com/weirstream/weir/window"
)

// archiveStore is the archive of a job with jsonl or Kafka results: a
// window's new revision, its applied ids and its record go into the
// archive in one batch (the record in the outbox), then the record is
// published (appended to the results' log by its kind: a jsonl file's
// corrections, a Kafka topic) and leaves the outbox. A crash between the two
// publishes the record again at the next backfill: the same window and
// pane, byte for byte, which readers fold by pane.
type archiveStore struct {
	batchBegun
	a    *archive.Archive
	pub  connector.LogStore
	revs []archive.Revision
	// newest is the newest run the archive holds (the backfill has it to
	// itself): a window that never fired gets that run's first revision.
	newest int64
	// width is the number of values of an archived row (the
	// aggregates, then the accumulators' text if the job keeps them).
	width int
}

// openArchiveStore opens the archive for a backfill whose cut has the
// live job's watermark wm: the live job must have archived what it wrote
// up to there (a checkpoint's commit that found the archive busy leaves
// that to a later one).
func openArchiveStore(p *spec.Plan, o BackfillOptions, wm etime.Time) (*archiveStore, error) {
	// A run of the job makes its archive: one that is not there, or
	// empty, was never written (a misspelt archive.dir, or a removed
	// one), and folding into it would write revisions of late records
	// alone, not of the windows.
	dir := job.RunOptions{Dir: o.Dir}.Path(p.Archive.Dir)
	if entries, err := os.ReadDir(dir); err != nil || len(entries) == 0 {
		return nil, refused("archive: %s is not there or empty (has the job run here with archive.dir %s?): backfill folds late records into the windows the job archived, and without them would publish revisions of the late records alone", dir, p.Archive.Dir)
	}
	rs, err := openPlanStore(context.Background(), p, o.Dir, !o.DryRun)
	if err != nil {
		return nil, err
	}
	pub, ok := rs.(connector.LogStore)
	if !ok {
		rs.Close()
		return nil, fmt.Errorf("sinks.results: kind %s keeps no log of results", p.Sinks.Primary().Type)
	}
	// The live job has the archive open for each commit (a moment):
	// wait for it.
	a, err := archive.OpenWait(dir, job.ArchiveOpenWait, 20*time.Millisecond)
	if err != nil {
		pub.Close()
		if errors.Is(err, archive.ErrBusy) {
			err = fmt.Errorf("%w for %v: another backfill runs, or the live job's commit is stuck", err, job.ArchiveOpenWait)
		}
		return nil, err
	}
	st := &archiveStore{batchBegun: batchBegun{p: p, o: &o}, a: a, pub: pub, width: record.NewAggregator(p, record.KeepsAccs(p)).Width()}
	if st.newest, err = a.Run(); err != nil {
		st.close()
		return nil, err
	}
	if live, err := a.Live(); err != nil || wm < etime.MaxTime && live < wm {
		st.close()
		return nil, cmp.Or(err, fmt.Errorf("the live job has archived its results up to watermark %s, not yet up to its checkpoint's %s (a backfill had the archive at that checkpoint): run again after its next checkpoint", live, wm))
	}
	// What a backfill that stopped (killed, or its results' server away)
	// committed and did not publish: published first, or, in a dry run,
	// said (its entries count as applied already).
	if o.DryRun {
		pending, err := a.Outbox()
		if err != nil {
			st.close()
			return nil, err
		}
		if len(pending) > 0 && o.Warn != nil {
			o.Warn(fmt.Sprintf("%d revisions that an earlier backfill committed wait to be published to the results (it stopped before publishing them; their entries count as applied): the next backfill that is not a dry run publishes them first", len(pending)))
		}
	} else {
		n, err := st.publish()
		if err != nil {
			st.close()
			return nil, err
		}
		if n > 0 && o.Warn != nil {
			o.Warn(fmt.Sprintf("published %d revisions that an earlier backfill committed and did not publish (it stopped before; its entries count as applied, not in this report)", n))
		}
	}
	return st, nil
}

func (s *archiveStore) horizon() (etime.Time, error) { return s.a.Horizon() }

// resultKey is the result key (Record.Key: the key values' canonical
// JSON joined by record.KeySep) of window w's entries, as the live job
// archived it.
func resultKey(p *spec.Plan, w *backfillWindow) (string, error) {
	parts := make([]string, len(p.Key))
	for i, k := range p.Key {
		// The live job's canonical text (a Postgres ledger gives jsonb's,
		// which writes numbers and escapes its own way).
		c, err := CanonicalJSON(w.keyVals[k])
		if err != nil {
			return "", fmt.Errorf("ledger entry key %s: %w", k, err)
		}
		parts[i] = string(c)
	}
	return strings.Join(parts, record.KeySep), nil
}

// batchBegun is what an archive store keeps of the batch it revises:
// the window begun's result key, and whether a batch is begun.
type batchBegun struct {
	p    *spec.Plan
	o    *BackfillOptions
	key  string // the result key (values joined by record.KeySep) of the window begun
	open bool   // a batch is begun
}

// begin begins window w (windowStore.begin).
func (s *batchBegun) begin(w *backfillWindow) error {
	var err error
	if s.key, err = resultKey(s.p, w); err != nil {
		return err
	}
	if !s.open {
		s.open = true
		s.o.crash("backfill-begun")
	}
	return nil
}

func (s *archiveStore) applied(w *backfillWindow) (map[string]bool, error) {
	return s.a.Applied(s.key, etime.Time(w.start), etime.Time(w.end))
}

func (s *archiveStore) load(w *backfillWindow) ([]any, int64, error) {
	run, pane, value, ok, err := s.a.Row(s.key, etime.Time(w.start), etime.Time(w.end))
	if err != nil {
		return nil, 0, err
	}
	if !ok {
		w.run = w.firstRun(s.newest) // never fired: its entries' run's first revision
		return nil, -1, nil
	}
	w.run = run
	vals, err := archivedValues(value, s.width)
	return vals, pane, err
}

// archivedValues are an archived row's n values (result bytes), as
// windowStore.load returns them.
func archivedValues(value []byte, n int) ([]any, error) {
	parts := record.SplitResult(value, n)
	if len(parts) != n {
		return nil, fmt.Errorf("the archive's row has %d values, want %d", len(parts), n)
	}
	vals := make([]any, n)
	for i, v := range parts {
		if isNumberText(v) {
			vals[i] = record.NumText(v) // exact: the archive keeps the text
			continue
		}
		var err error
		if vals[i], err = sqliteio.Value([]byte(v)); err != nil {
			return nil, err
		}
	}
	return vals, nil
}

func (s *archiveStore) write(w *backfillWindow, pane int64, values []string, ids []string) error {
	s.revs = append(s.revs, revisionOf(s.p, s.key, w, pane, values, ids))
	return nil
}

// revisionOf is window w's revision pane of result key key: its
// values (result bytes), the entry ids it applies, and its results
// record.
func revisionOf(p *spec.Plan, key string, w *backfillWindow, pane int64, values []string, ids []string) archive.Revision {
	var value []byte
	for _, v := range values {
		value = append(append(value, v...), 0)
	}
	r := window.Result[string, []byte]{Key: key, Window: window.Window{Start: etime.Time(w.start), End: etime.Time(w.end)},
		Firing: window.Backfill, Pane: pane, Watermark: w.wm, Value: value}
	return archive.Revision{Key: key, Start: r.Window.Start, End: r.Window.End, Run: w.run, Pane: pane, Value: value, IDs: ids,
		RecordKey: outfmt.AppendMessageKey(nil, p, outfmt.KeyColumns(outfmt.Columns(p), primaryKey(p)), w.run, r), Line: outfmt.AppendResult(nil, p, outfmt.Columns(p), nil, w.run, r)}
}

// primaryKey is the primary key of p's results sink (the columns of a
// Kafka message's key), nil without one.
func primaryKey(p *spec.Plan) []string {
	if k := p.Sinks.Primary(); k != nil {
		return k.PrimaryKey
	}
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
	_, err = s.publish()
	return err
}

// publish publishes the outbox's revisions, then empties the outbox, and
// returns how many it published.
func (s *archiveStore) publish() (int, error) {
	pending, err := s.a.Outbox()
	if err != nil || len(pending) == 0 {
		return 0, err
	}
	revs := make([]connector.Message, len(pending))
	for i, r := range pending {
		revs[i] = connector.Message{Key: r.RecordKey, Value: r.Line, Headers: outfmt.ResultHeaders(window.Backfill, r.Run, r.Pane)}
	}
	if err := s.pub.Append(context.Background(), revs); err != nil {
		return 0, err
	}
	s.o.crash("backfill-published")
	seqs := make([]uint64, len(pending))
	for i, p := range pending {
		seqs[i] = p.Seq
	}
	return len(pending), s.a.Published(seqs)
}

func (s *archiveStore) close() error { return errors.Join(s.a.Close(), s.pub.Close()) }
