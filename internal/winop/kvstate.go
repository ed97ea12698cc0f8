package winop

import (
	"errors"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/window"
)

// The tags of the operator's values in a KV backend.
const (
	tagKVEntries byte = 1 + iota
	tagKVSets
	tagKVPanes
	tagKVEventTimers
	tagKVProcTimers
)

// newValue makes one of the operator's values: in the backend's KV when
// it has one (behind a write-back cache, evicted between records), else in
// memory. In a KV, nsMajor stores it namespace by namespace (for
// window-major firing).
func newValue[K comparable, N comparable, V any, IN, ACC, OUT any](o *Operator[K, IN, ACC, OUT], b state.Backend, name string, tag byte, nc state.Codec[N], vc state.Codec[V], nsMajor bool) state.Value[K, N, V] {
	if kb, ok := b.(state.KVBackend); ok { // New checked the codecs
		newKV := state.NewKVValue[K, N, V]
		if nsMajor {
			newKV = state.NewKVNamespaces[K, N, V]
		}
		v := newKV(kb.KV(), tag, o.keyCodec, nc, vc, o.keyGroup, kb.CacheSize())
		o.evicters = append(o.evicters, v.Evict)
		return v
	}
	return state.NewValue[K, N, V](b, name)
}

// hasCodecs reports whether the operator can encode its state (KV
// backends, snapshots).
func (o *Operator[K, IN, ACC, OUT]) hasCodecs() bool {
	return o.keyCodec != nil && o.accCodec != nil && o.keyGroup != nil
}

// evict writes cached state back to the KV and trims the caches; the
// operator calls it where it holds no state pointers (between records).
func (o *Operator[K, IN, ACC, OUT]) evictCaches() {
	for _, e := range o.evicters {
		e()
	}
}

var errCorruptState = errors.New("weir: corrupt window state")

// writeWindow appends a window as two varints (start, end).
func writeWindow(w *state.Writer, x window.Window) {
	w.Int(int64(x.Start))
	w.Int(int64(x.End))
}

// readWindow reads what writeWindow wrote.
func readWindow(r *state.Reader) window.Window {
	s := etime.Time(r.Int())
	return window.Window{Start: s, End: etime.Time(r.Int())}
}

// windowCodec encodes a window as two varints.
type windowCodec struct{}

func (windowCodec) Append(dst []byte, x window.Window) ([]byte, error) {
	w := state.Writer{Buf: dst}
	writeWindow(&w, x)
	return w.Buf, nil
}

func (windowCodec) Decode(src []byte) (window.Window, error) {
	r := state.Reader{Buf: src}
	x := readWindow(&r)
	if r.Err != nil || len(r.Buf) != 0 {
		return x, errCorruptState
	}
	return x, nil
}

// windowsCodec encodes a merging set.
type windowsCodec struct{}

func (windowsCodec) Append(dst []byte, ws []window.Window) ([]byte, error) {
	w := state.Writer{Buf: dst}
	w.Uint(uint64(len(ws)))
	for _, x := range ws {
		writeWindow(&w, x)
	}
	return w.Buf, nil
}

func (windowsCodec) Decode(src []byte) ([]window.Window, error) {
	r := state.Reader{Buf: src}
	n := r.Uint()
	if n > uint64(len(src)) {
		return nil, errCorruptState
	}
	ws := make([]window.Window, 0, n)
	for range n {
		ws = append(ws, readWindow(&r))
	}
	return ws, r.Err
}

// noneCodec encodes the empty namespace of merging sets.
type noneCodec struct{}

func (noneCodec) Append(dst []byte, _ none) ([]byte, error) { return dst, nil }
func (noneCodec) Decode([]byte) (none, error)               { return none{}, nil }

// entryCodec encodes a window's entry: flags, trigger slots, pane index,
// the mask of absent panes and contents. The timer cache is not kept (it
// may say "not registered" wrongly, never the reverse).
type entryCodec[ACC any] struct{ acc state.Codec[ACC] }

func (c entryCodec[ACC]) Append(dst []byte, e entry[ACC]) ([]byte, error) {
	w := state.Writer{Buf: dst}
	flags := uint64(e.slotSet)
	if e.has {
		flags |= 1 << 8
	}
	if e.emitted {
		flags |= 1 << 9
	}
	if e.lateSet {
		flags |= 1 << 10
	}
	if e.paneAbsent != 0 {
		flags |= 1 << 11
	}
	if e.lastSet {
		flags |= 1 << 12
	}
	w.Uint(flags)
	for i := range e.slots {
		if e.slotSet&(1<<i) != 0 {
			w.Int(e.slots[i])
		}
	}
	w.Int(e.panes)
	if e.lateSet {
		w.Int(int64(e.lateDue))
	}
	if e.paneAbsent != 0 {
		w.Uint(e.paneAbsent)
	}
	if e.lastSet {
		w.Uint(e.last)
	}
	return c.acc.Append(w.Buf, e.acc)
}

func (c entryCodec[ACC]) Decode(src []byte) (entry[ACC], error) {
	r := state.Reader{Buf: src}
	var e entry[ACC]
	flags := r.Uint()
	e.slotSet = uint8(flags)
	e.has = flags&(1<<8) != 0
	e.emitted = flags&(1<<9) != 0
	e.lateSet = flags&(1<<10) != 0
	for i := range e.slots {
		if e.slotSet&(1<<i) != 0 {
			e.slots[i] = r.Int()
		}
	}
	e.panes = r.Int()
	if e.lateSet {
		e.lateDue = etime.Time(r.Int())
	}
	if flags&(1<<11) != 0 {
		e.paneAbsent = r.Uint()
	}
	if e.lastSet = flags&(1<<12) != 0; e.lastSet {
		e.last = r.Uint()
	}
	if r.Err != nil {
		return e, errCorruptState
	}
	var err error
	e.acc, err = c.acc.Decode(r.Buf)
	return e, err
}
