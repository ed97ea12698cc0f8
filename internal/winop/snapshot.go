package winop

import (
	"errors"
	"fmt"
	"strings"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/timers"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/window"
)

// The operator snapshot format (docs/format/checkpoint-parts.md, "Window
// operators"): a magic and version, the watermark, processing time and
// counters, then tagged records and a final end tag. Window contents and
// timers come in runs that share a window (and a timestamp): the runs of
// an in-memory state are long, since it is stored window by window.
const snapshotMagic = "weir-winop-4"

const (
	tagEnd uint64 = iota
	tagEntries
	tagSet
	tagPane
	tagEventTimers
	tagProcTimers
	// tagTrailing: Counters.OnTimeTrailing (snapshots of older weir have
	// none).
	tagTrailing
	// tagUnchanged: Counters.Unchanged (W20), when not 0.
	tagUnchanged
)

var errNoCodec = errors.New("weir: window operator snapshot needs key and accumulator codecs and a key-group function")

// Snapshot appends the operator's whole state to dst: every window's
// contents, trigger slots and pane index, the merging sets, the sliding
// panes, both timer sets, the watermark and the counters.
func (o *Operator[K, IN, ACC, OUT]) Snapshot(dst []byte) ([]byte, error) {
	if !o.hasCodecs() {
		return dst, errNoCodec
	}
	if n := o.lastSnap + o.lastSnap/8; cap(dst)-len(dst) < n {
		// Size the buffer from the last snapshot, so a large state is not
		// copied again and again while the buffer grows.
		dst = append(make([]byte, 0, len(dst)+n), dst...)
	}
	w := state.Writer{Buf: append(dst, snapshotMagic...)}
	defer func() { o.lastSnap = len(w.Buf) - len(dst) }()
	w.Int(int64(o.wm))
	w.Int(int64(o.now))
	for _, c := range o.c.fields()[:fixedCounters] {
		w.Int(*c)
	}
	var err error
	key := func(k K) bool {
		if e := state.WriteValue(&w, o.keyCodec, k); e != nil {
			err = e
			return false
		}
		return true
	}

	// The codec as an interface once: converting it per window allocates.
	var ec state.Codec[entry[ACC]] = entryCodec[ACC]{o.accCodec}
	var wins [readAhead]windowItem[K, ACC]
	nw := 0
	writeWindows := func() bool {
		for i := range nw {
			touchKey(&o.touch, &wins[i].k)
			touchEntry(&o.touch, wins[i].e)
		}
		for i := range nw {
			touchAcc(&o.touch, wins[i].e.acc)
		}
		for i := 0; i < nw; {
			run := runLen(wins[i:nw], func(a, b *windowItem[K, ACC]) bool { return a.x == b.x })
			w.Uint(tagEntries)
			writeWindow(&w, wins[i].x)
			w.Uint(uint64(run))
			for _, it := range wins[i : i+run] {
				if !key(it.k) {
					return false
				}
				if e := state.WriteValue(&w, ec, *it.e); e != nil {
					err = e
					return false
				}
			}
			i += run
		}
		clear(wins[:nw])
		nw = 0
		return true
	}
	o.entries.Range(func(k K, x window.Window, e *entry[ACC]) bool {
		wins[nw] = windowItem[K, ACC]{k, x, e}
		nw++
		return nw < readAhead || writeWindows()
	})
	if err == nil && o.al != nil {
		o.rangeAlignedEntries(func(k K, x window.Window, e *entry[ACC]) bool {
			wins[nw] = windowItem[K, ACC]{k, x, e}
			nw++
			return nw < readAhead || writeWindows()
		})
	}
	if err == nil {
		writeWindows()
	}

	if err == nil && o.sets != nil {
		o.sets.Range(func(k K, _ none, ws *[]window.Window) bool {
			w.Uint(tagSet)
			if !key(k) {
				return false
			}
			err = state.WriteValue(&w, windowsCodec{}, *ws)
			return err == nil
		})
	}
	if err == nil && o.panes != nil {
		o.panes.Range(func(k K, idx int64, acc *ACC) bool {
			w.Uint(tagPane)
			if !key(k) {
				return false
			}
			w.Int(idx)
			if e := state.WriteValue(&w, o.accCodec, *acc); e != nil {
				err = e
				return false
			}
			return true
		})
	}

	var ts [readAhead]timers.Timer[K]
	nt := 0
	writeTimers := func(tag uint64) bool {
		for i := range nt {
			touchKey(&o.touch, &ts[i].Key)
		}
		for i := 0; i < nt; {
			run := runLen(ts[i:nt], func(a, b *timers.Timer[K]) bool { return a.TS == b.TS && a.Window == b.Window })
			w.Uint(tag)
			w.Int(int64(ts[i].TS))
			writeWindow(&w, ts[i].Window)
			w.Uint(uint64(run))
			for _, t := range ts[i : i+run] {
				if !key(t.Key) {
					return false
				}
			}
			i += run
		}
		clear(ts[:nt])
		nt = 0
		return true
	}
	for _, s := range []struct {
		tag uint64
		s   timers.Timers[K]
	}{{tagEventTimers, o.evt}, {tagProcTimers, o.proc}} {
		if err != nil {
			break
		}
		add := func(t timers.Timer[K]) bool {
			ts[nt] = t
			nt++
			return nt < readAhead || writeTimers(s.tag)
		}
		switch {
		case s.tag == tagEventTimers && o.al != nil:
			// Window-major: written as the per-key timers they stand
			// for, so any operator can restore them.
			o.rangeAlignedTimers(add)
		case s.tag == tagEventTimers && o.lazy:
			// Lazy sessions: written as the eager timers (F4) of the
			// merging sets' windows, not the stale ones held, so an
			// operator with eager timers (an older weir, another
			// trigger) restores them too.
			o.rangeEagerSessionTimers(add)
		default:
			s.s.Range(add)
		}
		if err == nil {
			writeTimers(s.tag)
		}
	}
	if err != nil {
		return dst, err
	}
	w.Uint(tagTrailing)
	w.Int(o.c.OnTimeTrailing)
	if o.c.Unchanged != 0 {
		w.Uint(tagUnchanged)
		w.Int(o.c.Unchanged)
	}
	w.Uint(tagEnd)
	return w.Buf, nil
}

// runLen is the length of the run of items at the start of items that
// are the same as the first by same.
func runLen[T any](items []T, same func(a, b *T) bool) int {
	n := 1
	for n < len(items) && same(&items[0], &items[n]) {
		n++
	}
	return n
}

// Restore adds the state of snapshot src for the key groups [first, last]
// to the operator, which must not have processed anything yet. The
// watermark is the largest of the snapshots restored (they are equal when
// they come from one aligned checkpoint). With counters, the snapshot's
// counters are added to the operator's: a rescaled restore gives every old
// subtask's counters to one new subtask, so totals stay exact.
func (o *Operator[K, IN, ACC, OUT]) Restore(src []byte, first, last state.KeyGroup, counters bool) error {
	if !o.hasCodecs() {
		return errNoCodec
	}
	if len(src) < len(snapshotMagic) || string(src[:len(snapshotMagic)]) != snapshotMagic {
		if len(src) >= len(snapshotMagic) && strings.HasPrefix(string(src), "weir-winop-") {
			return fmt.Errorf("weir: the window operator snapshot is format %q, this weir reads %q; start over (--fresh)", src[:len(snapshotMagic)], snapshotMagic)
		}
		return errors.New("weir: not a window operator snapshot (bad magic)")
	}
	r := state.Reader{Buf: src[len(snapshotMagic):]}
	o.wm = max(o.wm, etime.Time(r.Int()))
	o.now = max(o.now, etime.Time(r.Int()))
	var c Counters
	for _, f := range c.fields()[:fixedCounters] {
		*f = r.Int()
	}
	if counters {
		o.c.Add(c)
	}
	var ec state.Codec[entry[ACC]] = entryCodec[ACC]{o.accCodec}
	// key reads a record's key and reports whether its key group is
	// restored here.
	key := func() (K, bool) {
		k := state.ReadValue(&r, o.keyCodec)
		if r.Err != nil {
			return k, false
		}
		kg := o.keyGroup(k)
		return k, kg >= first && kg <= last
	}
	for r.Err == nil {
		// A large state restored into a KV backend must not pile up
		// in its caches.
		o.evictCaches()
		tag := r.Uint()
		if tag == tagEnd || r.Err != nil {
			break
		}
		switch tag {
		case tagTrailing:
			if n := r.Int(); counters {
				o.c.OnTimeTrailing += n
			}
		case tagUnchanged:
			if n := r.Int(); counters {
				o.c.Unchanged += n
			}
		case tagEntries:
			x := readWindow(&r)
			n := r.Uint()
			if n == 0 && r.Err == nil {
				return errors.New("weir: window operator snapshot is corrupt: an empty run")
			}
			for ; n > 0 && r.Err == nil; n-- {
				k, mine := key()
				e := state.ReadValue(&r, ec)
				if mine && r.Err == nil && !o.implied(e) {
					if o.al != nil {
						// The window-major path adds to panes
						// without keeping the mask.
						e.paneAbsent = 0
					}
					// Each key is in one old subtask's snapshot,
					// once: nothing restored exists yet.
					*o.entries.Create(k, x) = e
				}
			}
		case tagSet:
			k, mine := key()
			ws := state.ReadValue(&r, windowsCodec{})
			if mine && r.Err == nil {
				*o.sets.Create(k, none{}) = ws
				if o.lazy {
					for _, w := range ws {
						o.excess -= o.eagerTimers(w)
					}
				}
			}
		case tagPane:
			k, mine := key()
			idx := r.Int()
			acc := state.ReadValue(&r, o.accCodec)
			if mine && r.Err == nil {
				if o.panes == nil {
					return errors.New("weir: the snapshot has sliding panes but this operator does not use them; the window or the aggregate changed")
				}
				*o.panes.Create(k, idx) = acc
			}
		case tagEventTimers, tagProcTimers:
			ts := etime.Time(r.Int())
			x := readWindow(&r)
			s := o.evt
			if tag == tagProcTimers {
				s = o.proc
			}
			n := r.Uint()
			if n == 0 && r.Err == nil {
				return errors.New("weir: window operator snapshot is corrupt: an empty run")
			}
			for ; n > 0 && r.Err == nil; n-- {
				k, mine := key()
				switch {
				case !mine:
				case tag == tagEventTimers && o.al != nil:
					// Window-major: the key's timer is its window's.
					o.al.timers.Register(timers.Timer[none]{TS: ts, Window: x})
				default:
					s.RegisterNew(timers.Timer[K]{TS: ts, Key: k, Window: x})
					if o.lazy && tag == tagEventTimers {
						o.excess++ // less the set windows' eager timers, above
					}
				}
			}
		default:
			return fmt.Errorf("weir: window operator snapshot: unknown record tag %d", tag)
		}
	}
	if r.Err != nil {
		return fmt.Errorf("weir: window operator snapshot is corrupt: %w", r.Err)
	}
	return nil
}

// implied reports whether a restored entry need not be stored: a sliding
// window's entry that has not fired yet and has no throttled late firing
// pending (W11) is implied by the window's panes in window-major mode
// (rangeAlignedEntries writes it back).
func (o *Operator[K, IN, ACC, OUT]) implied(e entry[ACC]) bool {
	return o.al != nil && o.paneMode && e.has && e.panes == 0 && !e.emitted && e.slotSet == 0 && !e.lateSet
}

// fields lists every counter, for Counters.Add and snapshots. The first
// fixedCounters are the snapshot's fixed layout, written in this order
// after the processing time; a counter added later (OnTimeTrailing,
// Unchanged) comes after them and is written under a tag of its own
// (tagTrailing, tagUnchanged), so that
// older snapshots still restore.
func (c *Counters) fields() []*int64 {
	return []*int64{&c.RecordsIn, &c.Accepted, &c.AcceptedLate, &c.LateSideOutput, &c.LateDropped, &c.NoTimestamp,
		&c.WindowMisses, &c.PartialSideOutput, &c.Retractions, &c.FiredEarly, &c.FiredOnTime, &c.FiredLate,
		&c.OnTimeTrailing, &c.Unchanged}
}

// fixedCounters is the number of counters in the snapshot's fixed layout
// (the first of fields).
const fixedCounters = 12
