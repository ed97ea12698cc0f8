package winop

import (
	"errors"
	"fmt"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/timers"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/window"
)

// The operator snapshot format (docs/format/checkpoint-parts.md, "Window
// operators"): a magic and version, the watermark, processing time and
// counters, then tagged records, each starting with its key (a restore
// keeps the keys of its key groups), and a final end tag.
const snapshotMagic = "weir-winop-3"

const (
	tagEnd uint64 = iota
	tagEntry
	tagSet
	tagPane
	tagEventTimer
	tagProcTimer
)

var errNoCodec = errors.New("weir: window operator snapshot needs key and accumulator codecs and a key-group function")

// Snapshot appends the operator's whole state to dst: every window's
// contents, trigger slots and pane index, the merging sets, the sliding
// panes, both timer sets, the watermark and the counters.
func (o *Operator[K, IN, ACC, OUT]) Snapshot(dst []byte) ([]byte, error) {
	if !o.hasCodecs() {
		return dst, errNoCodec
	}
	if dst == nil && o.lastSnap > 0 {
		// Size the buffer from the last snapshot, so a large state is not
		// copied again and again while the buffer grows.
		dst = make([]byte, 0, o.lastSnap+o.lastSnap/8)
	}
	w := state.Writer{Buf: append(dst, snapshotMagic...)}
	defer func() { o.lastSnap = len(w.Buf) }()
	w.Int(int64(o.wm))
	w.Int(int64(o.now))
	for _, c := range o.c.fields() {
		w.Int(*c)
	}
	var err error
	head := func(tag uint64, k K) bool {
		w.Uint(tag)
		if e := state.WriteValue(&w, o.keyCodec, k); e != nil {
			err = e
			return false
		}
		return true
	}
	ec := entryCodec[ACC]{o.accCodec}
	o.entries.Range(func(k K, x window.Window, e *entry[ACC]) bool {
		if !head(tagEntry, k) {
			return false
		}
		writeWindow(&w, x)
		if e := state.WriteValue(&w, ec, *e); e != nil {
			err = e
			return false
		}
		return true
	})
	if err == nil && o.sets != nil {
		o.sets.Range(func(k K, _ none, ws *[]window.Window) bool {
			if !head(tagSet, k) {
				return false
			}
			err = state.WriteValue(&w, windowsCodec{}, *ws)
			return err == nil
		})
	}
	if err == nil && o.panes != nil {
		o.panes.Range(func(k K, idx int64, acc *ACC) bool {
			if !head(tagPane, k) {
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
	for _, ts := range []struct {
		tag uint64
		s   timers.Timers[K]
	}{{tagEventTimer, o.evt}, {tagProcTimer, o.proc}} {
		if err != nil {
			break
		}
		ts.s.Range(func(t timers.Timer[K]) bool {
			if !head(ts.tag, t.Key) {
				return false
			}
			w.Int(int64(t.TS))
			writeWindow(&w, t.Window)
			return true
		})
	}
	if err != nil {
		return dst, err
	}
	w.Uint(tagEnd)
	return w.Buf, nil
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
		return errors.New("weir: not a window operator snapshot (bad magic)")
	}
	r := state.Reader{Buf: src[len(snapshotMagic):]}
	o.wm = max(o.wm, etime.Time(r.Int()))
	o.now = max(o.now, etime.Time(r.Int()))
	var c Counters
	for _, f := range c.fields() {
		*f = r.Int()
	}
	if counters {
		o.c.Add(c)
	}
	for r.Err == nil {
		// A large state restored into a KV backend must not pile up
		// in its caches.
		o.evictCaches()
		tag := r.Uint()
		if tag == tagEnd || r.Err != nil {
			break
		}
		k := state.ReadValue(&r, o.keyCodec)
		kg := o.keyGroup(k)
		mine := r.Err == nil && kg >= first && kg <= last
		switch tag {
		case tagEntry:
			x := readWindow(&r)
			e := state.ReadValue(&r, entryCodec[ACC]{o.accCodec})
			if mine && r.Err == nil {
				// Each key is in one old subtask's snapshot, once:
				// nothing restored exists yet.
				*o.entries.Create(k, x) = e
			}
		case tagSet:
			ws := state.ReadValue(&r, windowsCodec{})
			if mine && r.Err == nil {
				*o.sets.Create(k, none{}) = ws
			}
		case tagPane:
			idx := r.Int()
			acc := state.ReadValue(&r, o.accCodec)
			if mine && r.Err == nil {
				if o.panes == nil {
					return errors.New("weir: the snapshot has sliding panes but this operator does not use them; the window or the aggregate changed")
				}
				*o.panes.Create(k, idx) = acc
			}
		case tagEventTimer, tagProcTimer:
			ts := etime.Time(r.Int())
			x := readWindow(&r)
			if mine && r.Err == nil {
				s := o.evt
				if tag == tagProcTimer {
					s = o.proc
				}
				s.RegisterNew(timers.Timer[K]{TS: ts, Key: k, Window: x})
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

// fields lists the counters in snapshot order.
func (c *Counters) fields() []*int64 {
	return []*int64{&c.RecordsIn, &c.Accepted, &c.AcceptedLate, &c.LateSideOutput, &c.LateDropped, &c.NoTimestamp,
		&c.WindowMisses, &c.PartialSideOutput, &c.Retractions, &c.FiredEarly, &c.FiredOnTime, &c.FiredLate}
}
