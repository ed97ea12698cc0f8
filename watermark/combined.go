package watermark

import (
	"fmt"

	"github.com/weirstream/weir/etime"
)

// Combined combines the logical inputs of a two- or multi-input operator
// (connect, co-process, joins), as Flink's IndexedCombinedWatermarkStatus and
// CombinedWatermarkStatus (semantics I5). Each input is normally fed by its
// own [Valve]. Inputs start active with watermark MinTime; the combination
// starts active with watermark MinTime.
//
// Rules:
//   - Each input keeps the highest watermark it sent; lower ones are ignored.
//   - The combined watermark is the minimum over the non-idle inputs, output
//     only when strictly greater than the last output: it never decreases.
//     Unlike the valve's channels (I4), there is no alignment: an input that
//     becomes active again with an older watermark takes part in the minimum
//     at once and holds the combined watermark back until it passes it.
//   - When the last active input goes idle, the combination first outputs
//     the maximum watermark over all inputs, if it is greater than the last
//     output, and then Status(true) (H6, FLINK-38454): a backlog read
//     quickly and followed by silence fires its windows without waiting for
//     new data, whatever order the inputs went idle in. An input that never
//     sent a watermark counts as MinTime, so it adds nothing to the
//     maximum. When an input becomes active again it outputs Status(false).
//   - A watermark on an idle input makes that input active again, as in
//     Flink.
//
// Output order, where weir is stricter than Flink: a status change to active
// is output before any watermark it makes possible (Flink outputs the
// watermark first, and omits the status change when a watermark reactivates an
// input), so downstream never receives a watermark while it believes the input
// idle. A change to idle comes after the flushed maximum, never before it.
//
// Input indexes come from the engine: an index out of range panics.
// A Combined is not safe for concurrent use.
type Combined struct {
	in   []combinedInput
	last etime.Time
	idle bool
}

type combinedInput struct {
	wm   etime.Time
	idle bool
}

// NewCombined returns a combination of n >= 1 inputs; n < 1 panics.
func NewCombined(n int) *Combined {
	if n < 1 {
		panic(fmt.Sprintf("watermark: NewCombined needs at least one input, got %d", n))
	}
	c := &Combined{in: make([]combinedInput, n), last: etime.MinTime}
	for i := range c.in {
		c.in[i].wm = etime.MinTime
	}
	return c
}

func (c *Combined) input(i int) *combinedInput {
	if i < 0 || i >= len(c.in) {
		panic(fmt.Sprintf("watermark: combined input %d out of range [0,%d)", i, len(c.in)))
	}
	return &c.in[i]
}

// InputWatermark feeds a watermark from input i (which makes the input
// active) and outputs what changes.
func (c *Combined) InputWatermark(i int, wm etime.Time, out ValveOutput) {
	in := c.input(i)
	in.idle = false
	in.wm = etime.Max(in.wm, wm)
	c.update(out)
}

// InputStatus feeds a status change from input i and outputs what changes.
func (c *Combined) InputStatus(i int, idle bool, out ValveOutput) {
	c.input(i).idle = idle
	c.update(out)
}

// Watermark returns the last combined watermark output, MinTime if none.
func (c *Combined) Watermark() etime.Time { return c.last }

// Idle reports whether every input is idle.
func (c *Combined) Idle() bool { return c.idle }

func (c *Combined) update(out ValveOutput) {
	allIdle := true
	lo := etime.MaxTime
	for _, in := range c.in {
		if !in.idle {
			allIdle = false
			lo = etime.Min(lo, in.wm)
		}
	}
	if allIdle {
		if !c.idle {
			hi := etime.MinTime
			for _, in := range c.in {
				hi = etime.Max(hi, in.wm)
			}
			if hi > c.last {
				c.last = hi
				out.Watermark(hi)
			}
			c.idle = true
			out.Status(true)
		}
		return
	}
	if c.idle {
		c.idle = false
		out.Status(false)
	}
	if lo > c.last {
		c.last = lo
		out.Watermark(lo)
	}
}
