package winop

import (
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/state"
)

// Contents is how a window stores what it has accepted: one incremental
// accumulator (reduce, aggregate) or the list of elements (full-list process
// functions and evictors). It is the operator's only view of the window
// function's state.
type Contents[IN, ACC any] interface {
	// Reset makes acc empty, reusing its memory where possible.
	Reset(acc *ACC)
	// Add folds one element into acc.
	Add(acc *ACC, in IN, ts etime.Time)
	// Merge folds src into dst (session merges, sliding panes).
	Merge(dst *ACC, src *ACC)
}

// AggContents stores an incremental accumulator (E1).
type AggContents[IN, ACC, OUT any] struct {
	F state.AggregateFunc[IN, ACC, OUT]
}

// Reset implements Contents.
func (c AggContents[IN, ACC, OUT]) Reset(acc *ACC) { *acc = c.F.CreateAccumulator() }

// Add implements Contents.
func (c AggContents[IN, ACC, OUT]) Add(acc *ACC, in IN, _ etime.Time) { *acc = c.F.Add(*acc, in) }

// Merge implements Contents.
func (c AggContents[IN, ACC, OUT]) Merge(dst, src *ACC) { *dst = c.F.Merge(*dst, *src) }

// Take implements taker: dst takes src over, as Flink's merging states
// take a source's state when the target has none; a function with a Take
// method (record.Aggregator) puts it in the order a merge into an empty
// accumulator would.
func (c AggContents[IN, ACC, OUT]) Take(dst, src *ACC) {
	var zero ACC
	if t, ok := c.F.(interface{ Take(ACC) ACC }); ok {
		*dst, *src = t.Take(*src), zero
		return
	}
	*dst, *src = *src, zero
}

// taker is Contents that can take a window's contents over, with the
// window dropped: dst is empty, and src is not used again. It replaces a
// merge into an empty dst, which would copy src (a long session's sets
// and lists, once per record, made a session's records cost their
// number squared).
type taker[ACC any] interface {
	Take(dst, src *ACC)
}

// Elem is one stored element of a full-list window.
type Elem[T any] struct {
	TS    etime.Time
	Value T
}

// ListContents stores every element with its timestamp (E1, E5).
type ListContents[IN any] struct{}

// Reset implements Contents.
func (ListContents[IN]) Reset(acc *[]Elem[IN]) { *acc = (*acc)[:0] }

// Add implements Contents.
func (ListContents[IN]) Add(acc *[]Elem[IN], in IN, ts etime.Time) {
	*acc = append(*acc, Elem[IN]{TS: ts, Value: in})
}

// Merge implements Contents.
func (ListContents[IN]) Merge(dst, src *[]Elem[IN]) { *dst = append(*dst, *src...) }

// Take implements taker.
func (ListContents[IN]) Take(dst, src *[]Elem[IN]) { *dst, *src = *src, nil }
