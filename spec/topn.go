package spec

import (
	"fmt"
	"slices"
)

// MaxTopN is the largest N a TopNOp keeps: its state holds N rows per
// window and partition.
const MaxTopN = 10_000

// TopNOp ranks the rows of each window of a window's results (window
// Top-N, Flink SQL's ROW_NUMBER() OVER (PARTITION BY window_start,
// window_end, ... ORDER BY ...) <= N; semantics W13): for each window and
// partition it emits the N first rows in its order, each with its rank,
// on the watermark that fired the window. Its input is the results of a
// window that fires each window once (as a cascade's, W12); its output
// goes to results sinks.
type TopNOp struct {
	// PartitionBy are the columns of the results (W12's: key fields,
	// window columns, aggregates) that partition the rows of a window,
	// besides the window itself; none: the window's rows rank together.
	PartitionBy []string
	// OrderBy orders a partition's rows: numeric columns, each
	// ascending or descending.
	OrderBy []SortKey
	// N is how many rows of each window and partition are kept (1 to
	// MaxTopN).
	N int
	// Rank names the column of a row's rank, 1 to N (SQL's row number):
	// with the partition columns and the window, it is the row's key.
	Rank string
}

// SortKey is one column of an order.
type SortKey struct {
	Field string
	Desc  bool
}

func (*TopNOp) Kind() string  { return "topn" }
func (*TopNOp) Ports() []Port { return []Port{Out} }

// checkTopN checks that t, node name, may rank window up's results
// (node upName): up fires each window once, every column t reads is a
// column of the results, the order's are numbers, and N and the rank's
// name fit.
func checkTopN(upName string, up *WindowOp, name string, t *TopNOp) error {
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("top-n %s ranks the results of window %s, but %s (semantics W13)", name, upName, fmt.Sprintf(format, args...))
	}
	if err := checkFeeds(upName, up, name, refuse); err != nil {
		return err
	}
	cols, numeric := resultColumns(up)
	switch {
	case t.N < 1 || t.N > MaxTopN:
		return refuse("it keeps %d rows; keep 1 to %d", t.N, MaxTopN)
	case len(t.OrderBy) == 0:
		return refuse("it has no order: give the columns to rank by")
	case t.Rank == "" || slices.Contains(cols, t.Rank):
		return refuse("its rank column %q is empty or a column of the results; name it apart (rownum)", t.Rank)
	}
	for _, p := range t.PartitionBy {
		if !slices.Contains(cols, p) {
			return refuse("it partitions by %q, which %s's results do not have (they have %q)", p, upName, cols)
		}
	}
	for _, o := range t.OrderBy {
		// Numbers order by value, strings (a key field, a string min or
		// max) by their UTF-8 bytes, as Flink orders them.
		ordered := numeric[o.Field] || slices.Contains(up.Key, o.Field) ||
			slices.ContainsFunc(up.Aggregates, func(a Aggregate) bool { return a.Name == o.Field && a.Type == "string" })
		if !ordered {
			return refuse("it orders by %q, which is neither a number nor a key field or string in %s's results (order by an aggregate such as count, sum, min, max or avg, a key field or a window column)", o.Field, upName)
		}
	}
	return nil
}

// topNView is the window op as the plan reads for Top-N t over window
// up's results: what its rows hold. Its key is the partition columns and
// the rank; its values are up's key fields and aggregates outside the
// partition (a key field as first: any JSON value; an aggregate as its
// own function, so that a results table types its column alike); its
// assigner is up's (the rows are of up's windows).
func topNView(up *WindowOp, t *TopNOp) *WindowOp {
	v := *up
	v.Key = append(slices.Clone(t.PartitionBy), t.Rank)
	v.Aggregates = nil
	for _, k := range up.Key {
		if !slices.Contains(t.PartitionBy, k) {
			v.Aggregates = append(v.Aggregates, Aggregate{Name: k, Fn: "first", Field: k})
		}
	}
	for _, a := range up.Aggregates {
		if !slices.Contains(t.PartitionBy, a.Name) {
			v.Aggregates = append(v.Aggregates, Aggregate{Name: a.Name, Fn: a.Fn, Field: a.Name, Type: a.Type})
		}
	}
	return &v
}
