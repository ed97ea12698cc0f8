package state

import "fmt"

// KVValue is a Value kept in a KV (on disk with pebblestate) behind a
// write-back cache of live Go values, so that hot windows cost no encoding
// and the state can be far larger than memory.
//
// Entries are stored under the key [key group][tag][uvarint len, key][ns],
// so each key group is a contiguous range (snapshots, rescaling) and one
// KV can hold several Values (distinct tags).
//
// The cache: Ref returns a pointer into it and marks the entry dirty, Get
// caches clean entries, and Evict writes dirty entries back and drops
// entries until the cache holds at most its capacity. It also remembers
// entries it looked up and did not find (absent), so that a window
// operator's lookups of panes a key never had, and its deletes of them,
// do not search the KV again. Pointers returned by
// Ref stay valid until the next Evict, Flush, Range, Put, Delete or Ref on
// the same Value: callers evict only between records, where they hold no
// pointers. A KV error is a broken disk: the methods that cannot return
// errors panic with it, which fails the job.
type KVValue[K comparable, N comparable, V any] struct {
	kv    KV
	tag   byte
	kc    Codec[K]
	nc    Codec[N]
	vc    Codec[V]
	kg    func(K) KeyGroup
	max   int
	cache map[entryKey[K, N]]*cached[V]
	n     int
	bytes int64 // stored key and value bytes
	buf   []byte
}

type cached[V any] struct {
	v     V
	dirty bool
	// absent: the entry is in neither the cache nor the KV (v is zero).
	absent bool
	size   int // the stored key and value bytes; 0 when not stored yet
}

// NewKVValue returns a Value with tag in kv, caching at most cacheSize
// entries between Evicts.
func NewKVValue[K comparable, N comparable, V any](kv KV, tag byte, kc Codec[K], nc Codec[N], vc Codec[V], kg func(K) KeyGroup, cacheSize int) *KVValue[K, N, V] {
	return &KVValue[K, N, V]{kv: kv, tag: tag, kc: kc, nc: nc, vc: vc, kg: kg, max: max(cacheSize, 1), cache: map[entryKey[K, N]]*cached[V]{}}
}

func (t *KVValue[K, N, V]) key(k K, n N) []byte {
	b := AppendKeyGroup(t.buf[:0], t.kg(k))
	b = append(b, t.tag)
	w := Writer{Buf: b}
	must(WriteValue(&w, t.kc, k))
	b, err := t.nc.Append(w.Buf, n)
	must(err)
	t.buf = b
	return b
}

func must(err error) {
	if err != nil {
		panic(fmt.Errorf("weir: state: %w", err))
	}
}

// load reads (k, n) from the KV; size is its stored bytes.
func (t *KVValue[K, N, V]) load(k K, n N) (v V, size int, ok bool) {
	key := t.key(k, n)
	b, ok, err := t.kv.Get(key)
	must(err)
	if !ok {
		return v, 0, false
	}
	v, err = t.vc.Decode(b)
	must(err)
	return v, len(key) + len(b), true
}

// Get implements Value.
func (t *KVValue[K, N, V]) Get(k K, n N) (V, bool) {
	ek := entryKey[K, N]{k, n}
	if c := t.cache[ek]; c != nil {
		return c.v, !c.absent
	}
	v, size, ok := t.load(k, n)
	t.cache[ek] = &cached[V]{v: v, size: size, absent: !ok}
	return v, ok
}

// Put implements Value.
func (t *KVValue[K, N, V]) Put(k K, n N, v V) { *t.Ref(k, n, true) = v }

// Ref implements Value; the entry is written back at the next Evict or
// Flush.
func (t *KVValue[K, N, V]) Ref(k K, n N, create bool) *V {
	ek := entryKey[K, N]{k, n}
	if c := t.cache[ek]; c != nil {
		if c.absent {
			if !create {
				return nil
			}
			c.absent = false
			t.n++
		}
		c.dirty = true
		return &c.v
	}
	v, size, ok := t.load(k, n)
	if !ok {
		if !create {
			t.cache[ek] = &cached[V]{absent: true}
			return nil
		}
		t.n++
	}
	c := &cached[V]{v: v, dirty: true, size: size}
	t.cache[ek] = c
	return &c.v
}

// Create implements Value: it skips the lookup.
func (t *KVValue[K, N, V]) Create(k K, n N) *V {
	ek := entryKey[K, N]{k, n}
	if c := t.cache[ek]; c != nil {
		if c.absent {
			c.absent = false
			t.n++
		}
		c.dirty = true
		return &c.v
	}
	t.n++
	c := &cached[V]{dirty: true}
	t.cache[ek] = c
	return &c.v
}

// Delete implements Value.
func (t *KVValue[K, N, V]) Delete(k K, n N) {
	ek := entryKey[K, N]{k, n}
	c, inCache := t.cache[ek]
	if inCache && c.absent {
		return
	}
	delete(t.cache, ek)
	key := t.key(k, n)
	size := 0
	if inCache {
		size = c.size
	} else {
		b, ok, err := t.kv.Get(key)
		must(err)
		if !ok {
			return
		}
		size = len(key) + len(b)
	}
	if size > 0 { // else it was never written back
		must(t.kv.Delete(key))
		t.bytes -= int64(size)
	}
	t.n--
}

// Len implements Value.
func (t *KVValue[K, N, V]) Len() int { return t.n }

// Bytes returns the key and value bytes of the entries written back to the
// KV (entries created since the last Evict or Flush are not counted yet).
func (t *KVValue[K, N, V]) Bytes() int64 { return t.bytes }

// Flush writes every dirty entry back to the KV (the cache stays).
func (t *KVValue[K, N, V]) Flush() {
	var vb []byte
	for ek, c := range t.cache {
		if !c.dirty {
			continue
		}
		var err error
		vb, err = t.vc.Append(vb[:0], c.v)
		must(err)
		key := t.key(ek.k, ek.n)
		must(t.kv.Set(key, vb))
		size := len(key) + len(vb)
		t.bytes += int64(size - c.size)
		c.size = size
		c.dirty = false
	}
}

// Evict writes dirty entries back and shrinks the cache to half its
// capacity once it is over it.
func (t *KVValue[K, N, V]) Evict() {
	if len(t.cache) <= t.max {
		return
	}
	t.Flush()
	for ek := range t.cache {
		if len(t.cache) <= t.max/2 {
			break
		}
		delete(t.cache, ek)
	}
}

// Range implements Value: it flushes, then visits the entries in key order
// (by key group). A pointer passed to fn is a decoded copy for entries not
// in the cache: fn must not rely on changes through it.
func (t *KVValue[K, N, V]) Range(fn func(k K, n N, v *V) bool) {
	t.Flush()
	must(t.kv.Scan([]byte{0, 0}, nil, func(key, val []byte) bool {
		if len(key) < 3 || key[2] != t.tag {
			return true
		}
		r := Reader{Buf: key[3:]}
		k := ReadValue(&r, t.kc)
		must(r.Err)
		n, err := t.nc.Decode(r.Buf)
		must(err)
		if c := t.cache[entryKey[K, N]{k, n}]; c != nil && !c.absent {
			return fn(k, n, &c.v)
		}
		v, err := t.vc.Decode(val)
		must(err)
		return fn(k, n, &v)
	}))
}

var _ Value[int, int, int] = (*KVValue[int, int, int])(nil)

// KVBackend is a Backend whose Values can live in a KV: window operators
// put their window contents, merging sets and panes there (as KVValues,
// caching CacheSize entries each) instead of in Go maps.
type KVBackend interface {
	Backend
	KV() KV
	CacheSize() int
}

// NewKVBackend returns a KVBackend over kv; handles that have no KV form
// stay in memory (it embeds a Heap). Close closes kv.
func NewKVBackend(kv KV, cacheSize int) Backend { return &kvBackend{kv: kv, cache: cacheSize} }

type kvBackend struct {
	Heap
	kv    KV
	cache int
}

func (b *kvBackend) Name() string   { return "kv" }
func (b *kvBackend) KV() KV         { return b.kv }
func (b *kvBackend) CacheSize() int { return b.cache }
func (b *kvBackend) Close() error   { return b.kv.Close() }
