package weir

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/internal/runtime"
)

// CheckpointOptions enables checkpoints (R13): aligned barrier snapshots
// of source positions, watermark state and operator state, from which a
// job restores after a crash with exactly the results of a run that never
// crashed. The zero value takes none.
type CheckpointOptions struct {
	// Interval between checkpoints, in processing time of Clock; 0
	// disables them. With a fake clock (clock.Fake) a checkpoint is due
	// once the clock is advanced past the interval, whatever the
	// machine's speed.
	Interval time.Duration
	// MinPause, when > 0, is the least time between the end of a
	// checkpoint (committed or failed) and the start of the next periodic
	// one or of one a firing asks for (Env.RequestCheckpointAfter, the
	// spec's checkpoint.after_firing), as Flink's
	// execution.checkpointing.min-pause: a job whose checkpoints take long,
	// or whose firings ask for many, keeps that much time for its records.
	// A checkpoint asked for with RequestCheckpoint (a stop's) ignores it.
	// It is measured on Clock, as Interval is (a clock that stands still
	// never ends it).
	MinPause time.Duration
	// Clock is what Interval and the checkpoints' timestamps and
	// durations (CheckpointStats) are measured on; nil: Options.Clock.
	// A run whose processing time stands still (a deterministic replay
	// at a fixed instant) passes a moving clock here to get checkpoints.
	Clock clock.Clock
	// Store receives the checkpoints.
	Store CheckpointStore
	// Restore, when set, is the checkpoint the job starts from; NextID is
	// then its id + 1.
	Restore CheckpointView
	NextID  int64
	// OnComplete, when set, is called after each checkpoint commits.
	OnComplete func(id int64)
	// OnError, when set, is told about a checkpoint that failed; the job
	// goes on and the next one tries again, unless what failed was a
	// sink's pre-commit: a sink error fails the job (see ToSink).
	OnError func(id int64, err error)
}

// CheckpointStore starts checkpoints: the contract is checkpoint.Store's,
// and checkpoint.Open opens the on-disk one.
type CheckpointStore = checkpoint.Store

// PendingCheckpoint collects one checkpoint's parts (checkpoint.Pending).
// WritePart is called concurrently and must not keep data after it
// returns: the buffer is reused for the next checkpoint.
type PendingCheckpoint = checkpoint.Pending

// CheckpointView reads the parts of a restored checkpoint
// (checkpoint.View).
type CheckpointView = checkpoint.View

// Subtask names one parallel instance of a stage, for sinks that keep
// per-subtask state.
type Subtask struct {
	Stage string
	Index int
}

// OnBarrier registers fn to be called, on the subtask's goroutine, when
// checkpoint id's barrier passes a subtask: everything the subtask emitted
// before belongs to the checkpoint, nothing after. Sinks use it to close
// an epoch of output.
func (e *Env) OnBarrier(fn func(s Subtask, id int64)) {
	e.job.OnBarrier(func(stage string, idx int, id int64) { fn(Subtask{stage, idx}, id) })
}

// OnPreCommit registers fn to run when checkpoint id has every subtask's
// parts, just before it commits: a sink makes its output of the epoch
// durable and writes a part saying how far it goes.
func (e *Env) OnPreCommit(fn func(id int64, write func(name string, data []byte) error) error) {
	e.job.PreCommit(fn)
}

// RequestCheckpoint asks for a checkpoint as soon as possible, whatever
// the interval (a graceful stop takes one first). It reports false when
// none can start: the job has no checkpoints, or a subtask already
// finished its input. Safe for concurrent use while the job runs.
func (e *Env) RequestCheckpoint() bool { return e.job.RequestCheckpoint() }

// RequestCheckpointAfter is RequestCheckpoint unless a checkpoint after
// checkpoint id has begun already, which covers what a subtask emitted
// after id's barrier (OnBarrier); -1 asks in any case. A sink that wants
// its output committed soon asks with the last barrier its subtask saw.
func (e *Env) RequestCheckpointAfter(id int64) bool { return e.job.RequestCheckpointAfter(id) }

// RequestLastCheckpoint is RequestCheckpoint for a graceful stop: no
// periodic checkpoint follows the one it asks for, whose id it returns
// (false: none can start).
func (e *Env) RequestLastCheckpoint() (int64, bool) { return e.job.RequestLastCheckpoint() }

// Restored returns the part name written by OnPreCommit in the restored
// checkpoint, if any.
func (e *Env) Restored(name string) ([]byte, bool) {
	r := e.opts.Checkpoint.Restore
	if r == nil {
		return nil, false
	}
	return PreCommitPart(r, name)
}

// PreCommitPart returns the part name that OnPreCommit wrote into the
// checkpoint v shows, if any: what a tool outside the job (a backfill
// reading a live job's newest checkpoint) reads of it.
func PreCommitPart(v CheckpointView, name string) ([]byte, bool) {
	b, ok := v.Parts(runtime.PreCommitStage, name)[0]
	return b, ok
}

func (o CheckpointOptions) runtime() *runtime.CheckpointOptions {
	if o.Interval <= 0 && o.Restore == nil {
		return nil
	}
	return &runtime.CheckpointOptions{Interval: o.Interval, MinPause: o.MinPause, Clock: o.Clock, Store: o.Store, NextID: o.NextID, Restore: o.Restore,
		OnComplete: o.OnComplete, OnError: o.OnError}
}

func (o CheckpointOptions) validate() error {
	if o.Interval < 0 {
		return fmt.Errorf("weir: Options.Checkpoint.Interval = %v; use a positive interval such as 5s, or 0 for none", o.Interval)
	}
	if o.Interval > 0 && o.Store == nil {
		return fmt.Errorf("weir: Options.Checkpoint.Interval is set but Store is nil; give it a store")
	}
	return nil
}
