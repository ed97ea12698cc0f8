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
// attempt builds and runs the job: NewEnv with Options.Checkpoint from
// Resume (so it resumes from the newest checkpoint), its sinks, Execute.
// It returns the number of restarts made and the last attempt's error,
// without the Permanent mark.
func RunRestarting(ctx context.Context, p RestartPolicy, attempt func(ctx context.Context, n int) error) (restarts int, err error) {
	wait := p.Backoff
	for n := 0; ; n++ {
		err = attempt(ctx, n)
		if pe, ok := err.(permanent); ok {
			return n, pe.err
		}
		if err == nil || n >= p.Max || ctx.Err() != nil {
			return n, err
		}
		if p.OnRestart != nil {
			p.OnRestart(n+1, err)
		}
		select {
		case <-ctx.Done():
			return n, err
		case <-time.After(wait):
		}
		wait *= 2
	}
}
