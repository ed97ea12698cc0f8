// Package winop is the window operator: Flink's WindowOperator rule for rule
// (semantics sections B to G) plus weir's additions (W1-W9). It is generic
// over the key, the input, the window contents (an accumulator or a list)
// and the output, and it is driven by its owner (a runtime subtask or the
// deterministic executor) through ProcessElement, AdvanceWatermark and
// AdvanceProcessingTime. It is not safe for concurrent use.
package winop

import (
	"errors"
	"fmt"
	"iter"
	"reflect"
	"slices"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/hist"
	"github.com/weirstream/weir/internal/timers"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/trigger"
	"github.com/weirstream/weir/window"
)

// Output receives what the operator emits. Calls happen on the operator's
// goroutine; a LateRecord's Windows slice belongs to the receiver.
type Output[K comparable, IN, OUT any] interface {
	Result(r window.Result[K, OUT])
	Late(r window.LateRecord[K, IN])
}

// FireContext is what a window function sees when a window fires
// (window.FireContext).
type FireContext[K comparable, OUT any] = window.FireContext[K, OUT]

// WindowFunc turns the window contents into results; it is called only on
// non-empty contents (E2) and must not keep acc.
type WindowFunc[K comparable, ACC, OUT any] func(ctx *FireContext[K, OUT], acc *ACC)

// EvictFunc removes elements from list contents before (before=true) or
// after the window function runs (E5).
type EvictFunc[ACC any] func(acc *ACC, w window.Window, before bool, wm etime.Time)

// Config configures an Operator.
type Config[K comparable, IN, ACC, OUT any] struct {
	Assigner window.Assigner
	// Trigger replaces the assigner's default trigger when set (D3).
	Trigger  trigger.Trigger
	Lateness etime.Duration
	Contents Contents[IN, ACC]
	Func     WindowFunc[K, ACC, OUT]
	// Evict, when set, makes this an evicting window operator (E5); it
	// requires list contents.
	Evict EvictFunc[ACC]
	// KeyEncoder gives the canonical key encoding that orders timers with
	// equal timestamps (W5).
	KeyEncoder timers.KeyEncoder[K]
	// LateOutput routes too-late records to Output.Late; without it they are
	// dropped and counted (B4).
	LateOutput bool
	// PartialOutput routes partial misses to Output.Late (W7).
	PartialOutput bool
	// LateFiringInterval, when > 0, throttles late firings (W11): a late
	// element within the allowed lateness is added at once, but its
	// window fires at most once per this much processing time, and a
	// firing still pending at the window's cleanup time is emitted then.
	LateFiringInterval etime.Duration
	// Promised, when set, gives the watermark an element's channel's
	// out-of-orderness bound promises at its arrival, for
	// Counters.OnTimeTrailing.
	Promised func(IN) etime.Time
	// Bundled, when set, says whether an element is a bundle of records
	// (a two-phase window's pre-aggregation: their accumulator, which
	// Contents.Add merges), how many records it stands for, and how many
	// of them Promised would count as OnTimeTrailing. The caller passes a
	// bundle as one element only when OnTime says its windows are all on
	// time; otherwise it passes the bundle's records one by one. The
	// counters then count the records, not the bundle.
	Bundled func(IN) (n, trailing int64, ok bool)
	// Backend holds the operator's keyed state.
	Backend state.Backend
	// PerKeyTimers turns window-major firing off (differential tests of
	// the two paths).
	PerKeyTimers bool
	// Now reads processing time, for processing-time assigners and
	// triggers; nil means "the last AdvanceProcessingTime".
	Now func() etime.Time
	// Gap, with a session assigner, gives each element its own session gap
	// (dynamic-gap sessions, A6); a result <= 0 keeps the assigner's gap.
	Gap func(IN) etime.Duration
	// KeyCodec and AccCodec encode keys and window contents for
	// snapshots; KeyGroup maps a key to its key group, so that a restore
	// takes only the key groups of its subtask. Snapshot and Restore need
	// all three.
	KeyCodec state.Codec[K]
	AccCodec state.Codec[ACC]
	KeyGroup func(K) state.KeyGroup
	// Fingerprint, when set, skips unchanged results (W20): an early or
	// late firing whose results have the fingerprints, in order, of the
	// window's last firing that emitted emits nothing, takes no pane index
	// and counts as Unchanged. On-time firings always emit. The
	// fingerprint must depend on the result's value alone and be the same
	// in every process (it is checkpointed). With it, a firing's results
	// are held until the window function (and an evictor's after step)
	// returns, then passed on: a value given to FireContext.Emit must not
	// change until then (the window function must not reuse one buffer
	// for two results of a firing).
	Fingerprint func(OUT) uint64
}

// Counters are the operator's exact record and firing counts (W4, W7, W8).
type Counters struct {
	RecordsIn         int64 // elements processed
	Accepted          int64 // added to at least one window
	AcceptedLate      int64 // accepted, and late (B2) for a window it was added to: allowed lateness at work
	LateSideOutput    int64 // late for every window, sent to the late output
	LateDropped       int64 // late for every window, dropped
	NoTimestamp       int64 // refused by the assigner (MIN timestamp, A5)
	WindowMisses      int64 // window assignments missed by accepted records (W7)
	PartialSideOutput int64 // accepted records sent to the late output for missed windows
	Retractions       int64 // retract lines (W8)
	FiredEarly        int64
	FiredOnTime       int64
	FiredLate         int64
	// OnTimeTrailing: accepted on time (not late for any window it was
	// added to), but late for one of them under the watermark its
	// channel's bound promised at its arrival (Config.Promised): records
	// more than the bound out of order, on time only because the
	// watermark trailed.
	OnTimeTrailing int64
	// Unchanged counts early and late firings skipped because their
	// results equal the window's last emitted ones (Config.Fingerprint,
	// W20).
	Unchanged int64
}

// Add adds o's counts to c.
func (c *Counters) Add(o Counters) {
	dst, src := c.fields(), o.fields()
	for i := range dst {
		*dst[i] += *src[i]
	}
}

// ErrNonMergeableTrigger is returned when a merging assigner gets a trigger
// that cannot merge (D3).
var ErrNonMergeableTrigger = errors.New("weir: trigger cannot merge windows; session windows need a trigger whose CanMerge is true")

// ErrGlobalLateness refuses allowed lateness on the global window (W6).
var ErrGlobalLateness = errors.New("weir: the global window has no end, so allowed lateness does not apply to it; remove allowed_lateness or use a time window")

type entry[ACC any] struct {
	acc     ACC
	has     bool // contents non-empty (E2)
	slotSet uint8
	slots   [trigger.MaxSlots]int64
	panes   int64 // the next pane index (W1)
	// paneAbsent (pane mode): bit i set says the key has no pane
	// firstPane(w)+i, so a firing and the cleanup skip its lookup. Zero
	// (an entry restored from an older snapshot, or made by the
	// window-major path) knows nothing: every pane is looked up.
	paneAbsent uint64
	// lateSet: a throttled late firing (W11) is due at lateDue
	// (processing time), registered as a processing-time timer.
	lateSet bool
	lateDue etime.Time
	// emitted: this window emitted a result itself. A merge retracts it
	// (W8) and continues its pane index (W1); a merged window that has not
	// emitted yet passes neither on.
	emitted bool
	// lastSet: last is the fingerprint of the results of the window's
	// last firing that emitted (Config.Fingerprint).
	lastSet bool
	last    uint64
	// timers caches which of the window's two hot timers are registered
	// (bitEnd: the event-time timer at maxTimestamp; bitCleanup: the
	// cleanup timer), so the per-element registrations of B1 and D2 cost no
	// timer-set lookup. It may say "not registered" wrongly (the set
	// deduplicates), never "registered" wrongly.
	timers uint8
}

const (
	bitEnd uint8 = 1 << iota
	bitCleanup
)

type none struct{}

// Operator is the window operator of one subtask.
type Operator[K comparable, IN, ACC, OUT any] struct {
	a        window.Assigner
	trig     trigger.Trigger
	lateness etime.Duration
	contents Contents[IN, ACC]
	fn       WindowFunc[K, ACC, OUT]
	evict    EvictFunc[ACC]
	lateOut  bool
	partOut  bool
	out      Output[K, IN, OUT]
	// lateEvery is Config.LateFiringInterval (0: late firings at once).
	lateEvery etime.Duration
	// promised is Config.Promised, nil for processing-time windows.
	promised func(IN) etime.Time
	// bundled is Config.Bundled.
	bundled func(IN) (n, trailing int64, ok bool)

	entries state.Value[K, window.Window, entry[ACC]]
	sets    state.Value[K, none, []window.Window]
	panes   state.Value[K, int64, ACC]
	// Pane mode (sliding windows): each element updates the pane of
	// paneSize that holds it; a window's contents are merged from its
	// panes when it fires. Panes are named by their index on the pane grid
	// (floor((ts - offset) / paneSize)), which is exact at both ends of the
	// time axis where window bounds saturate.
	paneMode           bool
	paneSize, paneOffs etime.Duration
	panesPerWindow     int64
	slide              etime.Duration

	evt, proc timers.Timers[K]
	wm, now   etime.Time
	// delayFrom: windows ending at or before it fired at the operator's
	// first watermark, which their firing delay would only blame for
	// the records read before it (the start of a job, or a replay), so
	// FiringDelay skips them.
	delayFrom etime.Time
	clock     func() etime.Time
	sample    etime.Time // the clock at the start of the batch
	sampled   bool       // SampleClock is in use
	// firing is set while a watermark or processing time fires its
	// timers; fired is the processing time those firings read (firedAt
	// set once read): one clock reading per batch of firings, not two
	// per window and key (a reading costs more than a firing here).
	firing, firedAt bool
	fired           etime.Time
	gap             func(IN) etime.Duration

	// Hot-path facts cached at construction.
	eventTime     bool
	procTime      bool // windows are assigned on processing time
	trigEventTime bool // the trigger is the built-in EventTime
	tumbleSize    etime.Duration
	tumbleOffs    etime.Duration

	keyCodec state.Codec[K]
	accCodec state.Codec[ACC]
	keyGroup func(K) state.KeyGroup
	lastSnap int // the size of the last snapshot
	touch    toucher
	sizes    [3]sizeEstimate // of entries, sets and panes (in memory)
	// fresh: the element being processed created its window, which
	// therefore has no timers yet.
	fresh    bool
	evicters []func()

	c    Counters
	h    Hists
	tctx trigCtx[K, IN, ACC, OUT]
	fctx FireContext[K, OUT]
	// fingerprint is Config.Fingerprint; with it, a firing's results go
	// to held (through hctx) until the firing is known to have changed.
	fingerprint func(OUT) uint64
	hctx        FireContext[K, OUT]
	held        []window.Result[K, OUT]
	wins        []window.Window
	missed      []window.Window
	live        []window.Window // the windows not late, in window-major mode
	// al is the window-major state (aligned.go), nil when per-key timers
	// are in use.
	al      *alignedState[K, ACC]
	scratch ACC
	absorb  []absorbed[ACC]
	// lazy: session windows with the built-in event-time trigger move
	// their timers lazily (resolveStale); newWin: the element being
	// processed made a new session window (not a merge).
	lazy, newWin bool
	// excess counts the timers lazy sessions hold beyond the eager
	// timers of semantics F4 (stale timers not moved yet, several that
	// will move to one window), so state sizes report F4's count.
	excess int
	// mergedE is the merged window's entry after a merge, valid until the
	// next state access.
	mergedE *entry[ACC]
	// spareSets keeps the backing arrays of emptied merging sets for reuse.
	spareSets [][]window.Window
}

type absorbed[ACC any] struct {
	w  window.Window
	e  entry[ACC]
	ok bool
}

// Spec is the part of a window operator's configuration that can be wrong
// independently of types: what Validate checks.
type Spec struct {
	Assigner window.Assigner
	Trigger  trigger.Trigger // nil: the assigner's default
	Lateness etime.Duration
	// DynamicGap says a per-element session gap is configured.
	DynamicGap bool
	// LateFiringInterval is Config.LateFiringInterval.
	LateFiringInterval etime.Duration
	// SkipUnchanged says Config.Fingerprint is set.
	SkipUnchanged bool
}

// Validate refuses invalid combinations (D3, W6, B5) and returns the
// trigger in effect. The root API calls it when a job is built, New when an
// operator is created.
func Validate(s Spec) (trigger.Trigger, error) {
	switch {
	case s.Assigner == nil:
		return nil, errors.New("weir: window operator needs a window assigner")
	case s.Lateness < 0:
		return nil, fmt.Errorf("weir: allowed lateness must be >= 0, got %dms", s.Lateness)
	case s.Lateness > 0 && s.Assigner.Kind() == window.KindGlobal:
		return nil, ErrGlobalLateness
	case s.DynamicGap && s.Assigner.Kind() != window.KindSession:
		return nil, errors.New("weir: a per-element session gap needs session windows")
	}
	trig := s.Trigger
	if trig == nil {
		trig = trigger.Default(s.Assigner)
	}
	if s.Assigner.Merging() && !trig.CanMerge() {
		return nil, ErrNonMergeableTrigger
	}
	switch d := s.LateFiringInterval; {
	case d < 0:
		return nil, fmt.Errorf("weir: the late-firing interval must be >= 0, got %dms", d)
	case d > 0 && s.Assigner.Merging():
		return nil, errors.New("weir: the late-firing throttle does not support session windows yet; remove it or use time windows")
	case d > 0 && !trigger.NeverPurges(trig):
		return nil, errors.New("weir: the late-firing throttle needs a built-in trigger that never purges (a deferred firing would find purged contents)")
	}
	if s.SkipUnchanged && !trigger.NeverPurges(trig) {
		return nil, errors.New("weir: skipping unchanged results needs a built-in trigger that never purges: after a purge an equal result is new contents, not the same window state; remove SkipUnchanged or the purging trigger")
	}
	return trig, nil
}

// New builds a window operator; it refuses what Validate refuses and
// incomplete configurations.
func New[K comparable, IN, ACC, OUT any](cfg Config[K, IN, ACC, OUT], out Output[K, IN, OUT]) (*Operator[K, IN, ACC, OUT], error) {
	switch {
	case cfg.Contents == nil || cfg.Func == nil:
		return nil, errors.New("weir: window operator needs a window function")
	case cfg.Backend == nil:
		return nil, errors.New("weir: window operator needs a state backend")
	case cfg.KeyEncoder == nil:
		return nil, errors.New("weir: window operator needs a key encoder")
	}
	trig, err := Validate(Spec{Assigner: cfg.Assigner, Trigger: cfg.Trigger, Lateness: cfg.Lateness, DynamicGap: cfg.Gap != nil,
		LateFiringInterval: cfg.LateFiringInterval, SkipUnchanged: cfg.Fingerprint != nil})
	if err != nil {
		return nil, err
	}
	o := &Operator[K, IN, ACC, OUT]{
		a: cfg.Assigner, trig: trig, lateness: cfg.Lateness, contents: cfg.Contents, fn: cfg.Func,
		evict: cfg.Evict, lateOut: cfg.LateOutput, partOut: cfg.PartialOutput, out: out, lateEvery: cfg.LateFiringInterval,

		wm: etime.MinTime, now: etime.MinTime, delayFrom: etime.MinTime, clock: cfg.Now, gap: cfg.Gap, bundled: cfg.Bundled,
		keyCodec: cfg.KeyCodec, accCodec: cfg.AccCodec, keyGroup: cfg.KeyGroup,
		touch: newToucher[K, ACC](),
	}
	if kb, ok := cfg.Backend.(state.KVBackend); ok {
		if !o.hasCodecs() {
			return nil, errors.New("weir: a KV state backend needs key and accumulator codecs and a key-group function")
		}
		o.evt = timers.NewKV(kb.KV(), tagKVEventTimers, cfg.KeyEncoder, cfg.KeyCodec, cfg.KeyGroup)
		o.proc = timers.NewKV(kb.KV(), tagKVProcTimers, cfg.KeyEncoder, cfg.KeyCodec, cfg.KeyGroup)
	} else {
		o.evt, o.proc = timers.New(cfg.KeyEncoder), timers.New(cfg.KeyEncoder)
	}
	// Pane mode needs contents whose merge is order-insensitive: a list
	// must keep arrival order (E1), so lists are stored per window.
	// It also needs accumulators that hold no pointers: a window's result
	// is merged from its panes, and a merge that shares memory with a pane
	// (a map, a slice) would let one window's firing change another's
	// pane. And the panes per window must be few, or every firing walks
	// thousands of them. Processing-time windows are assigned by arrival,
	// not by timestamp, so they are stored per window too.
	_, isList := any(cfg.Contents).(ListContents[IN])
	if size, slide, offset, ok := window.SlidingGeometry(cfg.Assigner); ok && !isList && cfg.Evict == nil &&
		trigger.NeverPurges(trig) && cfg.Assigner.IsEventTime() && !hasPointers(reflect.TypeFor[ACC]()) &&
		size/window.PaneSize(size, slide) <= 4*(size/slide+1) {
		o.paneMode = true
		o.paneSize = window.PaneSize(size, slide)
		o.paneOffs = offset
		o.slide = slide
		o.panesPerWindow = int64(size / o.paneSize)
	}
	o.eventTime = cfg.Assigner.IsEventTime()
	if o.eventTime {
		o.promised = cfg.Promised
	}
	o.procTime = cfg.Assigner.ProcessingTime()
	o.trigEventTime = trigger.IsEventTime(trig)
	if size, offs, ok := window.TumblingGeometry(cfg.Assigner); ok {
		o.tumbleSize, o.tumbleOffs = size, offs
	}
	// Session windows belong to one key each: their entries are stored
	// key-major, not a map of keys per window. Window-major firing needs
	// its values namespace-major.
	merging := cfg.Assigner.Merging()
	aligned := !cfg.PerKeyTimers && o.alignable(cfg.Evict != nil, merging)
	if _, kv := cfg.Backend.(state.KVBackend); merging && !kv {
		// In memory, a key's merging set and its sessions' contents share
		// one slot: a merge looks the key up once.
		o.entries, o.sets = state.NewKeyedPair[K, window.Window, entry[ACC], none, []window.Window](cfg.Backend, "window-contents")
	} else {
		o.entries = newValue[K, window.Window, entry[ACC]](o, cfg.Backend, "window-contents", tagKVEntries, windowCodec{}, entryCodec[ACC]{cfg.AccCodec}, aligned)
		if merging {
			o.sets = newValue[K, none, []window.Window](o, cfg.Backend, "merging-windows", tagKVSets, noneCodec{}, windowsCodec{}, false)
		}
	}
	if o.paneMode {
		o.panes = newValue[K, int64, ACC](o, cfg.Backend, "sliding-panes", tagKVPanes, state.CodecFor[int64](), cfg.AccCodec, aligned)
	}
	o.tctx.o = o
	o.fctx = window.NewFireContext(out.Result)
	if cfg.Fingerprint != nil {
		o.fingerprint = cfg.Fingerprint
		o.hctx = window.NewFireContext(func(r window.Result[K, OUT]) { o.held = append(o.held, r) })
	}
	cfg.Contents.Reset(&o.scratch)
	if aligned {
		o.initAligned(cfg.KeyEncoder)
	}
	o.lazy = merging && o.trigEventTime && o.eventTime
	return o, nil
}

// hasPointers reports whether values of t can share memory when copied.
func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.Interface, reflect.UnsafePointer:
		return true
	case reflect.Array:
		return t.Len() > 0 && hasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}

// Counters returns a copy of the operator's counters.
func (o *Operator[K, IN, ACC, OUT]) Counters() Counters { return o.c }

// Hists are an operator's distributions for metrics; unlike Counters they
// are not part of checkpoints (a restore starts them empty).
type Hists struct {
	// Lateness: watermark minus timestamp, in seconds, of each record
	// behind the watermark (accepted within the lateness, side output or
	// dropped); on-time records are not observed.
	Lateness hist.H
	// FiringDelay: processing time minus window end, in seconds, of each
	// on-time firing of an event-time window (how long after its end, by
	// the clock, a window's result came out), except the windows the
	// operator's first watermark fires: they ended before it had one, so
	// their delay is the age of the records read before it, not a
	// firing backlog.
	FiringDelay hist.H
}

// Hists returns the operator's distributions so far.
func (o *Operator[K, IN, ACC, OUT]) Hists() Hists { return o.h }

func (o *Operator[K, IN, ACC, OUT]) cleanupTime(w window.Window) etime.Time {
	return window.CleanupTime(o.eventTime, w, o.lateness)
}

func (o *Operator[K, IN, ACC, OUT]) isWindowLate(w window.Window) bool {
	return o.eventTime && o.cleanupTime(w) <= o.wm
}

// registerCleanup registers w's cleanup timer (B1 step 6, B3); none when
// the cleanup time saturated to MaxTime. It goes through the trigger
// context so the entry's timer cache is used and kept.
func (o *Operator[K, IN, ACC, OUT]) registerCleanup(key K, w window.Window, e *entry[ACC]) {
	if e != nil && e.timers&bitCleanup != 0 {
		return
	}
	if c := o.cleanupTime(w); c != etime.MaxTime {
		o.tctx.set(key, w, e)
		o.tctx.register(c, !o.eventTime)
	}
}

// timerBits tells which cached bits a timer at t of w stands for.
func (o *Operator[K, IN, ACC, OUT]) timerBits(t etime.Time, w window.Window, proc bool) uint8 {
	var b uint8
	if !proc && t == w.MaxTimestamp() {
		b |= bitEnd
	}
	if o.eventTime != proc && t == o.cleanupTime(w) {
		b |= bitCleanup
	}
	return b
}

// deleteCleanup deletes w's cleanup timer (F4: windows absorbed by a
// merge).
func (o *Operator[K, IN, ACC, OUT]) deleteCleanup(key K, w window.Window) {
	if c := o.cleanupTime(w); c != etime.MaxTime {
		o.tctx.set(key, w, nil)
		o.tctx.delete(c, !o.eventTime)
	}
}

// ProcessElement runs one keyed element through the operator (B1-B4, F4).
// It returns window.ErrNoTimestamp for a record without a timestamp, which
// the caller routes to dead letters; it never panics on input.
func (o *Operator[K, IN, ACC, OUT]) ProcessElement(key K, v IN, ts etime.Time) error {
	o.evictCaches()
	o.c.RecordsIn++
	at := ts
	if o.procTime {
		at = o.processingTime()
	}
	if o.paneMode && o.trigEventTime && at != etime.MinTime {
		// The fast path of sliding windows: an element of a pane that
		// exists, none of whose windows has ended yet, only updates the
		// pane. Those windows got their entries, end and cleanup timers
		// from the pane's first element, and none was late then (the
		// watermark only grows), so the loop below would change nothing.
		if end := window.Start(at, o.paneOffs, o.paneSize).Add(o.paneSize); end-1 > o.wm {
			if p := o.panes.Ref(key, o.paneIndex(at), false); p != nil {
				o.contents.Add(p, v, ts)
				o.acceptOnTime(v, func() etime.Time {
					return window.SlidingFirstEnd(at, etime.Duration(o.panesPerWindow)*o.paneSize, o.slide, o.paneOffs)
				})
				return nil
			}
		}
	}
	if o.al != nil && o.tumbleSize > 0 && at != etime.MinTime {
		// The fast path of window-major tumbling windows: an element of
		// a window that has not ended is neither late nor missed (its
		// cleanup time is at or after its end), so the loop below would
		// only hand it to processAligned and accept it on time.
		if w := window.Aligned(at, o.tumbleOffs, o.tumbleSize); w.MaxTimestamp() > o.wm {
			o.live = append(o.live[:0], w)
			o.processAligned(key, v, ts, o.live)
			o.acceptOnTime(v, w.MaxTimestamp)
			return nil
		}
	}
	var wins []window.Window
	if o.tumbleSize > 0 && at != etime.MinTime {
		wins = append(o.wins[:0], window.Aligned(at, o.tumbleOffs, o.tumbleSize))
	} else {
		var err error
		wins, err = o.a.AssignWindows(at, o.wins[:0])
		if err != nil {
			o.wins = wins
			o.c.NoTimestamp++
			return err
		}
	}
	if o.gap != nil && len(wins) == 1 {
		// Dynamic-gap sessions (A6): the gap comes from the element.
		if g := o.gap(v); g > 0 {
			wins[0].End = wins[0].Start.Add(g)
		}
	}
	o.wins = wins
	o.missed = o.missed[:0]
	o.live = o.live[:0]
	skipped := true
	late := false
	addedToPane := false
	firstMT := etime.MaxTime // the earliest maxTimestamp of the windows added to
	for _, w := range wins {
		fresh := false // a new session of a key without windows
		if o.sets != nil {
			w, fresh = o.mergeWindow(key, w)
		}
		if o.isWindowLate(w) {
			if o.sets != nil {
				o.retire(key, w)
			}
			o.missed = append(o.missed, w)
			continue
		}
		skipped = false
		late = late || o.eventTime && w.MaxTimestamp() <= o.wm
		firstMT = etime.Min(firstMT, w.MaxTimestamp())
		if o.al != nil {
			o.live = append(o.live, w)
			continue
		}
		var e *entry[ACC]
		switch {
		case fresh || o.newWin:
			// A new session has no entry: skip the lookup (a miss on
			// disk).
			e = o.entries.Create(key, w)
		case o.mergedE != nil:
			e = o.mergedE // the merge's entry, looked up already
		case o.paneMode:
			if e = o.entries.Ref(key, w, false); e == nil {
				e = o.entries.Create(key, w)
				e.paneAbsent = ^uint64(0)
			}
		default:
			e = o.entries.Ref(key, w, true)
		}
		o.fresh = fresh
		if o.paneMode {
			if !addedToPane {
				o.addToPane(key, v, ts)
				addedToPane = true
			}
			o.notePane(w, e, ts)
		} else {
			if !e.has {
				o.contents.Reset(&e.acc)
			}
			o.contents.Add(&e.acc, v, ts)
		}
		e.has = true
		var res trigger.Result
		if o.trigEventTime {
			// The default trigger inlined (D2): fire when the window has
			// ended, else make sure its end timer is registered.
			if mt := w.MaxTimestamp(); mt <= o.wm {
				res = trigger.Fire
			} else if e.timers&bitEnd == 0 && (!o.lazy || o.newWin) {
				o.tctx.set(key, w, e)
				o.tctx.RegisterEventTimeTimer(mt)
			}
		} else {
			o.tctx.set(key, w, e)
			res = o.trig.OnElement(&o.tctx, ts, w)
			e = o.tctx.e
		}
		if res.IsFire() {
			o.fireOnElement(key, w, e)
		}
		if res.IsPurge() {
			o.purge(e)
		}
		if !o.lazy || o.newWin {
			o.registerCleanup(key, w, e)
		}
		o.fresh = false
	}
	if len(o.live) > 0 {
		o.processAligned(key, v, ts, o.live)
	}
	if (skipped || late) && o.eventTime && at <= o.wm {
		o.h.Lateness.Observe(float64(o.wm-at) / 1000)
	}
	if skipped {
		if o.lateOut {
			o.c.LateSideOutput++
			o.emitLate(key, v, ts, o.wins, window.Expired)
		} else {
			o.c.LateDropped++
		}
		return nil
	}
	if late {
		o.c.Accepted++
		o.c.AcceptedLate++
	} else {
		o.acceptOnTime(v, func() etime.Time { return firstMT })
	}
	if len(o.missed) > 0 {
		o.c.WindowMisses += int64(len(o.missed))
		if o.partOut {
			o.c.PartialSideOutput++
			o.emitLate(key, v, ts, o.missed, window.ExpiredPartial)
		}
	}
	return nil
}

// emitLate sends a record that missed windows to the late output with the
// W3 metadata; the receiver owns the windows slice.
func (o *Operator[K, IN, ACC, OUT]) emitLate(key K, v IN, ts etime.Time, missed []window.Window, why window.Miss) {
	o.out.Late(window.LateRecord[K, IN]{Record: v, Timestamp: ts, Key: key, Windows: slices.Clone(missed),
		Watermark: o.wm, Lateness: o.wm.Sub(ts), Reason: why})
}

func (o *Operator[K, IN, ACC, OUT]) addToPane(key K, v IN, ts etime.Time) {
	pi := o.paneIndex(ts)
	p := o.panes.Ref(key, pi, false)
	if p == nil {
		p = o.panes.Ref(key, pi, true)
		o.contents.Reset(p)
	}
	o.contents.Add(p, v, ts)
}

// notePane clears the bit of ts's pane in (key, w)'s entry e: the pane
// may exist now. A pane outside the mask (more than 64 panes per window,
// or a window whose start saturated) makes the mask know nothing.
func (o *Operator[K, IN, ACC, OUT]) notePane(w window.Window, e *entry[ACC], ts etime.Time) {
	if e.paneAbsent == 0 {
		return
	}
	if i := o.paneIndex(ts) - o.firstPane(w); i >= 0 && i < 64 {
		e.paneAbsent &^= 1 << i
	} else {
		e.paneAbsent = 0
	}
}

// paneMaybe reports whether a key whose entry of a window with first pane
// first has the mask absent (entry.paneAbsent) may have pane pi.
func paneMaybe(first int64, absent uint64, pi int64) bool {
	i := pi - first
	return absent == 0 || i < 0 || i >= 64 || absent&(1<<i) == 0
}

// processingTime is the current processing time: the clock when the
// operator has one (or its reading at the start of the batch, see
// SampleClock), else the last AdvanceProcessingTime.
func (o *Operator[K, IN, ACC, OUT]) processingTime() etime.Time {
	if o.sampled {
		return etime.Max(o.now, o.sample)
	}
	if o.clock != nil {
		return etime.Max(o.now, o.clock())
	}
	return o.now
}

// SampleClock reads the processing-time clock once, for the records of a
// batch that are assigned processing-time windows: a clock reading costs
// more than the rest of a record's work on some machines, and records of
// one batch arrive within microseconds of each other. From the first call
// on, processing time advances with each batch and with
// AdvanceProcessingTime.
func (o *Operator[K, IN, ACC, OUT]) SampleClock() {
	if o.procTime && o.clock != nil {
		o.sample, o.sampled = o.clock(), true
	}
}

// paneIndex is floor((ts - paneOffs) / paneSize), without overflow.
func (o *Operator[K, IN, ACC, OUT]) paneIndex(ts etime.Time) int64 {
	ps := int64(o.paneSize)
	a, ra := floorDivMod(int64(ts), ps)
	b, rb := floorDivMod(int64(o.paneOffs), ps)
	if ra < rb {
		return a - b - 1
	}
	return a - b
}

func floorDivMod(x, y int64) (q, r int64) {
	q, r = x/y, x%y
	if r < 0 {
		q, r = q-1, r+y
	}
	return q, r
}

// firstPane is the index of w's first pane. A window's maxTimestamp is
// exact unless its end saturated at MaxTime; then its start is exact. A
// first pane below the int64 range (a window whose start saturated at
// MinTime, with 1 ms panes) is the start's pane: no record lies below it.
func (o *Operator[K, IN, ACC, OUT]) firstPane(w window.Window) int64 {
	if w.End != etime.MaxTime {
		last := o.paneIndex(w.MaxTimestamp())
		if first := last - o.panesPerWindow + 1; first <= last {
			return first
		}
	}
	return o.paneIndex(w.Start)
}

// ownPanes yields the panes whose last window is w: from w's first pane to
// the one before the next window's first pane. Windows whose start
// saturated at MinTime share their first pane, so only the last of them
// owns panes.
func (o *Operator[K, IN, ACC, OUT]) ownPanes(w window.Window) iter.Seq[int64] {
	first, step := o.firstPane(w), int64(o.slide/o.paneSize)
	if w.End == etime.MaxTime {
		return o.paneRange(first, step) // starts are exact here
	}
	// The next window's first pane: last + step - panesPerWindow + 1,
	// which may lie below the int64 range.
	last := o.paneIndex(w.MaxTimestamp())
	next := last - (o.panesPerWindow - step) + 1
	if next > last+1 || next <= first {
		return o.paneRange(first, 0)
	}
	return o.paneRange(first, next-first)
}

// paneRange yields the n pane indices from first on, stopping at the end
// of the int64 range (a window whose end saturated at MaxTime).
func (o *Operator[K, IN, ACC, OUT]) paneRange(first, n int64) iter.Seq[int64] {
	return func(yield func(int64) bool) {
		for i := range n {
			pi := first + i
			if pi < first || !yield(pi) {
				return
			}
		}
	}
}

// elementFiring classifies a firing caused by an element or a merge (W2).
func (o *Operator[K, IN, ACC, OUT]) elementFiring(w window.Window) window.Firing {
	t := o.wm
	if o.procTime {
		t = o.processingTime()
	}
	if t < w.MaxTimestamp() {
		return window.Early
	}
	return window.Late
}

// timerFiring classifies a firing caused by a timer at t (W2, W9).
func timerFiring(t etime.Time, w window.Window) window.Firing {
	switch m := w.MaxTimestamp(); {
	case t < m:
		return window.Early
	case t == m:
		return window.OnTime
	}
	return window.Late
}

func (o *Operator[K, IN, ACC, OUT]) purge(e *entry[ACC]) {
	if e == nil {
		return
	}
	e.has = false
	if !o.paneMode {
		o.contents.Reset(&e.acc)
	}
}

// fire calls the window function on the window's current contents (E1, E2).
func (o *Operator[K, IN, ACC, OUT]) fire(key K, w window.Window, e *entry[ACC], kind window.Firing) {
	if e == nil || !e.has {
		return
	}
	acc := &e.acc
	if o.paneMode {
		acc = &o.scratch
		o.contents.Reset(acc)
		first := o.firstPane(w)
		for pi := range o.paneRange(first, o.panesPerWindow) {
			if !paneMaybe(first, e.paneAbsent, pi) {
				continue
			}
			if p := o.panes.Ref(key, pi, false); p != nil {
				o.contents.Merge(acc, p)
			}
		}
	}
	o.emitFiring(key, w, e, acc, kind)
}

// emitFiring calls the window function on acc, the contents of (key, w),
// whose entry is e, and counts the firing if it emitted.
func (o *Operator[K, IN, ACC, OUT]) emitFiring(key K, w window.Window, e *entry[ACC], acc *ACC, kind window.Firing) {
	if o.evict != nil {
		o.evict(acc, w, true, o.wm)
	}
	f := &o.fctx
	if o.fingerprint != nil {
		f = &o.hctx
	}
	f.Begin(key, w, kind, e.panes, o.wm, o.firingTime())
	o.fn(f, acc)
	if o.evict != nil {
		o.evict(acc, w, false, o.wm)
	}
	if f.Emitted() == 0 {
		return
	}
	if o.fingerprint != nil && !o.emitChanged(e, kind) {
		o.c.Unchanged++
		return
	}
	if o.fingerprint == nil {
		// A fingerprint restored from a run that skipped unchanged
		// results is not this firing's: a later run that skips again
		// must not compare with it.
		e.lastSet = false
	}
	e.panes++
	e.emitted = true
	switch kind {
	case window.Early:
		o.c.FiredEarly++
	case window.OnTime:
		o.c.FiredOnTime++
		if o.eventTime && w.MaxTimestamp() > o.delayFrom {
			o.h.FiringDelay.Observe(float64(o.firingTime()-w.End) / 1000)
		}
	default:
		o.c.FiredLate++
	}
}

// emitChanged passes a firing's held results on, unless it is an early or
// late firing whose results have the fingerprint of the window's last
// emitted ones (W20); it records the fingerprint of what it passed on and
// reports whether it passed anything.
func (o *Operator[K, IN, ACC, OUT]) emitChanged(e *entry[ACC], kind window.Firing) bool {
	defer func() {
		clear(o.held)
		o.held = o.held[:0]
	}()
	// FNV-1a over the results' fingerprints, in order.
	fp := uint64(14695981039346656037)
	for _, r := range o.held {
		fp = (fp ^ o.fingerprint(r.Value)) * 1099511628211
	}
	if kind != window.OnTime && e.lastSet && e.last == fp {
		return false
	}
	e.lastSet, e.last = true, fp
	for _, r := range o.held {
		o.out.Result(r)
	}
	return true
}

// AdvanceWatermark sets the operator watermark and fires every event-time
// timer at or below it in order (C2, C3, W5). Watermarks that do not
// increase are ignored (C6).
func (o *Operator[K, IN, ACC, OUT]) AdvanceWatermark(wm etime.Time) {
	o.evictCaches()
	if wm <= o.wm {
		return
	}
	if o.wm == etime.MinTime {
		o.delayFrom = wm
	}
	// Processing-time timers already due (registered at or before the
	// current processing time: a processing-time trigger of windows that
	// ended long ago, in a replay) fire first, as Flink fires a timer
	// registered in the past at once: the event-time timers below may
	// clean their windows up, which would lose what they hold unfired.
	if next, ok := o.proc.Next(); ok {
		if now := o.processingTime(); next <= now {
			o.AdvanceProcessingTime(now)
		}
	}
	o.wm = wm
	o.firing, o.firedAt = true, false
	defer func() { o.firing = false }()
	if o.al != nil {
		o.runAligned(wm)
		return
	}
	o.runTimers(o.evt, wm, false)
}

// firingTime is the processing time a firing reads: while a watermark
// or processing time fires its timers, the one reading of the batch.
func (o *Operator[K, IN, ACC, OUT]) firingTime() etime.Time {
	if !o.firing {
		return o.processingTime()
	}
	if !o.firedAt {
		o.fired, o.firedAt = o.processingTime(), true
	}
	return o.fired
}

// AdvanceProcessingTime sets the operator's processing time and fires every
// processing-time timer at or below it (registered since the last call at
// a time already past, too).
func (o *Operator[K, IN, ACC, OUT]) AdvanceProcessingTime(now etime.Time) {
	o.evictCaches()
	if now < o.now {
		return
	}
	o.now = now
	o.firing, o.firedAt = true, false
	defer func() { o.firing = false }()
	o.runTimers(o.proc, now, true)
}

func (o *Operator[K, IN, ACC, OUT]) runTimers(svc timers.Timers[K], upTo etime.Time, proc bool) {
	for {
		due := svc.PopDue(upTo)
		if len(due) == 0 {
			return
		}
		if o.lazy && !proc {
			due = o.resolveStale(svc, due)
		}
		for _, t := range due {
			if !svc.Has(t) {
				continue
			}
			svc.Fired(t)
			o.onTimer(t, proc)
		}
	}
}

// eagerTimers is the number of timers a session window w in the merging
// set has with eager timers (Flink's): its end timer until the watermark
// passes it, and its cleanup timer (one timer when they coincide).
func (o *Operator[K, IN, ACC, OUT]) eagerTimers(w window.Window) int {
	n := 0
	mt, c := w.MaxTimestamp(), o.cleanupTime(w)
	if mt > o.wm {
		n++
	}
	if c != etime.MaxTime && (c != mt || mt <= o.wm) {
		n++
	}
	return n
}

// rangeEagerSessionTimers calls fn for the timers eager sessions (F4)
// would hold: per window of every merging set, its end timer until the
// watermark passes it and its cleanup timer (one timer when they are the
// same).
func (o *Operator[K, IN, ACC, OUT]) rangeEagerSessionTimers(fn func(t timers.Timer[K]) bool) {
	o.sets.Range(func(k K, _ none, ws *[]window.Window) bool {
		for _, w := range *ws {
			mt, c := w.MaxTimestamp(), o.cleanupTime(w)
			if mt > o.wm && !fn(timers.Timer[K]{TS: mt, Key: k, Window: w}) {
				return false
			}
			if c != etime.MaxTime && (c != mt || mt <= o.wm) && !fn(timers.Timer[K]{TS: c, Key: k, Window: w}) {
				return false
			}
		}
		return true
	})
}

// endPending reports whether a window being absorbed has not ended yet,
// so its end timer (or a stale one that moves to it) is pending.
func (o *Operator[K, IN, ACC, OUT]) endPending() bool {
	for i := range o.absorb {
		if o.absorb[i].w.MaxTimestamp() > o.wm {
			return true
		}
	}
	return false
}

// resolveStale moves the stale timers of due to the windows that absorbed
// their windows, for lazy sessions. With the built-in event-time trigger
// a merge would delete the absorbed windows' end and cleanup timers and
// register the merged window's: every bid that extends a session would
// move two timers. Lazy sessions register timers only for new windows and
// leave them in place through merges; when such a timer comes due, its
// window is gone from the merging set, and its timer moves to the set's
// window that covers it (whose end and cleanup time are no earlier). A
// timer moved to the timestamp being fired joins this batch, which is
// sorted again, so firings keep W5's order exactly; a window fired and
// cleared leaves its stale timers nothing to move to. Snapshots keep the
// stale timers, which a restore resolves the same way.
func (o *Operator[K, IN, ACC, OUT]) resolveStale(svc timers.Timers[K], due []timers.Timer[K]) []timers.Timer[K] {
	n := len(due)
	for i := range n {
		t := due[i]
		set, _ := o.sets.Get(t.Key, none{})
		if slices.Contains(set, t.Window) || !svc.Has(t) {
			continue
		}
		svc.Fired(t) // consumed: the firing loop skips it
		o.excess--
		w := t.Window
		j := slices.IndexFunc(set, func(s window.Window) bool { return s.Start <= w.Start && w.End <= s.End })
		if j < 0 {
			continue
		}
		s := set[j]
		var at [2]etime.Time
		k := 0
		if t.TS == w.MaxTimestamp() {
			at[k] = s.MaxTimestamp()
			k++
		}
		if t.TS == o.cleanupTime(w) {
			if c := o.cleanupTime(s); c != etime.MaxTime && (k == 0 || c != at[0]) {
				at[k] = c
				k++
			}
		}
		for _, ts := range at[:k] {
			nt := timers.Timer[K]{TS: ts, Key: t.Key, Window: s}
			if svc.Has(nt) {
				continue // registered already; at t.TS it is in this batch
			}
			svc.Register(nt)
			o.excess++
			if e := o.entries.Ref(t.Key, s, false); e != nil {
				e.timers |= o.timerBits(ts, s, false)
			}
			if ts == t.TS {
				due = append(due, nt)
			}
		}
	}
	if len(due) > n {
		due = svc.Order(due)
	}
	return due
}

// onTimer is C5 for either time domain.
func (o *Operator[K, IN, ACC, OUT]) onTimer(t timers.Timer[K], proc bool) {
	key, w := t.Key, t.Window
	if o.sets != nil {
		set, _ := o.sets.Get(key, none{})
		if !slices.Contains(set, w) {
			return // stale timer of a merged-away or retired window (C5.1, F7)
		}
	}
	e := o.entries.Ref(key, w, false)
	if e != nil {
		e.timers &^= o.timerBits(t.TS, w, proc)
	}
	if proc && o.lateTimer(t, e) {
		e = o.entries.Ref(key, w, false) // a firing may move entries
	}
	o.tctx.set(key, w, e)
	var res trigger.Result
	if proc {
		res = o.trig.OnProcessingTime(&o.tctx, t.TS, w)
	} else {
		res = o.trig.OnEventTime(&o.tctx, t.TS, w)
	}
	e = o.tctx.e
	if res.IsFire() {
		o.fire(key, w, e, timerFiring(t.TS, w))
	}
	if res.IsPurge() {
		o.purge(e)
	}
	if o.eventTime != proc && t.TS == o.cleanupTime(w) {
		// W11: the last revision reaches the sinks before the state goes,
		// unless the trigger has just fired it.
		o.flushLate(key, w, e, !res.IsFire())
		o.clearAll(key, w)
	}
}

// acceptOnTime counts element v accepted on time: one record, or a
// bundle's records (Config.Bundled). A record is also OnTimeTrailing
// when the watermark promised at its arrival would have closed its
// earliest window, whose maxTimestamp mt gives (only called then).
func (o *Operator[K, IN, ACC, OUT]) acceptOnTime(v IN, mt func() etime.Time) {
	if o.bundled != nil {
		if n, trailing, ok := o.bundled(v); ok {
			o.c.RecordsIn += n - 1
			o.c.Accepted += n
			o.c.OnTimeTrailing += trailing
			return
		}
	}
	o.c.Accepted++
	if o.promised != nil && mt() <= o.promised(v) {
		o.c.OnTimeTrailing++
	}
}

// OnTime reports whether an element at ts is on time for every window
// it belongs to (event time, windows that do not merge, each ending
// after the watermark), so that no trigger fires on it and none of its
// windows has expired: a bundle (Config.Bundled) may then be passed as
// one element. It runs on the operator's goroutine.
func (o *Operator[K, IN, ACC, OUT]) OnTime(ts etime.Time) bool {
	if !o.eventTime || o.procTime || o.sets != nil || ts == etime.MinTime {
		return false
	}
	if o.tumbleSize > 0 {
		return window.Aligned(ts, o.tumbleOffs, o.tumbleSize).MaxTimestamp() > o.wm
	}
	wins, err := o.a.AssignWindows(ts, o.wins[:0])
	o.wins = wins
	if err != nil || len(wins) == 0 {
		return false
	}
	for _, w := range wins {
		if w.MaxTimestamp() <= o.wm {
			return false
		}
	}
	return true
}

// fireOnElement fires (key, w), whose entry is e, for an element that
// made its trigger fire (W2), or, when the firing is late and late
// firings are throttled, defers it (W11). Every element firing goes
// through it, window-major or not.
func (o *Operator[K, IN, ACC, OUT]) fireOnElement(key K, w window.Window, e *entry[ACC]) {
	kind := o.elementFiring(w)
	if kind == window.Late && o.lateEvery > 0 {
		o.deferLate(key, w, e)
		return
	}
	o.fire(key, w, e, kind)
}

// flushLate is W11 at cleanup: a throttled late firing of (key, w) still
// pending is emitted (when fire is set) and its timer deleted, before the
// window's state is cleared. Every cleanup goes through it, window-major
// or not.
func (o *Operator[K, IN, ACC, OUT]) flushLate(key K, w window.Window, e *entry[ACC], fire bool) {
	if e == nil || !e.lateSet {
		return
	}
	due := e.lateDue
	e.lateSet = false
	if fire {
		o.fire(key, w, e, window.Late)
	}
	o.tctx.set(key, w, nil) // the firing may have moved e; no cached bits are at stake
	o.tctx.delete(due, true)
}

// deferLate schedules the throttled late firing of (key, w) (W11): the
// first late element registers a processing-time timer lateEvery from
// now, and later ones join it.
func (o *Operator[K, IN, ACC, OUT]) deferLate(key K, w window.Window, e *entry[ACC]) {
	if e == nil || e.lateSet {
		return
	}
	e.lateSet, e.lateDue = true, o.processingTime().Add(o.lateEvery)
	o.tctx.set(key, w, e)
	o.tctx.register(e.lateDue, true)
}

// lateTimer fires (key, w)'s throttled late firing if t is its timer
// (W11); it reports whether it was.
func (o *Operator[K, IN, ACC, OUT]) lateTimer(t timers.Timer[K], e *entry[ACC]) bool {
	if e == nil || !e.lateSet || t.TS != e.lateDue {
		return false
	}
	e.lateSet = false
	o.fire(t.Key, t.Window, e, window.Late)
	return true
}

// clearAll is cleanup (C5.3): it never emits.
func (o *Operator[K, IN, ACC, OUT]) clearAll(key K, w window.Window) {
	e := o.entries.Ref(key, w, false)
	o.tctx.set(key, w, e)
	o.trig.Clear(&o.tctx, w)
	var absent uint64 // e may move when the entry is deleted
	if e != nil {
		absent = e.paneAbsent
	}
	o.entries.Delete(key, w)
	if o.paneMode {
		// The panes whose last window is w: those before the next
		// window's first pane.
		first := o.firstPane(w)
		for pi := range o.ownPanes(w) {
			if paneMaybe(first, absent, pi) {
				o.panes.Delete(key, pi)
			}
		}
	}
	if o.sets != nil {
		o.retire(key, w)
	}
}

// retire removes w from key's merging set.
func (o *Operator[K, IN, ACC, OUT]) retire(key K, w window.Window) {
	p := o.sets.Ref(key, none{}, false)
	if p == nil {
		return
	}
	if i := slices.Index(*p, w); i >= 0 {
		*p = slices.Delete(*p, i, i+1)
	}
	if len(*p) == 0 {
		if cap(*p) <= 8 && len(o.spareSets) < 4096 {
			o.spareSets = append(o.spareSets, (*p)[:0])
		}
		o.sets.Delete(key, none{})
	}
}

// mergeWindow adds proto-window pw to key's merging set (F2-F4) and returns
// the actual window the element goes to, and whether the key had no
// windows (then the window is new and has neither an entry nor timers:
// triggers delete their timers when cleared). The set is kept sorted by
// start, and its members never touch each other.
func (o *Operator[K, IN, ACC, OUT]) mergeWindow(key K, pw window.Window) (window.Window, bool) {
	o.newWin, o.mergedE = false, nil
	p := o.sets.Ref(key, none{}, true)
	fresh := *p == nil // sets are never stored empty
	if fresh {
		if l := len(o.spareSets); l > 0 {
			*p = o.spareSets[l-1]
			o.spareSets = o.spareSets[:l-1]
		}
	}
	set := *p
	lo := 0
	for lo < len(set) && set[lo].End < pw.Start {
		lo++
	}
	hi := lo
	merged := pw
	for hi < len(set) && set[hi].Intersects(pw) {
		merged = merged.Cover(set[hi])
		hi++
	}
	switch {
	case hi == lo: // touches nothing: a new session
		o.newWin = true
		*p = slices.Insert(set, lo, pw)
		return pw, fresh
	case hi == lo+1 && merged == set[lo]: // inside an existing window (F3)
		return set[lo], false
	}
	o.absorb = o.absorb[:0]
	for _, w := range set[lo:hi] {
		e, ok := o.entries.Get(key, w)
		o.absorb = append(o.absorb, absorbed[ACC]{w: w, e: e, ok: ok})
	}
	set = slices.Delete(set, lo, hi)
	*p = slices.Insert(set, lo, merged)
	o.onMerge(key, merged)
	return merged, false
}

// onMerge is the merge callback of F4 plus weir's retractions and pane
// continuation (W1, W8).
func (o *Operator[K, IN, ACC, OUT]) onMerge(key K, merged window.Window) {
	var panes int64
	for i := range o.absorb {
		ab := &o.absorb[i]
		if !ab.ok || !ab.e.emitted {
			continue
		}
		o.c.Retractions++
		o.out.Result(window.Result[K, OUT]{Key: key, Window: ab.w, Firing: window.Retract, Pane: ab.e.panes - 1, Watermark: o.wm})
		panes = max(panes, ab.e.panes)
	}
	// merged is a new extent, in the merging set only now, so it has no
	// entry yet: Create skips the lookup (a miss on disk).
	var me *entry[ACC]
	if o.lazy {
		o.excess += o.lazyMerge(key, merged)
		me = o.entries.Create(key, merged)
		// An absorbed window whose end is still ahead brings its pending
		// end timer along (resolveStale); when all have ended, their end
		// timers have fired, and the merged window needs its own.
		if mt := merged.MaxTimestamp(); mt > o.wm && !o.endPending() {
			o.tctx.set(key, merged, me)
			o.tctx.RegisterEventTimeTimer(mt)
			o.excess++
		}
	} else {
		me = o.entries.Create(key, merged)
		o.tctx.set(key, merged, me)
		o.tctx.merging = o.absorb
		o.trig.OnMerge(&o.tctx, merged)
		o.tctx.merging = nil
		for i := range o.absorb {
			ab := &o.absorb[i]
			var ep *entry[ACC]
			if ab.ok {
				ep = &ab.e
			}
			o.tctx.set(key, ab.w, ep)
			o.tctx.detached = true
			o.trig.Clear(&o.tctx, ab.w)
			o.tctx.detached = false
			o.deleteCleanup(key, ab.w)
			if ab.ok {
				o.entries.Delete(key, ab.w)
			}
		}
		// Look the merged entry up again: the deletes above may have
		// moved it (the state.Value.Ref contract).
		me = o.entries.Ref(key, merged, true)
	}
	me.panes = max(me.panes, panes)
	for i := range o.absorb {
		ab := &o.absorb[i]
		if !ab.ok || !ab.e.has {
			continue
		}
		if !me.has {
			me.has = true
			if t, ok := o.contents.(taker[ACC]); ok {
				t.Take(&me.acc, &ab.e.acc) // the absorbed window's entry is deleted
				continue
			}
			o.contents.Reset(&me.acc)
		}
		o.contents.Merge(&me.acc, &ab.e.acc)
	}
	o.mergedE = me
}

// lazyMerge deletes the absorbed windows' entries for a lazy merge, which
// leaves their timers in place, and returns the change in excess timers:
// the absorbed windows' eager timers stay (to move to merged later), and
// merged's are among them.
func (o *Operator[K, IN, ACC, OUT]) lazyMerge(key K, merged window.Window) int {
	n := 0
	for i := range o.absorb {
		ab := &o.absorb[i]
		n += o.eagerTimers(ab.w)
		if ab.ok {
			o.entries.Delete(key, ab.w)
		}
	}
	if !o.isWindowLate(merged) {
		n -= o.eagerTimers(merged)
	}
	return n
}

// trigCtx is the trigger.Context of one (key, window); one instance is
// reused for every call.
type trigCtx[K comparable, IN, ACC, OUT any] struct {
	o   *Operator[K, IN, ACC, OUT]
	key K
	w   window.Window
	e   *entry[ACC]
	// detached: e is a copy of an absorbed window's entry; writes must not
	// create a stored entry.
	detached bool
	merging  []absorbed[ACC]
}

func (c *trigCtx[K, IN, ACC, OUT]) set(key K, w window.Window, e *entry[ACC]) {
	c.key, c.w, c.e = key, w, e
}

func (c *trigCtx[K, IN, ACC, OUT]) Watermark() etime.Time      { return c.o.wm }
func (c *trigCtx[K, IN, ACC, OUT]) ProcessingTime() etime.Time { return c.o.processingTime() }
func (c *trigCtx[K, IN, ACC, OUT]) CleanupTime() etime.Time    { return c.o.cleanupTime(c.w) }

func (c *trigCtx[K, IN, ACC, OUT]) register(t etime.Time, proc bool) {
	var bits uint8
	if c.e != nil && !c.detached {
		bits = c.o.timerBits(t, c.w, proc)
		if bits != 0 && c.e.timers&bits == bits {
			return
		}
	}
	svc := c.o.evt
	if proc {
		svc = c.o.proc
	}
	if c.o.fresh && !c.detached {
		svc.RegisterNew(timers.Timer[K]{TS: t, Key: c.key, Window: c.w})
	} else {
		svc.Register(timers.Timer[K]{TS: t, Key: c.key, Window: c.w})
	}
	if bits != 0 {
		c.e.timers |= bits
	}
}

func (c *trigCtx[K, IN, ACC, OUT]) delete(t etime.Time, proc bool) {
	svc := c.o.evt
	if proc {
		svc = c.o.proc
	}
	svc.Delete(timers.Timer[K]{TS: t, Key: c.key, Window: c.w})
	if c.e != nil {
		c.e.timers &^= c.o.timerBits(t, c.w, proc)
	}
}

func (c *trigCtx[K, IN, ACC, OUT]) RegisterEventTimeTimer(t etime.Time)      { c.register(t, false) }
func (c *trigCtx[K, IN, ACC, OUT]) DeleteEventTimeTimer(t etime.Time)        { c.delete(t, false) }
func (c *trigCtx[K, IN, ACC, OUT]) RegisterProcessingTimeTimer(t etime.Time) { c.register(t, true) }
func (c *trigCtx[K, IN, ACC, OUT]) DeleteProcessingTimeTimer(t etime.Time)   { c.delete(t, true) }

func (c *trigCtx[K, IN, ACC, OUT]) Slot(i int) (int64, bool) {
	if c.e == nil || c.e.slotSet&(1<<i) == 0 {
		return 0, false
	}
	return c.e.slots[i], true
}

func (c *trigCtx[K, IN, ACC, OUT]) SetSlot(i int, v int64) {
	if c.e == nil {
		if c.detached {
			return
		}
		c.e = c.o.entries.Ref(c.key, c.w, true)
	}
	c.e.slots[i] = v
	c.e.slotSet |= 1 << i
}

func (c *trigCtx[K, IN, ACC, OUT]) ClearSlot(i int) {
	if c.e != nil {
		c.e.slotSet &^= 1 << i
	}
}

func (c *trigCtx[K, IN, ACC, OUT]) MergedSlot(i int, dst []int64) []int64 {
	for _, ab := range c.merging {
		if ab.ok && ab.e.slotSet&(1<<i) != 0 {
			dst = append(dst, ab.e.slots[i])
		}
	}
	return dst
}
