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
//
// The items held are bounded (setLimit): while a checkpoint's items are
// being written (committing, between beginCommit and endCommit: a
// pre-commit waiting for a sink), add waits as long as limit items are
// held, so the subtasks stop and backpressure reaches the sources. Only
// then: a subtask blocked at another time could be one whose barrier the
// next checkpoint needs. So that a commit is under way before the bound
// is reached, add calls full (which asks for a checkpoint now) when half
// of it is held with no commit under way; the bound holds as long as the
// subtasks emit less than the other half while that checkpoint's
// barriers pass (the results of the records in the queues), and beyond it
// nothing waits until the commit begins.
type epochs[T any] struct {
	mu     sync.Mutex
	shared bool
	cur    map[weir.Subtask]*chunks[T]
	staged map[int64]map[weir.Subtask]*chunks[T]
	// n counts the items held: in cur and staged, and taken but not yet
	// handed to the sink; peak is n's highest.
	n, peak    int64
	limit      int64  // 0: no bound
	full       func() // called (e.mu not held) when n reaches limit/2 and no commit is under way
	committing bool
	drained    sync.Cond // signalled when n drops or committing ends; L is &mu
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

func newEpochs[T any](shared bool) *epochs[T] {
	e := &epochs[T]{shared: shared, cur: map[weir.Subtask]*chunks[T]{}, staged: map[int64]map[weir.Subtask]*chunks[T]{}}
	e.drained.L = &e.mu
	return e
}

// setLimit bounds the items held to limit (0: no bound); full is called
// when half of it is reached while no commit is under way. Call it
// before the job runs.
func (e *epochs[T]) setLimit(limit int64, full func()) {
	e.limit, e.full = limit, full
}

// beginCommit and endCommit bracket the writing of a checkpoint's items
// (the pre-commit, on the coordinator's goroutine): meanwhile add waits
// while the bound is reached.
func (e *epochs[T]) beginCommit() {
	e.mu.Lock()
	e.committing = true
	e.mu.Unlock()
}

func (e *epochs[T]) endCommit() {
	e.mu.Lock()
	e.committing = false
	e.mu.Unlock()
	e.drained.Broadcast()
}

// held returns the number of items held now and at the most.
func (e *epochs[T]) held() (n, peak int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n, e.peak
}

func (e *epochs[T]) key(s weir.Subtask) weir.Subtask {
	if e.shared {
		return weir.Subtask{}
	}
	return s
}

// add buffers v in subtask s's epoch, on s's goroutine; it waits while
// the bound is reached and a commit is under way (see epochs).
func (e *epochs[T]) add(s weir.Subtask, v T) {
	e.mu.Lock()
	for e.limit > 0 && e.n >= e.limit && e.committing {
		e.drained.Wait()
	}
	e.n++
	e.peak = max(e.peak, e.n)
	if e.limit > 0 && e.n == (e.limit+1)/2 && !e.committing && e.full != nil {
		defer e.full()
	}
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
	e.handOver(e.takeLists(id, false), fn)
}

// rest calls fn with everything not yet taken (the end of a run), in the
// same order.
func (e *epochs[T]) rest(fn func(*T)) {
	e.handOver(e.takeLists(1<<63-1, true), fn)
}

// handOver calls fn with the items of ls, chunk by chunk, forgetting each
// chunk once done with it: the items count as held until then.
func (e *epochs[T]) handOver(ls []*chunks[T], fn func(*T)) {
	for _, l := range ls {
		for i, c := range l.c {
			for j := range c {
				fn(&c[j])
			}
			l.c[i] = nil
			e.mu.Lock()
			e.n -= int64(len(c))
			e.mu.Unlock()
			e.drained.Broadcast()
		}
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
