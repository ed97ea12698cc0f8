package spec

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/ledger"
	"github.com/weirstream/weir/window"
)

// output is everything the job writes or counts outside the engine:
// result, late and dead-letter lines and the counters that go with them.
// Without checkpoints each item is applied at once. With checkpoints items
// are buffered per subtask epoch and applied when the checkpoint that
// covers them pre-commits, then made durable, and the checkpoint records
// how far each file goes and the counters: a restore truncates the files
// there and starts the counters there, so after any crash the outputs and
// the summary are those of a run that never crashed.
type output struct {
	j      *Job
	epochs *epochs[item] // nil without checkpoints

	mu sync.Mutex // guards the applied state below (items come from many subtasks)
	c  outCounters
	// flushing: items applied now are covered by a checkpoint being
	// committed (preCommit), or are the end of a run that did not fail
	// (finish), so a Postgres sink may commit them in batches as they
	// come (flushDue) instead of in one transaction.
	flushing bool
	// seen is what liveCounters last read (its copy is never written).
	seen atomic.Pointer[outCounters]
}

// outCounters are the output's exact counts, part of each checkpoint.
type outCounters struct {
	Results     int64            `json:"results"`
	Late        int64            `json:"late"`
	Partial     int64            `json:"partial"`
	Controls    int64            `json:"controls"`
	Regressions int64            `json:"regressions"`
	Dead        map[string]int64 `json:"dead"`
	// Offsets are the committed lengths of the sink files, by sink name.
	Offsets map[string]int64 `json:"offsets"`
	// Ledgers are the committed positions of ledger sinks, by sink name.
	Ledgers map[string]ledger.Pos `json:"ledgers,omitempty"`
	// Epoch is the epoch of the Postgres record tables' rows (late
	// records, dead letters) this checkpoint covers: each checkpoint
	// flushes them as the next epoch, and a restore deletes later ones.
	Epoch int64 `json:"epoch,omitempty"`
	// SlotMax is, per source channel, the largest timestamp of each of
	// its slots (a file channel, a Kafka partition), from which backward
	// jumps (timestamp_regressions) are measured. Checkpoints before it
	// had ChannelMax, one per channel.
	SlotMax    [][]etime.Time `json:"slot_max,omitempty"`
	ChannelMax []etime.Time   `json:"channel_max,omitempty"`
	// Watermark is the highest finite operator watermark among the
	// results and late records written (MinTime before any): what a
	// backfill takes as the live job's watermark at a checkpoint, and
	// what the archive's horizon counts from. (Each ledger entry carries
	// its own subtask's watermark, which backfill checks too.)
	Watermark etime.Time `json:"watermark"`
}

// noteWatermark raises Watermark to a finite operator watermark (the end
// of input, MaxTime, is not one: a backfill learns it from the finished
// marker, and the archive's horizon keeps counting from the data).
func (c *outCounters) noteWatermark(wm etime.Time) {
	if wm < etime.MaxTime {
		c.Watermark = max(c.Watermark, wm)
	}
}

type itemKind uint8

const (
	itemResult itemKind = iota
	itemLate
	itemPartial
	itemDead
	itemControl
	itemRegression
)

type item struct {
	kind   itemKind
	line   []byte // late, partial and dead lines
	res    window.Result[string, []byte]
	reason string
	// id, raw and meta are a late record or dead letter as an entry of a
	// table or a message stream: its stable id (entryID), the record as
	// received, and the line's other fields as a JSON object. reason is
	// the miss (window_expired, window_expired_partial) or the dead
	// letter's reason.
	id   string
	raw  []byte
	meta []byte
	// arrived is the processing time a late record arrived (Unix ms),
	// wm the operator's watermark then.
	arrived int64
	wm      etime.Time
}

// entryID is the stable id of a record, from its position in the source:
// "partition:offset" for Kafka, the stream sequence for NATS, the line
// number for a file. A replay from a checkpoint reads the record at the
// same position, so sinks that keep ids (Postgres, NATS) store each late
// record and dead letter once however often it is replayed.
func entryID(kafka bool, part int32, offset int64) string {
	if kafka {
		return strconv.FormatInt(int64(part), 10) + ":" + strconv.FormatInt(offset, 10)
	}
	return strconv.FormatInt(offset, 10)
}

// position returns where r was read: whether from Kafka (r.part is the
// partition) and the offset, stream sequence or line number.
func (j *Job) position(r rec) (kafka bool, pos int64) {
	if j.plan.Spec.Source.Type == "kafka" {
		return true, r.no - 1 // no is the offset + 1
	}
	return false, r.no
}

func newOutput(j *Job, checkpoints, deterministic bool) *output {
	o := &output{j: j}
	o.c.Dead = map[string]int64{}
	o.c.Watermark = etime.MinTime
	if checkpoints {
		o.epochs = newEpochs[item](deterministic)
		limit := int64(DefaultMaxBuffered)
		if c := j.plan.Spec.Checkpoint; c != nil && c.MaxBuffered > 0 {
			limit = int64(c.MaxBuffered)
		}
		// At half the bound with no commit under way, a checkpoint now,
		// so that adds past the bound wait for its commit instead of
		// growing.
		o.epochs.setLimit(limit, func() { j.env.RequestCheckpoint() })
	}
	return o
}

// buffered returns the output items held for checkpoints not yet
// committed, now and at the most (0 without checkpoints: items are
// written as they come).
func (o *output) buffered() (now, peak int64) {
	if o.epochs == nil {
		return 0, 0
	}
	return o.epochs.held()
}

// add applies it now, or buffers it in subtask s's epoch.
func (o *output) add(s weir.Subtask, it item) {
	if o.epochs != nil {
		o.epochs.add(s, it)
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.apply(&it)
}

// apply writes or counts one item; o.mu is held.
func (o *output) apply(it *item) {
	j := o.j
	var err error
	switch it.kind {
	case itemResult:
		if err = j.results.write(it.res); err == nil {
			o.c.Results++
			o.c.noteWatermark(it.res.Watermark)
			if j.archive != nil && it.res.Firing != window.Retract {
				r := &it.res
				j.archive.put(r.Key, r.Window.Start, r.Window.End, r.Pane, r.Value)
				if j.ck == nil && j.archive.due() {
					err = j.archive.commit(o.c.Watermark, j.plan.ArchiveHorizon, 0)
				}
			}
		}
	case itemLate:
		if err = j.late.writeRecord(it); err == nil {
			o.c.Late++
			o.c.noteWatermark(it.wm)
		}
	case itemPartial:
		if err = j.partial.writeRecord(it); err == nil {
			o.c.Partial++
			o.c.noteWatermark(it.wm)
		}
	case itemDead:
		o.c.Dead[it.reason]++
		if j.dead != nil {
			err = j.dead.writeRecord(it)
		}
	case itemControl:
		o.c.Controls++
	case itemRegression:
		o.c.Regressions++
	}
	j.check(err)
}

// preCommit applies the items checkpoint id covers, makes the files
// durable and writes the counters and file lengths as the part "output".
func (o *output) preCommit(id int64, write func(name string, data []byte) error) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.epochs.beginCommit()
	defer o.epochs.endCommit()
	o.flushing = true
	defer func() { o.flushing = false }()
	o.epochs.take(id, o.apply)
	if err := o.sync(); err != nil {
		return err
	}
	if t, ok := o.j.results.(txnSink); ok {
		if err := t.preCommit(id); err != nil {
			return err
		}
	}
	o.c.SlotMax, o.c.ChannelMax = o.j.dec.maxAt(id), nil
	b, err := json.Marshal(o.c)
	if err != nil {
		return err
	}
	return write("output", b)
}

// finish applies what no checkpoint covered (the end of the run).
func (o *output) finish() {
	if o.epochs == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.flushing = !o.j.execFailed && !o.j.failed.Load()
	o.epochs.rest(o.apply)
}

// sync flushes and fsyncs every sink and records the file lengths.
func (o *output) sync() error {
	o.c.Offsets = map[string]int64{}
	for name, s := range o.j.files {
		n, err := s.sync()
		if err != nil {
			return fmt.Errorf("sink %s: %w", name, err)
		}
		if n >= 0 {
			o.c.Offsets[name] = n
		}
	}
	if o.j.results == nil {
		return nil
	}
	if err := o.j.results.commit(); err != nil {
		return err
	}
	if a := o.j.archive; a != nil {
		if err := a.commit(o.c.Watermark, o.j.plan.ArchiveHorizon, 0); err != nil {
			return fmt.Errorf("archive: %w", err)
		}
	}
	o.c.Epoch++ // the epoch of the rows the record sinks flush now
	for _, s := range o.j.recordSinks() {
		if err := s.commit(); err != nil {
			return err
		}
	}
	if len(o.j.ledgers) > 0 {
		o.c.Ledgers = map[string]ledger.Pos{}
		for name, l := range o.j.ledgers {
			o.c.Ledgers[name] = l.position()
		}
	}
	return nil
}

// restore starts from a checkpoint's counters and cuts the sink files back
// to what it covered.
func (o *output) restore(b []byte) error {
	c := outCounters{Watermark: etime.MinTime} // older checkpoints lack it
	if err := json.Unmarshal(b, &c); err != nil {
		return fmt.Errorf("corrupt output part: %w", err)
	}
	if c.Dead == nil {
		c.Dead = map[string]int64{}
	}
	o.c = c
	return nil
}

func (o *output) counters() outCounters {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.copyLocked()
}

// copyLocked copies the counters; o.mu is held.
func (o *output) copyLocked() outCounters {
	c := o.c
	c.Dead = make(map[string]int64, len(o.c.Dead))
	for k, v := range o.c.Dead {
		c.Dead[k] = v
	}
	return c
}

// liveCounters returns the counters for a view of the running job
// (progress, metrics) without waiting for o.mu: while a commit holds it
// (a sink waiting for its database), they are those of the last call
// that found it free.
func (o *output) liveCounters() outCounters {
	if !o.mu.TryLock() {
		if c := o.seen.Load(); c != nil {
			return *c
		}
		return outCounters{Dead: map[string]int64{}, Watermark: etime.MinTime}
	}
	c := o.copyLocked()
	o.mu.Unlock()
	o.seen.Store(&c)
	return c
}
