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
}

// NewHasher returns a Hasher; enc gives the canonical encoding of keys that
// are neither integers nor strings (it may be nil for those).
func NewHasher[K comparable](enc func(dst []byte, k K) []byte) *Hasher[K] {
	return &Hasher[K]{enc: enc}
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
	h.buf = h.enc(h.buf[:0], k)
	return hashBytes(h.buf)
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

// NewKeyedValue creates a Value handle named name on b that stores one
// entry per (key, namespace) in one map. It suits namespaces that belong
// to a single key, such as session windows, where NewValue's layout (a map
// of keys per namespace) would hold a map per window. KV backends store
// both kinds alike.
func NewKeyedValue[K comparable, N comparable, V any](b Backend, name string) Value[K, N, V] {
	h := heapOf(b)
	t := &pairValue[K, N, V]{m: make(map[entryKey[K, N]]*V)}
	h.tables = append(h.tables, t)
	return t
}

type pairValue[K comparable, N comparable, V any] struct {
	m    map[entryKey[K, N]]*V
	free []*V
}

func (t *pairValue[K, N, V]) Get(k K, n N) (V, bool) {
	if p := t.m[entryKey[K, N]{k, n}]; p != nil {
		return *p, true
	}
	var z V
	return z, false
}

func (t *pairValue[K, N, V]) Put(k K, n N, v V) { *t.Ref(k, n, true) = v }

func (t *pairValue[K, N, V]) Delete(k K, n N) {
	ek := entryKey[K, N]{k, n}
	p := t.m[ek]
	if p == nil {
		return
	}
	delete(t.m, ek)
	var z V
	*p = z
	t.free = append(t.free, p)
}

func (t *pairValue[K, N, V]) Create(k K, n N) *V { return t.Ref(k, n, true) }

func (t *pairValue[K, N, V]) Ref(k K, n N, create bool) *V {
	ek := entryKey[K, N]{k, n}
	if p := t.m[ek]; p != nil || !create {
		return p
	}
	p := reuse(&t.free)
	t.m[ek] = p
	return p
}

func (t *pairValue[K, N, V]) Len() int { return len(t.m) }

func (t *pairValue[K, N, V]) Range(fn func(k K, n N, v *V) bool) {
	for ek, p := range t.m {
		if !fn(ek.k, ek.n, p) {
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
