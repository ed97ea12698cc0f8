package weir

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/cespare/xxhash/v2"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/procmem"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/winop"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/trigger"
	"github.com/weirstream/weir/window"
)

// WindowOptions configures a window operator. The zero value is the
// assigner's default trigger, no allowed lateness, and too-late records
// dropped and counted.
type WindowOptions struct {
	// Name names the operator in reports (default "window").
	Name string
	// Trigger replaces the assigner's default trigger (D3).
	Trigger trigger.Trigger
	// AllowedLateness keeps window state until the watermark passes
	// maxTimestamp + AllowedLateness (B2, B3); in milliseconds, saturating.
	AllowedLateness etime.Duration
	// LateOutput sends records late for every window to the Late stream
	// (B4, W3) instead of dropping and counting them.
	LateOutput bool
	// PartialOutput also sends records that missed only some of their
	// windows to the Late stream, with reason ExpiredPartial (W7).
	PartialOutput bool
	// LateFiringInterval, when > 0, throttles late firings (W11): a late
	// record within the allowed lateness is added to its window at once,
	// but the window fires at most once per this much processing time
	// (the first late record schedules the firing, later ones join it),
	// and a firing still pending when the window is cleaned up is emitted
	// then, so the last revision always comes out. Classification and
	// counters are unchanged; only the number of late panes differs.
	// Default 0: a late firing per late record, as Flink.
	LateFiringInterval etime.Duration
	// Evictor evicts elements of full-list windows (E5); only Process
	// accepts it.
	Evictor *Evictor
	// SessionGap, with session windows, gives each element its own gap
	// (dynamic-gap sessions, A6); it receives the element as any and a
	// result <= 0 keeps the assigner's gap.
	SessionGap func(v any) etime.Duration
	// TwoPhase pre-aggregates, on each subtask that feeds the window,
	// its records of one key and window before they cross the keyed
	// exchange, then merges those partial accumulators per key: Flink's
	// local-global aggregation, which is the usual cure for a hot key
	// (salting the key, then merging). A hot key's records then cost its
	// window subtask a merge per bundle instead of an add per record. Only
	// Aggregate and AggregateProcess take it, with tumbling or sliding
	// event-time windows and the event-time, a continuous or the final
	// trigger, and the function's Merge must give exactly what adding the
	// records one by one gives, in any grouping (counts, integer and
	// decimal sums, min, max; not float sums) and must not keep its second
	// argument. Results, panes, late decisions and every counter are
	// those of the window without it: a bundle holds only records that
	// are on time for all their windows when they reach the window
	// subtask, and the window subtask adds a bundle's records one by one
	// when they are not (TwoPhase in docs/DESIGN.md).
	TwoPhase bool
	// SkipUnchanged skips early and late firings whose results equal
	// those of the window's last firing that emitted, as Flink SQL's
	// early and late firings emit only updates that changed (W20): such a
	// firing emits nothing, takes no pane index and is counted in
	// WindowCounters.Unchanged. On-time firings always emit. Results are
	// compared by their encoding (a string or []byte as it is, other
	// types by the state codec of R: state.CodecFor), through a 64-bit
	// hash kept per window and checkpointed, so results whose encodings
	// differ count as changed (a gob-encoded map may), and two different
	// results are taken as equal only when their hashes collide (about
	// one chance in 2^64 per firing). A firing's results are passed on
	// when its window function has returned, so a function must not
	// reuse one value's memory for two results of a firing. Not with a
	// purging trigger.
	SkipUnchanged bool
}

// Windowed is a keyed stream with a window assigner, waiting for its window
// function.
type Windowed[K comparable, T any] struct {
	k Keyed[K, T]
	a window.Assigner
	o WindowOptions
	// promised: see CountTrailing.
	promised func(T) etime.Time
}

// CountTrailing returns w counting the records accepted on time only
// because the watermark trailed (WindowCounters.OnTimeTrailing): promised
// gives, for a record, the watermark its channel's out-of-orderness bound
// promises at its arrival (the newest timestamp of its channel before it,
// minus the bound, minus 1), and a record on time under the operator's
// watermark but in a window that watermark would have closed is counted.
// Watermarks emitted periodically, or every N records during a backlog
// (W10), trail the records; summaries use the count so that "on time"
// means "within the bound".
func CountTrailing[K comparable, T any](w Windowed[K, T], promised func(T) etime.Time) Windowed[K, T] {
	w.promised = promised
	return w
}

// Window groups k into windows of a.
func Window[K comparable, T any](k Keyed[K, T], a window.Assigner, o WindowOptions) Windowed[K, T] {
	return Windowed[K, T]{k: k, a: a, o: o}
}

// WindowOutput is what a window function produces: results and, when asked
// for, the records that came too late.
type WindowOutput[K comparable, T, R any] struct {
	// Results holds every firing and retraction (W1, W8), timestamped with
	// the window's maxTimestamp.
	Results Stream[window.Result[K, R]]
	// Late holds too-late records (W3) when LateOutput or PartialOutput is
	// set, timestamped with their own timestamps.
	Late Stream[window.LateRecord[K, T]]
}

// WindowContext is what a process function sees when its window fires:
// key, window, firing kind, pane index, watermark, processing time; Emit
// sends a result.
type WindowContext[K comparable, R any] = window.FireContext[K, R]

// AggregateFunc is an incremental aggregation (add, merge, result).
type AggregateFunc[T, ACC, R any] = state.AggregateFunc[T, ACC, R]

// Aggregate applies f incrementally: each window keeps one accumulator (E1).
func Aggregate[K comparable, T, ACC, R any](w Windowed[K, T], f AggregateFunc[T, ACC, R]) WindowOutput[K, T, R] {
	return AggregateProcess(w, f, func(ctx *WindowContext[K, R], r R) { ctx.Emit(r) })
}

// AggregateProcess applies f incrementally and hands the result to p with
// the window context (E1: the pre-aggregated value).
func AggregateProcess[K comparable, T, ACC, R, OUT any](w Windowed[K, T], f AggregateFunc[T, ACC, R], p func(ctx *WindowContext[K, OUT], r R)) WindowOutput[K, T, OUT] {
	if w.o.Evictor != nil {
		w.k.s.n.env.fail(errors.New("weir: evictors need the full element list; use Process instead of an aggregate"))
	}
	if w.o.TwoPhase {
		return twoPhase(w, f, p)
	}
	return buildWindow(w, state.CodecFor[ACC](), func() (winop.Contents[T, ACC], winop.WindowFunc[K, ACC, OUT], winop.EvictFunc[ACC]) {
		return winop.AggContents[T, ACC, R]{F: f}, func(ctx *winop.FireContext[K, OUT], acc *ACC) { p(ctx, f.Result(*acc)) }, nil
	})
}

// Reduce combines the elements of each window with f, incrementally.
func Reduce[K comparable, T any](w Windowed[K, T], f func(a, b T) T) WindowOutput[K, T, T] {
	return Aggregate(w, reduceAgg[T]{f: f})
}

// reduceAcc's fields are exported so that the gob codec can checkpoint
// it.
type reduceAcc[T any] struct {
	V  T
	OK bool
}

type reduceAgg[T any] struct{ f func(a, b T) T }

func (reduceAgg[T]) CreateAccumulator() reduceAcc[T] { return reduceAcc[T]{} }
func (r reduceAgg[T]) Add(a reduceAcc[T], v T) reduceAcc[T] {
	if !a.OK {
		return reduceAcc[T]{V: v, OK: true}
	}
	a.V = r.f(a.V, v)
	return a
}
func (r reduceAgg[T]) Merge(a, b reduceAcc[T]) reduceAcc[T] {
	if !b.OK {
		return a
	}
	return r.Add(a, b.V)
}
func (reduceAgg[T]) Result(a reduceAcc[T]) T { return a.V }

// Process hands the full list of each window's elements, in arrival order,
// to p (E1: full-list window functions; E5: evictors).
func Process[K comparable, T, R any](w Windowed[K, T], p func(ctx *WindowContext[K, R], elems []T)) WindowOutput[K, T, R] {
	return processEach(w, func() func(*WindowContext[K, R], []T) { return p })
}

// processEach is Process with a window function made per subtask, for
// functions that keep scratch state.
func processEach[K comparable, T, R any](w Windowed[K, T], newFn func() func(ctx *WindowContext[K, R], elems []T)) WindowOutput[K, T, R] {
	ev := w.o.Evictor
	return buildWindow(w, listCodec[T]{state.CodecFor[T]()}, func() (winop.Contents[T, []winop.Elem[T]], winop.WindowFunc[K, []winop.Elem[T], R], winop.EvictFunc[[]winop.Elem[T]]) {
		p := newFn()
		var scratch []T
		fn := func(ctx *winop.FireContext[K, R], acc *[]winop.Elem[T]) {
			scratch = scratch[:0]
			for _, e := range *acc {
				scratch = append(scratch, e.Value)
			}
			p(ctx, scratch)
		}
		var evict winop.EvictFunc[[]winop.Elem[T]]
		if ev != nil {
			evict = func(acc *[]winop.Elem[T], _ window.Window, before bool, _ etime.Time) {
				if before != !ev.after {
					return
				}
				*acc = evictElems(ev, *acc)
			}
		}
		return winop.ListContents[T]{}, fn, evict
	})
}

// Evictor removes elements from a full-list window before or after its
// function runs (E5). Build one with CountEvictor or TimeEvictor.
type Evictor struct {
	count int
	keep  etime.Duration
	after bool
}

// CountEvictor keeps the last n elements (after: evict after the function).
func CountEvictor(n int, after bool) *Evictor { return &Evictor{count: n, after: after} }

// TimeEvictor keeps the elements whose timestamp is within keep of the
// newest element's timestamp (after: evict after the function).
func TimeEvictor(keep etime.Duration, after bool) *Evictor {
	return &Evictor{keep: keep, count: -1, after: after}
}

// evictElems applies ev to es in place and returns what survives.
func evictElems[T any](ev *Evictor, es []winop.Elem[T]) []winop.Elem[T] {
	if ev.count >= 0 {
		if len(es) <= ev.count {
			return es
		}
		n := copy(es, es[len(es)-ev.count:])
		clear(es[n:])
		return es[:n]
	}
	if len(es) == 0 {
		return es
	}
	newest := es[0].TS
	for _, e := range es[1:] {
		newest = etime.Max(newest, e.TS)
	}
	cut := newest.Add(-ev.keep)
	out := es[:0]
	for _, e := range es {
		if e.TS > cut {
			out = append(out, e)
		}
	}
	clear(es[len(out):])
	return out
}

// opStats publishes one window operator's counters per subtask.
type opStats struct {
	name   string
	budget int64 // Options.StateBudget
	log    *slog.Logger
	mu     sync.Mutex
	subs   []opSnapshot // by subtask
	peak   StateInfo
	// next is the size whose passing warns next: the budget, then twice
	// the size that last warned, and the budget again once the state
	// fell below 90% of it; warned counts the warnings.
	next   int64
	warned int
}

type opSnapshot struct {
	c winop.Counters
	h winop.Hists
	s StateInfo
}

// counters adds up the subtasks' last published counters.
func (o *opStats) counters() winop.Counters {
	o.mu.Lock()
	defer o.mu.Unlock()
	var c winop.Counters
	for _, sub := range o.subs {
		c.Add(sub.c)
	}
	return c
}

// hists adds up the subtasks' last published distributions.
func (o *opStats) hists() winop.Hists {
	o.mu.Lock()
	defer o.mu.Unlock()
	var h winop.Hists
	for _, sub := range o.subs {
		h.Lateness.Add(sub.h.Lateness)
		h.FiringDelay.Add(sub.h.FiringDelay)
	}
	return h
}

func (o *opStats) stateLocked() StateInfo {
	var s StateInfo
	for _, sub := range o.subs {
		s.add(sub.s)
	}
	return s
}

// publish records subtask i's counters and state size, keeps the peak, and
// warns when the operator's state passes the budget, and again each time
// it doubles past it (it warns at the budget again after it has fallen
// below 90% of it), with the process's resident memory beside the
// encoded size.
func (o *opStats) publish(i int, snap opSnapshot) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.subs[i] = snap
	s := o.stateLocked()
	if s.Bytes > o.peak.Bytes {
		o.peak = s
	}
	if o.budget <= 0 {
		return
	}
	if o.next == 0 {
		o.next = o.budget
	}
	switch {
	case s.Bytes > o.next:
		msg := "window state passed its budget; the job goes on (fewer keys, shorter windows or allowed lateness, or the on-disk backend would shrink it)"
		if o.next > o.budget {
			msg = fmt.Sprintf("window state doubled again past its budget, to %.0f times it; the job goes on (fewer keys, shorter windows or allowed lateness, or the on-disk backend would shrink it)", float64(s.Bytes)/float64(o.budget))
		}
		o.next = 2 * s.Bytes
		o.warned++
		o.log.Warn(msg, "operator", o.name, "bytes", s.Bytes, "budget", o.budget, "rss", procmem.RSS(), "windows", s.OpenWindows, "timers", s.Timers)
	case o.next > o.budget && s.Bytes < o.budget-o.budget/10:
		o.next = o.budget
	}
}

// setPast records, at the end of subtask i, how many of its windows
// the watermark had passed (PastWindows).
func (o *opStats) setPast(i int, n int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.subs[i].s.Past, o.subs[i].s.PastKnown = n, true
}

// state returns the operator's state size now and at its peak.
func (o *opStats) state() OperatorState {
	o.mu.Lock()
	defer o.mu.Unlock()
	return OperatorState{StateInfo: o.stateLocked(), Peak: o.peak, OverBudget: o.warned}
}

// buildWindow adds a window stage fed by w's keyed exchange.
func buildWindow[K comparable, T, ACC, R any](w Windowed[K, T], accCodec state.Codec[ACC], mk func() (winop.Contents[T, ACC], winop.WindowFunc[K, ACC, R], winop.EvictFunc[ACC])) WindowOutput[K, T, R] {
	if w.o.TwoPhase {
		w.k.s.n.env.fail(errors.New("weir: a two-phase window needs an aggregate function (Aggregate, AggregateProcess or Reduce) to pre-aggregate with; remove TwoPhase"))
	}
	return windowStage(w, accCodec, mk, exchange[K, T, T]{
		connect: keyedEdge[K, T], record: func(v T) T { return v }, promised: w.promised})
}

// exchange is how a window stage's elements (IN) come from its keyed
// stream of records (T): each record as it is (keyedEdge), or a
// two-phase window's parts (combineEdge).
type exchange[K comparable, T, IN any] struct {
	connect func(k Keyed[K, T], to *runtime.Stage, g int) *runtime.Edge[kv[K, IN]]
	// record is the record of an element that is not a bundle.
	record func(IN) T
	// promised is Windowed.promised of an element (nil: none).
	promised func(IN) etime.Time
	// bundled and unbundle, for parts: winop.Config.Bundled, and whether
	// an element is a bundle, passing its records, in arrival order, to
	// each as elements (each nil: only the answer).
	bundled  func(IN) (n, trailing int64, ok bool)
	unbundle func(v IN, ts etime.Time, each func(etime.Time, IN)) bool
}

// windowStage adds a window stage whose elements (IN) come from w's keyed
// exchange as ex says.
func windowStage[K comparable, T, IN, ACC, R any](w Windowed[K, T], accCodec state.Codec[ACC], mk func() (winop.Contents[IN, ACC], winop.WindowFunc[K, ACC, R], winop.EvictFunc[ACC]), ex exchange[K, T, IN]) WindowOutput[K, T, R] {
	env := w.k.s.n.env
	name := w.o.Name
	if name == "" {
		name = "window"
	}
	name = env.uniqueName(name)
	stats := &opStats{name: name, subs: make([]opSnapshot, env.opts.Parallelism), budget: env.opts.StateBudget, log: env.opts.Logger}
	env.ops = append(env.ops, stats)
	var out WindowOutput[K, T, R]
	var edge *runtime.Edge[kv[K, IN]]
	var promised func(IN) etime.Time
	if w.promised != nil {
		promised = ex.promised
	}
	stage := env.job.AddStage(name, env.opts.Parallelism, 1, func(st *runtime.Subtask) ([]runtime.GateHandler, runtime.Control, error) {
		contents, fn, evict := mk()
		wout := winOutput[K, T, IN, R]{res: out.Results.n.collector(st), late: out.Late.n.collector(st), record: ex.record}
		backend := env.opts.NewBackend()
		maxPar := env.opts.MaxParallelism
		hasher := state.NewHasher(w.k.enc)
		op, err := winop.New(winop.Config[K, IN, ACC, R]{
			KeyCodec: state.CodecFor[K](), AccCodec: accCodec,
			KeyGroup: func(k K) state.KeyGroup { return state.KeyGroupOf(hasher.Hash(k), maxPar) },
			Assigner: w.a, Trigger: w.o.Trigger, Lateness: w.o.AllowedLateness,
			Contents: contents, Func: fn, Evict: evict, KeyEncoder: w.k.enc,
			LateOutput: w.o.LateOutput, PartialOutput: w.o.PartialOutput, Backend: backend,
			LateFiringInterval: w.o.LateFiringInterval, Promised: promised, Bundled: ex.bundled,
			Now: func() etime.Time { return clock.Millis(env.opts.Clock) },
			Gap: sessionGap[IN](w.o.SessionGap), Fingerprint: fingerprint[R](w.o.SkipUnchanged),
		}, wout)
		if err != nil {
			return nil, nil, errors.Join(err, backend.Close())
		}
		i := st.Index
		// At the end, before the backend closes, the windows kept only
		// for the allowed lateness are counted (a walk of the state:
		// without lateness there are none to count).
		if w.o.AllowedLateness > 0 {
			st.OnClose(func() error {
				if n, ok := op.PastWindows(); ok {
					stats.setPast(i, n)
				}
				return nil
			})
		}
		st.OnClose(backend.Close)
		if err := restoreWindow(st, op, maxPar, env.opts.Parallelism); err != nil {
			return nil, nil, err
		}
		if st.Checkpointing() {
			st.OnSnapshot("window", op.Snapshot)
		}
		head := &winHead[K, T, IN, ACC, R]{op: op, out: wout, st: st, unbundle: ex.unbundle}
		st.OnProcessingTime(op.AdvanceProcessingTime)
		st.OnPublish(func() {
			sz := op.StateSize()
			oldest, has := op.OldestTimer()
			stats.publish(i, opSnapshot{c: op.Counters(), h: op.Hists(), s: StateInfo{OpenWindows: sz.Windows, Timers: sz.Timers, Bytes: sz.Bytes,
				Oldest: oldest, HasOldest: has}})
		})
		return []runtime.GateHandler{edge.GateHandler(st, head)}, head, nil
	})
	edge = ex.connect(w.k, stage, 0)
	out.Results = newStream[window.Result[K, R]](env, stage)
	out.Late = newStream[window.LateRecord[K, T]](env, stage)
	if err := validateWindow(w); err != nil {
		env.fail(err)
	}
	return out
}

// restoreWindow gives op the key groups of its subtask from every old
// subtask's snapshot (the parallelism may have changed); subtask 0 also
// takes every old subtask's counters, so totals stay exact.
func restoreWindow[K comparable, T, ACC, R any](st *runtime.Subtask, op *winop.Operator[K, T, ACC, R], maxPar, par int) error {
	parts := st.Restored("window")
	if len(parts) == 0 {
		return nil
	}
	first, last := state.KeyGroupRange(st.Index, maxPar, par)
	for old, b := range parts {
		if err := op.Restore(b, first, last, st.Index == 0); err != nil {
			return fmt.Errorf("restore from subtask %d: %w", old, err)
		}
	}
	return nil
}

// validateWindow refuses bad combinations when the job is built rather than
// when it starts (D3, W6, B5).
func validateWindow[K comparable, T any](w Windowed[K, T]) error {
	_, err := winop.Validate(winop.Spec{Assigner: w.a, Trigger: w.o.Trigger, Lateness: w.o.AllowedLateness, DynamicGap: w.o.SessionGap != nil,
		LateFiringInterval: w.o.LateFiringInterval, SkipUnchanged: w.o.SkipUnchanged})
	return err
}

// fingerprint is winop.Config.Fingerprint for WindowOptions.SkipUnchanged
// (nil without it): xxhash of a []byte result as it is, of another
// result's encoding by state.CodecFor (a string's is its bytes; a result
// that fails to encode hashes as unique, so it always counts as changed).
func fingerprint[R any](skip bool) func(R) uint64 {
	if !skip {
		return nil
	}
	if _, ok := any(*new(R)).([]byte); ok {
		return func(v R) uint64 { return xxhash.Sum64(any(v).([]byte)) }
	}
	codec := state.CodecFor[R]()
	var buf []byte
	var unique uint64
	return func(v R) uint64 {
		var err error
		if buf, err = codec.Append(buf[:0], v); err != nil {
			unique++
			return xxhash.Sum64String(fmt.Sprintf("unencodable %d %v", unique, err))
		}
		return xxhash.Sum64(buf)
	}
}

func sessionGap[T any](f func(any) etime.Duration) func(T) etime.Duration {
	if f == nil {
		return nil
	}
	return func(v T) etime.Duration { return f(v) }
}

type winOutput[K comparable, T, IN, R any] struct {
	res    runtime.Collector[window.Result[K, R]]
	late   runtime.Collector[window.LateRecord[K, T]]
	record func(IN) T
}

func (o winOutput[K, T, IN, R]) Result(r window.Result[K, R]) {
	o.res.Collect(r.Window.MaxTimestamp(), r)
}
func (o winOutput[K, T, IN, R]) Late(r window.LateRecord[K, IN]) {
	o.late.Collect(r.Timestamp, window.LateRecord[K, T]{Record: o.record(r.Record), Timestamp: r.Timestamp, Key: r.Key,
		Windows: r.Windows, Watermark: r.Watermark, Lateness: r.Lateness, Reason: r.Reason})
}

// winHead feeds a window operator from its input gate.
type winHead[K comparable, T, IN, ACC, R any] struct {
	op  *winop.Operator[K, IN, ACC, R]
	out winOutput[K, T, IN, R]
	st  *runtime.Subtask
	// unbundle, for a two-phase window, is exchange.unbundle; nil
	// otherwise.
	unbundle func(v IN, ts etime.Time, each func(etime.Time, IN)) bool
	key      K // the key of the element being processed
}

// StartBatch implements runtime.BatchStarter.
func (h *winHead[K, T, IN, ACC, R]) StartBatch() { h.op.SampleClock() }

func (h *winHead[K, T, IN, ACC, R]) Collect(ts etime.Time, r kv[K, IN]) {
	h.key = r.k
	if h.unbundle != nil && h.unbundle(r.v, ts, nil) && !h.op.OnTime(ts) {
		// A bundle passes as one element only when none of its records
		// can be late (winop.Config.Bundled); otherwise each record
		// passes as it would have without the pre-aggregation.
		h.unbundle(r.v, ts, h.one)
		return
	}
	h.one(ts, r.v)
}

func (h *winHead[K, T, IN, ACC, R]) one(ts etime.Time, v IN) {
	if err := h.op.ProcessElement(h.key, v, ts); err != nil {
		h.st.DeadLetter(runtime.DeadLetter{Reason: "timestamp_missing", Detail: err.Error(), Record: h.out.record(v)})
	}
}

// Watermark advances the operator first, so every result the watermark
// causes goes out before it (C2).
func (h *winHead[K, T, IN, ACC, R]) Watermark(wm etime.Time) {
	h.op.AdvanceWatermark(wm)
	h.out.res.Watermark(wm)
	h.out.late.Watermark(wm)
}

func (h *winHead[K, T, IN, ACC, R]) Status(idle bool) {
	h.out.res.Status(idle)
	h.out.late.Status(idle)
}

func (h *winHead[K, T, IN, ACC, R]) Finish() {
	h.out.res.Finish()
	h.out.late.Finish()
}

// listCodec encodes a full-list window's elements with their timestamps.
type listCodec[T any] struct{ c state.Codec[T] }

func (l listCodec[T]) Append(dst []byte, v []winop.Elem[T]) ([]byte, error) {
	w := state.Writer{Buf: dst}
	w.Uint(uint64(len(v)))
	for _, e := range v {
		w.Int(int64(e.TS))
		if err := state.WriteValue(&w, l.c, e.Value); err != nil {
			return dst, err
		}
	}
	return w.Buf, nil
}

func (l listCodec[T]) Decode(src []byte) ([]winop.Elem[T], error) {
	r := state.Reader{Buf: src}
	n := r.Uint()
	if n > uint64(len(src)) {
		return nil, errors.New("weir: corrupt element list")
	}
	out := make([]winop.Elem[T], 0, n)
	for range n {
		ts := etime.Time(r.Int())
		out = append(out, winop.Elem[T]{TS: ts, Value: state.ReadValue(&r, l.c)})
	}
	return out, r.Err
}
