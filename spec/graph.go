package spec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/trigger"
	"github.com/weirstream/weir/window"
)

// Graph is a compiled job as typed operators joined by streams: what a
// runner executes. Nodes are in topological order (a node's inputs come
// before it). A YAML job compiles to one path,
//
//	source → decode → watermark → window → sinks.results (one or several)
//	            ↘ sinks.dead_letter         ↘ sinks.late, sinks.late_partial
//
// and other front ends (SQL) compile to the same types: several sinks fed
// from one stream, several windows over one read, windows fed from
// windows, Top-Ns and joins of windows, several sources.
type Graph struct {
	Nodes []Node
}

// NodeID is a node's index in Graph.Nodes.
type NodeID int

// Node is one operator of a graph.
type Node struct {
	ID NodeID
	// Name is where the node comes from, for messages: a spec path such
	// as "window" or "sinks.results[1]".
	Name string
	// Op is what the node does: a *SourceOp, *DecodeOp, *WatermarkOp,
	// *WindowOp, *TopNOp, *JoinOp or *SinkOp.
	Op Op
	// Inputs are the streams the node reads.
	Inputs []Edge
}

// Edge is a stream: the output Port of node From.
type Edge struct {
	From NodeID
	Port Port
}

// Port is one of a node's outputs.
type Port uint8

const (
	// Out is a node's main output: a source's lines, decode's records, a
	// window's results.
	Out Port = iota
	// Late is a window's too-late records (the side output).
	Late
	// LatePartial is a window's partial misses: records too late for
	// some of their windows only (W7).
	LatePartial
	// Dead is decode's dead letters: records it could not read.
	Dead
)

var portNames = [...]string{Out: "out", Late: "late", LatePartial: "late_partial", Dead: "dead"}

func (p Port) String() string {
	if int(p) < len(portNames) {
		return portNames[p]
	}
	return fmt.Sprintf("port(%d)", p)
}

// Op is a node's operator. Its ports are the outputs it has.
type Op interface {
	// Kind names the operator: source, decode, watermark, window, topn,
	// join, sink.
	Kind() string
	// Ports are the outputs the operator has.
	Ports() []Port
}

// SourceOp reads the input: a connector kind's source.
type SourceOp struct {
	// Type is the source's connector kind (file, kafka, ...).
	Type string
	// Config is the source block, with Compile's defaults.
	Config *Source
	// Start is where a kafka or nats source starts without a checkpoint.
	Start Start
	// Settings, for a source other than the plan's own (a second read),
	// is the plan its front end compiled for it: its source settings
	// (Source, Format, Channels, the timestamp, the generator, Start,
	// the Kafka and NATS options) are the read's. Nil for the plan's own
	// source, whose settings are the plan's.
	Settings *Plan
}

// DecodeOp turns lines into records: the format, the event timestamp and
// the key; what it cannot read goes to Dead.
type DecodeOp struct {
	Format    Format
	TSField   string
	TSUnit    TimeUnit
	Checks    bool
	MaxFuture etime.Duration
	// Computed and Where are the plan's computed fields and where: the
	// decoder sets the one and marks the records the other drops.
	Computed []ComputedField
	Where    string
	// Decimals are the fields read as exact decimals (source.decimals).
	Decimals []DecimalField
	// Types are the fields read into SQL types (source.types).
	Types []TypedField
}

// WatermarkOp assigns event time and watermarks.
type WatermarkOp struct {
	Time         TimeMode
	Type         WatermarkType
	Bound        etime.Duration
	IdleTimeout  etime.Duration
	EveryRecord  bool
	Interval     etime.Duration
	Heartbeat    etime.Duration
	BacklogEvery int
}

// WindowOp keys records, assigns them to windows and aggregates them; its
// results go to Out, too-late records to Late and LatePartial.
type WindowOp struct {
	Key []string
	// WindowKind is the assigner's kind and Span its size (a session's
	// gap; 0 for the global window).
	WindowKind         WindowKind
	Span               etime.Duration
	Assigner           window.Assigner
	Trigger            trigger.Trigger // nil: the assigner's default
	Lateness           etime.Duration
	LateFiringInterval etime.Duration
	// TwoPhase pre-aggregates before the keyed exchange (Spec.TwoPhase).
	TwoPhase bool
	// SkipUnchanged skips unchanged early and late results
	// (Spec.SkipUnchanged).
	SkipUnchanged bool
	Aggregates    []Aggregate
	// Having, when set, keeps only the results for which it is true
	// (Spec.Having, checked).
	Having string
	// Shape says how the definition gave the window ("tumbling 1m
	// offset 5s") and TriggerShape its trigger (", trigger count 100";
	// "" for none), for explain.
	Shape, TriggerShape string
}

// SinkOp writes a stream to a connector kind's sink, in one role.
type SinkOp struct {
	Role connector.SinkRole
	// Name is the sink's name in checkpoints and summaries: results,
	// results[1], late, late_partial, dead_letter.
	Name string
	// Path is where the spec gives the sink, for messages:
	// sinks.results[0] in a list of results sinks, else sinks.<Name>.
	Path string
	// Config is the sink block, with Compile's defaults.
	Config *Sink
}

func (*SourceOp) Kind() string    { return "source" }
func (*DecodeOp) Kind() string    { return "decode" }
func (*WatermarkOp) Kind() string { return "watermark" }
func (*WindowOp) Kind() string    { return "window" }
func (*SinkOp) Kind() string      { return "sink" }

func (*SourceOp) Ports() []Port    { return []Port{Out} }
func (*DecodeOp) Ports() []Port    { return []Port{Out, Dead} }
func (*WatermarkOp) Ports() []Port { return []Port{Out} }
func (*WindowOp) Ports() []Port    { return []Port{Out, Late, LatePartial} }
func (*SinkOp) Ports() []Port      { return nil }

// add appends a node fed by inputs and returns its id.
func (g *Graph) add(name string, op Op, inputs ...Edge) NodeID {
	id := NodeID(len(g.Nodes))
	g.Nodes = append(g.Nodes, Node{ID: id, Name: name, Op: op, Inputs: inputs})
	return id
}

// Validate checks that g is well formed: ids are indexes, every input is
// an output port of an earlier node (so g is acyclic and in topological
// order), sources have no inputs and every other node has one at least.
func (g *Graph) Validate() error {
	var errs []string
	for i, n := range g.Nodes {
		if n.ID != NodeID(i) {
			errs = append(errs, fmt.Sprintf("node %d (%s) has id %d", i, n.Name, n.ID))
		}
		if n.Op == nil {
			errs = append(errs, fmt.Sprintf("node %d (%s) has no operator", i, n.Name))
			continue
		}
		if _, src := n.Op.(*SourceOp); src != (len(n.Inputs) == 0) {
			errs = append(errs, fmt.Sprintf("node %d (%s): a %s with %d inputs", i, n.Name, n.Op.Kind(), len(n.Inputs)))
		}
		for _, e := range n.Inputs {
			if e.From < 0 || int(e.From) >= i {
				errs = append(errs, fmt.Sprintf("node %d (%s) reads node %d, which does not come before it", i, n.Name, e.From))
				continue
			}
			from := g.Nodes[e.From]
			if from.Op == nil || !hasPort(from.Op, e.Port) {
				errs = append(errs, fmt.Sprintf("node %d (%s) reads port %s of node %d (%s), which has no such output", i, n.Name, e.Port, e.From, from.Name))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("spec: malformed plan graph: %s", strings.Join(errs, "; "))
	}
	return nil
}

func hasPort(op Op, p Port) bool {
	for _, q := range op.Ports() {
		if q == p {
			return true
		}
	}
	return false
}

// String draws g one node per line: its id, name, kind and inputs.
func (g *Graph) String() string {
	var b strings.Builder
	for _, n := range g.Nodes {
		fmt.Fprintf(&b, "%d %s (%s)%s\n", n.ID, n.Name, n.Op.Kind(), n.inputs())
	}
	return b.String()
}

// inputs draws n's inputs: " ← 3, 1.dead" ("" for a source).
func (n *Node) inputs() string {
	var b strings.Builder
	for i, e := range n.Inputs {
		sep := " ← "
		if i > 0 {
			sep = ", "
		}
		fmt.Fprintf(&b, "%s%d", sep, e.From)
		if e.Port != Out {
			fmt.Fprintf(&b, ".%s", e.Port)
		}
	}
	return b.String()
}

// Path is a graph by the roles of its nodes, as a runner executes it:
// one read or several (a source, its decode and watermarks, its dead
// letters), then windows, each fed by a read's watermarks or by an
// earlier window's results (a cascade, semantics W12), Top-Ns and joins
// of windows (W13, W14), each with its sinks. A YAML job compiles to one
// read and one window. A runner gets it from Graph.Path, which refuses
// any other graph.
type Path struct {
	// Source, Decode, Watermark and DeadLetter are the first read's
	// (Reads[0]'s), the plan's own.
	Source    *SourceOp
	Decode    *DecodeOp
	Watermark *WatermarkOp
	// Reads are the reads of the path's sources, in the graph's order:
	// each a source, its decode and watermarks, and its dead letters.
	Reads []Read
	// Windows are the windows, in the graph's order (a window comes
	// after the window that feeds it): one at least.
	Windows []Branch
	// DeadLetter is nil when the job has none.
	DeadLetter *SinkOp
}

// Read is one source of a Path with its decode and watermarks.
type Read struct {
	// Name is the source node's (for messages and stage names).
	Name      string
	Source    *SourceOp
	Decode    *DecodeOp
	Watermark *WatermarkOp
	// DeadLetter is nil when the read has none.
	DeadLetter *SinkOp
}

// Branch is one window of a Path with the sinks of its outputs.
type Branch struct {
	// Name is the window node's (for messages and stage names).
	Name   string
	Window *WindowOp
	// From is the index in Path.Windows of the window whose results feed
	// this one (a cascade, semantics W12), or -1: the watermarks of read
	// Read do.
	From int
	Read int
	// TopN, when set, makes the branch a Top-N of window From's results
	// (semantics W13): Window is then topNView's, what its rows hold.
	TopN *TopNOp
	// Join, when set, makes the branch a join of window From's results
	// with window Right's (semantics W14): Window is then joinView's.
	Join  *JoinOp
	Right int
	// Select, when set, makes the branch a stateless query of read
	// Read's records: Window is then selectView's, what its rows hold.
	Select *SelectOp
	// Results are the window's results sinks: one at least, unless the
	// window feeds another.
	Results []*SinkOp
	// Late and LatePartial are nil when the window has none.
	Late, LatePartial *SinkOp
}

// Path returns g as a Path, or an error naming the first node that does
// not fit that shape: a runner of paths refuses other graphs with it.
func (g *Graph) Path() (*Path, error) {
	var p Path
	// The reads' nodes: a source, decode or watermark node → its read.
	srcs, decs, wms := map[NodeID]int{}, map[NodeID]int{}, map[NodeID]int{}
	branch := map[NodeID]int{} // window or Top-N node → its index in p.Windows
	// results is the index in p.Windows of the window whose results node
	// n reads alone (not a Top-N's rows).
	// windowOut is the index in p.Windows of the window whose results e
	// is (not a Top-N's or a join's rows).
	windowOut := func(e Edge) (int, bool) {
		b, ok := branch[e.From]
		return b, ok && e.Port == Out && p.Windows[b].TopN == nil && p.Windows[b].Join == nil && p.Windows[b].Select == nil
	}
	results := func(n Node) (int, bool) {
		if len(n.Inputs) != 1 {
			return -1, false
		}
		return windowOut(n.Inputs[0])
	}
	for i, n := range g.Nodes {
		misfit := func(why string) error {
			return fmt.Errorf("the plan's node %d (%s, a %s) %s: this runner executes one path of source, decode and watermarks, then windows (fed by the watermarks or by a window), Top-Ns and joins of windows, with their sinks", i, n.Name, n.Op.Kind(), why)
		}
		// readOf is the read whose node (in nodes) n reads alone, on
		// port Out, once (a second reader of it is a misfit).
		readOf := func(nodes map[NodeID]int) (int, bool) {
			if len(n.Inputs) != 1 || n.Inputs[0].Port != Out {
				return -1, false
			}
			r, ok := nodes[n.Inputs[0].From]
			return r, ok
		}
		switch op := n.Op.(type) {
		case *SourceOp:
			srcs[n.ID] = len(p.Reads)
			p.Reads = append(p.Reads, Read{Name: n.Name, Source: op})
		case *DecodeOp:
			r, ok := readOf(srcs)
			if !ok || p.Reads[r].Decode != nil {
				return nil, misfit("does not read a source alone")
			}
			p.Reads[r].Decode, decs[n.ID] = op, r
		case *WatermarkOp:
			r, ok := readOf(decs)
			if !ok || p.Reads[r].Watermark != nil {
				return nil, misfit("does not read a decode alone")
			}
			p.Reads[r].Watermark, wms[n.ID] = op, r
		case *WindowOp:
			if err := windowName(p.Windows, n.Name); err != nil {
				return nil, misfit(err.Error())
			}
			from := -1
			read, fromRead := readOf(wms)
			if !fromRead {
				up, ok := results(n)
				if !ok {
					return nil, misfit("reads neither the watermarks alone nor one window's results")
				}
				u := &p.Windows[up]
				if err := checkCascade(u.Name, u.Window, n.Name, op); err != nil {
					return nil, err
				}
				from, read = up, p.Windows[up].Read
			}
			branch[n.ID] = len(p.Windows)
			p.Windows = append(p.Windows, Branch{Name: n.Name, Window: op, From: from, Read: read})
		case *SelectOp:
			if err := windowName(p.Windows, n.Name); err != nil {
				return nil, misfit(err.Error())
			}
			read, ok := readOf(wms)
			if !ok {
				return nil, misfit("does not read the watermarks alone")
			}
			branch[n.ID] = len(p.Windows)
			p.Windows = append(p.Windows, Branch{Name: n.Name, Window: selectView(op), From: -1, Read: read, Select: op})
		case *TopNOp:
			if err := windowName(p.Windows, n.Name); err != nil {
				return nil, misfit(err.Error())
			}
			up, ok := results(n)
			if !ok {
				return nil, misfit("does not read one window's results")
			}
			u := &p.Windows[up]
			if err := checkTopN(u.Name, u.Window, n.Name, op); err != nil {
				return nil, err
			}
			branch[n.ID] = len(p.Windows)
			p.Windows = append(p.Windows, Branch{Name: n.Name, Window: topNView(u.Window, op), From: up, Read: u.Read, TopN: op})
		case *JoinOp:
			if err := windowName(p.Windows, n.Name); err != nil {
				return nil, misfit(err.Error())
			}
			var l, r int
			ok := len(n.Inputs) == 2
			if ok {
				if e := n.Inputs[0]; op.Range != nil {
					// A join of records (W19) reads a select's rows.
					b, isB := branch[e.From]
					l, ok = b, isB && e.Port == Out && p.Windows[b].Select != nil
				} else {
					l, ok = windowOut(e)
				}
			}
			if ok {
				r, ok = windowOut(n.Inputs[1])
			}
			if !ok {
				if op.Range != nil {
					return nil, misfit("does not read a select's rows and a window's results")
				}
				return nil, misfit("does not read two windows' results")
			}
			lw, rw := &p.Windows[l], &p.Windows[r]
			if err := checkJoin(lw.Name, lw.Window, rw.Name, rw.Window, n.Name, op); err != nil {
				return nil, err
			}
			branch[n.ID] = len(p.Windows)
			p.Windows = append(p.Windows, Branch{Name: n.Name, Window: joinView(lw.Window, rw.Window, op), From: l, Right: r, Read: lw.Read, Join: op})
		case *SinkOp:
			if len(n.Inputs) != 1 {
				return nil, misfit("does not read one stream")
			}
			e := n.Inputs[0]
			if r, ok := decs[e.From]; ok && e.Port == Dead {
				if p.Reads[r].DeadLetter != nil {
					return nil, misfit("is a second sink of its stream")
				}
				p.Reads[r].DeadLetter = op
				continue
			}
			b, ok := branch[e.From]
			if !ok {
				return nil, misfit(fmt.Sprintf("reads port %s of node %d", e.Port, e.From))
			}
			w := &p.Windows[b]
			var slot **SinkOp
			switch e.Port {
			case Out:
				w.Results = append(w.Results, op)
			case Late:
				slot = &w.Late
			case LatePartial:
				slot = &w.LatePartial
			}
			if slot != nil {
				if *slot != nil {
					return nil, misfit("is a second sink of its stream")
				}
				*slot = op
			}
		default:
			return nil, misfit("is not an operator of a path")
		}
	}
	for _, r := range p.Reads {
		if r.Decode == nil || r.Watermark == nil {
			return nil, fmt.Errorf("the plan's source %s has no decode and watermarks: this runner reads a source through them", r.Name)
		}
	}
	if len(p.Reads) > 0 {
		r := &p.Reads[0]
		p.Source, p.Decode, p.Watermark, p.DeadLetter = r.Source, r.Decode, r.Watermark, r.DeadLetter
	}
	if len(p.Windows) == 0 {
		return nil, fmt.Errorf("the plan has no window: this runner executes one path of source, decode and watermarks, then windows with their sinks")
	}
	for i, w := range p.Windows {
		if len(w.Results) == 0 && !slices.ContainsFunc(p.Windows, func(d Branch) bool { return d.From == i || d.Join != nil && d.Right == i }) {
			return nil, fmt.Errorf("the plan's window %s has no results sink and feeds no window", w.Name)
		}
	}
	return &p, nil
}

// windowName checks the name of the window, Top-N or join that follows
// windows ws: a name of its own (its counters and stage go by it), and
// not "window" after the first (the first's stage is "window",
// whatever its name).
func windowName(ws []Branch, name string) error {
	switch {
	case slices.ContainsFunc(ws, func(b Branch) bool { return b.Name == name }):
		return fmt.Errorf("has the name of an earlier window")
	case len(ws) > 0 && name == "window":
		return fmt.Errorf("is named window, which names the first window's stage")
	}
	return nil
}

// Results are the results sinks of every window, in order.
func (p *Path) Results() []*SinkOp {
	var ops []*SinkOp
	for _, w := range p.Windows {
		ops = append(ops, w.Results...)
	}
	return ops
}

// Sinks are the sinks of p: every window's results, then every window's
// late and late_partial, then the dead letters.
func (p *Path) Sinks() []*SinkOp {
	ops := p.Results()
	for _, w := range p.Windows {
		for _, op := range []*SinkOp{w.Late, w.LatePartial} {
			if op != nil {
				ops = append(ops, op)
			}
		}
	}
	for _, r := range p.Reads {
		if r.DeadLetter != nil {
			ops = append(ops, r.DeadLetter)
		}
	}
	return ops
}

// ForWindow is the plan as it reads for window w's branch: its key,
// aggregates and window settings are w's, the rest the plan's. For a
// plan of one window (a YAML job's) it holds the plan's own values.
func (p *Plan) ForWindow(w *WindowOp) *Plan {
	q := *p
	q.Key, q.Aggregates = w.Key, w.Aggregates
	q.WindowKind, q.WindowSpan, q.Assigner, q.Trigger = w.WindowKind, w.Span, w.Assigner, w.Trigger
	q.Lateness, q.LateFiringInterval, q.TwoPhase, q.SkipUnchanged = w.Lateness, w.LateFiringInterval, w.TwoPhase, w.SkipUnchanged
	return &q
}

// graph builds the plan's graph from its fields: the one path of a YAML
// job.
func (c *compiler) graph() {
	p, s := c.p, c.s
	p.Name, p.Key, p.Aggregates, p.NullKeys = s.Name, s.Key, s.Aggregate, s.NullKeys
	p.Source, p.Sinks, p.Checkpoint, p.State, p.Archive, p.Doctor, p.Group = s.Source, s.Sinks, s.Checkpoint, s.State, s.Archive, s.Doctor, s.Group
	if p.Source.Type == "generator" {
		// The source block as its kind opens it: with the generator's
		// defaults resolved (SourceSettings).
		g := p.Generator
		p.Source.Generator = &g
	}
	g := &p.Graph
	src := g.add("source", &SourceOp{Type: p.Source.Type, Config: &p.Source, Start: p.Start})
	dec := g.add("decode", &DecodeOp{Format: p.Format, TSField: p.TSField, TSUnit: p.TSUnit, Checks: p.Checks, MaxFuture: p.MaxFuture, Computed: p.Computed, Where: p.Where, Decimals: p.Decimals, Types: p.Types}, Edge{src, Out})
	wm := g.add("watermark", &WatermarkOp{Time: p.Time, Type: p.WMType, Bound: p.Bound, IdleTimeout: p.IdleTimeout, EveryRecord: p.EveryRecord,
		Interval: p.Interval, Heartbeat: p.Heartbeat, BacklogEvery: p.BacklogEvery}, Edge{dec, Out})
	shape, trig := windowShape(s.Window, s.Trigger)
	if s.TimeZone != "" && p.Zone != 0 {
		shape += " cut in time zone " + s.TimeZone
	}
	win := g.add("window", &WindowOp{Key: p.Key, WindowKind: p.WindowKind, Span: p.WindowSpan, Assigner: p.Assigner, Trigger: p.Trigger, Lateness: p.Lateness,
		LateFiringInterval: p.LateFiringInterval, TwoPhase: p.TwoPhase, SkipUnchanged: p.SkipUnchanged, Aggregates: p.Aggregates, Shape: shape, TriggerShape: trig, Having: p.Having}, Edge{wm, Out})
	sinks := &p.Sinks
	for i, r := range sinks.Results {
		path := "sinks." + ResultsPath(i, len(sinks.Results))
		g.add(path, &SinkOp{Role: connector.RoleResults, Name: ResultsName(i), Path: path, Config: r}, Edge{win, Out})
	}
	for _, k := range []struct {
		name string
		cfg  *Sink
		role connector.SinkRole
		from Edge
	}{
		{"late", sinks.Late, connector.RoleLate, Edge{win, Late}},
		{"late_partial", sinks.LatePartial, connector.RoleLate, Edge{win, LatePartial}},
		{"dead_letter", sinks.DeadLetter, connector.RoleDeadLetters, Edge{dec, Dead}},
	} {
		if k.cfg != nil {
			g.add("sinks."+k.name, &SinkOp{Role: k.role, Name: k.name, Path: "sinks." + k.name, Config: k.cfg}, k.from)
		}
	}
}
