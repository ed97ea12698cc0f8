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

// Fake is a manually advanced clock for tests and deterministic replays.
// The zero value reads as the Unix epoch.
type Fake struct {
	mu  sync.Mutex
	now time.Time
}

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
	f.mu.Unlock()
}

// Advance moves the fake clock forward by d.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	if f.now.IsZero() {
		f.now = time.UnixMilli(0).UTC()
	}
	f.now = f.now.Add(d)
	f.mu.Unlock()
}
