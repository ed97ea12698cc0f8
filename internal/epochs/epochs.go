// Package epochs buffers a sink's output per subtask between checkpoints,
// so that what reaches a sink is exactly what checkpoints cover
// (docs/REQUIREMENTS.md R13). The root package's ToSink and the job
// runner's outputs use it.
package epochs

import (
	"cmp"
	"maps"
	"slices"
	"sync"
)

// Subtask names one parallel instance of a stage.
type Subtask struct {
	Stage string
	Index int
}

// Buffer buffers items per subtask epoch:
//
//   - Add buffers an item of subtask s's current epoch;
//   - Barrier closes s's epoch for checkpoint id (everything s emitted
//     before the barrier belongs to id, nothing after);
//   - Take, at the checkpoint's pre-commit, returns the closed epochs of id
//     and of any earlier, aborted checkpoints, in subtask order, for the
//     sink to write and make durable.
//
// In a deterministic run barriers pass every subtask at one instant, so one
// shared buffer keeps the items in processing order: the file is then
// byte-identical to a run without checkpoints.
//
// The items held are bounded (SetLimit): while a checkpoint's items are
// being written (committing, between BeginCommit and EndCommit: a
// pre-commit waiting for a sink), Add waits as long as limit items are
// held, so the subtasks stop and backpressure reaches the sources. Only
// then: a subtask blocked at another time could be one whose barrier the
// next checkpoint needs. So that a commit is under way before the bound
// is reached, Add calls full (which asks for a checkpoint now) when half
// of it is held with no commit under way (once until that commit ends);
// the bound holds as long as the
// subtasks emit less than the other half while that checkpoint's
// barriers pass (the results of the records in the queues), and beyond it
// nothing waits until the commit begins.
type Buffer[T any] struct {
	mu     sync.Mutex
	shared bool
	cur    map[Subtask]*chunks[T]
	staged map[int64]map[Subtask]*chunks[T]
	// n counts the items held: in cur and staged, and taken but not yet
	// handed to the sink; peak is n's highest.
	n, peak    int64
	limit      int64  // 0: no bound
	full       func() // called (e.mu not held) when n reaches limit/2 and no commit is under way
	committing bool
	requested  bool      // full was called since the last commit ended
	drained    sync.Cond // signalled when n drops or committing ends; L is &mu
	// prompt (SetPrompt) asks for a checkpoint after the given one;
	// passed is the last checkpoint whose barrier passed each subtask.
	prompt func(after int64)
	passed map[Subtask]int64
}

// chunks is an append-only list kept in chunks that double up to
// maxChunk items, so a long epoch (a million results fired at once)
// grows without copying what it holds.
type chunks[T any] struct {
	c [][]T
	// prompted: an item of this epoch asked for a checkpoint (AddPrompt).
	prompted bool
}

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

// New returns an empty buffer. With shared, every subtask's items go to
// one list in the order they were added (a deterministic run, where
// barriers pass every subtask at one instant).
func New[T any](shared bool) *Buffer[T] {
	e := &Buffer[T]{shared: shared, cur: map[Subtask]*chunks[T]{}, staged: map[int64]map[Subtask]*chunks[T]{}, passed: map[Subtask]int64{}}
	e.drained.L = &e.mu
	return e
}

// SetLimit bounds the items held to limit (0: no bound); full is called
// when half of it is reached while no commit is under way. Call it
// before the job runs.
func (e *Buffer[T]) SetLimit(limit int64, full func()) {
	e.limit, e.full = limit, full
}

// SetPrompt sets what AddPrompt calls (without the buffer's lock): ask
// for a checkpoint after checkpoint after (-1: any), unless one after it
// has begun. Call it before the job runs.
func (e *Buffer[T]) SetPrompt(prompt func(after int64)) { e.prompt = prompt }

// BeginCommit and EndCommit bracket the writing of a checkpoint's items
// (the pre-commit, on the coordinator's goroutine): meanwhile add waits
// while the bound is reached.
func (e *Buffer[T]) BeginCommit() {
	e.mu.Lock()
	e.committing = true
	e.mu.Unlock()
}

func (e *Buffer[T]) EndCommit() {
	e.mu.Lock()
	e.committing, e.requested = false, false
	e.mu.Unlock()
	e.drained.Broadcast()
}

// Held returns the number of items held now and at the most.
func (e *Buffer[T]) Held() (n, peak int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n, e.peak
}

func (e *Buffer[T]) key(s Subtask) Subtask {
	if e.shared {
		return Subtask{}
	}
	return s
}

// add buffers v in subtask s's epoch, on s's goroutine; it waits while
// the bound is reached and a commit is under way (see epochs).
func (e *Buffer[T]) Add(s Subtask, v T) { e.add(s, v, false) }

// AddPrompt is Add for an item that should not wait for the checkpoint
// interval (a window's early or on-time result): the first such item of
// s's epoch calls the prompt function (SetPrompt) with the last
// checkpoint whose barrier passed s (-1: none yet), whose next one covers
// the item.
func (e *Buffer[T]) AddPrompt(s Subtask, v T) { e.add(s, v, true) }

func (e *Buffer[T]) add(s Subtask, v T, prompt bool) {
	e.mu.Lock()
	for e.limit > 0 && e.n >= e.limit && e.committing {
		e.drained.Wait()
	}
	e.n++
	e.peak = max(e.peak, e.n)
	if e.limit > 0 && e.n >= (e.limit+1)/2 && !e.committing && !e.requested && e.full != nil {
		e.requested = true // once until the next commit ends
		defer e.full()
	}
	k := e.key(s)
	l := e.cur[k]
	if l == nil {
		l = &chunks[T]{}
		e.cur[k] = l
	}
	l.add(v)
	if prompt && !l.prompted && e.prompt != nil {
		l.prompted = true
		after, ok := e.passed[k]
		if !ok {
			after = -1
		}
		defer e.prompt(after) // after the unlock below
	}
	e.mu.Unlock()
}

func (e *Buffer[T]) Barrier(s Subtask, id int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	k := e.key(s)
	if e.prompt != nil {
		e.passed[k] = id // for AddPrompt
	}
	items := e.cur[k]
	if items == nil {
		return
	}
	delete(e.cur, k)
	if e.staged[id] == nil {
		e.staged[id] = map[Subtask]*chunks[T]{}
	}
	if st := e.staged[id][k]; st != nil {
		st.c = append(st.c, items.c...)
	} else {
		e.staged[id][k] = items
	}
}

// Take calls fn with the items of checkpoint id and earlier ones, oldest
// checkpoint first, then by subtask, and forgets them. fn runs with the
// buffer unlocked.
func (e *Buffer[T]) Take(id int64, fn func(*T)) {
	e.TakeBatches(id, eachItem(fn))
}

// TakeBatches is Take handing over the items a chunk at a time: fn gets
// them in the same order as consecutive slices, which it must not keep
// after it returns.
func (e *Buffer[T]) TakeBatches(id int64, fn func([]T)) {
	e.handOver(e.takeLists(id, false), fn)
}

// Rest calls fn with everything not yet taken (the end of a run), in the
// same order.
func (e *Buffer[T]) Rest(fn func(*T)) { e.RestBatches(eachItem(fn)) }

// RestBatches is Rest a chunk at a time, as TakeBatches.
func (e *Buffer[T]) RestBatches(fn func([]T)) {
	e.handOver(e.takeLists(1<<63-1, true), fn)
}

func eachItem[T any](fn func(*T)) func([]T) {
	return func(c []T) {
		for j := range c {
			fn(&c[j])
		}
	}
}

// handOver calls fn with the items of ls, chunk by chunk, forgetting each
// chunk once done with it: the items count as held until then.
func (e *Buffer[T]) handOver(ls []*chunks[T], fn func([]T)) {
	for _, l := range ls {
		for i, c := range l.c {
			fn(c)
			l.c[i] = nil
			e.mu.Lock()
			e.n -= int64(len(c))
			e.mu.Unlock()
			e.drained.Broadcast()
		}
	}
}

func (e *Buffer[T]) takeLists(id int64, all bool) []*chunks[T] {
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
func bySubtask[T any](m map[Subtask]*chunks[T]) []Subtask {
	return slices.SortedFunc(maps.Keys(m), func(a, b Subtask) int {
		return cmp.Or(cmp.Compare(a.Stage, b.Stage), cmp.Compare(a.Index, b.Index))
	})
}
