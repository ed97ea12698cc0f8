package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/window"
)

// Composing plans: a front end that compiles each windowed aggregation
// of a job to a plan of one window (a YAML spec's) builds the job's graph
// from them: a window join of two plans' windows (JoinPlans), or a Top-N
// or a second window fed by a plan's window (FeedPlan). The composed
// plan is the first plan's, with the other's nodes and the new operator
// in its graph and their definitions in its Definition, so that a
// checkpoint or a ledger entry of one job is never read as another's.

// FeedPlan returns plan up with op (a *WindowOp: a cascade, semantics
// W12; a *TopNOp: W13), node name, fed by up's window: up's results
// sinks take op's results instead, so that up's window feeds op alone.
// def records op for the Definition (its fields, as JSON under name).
func FeedPlan(up *Plan, op Op, name string, def any) (*Plan, error) {
	switch op.(type) {
	case *WindowOp, *TopNOp:
	default:
		return nil, fmt.Errorf("spec: a window's results feed a window or a Top-N, not a %s", op.Kind())
	}
	q := *up
	win, err := onlyWindow(up)
	if err != nil {
		return nil, err
	}
	nodes, results := withoutResults(up.Graph.Nodes, win)
	id := NodeID(len(nodes))
	nodes = append(nodes, Node{ID: id, Name: name, Op: op, Inputs: []Edge{{From: win}}})
	q.Graph.Nodes = appendResults(nodes, results, id)
	if err := q.define(name, def); err != nil {
		return nil, err
	}
	return q.checked()
}

// Attach returns window op as a window over the results of window up
// (node upName) grouped by their windows (semantics W18): op's windows
// are up's own (window.Attached).
func Attach(op, up *WindowOp, upName string) (*WindowOp, error) {
	a, err := window.Attached(up.Assigner)
	if err != nil {
		return nil, err
	}
	w := *op
	w.Assigner, w.Shape = a, "the windows of "+upName
	return &w, nil
}

// JoinPlans returns the plan of join op (node name; semantics W14) of
// left's results window (the first input) with right's (each plan's
// window, or the last of a cascade, resultsWindow): right's nodes follow
// left's, named after prefix (left's window after leftPrefix), its source
// reading with right's settings (a second read), unless both read one
// source the same way (one read); the join's results go to left's results sinks, and
// right's results sinks are left out. Right's other sinks (late, dead
// letters) are kept under names after prefix. def records the join for
// the Definition, and right's definition is recorded under prefix.
func JoinPlans(left, right *Plan, op *JoinOp, name, leftPrefix, prefix string, def any) (*Plan, error) {
	if left.Zone != right.Zone {
		return nil, fmt.Errorf("spec: the join's sides cut their windows in different time zones (%v and %v from UTC); give both one time zone", left.Zone, right.Zone)
	}
	lw, err := resultsWindow(left)
	if err != nil {
		return nil, err
	}
	rw, err := resultsWindow(right)
	if err != nil {
		return nil, err
	}
	q := *left
	nodes, results := withoutResults(left.Graph.Nodes, lw)
	for i := range nodes {
		switch nodes[i].Op.(type) {
		case *WindowOp, *SelectOp:
			nodes[i].Name = leftPrefix + nodes[i].Name
		}
	}
	rnodes, _ := withoutResults(right.Graph.Nodes, rw)
	// Sides that read one source the same way share its read (one
	// decode, one watermark), as UnitePlans' queries do.
	shared, skip := sharedRead(left, right)
	nodes, ids := appendPlan(nodes, right, rnodes, prefix, shared, skip)
	id := NodeID(len(nodes))
	nodes = append(nodes, Node{ID: id, Name: name, Op: op, Inputs: []Edge{{From: lw}, {From: ids[rw]}}})
	q.Graph.Nodes = appendResults(nodes, results, id)
	q.defineAll(right, prefix, false)
	if err := q.define(name, def); err != nil {
		return nil, err
	}
	return q.checked()
}

// UnitePlans returns plan p with plan q's windows (and the joins, Top-Ns
// and selects of them) and sinks added (a statement set of several
// queries): q's first read is p's first read
// when q reads the same source the same way (its source, decode and
// watermark operators equal p's), else a read of its own; its nodes and
// sinks are named after prefix. q's dead letters, on a shared read, are
// p's (one sink of that stream). q's definition is recorded under
// prefix.
func UnitePlans(p, q *Plan, prefix string) (*Plan, error) {
	if _, err := q.Graph.Path(); err != nil {
		return nil, err
	}
	if p.Zone != q.Zone {
		// The job's rows show window bounds in one zone (ShownBounds).
		return nil, fmt.Errorf("spec: the plans cut their windows in different time zones (%v and %v from UTC); give their windows one time zone", p.Zone, q.Zone)
	}
	u := *p
	nodes := slices.Clone(p.Graph.Nodes)
	shared, skip := sharedRead(p, q)
	nodes, _ = appendPlan(nodes, q, q.Graph.Nodes, prefix, shared, skip)
	u.Graph.Nodes = nodes
	u.defineAll(q, prefix, true)
	return u.checked()
}

// sharedRead maps q's source, decode and watermark nodes to p's first
// three when both read one source the same way (same), with a skip of
// q's dead-letter sink (the shared read's dead letters are p's); else
// nothing is shared.
func sharedRead(p, q *Plan) (map[NodeID]NodeID, func(Node) bool) {
	shared := map[NodeID]NodeID{}
	if !same(p, q) {
		return shared, nil
	}
	for i := range 3 {
		shared[q.Graph.Nodes[i].ID] = p.Graph.Nodes[i].ID
	}
	return shared, func(n Node) bool { return len(n.Inputs) == 1 && n.Inputs[0].Port == Dead }
}

// same reports whether plans p and q read one source the same way: the
// first three nodes of each (source, decode, watermark) are alike.
func same(p, q *Plan) bool {
	if len(p.Graph.Nodes) < 3 || len(q.Graph.Nodes) < 3 {
		return false
	}
	for i := range 3 {
		var a, b any = p.Graph.Nodes[i].Op, q.Graph.Nodes[i].Op
		if sa, ok := a.(*SourceOp); ok {
			sb, ok := b.(*SourceOp)
			if !ok || sb.Settings != nil || sa.Settings != nil || sa.Type != sb.Type || sa.Start != sb.Start {
				return false
			}
			a, b = sa.Config, sb.Config
		}
		ja, errA := json.Marshal(a)
		jb, errB := json.Marshal(b)
		if errA != nil || errB != nil || !bytes.Equal(ja, jb) || reflect.TypeOf(a) != reflect.TypeOf(b) {
			return false
		}
	}
	return true
}

// appendPlan appends plan q's nodes qnodes to nodes, renumbered, named
// after prefix, its sources reading with q's settings (a read of their
// own), its sinks named after prefix; a node in shared is not appended
// (its readers read the node it maps to), nor one skip reports. It
// returns the nodes and the map from q's ids to theirs.
func appendPlan(nodes []Node, q *Plan, qnodes []Node, prefix string, shared map[NodeID]NodeID, skip ...func(Node) bool) ([]Node, map[NodeID]NodeID) {
	ids := map[NodeID]NodeID{}
	for k, v := range shared {
		ids[k] = v
	}
	for _, n := range qnodes {
		if _, ok := shared[n.ID]; ok || len(skip) > 0 && skip[0] != nil && skip[0](n) {
			continue
		}
		m := Node{ID: NodeID(len(nodes)), Name: prefix + n.Name, Op: n.Op}
		ids[n.ID] = m.ID
		for _, e := range n.Inputs {
			m.Inputs = append(m.Inputs, Edge{From: ids[e.From], Port: e.Port})
		}
		switch op := n.Op.(type) {
		case *SourceOp:
			src := *op
			if src.Settings == nil { // a second read of q's own (a join's right side keeps its own)
				src.Settings = q
			}
			m.Op = &src
		case *SinkOp:
			s := *op
			s.Name = sinkPrefix(prefix) + s.Name
			s.Path = prefix + s.Path
			m.Op = &s
		}
		nodes = append(nodes, m)
	}
	return nodes, ids
}

// sinkPrefix is prefix as a sink name's: its dots as underscores.
func sinkPrefix(prefix string) string { return strings.ReplaceAll(prefix, ".", "_") }

// defineAll records plan q's definition in p's under prefix: its fields,
// and its sinks (its results sinks too when results).
func (p *Plan) defineAll(q *Plan, prefix string, results bool) {
	p.Definition.Fields = slices.Clone(p.Definition.Fields)
	for _, f := range q.Definition.Fields {
		f.Path = prefix + f.Path
		p.Definition.Fields = append(p.Definition.Fields, f)
	}
	slices.SortFunc(p.Definition.Fields, func(a, b DefField) int { return strings.Compare(a.Path, b.Path) })
	p.Definition.Sinks = slices.Clone(p.Definition.Sinks)
	for _, s := range q.Definition.Sinks {
		if results || !strings.HasPrefix(s, "results") {
			p.Definition.Sinks = append(p.Definition.Sinks, sinkPrefix(prefix)+s)
		}
	}
}

// SelectPlan returns plan p with its window replaced by select op (a
// stateless query), node name: the window's results sinks take the
// select's rows; its late sinks are left out (a select has no side
// output). def records op for the Definition.
func SelectPlan(p *Plan, op *SelectOp, name string, def any) (*Plan, error) {
	win, err := onlyWindow(p)
	if err != nil {
		return nil, err
	}
	q := *p
	nodes, _ := without(p.Graph.Nodes, func(n Node) bool {
		return len(n.Inputs) == 1 && n.Inputs[0].From == win && n.Inputs[0].Port != Out // a late sink
	})
	for i := range nodes {
		if _, ok := nodes[i].Op.(*WindowOp); ok {
			nodes[i].Name, nodes[i].Op = name, op
		}
	}
	q.Graph.Nodes = nodes
	q.Sinks.Late, q.Sinks.LatePartial = nil, nil
	if err := q.define(name, def); err != nil {
		return nil, err
	}
	return q.checked()
}

// onlyWindow is the node of p's one window.
func onlyWindow(p *Plan) (NodeID, error) {
	var win NodeID = -1
	for _, n := range p.Graph.Nodes {
		if _, ok := n.Op.(*WindowOp); ok {
			if win >= 0 {
				return -1, fmt.Errorf("spec: plan %s has several windows; compose plans of one window", p.Name)
			}
			win = n.ID
		}
	}
	if win < 0 {
		return -1, fmt.Errorf("spec: plan %s has no window", p.Name)
	}
	return win, nil
}

// resultsWindow is the node of the window whose results p's results
// sinks write: its one window, or, of several (a cascade), the one a
// results sink reads; or its select (a plan without a window).
func resultsWindow(p *Plan) (NodeID, error) {
	if win, err := onlyWindow(p); err == nil {
		return win, nil
	}
	win := NodeID(-1)
	for _, n := range p.Graph.Nodes {
		if k, ok := n.Op.(*SinkOp); ok && k.Role == connector.RoleResults && len(n.Inputs) == 1 && n.Inputs[0].Port == Out {
			switch p.Graph.Nodes[n.Inputs[0].From].Op.(type) {
			case *WindowOp, *SelectOp: // a select's rows: a join of records (W19)
			default:
				continue
			}
			if win != n.Inputs[0].From {
				if win >= 0 {
					return -1, fmt.Errorf("spec: plan %s writes the results of several windows; join plans of one", p.Name)
				}
				win = n.Inputs[0].From
			}
		}
	}
	if win < 0 {
		return -1, fmt.Errorf("spec: plan %s writes no window's results", p.Name)
	}
	return win, nil
}

// withoutResults returns nodes without the results sinks of window win
// (renumbered), and those sinks.
func withoutResults(nodes []Node, win NodeID) (kept, results []Node) {
	return without(nodes, func(n Node) bool {
		_, sink := n.Op.(*SinkOp)
		return sink && len(n.Inputs) == 1 && n.Inputs[0] == (Edge{From: win, Port: Out})
	})
}

// without returns nodes without those drop reports (the others
// renumbered, their inputs too), and those it left out. A node left out
// feeds none kept.
func without(nodes []Node, drop func(Node) bool) (kept, dropped []Node) {
	ids := map[NodeID]NodeID{}
	for _, n := range nodes {
		if drop(n) {
			dropped = append(dropped, n)
			continue
		}
		m := n
		m.ID = NodeID(len(kept))
		ids[n.ID] = m.ID
		m.Inputs = nil
		for _, e := range n.Inputs {
			m.Inputs = append(m.Inputs, Edge{From: ids[e.From], Port: e.Port})
		}
		kept = append(kept, m)
	}
	return kept, dropped
}

// appendResults appends the results sinks to nodes, fed by node from.
func appendResults(nodes, results []Node, from NodeID) []Node {
	for _, r := range results {
		r.ID = NodeID(len(nodes))
		r.Inputs = []Edge{{From: from}}
		nodes = append(nodes, r)
	}
	return nodes
}

// define records the operator name's definition def (plain data) in the
// plan's Definition, as one state field: a restore refuses to see it
// changed.
func (p *Plan) define(name string, def any) error {
	b, err := json.Marshal(def)
	if err != nil {
		return fmt.Errorf("spec: the definition of %s: %w", name, err)
	}
	p.Definition.Fields = append(slices.Clone(p.Definition.Fields), DefField{Path: name, Value: b, State: true})
	slices.SortFunc(p.Definition.Fields, func(a, b DefField) int { return strings.Compare(a.Path, b.Path) })
	return nil
}

// checked validates p's graph and its shape as a runner reads it.
func (p *Plan) checked() (*Plan, error) {
	if err := p.Graph.Validate(); err != nil {
		return nil, err
	}
	if _, err := p.Graph.Path(); err != nil {
		return nil, err
	}
	return p, nil
}

// SetResultColumns gives the results sinks of p's last branch (the
// operator a FeedPlan or JoinPlans added) the columns cols
// (Sink.Columns), checked against the rows that branch writes: its key
// fields and values (a join's columns, a Top-N's rank), the window
// bounds and the firing's metadata.
func (p *Plan) SetResultColumns(cols []Column) error {
	path, err := p.Graph.Path()
	if err != nil {
		return err
	}
	b := path.Windows[len(path.Windows)-1]
	var errs Errors
	cols = slices.Clone(cols)
	for _, k := range b.Results {
		checkColumns(k.Path, cols, b.Window.Key, b.Window.Aggregates, func(path, msg, fix string) {
			errs = append(errs, FieldError{Path: path, Msg: msg, Fix: fix})
		})
		if len(errs) > 0 {
			return errs
		}
		k.Config.Columns = cols
	}
	return nil
}
