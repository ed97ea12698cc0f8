package job

import (
	"fmt"
	"strings"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/internal/record"
	"github.com/weirstream/weir/spec"
)

// branch is one window of the job's path: the plan as it reads for that
// window (its key, aggregates and assigner), the window's stage and its
// sinks. A YAML job has one; a plan whose graph feeds several windows
// from one read has one per window, each keyed, windowed and aggregated
// on its own, from records the decoder read once.
type branch struct {
	*spec.Branch
	i    int
	plan *spec.Plan
	// stage is the window operator's name: "window" for the first (a
	// YAML job's, as metrics and the dashboard name it), the window
	// node's name for the others.
	stage string
	// results are the window's results sinks, in the plan's order, each
	// writing every result; late and partial its late sinks (nil: none;
	// partial may be late).
	results       []namedResult
	late, partial recordSink
	// width is how many values a result carries (Aggregator.Width).
	width int
	// proj cuts the decoder's records down to this window's (nil when
	// one window reads the decoder's records, or this one reads a
	// window's results).
	proj *record.Projection
	// cascade turns the results of the window that feeds this one into
	// its records (nil: a read feeds it, or it is a Top-N or a join).
	cascade *cascade
	// topn ranks the results of the window that feeds this one; join
	// joins the results of the two windows that feed it (nil: not so).
	topn *topN
	join *join
}

// newBranches returns the branches of path's windows. decodes holds, per
// read, the plan of its source's settings; newBranches sets each to the
// plan its decoder reads with: its settings with the key and aggregates
// of the one window it feeds, else the union of its windows' keys and
// aggregates (record.Union), which each window's projection cuts down. A
// window fed by another window's results (semantics W12) reads them
// through its own decoder (cascade.go); a Top-N or a join ranks or pairs
// results (topn.go, join.go).
func newBranches(plan *spec.Plan, path *spec.Path, decodes []*spec.Plan, nulls *record.NullCount, clk clock.Clock) ([]*branch, error) {
	fed := make([][]*spec.WindowOp, len(decodes)) // per read, the windows it feeds
	for i := range path.Windows {
		if w := &path.Windows[i]; w.From < 0 {
			fed[w.Read] = append(fed[w.Read], w.Window)
		}
	}
	for r, ws := range fed {
		switch {
		case len(ws) == 0:
			return nil, fmt.Errorf("job: the plan's source %s feeds no window", path.Reads[r].Name)
		case len(ws) == 1:
			decodes[r] = decodes[r].ForWindow(ws[0])
		default:
			decodes[r] = record.Union(decodes[r], ws)
		}
	}
	bs := make([]*branch, len(path.Windows))
	at := make([]int, len(decodes)) // per read, the next window's index in fed
	for i := range path.Windows {
		op := path.Windows[i].Window
		b := &branch{Branch: &path.Windows[i], i: i, plan: plan.ForWindow(op), stage: "window"}
		if i > 0 {
			b.stage = path.Windows[i].Name
		}
		switch {
		case b.Join != nil:
			jn, err := newJoin(bs[b.From].plan, bs[b.Right].plan, b.Join, nulls)
			if err != nil {
				return nil, err
			}
			b.join = jn
			b.plan.Sinks, b.plan.Archive = spec.Sinks{}, nil
		case b.TopN != nil:
			b.topn = newTopN(bs[b.From].plan, b.TopN, op)
			// Its rows keep no accumulators (record.KeepsAccs looks at
			// the plan's sinks and archive).
			b.plan.Sinks, b.plan.Archive = spec.Sinks{}, nil
		case b.From >= 0:
			b.cascade = newCascade(bs[b.From].Name, bs[b.From].plan, b.plan, clk)
		default:
			if ws := fed[b.Read]; len(ws) > 1 {
				pr := record.Project(decodes[b.Read], ws, at[b.Read])
				b.proj = &pr
			}
			at[b.Read]++
		}
		b.width = record.NewAggregator(b.plan, record.KeepsAccs(b.plan)).Width()
		bs[i] = b
	}
	return bs, nil
}

// feeds are the indexes of the windows whose results feed b (none: the
// read does).
func (b *branch) feeds() []int {
	switch {
	case b.From < 0:
		return nil
	case b.join != nil:
		return []int{b.From, b.Right}
	}
	return []int{b.From}
}

// several reports whether the job has more than one window.
func (j *Job) several() bool { return len(j.branches) > 1 }

// counterName is a summary counter of branch b: name itself for a job of
// one window, else prefixed by the window's name ("hourly.accepted").
func (j *Job) counterName(b *branch, name string) string {
	if !j.several() {
		return name
	}
	return b.Name + "." + name
}

// windowOf is the window name of a prefixed counter name ("hourly" of
// "hourly.accepted"), "" for an unprefixed one.
func windowOf(counter string) string {
	i := strings.LastIndexByte(counter, '.')
	if i < 0 {
		return ""
	}
	return counter[:i]
}
