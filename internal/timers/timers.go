// Package timers is the timer service of keyed operators: timers identified
// by (timestamp, key, window), deduplicated, fired in ascending timestamp
// order (semantics C1-C4) with weir's deterministic tie-break among timers
// that share a timestamp (W5): window end, then the key's canonical encoding
// compared bytewise, then window start.
//
// Timers are stored in groups of one (timestamp, window): every key's
// end-of-window timer of a tumbling window is one group, so the heap holds
// groups, not timers, and registering a timer is one map insert.
//
// A Service is owned by one operator instance and is not safe for concurrent
// use. KVService is the same service with its timers in a state.KV (large
// state); Timers is what both implement.
package timers

import (
	"cmp"
	"slices"
	"strings"
	"unsafe"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/window"
)

// Timers is a timer service: Service keeps timers in memory, KVService in
// a KV.
type Timers[K comparable] interface {
	// Register adds a timer; registering an existing timer is a no-op.
	Register(t Timer[K])
	// RegisterNew adds a timer the caller knows is not registered (of a
	// window just created): it may skip the lookup Register does.
	RegisterNew(t Timer[K])
	// Delete removes exactly timer t, if registered.
	Delete(t Timer[K])
	// Has reports whether t is registered.
	Has(t Timer[K]) bool
	// Len returns the number of registered timers.
	Len() int
	// Next returns the smallest registered timestamp.
	Next() (etime.Time, bool)
	// PopDue returns the timers with the smallest timestamp if it is <=
	// upTo, in W5 order; see Service.PopDue.
	PopDue(upTo etime.Time) []Timer[K]
	// Fired removes t; call it before running t.
	Fired(t Timer[K])
	// Order sorts due (the last PopDue's timers, with timers the caller
	// added at the same timestamp) into W5 order and returns it, maybe
	// in another slice; it replaces the slice PopDue returned.
	Order(due []Timer[K]) []Timer[K]
	// Range calls fn for every timer until it returns false.
	Range(fn func(t Timer[K]) bool)
}

var _ Timers[int] = (*Service[int])(nil)

// Timer is one registered timer.
type Timer[K comparable] struct {
	TS     etime.Time
	Key    K
	Window window.Window
}

// KeyEncoder appends the canonical encoding of k to dst.
type KeyEncoder[K comparable] func(dst []byte, k K) []byte

func (g *group[K]) heapPos() *int { return &g.idx }

type groupKey struct {
	ts etime.Time
	w  window.Window
}

type group[K comparable] struct {
	groupKey
	keySet[K]
	idx int // position in the heap, -1 when not in it
}

// keySet is a group's keys: a slice while there are few (a session
// window's group holds its one key), a map once there are more (a
// tumbling window's group holds every key of the window).
type keySet[K comparable] struct {
	few  []K
	many map[K]struct{}
	big  bool // the keys are in many
}

// fewKeys is the most keys a keySet keeps in its slice.
const fewKeys = 8

func (ks *keySet[K]) has(k K) bool {
	if ks.big {
		_, ok := ks.many[k]
		return ok
	}
	for _, x := range ks.few {
		if x == k {
			return true
		}
	}
	return false
}

// add adds k, which the set does not hold.
func (ks *keySet[K]) add(k K) {
	if !ks.big {
		if len(ks.few) < fewKeys {
			ks.few = append(ks.few, k)
			return
		}
		if ks.many == nil {
			ks.many = make(map[K]struct{}, 2*fewKeys)
		}
		for _, x := range ks.few {
			ks.many[x] = struct{}{}
		}
		clear(ks.few)
		ks.few = ks.few[:0]
		ks.big = true
	}
	ks.many[k] = struct{}{}
}

// del removes k and reports whether the set held it.
func (ks *keySet[K]) del(k K) bool {
	if ks.big {
		if _, ok := ks.many[k]; !ok {
			return false
		}
		delete(ks.many, k)
		return true
	}
	for i, x := range ks.few {
		if x == k {
			last := len(ks.few) - 1
			ks.few[i] = ks.few[last]
			var z K
			ks.few[last] = z
			ks.few = ks.few[:last]
			return true
		}
	}
	return false
}

func (ks *keySet[K]) len() int {
	if ks.big {
		return len(ks.many)
	}
	return len(ks.few)
}

// each calls fn for every key until fn returns false.
func (ks *keySet[K]) each(fn func(k K) bool) {
	if ks.big {
		for k := range ks.many {
			if !fn(k) {
				return
			}
		}
		return
	}
	for _, k := range ks.few {
		if !fn(k) {
			return
		}
	}
}

// reset empties the set for reuse. clear drops the tombstones of the
// deleted keys, which would otherwise make the map grow again as it
// refills.
func (ks *keySet[K]) reset() {
	clear(ks.few)
	ks.few = ks.few[:0]
	clear(ks.many)
	ks.big = false
}

// Service holds the timers of one time domain (event or processing time).
type Service[K comparable] struct {
	groups map[groupKey]*group[K]
	last   *group[K]
	h      posHeap[*group[K]] // by ts
	n      int
	enc    KeyEncoder[K]
	free   []*group[K]

	due   []Timer[K]
	order sorter[K]
}

// New returns an empty service; enc orders timers with equal timestamps.
func New[K comparable](enc KeyEncoder[K]) *Service[K] {
	return &Service[K]{groups: make(map[groupKey]*group[K]), enc: enc}
}

func (s *Service[K]) group(ts etime.Time, w window.Window, create bool) *group[K] {
	gk := groupKey{ts, w}
	if s.last != nil && s.last.groupKey == gk {
		return s.last
	}
	g := s.groups[gk]
	if g == nil {
		if !create {
			return nil
		}
		if l := len(s.free); l > 0 {
			g = s.free[l-1]
			s.free = s.free[:l-1]
			g.groupKey = gk
		} else {
			g = &group[K]{groupKey: gk, idx: -1}
		}
		s.groups[gk] = g
	}
	s.last = g
	return g
}

// Register adds a timer; registering an existing timer is a no-op.
func (s *Service[K]) Register(t Timer[K]) {
	g := s.group(t.TS, t.Window, true)
	if g.has(t.Key) {
		return
	}
	g.add(t.Key)
	s.n++
	if g.idx < 0 {
		s.h.push(g.ts, g)
	}
}

// RegisterNew is Register: the lookup costs nothing in memory.
func (s *Service[K]) RegisterNew(t Timer[K]) { s.Register(t) }

// Delete removes exactly timer t, if registered.
func (s *Service[K]) Delete(t Timer[K]) {
	g := s.group(t.TS, t.Window, false)
	if g == nil {
		return
	}
	if !g.del(t.Key) {
		return
	}
	s.n--
	s.maybeDrop(g)
}

// maybeDrop forgets an empty group (taking it out of the heap), so that
// it and its map are reused: session windows make a group per window,
// emptied by every merge.
func (s *Service[K]) maybeDrop(g *group[K]) {
	if g.len() == 0 {
		if g.idx >= 0 {
			s.h.remove(g.idx)
		}
		delete(s.groups, g.groupKey)
		if s.last == g {
			s.last = nil
		}
		if len(s.free) < 4096 {
			g.reset()
			s.free = append(s.free, g)
		}
	}
}

// Has reports whether t is registered.
func (s *Service[K]) Has(t Timer[K]) bool {
	g := s.group(t.TS, t.Window, false)
	if g == nil {
		return false
	}
	return g.has(t.Key)
}

// Len returns the number of registered timers.
func (s *Service[K]) Len() int { return s.n }

// Next returns the smallest registered timestamp.
func (s *Service[K]) Next() (etime.Time, bool) {
	for len(s.h) > 0 {
		g := s.h[0].x
		if g.len() > 0 {
			return g.ts, true
		}
		s.h.remove(0)
		s.maybeDrop(g)
	}
	return 0, false
}

// PopDue returns every registered timer with the smallest timestamp, if
// that timestamp is <= upTo, in deterministic order; the slice is reused by
// the next call. The timers stay registered until Fired, so callers check
// Has before running each (an earlier timer of the batch may delete it) and
// loop until PopDue returns nothing, so timers registered while firing are
// picked up (C2).
func (s *Service[K]) PopDue(upTo etime.Time) []Timer[K] {
	ts, ok := s.Next()
	if !ok || ts > upTo {
		return nil
	}
	s.due = s.due[:0]
	for len(s.h) > 0 && s.h[0].ts == ts {
		g := s.h[0].x
		s.h.remove(0)
		s.due = slices.Grow(s.due, g.len())
		if g.big {
			for k := range g.many {
				s.due = append(s.due, Timer[K]{TS: g.ts, Key: k, Window: g.w})
			}
		} else {
			for _, k := range g.few {
				s.due = append(s.due, Timer[K]{TS: g.ts, Key: k, Window: g.w})
			}
		}
		s.maybeDrop(g)
	}
	if len(s.due) > 1 {
		s.sortDue()
	}
	return s.due
}

// Fired removes t from the registered set; call it before running t.
func (s *Service[K]) Fired(t Timer[K]) { s.Delete(t) }

// Order implements Timers.
func (s *Service[K]) Order(due []Timer[K]) []Timer[K] {
	s.due = s.order.sort(due, s.enc)
	return s.due
}

// sortDue orders the due timers (W5).
func (s *Service[K]) sortDue() { s.due = s.order.sort(s.due, s.enc) }

// sorter orders due timers by W5: window end, key encoding, window start.
// Its buffers are reused from call to call.
type sorter[K comparable] struct {
	keys   keyArena
	items  []sortItem
	tmp    []Timer[K]
	byKey  KeyOrder[K]
	keyBuf []K
}

// sort returns due in W5 order (the slice may be another one).
func (o *sorter[K]) sort(due []Timer[K], enc KeyEncoder[K]) []Timer[K] {
	o.tmp = slices.Grow(o.tmp[:0], len(due))
	if sameWindow(due) {
		// One window (every key's timer of a processing-time window):
		// W5 is the keys' order, which KeyOrder radix-sorts.
		o.keyBuf = slices.Grow(o.keyBuf[:0], len(due))
		for _, t := range due {
			o.keyBuf = append(o.keyBuf, t.Key)
		}
		for _, i := range o.byKey.Sort(o.keyBuf, enc) {
			o.tmp = append(o.tmp, due[i])
		}
		clear(o.keyBuf)
		out := o.tmp
		o.tmp = due
		return out
	}
	encodeKeys(&o.keys, len(due), func(i int) K { return due[i].Key }, enc)
	o.items = slices.Grow(o.items[:0], len(due))
	for i, t := range due {
		o.items = append(o.items, sortItem{end: t.Window.End, start: t.Window.Start, keyItem: o.keys.item(i)})
	}
	slices.SortFunc(o.items, func(a, b sortItem) int {
		if a.end != b.end {
			return cmp.Compare(a.end, b.end)
		}
		if c := cmpKeys(&a.keyItem, &b.keyItem); c != 0 {
			return c
		}
		return cmp.Compare(a.start, b.start)
	})
	for _, it := range o.items {
		o.tmp = append(o.tmp, due[it.i])
	}
	out := o.tmp
	o.tmp = due
	return out
}

// sameWindow reports whether every timer of due has the same window.
func sameWindow[K comparable](due []Timer[K]) bool {
	for i := 1; i < len(due); i++ {
		if due[i].Window != due[0].Window {
			return false
		}
	}
	return true
}

type sortItem struct {
	end, start etime.Time
	keyItem
}

// KeyOrder sorts keys by W5's tie-break: their canonical encoding compared
// bytewise. An operator that fires a whole window at once sorts the
// window's keys with it. Its buffers are reused from call to call.
type KeyOrder[K comparable] struct {
	keys       keyArena
	items, tmp []prefixItem
	perm       []int32
}

type prefixItem struct {
	prefix uint64 // see keyPrefix
	i      int32
}

// Sort returns the positions of keys in W5 order; the slice is reused by
// the next call. Keys are radix-sorted on their first 8 bytes (which tell
// integers and short strings apart), then runs with equal first bytes are
// sorted by their whole encodings.
func (o *KeyOrder[K]) Sort(keys []K, enc KeyEncoder[K]) []int32 {
	encodeKeys(&o.keys, len(keys), func(i int) K { return keys[i] }, enc)
	o.items = o.items[:0]
	for i := range keys {
		o.items = append(o.items, prefixItem{keyPrefix(o.keys.key(i)), int32(i)})
	}
	o.tmp = slices.Grow(o.tmp[:0], len(o.items))[:len(o.items)]
	items := radixSort(o.items, o.tmp)
	for i := 0; i < len(items); {
		j := i + 1
		for j < len(items) && items[j].prefix == items[i].prefix {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(items[i:j], func(a, b prefixItem) int {
				return strings.Compare(o.keys.key(int(a.i)), o.keys.key(int(b.i)))
			})
		}
		i = j
	}
	o.perm = o.perm[:0]
	for _, it := range items {
		o.perm = append(o.perm, it.i)
	}
	return o.perm
}

// radixSort sorts items by prefix: least significant byte first, skipping
// the bytes that all items share. It returns items or tmp, whichever holds
// the result; tmp must be as long as items.
func radixSort(items, tmp []prefixItem) []prefixItem {
	if len(items) < 32 {
		slices.SortFunc(items, func(a, b prefixItem) int { return cmp.Compare(a.prefix, b.prefix) })
		return items
	}
	and, or := ^uint64(0), uint64(0)
	for _, it := range items {
		and &= it.prefix
		or |= it.prefix
	}
	diff := and ^ or
	for shift := uint(0); shift < 64; shift += 8 {
		if (diff>>shift)&0xff == 0 {
			continue
		}
		var count [256]int
		for _, it := range items {
			count[(it.prefix>>shift)&0xff]++
		}
		sum := 0
		for b, c := range count {
			count[b] = sum
			sum += c
		}
		for _, it := range items {
			d := (it.prefix >> shift) & 0xff
			tmp[count[d]] = it
			count[d]++
		}
		items, tmp = tmp, items
	}
	return items
}

// keyArena holds the encodings of a batch of keys in one buffer, viewed
// as strings.
type keyArena struct {
	buf   []byte
	offs  []int
	arena string
}

// encodeKeys fills a with the encodings of the n keys key(0) ... key(n-1).
func encodeKeys[K comparable](a *keyArena, n int, key func(int) K, enc KeyEncoder[K]) {
	a.buf = a.buf[:0]
	a.offs = a.offs[:0]
	for i := range n {
		a.offs = append(a.offs, len(a.buf))
		a.buf = enc(a.buf, key(i))
	}
	a.offs = append(a.offs, len(a.buf))
	a.arena = unsafe.String(unsafe.SliceData(a.buf), len(a.buf))
}

// key returns the encoding of the i-th key.
func (a *keyArena) key(i int) string { return a.arena[a.offs[i]:a.offs[i+1]] }

// item returns the sort item of the i-th key.
func (a *keyArena) item(i int) keyItem {
	k := a.key(i)
	return keyItem{prefix: keyPrefix(k), key: k, i: int32(i)}
}

type keyItem struct {
	prefix uint64 // the key's first 8 bytes, big-endian, zero-padded
	key    string
	i      int32
}

// cmpKeys compares two keys' encodings bytewise. Keys whose first 8 bytes
// differ compare as those bytes do; most keys (integers, short strings)
// are told apart there.
func cmpKeys(a, b *keyItem) int {
	if a.prefix != b.prefix {
		return cmp.Compare(a.prefix, b.prefix)
	}
	return strings.Compare(a.key, b.key)
}

// keyPrefix is the first 8 bytes of k as a big-endian integer, padded with
// zeros. Two keys with different prefixes compare as their prefixes: the
// first byte where the prefixes differ is either a byte where the keys
// differ, or a byte that one key has (non-zero) and the other, shorter
// one does not, which bytewise order also puts second.
func keyPrefix(k string) uint64 {
	var p uint64
	for i := range 8 {
		p <<= 8
		if i < len(k) {
			p |= uint64(k[i])
		}
	}
	return p
}

// Range calls fn for every registered timer until fn returns false
// (snapshots). The order is unspecified.
func (s *Service[K]) Range(fn func(t Timer[K]) bool) {
	for gk, g := range s.groups {
		more := true
		g.each(func(k K) bool {
			more = fn(Timer[K]{TS: gk.ts, Key: k, Window: gk.w})
			return more
		})
		if !more {
			return
		}
	}
}
