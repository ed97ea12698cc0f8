package spec

import (
	"cmp"
	"maps"
	"slices"
	"sync"

	"github.com/weirstream/weir"
)

// epochs buffers a sink's output per subtask between checkpoints, so that
// what reaches the sink's file is exactly what checkpoints cover (R13):
//
//   - add buffers an item of subtask s's current epoch;
//   - barrier closes s's epoch for checkpoint id (everything s emitted
//     before the barrier belongs to id, nothing after);
//   - take, at the checkpoint's pre-commit, returns the closed epochs of id
//     and of any earlier, aborted checkpoints, in subtask order, for the
//     sink to write and make durable.
//
// In a deterministic run barriers pass every subtask at one instant, so one
// shared buffer keeps the items in processing order: the file is then
// byte-identical to a run without checkpoints.
type epochs[T any] struct {
	mu     sync.Mutex
	shared bool
	cur    map[weir.Subtask]*chunks[T]
	staged map[int64]map[weir.Subtask]*chunks[T]
}

// chunks is an append-only list kept in chunks that double up to
// maxChunk items, so a long epoch (a million results fired at once)
// grows without copying what it holds.
type chunks[T any] struct{ c [][]T }

const maxChunk = 4096

func (l *chunks[T]) add(v T) {
	n := len(l.c)
	if n == 0 || len(l.c[n-1]) == cap(l.c[n-1]) {
		size := 16
		if n > 0 {
			size = min(2*cap(l.c[n-1]), maxChunk)
		}
		l.c = append(l.c, make([]T, 0, size))
		n++
	}
	l.c[n-1] = append(l.c[n-1], v)
}

func (l *chunks[T]) each(fn func(*T)) {
	for _, c := range l.c {
		for i := range c {
			fn(&c[i])
		}
	}
}

func newEpochs[T any](shared bool) *epochs[T] {
	return &epochs[T]{shared: shared, cur: map[weir.Subtask]*chunks[T]{}, staged: map[int64]map[weir.Subtask]*chunks[T]{}}
}

func (e *epochs[T]) key(s weir.Subtask) weir.Subtask {
	if e.shared {
		return weir.Subtask{}
	}
	return s
}

func (e *epochs[T]) add(s weir.Subtask, v T) {
	e.mu.Lock()
	k := e.key(s)
	l := e.cur[k]
	if l == nil {
		l = &chunks[T]{}
		e.cur[k] = l
	}
	l.add(v)
	e.mu.Unlock()
}

func (e *epochs[T]) barrier(s weir.Subtask, id int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	k := e.key(s)
	items := e.cur[k]
	if items == nil {
		return
	}
	delete(e.cur, k)
	if e.staged[id] == nil {
		e.staged[id] = map[weir.Subtask]*chunks[T]{}
	}
	if st := e.staged[id][k]; st != nil {
		st.c = append(st.c, items.c...)
	} else {
		e.staged[id][k] = items
	}
}

// take calls fn with the items of checkpoint id and earlier ones, oldest
// checkpoint first, then by subtask, and forgets them. fn runs with the
// epochs unlocked.
func (e *epochs[T]) take(id int64, fn func(*T)) {
	for _, l := range e.takeLists(id, false) {
		l.each(fn)
	}
}

// rest calls fn with everything not yet taken (the end of a run), in the
// same order.
func (e *epochs[T]) rest(fn func(*T)) {
	for _, l := range e.takeLists(1<<63-1, true) {
		l.each(fn)
	}
}

func (e *epochs[T]) takeLists(id int64, all bool) []*chunks[T] {
	e.mu.Lock()
	defer e.mu.Unlock()
	var ids []int64
	for i := range e.staged {
		if i <= id {
			ids = append(ids, i)
		}
	}
	slices.Sort(ids)
	var out []*chunks[T]
	for _, i := range ids {
		for _, s := range bySubtask(e.staged[i]) {
			out = append(out, e.staged[i][s])
		}
		delete(e.staged, i)
	}
	if all {
		for _, s := range bySubtask(e.cur) {
			out = append(out, e.cur[s])
		}
		clear(e.cur)
	}
	return out
}

// bySubtask returns m's subtasks in order: by stage, then index.
func bySubtask[T any](m map[weir.Subtask]*chunks[T]) []weir.Subtask {
	return slices.SortedFunc(maps.Keys(m), func(a, b weir.Subtask) int {
		return cmp.Or(cmp.Compare(a.Stage, b.Stage), cmp.Compare(a.Index, b.Index))
	})
}
