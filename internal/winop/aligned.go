package winop

import (
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/timers"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/window"
)

// Window-major firing. With the default event-time trigger, every key of a
// tumbling or sliding window fires when the watermark passes the window's
// end and is cleared at its cleanup time: the timers belong to the window,
// not to each (key, window). An aligned operator keeps one timer per
// window (alignedState.timers) and, when it fires, walks the window's keys
// (a tumbling window's entries, a sliding window's panes merged key by
// key), sorts them by W5's key order and fires them in that order: the
// output is exactly what per-key timers give, at a fraction of the work
// (no timer per key to register, sort, look up and delete; a sliding
// window merges its panes in one pass instead of a lookup per key and
// pane).
//
// Sliding windows keep no entry per (key, window) until one is needed:
// when the window fires late (an element within the allowed lateness),
// and at its on-time firing when it has allowed lateness (to carry the
// pane index, W1, to its late firings).
//
// The late-firing throttle (W11) works per key in either mode: a deferred
// late firing is marked in the (key, window) entry and has a per-key
// processing-time timer (fireOnElement, deferLate), and clearWindow emits
// the firings still pending before it drops the window (flushLate).
//
// Snapshots are written as the per-key timers and entries would be
// (snapshotAligned), so a checkpoint restores into an operator of either
// kind (the state backend may change across a restore).
type alignedState[K comparable, ACC any] struct {
	entries state.Namespaces[K, window.Window, entry[ACC]]
	panes   state.Namespaces[K, int64, ACC] // sliding windows
	// viewPanes and viewEntries walk a pane or a window that is only read
	// (RangeNamespace, or a KV's ViewNamespace, which keeps what it reads
	// out of the cache and does not mark it to be written back).
	viewPanes   func(int64, func(K, *ACC) bool)
	viewEntries func(window.Window, func(K, *entry[ACC]) bool)
	timers      *timers.Service[none]
	enc         timers.KeyEncoder[K]
	order       timers.KeyOrder[K]

	// Registration caches: the last window (tumbling) or the last two
	// panes (sliding) whose window timers were registered. A window that
	// fired stays "registered" here: an element of it arrives after its
	// end, when there is nothing to register but the cleanup timer, which
	// is registered with the end timer and stays until the window is
	// cleared (after which its elements are late and do not get here).
	lastWin  window.Window
	hasWin   bool
	lastPane [2]int64
	hasPane  [2]bool

	// Firing buffers, reused.
	keys  []K
	ents  []*entry[ACC]
	idx   map[K]int32
	accs  []ACC
	spare entry[ACC]
}

func noneEncoder(dst []byte, _ none) []byte { return dst }

// maxAlignedPanes is the most panes per window for which sliding windows
// fire window-major (10 s every 2 s has 5).
const maxAlignedPanes = 16

// alignable reports whether the operator qualifies for window-major
// firing: the built-in event-time trigger, tumbling windows or sliding
// windows in pane mode with few panes, event time and no evictor (New
// decides the rest of its configuration first).
func (o *Operator[K, IN, ACC, OUT]) alignable(evicts, merging bool) bool {
	if !o.trigEventTime || !o.eventTime || evicts || merging || (o.tumbleSize == 0 && !o.paneMode) {
		return false
	}
	// Snapshots and state sizes walk each window's panes: with many panes
	// per window that costs more than per-key timers save.
	return !o.paneMode || o.panesPerWindow <= maxAlignedPanes
}

// initAligned turns on window-major firing for an alignable operator
// whose values are namespace-major (in memory, or in a KV).
func (o *Operator[K, IN, ACC, OUT]) initAligned(enc timers.KeyEncoder[K]) {
	ents, ok := o.entries.(state.Namespaces[K, window.Window, entry[ACC]])
	if !ok {
		return
	}
	a := &alignedState[K, ACC]{entries: ents, timers: timers.New[none](noneEncoder), enc: enc}
	a.viewEntries = ents.RangeNamespace
	if v, ok := ents.(interface {
		ViewNamespace(window.Window, func(K, *entry[ACC]) bool)
	}); ok {
		a.viewEntries = v.ViewNamespace
	}
	if o.paneMode {
		if a.panes, ok = o.panes.(state.Namespaces[K, int64, ACC]); !ok {
			return
		}
		a.viewPanes = a.panes.RangeNamespace
		if v, ok := a.panes.(interface {
			ViewNamespace(int64, func(K, *ACC) bool)
		}); ok {
			// A KV's walk that keeps what it reads out of the cache.
			a.viewPanes = v.ViewNamespace
		}
		a.idx = make(map[K]int32)
	}
	o.al = a
}

// registerWindow registers w's end timer (unless the window has ended)
// and its cleanup timer (unless it never ends).
func (o *Operator[K, IN, ACC, OUT]) registerWindow(w window.Window) {
	if mt := w.MaxTimestamp(); mt > o.wm {
		o.al.timers.Register(timers.Timer[none]{TS: mt, Window: w})
	}
	if c := o.cleanupTime(w); c != etime.MaxTime {
		o.al.timers.Register(timers.Timer[none]{TS: c, Window: w})
	}
}

// registerTumbling registers a tumbling window's timers, once.
func (o *Operator[K, IN, ACC, OUT]) registerTumbling(w window.Window) {
	a := o.al
	if a.hasWin && a.lastWin == w {
		return
	}
	a.lastWin, a.hasWin = w, true
	o.registerWindow(w)
}

// registerPane registers the timers of every window of the element's pane
// (wins: those not late), once per pane.
func (o *Operator[K, IN, ACC, OUT]) registerPane(pi int64, wins []window.Window) {
	a := o.al
	for i := range a.lastPane {
		if a.hasPane[i] && a.lastPane[i] == pi {
			return
		}
	}
	a.lastPane[1], a.hasPane[1] = a.lastPane[0], a.hasPane[0]
	a.lastPane[0], a.hasPane[0] = pi, true
	for _, w := range wins {
		if !o.isWindowLate(w) {
			o.registerWindow(w)
		}
	}
}

// processAligned adds an element to its windows (wins, none of them late)
// and fires those that have ended (late firings within the allowed
// lateness).
func (o *Operator[K, IN, ACC, OUT]) processAligned(key K, v IN, ts etime.Time, wins []window.Window) {
	if o.paneMode {
		o.addToPane(key, v, ts)
		o.registerPane(o.paneIndex(ts), wins)
		for _, w := range wins {
			if w.MaxTimestamp() <= o.wm {
				e := o.entries.Ref(key, w, true)
				e.has = true
				o.fireOnElement(key, w, e)
			}
		}
		return
	}
	w := wins[0]
	o.registerTumbling(w)
	e := o.entries.Ref(key, w, true)
	if !e.has {
		o.contents.Reset(&e.acc)
		e.has = true
	}
	o.contents.Add(&e.acc, v, ts)
	if w.MaxTimestamp() <= o.wm {
		o.fireOnElement(key, w, e)
	}
}

// runAligned fires and clears every window whose timers are at or below
// the watermark, in timer order (C2, W5).
func (o *Operator[K, IN, ACC, OUT]) runAligned(upTo etime.Time) {
	a := o.al
	for {
		due := a.timers.PopDue(upTo)
		if len(due) == 0 {
			return
		}
		for _, t := range due {
			if !a.timers.Has(t) {
				continue
			}
			a.timers.Fired(t)
			w := t.Window
			if t.TS == w.MaxTimestamp() {
				o.fireWindow(w)
			}
			if t.TS == o.cleanupTime(w) {
				o.clearWindow(w)
			}
		}
	}
}

// fireWindow fires every key of w on time, in W5 order.
func (o *Operator[K, IN, ACC, OUT]) fireWindow(w window.Window) {
	a := o.al
	a.keys = a.keys[:0]
	if o.paneMode {
		o.firePanes(w)
		return
	}
	for _, i := range o.entriesOf(w, func(e *entry[ACC]) bool { return e.has }) {
		o.fire(a.keys[i], w, a.ents[i], window.OnTime)
	}
	clear(a.ents) // no pointers into the state are kept
}

// entriesOf gathers window w's entries that keep accepts, with their
// keys, into a.ents and a.keys, and returns their W5 order; the caller
// clears a.ents when done, so that no pointers into the state are kept.
func (o *Operator[K, IN, ACC, OUT]) entriesOf(w window.Window, keep func(*entry[ACC]) bool) []int32 {
	a := o.al
	a.keys, a.ents = a.keys[:0], a.ents[:0]
	a.entries.RangeNamespace(w, func(k K, e *entry[ACC]) bool {
		if keep(e) {
			a.keys = append(a.keys, k)
			a.ents = append(a.ents, e)
		}
		return true
	})
	return a.order.Sort(a.keys, a.enc)
}

// firePanes fires a sliding window: its panes are merged key by key in one
// pass, then each key fires with its merged contents. A window with
// allowed lateness keeps an entry per key, for the pane index of its late
// firings (W1).
func (o *Operator[K, IN, ACC, OUT]) firePanes(w window.Window) {
	a := o.al
	a.accs = a.accs[:0]
	first := o.firstPane(w)
	for pi := range o.paneRange(first, o.panesPerWindow) {
		a.viewPanes(pi, func(k K, p *ACC) bool {
			i, ok := a.idx[k]
			if !ok {
				i = int32(len(a.keys))
				a.idx[k] = i
				a.keys = append(a.keys, k)
				var zero ACC
				a.accs = append(a.accs, zero)
				o.contents.Reset(&a.accs[i])
			}
			o.contents.Merge(&a.accs[i], p)
			return true
		})
	}
	clear(a.idx)
	// Without allowed lateness the window is cleared right after, and an
	// entry would only carry pane index 0.
	keep := o.cleanupTime(w) > w.MaxTimestamp()
	for _, i := range a.order.Sort(a.keys, a.enc) {
		k := a.keys[i]
		e := &a.spare
		if keep {
			e = o.entries.Ref(k, w, true)
		} else {
			*e = entry[ACC]{}
		}
		e.has = true
		o.emitFiring(k, w, e, &a.accs[i], window.OnTime)
	}
}

// clearWindow is cleanup (C5.3) for every key of w at once: it never
// emits, but for the throttled late firings still pending (W11), which
// come out first, in W5 order.
func (o *Operator[K, IN, ACC, OUT]) clearWindow(w window.Window) {
	a := o.al
	if o.lateEvery > 0 {
		for _, i := range o.entriesOf(w, func(e *entry[ACC]) bool { return e.lateSet }) {
			o.flushLate(a.keys[i], w, a.ents[i], true)
		}
		clear(a.ents)
	}
	a.entries.DropNamespace(w)
	if o.paneMode {
		// The panes whose last window is w (see clearAll).
		for pi := range o.ownPanes(w) {
			a.panes.DropNamespace(pi)
		}
	}
}

// alignedKeys calls fn for every key with contents in w until fn returns
// false: a tumbling window's entries, or the keys of a sliding window's
// panes, each once.
func (o *Operator[K, IN, ACC, OUT]) alignedKeys(w window.Window, fn func(k K) bool) bool {
	a := o.al
	if !o.paneMode {
		ok := true
		a.viewEntries(w, func(k K, _ *entry[ACC]) bool {
			ok = fn(k)
			return ok
		})
		return ok
	}
	defer clear(a.idx)
	ok := true
	first := o.firstPane(w)
	for pi := range o.paneRange(first, o.panesPerWindow) {
		if !ok {
			break
		}
		a.viewPanes(pi, func(k K, _ *ACC) bool {
			if _, seen := a.idx[k]; !seen {
				a.idx[k] = 0
				ok = fn(k)
			}
			return ok
		})
	}
	return ok
}

// alignedWindows returns the windows that have timers, each once.
func (o *Operator[K, IN, ACC, OUT]) alignedWindows() []window.Window {
	var ws []window.Window
	seen := make(map[window.Window]bool)
	o.al.timers.Range(func(t timers.Timer[none]) bool {
		if !seen[t.Window] {
			seen[t.Window] = true
			ws = append(ws, t.Window)
		}
		return true
	})
	return ws
}

// rangeAlignedTimers calls fn for every timer the operator would hold with
// per-key timers (snapshots): each window timer once per key of the
// window.
func (o *Operator[K, IN, ACC, OUT]) rangeAlignedTimers(fn func(t timers.Timer[K]) bool) {
	o.al.timers.Range(func(t timers.Timer[none]) bool {
		return o.alignedKeys(t.Window, func(k K) bool {
			return fn(timers.Timer[K]{TS: t.TS, Key: k, Window: t.Window})
		})
	})
}

// rangeAlignedEntries calls fn for the entries that sliding windows would
// hold with per-key timers but do not in window-major mode: one per key
// with contents in a window that is not cleared yet and has no entry.
func (o *Operator[K, IN, ACC, OUT]) rangeAlignedEntries(fn func(k K, w window.Window, e *entry[ACC]) bool) {
	if !o.paneMode {
		return
	}
	synth := &entry[ACC]{has: true}
	for _, w := range o.alignedWindows() {
		ok := o.alignedKeys(w, func(k K) bool {
			if _, has := o.entries.Get(k, w); has {
				return true // (Get: a snapshot changes nothing)
			}
			return fn(k, w, synth)
		})
		if !ok {
			return
		}
	}
}

// alignedSize returns the (key, window) pairs and the per-key timers that
// the window-major state stands for. Sliding windows are estimated: a
// window counts the keys of its largest pane (or of its entries). It is
// called after every batch, so it walks only the window timers.
func (o *Operator[K, IN, ACC, OUT]) alignedSize() (windows, nTimers int64) {
	a := o.al
	a.timers.Range(func(t timers.Timer[none]) bool {
		w := t.Window
		n := a.entries.NamespaceLen(w)
		if o.paneMode {
			first := o.firstPane(w)
			for pi := range o.paneRange(first, o.panesPerWindow) {
				n = max(n, a.panes.NamespaceLen(pi))
			}
		}
		nTimers += int64(n)
		// Each window once: at its cleanup timer, which every window not
		// yet cleared has unless it never ends.
		if c := o.cleanupTime(w); t.TS == c || c == etime.MaxTime {
			windows += int64(n)
		}
		return true
	})
	if !o.paneMode {
		windows = int64(o.entries.Len())
	}
	return windows, nTimers
}
