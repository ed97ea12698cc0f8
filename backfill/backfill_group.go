package backfill

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/archive"
	"github.com/weirstream/weir/internal/outfmt"
	"github.com/weirstream/weir/internal/record"
	"github.com/weirstream/weir/spec"
	"github.com/weirstream/weir/window"
)

// GroupArchive is the archive of a job run as a group (weir run
// --instance): a compacted Kafka topic that the group's window tasks
// write each window's newest revision to (archive.KafkaKey and
// EncodeKafka), in the transactions that publish them. internal/group's
// Archive implements it; BackfillOptions.GroupArchive opens it.
type GroupArchive interface {
	// Run is the group's run id.
	Run() int64
	// Live is the smallest watermark the group's window tasks committed
	// (MinTime while one has none).
	Live(ctx context.Context) (etime.Time, error)
	// Partitions is the topic's partition count.
	Partitions(ctx context.Context) (int, error)
	// Fence aborts an earlier backfill's transaction left open (it
	// died): called before Scan, which would wait for it.
	Fence(ctx context.Context) error
	// Scan calls fn with each record committed when it is called.
	Scan(ctx context.Context, fn func(partition int32, key, value []byte) error) error
	// Commit writes records to the archive and messages to the results
	// topic in one transaction.
	Commit(ctx context.Context, recs []archive.KafkaRecord, results []connector.Message) error
	Close() error
}

// groupStore is the archive of a job run as a group: read whole when
// the backfill opens it (the windows' newest revisions and applied ids),
// then revised by transactions that write each window's next revision to
// the archive and its record to the results topic at once, so no outbox
// is needed: a backfill killed before a commit leaves nothing of it.
type groupStore struct {
	batchBegun
	ga  GroupArchive
	ctx context.Context
	// rows are the archived copies of each window, by KafkaKey: one per
	// partition it is in (the live task's, and a backfill's first
	// revision of a window that never fired, placed by its key's hash);
	// the newest (run, pane) is the window's.
	rows map[string][]groupRow
	// gone are the windows whose archived copies were all removed
	// (tombstones, by KafkaKey): beyond the horizon, trimmed by the live
	// members or an earlier backfill.
	gone   map[string]bool
	nparts int
	cut    etime.Time // the horizon
	width  int
	// k, cur and has are the window begun's record key and newest
	// archived revision (has false: none).
	k    string
	cur  groupRow
	has  bool
	recs []archive.KafkaRecord
	msgs []connector.Message
	next map[string]groupRow // the rows recs write, once committed
}

type groupRow struct {
	part      int32
	run, pane int64
	value     []byte
	ids       []string
}

// openGroupStore reads the group's archive and removes (with
// tombstones, which compaction then drops) the windows that ended
// before its horizon: the group's smallest committed watermark less
// archive.horizon.
func openGroupStore(ctx context.Context, p *spec.Plan, o *BackfillOptions) (*groupStore, error) {
	if o.GroupArchive == nil {
		return nil, refused("the job runs as a group, whose archive is a Kafka topic: run weir backfill from the command line (BackfillOptions.GroupArchive is not set)")
	}
	ga, err := o.GroupArchive(ctx, p)
	if err != nil {
		return nil, err
	}
	s := &groupStore{batchBegun: batchBegun{p: p, o: o}, ga: ga, ctx: ctx, rows: map[string][]groupRow{}, gone: map[string]bool{}, next: map[string]groupRow{}, cut: etime.MinTime,
		width: record.NewAggregator(p, record.KeepsAccs(p)).Width()}
	fail := func(err error) (*groupStore, error) {
		ga.Close()
		return nil, err
	}
	if s.nparts, err = ga.Partitions(ctx); err != nil {
		return fail(err)
	}
	if !o.DryRun {
		if err := ga.Fence(ctx); err != nil {
			return fail(err)
		}
	}
	// The watermark first: what the archive holds then covers every
	// window below it.
	live, err := ga.Live(ctx)
	if err != nil {
		return fail(err)
	}
	if live > etime.MinTime && live < etime.MaxTime {
		s.cut = live.Add(-p.ArchiveHorizon)
	}
	err = ga.Scan(ctx, func(part int32, k, v []byte) error {
		rs := slices.DeleteFunc(s.rows[string(k)], func(r groupRow) bool { return r.part == part })
		if v != nil {
			run, pane, value, ids, err := archive.DecodeKafka(v)
			if err != nil {
				return fmt.Errorf("archive partition %d, key %q: %w", part, k, err)
			}
			rs = append(rs, groupRow{part: part, run: run, pane: pane, value: value, ids: ids})
		}
		if len(rs) == 0 {
			delete(s.rows, string(k))
			s.gone[string(k)] = true
		} else {
			s.rows[string(k)] = rs
			delete(s.gone, string(k))
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	// And again after the scan: a window task whose partition held no
	// record may have committed its first, older, watermark meanwhile
	// (its windows are new, and in the scan or after it); the smaller
	// mark is the cut.
	if again, err := ga.Live(ctx); err != nil {
		return fail(err)
	} else if again < live {
		s.cut = etime.MinTime
		if again > etime.MinTime {
			s.cut = again.Add(-p.ArchiveHorizon)
		}
	}
	if o.DryRun || s.cut == etime.MinTime {
		return s, nil
	}
	var gone []archive.KafkaRecord
	for k, rs := range s.rows {
		if _, _, end, err := archive.ParseKafkaKey([]byte(k)); err == nil && end < s.cut {
			for _, r := range rs {
				gone = append(gone, archive.KafkaRecord{Partition: r.part, Key: []byte(k)})
			}
			delete(s.rows, k)
		}
	}
	for len(gone) > 0 {
		n := min(len(gone), 1000)
		if err := ga.Commit(ctx, gone[:n], nil); err != nil {
			return fail(err)
		}
		gone = gone[n:]
	}
	return s, nil
}

// row is the window's newest archived revision (false: none).
func (s *groupStore) row(k string) (groupRow, bool) {
	rs := s.rows[k]
	if len(rs) == 0 {
		return groupRow{}, false
	}
	return slices.MaxFunc(rs, func(a, b groupRow) int { return cmp.Or(cmp.Compare(a.run, b.run), cmp.Compare(a.pane, b.pane)) }), true
}

func (s *groupStore) horizon() (etime.Time, error) { return s.cut, nil }

// trimmed reports whether w's archived copies were removed (a member's
// trim, beside the cut, or an earlier backfill's).
func (s *groupStore) trimmed(w *backfillWindow) (bool, error) {
	key, err := resultKey(s.p, w)
	if err != nil {
		return false, err
	}
	return s.gone[string(archive.KafkaKey(key, etime.Time(w.start), etime.Time(w.end)))], nil
}

// begin begins window w, and finds its record key and newest revision.
func (s *groupStore) begin(w *backfillWindow) error {
	if err := s.batchBegun.begin(w); err != nil {
		return err
	}
	s.k = string(archive.KafkaKey(s.key, etime.Time(w.start), etime.Time(w.end)))
	s.cur, s.has = s.row(s.k)
	return nil
}

func (s *groupStore) applied(*backfillWindow) (map[string]bool, error) {
	m := make(map[string]bool, len(s.cur.ids))
	for _, id := range s.cur.ids {
		m[id] = true
	}
	return m, nil
}

func (s *groupStore) load(w *backfillWindow) ([]any, int64, error) {
	r, ok := s.cur, s.has
	if !ok {
		w.run = w.firstRun(s.ga.Run()) // never fired: its entries' run's first revision
		return nil, -1, nil
	}
	w.run = r.run
	vals, err := archivedValues(r.value, s.width)
	return vals, r.pane, err
}

func (s *groupStore) write(w *backfillWindow, pane int64, values []string, ids []string) error {
	k, old := s.k, s.cur
	if !s.has {
		// A window that never fired: placed by its key.
		h := fnv.New32a()
		h.Write([]byte(k))
		old.part = int32(h.Sum32() % uint32(s.nparts))
	}
	rev := revisionOf(s.p, s.key, w, pane, values, ids)
	all := append(slices.Clone(old.ids), ids...)
	s.recs = append(s.recs, archive.KafkaRecord{Partition: old.part, Key: []byte(k), Value: archive.EncodeKafka(rev.Run, pane, rev.Value, all)})
	s.msgs = append(s.msgs, connector.Message{Key: rev.RecordKey, Value: rev.Line, Headers: outfmt.ResultHeaders(window.Backfill, rev.Run, pane)})
	s.next[k] = groupRow{part: old.part, run: rev.Run, pane: pane, value: rev.Value, ids: all}
	return nil
}

func (s *groupStore) commit() error {
	s.open = false
	if len(s.recs) == 0 {
		return nil
	}
	s.o.crash("backfill-written")
	err := s.ga.Commit(s.ctx, s.recs, s.msgs)
	s.recs, s.msgs = s.recs[:0], s.msgs[:0]
	if err != nil {
		clear(s.next)
		return err
	}
	for k, r := range s.next {
		rs := slices.DeleteFunc(s.rows[k], func(o groupRow) bool { return o.part == r.part })
		s.rows[k] = append(rs, r)
	}
	clear(s.next)
	s.o.crash("backfill-committed")
	return nil
}

func (s *groupStore) close() error { return s.ga.Close() }
