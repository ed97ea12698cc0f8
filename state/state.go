// Package state is weir's keyed state: the backend interface, typed state
// handles (Value, List, Map, Aggregating) and key groups.
//
// Keyed state is addressed by (key, namespace): the namespace is usually a
// window. Keys are partitioned into key groups (default 128, the job's max
// parallelism) so that state can be snapshotted, moved and rescaled by
// key-group range later.
//
// Handles are created with generic constructors (Go methods cannot take type
// parameters): NewValue, NewList, NewMap, NewAggregating. A backend either
// keeps live Go values (a heap backend, such as memstate) or, later, encoded
// bytes (pebblestate); the handle contracts below hold for both. Handles are
// not safe for concurrent use: each operator instance owns its own.
package state

import (
	"errors"
	"reflect"
)

// DefaultMaxParallelism is the default number of key groups.
const DefaultMaxParallelism = 128

// KeyGroup is a partition of the key space; state moves between subtasks in
// whole key groups.
type KeyGroup uint16

// KeyGroupOf maps a key hash to its key group.
func KeyGroupOf(hash uint64, maxParallelism int) KeyGroup {
	return KeyGroup(hash % uint64(maxParallelism))
}

// SubtaskOf maps a key group to the subtask that owns it, for parallelism
// par, as contiguous ranges (Flink's computeOperatorIndexForKeyGroup).
func SubtaskOf(kg KeyGroup, maxParallelism, par int) int {
	return int(kg) * par / maxParallelism
}

// KeyGroupRange is the inclusive range of key groups subtask i of par owns.
func KeyGroupRange(i, maxParallelism, par int) (first, last KeyGroup) {
	f := (i*maxParallelism + par - 1) / par
	l := ((i+1)*maxParallelism+par-1)/par - 1
	return KeyGroup(f), KeyGroup(l)
}

// Hasher hashes keys to key groups. The hash is stable across processes and
// runs (it must be: key groups name state in checkpoints, and deterministic
// runs route keys the same way every time). Integer and string keys are
// hashed directly; other key types through their canonical encoding.
type Hasher[K comparable] struct {
	enc func(dst []byte, k K) []byte
	buf []byte
	// last is the key hashed last through enc and its hash, when keys
	// that compare equal have equal encodings (remember): the keys of a
	// window's results (a key by window end) repeat.
	remember bool
	last     struct {
		k  K
		h  uint64
		ok bool
	}
}

// NewHasher returns a Hasher; enc gives the canonical encoding of keys that
// are neither integers nor strings (it may be nil for those).
func NewHasher[K comparable](enc func(dst []byte, k K) []byte) *Hasher[K] {
	h := &Hasher[K]{enc: enc}
	// Equal keys of a kind whose == compares every bit (named integers
	// and strings, booleans) encode alike; equal floats need not (0 and
	// -0), nor structs and interfaces holding them or pointers.
	switch reflect.TypeFor[K]().Kind() {
	case reflect.Bool, reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		h.remember = true
	}
	return h
}

// Hash returns the stable hash of k. It is not safe for concurrent use.
func (h *Hasher[K]) Hash(k K) uint64 {
	switch v := any(k).(type) {
	case string:
		return hashString(v)
	case int:
		return mix64(uint64(v))
	case int64:
		return mix64(uint64(v))
	case int32:
		return mix64(uint64(v))
	case uint64:
		return mix64(v)
	case uint32:
		return mix64(uint64(v))
	case uint:
		return mix64(uint64(v))
	}
	if h.remember && h.last.ok && h.last.k == k {
		return h.last.h
	}
	h.buf = h.enc(h.buf[:0], k)
	x := hashBytes(h.buf)
	if h.remember {
		h.last.k, h.last.h, h.last.ok = k, x, true
	}
	return x
}

// mix64 is the murmur3 64-bit finalizer.
func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// hashString is FNV-1a 64 followed by mix64.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return mix64(h)
}

func hashBytes(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return mix64(h)
}

// Backend stores the keyed state of one operator instance.
type Backend interface {
	// Name identifies the backend kind, such as "memory".
	Name() string
	// Close releases the backend's resources. It is idempotent.
	Close() error
}

// Heap is embedded by backends that keep live Go values; the generic
// constructors use its tables directly. The zero value is ready to use.
type Heap struct {
	tables []sizer
}

type sizer interface{ Len() int }

// HeapBackend is implemented by backends built on Heap.
type HeapBackend interface {
	Backend
	heap() *Heap
}

func (h *Heap) heap() *Heap { return h }

// Entries returns the number of (key, namespace) entries over all tables.
func (h *Heap) Entries() int {
	n := 0
	for _, t := range h.tables {
		n += t.Len()
	}
	return n
}

var errNotHeap = errors.New("weir: state backend does not support typed heap state yet")

func heapOf(b Backend) *Heap {
	hb, ok := b.(HeapBackend)
	if !ok {
		panic(errNotHeap)
	}
	return hb.heap()
}

type entryKey[K comparable, N comparable] struct {
	k K
	n N
}

// Value is a single value per (key, namespace).
type Value[K comparable, N comparable, V any] interface {
	// Get returns the value and whether it exists.
	Get(k K, n N) (V, bool)
	// Put stores v.
	Put(k K, n N, v V)
	// Delete removes the value, if any.
	Delete(k K, n N)
	// Ref returns a pointer to the stored value so it can be updated in place
	// without copying. With create it stores a zero value first when absent;
	// without, it returns nil when absent. The pointer is valid until the
	// next Put, Delete or Ref on the same handle.
	Ref(k K, n N, create bool) *V
	// Create is Ref(k, n, true) for an entry the caller knows does not
	// exist (a window just created, a restore): a backend may skip the
	// lookup. Calling it for an existing entry is a bug.
	Create(k K, n N) *V
	// Len returns the number of entries.
	Len() int
	// Range calls fn for every entry until fn returns false (snapshots).
	// The order is unspecified; fn must not add or delete entries. Each v
	// stays valid until Range returns (a snapshot reads ahead).
	Range(fn func(k K, n N, v *V) bool)
}

// Namespaces is implemented by Value handles that store their entries
// namespace by namespace in memory (NewValue on a heap backend). An
// operator whose timers belong to whole namespaces (a tumbling window's
// end fires every key of the window) walks and drops a namespace at once
// instead of looking up each key.
type Namespaces[K comparable, N comparable, V any] interface {
	Value[K, N, V]
	// NamespaceLen returns the number of entries of namespace n.
	NamespaceLen(n N) int
	// RangeNamespace calls fn for every entry of namespace n, in no
	// particular order, until fn returns false. fn must not add or delete
	// entries; each v stays valid until the next Put, Delete, Ref or
	// DropNamespace.
	RangeNamespace(n N, fn func(k K, v *V) bool)
	// DropNamespace deletes every entry of namespace n.
	DropNamespace(n N)
}

// NewValue creates a Value handle named name on b.
func NewValue[K comparable, N comparable, V any](b Backend, name string) Value[K, N, V] {
	h := heapOf(b)
	t := newHeapValue[K, N, V]()
	h.tables = append(h.tables, t)
	return t
}

// NewKeyedValue creates a Value handle named name on b that stores its
// entries key by key: one map entry per key, holding that key's few
// (namespace, value) pairs in a slice. It suits namespaces that belong to a
// single key, such as session windows, where NewValue's layout (a map of
// keys per namespace) would hold a map per window: a session merge looks
// up, creates and deletes several entries of one key, which cost one
// lookup by key here (the last key's slot is remembered) instead of one by
// (key, namespace) each. KV backends store both kinds alike.
func NewKeyedValue[K comparable, N comparable, V any](b Backend, name string) Value[K, N, V] {
	v, _ := NewKeyedPair[K, N, V, struct{}, struct{}](b, name)
	return v
}

// NewKeyedPair is NewKeyedValue plus a second handle, head, of at most one
// value per key (its namespace, of type M, is ignored), kept in the same
// slot as the key's entries: an operator that reads a key's head and its
// entries together (a session's merging set and the sessions' contents)
// looks the key up once. The two handles' Ref pointers follow each one's
// own contract: a Put, Delete or Ref on one handle does not move the other
// handle's values.
func NewKeyedPair[K comparable, N comparable, V any, M comparable, H any](b Backend, name string) (Value[K, N, V], Value[K, M, H]) {
	h := heapOf(b)
	t := &keyedValue[K, N, V, H]{m: make(map[K]*keySlot[N, V, H])}
	hd := &keyedHead[K, M, N, V, H]{t: t}
	h.tables = append(h.tables, t, hd)
	return t, hd
}

// keyedValue is NewKeyedPair's layout. A key's slot is in m only while it
// holds an entry or a head; last is the slot of the key looked up last
// (nil when that key has none).
type keyedValue[K comparable, N comparable, V any, H any] struct {
	m     map[K]*keySlot[N, V, H]
	n     int
	free  []*V
	slots []*keySlot[N, V, H] // emptied slots for reuse
	last  struct {
		k  K
		s  *keySlot[N, V, H]
		ok bool
	}
}

// keySlot holds one key's entries in the order they were made (a key has
// few at a time, its open sessions, so a scan beats a hash) and its head.
type keySlot[N comparable, V any, H any] struct {
	ns      []N
	vs      []*V
	head    H
	hasHead bool
}

// slot returns k's slot, nil when k has neither entries nor a head.
func (t *keyedValue[K, N, V, H]) slot(k K) *keySlot[N, V, H] {
	if t.last.ok && t.last.k == k {
		return t.last.s
	}
	s := t.m[k]
	t.last.k, t.last.s, t.last.ok = k, s, true
	return s
}

// makeSlot returns k's slot, adding an empty one when k has none.
func (t *keyedValue[K, N, V, H]) makeSlot(k K) *keySlot[N, V, H] {
	s := t.slot(k)
	if s == nil {
		if l := len(t.slots); l > 0 {
			s = t.slots[l-1]
			t.slots = t.slots[:l-1]
		} else {
			s = &keySlot[N, V, H]{}
		}
		t.m[k] = s
		t.last.s = s // slot(k) cached k
	}
	return s
}

// dropIfEmpty removes k's slot s once it holds nothing.
func (t *keyedValue[K, N, V, H]) dropIfEmpty(k K, s *keySlot[N, V, H]) {
	if len(s.ns) > 0 || s.hasHead {
		return
	}
	delete(t.m, k)
	t.slots = append(t.slots, s)
	if t.last.ok && t.last.k == k {
		t.last.s = nil
	}
}

func (s *keySlot[N, V, H]) find(n N) int {
	for i := range s.ns {
		if s.ns[i] == n {
			return i
		}
	}
	return -1
}

func (t *keyedValue[K, N, V, H]) Get(k K, n N) (V, bool) {
	if s := t.slot(k); s != nil {
		if i := s.find(n); i >= 0 {
			return *s.vs[i], true
		}
	}
	var z V
	return z, false
}

func (t *keyedValue[K, N, V, H]) Put(k K, n N, v V) { *t.Ref(k, n, true) = v }

func (t *keyedValue[K, N, V, H]) Delete(k K, n N) {
	s := t.slot(k)
	if s == nil {
		return
	}
	i := s.find(n)
	if i < 0 {
		return
	}
	p := s.vs[i]
	var z V
	*p = z
	t.free = append(t.free, p)
	last := len(s.ns) - 1
	s.ns[i], s.vs[i] = s.ns[last], s.vs[last]
	var zn N
	s.ns[last], s.vs[last] = zn, nil
	s.ns, s.vs = s.ns[:last], s.vs[:last]
	t.n--
	t.dropIfEmpty(k, s)
}

func (t *keyedValue[K, N, V, H]) Create(k K, n N) *V {
	s := t.makeSlot(k)
	p := reuse(&t.free)
	s.ns = append(s.ns, n)
	s.vs = append(s.vs, p)
	t.n++
	return p
}

func (t *keyedValue[K, N, V, H]) Ref(k K, n N, create bool) *V {
	if s := t.slot(k); s != nil {
		if i := s.find(n); i >= 0 {
			return s.vs[i]
		}
	}
	if !create {
		return nil
	}
	return t.Create(k, n)
}

func (t *keyedValue[K, N, V, H]) Len() int { return t.n }

func (t *keyedValue[K, N, V, H]) Range(fn func(k K, n N, v *V) bool) {
	for k, s := range t.m {
		for i := range s.ns {
			if !fn(k, s.ns[i], s.vs[i]) {
				return
			}
		}
	}
}

// keyedHead is NewKeyedPair's head handle: the heads in t's slots.
type keyedHead[K comparable, M comparable, N comparable, V any, H any] struct {
	t *keyedValue[K, N, V, H]
	n int
}

func (h *keyedHead[K, M, N, V, H]) Get(k K, _ M) (H, bool) {
	if s := h.t.slot(k); s != nil && s.hasHead {
		return s.head, true
	}
	var z H
	return z, false
}

func (h *keyedHead[K, M, N, V, H]) Put(k K, m M, v H) { *h.Ref(k, m, true) = v }

func (h *keyedHead[K, M, N, V, H]) Delete(k K, _ M) {
	s := h.t.slot(k)
	if s == nil || !s.hasHead {
		return
	}
	var z H
	s.head, s.hasHead = z, false
	h.n--
	h.t.dropIfEmpty(k, s)
}

func (h *keyedHead[K, M, N, V, H]) Create(k K, m M) *H { return h.Ref(k, m, true) }

func (h *keyedHead[K, M, N, V, H]) Ref(k K, _ M, create bool) *H {
	s := h.t.slot(k)
	if s != nil && s.hasHead {
		return &s.head
	}
	if !create {
		return nil
	}
	s = h.t.makeSlot(k)
	s.hasHead = true
	h.n++
	return &s.head
}

func (h *keyedHead[K, M, N, V, H]) Len() int { return h.n }

func (h *keyedHead[K, M, N, V, H]) Range(fn func(k K, m M, v *H) bool) {
	var m M
	for k, s := range h.t.m {
		if s.hasHead && !fn(k, m, &s.head) {
			return
		}
	}
}

// reuse returns a value from free (deleted values are zeroed there), or
// a new one.
func reuse[V any](free *[]*V) *V {
	if l := len(*free); l > 0 {
		p := (*free)[l-1]
		*free = (*free)[:l-1]
		return p
	}
	return new(V)
}

// heapValue stores values namespace-major: one map of keys per namespace
// (window). Operators touch few live windows at a time, so the outer lookup
// is usually the one-entry cache, and the inner map is keyed by K alone,
// which the Go runtime hashes fastest for integer and string keys.
type heapValue[K comparable, N comparable, V any] struct {
	ns map[N]map[K]*V
	// cache holds the most recently used namespaces (sliding windows touch
	// size/slide of them per element), replaced round robin.
	cache [nsCache]nsEntry[K, N, V]
	next  int
	hit   int // the slot of the last hit, tried first
	n     int
	free  []*V
	// freeMaps holds emptied namespace maps for reuse.
	freeMaps []map[K]*V
}

const nsCache = 8

type nsEntry[K comparable, N comparable, V any] struct {
	n N
	m map[K]*V
}

func newHeapValue[K comparable, N comparable, V any]() *heapValue[K, N, V] {
	return &heapValue[K, N, V]{ns: make(map[N]map[K]*V)}
}

func (t *heapValue[K, N, V]) inner(n N, create bool) map[K]*V {
	if c := &t.cache[t.hit]; c.m != nil && c.n == n {
		return c.m
	}
	for i := range t.cache {
		if c := &t.cache[i]; c.m != nil && c.n == n {
			t.hit = i
			return c.m
		}
	}
	m := t.ns[n]
	if m == nil {
		if !create {
			return nil
		}
		if l := len(t.freeMaps); l > 0 {
			m = t.freeMaps[l-1]
			t.freeMaps = t.freeMaps[:l-1]
		} else {
			m = make(map[K]*V)
		}
		t.ns[n] = m
	}
	t.cache[t.next] = nsEntry[K, N, V]{n: n, m: m}
	t.hit = t.next
	t.next = (t.next + 1) % nsCache
	return m
}

func (t *heapValue[K, N, V]) forget(n N) {
	for i := range t.cache {
		if c := &t.cache[i]; c.m != nil && c.n == n {
			*c = nsEntry[K, N, V]{}
		}
	}
}

func (t *heapValue[K, N, V]) Get(k K, n N) (V, bool) {
	if p := t.inner(n, false)[k]; p != nil {
		return *p, true
	}
	var z V
	return z, false
}

func (t *heapValue[K, N, V]) Put(k K, n N, v V) { *t.Ref(k, n, true) = v }

func (t *heapValue[K, N, V]) Delete(k K, n N) {
	m := t.inner(n, false)
	p := m[k]
	if p == nil {
		return
	}
	delete(m, k)
	t.n--
	if len(m) == 0 {
		t.dropMap(n, m)
	}
	var z V
	*p = z
	t.free = append(t.free, p)
}

// dropMap forgets namespace n, whose map is m. Namespaces come and go with
// windows; up to 4096 of their maps are reused. A reused map keeps the
// room it grew to, so a burst of large windows can pin that memory until
// reuse.
func (t *heapValue[K, N, V]) dropMap(n N, m map[K]*V) {
	delete(t.ns, n)
	t.forget(n)
	if len(t.freeMaps) < 4096 {
		clear(m) // drops the tombstones, which would make it grow again as it refills
		t.freeMaps = append(t.freeMaps, m)
	}
}

func (t *heapValue[K, N, V]) Create(k K, n N) *V { return t.Ref(k, n, true) }

func (t *heapValue[K, N, V]) Ref(k K, n N, create bool) *V {
	m := t.inner(n, create)
	if p := m[k]; p != nil || !create {
		return p
	}
	p := reuse(&t.free)
	m[k] = p
	t.n++
	return p
}

func (t *heapValue[K, N, V]) Len() int { return t.n }

// NamespaceLen implements Namespaces. It leaves the namespace cache as it
// is: state-size reports call it between records.
func (t *heapValue[K, N, V]) NamespaceLen(n N) int {
	for i := range t.cache {
		if c := &t.cache[i]; c.m != nil && c.n == n {
			return len(c.m)
		}
	}
	return len(t.ns[n])
}

// RangeNamespace implements Namespaces.
func (t *heapValue[K, N, V]) RangeNamespace(n N, fn func(k K, v *V) bool) {
	for k, p := range t.inner(n, false) {
		if !fn(k, p) {
			return
		}
	}
}

// DropNamespace implements Namespaces: the values go back to the free
// list, the map to the spare maps.
func (t *heapValue[K, N, V]) DropNamespace(n N) {
	m := t.inner(n, false)
	if m == nil {
		return
	}
	var z V
	for _, p := range m {
		*p = z
		t.free = append(t.free, p)
	}
	t.n -= len(m)
	t.dropMap(n, m)
}

func (t *heapValue[K, N, V]) Range(fn func(k K, n N, v *V) bool) {
	for n, m := range t.ns {
		for k, p := range m {
			if !fn(k, n, p) {
				return
			}
		}
	}
}

// List is an ordered list of values per (key, namespace).
type List[K comparable, N comparable, V any] interface {
	// Get returns the list; the caller must not keep or modify it past the
	// next call on the handle.
	Get(k K, n N) []V
	// Add appends v.
	Add(k K, n N, v V)
	// Put replaces the list (an empty list deletes it).
	Put(k K, n N, vs []V)
	// Delete removes the list.
	Delete(k K, n N)
	// Len returns the number of non-empty lists.
	Len() int
}

// NewList creates a List handle named name on b.
func NewList[K comparable, N comparable, V any](b Backend, name string) List[K, N, V] {
	h := heapOf(b)
	t := &heapList[K, N, V]{v: newHeapValue[K, N, []V]()}
	h.tables = append(h.tables, t)
	return t
}

type heapList[K comparable, N comparable, V any] struct{ v *heapValue[K, N, []V] }

func (t *heapList[K, N, V]) Get(k K, n N) []V {
	if p := t.v.Ref(k, n, false); p != nil {
		return *p
	}
	return nil
}
func (t *heapList[K, N, V]) Add(k K, n N, v V) {
	p := t.v.Ref(k, n, true)
	*p = append(*p, v)
}
func (t *heapList[K, N, V]) Put(k K, n N, vs []V) {
	if len(vs) == 0 {
		t.v.Delete(k, n)
		return
	}
	p := t.v.Ref(k, n, true)
	*p = append((*p)[:0], vs...)
}
func (t *heapList[K, N, V]) Delete(k K, n N) { t.v.Delete(k, n) }
func (t *heapList[K, N, V]) Len() int        { return t.v.Len() }

// Map is a map of user keys to values per (key, namespace).
type Map[K comparable, N comparable, MK comparable, MV any] interface {
	Get(k K, n N, mk MK) (MV, bool)
	Put(k K, n N, mk MK, mv MV)
	Delete(k K, n N, mk MK)
	// Range calls fn for every entry of (k, n) until it returns false. The
	// order is unspecified for heap backends; fn must not modify the map.
	Range(k K, n N, fn func(mk MK, mv MV) bool)
	// Clear removes every entry of (k, n).
	Clear(k K, n N)
	// Len returns the number of non-empty maps.
	Len() int
}

// NewMap creates a Map handle named name on b.
func NewMap[K comparable, N comparable, MK comparable, MV any](b Backend, name string) Map[K, N, MK, MV] {
	h := heapOf(b)
	t := &heapMap[K, N, MK, MV]{m: make(map[entryKey[K, N]]map[MK]MV)}
	h.tables = append(h.tables, t)
	return t
}

type heapMap[K comparable, N comparable, MK comparable, MV any] struct {
	m map[entryKey[K, N]]map[MK]MV
}

func (t *heapMap[K, N, MK, MV]) Get(k K, n N, mk MK) (MV, bool) {
	v, ok := t.m[entryKey[K, N]{k, n}][mk]
	return v, ok
}
func (t *heapMap[K, N, MK, MV]) Put(k K, n N, mk MK, mv MV) {
	ek := entryKey[K, N]{k, n}
	mm := t.m[ek]
	if mm == nil {
		mm = make(map[MK]MV)
		t.m[ek] = mm
	}
	mm[mk] = mv
}
func (t *heapMap[K, N, MK, MV]) Delete(k K, n N, mk MK) {
	ek := entryKey[K, N]{k, n}
	if mm := t.m[ek]; mm != nil {
		delete(mm, mk)
		if len(mm) == 0 {
			delete(t.m, ek)
		}
	}
}
func (t *heapMap[K, N, MK, MV]) Range(k K, n N, fn func(MK, MV) bool) {
	for mk, mv := range t.m[entryKey[K, N]{k, n}] {
		if !fn(mk, mv) {
			return
		}
	}
}
func (t *heapMap[K, N, MK, MV]) Clear(k K, n N) { delete(t.m, entryKey[K, N]{k, n}) }
func (t *heapMap[K, N, MK, MV]) Len() int       { return len(t.m) }

// AggregateFunc is an incremental aggregation: add, merge and result over an
// accumulator (Flink's AggregateFunction). Add and Merge may modify and
// return their first argument, never their second. Result's value goes
// downstream, possibly to another goroutine: when the accumulator holds
// maps, slices or pointers, Result must return a copy.
type AggregateFunc[IN, ACC, OUT any] interface {
	CreateAccumulator() ACC
	Add(acc ACC, in IN) ACC
	Merge(a, b ACC) ACC
	Result(acc ACC) OUT
}

// Aggregating keeps one accumulator per (key, namespace).
type Aggregating[K comparable, N comparable, IN, ACC, OUT any] interface {
	// Add folds in into the accumulator, creating it when absent.
	Add(k K, n N, in IN)
	// Get returns the result of the accumulator and whether it exists.
	Get(k K, n N) (OUT, bool)
	// MergeNamespaces merges the accumulators of srcs into target and
	// deletes them.
	MergeNamespaces(k K, target N, srcs []N)
	// Delete removes the accumulator.
	Delete(k K, n N)
	// Len returns the number of accumulators.
	Len() int
}

// NewAggregating creates an Aggregating handle named name on b.
func NewAggregating[K comparable, N comparable, IN, ACC, OUT any](b Backend, name string, f AggregateFunc[IN, ACC, OUT]) Aggregating[K, N, IN, ACC, OUT] {
	return &aggregating[K, N, IN, ACC, OUT]{v: NewValue[K, N, ACC](b, name), f: f}
}

type aggregating[K comparable, N comparable, IN, ACC, OUT any] struct {
	v Value[K, N, ACC]
	f AggregateFunc[IN, ACC, OUT]
}

func (a *aggregating[K, N, IN, ACC, OUT]) Add(k K, n N, in IN) {
	p := a.v.Ref(k, n, false)
	if p == nil {
		p = a.v.Ref(k, n, true)
		*p = a.f.CreateAccumulator()
	}
	*p = a.f.Add(*p, in)
}
func (a *aggregating[K, N, IN, ACC, OUT]) Get(k K, n N) (OUT, bool) {
	acc, ok := a.v.Get(k, n)
	if !ok {
		var z OUT
		return z, false
	}
	return a.f.Result(acc), true
}
func (a *aggregating[K, N, IN, ACC, OUT]) MergeNamespaces(k K, target N, srcs []N) {
	for _, s := range srcs {
		if s == target {
			continue
		}
		acc, ok := a.v.Get(k, s)
		if !ok {
			continue
		}
		a.v.Delete(k, s)
		p := a.v.Ref(k, target, false)
		if p == nil {
			a.v.Put(k, target, acc)
			continue
		}
		*p = a.f.Merge(*p, acc)
	}
}
func (a *aggregating[K, N, IN, ACC, OUT]) Delete(k K, n N) { a.v.Delete(k, n) }
func (a *aggregating[K, N, IN, ACC, OUT]) Len() int        { return a.v.Len() }
