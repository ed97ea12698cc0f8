package state

import "hash/maphash"

// written is a Bloom filter of the KV keys a KVValue has written back, so
// that looking up an entry it never wrote (a new key, a new window) costs
// no KV search: on disk such a miss walks the memtable and the files'
// filters, several times the cost of a hit in the cache. It never forgets
// (a delete leaves the key in), so it is rebuilt from the KV, at twice the
// size of the live entries, when the keys added since the last build
// outnumber its capacity.
type written struct {
	seed maphash.Seed
	bits []uint64
	cap  int // keys the filter holds at its false-positive rate
	adds int // keys added since it was built
}

// bitsPerKey gives about a 1% false-positive rate with bloomProbes probes.
const (
	bitsPerKey  = 10
	bloomProbes = 7
	minBloomCap = 1 << 12
)

func newWritten(capacity int) *written {
	capacity = max(capacity, minBloomCap)
	words := (capacity*bitsPerKey + 63) / 64
	return &written{seed: maphash.MakeSeed(), bits: make([]uint64, words), cap: capacity}
}

// add records key; it reports whether the filter is over its capacity.
func (w *written) add(key []byte) bool {
	h1, h2, n := w.probe(key)
	for range bloomProbes {
		w.bits[h1%n/64] |= 1 << (h1 % n % 64)
		h1 += h2
	}
	w.adds++
	return w.adds > w.cap
}

// may reports whether key may have been added.
func (w *written) may(key []byte) bool {
	h1, h2, n := w.probe(key)
	for range bloomProbes {
		if w.bits[h1%n/64]&(1<<(h1%n%64)) == 0 {
			return false
		}
		h1 += h2
	}
	return true
}

// probe returns the start and step of key's probes (double hashing of one
// 64-bit hash) and the number of bits they are taken modulo.
func (w *written) probe(key []byte) (h1, h2, n uint64) {
	h := maphash.Bytes(w.seed, key)
	return h, h>>32 | h<<32 | 1, uint64(len(w.bits) * 64)
}
