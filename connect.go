package weir

import (
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/window"
)

// Either holds a record of one of two co-grouped streams.
type Either[A, B any] struct {
	IsB bool
	A   A
	B   B
}

// CoGroup groups two keyed streams into the same windows (Flink's coGroup:
// a union of both inputs, so one watermark valve over all their channels)
// and calls f with each window's elements from either side.
func CoGroup[K comparable, A, B, R any](a Keyed[K, A], b Keyed[K, B], asg window.Assigner, o WindowOptions, f func(ctx *WindowContext[K, R], as []A, bs []B)) WindowOutput[K, Either[A, B], R] {
	// Tag both inputs and route them into one keyed window input.
	ta := Map(a.s, func(v A) Either[A, B] { return Either[A, B]{A: v} })
	tb := Map(b.s, func(v B) Either[A, B] { return Either[A, B]{IsB: true, B: v} })
	ka := KeyByEncoded(ta, func(e Either[A, B]) K { return a.key(e.A) }, a.enc)
	kb := KeyByEncoded(tb, func(e Either[A, B]) K { return b.key(e.B) }, b.enc)
	w := Windowed[K, Either[A, B]]{k: ka, a: asg, o: o}
	out := processEach(w, func() func(*WindowContext[K, R], []Either[A, B]) {
		var as []A // scratch, one per subtask
		var bs []B
		return func(ctx *WindowContext[K, R], es []Either[A, B]) {
			as, bs = as[:0], bs[:0]
			for _, e := range es {
				if e.IsB {
					bs = append(bs, e.B)
				} else {
					as = append(as, e.A)
				}
			}
			f(ctx, as, bs)
		}
	})
	// Process connected ka; connect kb to the same gate (a union).
	stage := out.Results.n.stage
	keyedEdge(kb, stage, 0)
	return out
}

// Join emits f(a, b) for every pair of elements with the same key in the
// same window (a window join).
func Join[K comparable, A, B, R any](a Keyed[K, A], b Keyed[K, B], asg window.Assigner, o WindowOptions, f func(A, B) R) WindowOutput[K, Either[A, B], R] {
	return CoGroup(a, b, asg, o, func(ctx *WindowContext[K, R], as []A, bs []B) {
		for _, x := range as {
			for _, y := range bs {
				ctx.Emit(f(x, y))
			}
		}
	})
}

// Connect is a two-input operator: records of a go through fa, records of b
// through fb, into one stream. Its watermark combines the two logical
// inputs as semantics I5 says: the minimum over non-idle inputs, never
// decreasing, where an input that becomes active again holds it back.
func Connect[A, B, U any](a Stream[A], b Stream[B], fa func(A) U, fb func(B) U) Stream[U] {
	env := a.n.env
	var out Stream[U]
	var ea *runtime.Edge[A]
	var eb *runtime.Edge[B]
	stage := env.job.AddStage(env.uniqueName("connect"), env.opts.Parallelism, 2, func(st *runtime.Subtask) ([]runtime.GateHandler, runtime.Control, error) {
		down := out.n.collector(st)
		ha, hb := newMapOp(fa, down), newMapOp(fb, down)
		return []runtime.GateHandler{ea.GateHandler(st, ha), eb.GateHandler(st, hb)}, down, nil
	})
	ea = runtime.Connect[A](a.n.stage, stage, 0, nil)
	eb = runtime.Connect[B](b.n.stage, stage, 1, nil)
	a.consume(func(st *runtime.Subtask) runtime.Collector[A] { return ea.Writer(st) })
	b.consume(func(st *runtime.Subtask) runtime.Collector[B] { return eb.Writer(st) })
	out = newStream[U](env, stage)
	return out
}
