package state

import (
	"fmt"
	"math/bits"
)

// KVValue is a Value kept in a KV (on disk with pebblestate) behind a
// write-back cache of live Go values, so that hot windows cost no encoding
// and the state can be far larger than memory.
//
// Entries are stored under the key [key group][tag][uvarint len, key][ns],
// so each key group is a contiguous range (snapshots, rescaling) and one
// KV can hold several Values (distinct tags). A namespace-major Value
// (NewKVNamespaces) stores [key group][tag][uvarint len, ns][key] instead,
// so each namespace of a key group is a contiguous range, and implements
// Namespaces.
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
	// filter holds every key written to the KV under tag since it was
	// built (a KVValue is the only writer of its tag), so lookups of
	// entries never written skip the KV; groups (a bitmap) are the key
	// groups written, which a rebuild and namespace walks visit.
	filter *written
	groups []uint64

	// Namespace-major only: the cache is byNS (namespace, then key; nCached
	// counts its entries) instead of cache, so a namespace's cached
	// entries are found without a walk of the cache; last is the map of
	// the namespace looked up last. ns holds the entries and stored bytes
	// of each namespace.
	nsMajor bool
	byNS    map[N]map[K]*cached[V]
	nCached int
	last    struct {
		n  N
		m  map[K]*cached[V]
		ok bool
	}
	ns   map[N]*nsCount
	pbuf []byte // nsPrefix's
}

type nsCount struct {
	n     int
	bytes int64
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
	return &KVValue[K, N, V]{kv: kv, tag: tag, kc: kc, nc: nc, vc: vc, kg: kg, max: max(cacheSize, 1), cache: map[entryKey[K, N]]*cached[V]{},
		filter: newWritten(2 * cacheSize), groups: make([]uint64, 1<<16/64)}
}

// NewKVNamespaces returns a namespace-major Value with tag in kv, caching
// at most cacheSize entries between Evicts; it implements Namespaces.
func NewKVNamespaces[K comparable, N comparable, V any](kv KV, tag byte, kc Codec[K], nc Codec[N], vc Codec[V], kg func(K) KeyGroup, cacheSize int) *KVValue[K, N, V] {
	t := NewKVValue(kv, tag, kc, nc, vc, kg, cacheSize)
	t.nsMajor, t.ns = true, map[N]*nsCount{}
	t.cache, t.byNS = nil, map[N]map[K]*cached[V]{}
	return t
}

// nsMap returns namespace n's cache map (nil when it has none and !make).
func (t *KVValue[K, N, V]) nsMap(n N, make bool) map[K]*cached[V] {
	if t.last.ok && t.last.n == n {
		return t.last.m
	}
	m := t.byNS[n]
	if m == nil {
		if !make {
			return nil
		}
		m = map[K]*cached[V]{}
		t.byNS[n] = m
	}
	t.last.n, t.last.m, t.last.ok = n, m, true
	return m
}

// lookup returns (k, n)'s cache slot, nil when it has none.
func (t *KVValue[K, N, V]) lookup(k K, n N) *cached[V] {
	if t.nsMajor {
		return t.nsMap(n, false)[k]
	}
	return t.cache[entryKey[K, N]{k, n}]
}

// store puts c in (k, n)'s cache slot, which is empty.
func (t *KVValue[K, N, V]) store(k K, n N, c *cached[V]) {
	if t.nsMajor {
		t.nsMap(n, true)[k] = c
		t.nCached++
		return
	}
	t.cache[entryKey[K, N]{k, n}] = c
}

// uncache empties (k, n)'s cache slot.
func (t *KVValue[K, N, V]) uncache(k K, n N) {
	if !t.nsMajor {
		delete(t.cache, entryKey[K, N]{k, n})
		return
	}
	m := t.nsMap(n, false)
	if _, ok := m[k]; !ok {
		return
	}
	delete(m, k)
	t.nCached--
}

// dropMap forgets namespace n's cache map.
func (t *KVValue[K, N, V]) dropMap(n N) {
	t.nCached -= len(t.byNS[n])
	delete(t.byNS, n)
	if t.last.ok && t.last.n == n {
		t.last.ok, t.last.m = false, nil
	}
}

// cacheLen is the number of cache slots.
func (t *KVValue[K, N, V]) cacheLen() int {
	if t.nsMajor {
		return t.nCached
	}
	return len(t.cache)
}

// eachCached calls fn for every cache slot until it returns false; fn may
// empty the slot it is given (uncache).
func (t *KVValue[K, N, V]) eachCached(fn func(k K, n N, c *cached[V]) bool) {
	if !t.nsMajor {
		for ek, c := range t.cache {
			if !fn(ek.k, ek.n, c) {
				return
			}
		}
		return
	}
	for n, m := range t.byNS {
		for k, c := range m {
			if !fn(k, n, c) {
				return
			}
		}
	}
}

func (t *KVValue[K, N, V]) key(k K, n N) []byte {
	b := AppendKeyGroup(t.buf[:0], t.kg(k))
	b = append(b, t.tag)
	w := Writer{Buf: b}
	var err error
	if t.nsMajor {
		must(WriteValue(&w, t.nc, n))
		b, err = t.kc.Append(w.Buf, k)
	} else {
		must(WriteValue(&w, t.kc, k))
		b, err = t.nc.Append(w.Buf, n)
	}
	must(err)
	t.buf = b
	return b
}

// nsPrefix is the start of namespace n's entries in key group kg.
func (t *KVValue[K, N, V]) nsPrefix(kg KeyGroup, n N) []byte {
	w := Writer{Buf: append(AppendKeyGroup(t.pbuf[:0], kg), t.tag)}
	must(WriteValue(&w, t.nc, n))
	t.pbuf = w.Buf
	return w.Buf
}

// decodeKey reads an entry's key and namespace from its KV key.
func (t *KVValue[K, N, V]) decodeKey(key []byte) (k K, n N) {
	r := Reader{Buf: key[KeyGroupLen+1:]}
	var err error
	if t.nsMajor {
		n = ReadValue(&r, t.nc)
		must(r.Err)
		k, err = t.kc.Decode(r.Buf)
	} else {
		k = ReadValue(&r, t.kc)
		must(r.Err)
		n, err = t.nc.Decode(r.Buf)
	}
	must(err)
	return k, n
}

// count adds dn entries and db stored bytes to the totals (and to
// namespace n's, namespace-major).
func (t *KVValue[K, N, V]) count(n N, dn int, db int64) {
	t.n += dn
	t.bytes += db
	if !t.nsMajor {
		return
	}
	c := t.ns[n]
	if c == nil {
		c = &nsCount{}
		t.ns[n] = c
	}
	c.n += dn
	c.bytes += db
	if c.n == 0 && c.bytes == 0 {
		delete(t.ns, n)
	}
}

func must(err error) {
	if err != nil {
		panic(fmt.Errorf("weir: state: %w", err))
	}
}

// load reads (k, n) from the KV; size is its stored bytes.
func (t *KVValue[K, N, V]) load(k K, n N) (v V, size int, ok bool) {
	key := t.key(k, n)
	if !t.filter.may(key) {
		return v, 0, false
	}
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
	if c := t.lookup(k, n); c != nil {
		return c.v, !c.absent
	}
	v, size, ok := t.load(k, n)
	t.store(k, n, &cached[V]{v: v, size: size, absent: !ok})
	return v, ok
}

// Put implements Value.
func (t *KVValue[K, N, V]) Put(k K, n N, v V) { *t.Ref(k, n, true) = v }

// Ref implements Value; the entry is written back at the next Evict or
// Flush.
func (t *KVValue[K, N, V]) Ref(k K, n N, create bool) *V {
	if c := t.lookup(k, n); c != nil {
		if c.absent {
			if !create {
				return nil
			}
			c.absent = false
			t.count(n, 1, 0)
		}
		c.dirty = true
		return &c.v
	}
	v, size, ok := t.load(k, n)
	if !ok {
		if !create {
			t.store(k, n, &cached[V]{absent: true})
			return nil
		}
		t.count(n, 1, 0)
	}
	c := &cached[V]{v: v, dirty: true, size: size}
	t.store(k, n, c)
	return &c.v
}

// Create implements Value: it skips the lookup.
func (t *KVValue[K, N, V]) Create(k K, n N) *V {
	if c := t.lookup(k, n); c != nil {
		if c.absent {
			c.absent = false
			t.count(n, 1, 0)
		}
		c.dirty = true
		return &c.v
	}
	t.count(n, 1, 0)
	c := &cached[V]{dirty: true}
	t.store(k, n, c)
	return &c.v
}

// Delete implements Value.
func (t *KVValue[K, N, V]) Delete(k K, n N) {
	c := t.lookup(k, n)
	inCache := c != nil
	if inCache && c.absent {
		return
	}
	t.uncache(k, n)
	key := t.key(k, n)
	size := 0
	if inCache {
		size = c.size
	} else {
		if !t.filter.may(key) {
			return
		}
		b, ok, err := t.kv.Get(key)
		must(err)
		if !ok {
			return
		}
		size = len(key) + len(b)
	}
	if size > 0 { // else it was never written back
		must(t.kv.Delete(key))
	}
	t.count(n, -1, -int64(size))
}

// Len implements Value.
func (t *KVValue[K, N, V]) Len() int { return t.n }

// Bytes returns the key and value bytes of the entries written back to the
// KV (entries created since the last Evict or Flush are not counted yet).
func (t *KVValue[K, N, V]) Bytes() int64 { return t.bytes }

// Flush writes every dirty entry back to the KV (the cache stays).
func (t *KVValue[K, N, V]) Flush() {
	var vb []byte
	full := false
	t.eachCached(func(k K, n N, c *cached[V]) bool {
		if !c.dirty {
			return true
		}
		var err error
		vb, err = t.vc.Append(vb[:0], c.v)
		must(err)
		key := t.key(k, n)
		must(t.kv.Set(key, vb))
		size := len(key) + len(vb)
		t.count(n, 0, int64(size-c.size))
		if c.size == 0 {
			// Not in the KV before (an entry read from it, or written
			// back already, is in the filter).
			kg := t.kg(k)
			t.groups[kg/64] |= 1 << (kg % 64)
			full = t.filter.add(key) || full
		}
		c.size = size
		c.dirty = false
		return true
	})
	if full {
		t.rebuildFilter()
	}
}

// rebuildFilter builds the filter anew from the keys in the KV, sized for
// twice as many, so that deleted keys stop answering "maybe".
func (t *KVValue[K, N, V]) rebuildFilter() {
	f := newWritten(2 * t.n)
	for kg := range t.writtenGroups() {
		start := append(AppendKeyGroup(nil, kg), t.tag)
		must(t.kv.Scan(start, prefixEnd(start), func(key, _ []byte) bool {
			f.add(key)
			return true
		}))
	}
	f.adds = 0
	t.filter = f
}

// Evict writes dirty entries back and shrinks the cache to half its
// capacity once it is over it.
func (t *KVValue[K, N, V]) Evict() {
	if t.cacheLen() <= t.max {
		return
	}
	t.Flush()
	t.eachCached(func(k K, n N, _ *cached[V]) bool {
		t.uncache(k, n)
		return t.cacheLen() > t.max/2
	})
}

// Range implements Value: it flushes, then visits the entries in key order
// (by key group). A pointer passed to fn is a decoded copy for entries not
// in the cache: fn must not rely on changes through it.
func (t *KVValue[K, N, V]) Range(fn func(k K, n N, v *V) bool) {
	t.Flush()
	must(t.kv.Scan([]byte{0, 0}, nil, func(key, val []byte) bool {
		if len(key) < KeyGroupLen+1 || key[KeyGroupLen] != t.tag {
			return true
		}
		k, n := t.decodeKey(key)
		if c := t.lookup(k, n); c != nil && !c.absent {
			return fn(k, n, &c.v)
		}
		v, err := t.vc.Decode(val)
		must(err)
		return fn(k, n, &v)
	}))
}

// NamespaceLen implements Namespaces (namespace-major only).
func (t *KVValue[K, N, V]) NamespaceLen(n N) int {
	if c := t.ns[n]; c != nil {
		return c.n
	}
	return 0
}

// RangeNamespace implements Namespaces (namespace-major only): it visits
// namespace n's cached entries, then those only in the KV, key group by
// key group. Each entry it visits is (put in the cache and) marked dirty,
// so changes through v are kept; v stays valid until the next Evict.
func (t *KVValue[K, N, V]) RangeNamespace(n N, fn func(k K, v *V) bool) {
	t.walk(n, true, fn)
}

// ViewNamespace is RangeNamespace for a reader that changes nothing: the
// entries not in the cache are decoded into a scratch value, valid only
// during the call, and stay out of the cache.
func (t *KVValue[K, N, V]) ViewNamespace(n N, fn func(k K, v *V) bool) {
	t.walk(n, false, fn)
}

func (t *KVValue[K, N, V]) walk(n N, keep bool, fn func(k K, v *V) bool) {
	if !t.nsMajor {
		panic("weir: state: a namespace walk of a key-major KVValue")
	}
	cnt := t.ns[n]
	if cnt == nil {
		return
	}
	m := t.nsMap(n, false)
	for k, c := range m {
		if c.absent {
			continue
		}
		c.dirty = c.dirty || keep
		if !fn(k, &c.v) {
			return
		}
	}
	if cnt.bytes == 0 {
		return // nothing of n was written back: all of it is cached
	}
	var scratch V
	for kg := range t.writtenGroups() {
		start := t.nsPrefix(kg, n)
		more := true
		must(t.kv.Scan(start, prefixEnd(start), func(key, val []byte) bool {
			k, _ := t.decodeKey(key)
			if m[k] != nil { // (a nil map holds nothing)
				return true // visited (or deleted) above
			}
			v, err := t.vc.Decode(val)
			must(err)
			if !keep {
				scratch = v
				more = fn(k, &scratch)
				return more
			}
			if m == nil {
				m = t.nsMap(n, true)
			}
			c := &cached[V]{v: v, dirty: true, size: len(key) + len(val)}
			m[k] = c
			t.nCached++
			more = fn(k, &c.v)
			return more
		}))
		if !more {
			return
		}
	}
}

// DropNamespace implements Namespaces (namespace-major only): it deletes
// namespace n's entries from the cache and, if any were written back, its
// ranges from the KV.
func (t *KVValue[K, N, V]) DropNamespace(n N) {
	t.dropMap(n)
	c := t.ns[n]
	if c == nil {
		return
	}
	if c.bytes != 0 {
		for kg := range t.writtenGroups() {
			start := t.nsPrefix(kg, n)
			must(t.kv.DeleteRange(start, prefixEnd(start)))
		}
	}
	t.n -= c.n
	t.bytes -= c.bytes
	delete(t.ns, n)
}

// writtenGroups yields the key groups whose entries were written to the
// KV, in order.
func (t *KVValue[K, N, V]) writtenGroups() func(func(KeyGroup) bool) {
	return func(yield func(KeyGroup) bool) {
		for i, w := range t.groups {
			for w != 0 {
				b := bits.TrailingZeros64(w)
				if !yield(KeyGroup(i*64 + b)) {
					return
				}
				w &^= 1 << b
			}
		}
	}
}

// prefixEnd returns the least key above every key that starts with p (p
// copied), or nil when p is all 0xff.
func prefixEnd(p []byte) []byte {
	e := append([]byte(nil), p...)
	for i := len(e) - 1; i >= 0; i-- {
		if e[i] < 0xff {
			e[i]++
			return e[:i+1]
		}
	}
	return nil
}

var (
	_ Value[int, int, int]      = (*KVValue[int, int, int])(nil)
	_ Namespaces[int, int, int] = (*KVValue[int, int, int])(nil)
)

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
