package runtime

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/hist"
	"github.com/weirstream/weir/watermark"
)

// Checkpoints are aligned barrier snapshots (Chandy-Lamport, as Flink):
//
//  1. The coordinator starts checkpoint id and asks every source subtask to
//     inject a barrier. A source snapshots its position and its chain, then
//     sends the barrier on every output channel, between two records.
//  2. A subtask that receives the barrier on one input channel stops
//     processing that channel (its batches are held in arrival order) until
//     the barrier has come on every channel; then it snapshots its valves
//     and its chain, forwards the barrier, and processes what it held.
//  3. Every subtask writes its parts to the pending checkpoint and
//     acknowledges. The last acknowledgement runs the pre-commit hooks
//     (sinks make their output of the epoch durable and record how far it
//     goes) and commits the checkpoint (the manifest, last).
//
// A subtask that finishes (end of input) while a checkpoint is pending
// aborts it; no checkpoint starts once a source has finished. The
// deterministic executor injects barriers into all sources at once between
// two polls, so its barriers never overtake data and nothing is held.

// CheckpointOptions enables checkpoints.
type CheckpointOptions struct {
	// Interval between checkpoints, in processing time of Clock: with a
	// fake clock, checkpoints are due when the test advances it.
	Interval time.Duration
	// MinPause is the least time from the end of a checkpoint to the
	// start of the next periodic or prompted one (weir.CheckpointOptions).
	MinPause time.Duration
	// Clock is what Interval, the checkpoints' timestamps (CheckpointStats)
	// and their durations are measured on; nil: the job's Options.Clock.
	// A run whose processing time stands still (a deterministic replay
	// fixed at one instant) gives its checkpoints a moving clock here.
	Clock clock.Clock
	// Store receives the checkpoints.
	Store checkpoint.Store
	// NextID is the first checkpoint id (the restored one + 1).
	NextID int64
	// Restore, when set, is the checkpoint the job starts from.
	Restore checkpoint.View
	// OnComplete, when set, is called after each checkpoint commits.
	OnComplete func(id int64)
	// OnError, when set, is told about a checkpoint that failed (the job
	// goes on; the next checkpoint will try again).
	OnError func(id int64, err error)
}

// SnapshotFunc appends a part's bytes to dst. dst is empty: nil, or the
// buffer of the part's previous checkpoint once that has been written, so
// a large part does not cost a new buffer each time.
type SnapshotFunc func(dst []byte) ([]byte, error)

type snapshotter struct {
	name string
	fn   SnapshotFunc
	// spare is the buffer of the last checkpoint's part, handed back by
	// the goroutine that wrote it.
	spare *atomic.Pointer[[]byte]
}

// part is one part of a subtask's checkpoint; a buffer with a spare goes
// back to its snapshotter once written.
type part struct {
	name  string
	data  []byte
	spare *atomic.Pointer[[]byte]
}

// OnSnapshot registers a part of the subtask's checkpoint, named
// "stage/index/name" in the store. fn runs on the subtask's goroutine when
// the barrier passes the subtask: everything before it has been processed,
// nothing after it.
func (st *Subtask) OnSnapshot(name string, fn SnapshotFunc) {
	st.snapshots = append(st.snapshots, snapshotter{name, fn, new(atomic.Pointer[[]byte])})
}

// OnBarrier registers fn to forward a barrier downstream (exchange
// writers).
func (st *Subtask) OnBarrier(fn func(id int64)) { st.barrierFns = append(st.barrierFns, fn) }

// Restored returns the part called name of every subtask of this stage in
// the restored checkpoint, by old subtask index; nil without a restore.
func (st *Subtask) Restored(name string) map[int][]byte {
	cp := st.job.opts.Checkpoint
	if cp == nil || cp.Restore == nil {
		return nil
	}
	return cp.Restore.Parts(st.stage.Name, name)
}

// Restoring reports whether the job starts from a restored checkpoint.
func (st *Subtask) Restoring() bool {
	cp := st.job.opts.Checkpoint
	return cp != nil && cp.Restore != nil
}

// Checkpointing reports whether the job takes checkpoints.
func (st *Subtask) Checkpointing() bool { return st.job.coord.Load() != nil }

// PreCommit registers fn to run when checkpoint id has every part, just
// before it commits; it may write more parts (sinks record how far their
// durable output goes). It runs on whichever subtask goroutine
// acknowledged last.
func (j *Job) PreCommit(fn func(id int64, write func(name string, data []byte) error) error) {
	j.preCommit = append(j.preCommit, fn)
}

// PreCommitStage is the pseudo-stage of the parts pre-commit hooks write.
const PreCommitStage = "job"

// coordinator runs checkpoints for one job.
type coordinator struct {
	job  *Job
	opts *CheckpointOptions
	// clk is processing time for checkpoints: opts.Clock, else the
	// job's Options.Clock. Every time the coordinator keeps (lastTrig,
	// triggered, the stats' timestamps and durations) is on it.
	clk clock.Clock
	// request is the newest checkpoint id the sources must inject.
	request atomic.Int64
	// triggered is when it was triggered (Unix ns of clk), for start
	// delays.
	triggered atomic.Int64
	total     int
	// writers are the goroutines writing parts; the job waits for them.
	writers sync.WaitGroup
	// poke wakes the trigger goroutine of a parallel run when a
	// checkpoint is requested (capacity 1; a full channel is a pending
	// wake-up).
	poke chan struct{}

	mu struct {
		sync.Mutex
		next    int64
		pending checkpoint.Pending
		id      int64 // the pending checkpoint, 0 if none
		acks    int   // subtasks that took their snapshot
		written int   // subtasks whose parts are written
		stopped bool  // a source finished: no more checkpoints
		// stoppedAt is when one did (c.clk's time); stopWarned: the
		// checkpoints it kept from starting were warned of.
		stoppedAt  time.Time
		stopWarned bool
		// sourcesDone counts the source subtasks that finished.
		sourcesDone int
		lastTrig    time.Time
		force       bool // a checkpoint is asked for now, whatever the interval
		// prompted: a firing asked for a checkpoint (RequestCheckpointAfter):
		// it starts whatever the interval, but after MinPause.
		prompted bool
		// lastEnd is when the last checkpoint ended (committed or
		// failed), for MinPause; zero before the first.
		lastEnd time.Time
		final   bool  // a graceful stop's last was asked for: no periodic ones
		size    int64 // bytes written for the pending checkpoint so far
		stats   CheckpointStats
		// completing: OnComplete is running, without mu; no
		// checkpoint starts meanwhile.
		completing bool
	}
	// pub is what CheckpointStats returns: mu.stats and the pending
	// checkpoint's progress, copied at each change under pub's own lock
	// (taken with mu held, never the other way round). Readers never
	// wait for mu, which the store's Begin and Abort hold for as long as
	// they take (the pre-commit hooks, the store's Commit and OnComplete
	// run without it).
	pub struct {
		sync.Mutex
		stats CheckpointStats
	}
}

// CheckpointStats counts a job's checkpoints, for metrics.
type CheckpointStats struct {
	Completed, Failed int64
	// InProgress: a checkpoint is pending.
	InProgress bool
	// LastCompleted is when the newest checkpoint committed (zero: none),
	// LastDuration how long it took from trigger to commit, LastSize the
	// bytes of its parts.
	LastCompleted time.Time
	LastDuration  time.Duration
	LastSize      int64
	// Durations are the completed checkpoints' durations.
	Durations hist.H
	// InFlight is the pending checkpoint (ID 0: none).
	InFlight InFlightCheckpoint
}

// InFlightCheckpoint is a checkpoint in progress: since when, and what it
// waits for.
type InFlightCheckpoint struct {
	ID int64
	// Started is when it was triggered.
	Started time.Time
	// Phase is what it waits for (PhaseBegin, ...), since PhaseSince.
	Phase      string
	PhaseSince time.Time
	// Acked subtasks of Subtasks took their snapshot; the parts of
	// Written of them are written.
	Acked, Written, Subtasks int
}

// The phases of a checkpoint in progress.
const (
	// PhaseBegin: the store opens it (checkpoint.Store.Begin).
	PhaseBegin = "begin"
	// PhaseSnapshots: the barriers travel; some subtask has not taken
	// its snapshot yet (it is busy, backpressured, or aligning).
	PhaseSnapshots = "snapshots"
	// PhaseParts: every snapshot is taken; parts are being written.
	PhaseParts = "parts"
	// PhasePreCommit: the pre-commit hooks run (sinks make the epoch's
	// output durable).
	PhasePreCommit = "pre-commit"
	// PhaseCommit: the store commits it (the manifest).
	PhaseCommit = "commit"
)

// CheckpointStats returns the job's checkpoint counts; the zero value
// without checkpoints. Safe for concurrent use.
func (j *Job) CheckpointStats() CheckpointStats {
	c := j.coord.Load()
	if c == nil {
		return CheckpointStats{}
	}
	c.pub.Lock()
	defer c.pub.Unlock()
	return c.pub.stats
}

// publishLocked publishes the stats and the progress of checkpoint id
// (0: none pending), triggered at started; phase is PhaseBegin,
// PhasePreCommit or PhaseCommit, or "" for the one the counts say. c.mu
// is held.
func (c *coordinator) publishLocked(id int64, started time.Time, phase string) {
	now := c.clk.Now()
	c.pub.Lock()
	defer c.pub.Unlock()
	f := c.pub.stats.InFlight
	if f.ID != id {
		f = InFlightCheckpoint{ID: id, Started: started}
	}
	if id != 0 {
		if phase == "" {
			phase = PhaseSnapshots
			if c.mu.acks == c.total {
				phase = PhaseParts
			}
		}
		if f.Phase != phase {
			f.Phase, f.PhaseSince = phase, now
		}
		f.Acked, f.Written, f.Subtasks = c.mu.acks, c.mu.written, c.total
	}
	c.pub.stats = c.mu.stats
	c.pub.stats.InFlight = f
	c.pub.stats.InProgress = id != 0
}

func newCoordinator(j *Job, o *CheckpointOptions) *coordinator {
	c := &coordinator{job: j, opts: o, clk: o.Clock, poke: make(chan struct{}, 1)}
	if c.clk == nil {
		c.clk = j.opts.Clock
	}
	c.mu.next = max(o.NextID, 1)
	c.mu.lastTrig = c.clk.Now()
	for _, s := range j.stages {
		c.total += s.Par
	}
	return c
}

// due reports whether a checkpoint should start at now (a time of c.clk):
// none is pending or completing, and one was asked for (RequestCheckpoint),
// or, once MinPause has passed since the last one ended, a firing asked for
// one or the interval has passed since the last trigger (or the
// coordinator's start).
func (c *coordinator) due(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.mu.stopped && !c.mu.stopWarned && !c.mu.final && c.mu.sourcesDone < c.job.sourceSubtasks() &&
		now.Sub(c.mu.stoppedAt) >= c.opts.Interval && now.Sub(c.mu.lastTrig) >= c.opts.Interval:
		// The job reads on for an interval after a subtask finished:
		// its progress is no longer saved, which a failure would show.
		c.mu.stopWarned = true
		ago := now.Sub(c.mu.stoppedAt)
		ago = ago.Round(max(time.Millisecond, min(time.Second, ago/100)))
		c.job.opts.Logger.Warn(fmt.Sprintf("weir: no checkpoint since a subtask finished its input %v ago while others read on (a source channel or partition with less input): checkpoints are taken only while every subtask runs, so a failure now resumes from the last one and reads again what came after it", ago))
		return false
	case c.mu.stopped || c.mu.id != 0 || c.mu.completing:
		return false
	case c.mu.force:
		return true
	case c.mu.final:
		return false
	case c.opts.MinPause > 0 && !c.mu.lastEnd.IsZero() && now.Sub(c.mu.lastEnd) < c.opts.MinPause:
		return false
	}
	return c.mu.prompted || now.Sub(c.mu.lastTrig) >= c.opts.Interval
}

// RequestCheckpoint asks for a checkpoint as soon as possible (a graceful
// stop takes one). It reports false when none can start any more (no
// checkpoints, or a subtask finished). Safe for concurrent use.
func (j *Job) RequestCheckpoint() bool { return j.requestCheckpoint(-1, false) }

// RequestCheckpointAfter asks for a checkpoint to commit output a subtask
// emitted after checkpoint id's barrier (-1: before any), unless one begun
// since will cover it; it never asks after a graceful stop's last
// (RequestLastCheckpoint). It reports whether a checkpoint will cover
// that output. Safe for concurrent use.
func (j *Job) RequestCheckpointAfter(id int64) bool { return j.requestCheckpoint(id, true) }

func (j *Job) requestCheckpoint(id int64, prompt bool) bool {
	c := j.coord.Load()
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case prompt && (c.mu.stopped || c.mu.final):
		return false
	case prompt && id >= 0 && c.mu.next > id+1:
		return true // checkpoint next-1 began after id
	case c.mu.stopped:
		return false
	case prompt:
		c.mu.prompted = true
	default:
		c.mu.force = true
	}
	select {
	case c.poke <- struct{}{}: // the trigger goroutine looks now, not at its next tick
	default:
	}
	return true
}

// RequestLastCheckpoint asks for a checkpoint as soon as possible, as
// RequestCheckpoint does, and takes no periodic one after it (a graceful
// stop's last, which it names): it returns the id that checkpoint will
// have (one in progress completes first), false when none can start.
// Safe for concurrent use.
func (j *Job) RequestLastCheckpoint() (int64, bool) {
	c := j.coord.Load()
	if c == nil {
		return 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.stopped {
		return 0, false
	}
	c.mu.force, c.mu.final = true, true
	select {
	case c.poke <- struct{}{}:
	default:
	}
	return c.mu.next, true
}

// trigger starts the next checkpoint at now (a time of c.clk); it returns
// 0 when none may start.
func (c *coordinator) trigger(now time.Time) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.stopped || c.mu.id != 0 || c.mu.completing {
		return 0
	}
	id := c.mu.next
	c.publishLocked(id, now, PhaseBegin)
	p, err := c.opts.Store.Begin(id)
	if err != nil {
		c.mu.lastEnd = now // for MinPause: a failed checkpoint too
		c.failLocked(id, err)
		c.publishLocked(0, time.Time{}, "")
		return 0
	}
	c.mu.next++
	c.mu.lastTrig = now
	c.mu.force, c.mu.prompted = false, false
	c.mu.pending, c.mu.id, c.mu.acks, c.mu.written, c.mu.size = p, id, 0, 0, 0
	c.publishLocked(id, now, "")
	c.triggered.Store(now.UnixNano())
	c.request.Store(id)
	return id
}

func (c *coordinator) failLocked(id int64, err error) {
	c.mu.stats.Failed++
	if c.opts.OnError != nil {
		c.opts.OnError(id, err)
	}
	c.job.opts.Logger.Warn("weir: checkpoint failed", "id", id, "err", err)
}

// ack records that a subtask took its snapshot of id. Its parts are
// written (and fsynced) off the subtask's goroutine in the parallel
// executor, so processing goes on while they reach the disk; the last
// write runs the pre-commit hooks and commits.
func (c *coordinator) ack(id int64, parts []part) {
	c.mu.Lock()
	if c.mu.id != id {
		c.mu.Unlock()
		return // aborted meanwhile
	}
	p := c.mu.pending
	c.mu.acks++
	c.publishLocked(id, c.mu.lastTrig, "")
	c.mu.Unlock()
	if c.job.opts.Deterministic {
		c.write(id, p, parts)
		return
	}
	c.writers.Add(1)
	go func() {
		defer c.writers.Done()
		c.write(id, p, parts)
	}()
}

// write writes one subtask's parts of checkpoint id.
func (c *coordinator) write(id int64, p checkpoint.Pending, parts []part) {
	var completed int64 // set below, under c.mu: OnComplete's checkpoint
	defer func() {
		if completed != 0 {
			c.complete(completed) // after the Unlock deferred below
		}
	}()
	var err error
	var size int64
	for _, pt := range parts {
		if err = p.WritePart(pt.name, pt.data); err != nil {
			break
		}
		size += int64(len(pt.data))
		if pt.spare != nil {
			b := pt.data[:0]
			pt.spare.Store(&b)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.id != id {
		return // aborted meanwhile
	}
	if err != nil {
		c.abortLocked(err)
		return
	}
	c.mu.written++
	c.mu.size += size
	if c.mu.written < c.total {
		c.publishLocked(id, c.mu.lastTrig, "")
		return
	}
	c.publishLocked(id, c.mu.lastTrig, PhasePreCommit)
	// Every subtask has taken its snapshot: nothing else touches the
	// pending checkpoint now, and no other starts while c.mu.id is set.
	// The pre-commit hooks (sinks waiting for a database) and the commit
	// run without c.mu, so that stats and requests do not wait for them.
	c.mu.Unlock()
	err = func() error {
		defer c.mu.Lock() // also when a hook panics: the deferred Unlock above needs it held
		return c.commit(id, p)
	}()
	if err != nil {
		c.abortLocked(err)
		return
	}
	c.mu.pending, c.mu.id = nil, 0
	now := c.clk.Now()
	c.mu.lastEnd = now
	st := &c.mu.stats
	st.Completed++
	st.LastCompleted, st.LastDuration, st.LastSize = now, now.Sub(c.mu.lastTrig), c.mu.size
	st.Durations.Observe(st.LastDuration.Seconds())
	c.publishLocked(0, time.Time{}, "")
	if c.opts.OnComplete != nil {
		// Told after c.mu is released (write's deferred complete runs
		// after its deferred Unlock): listeners commit Kafka offsets
		// and transactions, over the network. Until it returns no
		// checkpoint starts (completing), as when it ran under c.mu,
		// but nobody waits for c.mu meanwhile.
		c.mu.completing, completed = true, id
	}
}

// complete calls OnComplete for checkpoint id without c.mu, then lets the
// next checkpoint start.
func (c *coordinator) complete(id int64) {
	c.opts.OnComplete(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.completing = false
	if c.mu.force || c.mu.prompted {
		select {
		case c.poke <- struct{}{}: // a checkpoint asked for meanwhile: look now
		default:
		}
	}
}

// commit runs the pre-commit hooks of checkpoint id, then commits it; it
// runs on the goroutine that wrote the last parts, without c.mu.
func (c *coordinator) commit(id int64, p checkpoint.Pending) error {
	write := func(name string, data []byte) error {
		return p.WritePart(checkpoint.PartName(PreCommitStage, 0, name), data)
	}
	for _, f := range c.job.preCommit {
		if err := f(id, write); err != nil {
			return err
		}
	}
	c.publishPhase(id, PhaseCommit)
	return p.Commit()
}

// publishPhase moves the published in-flight checkpoint id to phase. It
// needs c.pub only: the commit runs without c.mu.
func (c *coordinator) publishPhase(id int64, phase string) {
	c.pub.Lock()
	defer c.pub.Unlock()
	if f := &c.pub.stats.InFlight; f.ID == id && f.Phase != phase {
		f.Phase, f.PhaseSince = phase, c.clk.Now()
	}
}

func (c *coordinator) abortLocked(err error) {
	id := c.mu.id
	if c.mu.pending != nil {
		err = errors.Join(err, c.mu.pending.Abort())
	}
	if id != 0 {
		c.mu.lastEnd = c.clk.Now()
	}
	c.mu.pending, c.mu.id = nil, 0
	if err != nil {
		c.failLocked(id, err)
	}
	c.publishLocked(0, time.Time{}, "")
}

// finished is told that a subtask finished: a pending checkpoint cannot
// complete any more, and no new one may start.
func (c *coordinator) finished(source bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if source {
		c.mu.sourcesDone++
	}
	if !c.mu.stopped {
		c.job.opts.Logger.Info("weir: a subtask finished its input; no further checkpoints are taken")
		c.mu.stoppedAt = c.clk.Now()
	}
	c.mu.stopped = true
	if c.mu.id != 0 && c.mu.acks < c.total {
		// Some subtask will never snapshot this checkpoint. (One whose
		// every snapshot is taken completes as its parts are written.)
		c.abortLocked(nil)
	}
}

// checkpoint snapshots the subtask for checkpoint id, forwards the barrier
// and acknowledges. It runs on the subtask's goroutine.
func (st *Subtask) checkpoint(id int64) {
	c := st.job.coord.Load()
	if t := c.triggered.Load(); t != 0 && !st.job.opts.Deterministic {
		st.ckDelayNs.Store(c.clk.Now().UnixNano() - t)
	}
	var parts []part
	var err error
	for g, v := range st.valves {
		parts = append(parts, part{name: checkpoint.PartName(st.stage.Name, st.Index, "valve/"+strconv.Itoa(g)), data: encodeValve(v.Snapshot())})
	}
	parts = append(parts, part{name: checkpoint.PartName(st.stage.Name, st.Index, "dead-letters"), data: strconv.AppendInt(nil, st.dead.Load(), 10)})
	for _, s := range st.snapshots {
		var dst []byte
		if p := s.spare.Swap(nil); p != nil {
			dst = *p
		}
		var b []byte
		if b, err = s.fn(dst); err != nil {
			err = fmt.Errorf("weir: stage %s subtask %d: snapshot %s: %w", st.stage.Name, st.Index, s.name, err)
			break
		}
		parts = append(parts, part{checkpoint.PartName(st.stage.Name, st.Index, s.name), b, s.spare})
	}
	for _, f := range st.job.onBarriers {
		f(st.stage.Name, st.Index, id)
	}
	for _, f := range st.barrierFns {
		f(id)
	}
	if err != nil {
		c.mu.Lock()
		if c.mu.id == id {
			c.abortLocked(err)
		}
		c.mu.Unlock()
		return
	}
	c.ack(id, parts)
}

// injectBarrier starts checkpoint id at a source subtask.
func (st *Subtask) injectBarrier(id int64) {
	st.injected = id
	st.flush()
	st.checkpoint(id)
}

// maybeInject injects the newest requested barrier, if this source has not
// yet.
func (st *Subtask) maybeInject() {
	if c := st.job.coord.Load(); c != nil {
		if id := c.request.Load(); id > st.injected {
			st.injectBarrier(id)
		}
	}
}

// alignment is a subtask's progress through one checkpoint's barriers.
type alignment struct {
	id    int64
	got   [][]bool
	n     int
	stash []envelope
}

// deliver hands an envelope to the subtask: held when its channel is
// blocked by an alignment, a barrier, or a batch for the gate's handler.
// It reports whether the batch was held (the sender must not reuse it).
func (st *Subtask) deliver(e envelope) bool {
	a := &st.align
	if a.id != 0 && a.got[e.gate][e.from] {
		a.stash = append(a.stash, e)
		return true
	}
	if e.barrier != 0 {
		st.onBarrier(int(e.gate), int(e.from), e.barrier)
		return false
	}
	st.handlers[e.gate](int(e.from), e.b)
	return false
}

func (st *Subtask) onBarrier(g, from int, id int64) {
	a := &st.align
	if a.id == 0 {
		if id <= st.injected {
			return // a barrier of an abandoned checkpoint
		}
		a.id = id
		if a.got == nil {
			a.got = make([][]bool, len(st.stage.gates))
			for i, gt := range st.stage.gates {
				a.got[i] = make([]bool, gt.Channels)
			}
		}
	}
	if id < a.id {
		return // a barrier of an abandoned, older checkpoint
	}
	if id != a.id {
		// A newer barrier overtook an abandoned checkpoint: start over.
		st.releaseAlignment()
		st.onBarrier(g, from, id)
		return
	}
	a.got[g][from] = true
	a.n++
	need := 0
	for i, gt := range st.stage.gates {
		need += gt.Channels - st.ended[i]
	}
	if a.n < need {
		return
	}
	st.injected = id
	st.flush()
	st.checkpoint(id)
	st.releaseAlignment()
}

// releaseAlignment ends the current alignment and processes what it held.
func (st *Subtask) releaseAlignment() {
	a := &st.align
	held := a.stash
	a.stash = nil
	a.id, a.n = 0, 0
	for _, row := range a.got {
		clear(row)
	}
	for _, e := range held {
		st.deliver(e)
	}
}

// encodeValve and restoreValve carry a valve's channel states.
func encodeValve(s watermark.ValveState) []byte {
	var b []byte
	b = strconv.AppendInt(b, int64(s.Watermark), 10)
	for _, c := range s.Channels {
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(c.Watermark), 10)
		if c.Idle {
			b = append(b, 'i')
		}
		if c.Aligned {
			b = append(b, 'a')
		}
	}
	return b
}

func decodeValve(b []byte) (watermark.ValveState, error) {
	var s watermark.ValveState
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return s, errors.New("weir: empty valve state")
	}
	v, err := strconv.ParseInt(fields[0], 10, 64)
	if err != nil {
		return s, err
	}
	s.Watermark = etime.Time(v)
	for _, f := range fields[1:] {
		var c watermark.ChannelState
		for len(f) > 0 && (f[len(f)-1] == 'i' || f[len(f)-1] == 'a') {
			if f[len(f)-1] == 'i' {
				c.Idle = true
			} else {
				c.Aligned = true
			}
			f = f[:len(f)-1]
		}
		w, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return s, err
		}
		c.Watermark = etime.Time(w)
		s.Channels = append(s.Channels, c)
	}
	return s, nil
}

// restoreValves sets the subtask's valves from the restored checkpoint:
// exactly when the gate has as many channels as before, else every channel
// at the old output watermark (which gives the same output).
func (st *Subtask) restoreValves() error {
	restored := false
	for g := range st.valves {
		parts := st.Restored("valve/" + strconv.Itoa(g))
		if len(parts) == 0 {
			continue
		}
		b, ok := parts[st.Index]
		if !ok {
			for _, p := range parts {
				b = p
				break
			}
		}
		s, err := decodeValve(b)
		if err != nil {
			return fmt.Errorf("weir: stage %s: valve state: %w", st.stage.Name, err)
		}
		if n := st.stage.gates[g].Channels; len(s.Channels) != n {
			out := s.Watermark
			s.Channels = make([]watermark.ChannelState, n)
			for i := range s.Channels {
				s.Channels[i] = watermark.ChannelState{Watermark: out, Aligned: true}
			}
		}
		st.valves[g] = watermark.RestoreValve(s)
		st.chansDirty = true
		restored = true
	}
	if !restored {
		return nil
	}
	// The subtask's watermark is its gate's, or, with two inputs, the
	// combination of both gates' restored watermarks (fed to a fresh
	// combiner without emitting anything: downstream restores its own).
	wm, idle := st.valves[0].Watermark(), st.valves[0].Idle()
	if st.combined != nil {
		for g, v := range st.valves {
			st.combined.InputWatermark(g, v.Watermark(), discard{})
			st.combined.InputStatus(g, v.Idle(), discard{})
		}
		wm, idle = st.combined.Watermark(), st.combined.Idle()
	}
	st.wm.Store(int64(wm))
	st.idle.Store(idle)
	return nil
}

// discard is a valve output that forwards nothing.
type discard struct{}

func (discard) Watermark(etime.Time) {}
func (discard) Status(bool)          {}

// restoreDeadLetters restores the subtask's dead-letter count: its own when
// the stage has as many subtasks as before, else subtask 0 takes them all.
func (st *Subtask) restoreDeadLetters() error {
	parts := st.Restored("dead-letters")
	for old, b := range parts {
		if old == st.Index && len(parts) == st.stage.Par || st.Index == 0 && len(parts) != st.stage.Par {
			n, err := strconv.ParseInt(string(b), 10, 64)
			if err != nil {
				return fmt.Errorf("corrupt dead-letter count in the checkpoint: %w", err)
			}
			st.dead.Add(n)
		}
	}
	return nil
}
