package weir

import (
	"context"
	"time"
)

// RestartPolicy says how a job recovers from a failure inside one process
// (Flink's exponential-delay restart strategy): it is restarted up to Max
// times, after Backoff, then twice as long each time. A job restarts from
// its newest checkpoint (build each attempt's Options.Checkpoint with
// Resume); one without checkpoints would start over and repeat its output.
type RestartPolicy struct {
	Max     int
	Backoff time.Duration
	// OnRestart, when set, is told about each restart (n from 1) and the
	// failure that caused it.
	OnRestart func(n int, cause error)
	// OnReopen, when set, is told about each reopen (Reopen) and why.
	OnReopen func(cause error)
}

// reopen marks an attempt's end that is no failure (Reopen).
type reopen struct{ err error }

func (r reopen) Error() string { return r.err.Error() }
func (r reopen) Unwrap() error { return r.err }

// Reopen marks err, returned by an attempt of RunRestarting, as an end
// that is no failure but asks for the job to be opened again from its
// newest checkpoint (its input gained partitions that only a restore
// reads): RunRestarting starts the next attempt at once, without a
// backoff and without counting it against Max.
func Reopen(err error) error {
	if err == nil {
		return nil
	}
	return reopen{err}
}

// permanent marks an error that a restart would meet again.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent marks err, returned by an attempt of RunRestarting, as one a
// restart would meet again: RunRestarting returns it at once, unmarked.
// RunRestarting cannot tell those apart by itself: mark the errors of a
// build (a bad option, a missing input file, a checkpoint of another job)
// and the ones that say the input is not the one a checkpoint read
// (errors.Is(err, fileio.ErrInputChanged), kafkaio.ErrTopicChanged).
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

// RunRestarting calls attempt (n counts from 0) until it returns nil, an
// error marked Permanent, or an error after p.Max restarts, or until ctx
// is done; between attempts it waits p.Backoff, doubling each time. An
// error marked Reopen starts the next attempt at once, and does not count
// against p.Max. An
// attempt builds and runs the job: NewEnv with Options.Checkpoint from
// Resume (so it resumes from the newest checkpoint), its sinks, Execute.
// It returns the number of restarts made (reopens left out) and the last
// attempt's error, without the Permanent or Reopen mark.
func RunRestarting(ctx context.Context, p RestartPolicy, attempt func(ctx context.Context, n int) error) (restarts int, err error) {
	wait := p.Backoff
	failures := 0 // restarts made after a failure
	for n := 0; ; n++ {
		err = attempt(ctx, n)
		if pe, ok := err.(permanent); ok {
			return failures, pe.err
		}
		if r, ok := err.(reopen); ok {
			if ctx.Err() != nil {
				return failures, r.err
			}
			if p.OnReopen != nil {
				p.OnReopen(r.err)
			}
			continue
		}
		if err == nil || failures >= p.Max || ctx.Err() != nil {
			return failures, err
		}
		if p.OnRestart != nil {
			p.OnRestart(failures+1, err)
		}
		select {
		case <-ctx.Done():
			return failures, err
		case <-time.After(wait):
		}
		failures++
		wait *= 2
	}
}
