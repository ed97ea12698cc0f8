package record

import (
	"slices"
	"strings"

	"github.com/weirstream/weir/spec"
)

// Union is the plan a decoder of a path of several windows reads with:
// the key fields of every window (each once, in the order the windows
// first name them) and the aggregates of every window, one after the
// other. Project cuts its records down to one window's.
func Union(p *spec.Plan, windows []*spec.WindowOp) *spec.Plan {
	q := *p
	q.Key, q.Aggregates = nil, nil
	for _, w := range windows {
		for _, k := range w.Key {
			if !slices.Contains(q.Key, k) {
				q.Key = append(q.Key, k)
			}
		}
		q.Aggregates = append(q.Aggregates, w.Aggregates...)
	}
	return &q
}

// Projection cuts a record of a Union plan's decoder down to one
// window's: the window's key (its key fields' values, in its order) and
// its aggregates' inputs. It is safe for concurrent use.
type Projection struct {
	// keyAt are the positions of the window's key fields among the
	// union's; nil when the window's key is the union's own.
	keyAt  []int
	nUnion int
	// run: keyAt is a run of adjacent fields in order (a single field,
	// say), so that the window's key is a substring of the union's.
	run bool
	// from and to bound the window's aggregates among the union's.
	from, to int
}

// Project returns the projection of union's records (Union of the
// windows) onto windows[i].
func Project(union *spec.Plan, windows []*spec.WindowOp, i int) Projection {
	pr := Projection{nUnion: len(union.Key)}
	for _, w := range windows[:i] {
		pr.from += len(w.Aggregates)
	}
	pr.to = pr.from + len(windows[i].Aggregates)
	if !slices.Equal(windows[i].Key, union.Key) {
		pr.keyAt = make([]int, len(windows[i].Key))
		for j, k := range windows[i].Key {
			pr.keyAt[j] = slices.Index(union.Key, k)
		}
		if pr.keyAt == nil {
			pr.keyAt = []int{} // no key: every record is the one key ""
		}
		pr.run = true
		for j := 1; j < len(pr.keyAt); j++ {
			pr.run = pr.run && pr.keyAt[j] == pr.keyAt[j-1]+1
		}
	}
	return pr
}

// Apply returns r as the window's record. The aggregates' inputs are r's
// (not copied); the key is a substring of r's when the window's key
// fields are adjacent among the union's (one field, say), else a new
// string.
func (pr Projection) Apply(r Record) Record {
	if r.Mark != markNone {
		return r // a control line: no key, no inputs
	}
	r.vals = r.vals[pr.from:pr.to:pr.to]
	if pr.keyAt == nil {
		return r
	}
	if len(pr.keyAt) == 0 {
		r.Key = ""
		return r
	}
	// The fields' bounds in r.Key: field i is key[start[i]:start[i+1]-len(KeySep)].
	var buf [17]int
	start := buf[:0]
	if pr.nUnion >= len(buf) {
		start = make([]int, 0, pr.nUnion+1)
	}
	start = append(start, 0)
	for i, k := 0, r.Key; i < pr.nUnion-1; i++ {
		n := strings.Index(k[start[i]:], KeySep)
		if n < 0 {
			break // fewer fields than the union's: cannot happen
		}
		start = append(start, start[i]+n+len(KeySep))
	}
	start = append(start, len(r.Key)+len(KeySep))
	field := func(i int) (int, int) { return start[i], start[i+1] - len(KeySep) }
	if pr.run {
		from, _ := field(pr.keyAt[0])
		_, to := field(pr.keyAt[len(pr.keyAt)-1])
		r.Key = r.Key[from:to]
		return r
	}
	var b strings.Builder
	b.Grow(len(r.Key))
	for j, at := range pr.keyAt {
		if j > 0 {
			b.WriteString(KeySep)
		}
		from, to := field(at)
		b.WriteString(r.Key[from:to])
	}
	r.Key = b.String()
	return r
}
