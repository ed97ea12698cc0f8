package weir

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/epochs"
	"github.com/weirstream/weir/internal/runtime"
)

// Guarantee is what a sink's output promises across a crash and restore.
type Guarantee uint8

const (
	// ExactlyOnce (the default): after any crash and restore the sink
	// holds exactly the output of a run that never crashed. With
	// checkpoints it needs a connector.Transactional or
	// connector.Idempotent sink.
	ExactlyOnce Guarantee = iota
	// AtLeastOnce accepts any sink: a restore writes again what the sink
	// received after the checkpoint it restores from.
	AtLeastOnce
)

// DefaultSinkBatch is the most items ToSink hands a sink in one Write;
// DefaultSinkBuffered the most it holds for checkpoints not yet complete.
const (
	DefaultSinkBatch    = 512
	DefaultSinkBuffered = 100_000
)

// SinkOptions configures ToSink. The zero value is usable.
type SinkOptions struct {
	// Name identifies the sink in checkpoints (its part is
	// "sink/<Name>") and in errors: keep it when a job changes so that a
	// restore finds the sink's state. Default "sink", made unique in the
	// Env ("sink-1", ...).
	Name string
	// Guarantee; default ExactlyOnce.
	Guarantee Guarantee
	// BatchSize is the most items per Write; default DefaultSinkBatch.
	BatchSize int
	// MaxBuffered bounds the items held for checkpoints not yet complete:
	// at half of it a checkpoint is requested, and while a pre-commit is
	// writing, subtasks that would go past it wait (backpressure).
	// Default DefaultSinkBuffered. It bounds nothing while no checkpoint
	// can start (the store fails, or a source has finished its input:
	// what follows is written at the end): exactly once cannot write
	// output that no checkpoint covers.
	MaxBuffered int64
}

// ToSink writes s to sink, exactly once across crashes when the job takes
// checkpoints (Options.Checkpoint):
//
//   - each subtask's output is buffered per checkpoint epoch (what it
//     emitted between two barriers);
//   - when checkpoint n has every part, its epochs are written to the sink
//     in batches, then PreCommit(n) (a connector.Transactional sink),
//     whose state goes into checkpoint n, or Flush (an idempotent one);
//   - once checkpoint n is durable, Commit(n);
//   - a job restored from checkpoint n first calls Recover(n, state), so
//     the sink holds exactly the output checkpoint n covers, and the replay
//     writes the rest again.
//
// At the end of the input, what no checkpoint covered is written and
// committed as epoch 0 (no checkpoint records it); a failed or cancelled
// run Aborts instead.
// Without checkpoints each subtask writes its output in batches as it
// comes and flushes at each watermark and at the end. So does, with
// checkpoints, a sink without transactions given Guarantee AtLeastOnce
// (Flink's at-least-once delivery): each checkpoint's pre-commit flushes
// what its barrier closed, so a restore writes again only what came
// after, and output does not wait for a checkpoint.
//
// The sink's calls are serialized (one at a time). An error from any of
// them fails the job with it as the cause; Execute returns it. The
// returned SinkInfo observes the sink while the job runs. A refused
// option (two sinks of one name, a sink without the abilities exactly
// once needs) makes Execute return why, and close the sink.
//
// Name the sinks whose state must survive a change of the job
// (SinkOptions.Name): unnamed ones are "sink", "sink-1", ... in the order
// ToSink is called.
func ToSink[T any](s Stream[T], sink connector.Sink[T], o SinkOptions) *SinkInfo {
	env := s.n.env
	// refuse makes Execute return err, and close the sink.
	refuse := func(err error) *SinkInfo {
		env.fail(err)
		env.ends = append(env.ends, func(context.Context, error) error { return sink.Close() })
		return &SinkInfo{Name: o.Name}
	}
	if env.sinkNames == nil {
		env.sinkNames = map[string]bool{}
	}
	if o.Name == "" {
		o.Name = "sink"
		for i := 1; env.sinkNames[o.Name]; i++ {
			o.Name = "sink-" + strconv.Itoa(i)
		}
	} else if env.sinkNames[o.Name] {
		return refuse(fmt.Errorf("weir: ToSink: two sinks are named %q; give each its own SinkOptions.Name (a restore finds a sink's state by its name)", o.Name))
	}
	env.sinkNames[o.Name] = true
	if o.BatchSize < 0 || o.MaxBuffered < 0 {
		return refuse(fmt.Errorf("weir: ToSink %q: SinkOptions.BatchSize is %d and MaxBuffered %d; use positive numbers, or 0 for the defaults (%d, %d)", o.Name, o.BatchSize, o.MaxBuffered, DefaultSinkBatch, DefaultSinkBuffered))
	}
	if o.BatchSize == 0 {
		o.BatchSize = DefaultSinkBatch
	}
	if o.MaxBuffered == 0 {
		o.MaxBuffered = DefaultSinkBuffered
	}
	op := &sinkOp[T]{env: env, o: o, sink: sink}
	op.txn, _ = sink.(connector.Transactional)
	_, idem := sink.(connector.Idempotent)
	ck := env.opts.Checkpoint
	checkpoints := ck.Interval > 0 || ck.Restore != nil
	if checkpoints && o.Guarantee == ExactlyOnce && op.txn == nil && !idem {
		return refuse(fmt.Errorf("weir: ToSink %q: a %T is neither connector.Transactional nor connector.Idempotent, so a restore would write some of its output twice; use a sink with one of those abilities, or set SinkOptions.Guarantee to AtLeastOnce", o.Name, sink))
	}
	// With checkpoints, a Transactional sink or exactly once holds each
	// epoch until its checkpoint; at least once to a sink without
	// transactions writes as it comes, as without checkpoints, and each
	// checkpoint flushes what its barrier closed.
	eager := checkpoints && o.Guarantee == AtLeastOnce && op.txn == nil
	collectors := map[epochs.Subtask]*sinkCollector[T]{}
	switch {
	case eager:
		env.OnBarrier(func(s Subtask, _ int64) {
			if c := collectors[epochs.Subtask(s)]; c != nil {
				c.write(false) // on s's goroutine, which owns c
			}
		})
		env.OnPreCommit(op.flushAtCheckpoint)
	case checkpoints:
		op.buf = epochs.New[T](env.opts.Deterministic)
		op.buf.SetLimit(o.MaxBuffered, func() { env.RequestCheckpoint() })
		env.OnBarrier(func(s Subtask, id int64) { op.buf.Barrier(epochs.Subtask(s), id) })
		env.OnPreCommit(op.preCommit)
		env.onComplete = append(env.onComplete, op.commit)
	}
	env.starts = append(env.starts, op.start)
	env.ends = append(env.ends, op.end)
	// A deterministic run has every subtask on one goroutine: they share
	// one batch, so the sink gets the items in processing order.
	var shared *sinkCollector[T]
	s.consume(func(st *runtime.Subtask) runtime.Collector[T] {
		sub := epochs.Subtask{Stage: st.StageName(), Index: st.Index}
		if op.buf != nil {
			return runtime.Func[T]{OnRecord: func(_ etime.Time, v T) { op.buf.Add(sub, v) }}
		}
		c := shared
		if c == nil {
			c = &sinkCollector[T]{op: op, batch: make([]T, 0, o.BatchSize)}
		}
		if env.opts.Deterministic {
			shared = c
		}
		collectors[sub] = c // written while the job is built, read after
		return c
	})
	info := &SinkInfo{Name: o.Name}
	if op.buf != nil {
		info.held = op.buf.Held
	}
	return info
}

// SinkInfo observes a sink that ToSink attached; its methods are safe to
// call while the job runs.
type SinkInfo struct {
	// Name is the sink's name in the Env (SinkOptions.Name, made unique).
	Name string
	held func() (n, peak int64)
}

// Buffered returns how many items are held for checkpoints not yet
// complete, now and at the most (0 without checkpoints).
func (i *SinkInfo) Buffered() (now, peak int64) {
	if i == nil || i.held == nil {
		return 0, 0
	}
	return i.held()
}

// sinkOp is one ToSink: its options, the sink and the epochs buffered for
// it.
type sinkOp[T any] struct {
	env  *Env
	o    SinkOptions
	sink connector.Sink[T]
	txn  connector.Transactional // nil: the sink has no transactions
	buf  *epochs.Buffer[T]       // nil without checkpoints

	// mu is the sink's turn: every call into the sink holds it.
	mu sync.Mutex
	// failed: a call returned an error (the job is failing); no more
	// calls but Abort and Close.
	failed bool
	// dirty: written since the last Flush (without checkpoints).
	dirty bool
}

// sinkPart is what a Transactional sink's PreCommit returned, as stored
// in the checkpoint.
type sinkPart struct {
	Epoch int64  `json:"epoch"`
	State []byte `json:"state"`
}

func (op *sinkOp[T]) partName() string { return SinkPartName(op.o.Name) }

// ctx is the context of the sink's calls while the job runs: the job's,
// so that a failure elsewhere in the job ends a call that waits.
func (op *sinkOp[T]) ctx() context.Context {
	if c := op.env.job.Context(); c != nil {
		return c
	}
	return op.env.runCtx
}

// check fails the job with err (the sink's mu held).
func (op *sinkOp[T]) check(call string, err error) error {
	if err == nil {
		return nil
	}
	op.failed = true
	err = fmt.Errorf("weir: sink %q: %s: %w", op.o.Name, call, err)
	op.env.job.Fail(err)
	return err
}

// start runs before the job: a restored job's Transactional sink recovers
// to the restored checkpoint.
func (op *sinkOp[T]) start(ctx context.Context) error {
	r := op.env.opts.Checkpoint.Restore
	if op.txn == nil || r == nil {
		return nil
	}
	var epoch int64
	var state []byte
	if b, ok := PreCommitPart(r, op.partName()); ok {
		var err error
		if epoch, state, err = SinkPreCommit(b); err != nil {
			return fmt.Errorf("weir: sink %q: checkpoint part %s: %w", op.o.Name, op.partName(), err)
		}
	}
	op.mu.Lock()
	defer op.mu.Unlock()
	return op.check("recover", op.txn.Recover(ctx, epoch, state))
}

// writeAll hands items to the sink in batches of at most BatchSize (mu
// held).
func (op *sinkOp[T]) writeAll(ctx context.Context, items []T) error {
	for len(items) > 0 && !op.failed {
		n := min(len(items), op.o.BatchSize)
		// The batch's capacity ends at its length: a sink that appends to
		// it cannot overwrite the items that follow.
		if err := op.check("write", op.sink.Write(ctx, items[:n:n])); err != nil {
			return err
		}
		items = items[n:]
	}
	return nil
}

// preCommit writes the epochs checkpoint id covers, flushes and
// pre-commits them; on the coordinator's goroutine.
func (op *sinkOp[T]) preCommit(id int64, write func(name string, data []byte) error) error {
	ctx := op.ctx()
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.failed {
		return fmt.Errorf("weir: sink %q failed", op.o.Name)
	}
	op.buf.BeginCommit()
	defer op.buf.EndCommit()
	var err error
	op.buf.TakeBatches(id, func(c []T) {
		if err == nil {
			err = op.writeAll(ctx, c)
		}
	})
	if err != nil {
		return err
	}
	if op.txn == nil {
		return op.check("flush", op.sink.Flush(ctx))
	}
	// PreCommit makes the epoch durable itself: no Flush first.
	state, err := op.txn.PreCommit(ctx, id)
	if err := op.check("pre-commit", err); err != nil {
		return err
	}
	b, err := json.Marshal(sinkPart{Epoch: id, State: state})
	if err != nil {
		return err
	}
	return write(op.partName(), b)
}

// flushAtCheckpoint flushes, at checkpoint id's pre-commit, what the
// subtasks wrote before its barrier (an at-least-once sink written as its
// output comes).
func (op *sinkOp[T]) flushAtCheckpoint(int64, func(string, []byte) error) error {
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.failed {
		return fmt.Errorf("weir: sink %q failed", op.o.Name)
	}
	op.dirty = false
	return op.check("flush", op.sink.Flush(op.ctx()))
}

// commit commits checkpoint id's epochs once it is durable.
func (op *sinkOp[T]) commit(id int64) {
	if op.txn == nil {
		return
	}
	op.mu.Lock()
	defer op.mu.Unlock()
	if !op.failed {
		_ = op.check("commit", op.txn.Commit(op.ctx(), id))
	}
}

// end runs after the job: what no checkpoint covered is written and
// committed as one more epoch (epoch 0: no checkpoint records it), unless
// the run failed (runErr), which aborts; then Close.
func (op *sinkOp[T]) end(ctx context.Context, runErr error) error {
	op.mu.Lock()
	defer op.mu.Unlock()
	var err error
	if runErr == nil && !op.failed {
		if op.buf != nil {
			op.buf.RestBatches(func(c []T) {
				if err == nil {
					err = op.writeAll(ctx, c)
				}
			})
		}
		if err == nil {
			err = op.flush(ctx)
		}
	}
	if (runErr != nil || err != nil || op.failed) && op.txn != nil {
		err = errors.Join(err, op.txn.Abort(context.WithoutCancel(ctx)))
	}
	if e := op.sink.Close(); e != nil {
		err = errors.Join(err, fmt.Errorf("weir: sink %q: close: %w", op.o.Name, e))
	}
	return err
}

// sinkCollector is a subtask's side of a sink without checkpoints: it
// batches the subtask's output and writes it when the batch is full and
// at each watermark, status change and the end.
type sinkCollector[T any] struct {
	op    *sinkOp[T]
	batch []T
}

func (c *sinkCollector[T]) Collect(_ etime.Time, v T) {
	c.batch = append(c.batch, v)
	if len(c.batch) == cap(c.batch) {
		c.write(false)
	}
}

func (c *sinkCollector[T]) Watermark(etime.Time) { c.write(true) }
func (c *sinkCollector[T]) Status(bool)          { c.write(true) }
func (c *sinkCollector[T]) Finish()              { c.write(true) }

// write hands the batch to the sink and, with flush, flushes what was
// written since the last flush.
func (c *sinkCollector[T]) write(flush bool) {
	op := c.op
	if len(c.batch) == 0 && !flush {
		return
	}
	op.mu.Lock()
	defer op.mu.Unlock()
	ctx := op.ctx()
	if len(c.batch) > 0 && !op.failed {
		if op.writeAll(ctx, c.batch) == nil {
			op.dirty = true
		}
	}
	clear(c.batch)
	c.batch = c.batch[:0]
	if flush && op.dirty && !op.failed {
		op.dirty = false
		_ = op.flush(ctx)
	}
}

// flush makes what was written durable and visible: Flush, or for a
// Transactional sink PreCommit and Commit of epoch 0 (no checkpoint
// records it: the end of the input, or a job without checkpoints). op.mu
// is held.
func (op *sinkOp[T]) flush(ctx context.Context) error {
	if op.txn == nil {
		return op.check("flush", op.sink.Flush(ctx))
	}
	if _, err := op.txn.PreCommit(ctx, 0); err != nil {
		return op.check("pre-commit", err)
	}
	return op.check("commit", op.txn.Commit(ctx, 0))
}
