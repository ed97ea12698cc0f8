// Package timers is the timer service of keyed operators: timers identified
// by (timestamp, key, window), deduplicated, fired in ascending timestamp
// order (semantics C1-C4) with weir's deterministic tie-break among timers
// that share a timestamp (W5): window end, then the key's canonical encoding
// compared bytewise, then window start.
//
// A Service is owned by one operator instance and is not safe for concurrent
// use.
package timers

import (
	"bytes"
	"container/heap"
	"slices"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/window"
)

// Timer is one registered timer.
type Timer[K comparable] struct {
	TS     etime.Time
	Key    K
	Window window.Window
}

// KeyEncoder appends the canonical encoding of k to dst.
type KeyEncoder[K comparable] func(dst []byte, k K) []byte

// Service holds the timers of one time domain (event or processing time).
type Service[K comparable] struct {
	set  map[Timer[K]]struct{}
	h    tsHeap[K]
	enc  KeyEncoder[K]
	due  []Timer[K]
	keys []byte
	offs []int
	idx  []int
}

// New returns an empty service; enc orders timers with equal timestamps.
func New[K comparable](enc KeyEncoder[K]) *Service[K] {
	return &Service[K]{set: make(map[Timer[K]]struct{}), enc: enc}
}

// Register adds a timer; registering an existing timer is a no-op.
func (s *Service[K]) Register(t Timer[K]) {
	if _, ok := s.set[t]; ok {
		return
	}
	s.set[t] = struct{}{}
	heap.Push(&s.h, t)
	// Deleted timers stay in the heap until popped; compact when they
	// dominate so churn cannot grow the heap without bound.
	if len(s.h) > 64 && len(s.h) > 4*len(s.set) {
		s.compact()
	}
}

// Delete removes exactly timer t, if registered.
func (s *Service[K]) Delete(t Timer[K]) { delete(s.set, t) }

// Has reports whether t is registered.
func (s *Service[K]) Has(t Timer[K]) bool {
	_, ok := s.set[t]
	return ok
}

// Len returns the number of registered timers.
func (s *Service[K]) Len() int { return len(s.set) }

// Next returns the smallest registered timestamp.
func (s *Service[K]) Next() (etime.Time, bool) {
	for len(s.h) > 0 {
		if _, ok := s.set[s.h[0]]; ok {
			return s.h[0].TS, true
		}
		heap.Pop(&s.h)
	}
	return 0, false
}

// PopDue removes and returns every registered timer with the smallest
// timestamp, if that timestamp is <= upTo, in deterministic order. The
// returned slice is reused by the next call. Callers loop until it returns
// nothing, so timers registered while firing are picked up (C2). Before
// firing each returned timer, callers check Has: an earlier timer of the
// batch may have deleted it.
func (s *Service[K]) PopDue(upTo etime.Time) []Timer[K] {
	ts, ok := s.Next()
	if !ok || ts > upTo {
		return nil
	}
	s.due = s.due[:0]
	for len(s.h) > 0 && s.h[0].TS == ts {
		t := heap.Pop(&s.h).(Timer[K])
		if _, ok := s.set[t]; !ok {
			continue
		}
		// A timer deleted and registered again sits in the heap twice.
		if len(s.due) > 0 && slices.Contains(s.due, t) {
			continue
		}
		s.due = append(s.due, t)
	}
	if len(s.due) > 1 {
		s.sortDue()
	}
	return s.due
}

// Fired removes t from the registered set; call it before running t.
func (s *Service[K]) Fired(t Timer[K]) { delete(s.set, t) }

// All returns every registered timer (unordered), for snapshots and tests.
func (s *Service[K]) All() []Timer[K] {
	out := make([]Timer[K], 0, len(s.set))
	for t := range s.set {
		out = append(out, t)
	}
	return out
}

func (s *Service[K]) sortDue() {
	s.keys = s.keys[:0]
	s.offs = s.offs[:0]
	s.idx = s.idx[:0]
	for i, t := range s.due {
		s.offs = append(s.offs, len(s.keys))
		s.keys = s.enc(s.keys, t.Key)
		s.idx = append(s.idx, i)
	}
	s.offs = append(s.offs, len(s.keys))
	key := func(i int) []byte { return s.keys[s.offs[i]:s.offs[i+1]] }
	slices.SortFunc(s.idx, func(a, b int) int {
		ta, tb := s.due[a], s.due[b]
		if ta.Window.End != tb.Window.End {
			if ta.Window.End < tb.Window.End {
				return -1
			}
			return 1
		}
		if c := bytes.Compare(key(a), key(b)); c != 0 {
			return c
		}
		if ta.Window.Start != tb.Window.Start {
			if ta.Window.Start < tb.Window.Start {
				return -1
			}
			return 1
		}
		return 0
	})
	sorted := make([]Timer[K], len(s.due))
	for i, j := range s.idx {
		sorted[i] = s.due[j]
	}
	copy(s.due, sorted)
}

func (s *Service[K]) compact() {
	h := s.h[:0]
	seen := make(map[Timer[K]]struct{}, len(s.set))
	for _, t := range s.h {
		if _, ok := s.set[t]; !ok {
			continue
		}
		if _, dup := seen[t]; dup {
			continue
		}
		seen[t] = struct{}{}
		h = append(h, t)
	}
	s.h = h
	heap.Init(&s.h)
}

type tsHeap[K comparable] []Timer[K]

func (h tsHeap[K]) Len() int           { return len(h) }
func (h tsHeap[K]) Less(i, j int) bool { return h[i].TS < h[j].TS }
func (h tsHeap[K]) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *tsHeap[K]) Push(x any)        { *h = append(*h, x.(Timer[K])) }
func (h *tsHeap[K]) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}
