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
	}
	return pr
}

// Apply returns r as the window's record. The aggregates' inputs are r's
// (not copied); the key is a new string when the window's key differs
// from the union's.
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
	parts := strings.SplitN(r.Key, KeySep, pr.nUnion)
	var b strings.Builder
	for j, at := range pr.keyAt {
		if j > 0 {
			b.WriteString(KeySep)
		}
		b.WriteString(parts[at])
	}
	r.Key = b.String()
	return r
}
