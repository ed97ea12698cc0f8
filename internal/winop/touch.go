package winop

import (
	"reflect"
	"unsafe"

	"github.com/weirstream/weir/window"
)

// A snapshot of a large state is bound by memory latency: each window costs
// a cache miss for its entry, one for its accumulator and one for its key's
// bytes, and encoding one window at a time waits for them one after the
// other. The snapshot therefore reads windows in batches of readAhead and
// touches the memory of the whole batch first (the entries and keys, then
// the accumulators they point to), so the misses of a batch overlap; then
// it encodes the batch from the cache.
const readAhead = 32

// toucher reads one byte behind a string key and the memory of an
// accumulator that has a Touch method (see accToucher).
type toucher struct {
	key, acc bool
	sink     byte // the bytes read go here, so the reads are kept
}

// accToucher is implemented by accumulators that are pointers to several
// cache lines (the job spec's): Touch reads a byte of each and returns
// their sum.
type accToucher interface{ Touch() byte }

func newToucher[K, ACC any]() toucher {
	return toucher{
		key: reflect.TypeFor[K]().Kind() == reflect.String,
		// Decided once: converting a non-pointer ACC to an interface
		// to ask would allocate per window.
		acc: reflect.TypeFor[ACC]().Implements(reflect.TypeFor[accToucher]()),
	}
}

// touchKey reads the first byte of a string key.
func touchKey[K any](t *toucher, k *K) {
	if t.key {
		if s := *(*string)(unsafe.Pointer(k)); len(s) > 0 {
			t.sink += s[0]
		}
	}
}

// touchEntry reads the entry.
func touchEntry[ACC any](t *toucher, e *entry[ACC]) { t.sink += e.timers }

// touchAcc reads the accumulator's memory, if it says how.
func touchAcc[ACC any](t *toucher, acc ACC) {
	if t.acc {
		t.sink += any(acc).(accToucher).Touch()
	}
}

// windowItem is a window read ahead by a snapshot.
type windowItem[K any, ACC any] struct {
	k K
	x window.Window
	e *entry[ACC]
}
