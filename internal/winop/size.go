package winop

import (
	"unsafe"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/timers"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/window"
)

// StateSize is the size of an operator instance's state.
type StateSize struct {
	// Windows counts live (key, window) entries.
	Windows int64
	// Timers counts registered event- and processing-time timers.
	Timers int64
	// Bytes is the encoded size of the keys and values, as the on-disk
	// backend and checkpoints store them: counted for a KV backend (except
	// entries created since the cache was last written back), estimated
	// for the in-memory one from a sample of its entries (its Go memory
	// use is larger: maps and pointers).
	Bytes int64
}

// sampleEntries is how many entries of each value an estimate encodes;
// resampleEvery is how many StateSize calls an estimate serves.
const (
	sampleEntries = 16
	resampleEvery = 256
)

// sizeEstimate is the mean encoded size of one value's entries.
type sizeEstimate struct {
	calls int
	mean  float64
	key   float64 // the mean encoded key size
}

// byteCounter is implemented by KV-backed values and timers.
type byteCounter interface{ Bytes() int64 }

// StateSize returns the size of the operator's state. It is cheap (the
// estimate of an in-memory backend is refreshed every few hundred calls)
// and, like every method, must be called from the operator's goroutine.
// OldestTimer returns the earliest pending event-time timer (a window
// end or cleanup time the watermark must reach), for metrics: false when
// there is none, or when the timers are on disk (a seek per call would
// cost too much). With lazy session timers it may be an absorbed
// window's timer, which is earlier than any live one.
func (o *Operator[K, IN, ACC, OUT]) OldestTimer() (etime.Time, bool) {
	oldest, ok := etime.MaxTime, false
	if m, isMem := o.evt.(*timers.Service[K]); isMem {
		if t, has := m.Next(); has {
			oldest, ok = t, true
		}
	}
	if o.al != nil {
		if t, has := o.al.timers.Next(); has && t < oldest {
			oldest, ok = t, true
		}
	}
	return oldest, ok
}

func (o *Operator[K, IN, ACC, OUT]) StateSize() StateSize {
	s := StateSize{Windows: int64(o.entries.Len()), Timers: int64(o.evt.Len() + o.proc.Len() - o.excess)}
	var alignedTimers int64
	if o.al != nil {
		// The processing-time timers (throttled late firings, W11) are
		// per key in either mode.
		s.Windows, alignedTimers = o.alignedSize()
		s.Timers = alignedTimers + int64(o.proc.Len())
	}
	var ec state.Codec[entry[ACC]]
	if o.accCodec != nil {
		ec = entryCodec[ACC]{o.accCodec}
	}
	s.Bytes = valueBytes(o.entries, &o.sizes[0], o.keyCodec, windowCodec{}, ec)
	if o.sets != nil {
		s.Bytes += valueBytes(o.sets, &o.sizes[1], o.keyCodec, noneCodec{}, windowsCodec{})
	}
	if o.panes != nil {
		s.Bytes += valueBytes(o.panes, &o.sizes[2], o.keyCodec, state.CodecFor[int64](), o.accCodec)
	}
	for _, t := range [...]timers.Timers[K]{o.evt, o.proc} {
		if b, ok := t.(byteCounter); ok {
			s.Bytes += b.Bytes()
		} else {
			// In memory: the timestamp and window (24 bytes) and the key.
			s.Bytes += int64(t.Len()) * int64(24+o.sizes[0].key)
		}
	}
	if o.al != nil {
		s.Bytes += alignedTimers * int64(24+o.sizes[0].key)
		if o.paneMode {
			s.Bytes -= int64(o.entries.Len()) * int64(o.sizes[0].mean)
			s.Bytes += s.Windows * int64(o.sizes[0].mean)
		}
	}
	return s
}

// valueBytes is v's byte count when it keeps one (in a KV), else its length
// times the mean encoded size of a sample of its entries; without codecs
// the sample is measured by the Go sizes of its types.
func valueBytes[K comparable, N comparable, V any](v state.Value[K, N, V], est *sizeEstimate, kc state.Codec[K], nc state.Codec[N], vc state.Codec[V]) int64 {
	if b, ok := v.(byteCounter); ok {
		return b.Bytes()
	}
	n := v.Len()
	if n == 0 {
		return 0
	}
	if est.calls%resampleEvery == 0 {
		sample(est, v, kc, nc, vc)
	}
	est.calls++
	return int64(est.mean * float64(n))
}

// sample measures up to sampleEntries entries of v.
func sample[K comparable, N comparable, V any](est *sizeEstimate, v state.Value[K, N, V], kc state.Codec[K], nc state.Codec[N], vc state.Codec[V]) {
	if kc == nil || vc == nil {
		var k K
		var ns N
		var x V
		est.key = float64(unsafe.Sizeof(k))
		est.mean = float64(unsafe.Sizeof(k) + unsafe.Sizeof(ns) + unsafe.Sizeof(x))
		return
	}
	var buf []byte
	var total, keys, count int
	v.Range(func(k K, n N, x *V) bool {
		b, err := kc.Append(buf[:0], k)
		if err != nil {
			return false
		}
		keys += len(b)
		if b, err = nc.Append(b, n); err == nil {
			b, err = vc.Append(b, *x)
		}
		if err != nil {
			return false
		}
		total += len(b) + 4 // the key group, tag and length prefix
		buf = b
		count++
		return count < sampleEntries
	})
	if count > 0 {
		est.mean = float64(total) / float64(count)
		est.key = float64(keys) / float64(count)
	}
}

// PastWindows counts the (key, window) entries whose end the watermark
// has passed: they fired and are kept only for the allowed lateness
// (known false: not counted, for processing-time windows and sliding
// windows in pane mode). It walks the state, so it is for the end of a
// run, not for every batch; the operator's goroutine calls it.
func (o *Operator[K, IN, ACC, OUT]) PastWindows() (n int64, known bool) {
	if !o.eventTime || o.paneMode {
		return 0, false
	}
	// (Window-major state outside pane mode keeps its entries per key
	// too.)
	o.entries.Range(func(_ K, w window.Window, _ *entry[ACC]) bool {
		if w.MaxTimestamp() <= o.wm {
			n++
		}
		return true
	})
	return n, true
}
