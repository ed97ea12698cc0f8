package weir

import (
	"errors"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/winop"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/trigger"
	"github.com/weirstream/weir/window"
)

// A two-phase window (WindowOptions.TwoPhase) puts a combiner between
// each upstream subtask and the keyed exchange. The combiner gathers the
// records of one key and pane (a tumbling window, or the slice of a
// sliding window's grid whose records all share their windows) into a
// bundle: their accumulator, how many they are, and the records
// themselves. It sends its bundles, in the order their first records
// came, before it passes on a watermark, a status, a checkpoint barrier
// or the end, whenever the subtask flushes its exchanges, and when it
// holds combineLimit records; a record whose earliest window the
// upstream watermark has already reached, or without a timestamp, goes
// as itself, after its key's bundle.
//
// The window subtask takes a bundle as one element (its accumulator
// merged, its records counted) only when every window of its records
// ends after the window's watermark: then none of them can be late or
// make a trigger fire (trigger.Combinable), and adding them one by one
// would leave the same state. Otherwise it adds the records one by one,
// as the one-phase window would have. Within one upstream channel, the
// window subtask receives each window's records in their order (the
// bundles that hold them are sent in the order of their first records),
// so a continuous trigger's first fire time (D4) is the same too.

// combineLimit is how many records (or bundles made, some sent early) a
// combiner holds before it sends its bundles.
const combineLimit = 4096

// part is what a two-phase window's exchange carries: a record (n 0), or
// a bundle of n >= 2 records of one key and pane, pre-aggregated, with
// its records after the first when the window may need them (see
// combineOp.carry).
type part[T, ACC any] struct {
	v T                // the record, or the bundle's first record
	b *bundled[T, ACC] // the bundle; nil for a record
}

// bundled is a bundle of n >= 2 records as it crosses the exchange (a
// pointer, so that a record's element stays small).
type bundled[T, ACC any] struct {
	n        int32
	trailing int32 // of its records, those the window counts as OnTimeTrailing
	acc      ACC
	rest     []stamped[T] // its records after the first, in arrival order, when carried
}

type stamped[T any] struct {
	ts etime.Time
	v  T
}

// partContents is a two-phase window's contents: a record is added, a
// bundle's accumulator merged (in place, when the function's Merge adds
// its second argument into its first, as state.AggregateFunc allows).
type partContents[T, ACC, R any] struct {
	f state.AggregateFunc[T, ACC, R]
}

func newPartContents[T, ACC, R any](f state.AggregateFunc[T, ACC, R]) partContents[T, ACC, R] {
	return partContents[T, ACC, R]{f: f}
}

func (c partContents[T, ACC, R]) Reset(acc *ACC) { *acc = c.f.CreateAccumulator() }
func (c partContents[T, ACC, R]) Add(acc *ACC, p part[T, ACC], _ etime.Time) {
	if p.b != nil {
		*acc = c.f.Merge(*acc, p.b.acc)
		return
	}
	*acc = c.f.Add(*acc, p.v)
}
func (c partContents[T, ACC, R]) Merge(dst, src *ACC) { *dst = c.f.Merge(*dst, *src) }

// twoPhase builds w's window as a two-phase one (WindowOptions.TwoPhase).
func twoPhase[K comparable, T, ACC, R, OUT any](w Windowed[K, T], f AggregateFunc[T, ACC, R], p func(ctx *WindowContext[K, OUT], r R)) WindowOutput[K, T, OUT] {
	if err := validateTwoPhase(w.a, w.o); err != nil {
		w.k.s.n.env.fail(err)
	}
	promised := w.promised
	ex := exchange[K, T, part[T, ACC]]{
		connect: func(k Keyed[K, T], to *runtime.Stage, g int) *runtime.Edge[kv[K, part[T, ACC]]] {
			return combineEdge(k, to, g, f, w.a, promised)
		},
		record: func(p part[T, ACC]) T { return p.v },
		promised: func(p part[T, ACC]) etime.Time {
			return promised(p.v)
		},
		bundled: func(p part[T, ACC]) (int64, int64, bool) {
			if p.b == nil {
				return 0, 0, false
			}
			return int64(p.b.n), int64(p.b.trailing), true
		},
		unbundle: func(p part[T, ACC], ts etime.Time, each func(etime.Time, part[T, ACC])) bool {
			if p.b == nil || len(p.b.rest) != int(p.b.n)-1 {
				// A record, or a bundle whose records stayed home:
				// on time here (combineOp.carry).
				return false
			}
			if each != nil {
				each(ts, part[T, ACC]{v: p.v})
				for _, r := range p.b.rest {
					each(r.ts, part[T, ACC]{v: r.v})
				}
			}
			return true
		},
	}
	return windowStage(w, state.CodecFor[ACC](), func() (winop.Contents[part[T, ACC], ACC], winop.WindowFunc[K, ACC, OUT], winop.EvictFunc[ACC]) {
		return newPartContents(f), func(ctx *winop.FireContext[K, OUT], acc *ACC) { p(ctx, f.Result(*acc)) }, nil
	}, ex)
}

// validateTwoPhase refuses a two-phase window whose bundles could not be
// exact: windows that merge, or are not cut by event time, triggers whose
// element firings depend on more than a window's first element, and the
// features that need each record (evictors, dynamic gaps).
func validateTwoPhase(a window.Assigner, o WindowOptions) error {
	if why := trigger.TwoPhaseRefusal(a, o.Trigger); why != "" {
		return errors.New("weir: " + why + "; remove TwoPhase")
	}
	if o.Evictor != nil || o.SessionGap != nil {
		return errors.New("weir: a two-phase window takes no evictor or session gap; remove TwoPhase")
	}
	return nil
}

// combineEdge connects k's stage to gate g of stage to through a
// combiner on each upstream subtask (see the comment at the top).
func combineEdge[K comparable, T, ACC, R any](k Keyed[K, T], to *runtime.Stage, g int, f AggregateFunc[T, ACC, R], a window.Assigner, promised func(T) etime.Time) *runtime.Edge[kv[K, part[T, ACC]]] {
	maxPar := k.s.n.env.opts.MaxParallelism
	edge := runtime.Connect[kv[K, part[T, ACC]]](k.s.n.stage, to, g, func(r kv[K, part[T, ACC]], n int) int {
		return state.SubtaskOf(state.KeyGroupOf(r.h, maxPar), maxPar, n)
	})
	pane, first := combineGrid(a)
	k.s.consume(func(st *runtime.Subtask) runtime.Collector[T] {
		c := &combineOp[K, T, ACC, R]{key: k.key, f: f, h: state.NewHasher(k.enc), st: st, pane: pane, first: first,
			promised: promised, wm: etime.MinTime, carry: st.Restoring()}
		// The combiner sends its bundles before the exchange's writer
		// flushes or forwards a barrier: it registers first.
		st.OnFlush(c.send)
		st.OnBarrier(func(int64) { c.send() })
		c.down = edge.Writer(st)
		return c
	})
	return edge
}

// combineGrid returns, for assigner a (tumbling or sliding), the pane of
// a timestamp (its start: the records of one pane share their windows)
// and the maxTimestamp of its earliest window.
func combineGrid(a window.Assigner) (pane, first func(ts etime.Time) etime.Time) {
	if size, offset, ok := window.TumblingGeometry(a); ok {
		pane = func(ts etime.Time) etime.Time { return window.Start(ts, offset, size) }
		return pane, func(ts etime.Time) etime.Time { return window.Aligned(ts, offset, size).MaxTimestamp() }
	}
	size, slide, offset, _ := window.SlidingGeometry(a)
	g := window.PaneSize(size, slide)
	return func(ts etime.Time) etime.Time { return window.Start(ts, offset, g) },
		func(ts etime.Time) etime.Time { return window.SlidingFirstEnd(ts, size, slide, offset) }
}

// combineSlots is the size of a combiner's table of bundles: a power of
// two.
const combineSlots = 256

// bundle is a combiner's records of one key and pane since it last sent
// them (n 0: an empty slot).
type bundle[K comparable, T, ACC any] struct {
	k     K
	h     uint64 // k's stable hash
	pane  etime.Time
	ts    etime.Time // the first record's
	first T
	d     bundled[T, ACC] // n 0: no bundle
	seq   uint32          // the bundle's number, for order
	// seen: the slot saw k last (its bundle, or, empty, its record that
	// went on as itself); k's next record starts a bundle.
	seen bool
}

// combineOp is a two-phase window's combiner on one upstream subtask; it
// runs on that subtask's goroutine, chained in front of the exchange.
//
// Its bundles live in a table indexed by their key's hash, one slot per
// key. A key's first record in an empty slot goes on as itself and marks
// the slot seen by it; its next record there starts a bundle. A record
// whose slot holds another key's bundle of one record sends that record
// on and goes on itself; one whose slot holds another key's bundle of
// several goes on as itself (its key has no bundle: only the key's slot
// could hold it). A key's records thus reach the exchange in their
// order, bundled or not; a key that comes once costs what it costs
// without the combiner, and a hot key keeps its slot.
type combineOp[K comparable, T, ACC, R any] struct {
	key      func(T) K
	f        AggregateFunc[T, ACC, R]
	down     runtime.Collector[kv[K, part[T, ACC]]]
	h        *state.Hasher[K]
	st       *runtime.Subtask
	pane     func(etime.Time) etime.Time
	first    func(etime.Time) etime.Time
	promised func(T) etime.Time
	wm       etime.Time // the watermark passed on last
	// carry: bundles carry their records, for the window to add one by
	// one should the bundle be late there. Until the channel has been
	// idle, the window's watermark is at most the channel's (its valve's
	// minimum counts the channel), so a bundle on time here is on time
	// there; after, an input that comes back may be behind the window's
	// watermark (I3). A job restored from a checkpoint carries them from
	// the start: the window's watermark is the checkpoint's, which this
	// channel passes on again only with its next watermark.
	carry bool
	slots [combineSlots]bundle[K, T, ACC]
	// order lists the slots of the bundles held, in the order of their
	// first records, with each bundle's number (a slot sent early, and
	// taken again, is listed again under its new number).
	order []orderEntry
	seq   uint32
	held  int // records in bundles
}

type orderEntry struct {
	slot int32
	seq  uint32
}

func (c *combineOp[K, T, ACC, R]) Collect(ts etime.Time, v T) {
	k := c.key(v)
	if k != k {
		c.st.DeadLetter(runtime.DeadLetter{Reason: "key_invalid", Detail: "the key is not equal to itself (NaN)", Record: v})
		return
	}
	h := c.h.Hash(k)
	mt := etime.MinTime
	if ts != etime.MinTime {
		mt = c.first(ts)
	}
	i := int32(h & (combineSlots - 1))
	b := &c.slots[i]
	if mt <= c.wm {
		// Late here already, so perhaps at the window too: the record
		// goes as itself, after its key's bundle (the order of other
		// keys' records changes no result: only late ones fire, and
		// they go at once).
		if b.d.n > 0 && b.k == k {
			c.sendSlot(b)
		}
		c.down.Collect(ts, kv[K, part[T, ACC]]{k: k, h: h, v: part[T, ACC]{v: v}})
		return
	}
	if b.d.n == 0 && (!b.seen || b.k != k) || b.d.n > 0 && b.k != k {
		c.other(b, k, h, ts, v)
		return
	}
	var trailing int32
	if c.promised != nil && mt <= c.promised(v) {
		trailing = 1
	}
	pane := c.pane(ts)
	switch {
	case b.d.n > 0 && b.pane == pane:
		if b.d.n == 1 {
			b.d.acc = c.f.Add(c.f.CreateAccumulator(), b.first)
		}
		b.d.acc = c.f.Add(b.d.acc, v)
		if c.carry {
			b.d.rest = append(b.d.rest, stamped[T]{ts: ts, v: v})
		}
		b.d.n++
		b.d.trailing += trailing
		if c.held++; c.held >= combineLimit {
			c.send()
		}
		return
	case b.d.n > 0:
		// The key's bundle of another pane: sent now, before this
		// record, which starts the key's next bundle.
		c.sendSlot(b)
	}
	// The slot is empty and saw this key last: a bundle starts.
	c.seq++
	b.k, b.h, b.pane, b.ts, b.seq, b.seen = k, h, pane, ts, c.seq, true
	b.first, b.d = v, bundled[T, ACC]{n: 1, trailing: trailing}
	c.order = append(c.order, orderEntry{slot: i, seq: c.seq})
	if c.held++; c.held >= combineLimit || len(c.order) >= combineLimit {
		c.send()
	}
}

// other passes on record v of key k (hash h), whose slot b holds
// another key's bundle or is empty and did not see k last: another key's
// bundle of several keeps the slot; an empty slot, or one with another
// key's single record (sent now), is marked seen by k. Either way the
// record goes on as itself: a key that comes once costs no more than
// without the combiner.
func (c *combineOp[K, T, ACC, R]) other(b *bundle[K, T, ACC], k K, h uint64, ts etime.Time, v T) {
	if b.d.n == 1 {
		c.sendSlot(b)
	}
	if b.d.n == 0 {
		b.k, b.seen = k, true
	}
	c.down.Collect(ts, kv[K, part[T, ACC]]{k: k, h: h, v: part[T, ACC]{v: v}})
}

// sendSlot passes slot b's bundle on (one record as that record) and
// empties the slot.
func (c *combineOp[K, T, ACC, R]) sendSlot(b *bundle[K, T, ACC]) {
	if b.d.n == 1 {
		c.down.Collect(b.ts, kv[K, part[T, ACC]]{k: b.k, h: b.h, v: part[T, ACC]{v: b.first}})
	} else {
		d := b.d
		c.down.Collect(b.ts, kv[K, part[T, ACC]]{k: b.k, h: b.h, v: part[T, ACC]{v: b.first, b: &d}})
		b.d.rest = nil // the window owns it now
	}
	c.held -= int(b.d.n)
	b.d.n = 0 // empty (its record stays referenced until the slot is taken again)
}

// send passes every bundle on, in the order of their first records.
func (c *combineOp[K, T, ACC, R]) send() {
	for _, o := range c.order {
		if b := &c.slots[o.slot]; b.d.n > 0 && b.seq == o.seq {
			c.sendSlot(b)
		}
	}
	c.order = c.order[:0]
	c.held = 0
}

func (c *combineOp[K, T, ACC, R]) Watermark(wm etime.Time) {
	c.send()
	c.wm = wm
	c.down.Watermark(wm)
}

func (c *combineOp[K, T, ACC, R]) Status(idle bool) {
	c.send()
	c.carry = c.carry || idle
	c.down.Status(idle)
}

func (c *combineOp[K, T, ACC, R]) Finish() {
	c.send()
	c.down.Finish()
}
