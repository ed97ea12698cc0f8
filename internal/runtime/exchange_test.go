package runtime

import (
	"testing"

	"github.com/weirstream/weir/etime"
)

// TestUnionBatchesGoHome: two edges feed one gate (a union) whose handler
// was made by the first edge; a batch of the second edge goes back to the
// second edge's pool. Before, every batch went to the first edge's pool,
// so the second edge's writer allocated each batch anew (Nexmark q8: half
// of its batches, 0.55 s of its run).
func TestUnionBatchesGoHome(t *testing.T) {
	if raceOn {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	j := NewJob(Options{})
	a := &Stage{job: j, Name: "a", Par: 1}
	b := &Stage{job: j, Name: "b", Par: 1}
	u := &Stage{job: j, Name: "u", Par: 1, gates: []*Gate{{}}}
	ea := Connect[int](a, u, 0, nil)
	eb := Connect[int](b, u, 0, nil)
	st := &Subtask{stage: u, job: j}
	var got []int
	h := ea.GateHandler(st, Func[int]{OnRecord: func(_ etime.Time, v int) { got = append(got, v) }})
	for _, e := range []*Edge[int]{ea, eb} {
		bt := e.pool.Get().(*batch[int])
		bt.elems = append(bt.elems, elem[int]{kind: kRecord, v: 7})
		h(0, bt)
		if back := e.pool.Get().(*batch[int]); back != bt {
			t.Fatalf("edge %s: its batch did not come back to its pool", e.to.Name)
		}
	}
	if len(got) != 2 {
		t.Fatalf("records %v", got)
	}
}
