package memstate

import (
	"bytes"
	"encoding/binary"
	"io"

	"github.com/google/btree"

	"github.com/weirstream/weir/state"
)

// NewKV returns an empty in-memory state.KV. Its Stats are exact.
//
// The entries live in a B-tree (github.com/google/btree's generic BTreeG):
// ordered inserts, deletes and range scans in O(log n) with few pointers per
// entry and good cache locality, from a small, mature, dependency-free
// package. A sorted slice would make inserts O(n) (too slow for millions of
// keys), and a hand-written skip list or tree would be more code to trust
// than the dependency costs.
func NewKV() state.KV {
	return &kv{tree: btree.NewG(kvDegree, lessEntry)}
}

// kvDegree is the B-tree degree: nodes of up to 2*kvDegree-1 entries of 40
// bytes each, about 2.5 KiB. Degrees 16 to 64 measured alike on a million
// 16-byte keys (random access is bound by cache misses).
const kvDegree = 32

// entry is one key and value in a single allocation: kv[:klen] is the key,
// kv[klen:] the value. prefix holds the key's first 8 bytes (big-endian,
// zero-padded) inline, so that most comparisons while searching a node do
// not follow the pointer to the key (a cache miss each).
type entry struct {
	prefix uint64
	kv     []byte
	klen   int
}

func (e entry) key() []byte   { return e.kv[:e.klen] }
func (e entry) value() []byte { return e.kv[e.klen:] }

// keyPrefix is the first 8 bytes of key as a big-endian number, padded with
// zeros: prefixes order as their keys do, except that keys equal in their
// first 8 bytes (zero padding included) need a full comparison.
func keyPrefix(key []byte) uint64 {
	if len(key) >= 8 {
		return binary.BigEndian.Uint64(key)
	}
	var b [8]byte
	copy(b[:], key)
	return binary.BigEndian.Uint64(b[:])
}

func lessEntry(a, b entry) bool {
	if a.prefix != b.prefix {
		return a.prefix < b.prefix
	}
	return bytes.Compare(a.key(), b.key()) < 0
}

type kv struct {
	tree   *btree.BTreeG[entry]
	bytes  int64
	closed bool
	// del collects the keys DeleteRange removes (reused).
	del []entry
}

// probe wraps key as a search pivot without copying it.
func probe(key []byte) entry { return entry{prefix: keyPrefix(key), kv: key, klen: len(key)} }

func (m *kv) Get(key []byte) ([]byte, bool, error) {
	if m.closed {
		return nil, false, state.ErrClosed
	}
	e, ok := m.tree.Get(probe(key))
	if !ok {
		return nil, false, nil
	}
	return e.value(), true, nil
}

func (m *kv) Set(key, value []byte) error {
	if m.closed {
		return state.ErrClosed
	}
	if err := state.CheckKey(key); err != nil {
		return err
	}
	if old, ok := m.tree.Get(probe(key)); ok {
		// Overwrite in place when the value fits: the entry's key is
		// unchanged, so the tree's order is too. (Values returned by Get
		// are valid only until the next call, so reusing is allowed.)
		if cap(old.kv)-old.klen >= len(value) {
			n := old.klen + copy(old.kv[old.klen:old.klen+len(value)], value)
			if n != len(old.kv) {
				// The stored slice header has the old length.
				m.bytes += int64(n - len(old.kv))
				old.kv = old.kv[:n]
				m.tree.ReplaceOrInsert(old)
			}
			return nil
		}
		m.bytes -= int64(len(old.kv))
	}
	buf := make([]byte, len(key)+len(value))
	copy(buf, key)
	copy(buf[len(key):], value)
	m.tree.ReplaceOrInsert(entry{prefix: keyPrefix(key), kv: buf, klen: len(key)})
	m.bytes += int64(len(buf))
	return nil
}

func (m *kv) Delete(key []byte) error {
	if m.closed {
		return state.ErrClosed
	}
	if old, ok := m.tree.Delete(probe(key)); ok {
		m.bytes -= int64(len(old.kv))
	}
	return nil
}

func (m *kv) DeleteRange(start, end []byte) error {
	if m.closed {
		return state.ErrClosed
	}
	m.del = m.del[:0]
	m.ascend(start, end, func(e entry) bool {
		m.del = append(m.del, e)
		return true
	})
	for _, e := range m.del {
		m.tree.Delete(e)
		m.bytes -= int64(len(e.kv))
	}
	clear(m.del)
	if cap(m.del) > 4096 {
		m.del = nil
	}
	return nil
}

// ascend visits the entries in [start, end); an empty end is unbounded.
func (m *kv) ascend(start, end []byte, fn func(e entry) bool) {
	switch {
	case len(end) == 0:
		m.tree.AscendGreaterOrEqual(probe(start), fn)
	case bytes.Compare(start, end) < 0:
		m.tree.AscendRange(probe(start), probe(end), fn)
	}
}

func (m *kv) Scan(start, end []byte, fn func(k, v []byte) bool) error {
	if m.closed {
		return state.ErrClosed
	}
	m.ascend(start, end, func(e entry) bool { return fn(e.key(), e.value()) })
	return nil
}

func (m *kv) Snapshot(first, last state.KeyGroup, w io.Writer) error {
	if m.closed {
		return state.ErrClosed
	}
	start, end := state.KeyGroupBounds(first, last)
	return state.WriteSnapshot(w, func(fn func(k, v []byte) bool) error {
		if first <= last {
			m.ascend(start, end, func(e entry) bool { return fn(e.key(), e.value()) })
		}
		return nil
	})
}

func (m *kv) Restore(r io.Reader, first, last state.KeyGroup) error {
	if m.closed {
		return state.ErrClosed
	}
	// Stage the entries in range and apply them only once the whole
	// snapshot has been verified, so that a damaged snapshot changes
	// nothing. The staging costs one copy of the restored data, briefly.
	var (
		arena []byte
		ends  []int // per entry: end of key, end of value in arena
	)
	err := state.ReadSnapshot(r, func(k, v []byte) error {
		if kg := state.KeyGroupOfKey(k); kg < first || kg > last {
			return nil
		}
		arena = append(arena, k...)
		ke := len(arena)
		arena = append(arena, v...)
		ends = append(ends, ke, len(arena))
		return nil
	})
	if err != nil {
		return err
	}
	start := 0
	for i := 0; i < len(ends); i += 2 {
		ke, ve := ends[i], ends[i+1]
		if err := m.Set(arena[start:ke], arena[ke:ve]); err != nil {
			return err
		}
		start = ve
	}
	return nil
}

func (m *kv) Stats() state.KVStats {
	if m.closed {
		return state.KVStats{}
	}
	return state.KVStats{Keys: int64(m.tree.Len()), Bytes: m.bytes}
}

func (m *kv) Close() error {
	m.closed = true
	m.tree = nil
	m.bytes = 0
	m.del = nil
	return nil
}

// NewKVBackend returns a state backend whose window state lives in an
// in-memory KV behind caches of cacheSize entries: the same code path as
// the Pebble backend, without the disk (tests run every scenario on it).
func NewKVBackend(cacheSize int) state.Backend { return state.NewKVBackend(NewKV(), cacheSize) }
