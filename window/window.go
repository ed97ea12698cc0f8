// Package window defines the window value type and the window assigners:
// tumbling, sliding, session (merging) and global, in event-time and
// processing-time variants (semantics section A).
//
// Assigners are a closed set: the constructors validate their arguments and
// return an error a person can act on. The rules are Flink's: windows are
// half-open [start, end), maxTimestamp is end-1, starts are aligned with
// Java's truncating remainder (A2), sliding windows come out in descending
// start order (A4), and only event-time assigners take part in lateness (A8).
package window

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/weirstream/weir/etime"
)

// Window is a half-open time interval [Start, End). The global window is the
// special value Global.
type Window struct {
	Start, End etime.Time
}

// Global is the single window of GlobalWindows. Its MaxTimestamp is MaxTime.
var Global = Window{Start: etime.MinTime, End: etime.MaxTime}

// IsGlobal reports whether w is the global window.
func (w Window) IsGlobal() bool { return w == Global }

// MaxTimestamp is the largest timestamp inside w (End-1), or MaxTime for the
// global window (A1).
func (w Window) MaxTimestamp() etime.Time {
	if w.IsGlobal() {
		return etime.MaxTime
	}
	return w.End - 1
}

// Intersects reports whether w and o overlap or touch (F2: inclusive, so
// [0,1000) and [1000,2000) intersect).
func (w Window) Intersects(o Window) bool { return w.Start <= o.End && w.End >= o.Start }

// Cover returns the smallest window containing w and o.
func (w Window) Cover(o Window) Window {
	return Window{Start: etime.Min(w.Start, o.Start), End: etime.Max(w.End, o.End)}
}

// String prints [start,end) or "global".
func (w Window) String() string {
	if w.IsGlobal() {
		return "global"
	}
	return "[" + strconv.FormatInt(int64(w.Start), 10) + "," + strconv.FormatInt(int64(w.End), 10) + ")"
}

// Kind names an assigner family.
type Kind uint8

// The assigner kinds.
const (
	KindTumbling Kind = iota + 1
	KindSliding
	KindSession
	KindGlobal
	KindCumulate
	KindAttached
)

func (k Kind) String() string {
	switch k {
	case KindTumbling:
		return "tumbling"
	case KindSliding:
		return "sliding"
	case KindSession:
		return "session"
	case KindGlobal:
		return "global"
	case KindCumulate:
		return "cumulate"
	case KindAttached:
		return "attached"
	}
	return "unknown"
}

// ErrNoTimestamp is returned by time-window assigners for a record whose
// timestamp is MinTime, which means "no timestamp assigned" (A5).
var ErrNoTimestamp = errors.New("weir: record has no timestamp (MIN); assign timestamps before windowing")

// Assigner maps a record timestamp to its windows. The set of assigners is
// closed; build them with Tumbling, Sliding, Session, Global and their
// processing-time variants. Assigners are immutable and safe to share.
type Assigner interface {
	// AssignWindows appends the windows of a record with timestamp ts (event
	// time, or processing time for processing-time assigners) to dst, in the
	// order the operator must handle them.
	AssignWindows(ts etime.Time, dst []Window) ([]Window, error)
	// IsEventTime reports whether lateness applies (A8).
	IsEventTime() bool
	// Merging reports whether windows of one key merge (sessions).
	Merging() bool
	// Kind tells the assigner family.
	Kind() Kind
	// ProcessingTime reports whether windows are assigned on processing time.
	ProcessingTime() bool
	// String describes the assigner, such as tumbling(5000).
	String() string
	sealed()
}

// Start returns the aligned window start of A2: floor alignment of ts to
// offset + k*size. This is what Java's truncating remainder computes in
// Flink's TimeWindow.getWindowStartWithOffset wherever that does not
// overflow; near MinTime the start saturates to MinTime instead of wrapping.
// size must be > 0.
func Start(ts etime.Time, offset, size etime.Duration) etime.Time {
	return ts.Add(-floorMod(ts, offset, size))
}

// SlidingFirstEnd returns the maxTimestamp of the earliest-ending of
// the sliding windows (size, slide, offset) that hold ts: the window
// with the first start after ts - size. (When size is not a multiple of
// slide, that is not the first slide boundary after ts.)
func SlidingFirstEnd(ts etime.Time, size, slide, offset etime.Duration) etime.Time {
	return Start(ts.Add(-size), offset, slide).Add(slide).Add(size) - 1
}

// PaneSize is the greatest common divisor of a sliding window's size and
// slide: the slices of its grid whose records all share their windows
// (window bounds fall on multiples of it from the offset).
func PaneSize(size, slide etime.Duration) etime.Duration {
	for slide != 0 {
		size, slide = slide, size%slide
	}
	return size
}

// floorMod is (ts - offset) mod size in [0, size), computed without
// overflow.
func floorMod(ts etime.Time, offset, size etime.Duration) etime.Duration {
	// Two divisions, not four: every window assignment pays for them, and a
	// 64-bit division costs tens of cycles. The difference of two
	// remainders lies in (-2*size, 2*size) and cannot overflow (size <=
	// MaxSize); the branches bring it into [0, size).
	sz := int64(size)
	d := int64(ts) % sz
	if offset != 0 {
		d -= int64(offset) % sz
	}
	if d < 0 {
		d += sz
		if d < 0 {
			d += sz
		}
	} else if d >= sz {
		d -= sz
	}
	return etime.Duration(d)
}

// Aligned returns the window of size that holds ts (A2, A3). At the ends
// of the time axis the bound that does not fit saturates: within one size
// of MinTime the start clamps to MinTime and the end is the true end; within
// one size of MaxTime the end clamps to MaxTime.
func Aligned(ts etime.Time, offset, size etime.Duration) Window {
	m := floorMod(ts, offset, size)
	return Window{Start: ts.Add(-m), End: ts.Add(size - m)}
}

// MaxSize is the largest window size, slide or gap the constructors
// accept: half the time axis, so that alignment arithmetic cannot overflow.
const MaxSize = etime.Duration(math.MaxInt64 / 2)

type tumbling struct {
	size, offset etime.Duration
	proc         bool
}

// Tumbling returns event-time tumbling windows of the given size and offset
// (A3). It refuses size <= 0 and |offset| >= size.
func Tumbling(size, offset etime.Duration) (Assigner, error) {
	return newTumbling(size, offset, false)
}

// TumblingProcessing is Tumbling on processing time.
func TumblingProcessing(size, offset etime.Duration) (Assigner, error) {
	return newTumbling(size, offset, true)
}

func newTumbling(size, offset etime.Duration, proc bool) (Assigner, error) {
	if size <= 0 || size > MaxSize {
		return nil, fmt.Errorf("weir: tumbling window size must be in 1..%d ms, got %dms", MaxSize, size)
	}
	if offset >= size || -offset >= size {
		return nil, fmt.Errorf("weir: tumbling window offset %dms must satisfy |offset| < size (%dms)", offset, size)
	}
	return tumbling{size: size, offset: offset % size, proc: proc}, nil
}

func (a tumbling) AssignWindows(ts etime.Time, dst []Window) ([]Window, error) {
	if ts == etime.MinTime {
		return dst, ErrNoTimestamp
	}
	return append(dst, Aligned(ts, a.offset, a.size)), nil
}
func (a tumbling) IsEventTime() bool    { return !a.proc }
func (a tumbling) Merging() bool        { return false }
func (a tumbling) Kind() Kind           { return KindTumbling }
func (a tumbling) ProcessingTime() bool { return a.proc }
func (a tumbling) sealed()              {}
func (a tumbling) String() string {
	return fmt.Sprintf("tumbling(%d%s)", a.size, offStr(a.offset))
}

func offStr(o etime.Duration) string {
	if o == 0 {
		return ""
	}
	return fmt.Sprintf(",offset=%d", o)
}

type sliding struct {
	size, slide, offset etime.Duration
	proc                bool
}

// Sliding returns event-time sliding windows (A4). It needs size > 0,
// slide > 0, |offset| < slide and size/slide <= 10,000,000.
func Sliding(size, slide, offset etime.Duration) (Assigner, error) {
	return newSliding(size, slide, offset, false)
}

// SlidingProcessing is Sliding on processing time.
func SlidingProcessing(size, slide, offset etime.Duration) (Assigner, error) {
	return newSliding(size, slide, offset, true)
}

func newSliding(size, slide, offset etime.Duration, proc bool) (Assigner, error) {
	switch {
	case size <= 0 || size > MaxSize:
		return nil, fmt.Errorf("weir: sliding window size must be in 1..%d ms, got %dms", MaxSize, size)
	case slide <= 0 || slide > MaxSize:
		return nil, fmt.Errorf("weir: sliding window slide must be in 1..%d ms, got %dms", MaxSize, slide)
	case offset >= slide || -offset >= slide:
		return nil, fmt.Errorf("weir: sliding window offset %dms must satisfy |offset| < slide (%dms)", offset, slide)
	case size/slide > 10_000_000:
		return nil, fmt.Errorf("weir: sliding window size/slide = %d exceeds 10,000,000 windows per record", size/slide)
	}
	return sliding{size: size, slide: slide, offset: offset, proc: proc}, nil
}

func (a sliding) AssignWindows(ts etime.Time, dst []Window) ([]Window, error) {
	if ts == etime.MinTime {
		return dst, ErrNoTimestamp
	}
	// The k-th window (descending start) starts at ts - m - k*slide and is
	// kept while its start > ts - size, that is while m + k*slide < size.
	// The offsets from ts never overflow; the bounds saturate at the ends of
	// the time axis as in Aligned.
	for d := floorMod(ts, a.offset, a.slide); d < a.size; d += a.slide {
		dst = append(dst, Window{Start: ts.Add(-d), End: ts.Add(a.size - d)})
	}
	return dst, nil
}

func (a sliding) IsEventTime() bool    { return !a.proc }
func (a sliding) Merging() bool        { return false }
func (a sliding) Kind() Kind           { return KindSliding }
func (a sliding) ProcessingTime() bool { return a.proc }
func (a sliding) sealed()              {}
func (a sliding) String() string {
	return fmt.Sprintf("sliding(%d,%d%s)", a.size, a.slide, offStr(a.offset))
}

// Size and Slide expose a sliding assigner's geometry (for pane-based
// storage). ok is false for other assigners.
func SlidingGeometry(a Assigner) (size, slide, offset etime.Duration, ok bool) {
	s, ok := a.(sliding)
	return s.size, s.slide, s.offset, ok
}

// TumblingGeometry exposes a tumbling assigner's size and offset.
func TumblingGeometry(a Assigner) (size, offset etime.Duration, ok bool) {
	t, ok := a.(tumbling)
	return t.size, t.offset, ok
}

type cumulate struct {
	size, step, offset etime.Duration
	proc               bool
}

// Cumulate returns event-time cumulating windows (Flink SQL's CUMULATE,
// semantics W15): a record at ts belongs to the windows [s, s+k*step)
// whose end is past ts, where s is the start of its tumbling window of
// size (A2, A3): every window of one period starts at s and ends one
// step after the last. They come out in ascending end order. It needs
// size > 0, step > 0, size a multiple of step, size/step <= 10,000,000
// and |offset| < size.
func Cumulate(size, step, offset etime.Duration) (Assigner, error) {
	return newCumulate(size, step, offset, false)
}

// CumulateProcessing is Cumulate on processing time.
func CumulateProcessing(size, step, offset etime.Duration) (Assigner, error) {
	return newCumulate(size, step, offset, true)
}

func newCumulate(size, step, offset etime.Duration, proc bool) (Assigner, error) {
	switch {
	case size <= 0 || size > MaxSize:
		return nil, fmt.Errorf("weir: cumulate window size must be in 1..%d ms, got %dms", MaxSize, size)
	case step <= 0 || step > size:
		return nil, fmt.Errorf("weir: cumulate window step must be in 1..size (%dms), got %dms", size, step)
	case size%step != 0:
		return nil, fmt.Errorf("weir: cumulate window size %dms must be a whole number of steps (%dms)", size, step)
	case size/step > 10_000_000:
		return nil, fmt.Errorf("weir: cumulate window size/step = %d exceeds 10,000,000 windows per record", size/step)
	case offset >= size || -offset >= size:
		return nil, fmt.Errorf("weir: cumulate window offset %dms must satisfy |offset| < size (%dms)", offset, size)
	}
	return cumulate{size: size, step: step, offset: offset % size, proc: proc}, nil
}

func (a cumulate) AssignWindows(ts etime.Time, dst []Window) ([]Window, error) {
	if ts == etime.MinTime {
		return dst, ErrNoTimestamp
	}
	// ts lies m into its period [ts-m, ts-m+size); its first window ends
	// at the first step boundary past it. The offsets from ts never
	// overflow; the bounds saturate as in Aligned.
	m := floorMod(ts, a.offset, a.size)
	for e := m - m%a.step + a.step; e <= a.size; e += a.step {
		dst = append(dst, Window{Start: ts.Add(-m), End: ts.Add(e - m)})
	}
	return dst, nil
}
func (a cumulate) IsEventTime() bool    { return !a.proc }
func (a cumulate) Merging() bool        { return false }
func (a cumulate) Kind() Kind           { return KindCumulate }
func (a cumulate) ProcessingTime() bool { return a.proc }
func (a cumulate) sealed()              {}
func (a cumulate) String() string {
	return fmt.Sprintf("cumulate(%d,%d%s)", a.size, a.step, offStr(a.offset))
}

type session struct {
	gap  etime.Duration
	proc bool
}

// Session returns event-time session windows with a fixed gap (A6): each
// record gets the proto-window [ts, ts+gap) and touching windows merge.
func Session(gap etime.Duration) (Assigner, error) { return newSession(gap, false) }

// SessionProcessing is Session on processing time.
func SessionProcessing(gap etime.Duration) (Assigner, error) { return newSession(gap, true) }

func newSession(gap etime.Duration, proc bool) (Assigner, error) {
	if gap <= 0 {
		return nil, fmt.Errorf("weir: session gap must be > 0, got %dms", gap)
	}
	return session{gap: gap, proc: proc}, nil
}

func (a session) AssignWindows(ts etime.Time, dst []Window) ([]Window, error) {
	if ts == etime.MinTime {
		return dst, ErrNoTimestamp
	}
	return append(dst, Window{Start: ts, End: ts.Add(a.gap)}), nil
}
func (a session) IsEventTime() bool    { return !a.proc }
func (a session) Merging() bool        { return true }
func (a session) Kind() Kind           { return KindSession }
func (a session) ProcessingTime() bool { return a.proc }
func (a session) sealed()              {}
func (a session) String() string       { return fmt.Sprintf("session(%d)", a.gap) }

type attached struct {
	up Assigner // tumbling, sliding or cumulate, on event time
}

// Attached returns the assigner of a window over the results of up's
// windows grouped by their bounds (Flink SQL's GROUP BY window_start,
// window_end of a windowed relation; semantics W18): a result carries
// its window's rowtime, end - 1, as its timestamp ts, and belongs to the
// one window of up that ends at ts+1, so that every window of up is a
// window here too, holding exactly its results. up must be an event-time
// tumbling, sliding or cumulate assigner (their windows are known from
// their ends); sessions and the global window are refused.
func Attached(up Assigner) (Assigner, error) {
	switch a := up.(type) {
	case tumbling:
		if !a.proc {
			return attached{up: up}, nil
		}
	case sliding:
		if !a.proc {
			return attached{up: up}, nil
		}
	case cumulate:
		if !a.proc {
			return attached{up: up}, nil
		}
	}
	return nil, fmt.Errorf("weir: a window attached to another's windows needs event-time tumbling, sliding or cumulate windows there, not %v", up)
}

func (a attached) AssignWindows(ts etime.Time, dst []Window) ([]Window, error) {
	if ts == etime.MinTime {
		return dst, ErrNoTimestamp
	}
	end := ts.Add(1)
	switch u := a.up.(type) {
	case tumbling:
		return append(dst, Window{Start: end.Add(-u.size), End: end}), nil
	case sliding:
		return append(dst, Window{Start: end.Add(-u.size), End: end}), nil
	case cumulate:
		// A cumulate window starts at its period's start (A2's alignment
		// of its last millisecond, ts).
		return append(dst, Window{Start: Start(ts, u.offset, u.size), End: end}), nil
	}
	return dst, fmt.Errorf("weir: attached to %v", a.up)
}

func (a attached) IsEventTime() bool    { return true }
func (a attached) Merging() bool        { return false }
func (a attached) Kind() Kind           { return KindAttached }
func (a attached) ProcessingTime() bool { return false }
func (a attached) sealed()              {}
func (a attached) String() string       { return "attached(" + a.up.String() + ")" }

type global struct{}

// GlobalWindows assigns every record to the single global window (A7). It is
// not an event-time assigner: nothing is ever late (G1).
func GlobalWindows() Assigner { return global{} }

func (global) AssignWindows(_ etime.Time, dst []Window) ([]Window, error) {
	return append(dst, Global), nil
}
func (global) IsEventTime() bool    { return false }
func (global) Merging() bool        { return false }
func (global) Kind() Kind           { return KindGlobal }
func (global) ProcessingTime() bool { return false }
func (global) sealed()              {}
func (global) String() string       { return "global" }

// CleanupTime is B3: maxTimestamp + lateness for event-time windows,
// saturating to MaxTime; maxTimestamp otherwise (a processing-time timer, or
// MaxTime = never for the global window). eventTime is the assigner's
// IsEventTime.
func CleanupTime(eventTime bool, w Window, lateness etime.Duration) etime.Time {
	if eventTime {
		return w.MaxTimestamp().Add(lateness)
	}
	return w.MaxTimestamp()
}
