package job

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/spec"
)

// checkpoints is a job's checkpoint store and, when the run resumes, the
// checkpoint it resumes from.
type checkpoints struct {
	store *checkpoint.Dir
	// task is the store of a group member's task (RunOptions.Task),
	// instead of store.
	task     checkpoint.Store
	dir      string
	last     atomic.Int64 // the newest checkpoint this run completed
	interval time.Duration
	minPause time.Duration // checkpoint.min_pause
	meta     []byte
	restored *checkpoint.Checkpoint
	// added are the sinks the restored checkpoint's job did not have (by
	// name: late, results[1]): they start as at a fresh start.
	added []string
	view  checkpoint.View
	// nextID is the first id of this run: above every checkpoint in the
	// directory, also those newer than the restored one whose output a
	// transactional sink never committed.
	nextID int64
}

// openCheckpoints opens the checkpoint directory of the run, if it has one,
// and finds the newest complete checkpoint unless the run is fresh. A
// checkpoint written by a spec that differs in a field its state or
// positions depend on, or that wrote a sink this spec removes, is refused,
// naming the fields (resumeAcross); one whose spec differs in other fields
// is resumed, and the info line names them. A checkpoint of a newer meta
// format is refused.
func openCheckpoints(p *spec.Plan, path *spec.Path, o RunOptions) (*checkpoints, error) {
	if t := o.Task; t != nil {
		return taskCheckpoints(p, t)
	}
	interval, retain := 5*time.Second, 0
	if c := p.Checkpoint; c != nil {
		if c.Retain != nil {
			retain = *c.Retain
		}
		if c.Interval != nil {
			interval = etime.Duration(*c.Interval).Std()
		}
	}
	if o.CheckpointInterval > 0 {
		interval = o.CheckpointInterval
	}
	dir := checkpointDir(p, o)
	if dir == "" {
		return nil, nil
	}
	meta := fingerprint(p)
	store, err := checkpoint.Open(dir, checkpoint.Options{Retain: retain, Meta: meta, Crash: o.Crash, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	c := &checkpoints{store: store, dir: dir, interval: interval, meta: meta}
	if k := p.Checkpoint; k != nil && k.MinPause != nil {
		c.minPause = etime.Duration(*k.MinPause).Std()
	}
	marker := filepath.Join(dir, finishedMarker)
	_, statErr := os.Stat(marker)
	finished := statErr == nil
	if o.Fresh || finished {
		if finished && !o.Fresh && o.Info != nil {
			o.Info(fmt.Sprintf("the run that wrote %s finished; starting over", dir))
		}
		if err := store.RemoveAll(); err != nil {
			store.Close()
			return nil, err
		}
		if err := os.Remove(marker); err != nil && !os.IsNotExist(err) {
			store.Close()
			return nil, err
		}
		return c, nil
	}
	// A results sink that commits a checkpoint's output after the
	// checkpoint and cannot finish that commit after a crash (a Kafka
	// transaction): only a checkpoint whose commit took effect counts.
	limit, err := committedLimit(p, path, store)
	if err != nil {
		store.Close()
		return nil, err
	}
	cp, skipped, err := store.Resumable(limit)
	if err != nil {
		store.Close()
		return nil, err
	}
	if cp == nil && len(skipped) > 0 {
		store.Close()
		return nil, &DamagedError{Dir: dir, Skipped: skipped}
	}
	ok := cp != nil
	ids, err := store.List()
	if err != nil {
		store.Close()
		return nil, err
	}
	for _, id := range ids {
		c.nextID = max(c.nextID, id+1)
	}
	if !ok && limit >= 0 && len(ids) > 0 {
		// The sink committed output up to checkpoint limit, but that
		// checkpoint is gone: starting over would repeat the output,
		// resuming later would lose some.
		store.Close()
		return nil, fmt.Errorf("%s holds checkpoints %v but none at or below %d, the newest whose Kafka transaction committed: retention removed it or its marker left the topic; start over with --fresh (the results topic then receives everything again) and raise checkpoint.retain", dir, ids, limit)
	}
	if !ok {
		return c, nil
	}
	across, added, err := resumeAcross(p, cp.Meta)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("checkpoint %d in %s: %w", cp.ID, dir, err)
	}
	c.restored, c.added = cp, added
	if c.view, err = store.View(cp); err != nil {
		store.Close()
		return nil, err
	}
	if o.Info != nil {
		if len(across) > 0 {
			o.Info(fmt.Sprintf("resuming from checkpoint %d in %s across %s (--fresh starts over)", cp.ID, dir, phrase(across)))
		} else {
			o.Info(fmt.Sprintf("resuming from checkpoint %d in %s (--fresh starts over)", cp.ID, dir))
		}
	}
	return c, nil
}

// committedLimit is the newest checkpoint the run may restore as its
// results sinks committed it (connector.SinkKind.Committed): the lowest
// epoch they report; -1 when one has committed none, unless the newest
// checkpoint in store was written by a job without that sink (a sink
// added on resume has committed nothing yet, which does not make the
// checkpoint unusable); MaxInt64 without such sinks.
func committedLimit(p *spec.Plan, path *spec.Path, store *checkpoint.Dir) (int64, error) {
	limit := int64(math.MaxInt64)
	for _, op := range path.Results() {
		kind, ok := p.Kinds().Lookup(op.Config.Type)
		if !ok || kind.Sink == nil || kind.Sink.Committed == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		id, ok, err := kind.Sink.Committed(ctx, spec.SinkSettings(op.Config), p.Name)
		cancel()
		switch {
		case err != nil:
			return 0, fmt.Errorf("%s: %w", op.Path, err)
		case ok:
			limit = min(limit, id)
		case !addedSink(p, store, op.Name):
			limit = -1
		}
	}
	return limit, nil
}

// addedSink reports whether the newest checkpoint in store was written
// by a job without p's sink name.
func addedSink(p *spec.Plan, store *checkpoint.Dir, name string) bool {
	cp, _, err := store.Resumable(math.MaxInt64)
	if err != nil || cp == nil {
		return false
	}
	_, added, err := resumeAcross(p, cp.Meta)
	return err == nil && slices.Contains(added, name)
}

// ErrNoValidCheckpoint is matched (errors.Is) by the error of a run
// refused because every checkpoint in its directory fails verification;
// the error is a *DamagedError.
var ErrNoValidCheckpoint = errors.New("job: no checkpoint verifies")

// DamagedError is a checkpoint directory none of whose checkpoints
// verifies. The run is refused rather than started over: the outputs
// hold what those checkpoints covered (a ledger, a table or a topic keeps
// even what none covered), so only the user can say to start over.
type DamagedError struct {
	Dir     string
	Skipped []checkpoint.Skipped // newest first
}

func (e *DamagedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "no checkpoint in %s verifies, so the run cannot resume from one:", e.Dir)
	for _, s := range e.Skipped {
		fmt.Fprintf(&b, "\n  checkpoint %d: %s", s.ID, s.Reason)
	}
	b.WriteString("\nweir does not start over on its own, since the outputs hold what those checkpoints covered: start over with --fresh (the outputs start over too), or put back the checkpoint files")
	return b.String()
}

// Is makes errors.Is(err, ErrNoValidCheckpoint) match.
func (e *DamagedError) Is(target error) bool { return target == ErrNoValidCheckpoint }

// checkpointDir is the run's checkpoint directory ("" without
// checkpoints): RunOptions.CheckpointDir, else the spec's checkpoint.dir.
func checkpointDir(p *spec.Plan, o RunOptions) string {
	if o.CheckpointDir != "" {
		return o.CheckpointDir
	}
	if c := p.Checkpoint; c != nil {
		return o.Path(c.Dir)
	}
	return ""
}

func (c *checkpoints) options(fail func(error), committed func(id int64) error) weir.CheckpointOptions {
	var store weir.CheckpointStore = c.store
	if c.task != nil {
		store = c.task
	}
	o := weir.CheckpointOptions{Interval: c.interval, MinPause: c.minPause, Store: store,
		OnError: func(id int64, err error) { fail(fmt.Errorf("checkpoint %d failed: %w", id, err)) },
		OnComplete: func(id int64) {
			if err := committed(id); err != nil {
				fail(fmt.Errorf("checkpoint %d: %w", id, err))
				return
			}
			c.last.Store(id)
		}}
	if c.restored != nil {
		o.Restore = c.view
		o.NextID = max(c.restored.ID+1, c.nextID)
	}
	return o
}

// finishedMarker, in a checkpoint directory, says the run that wrote it
// read all its input: the next run starts over instead of resuming.
const finishedMarker = "FINISHED"

// finished marks the run complete.
func (c *checkpoints) finished() error {
	if c == nil || c.store == nil {
		return nil
	}
	return os.WriteFile(filepath.Join(c.dir, finishedMarker), []byte("the run finished; the next run starts over\n"), 0o644)
}

func (c *checkpoints) close() error {
	if c == nil || c.store == nil {
		return nil
	}
	return c.store.Close()
}

// fingerprint is the meta of p's checkpoints (encodeMeta, format
// metaFormat): what their state and positions depend on, by field, and
// what else the spec set, by digest, so that a restore under a changed
// spec refuses the changes the state depends on and names the others.
func fingerprint(p *spec.Plan) []byte { return encodeMeta(p) }

// TaskCheckpoints are the checkpoints of a job run as one task of a group
// member (RunOptions.Task). The member asks for each checkpoint
// (weir.Env.RequestCheckpoint) when it commits its transaction; Interval
// only bounds how long the task may go without one.
type TaskCheckpoints struct {
	// Store receives the task's checkpoints: its Pending.Commit returns
	// once the member's transaction holding the checkpoint committed.
	Store checkpoint.Store
	// Restore is the checkpoint the task resumes from (nil: it starts
	// fresh); RestoreID its id, Meta the fingerprint it was written with.
	Restore   checkpoint.View
	RestoreID int64
	Meta      []byte
	// Interval is the longest time between two checkpoints the task
	// takes on its own (default 1h: the member asks for them).
	Interval time.Duration
	// Run is the group's run id, which a fresh task's outputs carry (0:
	// the task's start, as a run's).
	Run int64
	// Archive, when the plan keeps an archive, receives the task's
	// archived revisions (each window's newest since the last
	// checkpoint, in window end, start and key order) at each
	// checkpoint, before its Commit, and at the end of a run that ended
	// well, in place of the archive directory: a group keeps its archive
	// in a Kafka topic, written in the member's transaction. Calls come
	// one at a time (the job's output's); value is the callee's to keep.
	Archive func(key string, start, end etime.Time, run, pane int64, value []byte)
}

// Fingerprint is what a checkpoint of p records of its spec (the meta a
// restore compares with TaskCheckpoints.Meta).
func Fingerprint(p *spec.Plan) []byte { return fingerprint(p) }

// taskCheckpoints are the checkpoints of a group member's task.
func taskCheckpoints(p *spec.Plan, t *TaskCheckpoints) (*checkpoints, error) {
	if t.Store == nil {
		return nil, errors.New("job: RunOptions.Task.Store is nil")
	}
	interval := t.Interval
	if interval <= 0 {
		interval = time.Hour
	}
	c := &checkpoints{task: t.Store, interval: interval, meta: fingerprint(p)}
	if t.Restore == nil {
		return c, nil
	}
	if _, _, err := resumeAcross(p, t.Meta); err != nil {
		return nil, fmt.Errorf("the task's checkpoint %d: %w", t.RestoreID, err)
	}
	c.restored = &checkpoint.Checkpoint{ID: t.RestoreID, Meta: t.Meta}
	c.view = t.Restore
	c.nextID = t.RestoreID + 1
	return c, nil
}
