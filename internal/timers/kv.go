package timers

import (
	"encoding/binary"
	"fmt"
	"slices"
	"unsafe"

	"github.com/google/btree"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/window"
)

// DefaultHeadCache is the number of each key group's earliest timers a
// KVService keeps in memory.
const DefaultHeadCache = 256

// KVService is the timer service with its timers in a state.KV, for state
// larger than memory. A timer is the key
//
//	[key group][tag][timestamp][window end][window start][key]
//
// with the times as order-preserving big-endian bytes and an empty value,
// so each key group's timers are a range in time order.
//
// Each key group with timers has a head cache: an ordered set holding
// exactly the group's timers whose KV key is below the group's bound (all
// of them when it has none), so the group's earliest timers are in memory
// (Flink keeps such a cache in front of RocksDB timers too). Every timer
// at or above the bound is in the KV; a cached timer is written to the KV
// only when a trim moves the bound below it (write-back: most timers are
// registered and fired, or deleted, without touching the KV), or when
// Range needs the KV to hold them all. Registering, deleting and looking
// up a timer below the bound, finding the next timestamp and popping due
// timers touch only memory (and deletes of timers the KV holds); a timer
// at or above the bound costs a KV lookup. A group's cache holds at most
// 2×head timers (trimmed back to head, lowering its bound) and is
// refilled from the KV, head timers at a time, when it runs empty; popping
// a timestamp whose timers do not fit in the cache extends it to hold all
// of them.
//
// Like Service it is owned by one operator instance; a KV error (a broken
// disk) panics, which fails the job.
type KVService[K comparable] struct {
	kv    state.KV
	tag   byte
	kc    state.Codec[K]
	kg    func(K) state.KeyGroup
	enc   KeyEncoder[K]
	head  int
	n     int
	bytes int64 // the timers' key bytes

	groups map[state.KeyGroup]*kvGroup[K]
	h      posHeap[*kvGroup[K]] // the groups with timers, by minimum

	buf   []byte
	due   []Timer[K]
	order sorter[K]
}

// kvTimer is a cached timer with its KV key; stored says the KV holds it
// too.
type kvTimer[K comparable] struct {
	key    string
	t      Timer[K]
	stored bool
}

func lessKVTimer[K comparable](a, b kvTimer[K]) bool { return a.key < b.key }

// kvGroup is one key group's head cache.
type kvGroup[K comparable] struct {
	kg    state.KeyGroup
	cache *btree.BTreeG[kvTimer[K]]
	// bound: when partial, the cache holds exactly the timers with keys
	// below bound, and the KV may hold more from bound on.
	bound   string
	partial bool
	at      int // index in the heap, ordered by the smallest cached timestamp
}

func (g *kvGroup[K]) heapPos() *int { return &g.at }

// below reports whether key is in the range the cache holds exactly.
func (g *kvGroup[K]) below(key []byte) bool {
	return !g.partial || unsafe.String(unsafe.SliceData(key), len(key)) < g.bound
}

var _ Timers[int] = (*KVService[int])(nil)

// NewKV returns an empty KV-backed service with a head cache of
// DefaultHeadCache timers per key group; enc orders timers with equal
// timestamps (W5), kc encodes keys and kg maps them to key groups.
func NewKV[K comparable](kv state.KV, tag byte, enc KeyEncoder[K], kc state.Codec[K], kg func(K) state.KeyGroup) *KVService[K] {
	return NewKVHead(kv, tag, enc, kc, kg, DefaultHeadCache)
}

// NewKVHead is NewKV with head cached timers per key group (at least 1).
func NewKVHead[K comparable](kv state.KV, tag byte, enc KeyEncoder[K], kc state.Codec[K], kg func(K) state.KeyGroup, head int) *KVService[K] {
	return &KVService[K]{kv: kv, tag: tag, kc: kc, kg: kg, enc: enc, head: max(head, 1), groups: map[state.KeyGroup]*kvGroup[K]{}}
}

func orderedTime(dst []byte, t etime.Time) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(t)^(1<<63))
}

func readTime(b []byte) etime.Time { return etime.Time(binary.BigEndian.Uint64(b) ^ (1 << 63)) }

// prefix is the start of key group kg's timers.
func (s *KVService[K]) prefix(dst []byte, kg state.KeyGroup) []byte {
	return append(state.AppendKeyGroup(dst, kg), s.tag)
}

// groupEnd is the end of key group kg's timers.
func (s *KVService[K]) groupEnd(kg state.KeyGroup) []byte {
	return append(state.AppendKeyGroup(nil, kg), s.tag+1)
}

func (s *KVService[K]) key(t Timer[K]) []byte {
	b := s.prefix(s.buf[:0], s.kg(t.Key))
	b = orderedTime(b, t.TS)
	b = orderedTime(b, t.Window.End)
	b = orderedTime(b, t.Window.Start)
	b, err := s.kc.Append(b, t.Key)
	must(err)
	s.buf = b
	return b
}

func must(err error) {
	if err != nil {
		panic(fmt.Errorf("weir: timers: %w", err))
	}
}

// decode reads a timer from its KV key.
func (s *KVService[K]) decode(key []byte) Timer[K] {
	b := key[3:]
	if len(b) < 24 {
		must(fmt.Errorf("corrupt timer key %x", key))
	}
	t := Timer[K]{TS: readTime(b), Window: window.Window{End: readTime(b[8:]), Start: readTime(b[16:])}}
	k, err := s.kc.Decode(b[24:])
	must(err)
	t.Key = k
	return t
}

// probe is a cache item to look key up with; it views key.
func probe[K comparable](key []byte) kvTimer[K] {
	return kvTimer[K]{key: unsafe.String(unsafe.SliceData(key), len(key))}
}

// group returns kg's cache, creating an empty, complete one.
func (s *KVService[K]) group(kg state.KeyGroup) *kvGroup[K] {
	g := s.groups[kg]
	if g == nil {
		g = &kvGroup[K]{kg: kg, cache: btree.NewG(16, lessKVTimer[K]), at: -1}
		s.groups[kg] = g
	}
	return g
}

// kvHas reports whether the KV holds key.
func (s *KVService[K]) kvHas(key []byte) bool {
	_, ok, err := s.kv.Get(key)
	must(err)
	return ok
}

// Register implements Timers.
func (s *KVService[K]) Register(t Timer[K]) { s.register(t, false) }

// RegisterNew implements Timers: above the head cache's bound it writes
// without looking the timer up.
func (s *KVService[K]) RegisterNew(t Timer[K]) { s.register(t, true) }

func (s *KVService[K]) register(t Timer[K], isNew bool) {
	key := s.key(t)
	g := s.group(state.KeyGroupOfKey(key))
	if !g.below(key) {
		if isNew || !s.kvHas(key) {
			s.set(key)
		}
		return
	}
	if g.cache.Has(probe[K](key)) {
		return
	}
	s.count(len(key))
	g.cache.ReplaceOrInsert(kvTimer[K]{key: string(key), t: t})
	if g.cache.Len() > 2*s.head {
		s.trim(g)
	}
	s.fix(g)
}

// trim shrinks g's cache to head timers, lowering its bound; the timers
// it drops that the KV does not hold yet are written to it.
func (s *KVService[K]) trim(g *kvGroup[K]) {
	for g.cache.Len() > s.head {
		it, _ := g.cache.DeleteMax()
		if !it.stored {
			must(s.kv.Set(unsafe.Slice(unsafe.StringData(it.key), len(it.key)), nil))
		}
		g.bound, g.partial = it.key, true
	}
}

// store writes every cached timer the KV does not hold yet (Range).
func (s *KVService[K]) store() {
	var items []kvTimer[K]
	for _, g := range s.groups {
		items = items[:0]
		g.cache.Ascend(func(it kvTimer[K]) bool {
			if !it.stored {
				items = append(items, it)
			}
			return true
		})
		for _, it := range items {
			must(s.kv.Set([]byte(it.key), nil))
			it.stored = true
			g.cache.ReplaceOrInsert(it)
		}
	}
}

// Delete implements Timers.
func (s *KVService[K]) Delete(t Timer[K]) {
	key := s.key(t)
	g := s.groups[state.KeyGroupOfKey(key)]
	if g == nil {
		return // no timers in the group
	}
	if !g.below(key) {
		if s.kvHas(key) {
			s.remove(key)
		}
		return
	}
	it, ok := g.cache.Delete(probe[K](key))
	if !ok {
		return
	}
	if it.stored {
		must(s.kv.Delete(key))
	}
	s.count(-len(key))
	s.fix(g)
}

// set writes a new timer's key and counts it.
func (s *KVService[K]) set(key []byte) {
	must(s.kv.Set(key, nil))
	s.count(len(key))
}

// remove deletes a registered timer's key and uncounts it.
func (s *KVService[K]) remove(key []byte) {
	must(s.kv.Delete(key))
	s.count(-len(key))
}

// count adds a timer whose key has n bytes (n < 0: removes one).
func (s *KVService[K]) count(n int) {
	if n < 0 {
		s.n--
	} else {
		s.n++
	}
	s.bytes += int64(n)
}

// Has implements Timers.
func (s *KVService[K]) Has(t Timer[K]) bool {
	key := s.key(t)
	g := s.groups[state.KeyGroupOfKey(key)]
	switch {
	case g == nil:
		return false
	case g.below(key):
		return g.cache.Has(probe[K](key))
	}
	return s.kvHas(key)
}

// Len implements Timers.
func (s *KVService[K]) Len() int { return s.n }

// Bytes returns the bytes of the timers' KV keys.
func (s *KVService[K]) Bytes() int64 { return s.bytes }

// load adds to g's cache the timers of the KV from its bound on: at least
// head of them, and all that share the timestamp of the last one loaded
// when sameTS is set. It lifts the bound past what it loaded.
func (s *KVService[K]) load(g *kvGroup[K], sameTS bool) {
	start := []byte(g.bound)
	n := 0
	var last etime.Time
	g.partial = false
	must(s.kv.Scan(start, s.groupEnd(g.kg), func(k, _ []byte) bool {
		t := s.decode(k)
		if n >= s.head && (!sameTS || t.TS != last) {
			g.bound, g.partial = string(k), true
			return false
		}
		g.cache.ReplaceOrInsert(kvTimer[K]{key: string(k), t: t, stored: true})
		last = t.TS
		n++
		return true
	}))
	if !g.partial {
		g.bound = ""
	}
}

// fix restores g's place in the heap after its cache changed, refilling
// the cache from the KV when it ran empty, and forgets a group without
// timers.
func (s *KVService[K]) fix(g *kvGroup[K]) {
	if g.cache.Len() == 0 && g.partial {
		s.load(g, false)
	}
	if g.cache.Len() == 0 {
		if g.at >= 0 {
			s.h.remove(g.at)
		}
		delete(s.groups, g.kg)
		return
	}
	m, _ := g.cache.Min()
	if g.at < 0 {
		s.h.push(m.t.TS, g)
		return
	}
	s.h.fix(g.at, m.t.TS)
}

// Next implements Timers.
func (s *KVService[K]) Next() (etime.Time, bool) {
	if len(s.h) == 0 {
		return 0, false
	}
	return s.h[0].ts, true
}

// PopDue implements Timers: the timers with the smallest timestamp, from
// every key group that has them, in W5 order. They stay registered until
// Fired.
func (s *KVService[K]) PopDue(upTo etime.Time) []Timer[K] {
	ts, ok := s.Next()
	if !ok || ts > upTo {
		return nil
	}
	s.due = s.due[:0]
	s.collect(0, ts)
	if len(s.due) > 1 {
		s.due = s.order.sort(s.due, s.enc)
	}
	return s.due
}

// collect appends the timers at ts of the groups in the heap from index i
// on whose minimum is ts.
func (s *KVService[K]) collect(i int, ts etime.Time) {
	if i >= len(s.h) || s.h[i].ts != ts {
		return
	}
	g := s.h[i].x
	for {
		complete := true
		g.cache.Ascend(func(it kvTimer[K]) bool {
			if it.t.TS != ts {
				complete = false
				return false
			}
			s.due = append(s.due, it.t)
			return true
		})
		if !complete || !g.partial {
			break
		}
		// Every cached timer is at ts and the KV may hold more: cache
		// them all (they are about to fire) and look again.
		s.due = s.due[:len(s.due)-g.cache.Len()]
		s.load(g, true)
	}
	s.collect(2*i+1, ts)
	s.collect(2*i+2, ts)
}

// Fired implements Timers.
func (s *KVService[K]) Fired(t Timer[K]) { s.Delete(t) }

// Order implements Timers.
func (s *KVService[K]) Order(due []Timer[K]) []Timer[K] {
	s.due = s.order.sort(due, s.enc)
	return s.due
}

// Range implements Timers, in key order (key group, then time). It writes
// the cached timers to the KV first.
func (s *KVService[K]) Range(fn func(t Timer[K]) bool) {
	s.store()
	kgs := make([]state.KeyGroup, 0, len(s.groups))
	for kg := range s.groups {
		kgs = append(kgs, kg)
	}
	slices.Sort(kgs)
	for _, kg := range kgs {
		stop := false
		must(s.kv.Scan(s.prefix(nil, kg), s.groupEnd(kg), func(k, _ []byte) bool {
			stop = !fn(s.decode(k))
			return !stop
		}))
		if stop {
			return
		}
	}
}
