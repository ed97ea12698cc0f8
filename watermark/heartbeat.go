package watermark

import (
	"time"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/etime"
)

// WithHeartbeat wraps g so that the watermark of a sparse stream keeps moving
// while no records arrive (weir's addition, requirement R3; Flink has no
// equivalent). It assumes that event time keeps pace with processing time
// during a quiet spell.
//
// Forwarding: every watermark g emits, from OnEvent or OnPeriodicEmit, is
// forwarded only when strictly greater than everything the wrapper forwarded
// before. The wrapper's output therefore never decreases, and nothing is
// emitted before the first watermark above MinTime. MarkIdle and MarkActive
// from g pass through unchanged.
//
// Heartbeat: each periodic call first runs g's periodic call. Let innerWm be
// the highest watermark g has emitted so far and lastSeen the processing time
// at which the last event was observed (see below). The wrapper then emits
// the heartbeat watermark
//
//	innerWm + (c.Now() - lastSeen)
//
// in whole milliseconds, saturating and capped at MaxTime-1 (only end of
// input ever produces MaxTime), when all of these hold: at least one event
// was seen, innerWm > MinTime, g is not idle (it did not call MarkIdle
// without an event, watermark or MarkActive since), c.Now() - lastSeen >=
// every, and the result is strictly greater than what the wrapper forwarded
// before. It is the watermark g would reach if a record whose timestamp had
// advanced with processing time since the last event arrived now.
//
// Events reset the heartbeat: the next periodic call takes c.Now() as
// lastSeen again, and heartbeats resume only after another quiet spell of
// every. Because the wrapper never goes back, records whose timestamps did
// not keep pace can be late once a heartbeat has run ahead of them; the
// heartbeat trades that lateness for progress on quiet streams.
//
// Like [WithIdleness], the wrapper counts events instead of reading the clock
// per record: lastSeen is the time of the first periodic call that observed
// the event, at most one interval after its real arrival. That only makes the
// heartbeat start later and stay lower, never higher.
//
// To combine with idleness, put the idleness wrapper inside:
// WithHeartbeat(WithIdleness(g, timeout, c), every, c). The heartbeat stays
// silent while the inner generator reports idle.
//
// every <= 0 returns g. A nil clock panics.
func WithHeartbeat[T any](g Generator[T], every time.Duration, c clock.Clock) Generator[T] {
	if every <= 0 {
		return g
	}
	if c == nil {
		panic("watermark: WithHeartbeat needs a clock")
	}
	h := &withHeartbeat[T]{
		inner:   g,
		every:   every,
		clock:   c,
		innerWm: etime.MinTime,
		high:    etime.MinTime,
	}
	h.tap.h = h
	return h
}

type withHeartbeat[T any] struct {
	inner Generator[T]
	every time.Duration
	clock clock.Clock

	events     uint64 // events seen; only change matters
	lastEvents uint64 // events at the previous periodic call

	seen     bool      // some periodic call observed an event
	lastSeen time.Time // when the last event was observed

	innerWm   etime.Time // highest watermark g emitted
	innerIdle bool       // g's last word was MarkIdle
	high      etime.Time // highest watermark forwarded

	tap heartbeatTap[T]
}

// heartbeatTap is the Output handed to the inner generator: it records what
// the generator says and forwards it.
type heartbeatTap[T any] struct {
	h    *withHeartbeat[T]
	down Output
}

func (t *heartbeatTap[T]) EmitWatermark(wm etime.Time) {
	h := t.h
	if wm > h.innerWm {
		h.innerWm = wm
	}
	h.innerIdle = false
	h.forward(wm, t.down)
}

func (t *heartbeatTap[T]) MarkIdle() {
	t.h.innerIdle = true
	t.down.MarkIdle()
}

func (t *heartbeatTap[T]) MarkActive() {
	t.h.innerIdle = false
	t.down.MarkActive()
}

func (h *withHeartbeat[T]) forward(wm etime.Time, out Output) {
	if wm > h.high {
		h.high = wm
		out.EmitWatermark(wm)
	}
}

func (h *withHeartbeat[T]) OnEvent(v T, ts etime.Time, out Output) {
	h.tap.down = out
	h.inner.OnEvent(v, ts, &h.tap)
	h.tap.down = nil
	h.events++
	h.innerIdle = false
}

func (h *withHeartbeat[T]) OnPeriodicEmit(out Output) {
	h.tap.down = out
	h.inner.OnPeriodicEmit(&h.tap)
	h.tap.down = nil

	now := h.clock.Now()
	if h.events != h.lastEvents {
		h.lastEvents = h.events
		h.seen = true
		h.lastSeen = now
		return
	}
	if !h.seen || h.innerIdle || h.innerWm == etime.MinTime {
		return
	}
	elapsed := now.Sub(h.lastSeen)
	if elapsed < h.every {
		return
	}
	wm := h.innerWm.Add(etime.FromDuration(elapsed))
	if wm == etime.MaxTime {
		wm = etime.MaxTime - 1
	}
	h.forward(wm, out)
}
