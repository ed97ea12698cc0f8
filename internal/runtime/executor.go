package runtime

import (
	"context"
	"errors"

	"github.com/weirstream/weir/etime"
)

// Executor is the deterministic single-goroutine executor. Sources are
// polled in stage order, subtask order; every exchange delivers at once, so
// an element is processed to the end of the graph before the next poll.
type Executor struct {
	job     *Job
	started bool
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
	if err := j.build(); err != nil {
		return nil, err
	}
	return &Executor{job: j, started: true}, nil
}

// RunUntilQuiet polls the sources until none emits anything or all are
// done. It reports whether every source is done.
func (x *Executor) RunUntilQuiet() (done bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Stage: "deterministic", Value: r}
		}
	}()
	for {
		progress := false
		done = true
		for _, s := range x.job.stages {
			for _, st := range s.subtasks {
				if st.poller == nil || st.finished {
					continue
				}
				status, err := st.poller.Poll()
				if err != nil {
					return false, err
				}
				st.publish()
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

func (x *Executor) publishAll() {
	for _, s := range x.job.stages {
		for _, st := range s.subtasks {
			st.publish()
		}
	}
}

// AdvanceProcessingTime tells every subtask, upstream first, that
// processing time is now.
func (x *Executor) AdvanceProcessingTime(now etime.Time) {
	for _, s := range x.job.stages {
		for _, st := range s.subtasks {
			st.advanceProcessingTime(now)
		}
	}
	x.publishAll()
}

// Close releases sources and operators.
func (x *Executor) Close() error { return x.job.closeAll() }

func (x *Executor) runToEnd(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return errors.Join(err, x.Close())
		}
		done, err := x.RunUntilQuiet()
		if err != nil {
			return errors.Join(err, x.Close())
		}
		if done {
			return x.Close()
		}
		x.AdvanceProcessingTime(etime.FromTime(x.job.opts.Clock.Now()))
	}
}
