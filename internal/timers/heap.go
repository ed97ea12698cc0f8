package timers

import "github.com/weirstream/weir/etime"

// heapItem is what a posHeap holds: something that knows its position in
// the heap, which the heap keeps up to date (-1 outside it).
type heapItem interface {
	heapPos() *int
}

// heapSlot is one place of a posHeap: the item, the timestamp it is
// ordered by and its position field, kept inline so that sifting compares
// and moves slots without calling the item's methods or reading it.
type heapSlot[T any] struct {
	ts  etime.Time
	pos *int
	x   T
}

// posHeap is a min-heap by timestamp whose items know their position, so
// that any item can be removed or put back in place in O(log n). Service
// and KVService order their timer groups with it.
type posHeap[T heapItem] []heapSlot[T]

func (h *posHeap[T]) push(ts etime.Time, x T) {
	p := x.heapPos()
	*p = len(*h)
	*h = append(*h, heapSlot[T]{ts: ts, pos: p, x: x})
	h.up(len(*h) - 1)
}

// remove takes the item at position i out of the heap.
func (h *posHeap[T]) remove(i int) {
	s := *h
	n := len(s) - 1
	p := s[i].pos
	if i != n {
		h.swap(i, n)
	}
	s[n] = heapSlot[T]{}
	*h = s[:n]
	*p = -1
	if i < n {
		h.fix(i, s[i].ts)
	}
}

// fix sets the timestamp of the item at i and restores the order.
func (h *posHeap[T]) fix(i int, ts etime.Time) {
	(*h)[i].ts = ts
	if !h.down(i) {
		h.up(i)
	}
}

func (h *posHeap[T]) swap(i, j int) {
	s := *h
	s[i], s[j] = s[j], s[i]
	*s[i].pos, *s[j].pos = i, j
}

func (h *posHeap[T]) up(i int) {
	s := *h
	for i > 0 {
		p := (i - 1) / 2
		if s[p].ts <= s[i].ts {
			return
		}
		h.swap(p, i)
		i = p
	}
}

// down sifts i down and reports whether it moved.
func (h *posHeap[T]) down(i int) bool {
	s := *h
	i0, n := i, len(s)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && s[r].ts < s[l].ts {
			m = r
		}
		if s[i].ts <= s[m].ts {
			break
		}
		h.swap(i, m)
		i = m
	}
	return i > i0
}
