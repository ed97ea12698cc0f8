package spec

import "github.com/weirstream/weir/window"

// SelectOp passes each record of a read on as a row (a stateless query,
// Flink SQL's SELECT columns FROM t WHERE ...): no key, no window, no
// state. Its rows hold Fields, record fields (computed fields for
// expressions), each as the record has it; a row's time is its record's.
// Its input is a read's watermarked records (after the where); its
// output goes to results sinks that append (a row has no key to upsert
// by). Records too late for nothing, a select has no side output:
// conservation counts each record read as a row, a dead letter or
// filtered.
type SelectOp struct {
	Fields []string
}

func (*SelectOp) Kind() string  { return "select" }
func (*SelectOp) Ports() []Port { return []Port{Out} }

// selectView is the window op as the plan reads for select op: no key,
// each field as a first (its value as the record has it, any JSON), the
// global assigner (a row belongs to no window; its window columns are
// its time, [ts, ts+1)).
func selectView(op *SelectOp) *WindowOp {
	v := &WindowOp{WindowKind: Global, Assigner: window.GlobalWindows(), Shape: "select"}
	for _, f := range op.Fields {
		v.Aggregates = append(v.Aggregates, Aggregate{Name: f, Fn: "first", Field: f})
	}
	return v
}
