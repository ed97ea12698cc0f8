package timers

import "github.com/weirstream/weir/etime"

// heapItem is what a posHeap holds: a timestamp to order by, and its
// position in the heap, which the heap keeps up to date (-1 outside it).
type heapItem interface {
	heapTS() etime.Time
	heapPos() *int
}

// posHeap is a min-heap by timestamp whose items know their position, so
// that any item can be removed or put back in place in O(log n). Service
// and KVService order their timer groups with it.
type posHeap[T heapItem] []T

func (h *posHeap[T]) push(x T) {
	*x.heapPos() = len(*h)
	*h = append(*h, x)
	h.up(len(*h) - 1)
}

// remove takes the item at position i out of the heap.
func (h *posHeap[T]) remove(i int) {
	s := *h
	n := len(s) - 1
	x := s[i]
	if i != n {
		h.swap(i, n)
	}
	var zero T
	s[n] = zero
	*h = s[:n]
	*x.heapPos() = -1
	if i < n {
		h.fix(i)
	}
}

// fix restores the order after the timestamp of the item at i changed.
func (h *posHeap[T]) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h *posHeap[T]) swap(i, j int) {
	s := *h
	s[i], s[j] = s[j], s[i]
	*s[i].heapPos(), *s[j].heapPos() = i, j
}

func (h *posHeap[T]) up(i int) {
	s := *h
	for i > 0 {
		p := (i - 1) / 2
		if s[p].heapTS() <= s[i].heapTS() {
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
		if r := l + 1; r < n && s[r].heapTS() < s[l].heapTS() {
			m = r
		}
		if s[i].heapTS() <= s[m].heapTS() {
			break
		}
		h.swap(i, m)
		i = m
	}
	return i > i0
}
