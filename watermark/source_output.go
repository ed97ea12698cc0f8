package watermark

import "github.com/weirstream/weir/etime"

// SourceOutput sits between one source channel's generator and the
// downstream (Flink's WatermarkToDataOutput). It implements [Output] and
// forwards to another Output, applying semantics H2 and H4:
//
//   - EmitWatermark forwards wm only when it is strictly greater than the last
//     watermark forwarded (initially MinTime, so MinTime itself is never
//     forwarded). If the output is idle, it first forwards MarkActive, then the
//     watermark. A watermark that is not greater changes nothing, not even the
//     idle status.
//   - MarkIdle forwards MarkIdle once; repeated calls while idle do nothing.
//   - MarkActive forwards MarkActive only when the output is idle.
//
// Records never reactivate an idle output; the engine does not tell the
// SourceOutput about records at all. The initial status is active.
//
// A SourceOutput is not safe for concurrent use.
type SourceOutput struct {
	down Output
	last etime.Time
	idle bool
}

// NewSourceOutput returns an active SourceOutput forwarding to down, with no
// watermark forwarded yet. A nil down panics.
func NewSourceOutput(down Output) *SourceOutput {
	if down == nil {
		panic("watermark: NewSourceOutput needs a downstream Output")
	}
	return &SourceOutput{down: down, last: etime.MinTime}
}

// EmitWatermark forwards wm if it is strictly greater than the last forwarded
// watermark, reactivating an idle output first.
func (s *SourceOutput) EmitWatermark(wm etime.Time) {
	if wm <= s.last {
		return
	}
	s.last = wm
	if s.idle {
		s.idle = false
		s.down.MarkActive()
	}
	s.down.EmitWatermark(wm)
}

// MarkIdle marks the output idle, forwarding the change once.
func (s *SourceOutput) MarkIdle() {
	if s.idle {
		return
	}
	s.idle = true
	s.down.MarkIdle()
}

// MarkActive marks an idle output active again, forwarding the change.
func (s *SourceOutput) MarkActive() {
	if !s.idle {
		return
	}
	s.idle = false
	s.down.MarkActive()
}

// Watermark returns the last watermark forwarded, MinTime if none.
func (s *SourceOutput) Watermark() etime.Time { return s.last }

// Idle reports whether the output is idle.
func (s *SourceOutput) Idle() bool { return s.idle }
