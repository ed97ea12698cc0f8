package runtime

import (
	"sync"
	"time"

	"github.com/weirstream/weir/etime"
)

// Edge connects an upstream stage to one input gate of a downstream stage.
// Each upstream subtask is one channel of the gate; channel numbers start at
// the edge's base, so several edges can feed one gate (a union).
type Edge[T any] struct {
	to   *Stage
	gate int
	base int
	// part picks the target subtask of a record; nil means round robin.
	part func(v T, targets int) int
	pool sync.Pool
}

// Connect adds an edge from every subtask of from into gate g of to. part
// chooses the target subtask of each record (nil: round robin). It returns
// the edge; upstream chains end in Edge.Writer.
func Connect[T any](from, to *Stage, g int, part func(v T, targets int) int) *Edge[T] {
	gt := to.gates[g]
	e := &Edge[T]{to: to, gate: g, base: gt.Channels, part: part}
	gt.From = append(gt.From, GateFrom{Stage: from.Name, Base: gt.Channels, Par: from.Par})
	gt.Channels += from.Par
	e.pool.New = func() any { return &batch[T]{home: &e.pool} }
	return e
}

// handler returns the gate handler for the downstream side of an edge:
// head receives records; control elements go through the subtask's valve;
// with pooled, batches go back to the pool of the edge that sent them
// (several edges may feed the gate: a union).
func handler[T any](st *Subtask, g int, head Collector[T], pooled bool) GateHandler {
	starter, _ := head.(BatchStarter)
	if !pooled {
		starter = nil // deterministic: no batch sampling
	}
	return func(from int, b any) {
		bt := b.(*batch[T])
		if starter != nil {
			starter.StartBatch()
		}
		n := 0
		for i := range bt.elems {
			e := &bt.elems[i]
			switch e.kind {
			case kRecord:
				n++
				head.Collect(e.ts, e.v)
			case kWatermark:
				st.inputWatermark(g, from, e.ts)
			case kStatus:
				st.inputStatus(g, from, e.idle)
			case kEnd:
				st.inputEnd(g)
			}
		}
		st.recordsIn.Add(int64(n))
		if pooled {
			clear(bt.elems)
			bt.elems = bt.elems[:0]
			bt.home.Put(bt)
		}
	}
}

// GateHandler returns the handler of this edge's gate for subtask st.
func (e *Edge[T]) GateHandler(st *Subtask, head Collector[T]) GateHandler {
	return handler[T](st, e.gate, head, !st.job.opts.Deterministic)
}

// Writer returns the collector that upstream subtask st writes into.
func (e *Edge[T]) Writer(st *Subtask) Collector[T] {
	targets := e.to.subtasks
	w := &writer[T]{
		edge: e, from: int32(e.base + st.Index), gate: int32(e.gate),
		targets: targets, size: st.job.opts.BatchSize, det: st.job.opts.Deterministic,
		bufs: make([]*batch[T], len(targets)), owner: st,
	}
	for i := range w.bufs {
		w.bufs[i] = w.newBatch()
	}
	st.OnFlush(w.flush)
	st.OnBarrier(w.barrier)
	return w
}

type writer[T any] struct {
	edge       *Edge[T]
	owner      *Subtask
	from, gate int32
	targets    []*Subtask
	bufs       []*batch[T]
	size       int
	det        bool
	rr         int
	ended      bool
}

func (w *writer[T]) newBatch() *batch[T] {
	if w.det {
		return &batch[T]{elems: make([]elem[T], 0, 16)}
	}
	b := w.edge.pool.Get().(*batch[T])
	if cap(b.elems) < w.size {
		b.elems = make([]elem[T], 0, w.size)
	}
	return b
}

func (w *writer[T]) Collect(ts etime.Time, v T) {
	var i int
	switch {
	case len(w.targets) == 1:
	case w.edge.part != nil:
		i = w.edge.part(v, len(w.targets))
	default:
		i = w.rr
		w.rr = (w.rr + 1) % len(w.targets)
	}
	b := w.bufs[i]
	b.elems = append(b.elems, elem[T]{kind: kRecord, ts: ts, v: v})
	if w.det || len(b.elems) >= w.size {
		w.send(i)
	}
}

func (w *writer[T]) broadcast(e elem[T]) {
	for i, b := range w.bufs {
		b.elems = append(b.elems, e)
		w.send(i)
	}
}

func (w *writer[T]) Watermark(wm etime.Time) { w.broadcast(elem[T]{kind: kWatermark, ts: wm}) }
func (w *writer[T]) Status(idle bool)        { w.broadcast(elem[T]{kind: kStatus, idle: idle}) }
func (w *writer[T]) Finish() {
	if !w.ended {
		w.ended = true
		w.broadcast(elem[T]{kind: kEnd})
	}
}

func (w *writer[T]) flush() {
	for i, b := range w.bufs {
		if len(b.elems) > 0 {
			w.send(i)
		}
	}
}

// barrier sends checkpoint barrier id to every target, after what is
// buffered.
func (w *writer[T]) barrier(id int64) {
	w.flush()
	for _, t := range w.targets {
		w.put(t, envelope{gate: w.gate, from: w.from, barrier: id})
	}
}

func (w *writer[T]) send(i int) {
	b := w.bufs[i]
	t := w.targets[i]
	if w.put(t, envelope{gate: w.gate, from: w.from, b: b}) || !w.det {
		w.bufs[i] = w.newBatch()
		return
	}
	// Synchronous delivery that did not hold the batch: reuse it at once.
	clear(b.elems)
	b.elems = b.elems[:0]
}

// put delivers e: synchronously in the deterministic executor (reporting
// whether the target held the batch), else through the target's queue.
func (w *writer[T]) put(t *Subtask, e envelope) (held bool) {
	if w.det {
		return t.deliver(e)
	}
	select {
	case t.in <- e:
		return false
	default:
	}
	// The target's queue is full: the wait is backpressure.
	start := time.Now()
	select {
	case t.in <- e:
	case <-w.owner.done:
		// The job is stopping and the target may have returned already:
		// unwind this subtask instead of blocking forever.
		panic(errStopped)
	}
	w.owner.bpNs.Add(int64(time.Since(start)))
	return false
}
