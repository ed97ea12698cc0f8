// Package runtime runs a physical job graph: stages of subtasks, chained
// operators that call each other directly, and exchanges that move batches
// of records and control elements (watermark, idle/active status, end of
// input) between subtasks, in order per channel.
//
// Two executors run the same graph. The parallel executor gives every
// subtask its own goroutine and connects them with bounded queues of
// batches (backpressure). The deterministic executor runs everything on the
// caller's goroutine: exchanges deliver synchronously and sources are polled
// in a fixed order, so a job's output is a pure function of its input.
package runtime

import (
	"sync"

	"github.com/weirstream/weir/etime"
)

// Control is the non-record half of the chained-operator interface.
type Control interface {
	// Watermark passes a watermark that only ever increases.
	Watermark(wm etime.Time)
	// Status passes an idle (true) or active (false) status change.
	Status(idle bool)
	// Finish says no more input will come on this path.
	Finish()
}

// Collector is how chained operators pass elements to each other. All calls
// happen on the owning subtask's goroutine.
type Collector[T any] interface {
	Collect(ts etime.Time, v T)
	Control
}

// BatchStarter is implemented by gate heads that want to know when a
// batch from an exchange begins (the parallel executor only: the
// deterministic one keeps every clock reading per record). A window
// operator reads the processing-time clock there once instead of per
// record.
type BatchStarter interface{ StartBatch() }

type kind uint8

const (
	kRecord kind = iota
	kWatermark
	kStatus
	kEnd
)

// elem is one element on an exchange channel.
type elem[T any] struct {
	kind kind
	idle bool
	ts   etime.Time // record timestamp or watermark
	v    T
}

// batch is the unit that crosses goroutines. home is the pool of the edge
// whose writer took it (nil in the deterministic executor), where the
// receiver puts it back.
type batch[T any] struct {
	elems []elem[T]
	home  *sync.Pool
}

// envelope carries one batch, or a checkpoint barrier, to a subtask's
// input queue.
type envelope struct {
	gate, from int32
	b          any   // *batch[T] of the gate's element type
	barrier    int64 // a checkpoint barrier instead of a batch
}

// Func adapts plain functions to a Collector, for sinks and tests.
type Func[T any] struct {
	OnRecord    func(ts etime.Time, v T)
	OnWatermark func(wm etime.Time)
	OnStatus    func(idle bool)
	OnFinish    func()
}

// Collect implements Collector.
func (f Func[T]) Collect(ts etime.Time, v T) {
	if f.OnRecord != nil {
		f.OnRecord(ts, v)
	}
}

// Watermark implements Control.
func (f Func[T]) Watermark(wm etime.Time) {
	if f.OnWatermark != nil {
		f.OnWatermark(wm)
	}
}

// Status implements Control.
func (f Func[T]) Status(idle bool) {
	if f.OnStatus != nil {
		f.OnStatus(idle)
	}
}

// Finish implements Control.
func (f Func[T]) Finish() {
	if f.OnFinish != nil {
		f.OnFinish()
	}
}

// Fanout sends every element to each of its collectors in order.
type Fanout[T any] []Collector[T]

// Collect implements Collector.
func (f Fanout[T]) Collect(ts etime.Time, v T) {
	for _, c := range f {
		c.Collect(ts, v)
	}
}

// Watermark implements Control.
func (f Fanout[T]) Watermark(wm etime.Time) {
	for _, c := range f {
		c.Watermark(wm)
	}
}

// Status implements Control.
func (f Fanout[T]) Status(idle bool) {
	for _, c := range f {
		c.Status(idle)
	}
}

// Finish implements Control.
func (f Fanout[T]) Finish() {
	for _, c := range f {
		c.Finish()
	}
}
