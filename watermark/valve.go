package watermark

import (
	"fmt"

	"github.com/weirstream/weir/etime"
)

// ValveOutput receives what a [Valve] or [Combined] decides to pass on.
// Watermark is called with strictly increasing values. Status(true) means the
// whole input went idle, Status(false) that it is active again; the two
// alternate, starting from active.
type ValveOutput interface {
	Watermark(wm etime.Time)
	Status(idle bool)
}

// ChannelState is one input channel of a [Valve], as seen by metrics and
// checkpoints.
type ChannelState struct {
	// Watermark is the highest watermark the channel sent while active,
	// MinTime if none.
	Watermark etime.Time
	// Idle is the channel's status.
	Idle bool
	// Aligned reports whether the channel takes part in the minimum. An idle
	// channel is never aligned.
	Aligned bool
}

// ValveState is a plain copy of a [Valve]'s state, for checkpoints.
type ValveState struct {
	// Channels holds one entry per input channel, in channel order.
	Channels []ChannelState
	// Watermark is the last watermark the valve output, MinTime if none.
	Watermark etime.Time
	// Idle reports whether the valve last output Status(true). RestoreValve
	// recomputes it from the channels (the valve is idle exactly when every
	// channel is).
	Idle bool
}

// Valve combines the watermarks and statuses of the N physical input
// channels of one operator instance, as Flink's StatusWatermarkValve
// (semantics I1-I4). A channel starts active and aligned with watermark
// MinTime; the valve starts active with output MinTime.
//
// Watermarks (I1, I2):
//   - A watermark is ignored unless it is strictly greater than its channel's
//     previous one and the channel is active (so also while the whole valve is
//     idle).
//   - The valve outputs the minimum over aligned channels whenever that
//     minimum is strictly greater than its last output. Output never
//     decreases, and nothing comes out until every aligned channel has sent a
//     watermark above MinTime.
//
// Status (I3, I4):
//   - A channel going idle becomes unaligned and leaves the minimum, which is
//     re-derived at once and may advance. If no channel is active any more,
//     the valve first outputs the maximum watermark over all channels, if it
//     is greater than the last output (weir follows Flink's current code and
//     flushes it whether or not the last channel held the minimum), and then
//     Status(true).
//   - A channel going active is aligned again only if its stored watermark is
//     >= the last output; otherwise it stays unaligned, neither lowering nor
//     holding back the output, until one of its watermarks reaches the last
//     output. If the valve was idle it outputs Status(false) first. Then, as
//     in Flink's newest code, the minimum is re-derived at once, so that a
//     channel realigned by the status change alone can advance the output
//     without waiting for its next watermark.
//   - Status(true) is output only when the last active channel goes idle, and
//     Status(false) only when the first channel of an idle valve becomes
//     active; per-channel changes are otherwise silent. Repeating a channel's
//     current status does nothing.
//
// Channel indexes come from the engine: an index out of range panics.
// Watermark and status values never panic. A Valve is not safe for
// concurrent use.
type Valve struct {
	ch   []ChannelState
	last etime.Time
	idle bool
}

// NewValve returns a valve for n >= 1 input channels; n < 1 panics.
func NewValve(n int) *Valve {
	if n < 1 {
		panic(fmt.Sprintf("watermark: NewValve needs at least one channel, got %d", n))
	}
	v := &Valve{ch: make([]ChannelState, n), last: etime.MinTime}
	for i := range v.ch {
		v.ch[i] = ChannelState{Watermark: etime.MinTime, Aligned: true}
	}
	return v
}

// RestoreValve returns a valve continuing from s, as produced by Snapshot.
// Inconsistencies are repaired rather than trusted: an idle channel is made
// unaligned, and the valve is idle exactly when every channel is. A state
// without channels panics.
func RestoreValve(s ValveState) *Valve {
	if len(s.Channels) == 0 {
		panic("watermark: RestoreValve needs at least one channel")
	}
	v := &Valve{ch: make([]ChannelState, len(s.Channels)), last: s.Watermark, idle: true}
	for i, c := range s.Channels {
		if c.Idle {
			c.Aligned = false
		} else {
			v.idle = false
		}
		v.ch[i] = c
	}
	return v
}

// Snapshot returns a copy of the valve's state.
func (v *Valve) Snapshot() ValveState {
	return ValveState{Channels: v.Channels(), Watermark: v.last, Idle: v.idle}
}

// Watermark returns the last watermark output, MinTime if none.
func (v *Valve) Watermark() etime.Time { return v.last }

// Idle reports whether the valve is idle: every channel is idle.
func (v *Valve) Idle() bool { return v.idle }

// Channels returns a copy of the channels' states, in channel order.
func (v *Valve) Channels() []ChannelState { return v.AppendChannels(nil) }

// AppendChannels appends the channels' states, in channel order, to dst.
func (v *Valve) AppendChannels(dst []ChannelState) []ChannelState { return append(dst, v.ch...) }

func (v *Valve) channel(ch int) *ChannelState {
	if ch < 0 || ch >= len(v.ch) {
		panic(fmt.Sprintf("watermark: valve channel %d out of range [0,%d)", ch, len(v.ch)))
	}
	return &v.ch[ch]
}

// InputWatermark feeds a watermark from channel ch, and outputs the valve's
// new watermark if it advanced.
func (v *Valve) InputWatermark(ch int, wm etime.Time, out ValveOutput) {
	c := v.channel(ch)
	if v.idle || c.Idle || wm <= c.Watermark {
		return
	}
	c.Watermark = wm
	if !c.Aligned {
		if wm < v.last {
			return // still catching up: recorded, but without effect
		}
		c.Aligned = true
	}
	v.advanceToMin(out)
}

// InputStatus feeds a status change from channel ch (idle or active), and
// outputs what follows from it.
func (v *Valve) InputStatus(ch int, idle bool, out ValveOutput) {
	c := v.channel(ch)
	if idle == c.Idle {
		return
	}
	c.Idle = idle
	if idle {
		c.Aligned = false
		if v.anyActive() {
			v.advanceToMin(out)
			return
		}
		if m := v.maxWatermark(); m > v.last {
			v.last = m
			out.Watermark(m)
		}
		v.idle = true
		out.Status(true)
		return
	}
	if c.Watermark >= v.last {
		c.Aligned = true
	}
	if v.idle {
		v.idle = false
		out.Status(false)
	}
	v.advanceToMin(out)
}

// advanceToMin outputs the minimum over aligned channels if there is one and
// it is greater than the last output.
func (v *Valve) advanceToMin(out ValveOutput) {
	found := false
	lo := etime.MaxTime
	for i := range v.ch {
		if c := &v.ch[i]; c.Aligned {
			found = true
			lo = etime.Min(lo, c.Watermark)
		}
	}
	if found && lo > v.last {
		v.last = lo
		out.Watermark(lo)
	}
}

func (v *Valve) anyActive() bool {
	for i := range v.ch {
		if !v.ch[i].Idle {
			return true
		}
	}
	return false
}

func (v *Valve) maxWatermark() etime.Time {
	hi := etime.MinTime
	for i := range v.ch {
		hi = etime.Max(hi, v.ch[i].Watermark)
	}
	return hi
}
