// Package clock is weir's source of processing time. The engine never calls
// time.Now directly: jobs take a Clock in their Options, and tests and
// deterministic replays pass a *Fake whose time moves only when told to.
package clock

import (
	"sync"
	"time"

	"github.com/weirstream/weir/etime"
)

// Clock tells processing time. Implementations are safe for concurrent use.
type Clock interface {
	// Now returns the current processing time.
	Now() time.Time
}

// Millis returns c's current time on the engine's millisecond axis.
func Millis(c Clock) etime.Time { return etime.FromTime(c.Now()) }

// Real is the machine's wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// Notifier is a Clock whose time moves only when told to (Fake). A
// goroutine that waits for processing time to pass (the checkpoint
// trigger) cannot poll such a clock on a wall-clock ticker alone: it would
// notice a move only at its next tick. It selects on Changed instead.
// Clocks that are not Notifiers (Real) move on their own and are polled.
type Notifier interface {
	Clock
	// Changed returns a channel that is closed the next time the clock
	// is set or advanced. A waiter takes the channel before it reads Now,
	// so that a move between the two is not missed, and takes a new one
	// after each wake-up. Safe for concurrent use.
	Changed() <-chan struct{}
}

// Fake is a manually advanced clock for tests and deterministic replays.
// The zero value reads as the Unix epoch. It is a Notifier.
type Fake struct {
	mu  sync.Mutex
	now time.Time
	// changed is closed, and cleared, at the next Set or Advance; nil
	// when nobody has asked for it since the last move.
	changed chan struct{}
}

var _ Notifier = (*Fake)(nil)

// NewFake returns a fake clock reading t.
func NewFake(t time.Time) *Fake { return &Fake{now: t} }

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.now.IsZero() {
		return time.UnixMilli(0).UTC()
	}
	return f.now
}

// Set moves the fake clock to t (it may go backwards; callers decide).
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	f.now = t
	f.notifyLocked()
	f.mu.Unlock()
}

// Advance moves the fake clock forward by d.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	if f.now.IsZero() {
		f.now = time.UnixMilli(0).UTC()
	}
	f.now = f.now.Add(d)
	f.notifyLocked()
	f.mu.Unlock()
}

// Changed returns a channel closed at the next Set or Advance (Notifier).
func (f *Fake) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.changed == nil {
		f.changed = make(chan struct{})
	}
	return f.changed
}

// notifyLocked wakes the waiters of Changed; f.mu is held.
func (f *Fake) notifyLocked() {
	if f.changed != nil {
		close(f.changed)
		f.changed = nil
	}
}

// Stepping is a clock that runs ahead by a fixed step at every reading:
// processing time of a replay so slow that any interval up to the step
// has passed between two looks (tests give it as a checkpoint clock, to
// take a checkpoint at every look, or as a job's clock, to make every
// periodic watermark due). It is safe for concurrent use.
type Stepping struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

// NewStepping returns a clock that reads start+step first, then one step
// more at each reading.
func NewStepping(start time.Time, step time.Duration) *Stepping {
	return &Stepping{now: start, step: step}
}

// Now moves the clock one step and returns its time.
func (c *Stepping) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.step)
	return c.now
}
