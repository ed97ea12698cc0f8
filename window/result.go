package window

import "github.com/weirstream/weir/etime"

// Firing tells why a window result was emitted (semantics W2, W8).
type Firing uint8

// The firing kinds.
const (
	// Early: before the watermark reached the window's maxTimestamp
	// (continuous interval timers, count triggers).
	Early Firing = iota + 1
	// OnTime: the watermark reached maxTimestamp.
	OnTime
	// Late: a re-firing after maxTimestamp, caused by a late element within
	// the allowed lateness, a late session merge, or a final trigger with
	// lateness.
	Late
	// Retract: a session window absorbed by a merge after it had emitted;
	// downstream tables delete the row (W8). Not a firing: no pane index.
	Retract
	// Backfill: a revision published after the window was closed, with
	// the too-late records of the late-data ledger folded in (weir
	// backfill); its pane is the window's previous pane + 1. The engine
	// itself never emits it.
	Backfill
)

func (f Firing) String() string {
	switch f {
	case Early:
		return "early"
	case OnTime:
		return "on_time"
	case Late:
		return "late"
	case Retract:
		return "retract"
	case Backfill:
		return "backfill"
	}
	return "unknown"
}

// Result is one window result (semantics W1): the key, the window, the firing
// kind, the pane index (the window's revision: 0 first, +1 per later result)
// and the operator watermark when it fired. A retraction carries the
// absorbed window's last pane index and a zero Value.
type Result[K any, V any] struct {
	Key       K
	Window    Window
	Firing    Firing
	Pane      int64
	Watermark etime.Time
	Value     V
}

// Timestamp is the result's event timestamp: the window's maxTimestamp (A1).
func (r Result[K, V]) Timestamp() etime.Time { return r.Window.MaxTimestamp() }

// Miss names why a record missed windows.
type Miss uint8

// The miss reasons (ledger reason codes).
const (
	// Expired: the record was late for every window it belongs to (B4).
	Expired Miss = iota + 1
	// ExpiredPartial: the record was accepted by some windows and late for
	// others (W7).
	ExpiredPartial
)

func (m Miss) String() string {
	switch m {
	case Expired:
		return "window_expired"
	case ExpiredPartial:
		return "window_expired_partial"
	}
	return "unknown"
}

// LateRecord is a record that missed windows because they had expired
// (semantics W3, W7): the original record and timestamp, its key, the windows
// it missed in assigner order (for sessions, its proto-window), the operator
// watermark when it arrived and its lateness (watermark - timestamp).
type LateRecord[K any, T any] struct {
	Record    T
	Timestamp etime.Time
	Key       K
	Windows   []Window
	Watermark etime.Time
	Lateness  etime.Duration
	Reason    Miss
}
