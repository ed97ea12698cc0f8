package weir

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/watermark"
)

// Map applies f to every record; timestamps are kept.
func Map[T, U any](s Stream[T], f func(T) U) Stream[U] {
	out := derived[T, U](s)
	s.consume(func(st *runtime.Subtask) runtime.Collector[T] {
		return newMapOp(f, out.n.collector(st))
	})
	return out
}

// forward passes control elements on unchanged; record operators embed it.
type forward struct{ runtime.Control }

type mapOp[T, U any] struct {
	forward
	f    func(T) U
	down runtime.Collector[U]
}

func newMapOp[T, U any](f func(T) U, down runtime.Collector[U]) *mapOp[T, U] {
	return &mapOp[T, U]{forward{down}, f, down}
}

func (m *mapOp[T, U]) Collect(ts etime.Time, v T) { m.down.Collect(ts, m.f(v)) }

// Filter keeps the records for which keep returns true.
func Filter[T any](s Stream[T], keep func(T) bool) Stream[T] {
	out := derived[T, T](s)
	s.consume(func(st *runtime.Subtask) runtime.Collector[T] {
		down := out.n.collector(st)
		return &filterOp[T]{forward{down}, keep, down}
	})
	return out
}

type filterOp[T any] struct {
	forward
	keep func(T) bool
	down runtime.Collector[T]
}

func (f *filterOp[T]) Collect(ts etime.Time, v T) {
	if f.keep(v) {
		f.down.Collect(ts, v)
	}
}

// FlatMap calls f for every record; f emits any number of results, which
// keep the record's timestamp.
func FlatMap[T, U any](s Stream[T], f func(v T, emit func(U))) Stream[U] {
	out := derived[T, U](s)
	s.consume(func(st *runtime.Subtask) runtime.Collector[T] {
		down := out.n.collector(st)
		op := &flatMapOp[T, U]{forward: forward{down}, f: f, down: down}
		op.emit = func(u U) { op.down.Collect(op.ts, u) }
		return op
	})
	return out
}

type flatMapOp[T, U any] struct {
	forward
	f    func(T, func(U))
	down runtime.Collector[U]
	ts   etime.Time
	emit func(U)
}

func (m *flatMapOp[T, U]) Collect(ts etime.Time, v T) { m.ts = ts; m.f(v, m.emit) }

// FlatMapTimed is FlatMap whose f sees each record's timestamp and gives
// each result its own, which is never earlier than the record's (an
// earlier one is raised to it): results may move later in event time,
// never earlier, so a result is not late downstream where its record was
// not. A windowed operator downstream windows a result by its new
// timestamp.
func FlatMapTimed[T, U any](s Stream[T], f func(ts etime.Time, v T, emit func(etime.Time, U))) Stream[U] {
	out := derived[T, U](s)
	s.consume(func(st *runtime.Subtask) runtime.Collector[T] {
		down := out.n.collector(st)
		op := &flatMapTimedOp[T, U]{forward: forward{down}, f: f, down: down}
		op.emit = func(ts etime.Time, u U) { op.down.Collect(max(ts, op.ts), u) }
		return op
	})
	return out
}

type flatMapTimedOp[T, U any] struct {
	forward
	f    func(etime.Time, T, func(etime.Time, U))
	down runtime.Collector[U]
	ts   etime.Time
	emit func(etime.Time, U)
}

func (m *flatMapTimedOp[T, U]) Collect(ts etime.Time, v T) { m.ts = ts; m.f(ts, v, m.emit) }

// FlatMapTimedLate is FlatMapTimed whose results at or behind the
// subtask's input watermark go to late (called on the subtask's
// goroutine, made once per subtask by newLate) instead of downstream.
// Downstream they would be late, but a two-input operator judges them by
// the smaller of its inputs' watermarks, so whether it does depends on
// how its inputs interleave; judged here, against the watermark of their
// own input, a result's fate depends on that input's order alone.
func FlatMapTimedLate[T, U any](s Stream[T], f func(ts etime.Time, v T, emit func(etime.Time, U)), newLate func(sub Subtask) func(ts etime.Time, v U)) Stream[U] {
	out := derived[T, U](s)
	s.consume(func(st *runtime.Subtask) runtime.Collector[T] {
		down := out.n.collector(st)
		op := &flatMapLateOp[T, U]{flatMapTimedOp: flatMapTimedOp[T, U]{forward: forward{down}, f: f, down: down}, wm: etime.MinTime,
			late: newLate(Subtask{Stage: st.StageName(), Index: st.Index})}
		op.emit = func(ts etime.Time, u U) {
			if ts = max(ts, op.ts); ts <= op.wm {
				op.late(ts, u)
				return
			}
			op.down.Collect(ts, u)
		}
		return op
	})
	return out
}

type flatMapLateOp[T, U any] struct {
	flatMapTimedOp[T, U]
	wm   etime.Time
	late func(etime.Time, U)
}

func (m *flatMapLateOp[T, U]) Watermark(wm etime.Time) {
	m.wm = max(m.wm, wm)
	m.down.Watermark(wm)
}

// BadInput is the error a TryMap function returns to refuse a record as a
// dead letter: Reason is a stable code (such as "json_malformed"), Detail
// is for a person.
type BadInput struct {
	Reason string
	Detail string
}

func (b *BadInput) Error() string { return b.Reason + ": " + b.Detail }

// TryMap applies f to every record; a record for which f fails becomes a
// dead letter (W4) and the job goes on. The dead letter's reason is the
// error's BadInput.Reason when it has one, else "map_failed".
func TryMap[T, U any](s Stream[T], f func(T) (U, error)) Stream[U] {
	out := derived[T, U](s)
	s.consume(func(st *runtime.Subtask) runtime.Collector[T] {
		down := out.n.collector(st)
		return &tryMapOp[T, U]{forward{down}, f, down, st}
	})
	return out
}

type tryMapOp[T, U any] struct {
	forward
	f    func(T) (U, error)
	down runtime.Collector[U]
	st   *runtime.Subtask
}

func (m *tryMapOp[T, U]) Collect(ts etime.Time, v T) {
	u, err := m.f(v)
	if err == nil {
		m.down.Collect(ts, u)
		return
	}
	d := runtime.DeadLetter{Reason: "map_failed", Detail: err.Error(), Record: v}
	var bad *BadInput
	if errors.As(err, &bad) {
		d.Reason, d.Detail = bad.Reason, bad.Detail
	}
	m.st.DeadLetter(d)
}

// WatermarkStrategy says how a stream gets its timestamps and watermarks
// (semantics H). Build one with BoundedOutOfOrderness, Monotonous,
// Punctuated or IngestionTime and refine it with its With methods.
type WatermarkStrategy[T any] struct {
	// Timestamp extracts a record's event timestamp; prev is the timestamp
	// it arrived with (MinTime if none). A result of MinTime means "no
	// timestamp": the window operator refuses such records as dead letters.
	Timestamp func(v T, prev etime.Time) etime.Time
	// Generator makes one watermark generator per source channel.
	Generator func() watermark.Generator[T]
	// Idleness marks a channel idle after this long without records (H3).
	Idleness time.Duration
	// Heartbeat advances a silent channel's watermark with processing time
	// after this long without records (R3); 0 disables it.
	Heartbeat time.Duration
	// EveryRecord emits after every record instead of periodically: the
	// schedule for deterministic replays.
	EveryRecord bool
	// BacklogEvery overrides SourceOptions.BacklogEvery and
	// Options.BacklogWatermarkEvery: while the source channel reads a
	// backlog, the generator emits after every this many records instead
	// of periodically (W10); negative: never.
	BacklogEvery int
	// Interval overrides Options.WatermarkInterval.
	Interval time.Duration
	// Ingestion stamps each record with processing time at this operator
	// (ingestion time, R1), ignoring Timestamp.
	Ingestion bool
	// Marker, when set, recognizes control records of a replayed stream:
	// a marker is consumed here (it does not flow on) and emits its
	// watermark, or marks its channel idle, on the channel it arrived on.
	Marker func(v T) (Marker, bool)
}

// Marker is a control record of a replayed stream: a watermark (H2: only
// an increase passes) or, with Idle, "this channel is idle" (H3).
type Marker struct {
	Watermark etime.Time
	Idle      bool
}

// BoundedOutOfOrderness watermarks maxTs - bound - 1 (H1).
func BoundedOutOfOrderness[T any](bound time.Duration, ts func(T) etime.Time) WatermarkStrategy[T] {
	b := etime.FromDuration(bound)
	return WatermarkStrategy[T]{
		Timestamp: func(v T, _ etime.Time) etime.Time { return ts(v) },
		Generator: func() watermark.Generator[T] { return watermark.BoundedOutOfOrderness[T](b) },
	}
}

// Monotonous watermarks maxTs - 1, for ascending timestamps.
func Monotonous[T any](ts func(T) etime.Time) WatermarkStrategy[T] {
	return BoundedOutOfOrderness(0, ts)
}

// Punctuated takes watermarks from marker records: extract returns a
// watermark and true for a marker (which still flows on as a record; drop
// it with Filter if it is not data).
func Punctuated[T any](ts func(T) etime.Time, extract func(v T, ts etime.Time) (etime.Time, bool)) WatermarkStrategy[T] {
	return WatermarkStrategy[T]{
		Timestamp: func(v T, _ etime.Time) etime.Time { return ts(v) },
		Generator: func() watermark.Generator[T] { return watermark.Punctuated[T](extract) },
	}
}

// IngestionTime stamps records with processing time where the strategy is
// applied and emits monotonous watermarks on that axis.
func IngestionTime[T any]() WatermarkStrategy[T] {
	return WatermarkStrategy[T]{
		Ingestion: true,
		Generator: func() watermark.Generator[T] { return watermark.Monotonous[T]() },
	}
}

// WithIdleness returns s with idle detection after timeout (H3).
func (s WatermarkStrategy[T]) WithIdleness(timeout time.Duration) WatermarkStrategy[T] {
	s.Idleness = timeout
	return s
}

// WithHeartbeat returns s with the heartbeat of R3.
func (s WatermarkStrategy[T]) WithHeartbeat(every time.Duration) WatermarkStrategy[T] {
	s.Heartbeat = every
	return s
}

// WithMarkers returns s recognizing control records with marker.
func (s WatermarkStrategy[T]) WithMarkers(marker func(v T) (Marker, bool)) WatermarkStrategy[T] {
	s.Marker = marker
	return s
}

// WithEveryRecord returns s emitting after every record.
func (s WatermarkStrategy[T]) WithEveryRecord() WatermarkStrategy[T] {
	s.EveryRecord = true
	return s
}

// AssignTimestamps stamps records and generates watermarks per source
// channel (never per key, L8). Upstream watermarks are replaced, except the
// final MAX at end of input (H5).
func AssignTimestamps[T any](s Stream[T], ws WatermarkStrategy[T]) Stream[T] {
	out := derived[T, T](s)
	env := s.n.env
	interval := ws.Interval
	if interval <= 0 {
		interval = env.opts.WatermarkInterval
	}
	s.consume(func(st *runtime.Subtask) runtime.Collector[T] {
		down := out.n.collector(st)
		g := ws.Generator()
		if ws.Idleness > 0 {
			g = watermark.WithIdleness(g, ws.Idleness, env.opts.Clock)
		}
		if ws.Heartbeat > 0 {
			g = watermark.WithHeartbeat(g, ws.Heartbeat, env.opts.Clock)
		}
		// The strategy's period, else the source's, else the job's; a
		// job that turns backlog emission off (negative) turns it off for
		// every source.
		every := ws.BacklogEvery
		if every == 0 && env.opts.BacklogWatermarkEvery > 0 {
			every = st.BacklogEvery()
		}
		if every == 0 {
			every = env.opts.BacklogWatermarkEvery
		}
		op := &tsOp[T]{ws: ws, gen: g, down: down, clk: env.opts.Clock, st: st, every: max(every, 0)}
		op.out = watermark.NewSourceOutput(ctrlOutput{down})
		if b, ok := st.Restored("timestamps")[st.Index]; ok {
			r := state.Reader{Buf: b}
			gs, os := r.Bytes(), r.Bytes()
			if len(r.Buf) > 0 { // checkpoints of older weir end here
				op.n = int(r.Int())
			}
			if r.Err != nil || watermark.RestoreState(op.gen, gs) != nil || op.out.RestoreState(os) != nil {
				panic(fmt.Errorf("weir: corrupt timestamp state in the checkpoint (subtask %d)", st.Index))
			}
		}
		if st.Checkpointing() {
			st.OnSnapshot("timestamps", func(dst []byte) ([]byte, error) {
				w := state.Writer{Buf: dst}
				w.Bytes(watermark.AppendState(nil, op.gen))
				w.Bytes(op.out.AppendState(nil))
				// The records since the last backlog emission: a restored
				// replay emits where the uninterrupted one did (W10).
				w.Int(int64(op.n))
				return w.Buf, nil
			})
		}
		if !ws.EveryRecord {
			// As Flink, the first periodic emission is one interval after
			// the operator starts, then every interval.
			iv := etime.FromDuration(interval)
			next := clock.Millis(env.opts.Clock).Add(iv)
			// While the channel reads a backlog, emission goes by record
			// count instead (W10); the clock takes over once it is caught
			// up.
			st.OnProcessingTime(func(now etime.Time) {
				if now >= next {
					next = now.Add(iv)
					if op.every == 0 || !st.Backlog() {
						op.gen.OnPeriodicEmit(op.out)
					}
				}
			})
		}
		return op
	})
	return out
}

type tsOp[T any] struct {
	ws   WatermarkStrategy[T]
	gen  watermark.Generator[T]
	out  *watermark.SourceOutput
	down runtime.Collector[T]
	clk  clock.Clock
	st   *runtime.Subtask
	// every is the backlog emission period in records (0: none), n the
	// records since the last backlog emission.
	every, n int
}

func (o *tsOp[T]) Collect(prev etime.Time, v T) {
	if o.ws.Marker != nil {
		if m, ok := o.ws.Marker(v); ok {
			if m.Idle {
				o.out.MarkIdle()
			} else {
				o.out.EmitWatermark(m.Watermark)
			}
			return
		}
	}
	var ts etime.Time
	if o.ws.Ingestion {
		ts = clock.Millis(o.clk)
	} else {
		ts = o.ws.Timestamp(v, prev)
	}
	if ts != etime.MinTime {
		o.gen.OnEvent(v, ts, o.out)
	}
	o.down.Collect(ts, v)
	switch {
	case o.ws.EveryRecord:
		o.gen.OnPeriodicEmit(o.out)
	case o.every > 0 && o.st.Backlog():
		if o.n++; o.n >= o.every {
			o.n = 0
			o.gen.OnPeriodicEmit(o.out)
		}
	}
}

func (o *tsOp[T]) Watermark(wm etime.Time) {
	if wm == etime.MaxTime {
		o.out.EmitWatermark(wm)
	}
}
func (o *tsOp[T]) Status(idle bool) { markStatus(o.out, idle) }
func (o *tsOp[T]) Finish()          { o.down.Finish() }

// ForEach calls fn for every record of s. fn is called from the goroutines
// of s's subtasks, possibly concurrently; ForEach does not lock.
func ForEach[T any](s Stream[T], fn func(ts etime.Time, v T)) {
	Observe(s, Observer[T]{Record: fn})
}

// Collected gathers a stream's records in memory, for tests and examples.
type Collected[T any] struct {
	mu    sync.Mutex
	items []T
}

// Collect gathers every record of s.
func Collect[T any](s Stream[T]) *Collected[T] {
	c := &Collected[T]{}
	ForEach(s, func(_ etime.Time, v T) {
		c.mu.Lock()
		c.items = append(c.items, v)
		c.mu.Unlock()
	})
	return c
}

// Items returns a copy of what was collected so far, in arrival order.
func (c *Collected[T]) Items() []T {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]T(nil), c.items...)
}

// Observer receives a stream's records and its control elements; nil
// fields are skipped. Its functions are called from the stream's subtask
// goroutines, possibly concurrently.
type Observer[T any] struct {
	Record    func(ts etime.Time, v T)
	Watermark func(wm etime.Time)
	Status    func(idle bool)
	Finish    func()
}

// Observe attaches o to s, as a sink that also sees watermarks, idle and
// active status and end of input.
func Observe[T any](s Stream[T], o Observer[T]) {
	s.consume(func(*runtime.Subtask) runtime.Collector[T] {
		return runtime.Func[T]{OnRecord: o.Record, OnWatermark: o.Watermark, OnStatus: o.Status, OnFinish: o.Finish}
	})
}

// ForEachSubtask attaches a sink built once per subtask of s's stage:
// newFn receives the subtask's identity (to match OnBarrier calls, for
// sinks that commit with checkpoints) and returns the function that
// receives that subtask's records, on its goroutine.
func ForEachSubtask[T any](s Stream[T], newFn func(sub Subtask) func(ts etime.Time, v T)) {
	s.consume(func(st *runtime.Subtask) runtime.Collector[T] {
		return runtime.Func[T]{OnRecord: newFn(Subtask{Stage: st.StageName(), Index: st.Index})}
	})
}

// ForEachSerial is ForEach with calls serialized by a mutex, for sinks that
// are not safe for concurrent use.
func ForEachSerial[T any](s Stream[T], fn func(ts etime.Time, v T)) {
	var mu sync.Mutex
	ForEach(s, func(ts etime.Time, v T) {
		mu.Lock()
		fn(ts, v)
		mu.Unlock()
	})
}
