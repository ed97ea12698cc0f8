package group

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/kafkaio"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/job"
)

// errAborted fails a task's checkpoint whose transaction aborted.
var errAborted = errors.New("group: the member's transaction aborted (a rebalance or a failure); the task restarts from its last committed checkpoint")

// task is one partition, of the job's input or of its repartition topic,
// run by this member: a job at parallelism 1 reading that partition
// through its inbox, its outputs and checkpoints handed to the member's
// transactions (or, for a route task, its router).
type task struct {
	// p is the task's number (its changelog partition); part its
	// partition of topic (the input, or the repartition topic).
	p     int32
	topic string
	part  int32
	m     *Member
	inbox *inbox
	job   *job.Job
	// route is the work of a two-stage job's route task (nil: the task
	// runs job).
	route *router
	// cancel stops the task's run; done is closed when it returned, with
	// runErr its error.
	cancel context.CancelFunc
	done   chan struct{}
	// quit is closed when the member stops the task: a checkpoint
	// waiting for the member gives up.
	quit     chan struct{}
	quitOnce sync.Once
	runErr   error
	sum      job.Summary

	// last is the newest committed snapshot (nil: none yet; the task
	// started at from). Owned by the member's loop.
	last *snapshot
	from int64
	// lastAt is the changelog offset of last's header, lastFirst of its
	// first record (-1: unknown); cached when last was last written to
	// the state directory.
	lastAt, lastFirst int64
	cached            time.Time
	// kc is the task's side of the keyed changelog (keyed.go), as of
	// last.
	kc *keyed

	mu sync.Mutex
	// outbox holds the records the task's sinks wrote since the member
	// last took them (each sink's pre-commit and end).
	outbox []*kgo.Record
	// pg holds the encoded outputs the task's Postgres sinks wrote since
	// the member last took them (pgout.go).
	pg []byte
	// ready holds the checkpoints whose Commit waits for the member.
	ready []*pending
	// ended: the run returned (done is closed).
	ended bool
	// retryAt is when the task restarts after its run failed (zero: not
	// decided yet; restartDue).
	retryAt time.Time
}

// take returns the task's outbox and waiting checkpoints, emptying them.
func (t *task) take() ([]*kgo.Record, []*pending) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out, ready := t.outbox, t.ready
	t.outbox, t.ready = nil, nil
	return out, ready
}

func (t *task) write(r *kgo.Record) {
	t.mu.Lock()
	t.outbox = append(t.outbox, r)
	t.mu.Unlock()
}

// store is a task's checkpoint.Store: a checkpoint's Commit waits until
// the member's transaction holding it ends.
type store struct{ t *task }

func (s store) Begin(id int64) (checkpoint.Pending, error) {
	return &pending{t: s.t, id: id, parts: map[string][]byte{}, result: make(chan error, 1)}, nil
}

// pending is one checkpoint of a task.
type pending struct {
	t      *task
	id     int64
	mu     sync.Mutex
	parts  map[string][]byte
	result chan error
}

func (p *pending) WritePart(name string, data []byte) error {
	p.mu.Lock()
	p.parts[name] = append([]byte(nil), data...)
	p.mu.Unlock()
	return nil
}

// Commit hands the checkpoint to the member and waits for its
// transaction: nil once it committed.
func (p *pending) Commit() error {
	p.t.mu.Lock()
	p.t.ready = append(p.t.ready, p)
	p.t.mu.Unlock()
	p.t.m.wake()
	select {
	case err := <-p.result:
		return err
	case <-p.t.m.stopped:
		return errors.New("group: the member stopped before the checkpoint committed")
	case <-p.t.quit:
		return errors.New("group: the task stopped before its checkpoint committed")
	}
}

func (p *pending) Abort() error { return nil }

// inbox is a task's kafkaio.Fetcher: the member's polls put the task's
// records in it, and its reader takes them.
type inbox struct {
	topic string
	p     int32
	mu    sync.Mutex
	recs  []*kgo.Record
	bytes int           // of recs' keys and values
	more  chan struct{} // signalled when records are put or resumed
	// next is the offset after the last record handed to the reader.
	next int64
	// paused: the reader paused its partition (watermark alignment); it
	// gets no records until it resumes, while the member fills the inbox
	// up to its bounds.
	paused bool
	// align, when set, is the group's alignment (max_drift) the reader
	// aligns with; task is the inbox's task id in it.
	align *alignment
	task  int32
}

func newInbox(topic string, p int32, from int64) *inbox {
	return &inbox{topic: topic, p: p, more: make(chan struct{}, 1), next: from}
}

// put appends rs, reporting whether the inbox is now full (over
// inboxRecords or inboxBytes).
func (b *inbox) put(rs []*kgo.Record) (full bool) {
	b.mu.Lock()
	b.recs = append(b.recs, rs...)
	for _, r := range rs {
		b.bytes += len(r.Key) + len(r.Value)
	}
	full = len(b.recs) >= inboxRecords || b.bytes >= inboxBytes
	b.mu.Unlock()
	select {
	case b.more <- struct{}{}:
	default:
	}
	return full
}

// roomy reports whether the inbox holds at most half of its bounds.
func (b *inbox) roomy() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.recs) <= inboxRecords/2 && b.bytes <= inboxBytes/2
}

// PollRecords implements kafkaio.Fetcher: it waits (until ctx is done)
// for records and returns up to max of them.
func (b *inbox) PollRecords(ctx context.Context, max int) kgo.Fetches {
	for {
		b.mu.Lock()
		if len(b.recs) > 0 && !b.paused {
			n := len(b.recs)
			if max > 0 && n > max {
				n = max
			}
			rs := b.recs[:n:n]
			b.recs = b.recs[n:]
			for _, r := range rs {
				b.bytes -= len(r.Key) + len(r.Value)
			}
			b.next = rs[n-1].Offset + 1
			b.mu.Unlock()
			return kgo.Fetches{{Topics: []kgo.FetchTopic{{Topic: b.topic, Partitions: []kgo.FetchPartition{{Partition: b.p, Records: rs, HighWatermark: -1, LastStableOffset: -1}}}}}}
		}
		b.mu.Unlock()
		select {
		case <-b.more:
		case <-ctx.Done():
			return nil
		}
	}
}

// PauseFetchPartitions and ResumeFetchPartitions pause and resume the
// reader's partition for watermark alignment (the member pauses and
// resumes its fetches itself, for full inboxes).
func (b *inbox) PauseFetchPartitions(map[string][]int32) map[string][]int32 {
	b.mu.Lock()
	b.paused = true
	b.mu.Unlock()
	return nil
}

func (b *inbox) ResumeFetchPartitions(map[string][]int32) {
	b.mu.Lock()
	b.paused = false
	b.mu.Unlock()
	select {
	case b.more <- struct{}{}:
	default:
	}
}

// AlignLow implements kafkaio.Aligner: the lowest watermark of the
// group's other active input tasks, as last committed.
func (b *inbox) AlignLow() (etime.Time, bool) {
	if b.align == nil {
		return 0, false
	}
	return b.align.low(b.task)
}

var (
	_ kafkaio.Fetcher = (*inbox)(nil)
	_ kafkaio.Aligner = (*inbox)(nil)
)

// alignment is the group's watermark alignment (max_drift across
// processes, Flink's alignment group): each input task's watermark as
// committed (its offset's metadata), read by the member every watermark
// interval; tasks that are idle or read to their end are left out.
type alignment struct {
	mu sync.Mutex
	wm map[int32]etime.Time // by input task; nil until first read
}

// low is the lowest watermark of the active input tasks but except.
func (a *alignment) low(except int32) (etime.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	lo, ok := etime.MaxTime, false
	for p, wm := range a.wm {
		if p != except {
			lo, ok = etime.Min(lo, wm), true
		}
	}
	return lo, ok
}

// known reports whether the watermarks were read once.
func (a *alignment) known() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.wm != nil
}

// set replaces the watermarks.
func (a *alignment) set(wm map[int32]etime.Time) {
	a.mu.Lock()
	a.wm = wm
	a.mu.Unlock()
}

// sink is a task's kafka sink: its records go to the task's outbox, which
// the member produces in its transaction with the task's checkpoint.
type sink struct {
	t     *task
	topic string
	role  connector.SinkRole
}

func (s *sink) Write(_ context.Context, batch []connector.Message) error {
	for i := range batch {
		m := batch[i]
		if s.role != connector.RoleResults {
			m.Headers = nil // as the kafka sink writes late records and dead letters
		}
		s.t.write(kafkaio.MessageRecord(s.topic, &m))
	}
	return nil
}

func (s *sink) Flush(context.Context) error { return nil }
func (s *sink) Close() error                { return nil }

// The sink is transactional so that its output is handed over per
// checkpoint (at its pre-commit, before the checkpoint's Commit): the
// member's transaction commits it.
func (s *sink) PreCommit(context.Context, int64) ([]byte, error) { return nil, nil }
func (s *sink) Commit(context.Context, int64) error              { return nil }
func (s *sink) Abort(context.Context) error                      { return nil }
func (s *sink) Recover(context.Context, int64, []byte) error     { return nil }

var _ connector.Transactional = (*sink)(nil)

// counters are the task's summary counters, encoded (encodeSummary): at
// its end, else as its run returned; false when it has none.
func (t *task) counters() ([]byte, bool) {
	if t.last != nil && t.last.Done {
		return t.last.Parts[summaryPart], true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.ended || len(t.sum.Counters) == 0 {
		return nil, false
	}
	return encodeSummary(t.sum), true
}

// quietAborts is a task's log handler: a checkpoint that failed because
// the member's transaction aborted (a rebalance) is logged at Debug, not
// as the warning of a failure; the member tells of it once.
type quietAborts struct{ slog.Handler }

func (h quietAborts) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		aborted := false
		r.Attrs(func(a slog.Attr) bool {
			if err, ok := a.Value.Any().(error); ok && errors.Is(err, errAborted) {
				aborted = true
			}
			return !aborted
		})
		if aborted {
			if !h.Enabled(ctx, slog.LevelDebug) {
				return nil
			}
			d := slog.NewRecord(r.Time, slog.LevelDebug, r.Message, r.PC)
			r.Attrs(func(a slog.Attr) bool { d.AddAttrs(a); return true })
			r = d
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h quietAborts) WithAttrs(as []slog.Attr) slog.Handler {
	return quietAborts{h.Handler.WithAttrs(as)}
}
func (h quietAborts) WithGroup(g string) slog.Handler { return quietAborts{h.Handler.WithGroup(g)} }

// taskError names the task in err.
func taskError(p int32, err error) error {
	return fmt.Errorf("task %d: %w", p, err)
}
