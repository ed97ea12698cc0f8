package monitor

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// A process that does not run (stopped by SIGSTOP or a debugger, its
// machine or VM paused, starved of CPU) finds, when it runs again, every
// call it had in progress as old as the pause: a sink call, a checkpoint,
// a group member's last commit. Judged by age alone, the pause would be
// blamed on the sink's server or on Kafka. The pause watch notes when the
// process did not run, so that those judgements leave that time out
// (PausedBetween).

// pauseTick is how often the watch looks at the clock; a gap between two
// looks longer than pauseTick+pauseMin is a pause of the gap minus
// pauseTick.
const (
	pauseTick = 100 * time.Millisecond
	pauseMin  = time.Second
)

// Pause is a time the process did not run: from At for D.
type Pause struct {
	At time.Time
	D  time.Duration
}

// pauses is the process's pause watch: one goroutine, started by the
// first WatchPauses and stopped by the last release (its owners are the
// holders); mu guards the rest.
var pauses struct {
	mu   sync.Mutex
	refs int
	stop chan struct{}
	done chan struct{}
	last time.Time // the watch's last look (zero: not watching)
	list []Pause   // the newest pauses, oldest first (at most maxPauses)
}

const maxPauses = 64

// WatchPauses makes sure the process's pause watch runs until release is
// called (each call must be released once). A job's runner holds it while
// the job runs.
func WatchPauses() (release func()) {
	pauses.mu.Lock()
	defer pauses.mu.Unlock()
	if pauses.refs++; pauses.refs == 1 {
		stop, done := make(chan struct{}), make(chan struct{})
		pauses.stop, pauses.done, pauses.last = stop, done, time.Now()
		go watchPauses(stop, done)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pauses.mu.Lock()
			pauses.refs--
			var stop, done chan struct{}
			if pauses.refs == 0 {
				stop, done = pauses.stop, pauses.done
				pauses.last, pauses.list = time.Time{}, nil
			}
			pauses.mu.Unlock()
			if stop != nil {
				close(stop)
				<-done
			}
		})
	}
}

func watchPauses(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(pauseTick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			observePause(time.Now())
		}
	}
}

// observePause notes a look at the clock at now: a pause when the last
// look is too long ago.
func observePause(now time.Time) {
	pauses.mu.Lock()
	defer pauses.mu.Unlock()
	if pauses.last.IsZero() {
		return
	}
	if gap := now.Sub(pauses.last); gap > pauseTick+pauseMin {
		pauses.list = append(pauses.list, Pause{At: pauses.last, D: gap - pauseTick})
		if len(pauses.list) > maxPauses {
			pauses.list = pauses.list[len(pauses.list)-maxPauses:]
		}
	}
	pauses.last = now
}

// PausedBetween is how long the process did not run between from and
// to, as far as the pause watch saw (0 while none runs): the pauses noted,
// and one under way that the watch has not noted yet (a caller that runs
// first after the process runs again).
func PausedBetween(from, to time.Time) time.Duration {
	pauses.mu.Lock()
	defer pauses.mu.Unlock()
	var d time.Duration
	overlap := func(at, end time.Time) {
		if at.Before(from) {
			at = from
		}
		if end.After(to) {
			end = to
		}
		if end.After(at) {
			d += end.Sub(at)
		}
	}
	for _, p := range pauses.list {
		overlap(p.At, p.At.Add(p.D))
	}
	if !pauses.last.IsZero() {
		if gap := time.Since(pauses.last); gap > pauseTick+pauseMin {
			overlap(pauses.last, pauses.last.Add(gap-pauseTick))
		}
	}
	return d
}

// PausesAfter returns the pauses noted that began after t (a caller
// that tells of each once keeps the last one's At).
func PausesAfter(t time.Time) []Pause {
	pauses.mu.Lock()
	defer pauses.mu.Unlock()
	i := len(pauses.list)
	for i > 0 && pauses.list[i-1].At.After(t) {
		i--
	}
	return slices.Clone(pauses.list[i:])
}

// TellPauses tells each pause of the process that began after told and
// lasted at least max(after, 5s) (shorter ones are common on a loaded
// machine, and change no judgement), and returns when the last pause
// noted began: the caller's next told.
func TellPauses(told time.Time, after time.Duration, tell func(string)) time.Time {
	for _, p := range PausesAfter(told) {
		if p.D >= max(after, 5*time.Second) {
			tell(p.Tell())
		}
		told = p.At
	}
	return told
}

// Tell says what a pause was, for a log or stderr.
func (p Pause) Tell() string {
	return fmt.Sprintf("this process did not run for %v (from %s): stopped (SIGSTOP, a debugger), its machine paused, or starved of CPU or memory; what was in progress meanwhile is judged without that time",
		p.D.Round(time.Second), p.At.UTC().Format(time.RFC3339))
}
