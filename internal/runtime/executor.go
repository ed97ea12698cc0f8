package runtime

import (
	"context"
	"errors"
	"runtime/debug"
	"time"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/etime"
)

// Executor is the deterministic single-goroutine executor. Sources are
// polled in stage order, subtask order; every exchange delivers at once, so
// an element is processed to the end of the graph before the next poll.
type Executor struct {
	job *Job
	cur *Subtask // the subtask being driven, for panic reports
}

// NewExecutor builds j (which must use Options.Deterministic) for
// step-by-step driving, as scenario tests do.
func NewExecutor(j *Job) (*Executor, error) {
	if !j.opts.Deterministic {
		return nil, errors.New("weir: the step executor needs Options.Deterministic")
	}
	if j.ran.Swap(true) {
		return nil, ErrAlreadyRun
	}
	// Stepped jobs have no Run context: theirs ends at Close.
	j.start(context.Background())
	if err := j.build(); err != nil {
		j.closeOpened()
		j.cancel(nil)
		return nil, err
	}
	return &Executor{job: j}, nil
}

// RunUntilQuiet polls the sources until none emits anything or all are
// done. It reports whether every source is done.
func (x *Executor) RunUntilQuiet() (done bool, err error) {
	defer x.guard(&err)
	for {
		x.maybeCheckpoint()
		progress := false
		done = true
		for _, s := range x.job.stages {
			for _, st := range s.subtasks {
				if st.poller == nil || st.finished {
					continue
				}
				x.cur = st
				status, err := st.poller.Poll(x.job.ctx)
				if err != nil {
					return false, err
				}
				// Exchanges deliver each element at once here; what a
				// chained operator holds (a two-phase window's combiner)
				// goes out before another source's poll.
				st.flush()
				// The poll ran the records through the whole graph
				// (exchanges are synchronous): every subtask publishes.
				x.publishAll()
				switch status {
				case Emitted:
					progress = true
					done = false
				case Waiting:
					done = false
				case Done:
					st.endSource()
					progress = true
				}
			}
		}
		if !progress {
			x.publishAll()
			return done, nil
		}
	}
}

// maybeCheckpoint starts a due checkpoint: barriers go into every source
// at once, between two polls, and flow to the end of the graph at once.
func (x *Executor) maybeCheckpoint() {
	if c := x.job.coord.Load(); c != nil && c.due(c.clk.Now()) {
		x.Checkpoint()
	}
}

// Checkpoint starts a checkpoint now, for tests and crash hooks; it
// reports the id, or 0 when none may start.
func (x *Executor) Checkpoint() int64 {
	c := x.job.coord.Load()
	if c == nil {
		return 0
	}
	id := c.trigger(c.clk.Now())
	if id == 0 {
		return 0
	}
	for _, s := range x.job.stages {
		for _, st := range s.subtasks {
			if st.poller != nil && !st.finished {
				x.cur = st
				st.injectBarrier(id)
			}
		}
	}
	return id
}

func (x *Executor) publishAll() {
	for _, s := range x.job.stages {
		for _, st := range s.subtasks {
			st.publish()
		}
	}
}

// AdvanceProcessingTime tells every subtask that has not finished,
// upstream first, that processing time is now. As in the parallel
// executor, a subtask whose input has ended sees no more processing time.
// A panic in user code comes back as a *PanicError.
func (x *Executor) AdvanceProcessingTime(now etime.Time) (err error) {
	defer x.guard(&err)
	for _, s := range x.job.stages {
		for _, st := range s.subtasks {
			if !st.finished {
				x.cur = st
				st.advanceProcessingTime(now)
			}
		}
	}
	x.cur = nil
	x.publishAll()
	return nil
}

// guard turns a panic into a *PanicError naming the subtask being driven.
func (x *Executor) guard(err *error) {
	if r := recover(); r != nil {
		pe := &PanicError{Stage: "deterministic", Value: r, Stack: debug.Stack()}
		if x.cur != nil {
			pe.Stage, pe.Subtask = x.cur.stage.Name, x.cur.Index
		}
		*err = pe
	}
}

// Close ends the job's context and releases sources and operators.
func (x *Executor) Close() error {
	x.job.cancel(nil)
	return x.job.closeAll()
}

func (x *Executor) runToEnd(ctx context.Context) error {
	for {
		if ctx.Err() != nil { // cancelled, or failed (Fail: the cause)
			return errors.Join(context.Cause(ctx), x.Close())
		}
		done, err := x.RunUntilQuiet()
		if err == nil {
			err = x.job.failure()
		}
		if err != nil {
			if ctx.Err() != nil {
				// A read cut short by the cancellation: the run was
				// cancelled (or failed: Fail), the reader did not fail.
				err = context.Cause(ctx)
			}
			return errors.Join(err, x.Close())
		}
		if done {
			return x.Close()
		}
		if err := x.AdvanceProcessingTime(clock.Millis(x.job.opts.Clock)); err != nil {
			return errors.Join(err, x.Close())
		}
		// Some source is waiting for input: do not spin.
		select {
		case <-ctx.Done():
		case <-time.After(time.Millisecond):
		}
	}
}
