package watermark

import (
	"time"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/etime"
)

// WithIdleness wraps g with idleness detection, exactly as Flink's
// WatermarksWithIdleness (semantics H3):
//
//   - Idleness is judged only in OnPeriodicEmit. OnEvent merely counts events
//     (the hot path never reads the clock) and forwards to g.
//   - The first periodic call that sees no new event since the previous
//     periodic call starts the inactivity clock at c.Now(). It still lets g
//     emit.
//   - A later periodic call, still without new events, declares the channel
//     idle once strictly more than timeout has passed since that start:
//     c.Now() - start > timeout. Exactly timeout is not enough.
//   - While idle, the first such call emits MarkIdle once; g's periodic
//     watermark is suppressed on every idle call.
//   - A new event ends the idleness: the next periodic call resets the
//     inactivity clock and lets g emit again. g keeps its state (for bounded
//     out-of-orderness, its old maximum), so the watermark resumes where it
//     was. WithIdleness itself never calls MarkActive: a [SourceOutput]
//     becomes active again when it forwards a strictly greater watermark (H4).
//
// The channel is therefore marked idle no earlier than timeout after its last
// event, and at the latest about timeout plus three periodic intervals after
// it. A clock that goes backwards only delays idleness.
//
// timeout <= 0 means never idle: g itself is returned. A nil clock panics.
func WithIdleness[T any](g Generator[T], timeout time.Duration, c clock.Clock) Generator[T] {
	if timeout <= 0 {
		return g
	}
	if c == nil {
		panic("watermark: WithIdleness needs a clock")
	}
	return &withIdleness[T]{inner: g, timeout: timeout, clock: c}
}

type withIdleness[T any] struct {
	inner   Generator[T]
	timeout time.Duration
	clock   clock.Clock

	events     uint64 // events seen; wrapping is harmless, only change matters
	lastEvents uint64 // events at the previous periodic check

	timing        bool      // the inactivity clock runs
	inactiveSince time.Time // when it started

	idle bool // MarkIdle was emitted and no event came since
}

func (g *withIdleness[T]) OnEvent(v T, ts etime.Time, out Output) {
	g.inner.OnEvent(v, ts, out)
	g.events++
	g.idle = false
}

func (g *withIdleness[T]) OnPeriodicEmit(out Output) {
	if g.checkIdle() {
		if !g.idle {
			out.MarkIdle()
			g.idle = true
		}
		return
	}
	g.inner.OnPeriodicEmit(out)
}

// checkIdle reports whether the channel is idle now, advancing the
// inactivity clock.
func (g *withIdleness[T]) checkIdle() bool {
	if g.events != g.lastEvents {
		g.lastEvents = g.events
		g.timing = false
		return false
	}
	if !g.timing {
		g.timing = true
		g.inactiveSince = g.clock.Now()
		return false
	}
	return g.clock.Now().Sub(g.inactiveSince) > g.timeout
}
