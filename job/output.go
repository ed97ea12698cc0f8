package job

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/epochs"
	"github.com/weirstream/weir/internal/record"
	"github.com/weirstream/weir/ledger"
	"github.com/weirstream/weir/spec"
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
	epochs *epochs.Buffer[item] // nil without checkpoints
	// prompt: checkpoint.after_firing; early and on-time results ask for
	// a checkpoint (epochs.Buffer.AddPrompt).
	prompt bool
	// applyErr is the first error of an item applied since the last
	// pre-commit began; mu guards it.
	applyErr error

	// mu serializes applying items (they come from many subtasks) and
	// syncing the sinks, and guards c. It is held across sink I/O, so
	// observers never take it: they read pub.
	mu sync.Mutex
	c  outCounters
	// warned holds the aggregates and overflow kinds warned about.
	warned map[string]bool
	// through is the end of the latest window this process wrote a
	// result of, and overEarlier counts the results of windows that
	// start before the earlier runs' end (Job.earlier); mu guards
	// through.
	through     etime.Time
	overEarlier atomic.Int64
	// flushing: items applied now are covered by a checkpoint being
	// committed (preCommit), or are the end of a run that did not fail
	// (finish), so a Postgres sink may commit them in batches as they
	// come (flushDue) instead of in one transaction.
	flushing bool
	// pub is what observers read without waiting for a sink: c's counts
	// (Results, Late, Partial, Controls, Regressions, Dead, DecimalOverflow,
	// FloatOverflow) are written with both mu and pub held, so either lock
	// reads them; call is the sink call in progress (mu serializes them:
	// there is one at most).
	pub struct {
		sync.Mutex
		call SinkCall
	}
	// restoredControls is Controls as the checkpoint resumed from had
	// it (pub held).
	restoredControls int64
}

// SinkCall is a call into one of the job's sinks: the sink (results,
// late, late_partial, dead_letter, archive), the call (write, sync (a
// flush at a checkpoint), pre-commit, commit) and when it began; Call is empty and Since zero
// while none is in progress.
type SinkCall struct {
	Sink, Call string
	Since      time.Time
	// Err, for a source that does not reach its server (Call "reach"),
	// is its last failure.
	Err string
}

// outCounters are the output's exact counts, part of each checkpoint.
type outCounters struct {
	// Run is the run's id (runID), which every durable output carries;
	// Since is the oldest run whose outputs the job's outputs still hold
	// (Run itself unless a fresh start was told to append).
	Run         int64 `json:"run"`
	Since       int64 `json:"since,omitempty"`
	Results     int64 `json:"results"`
	Late        int64 `json:"late"`
	Partial     int64 `json:"partial"`
	Controls    int64 `json:"controls"`
	Regressions int64 `json:"regressions"`
	// Filtered counts the records the plan's where dropped, Having the
	// results a window's having dropped.
	Filtered int64 `json:"filtered,omitempty"`
	Having   int64 `json:"having,omitempty"`
	// DecimalOverflow counts results with a decimal sum or avg that went
	// beyond 38 digits and fell back to float64, one per result and
	// aggregate; FloatOverflow those with a float sum beyond float64,
	// which they write as null.
	DecimalOverflow int64            `json:"decimal_overflow,omitempty"`
	FloatOverflow   int64            `json:"float_overflow,omitempty"`
	Dead            map[string]int64 `json:"dead"`
	// Sinks are the states of the Transactional message sinks (msgSink)
	// at this checkpoint, by sink name: what PreCommit returned, which
	// Recover takes back (a file's length). Offsets are what checkpoints
	// of meta format 2 kept instead: the lengths of the file sinks.
	Sinks   map[string][]byte `json:"sinks,omitempty"`
	Offsets map[string]int64  `json:"offsets,omitempty"`
	// Ledgers are what checkpoints of meta format 2 kept of ledger sinks
	// instead of Sinks: their committed positions, by sink name.
	Ledgers map[string]ledger.Pos `json:"ledgers,omitempty"`
	// Epoch is what checkpoints of meta format 2 kept of the Postgres
	// record tables instead of Sinks: the epoch of their rows the
	// checkpoint covers.
	Epoch int64 `json:"epoch,omitempty"`
	// SlotMax is, per source channel, the largest timestamp of each of
	// its slots (a file channel, a Kafka partition), from which backward
	// jumps (timestamp_regressions) are measured. Checkpoints before it
	// had ChannelMax, one per channel.
	SlotMax    [][]etime.Time `json:"slot_max,omitempty"`
	ChannelMax []etime.Time   `json:"channel_max,omitempty"`
	// ReadSlotMax is SlotMax of each source after the first, and
	// ReadDead the dead letters of each source, for a plan that reads
	// several (nil for one).
	ReadSlotMax [][][]etime.Time `json:"read_slot_max,omitempty"`
	ReadDead    []int64          `json:"read_dead,omitempty"`
	// ReadControls are the control lines of each source, and
	// ReadFiltered the records each source's where dropped, for a plan
	// that reads several (nil for one).
	ReadControls []int64 `json:"read_controls,omitempty"`
	ReadFiltered []int64 `json:"read_filtered,omitempty"`
	// Windows are, for a job of several windows, each window's counts
	// of results, late lines and overflows (Results, Late, Partial,
	// DecimalOverflow and FloatOverflow above are the sums); nil for a
	// job of one window.
	Windows []windowCounts `json:"windows,omitempty"`
	// Watermark is the highest finite operator watermark among the
	// results and late records written (MinTime before any): what a
	// backfill takes as the live job's watermark at a checkpoint, and
	// what the archive's horizon counts from. (Each ledger entry carries
	// its own subtask's watermark, which backfill checks too.)
	Watermark etime.Time `json:"watermark"`
}

// windowCounts are one window's counts of a job of several windows.
type windowCounts struct {
	Results int64 `json:"results"`
	// Rows counts a select's rows that a join of records reads (not
	// written: they are the join's input, W19); JoinIn a join of
	// records' rows of those (one per record and window it meets).
	Rows   int64 `json:"rows,omitempty"`
	JoinIn int64 `json:"join_in,omitempty"`
	// JoinLate counts a join of records' rows too late at their record's
	// watermark (itemJoinLate): dropped, with its operator's own.
	JoinLate        int64 `json:"join_late,omitempty"`
	Having          int64 `json:"having,omitempty"`
	Late            int64 `json:"late"`
	Partial         int64 `json:"partial"`
	DecimalOverflow int64 `json:"decimal_overflow,omitempty"`
	FloatOverflow   int64 `json:"float_overflow,omitempty"`
}

// window returns the counts of branch b (nil for a job of one window,
// whose counts are outCounters' own); pub is held to write them.
func (c *outCounters) window(b int) *windowCounts {
	if b >= len(c.Windows) {
		return nil
	}
	return &c.Windows[b]
}

// sinkState is sink name's state at the checkpoint: Sinks' entry, or in
// a checkpoint of meta format 2 its file length, ledger position or
// record table epoch (nil when it has none).
func (c *outCounters) sinkState(name string) []byte {
	if st, ok := c.Sinks[name]; ok {
		return st
	}
	if n, ok := c.Offsets[name]; ok {
		return strconv.AppendInt(nil, n, 10)
	}
	if p, ok := c.Ledgers[name]; ok {
		b, _ := json.Marshal(p) // a Pos always marshals
		return b
	}
	if c.Sinks == nil && c.Epoch > 0 {
		return strconv.AppendInt(nil, c.Epoch, 10) // a Postgres record table's
	}
	return nil
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
	itemFiltered
	// itemHaving: a result the window's having dropped (counted only).
	itemHaving
	// itemRow: a select's row that a join of records reads (counted
	// only): b is the select's branch, join the join's, n the join's
	// rows of it.
	itemRow
	// itemJoinLate: a join of records' row of a record for a window
	// whose rows the join had emitted by the record's watermark (W19;
	// counted only): b is the join's branch.
	itemJoinLate
)

type item struct {
	kind itemKind
	// join and n: an itemRow's.
	join uint8
	n    int64
	// b is the branch (window) of a result or late record, the read
	// (source) of a dead letter.
	b      uint8
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

func newOutput(j *Job, checkpoints, deterministic bool) *output {
	o := &output{j: j}
	o.c.Dead = map[string]int64{}
	if j.several() {
		o.c.Windows = make([]windowCounts, len(j.branches))
	}
	if len(j.reads) > 1 {
		o.c.ReadDead, o.c.ReadControls, o.c.ReadFiltered = make([]int64, len(j.reads)), make([]int64, len(j.reads)), make([]int64, len(j.reads))
	}
	o.c.Watermark = etime.MinTime
	if checkpoints {
		o.epochs = epochs.New[item](deterministic)
		limit := int64(spec.DefaultMaxBuffered)
		if c := j.plan.Checkpoint; c != nil && c.MaxBuffered > 0 {
			limit = int64(c.MaxBuffered)
		}
		// At half the bound with no commit under way, a checkpoint now,
		// so that adds past the bound wait for its commit instead of
		// growing.
		o.epochs.SetLimit(limit, func() { j.env.RequestCheckpoint() })
		if c := j.plan.Checkpoint; c != nil && c.AfterFiring {
			o.prompt = true
			o.epochs.SetPrompt(func(after int64) { j.env.RequestCheckpointAfter(after) })
		}
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
	return o.epochs.Held()
}

// add applies it now, or buffers it in subtask s's epoch.
func (o *output) add(s weir.Subtask, it item) {
	if o.epochs != nil {
		if o.prompt && it.kind == itemResult && (it.res.Firing == window.Early || it.res.Firing == window.OnTime) {
			o.epochs.AddPrompt(epochs.Subtask(s), it) // checkpoint.after_firing
			return
		}
		o.epochs.Add(epochs.Subtask(s), it)
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.apply(&it)
}

// calling records that a call into a sink begins; o.mu is held.
func (o *output) calling(sink, call string) {
	o.pub.Lock()
	o.pub.call = SinkCall{Sink: sink, Call: call, Since: time.Now()}
	o.pub.Unlock()
}

// done records that the call returned and, when n is set, adds one to
// that count of o.c, and to w's too when it is set (a window's count of a
// job of several); o.mu is held.
func (o *output) done(n *int64, w ...*int64) {
	o.pub.Lock()
	o.pub.call = SinkCall{}
	if n != nil {
		*n++
		for _, x := range w {
			if x != nil {
				*x++
			}
		}
	}
	o.pub.Unlock()
}

// apply writes or counts one item; o.mu is held.
func (o *output) apply(it *item) {
	j := o.j
	b := j.branches[it.b]
	wc := o.c.window(b.i)
	var err error
	counted := func(n *int64, w func(*windowCounts) *int64) {
		if err != nil {
			n = nil
		}
		var x *int64
		if wc != nil {
			x = w(wc)
		}
		o.done(n, x)
	}
	switch it.kind {
	case itemResult:
		for _, r := range b.results {
			o.calling(r.name, "write")
			if err = r.write(it.res); err != nil {
				break
			}
		}
		counted(&o.c.Results, func(w *windowCounts) *int64 { return &w.Results })
		if err == nil {
			if it.res.Firing != window.Retract {
				o.noteOverflows(b, it.res.Value)
				if b.Select == nil { // a row of a query without a window: appended
					o.noteWindow(it.res.Window)
				}
			}
			o.c.noteWatermark(it.res.Watermark)
			if j.archive != nil && it.res.Firing != window.Retract {
				r := &it.res
				j.archive.put(r.Key, r.Window.Start, r.Window.End, r.Pane, r.Value)
				if j.ck == nil && j.archive.due() {
					o.calling("archive", "commit")
					err = j.archive.commit(o.c.Watermark, j.plan.ArchiveHorizon, 0)
					o.done(nil)
				}
			}
		}
	case itemLate:
		o.calling(j.sinkName(b.late), "write")
		err = b.late.writeRecord(it)
		counted(&o.c.Late, func(w *windowCounts) *int64 { return &w.Late })
		if err == nil {
			o.c.noteWatermark(it.wm)
		}
	case itemPartial:
		o.calling(j.sinkName(b.partial), "write")
		err = b.partial.writeRecord(it)
		counted(&o.c.Partial, func(w *windowCounts) *int64 { return &w.Partial })
		if err == nil {
			o.c.noteWatermark(it.wm)
		}
	case itemDead:
		o.pub.Lock()
		o.c.Dead[it.reason]++
		if int(it.b) < len(o.c.ReadDead) {
			o.c.ReadDead[it.b]++
		}
		o.pub.Unlock()
		if r := j.reads[it.b]; r.dead != nil {
			o.calling(r.DeadLetter.Name, "write")
			err = r.dead.writeRecord(it)
			o.done(nil)
		}
	case itemControl:
		var per *int64
		if int(it.b) < len(o.c.ReadControls) {
			per = &o.c.ReadControls[it.b]
		}
		o.done(&o.c.Controls, per)
	case itemRegression:
		o.done(&o.c.Regressions)
	case itemHaving:
		counted(&o.c.Having, func(w *windowCounts) *int64 { return &w.Having })
	case itemRow:
		o.pub.Lock()
		if jc := o.c.window(int(it.join)); wc != nil && jc != nil {
			wc.Rows++
			jc.JoinIn += it.n
		}
		o.pub.Unlock()
		o.done(nil)
	case itemJoinLate:
		o.pub.Lock()
		if wc != nil {
			wc.JoinLate++
		}
		o.pub.Unlock()
		o.done(nil)
	case itemFiltered:
		var per *int64
		if int(it.b) < len(o.c.ReadFiltered) {
			per = &o.c.ReadFiltered[it.b]
		}
		o.done(&o.c.Filtered, per)
	}
	if err != nil && o.applyErr == nil {
		o.applyErr = err
	}
	j.check(err)
}

// noteOverflows counts the sums of a result that overflowed (see
// Aggregator.Result) and warns once per aggregate and kind; o.mu is held.
func (o *output) noteOverflows(b *branch, v []byte) {
	p := b.plan
	wc := o.c.window(b.i)
	ov := record.ResultOverflows(v, b.width)
	for i, c := range ov {
		if i >= len(p.Aggregates) || c == record.OverNone {
			continue
		}
		what := "decimal_overflow: a decimal sum went beyond 38 digits; it is a float64 from here on (declare type: float to have float sums from the start)"
		if p.NullOnOverflow(i) {
			what = "decimal_overflow: a decimal sum went beyond 38 digits; the window's result is null, as Flink SQL's SUM and AVG of a DECIMAL are"
		}
		o.pub.Lock()
		if c == record.OverInfinite {
			o.c.FloatOverflow++
			if wc != nil {
				wc.FloatOverflow++
			}
			what = "float_overflow: a float sum went beyond float64 (±1.8e308) and is written as null"
		} else {
			o.c.DecimalOverflow++
			if wc != nil {
				wc.DecimalOverflow++
			}
		}
		o.pub.Unlock()
		a := p.Aggregates[i]
		if k := a.Name + string(c); !o.warned[k] {
			if o.warned == nil {
				o.warned = map[string]bool{}
			}
			o.warned[k] = true
			if o.j.warn != nil {
				o.j.warn(fmt.Sprintf("aggregate %q (%s of %s): %s; counted in the summary, warned once", a.Name, a.Fn, a.Field, what))
			}
		}
	}
}

// preCommit applies the items checkpoint id covers, makes every sink's
// output durable (sync) and writes the counters and the sinks' states as
// the part "output".
func (o *output) preCommit(id int64, write func(name string, data []byte) error) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.epochs.BeginCommit()
	defer o.epochs.EndCommit()
	o.flushing = true
	defer func() { o.flushing = false }()
	o.applyErr = nil
	o.epochs.Take(id, o.apply)
	switch {
	case o.applyErr != nil:
		// A sink did not take an item of this epoch: the checkpoint must
		// not commit, or a restore from it would never write it again.
		return fmt.Errorf("checkpoint %d: its output was not all written: %w", id, o.applyErr)
	case o.j.failed.Load():
		return fmt.Errorf("checkpoint %d: the job failed: %w", id, cmp.Or(o.j.firstErr(), errors.New("see its log")))
	}
	if err := o.sync(id); err != nil {
		return err
	}
	o.c.SlotMax, o.c.ChannelMax = o.j.reads[0].dec.MaxAt(id), nil
	for i, r := range o.j.reads[1:] {
		if i == 0 {
			o.c.ReadSlotMax = o.c.ReadSlotMax[:0]
		}
		o.c.ReadSlotMax = append(o.c.ReadSlotMax, r.dec.MaxAt(id))
	}
	b, err := json.Marshal(o.c)
	if err != nil {
		return err
	}
	return write("output", b)
}

// committed commits checkpoint id's output in the message sinks, under
// o.mu (a sink's calls are serialized).
func (o *output) committed(id int64) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, m := range o.j.msgs {
		o.calling(m.name, "commit")
		err := m.committed(id)
		o.done(nil)
		if err != nil {
			return fmt.Errorf("sink %s: %w", m.name, err)
		}
	}
	return nil
}

// finish applies what no checkpoint covered (the end of the run).
func (o *output) finish() {
	if o.epochs == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.flushing = !o.j.execFailed && !o.j.failed.Load()
	o.epochs.Rest(o.apply)
}

// sync makes every sink's output durable for checkpoint id and records
// the message sinks' states.
func (o *output) sync(id int64) error {
	o.c.Sinks, o.c.Offsets, o.c.Ledgers, o.c.Epoch = map[string][]byte{}, nil, nil, 0
	for _, m := range o.j.msgs {
		call := "sync" // a flush
		if m.txn != nil {
			call = "pre-commit"
		}
		o.calling(m.name, call)
		st, err := m.preCommit(id)
		o.done(nil)
		if err != nil {
			return fmt.Errorf("sink %s: %w", m.name, err)
		}
		if st != nil {
			o.c.Sinks[m.name] = st
		}
	}
	for _, r := range o.j.allResults() {
		o.calling(r.name, "commit")
		err := r.commit()
		o.done(nil)
		if err != nil {
			return err
		}
	}
	if a := o.j.archive; a != nil {
		o.calling("archive", "commit")
		err := a.commit(o.c.Watermark, o.j.plan.ArchiveHorizon, 0)
		o.done(nil)
		if err != nil {
			return fmt.Errorf("archive: %w", err)
		}
	}
	for _, s := range o.j.recordSinks() {
		o.calling(s.name, "commit")
		err := s.commit()
		o.done(nil)
		if err != nil {
			return err
		}
	}
	return nil
}

// restore starts from a checkpoint's counters and sink states (which
// openMessages hands each sink's Recover).
func (o *output) restore(b []byte) error {
	c := outCounters{Watermark: etime.MinTime} // older checkpoints lack it
	if err := json.Unmarshal(b, &c); err != nil {
		return fmt.Errorf("corrupt output part: %w", err)
	}
	if c.Dead == nil {
		c.Dead = map[string]int64{}
	}
	if n := len(o.j.branches); n > 1 && len(c.Windows) != n {
		c.Windows = append(c.Windows, make([]windowCounts, max(n-len(c.Windows), 0))...)[:n]
	}
	if n := len(o.j.reads); n > 1 {
		c.ReadDead = append(c.ReadDead, make([]int64, max(n-len(c.ReadDead), 0))...)[:n]
		c.ReadControls = append(c.ReadControls, make([]int64, max(n-len(c.ReadControls), 0))...)[:n]
		c.ReadFiltered = append(c.ReadFiltered, make([]int64, max(n-len(c.ReadFiltered), 0))...)[:n]
	}
	o.pub.Lock()
	o.c = c
	o.restoredControls = c.Controls
	o.pub.Unlock()
	return nil
}

// counters returns the output's counts (the counts only: not the sinks'
// states or the watermark) without waiting for a sink
// call in progress. Safe for concurrent use.
func (o *output) counters() outCounters {
	o.pub.Lock()
	defer o.pub.Unlock()
	return outCounters{Results: o.c.Results, Late: o.c.Late, Partial: o.c.Partial, Controls: o.c.Controls,
		Regressions: o.c.Regressions, Filtered: o.c.Filtered, Having: o.c.Having, Dead: maps.Clone(o.c.Dead), DecimalOverflow: o.c.DecimalOverflow, FloatOverflow: o.c.FloatOverflow,
		Windows: slices.Clone(o.c.Windows), ReadDead: slices.Clone(o.c.ReadDead), ReadControls: slices.Clone(o.c.ReadControls),
		ReadFiltered: slices.Clone(o.c.ReadFiltered)}
}

// call returns the sink call in progress. Safe for concurrent use.
func (o *output) call() SinkCall {
	o.pub.Lock()
	defer o.pub.Unlock()
	return o.pub.call
}

// noteWindow notes the window of a result written (under mu): the latest
// end, and whether it starts within the time earlier runs kept in the
// outputs cover (Job.earlier), which the first such result warns of.
func (o *output) noteWindow(w window.Window) {
	if w == window.Global {
		return
	}
	o.through = max(o.through, w.End)
	if o.j.earlier == 0 || w.Start >= o.j.earlier || o.overEarlier.Add(1) > 1 {
		return
	}
	o.j.warnOutput(fmt.Sprintf("--append: this run wrote a result of window [%s, %s), which starts before the end of the windows earlier runs wrote (%s): where one of them wrote the same key and window, this run's row replaces it, holding this run's records alone (counted in over_earlier_runs); give each run's input whole windows (records of the earlier runs' time belong in their input, or in a backfill of their ledger)",
		w.Start.Wall().Format(time.RFC3339), w.End.Wall().Format(time.RFC3339), o.j.earlier.Wall().Format(time.RFC3339)))
}
