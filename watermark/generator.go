package watermark

import (
	"github.com/weirstream/weir/etime"
)

// Output receives what a generator or source output decides.
//
// EmitWatermark passes on a watermark: a claim that no more records with a
// timestamp <= wm will follow. MarkIdle says the emitter has no data for the
// time being and should be left out of downstream minimums; MarkActive says it
// takes part again. An Output given to a generator may be called from inside
// OnEvent or OnPeriodicEmit only, never later.
type Output interface {
	EmitWatermark(wm etime.Time)
	MarkIdle()
	MarkActive()
}

// Generator is a per-source-channel watermark generator (Flink's
// WatermarkGenerator). The engine calls OnEvent for every record of the
// channel, in order, with the record's event timestamp, and OnPeriodicEmit on
// a processing-time period. A generator tracks one channel, not one key.
//
// Generators are not safe for concurrent use: the goroutine reading the
// channel owns the generator.
type Generator[T any] interface {
	// OnEvent observes one record. Most generators only update their state
	// here; punctuated generators may emit.
	OnEvent(v T, ts etime.Time, out Output)
	// OnPeriodicEmit is called every watermark interval of processing time.
	// The generator may emit a watermark, mark the channel idle, or do nothing.
	OnPeriodicEmit(out Output)
}

// BoundedOutOfOrderness returns Flink's BoundedOutOfOrdernessWatermarks
// generator (semantics H1). It tracks maxTs, the largest timestamp seen,
// starting at MinTime + bound + 1, and on every periodic call emits
// maxTs - bound - 1, so that the first watermark, before any record, is
// MinTime. Example: bound 10 after a record at 1337 emits 1326. A record
// exactly bound behind the maximum is therefore still on time.
//
// It never emits from OnEvent (trap L8): watermarks come only from the
// periodic call. Arithmetic saturates at MinTime and MaxTime.
//
// A negative bound is a programming error and panics; validate
// configuration before calling.
func BoundedOutOfOrderness[T any](bound etime.Duration) Generator[T] {
	if bound < 0 {
		panic("watermark: BoundedOutOfOrderness needs a bound >= 0")
	}
	return &boundedOutOfOrderness[T]{
		bound: bound,
		maxTs: etime.MinTime.Add(bound).Add(1),
	}
}

type boundedOutOfOrderness[T any] struct {
	bound etime.Duration
	maxTs etime.Time
}

func (g *boundedOutOfOrderness[T]) OnEvent(_ T, ts etime.Time, _ Output) {
	if ts > g.maxTs {
		g.maxTs = ts
	}
}

func (g *boundedOutOfOrderness[T]) OnPeriodicEmit(out Output) {
	out.EmitWatermark(g.maxTs.Add(-g.bound).Add(-1))
}

// StrictlyAscending returns the generator of Flink SQL's WATERMARK FOR
// t AS t: each periodic call emits the largest timestamp seen (MinTime
// before any), so a record at that timestamp is late for a window whose
// last millisecond it is. It never emits from OnEvent.
func StrictlyAscending[T any]() Generator[T] {
	return &boundedOutOfOrderness[T]{bound: -1, maxTs: etime.MinTime}
}

// ForBound is BoundedOutOfOrderness(bound) for a bound >= 0, and
// StrictlyAscending for the bound -1 (a job spec's strictly_ascending
// watermarks: the largest timestamp - (-1) - 1).
func ForBound[T any](bound etime.Duration) Generator[T] {
	if bound == -1 {
		return StrictlyAscending[T]()
	}
	return BoundedOutOfOrderness[T](bound)
}

// Monotonous returns the generator for ascending timestamps: bounded
// out-of-orderness with bound 0, emitting maxTs - 1 on each periodic call
// (Flink's forMonotonousTimestamps).
func Monotonous[T any]() Generator[T] { return BoundedOutOfOrderness[T](0) }

// Punctuated returns a generator driven by marker records. For each record,
// extract returns (wm, true) when the record carries a watermark; the
// generator then emits wm immediately, from OnEvent. OnPeriodicEmit does
// nothing. Watermarks are passed on as extracted; the [SourceOutput]
// downstream drops those that do not increase.
//
// A nil extract panics.
func Punctuated[T any](extract func(v T, ts etime.Time) (etime.Time, bool)) Generator[T] {
	if extract == nil {
		panic("watermark: Punctuated needs an extract function")
	}
	return &punctuated[T]{extract: extract}
}

type punctuated[T any] struct {
	extract func(v T, ts etime.Time) (etime.Time, bool)
}

func (g *punctuated[T]) OnEvent(v T, ts etime.Time, out Output) {
	if wm, ok := g.extract(v, ts); ok {
		out.EmitWatermark(wm)
	}
}

func (g *punctuated[T]) OnPeriodicEmit(Output) {}
