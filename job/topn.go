package job

import (
	"encoding/json"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/outfmt"
	"github.com/weirstream/weir/internal/record"
	"github.com/weirstream/weir/spec"
	"github.com/weirstream/weir/window"
)

// topN runs a Top-N branch (semantics W13): it ranks the results of the
// window that feeds it per window and partition, in a window operator of
// its own whose windows are one millisecond long at each result's
// timestamp (its window's maxTimestamp), keyed by the result's window and
// partition: each fires on the watermark that fired the results, with
// the N first rows of its partition kept in order as they came.
type topN struct {
	op *spec.TopNOp
	// part, order and vals are the feeding results' columns that
	// partition, order and make up a ranked row (topNView's values).
	part, order, vals []column
}

// column is where a column of a window's results is: key field key,
// aggregate agg, or (both -1) the window column win.
type column struct {
	key, agg int
	win      string
}

// columnOf finds column name of window plan up's results.
func columnOf(up *spec.Plan, name string) column {
	if i := slices.Index(up.Key, name); i >= 0 {
		return column{key: i, agg: -1}
	}
	if i := slices.IndexFunc(up.Aggregates, func(a spec.Aggregate) bool { return a.Name == name }); i >= 0 {
		return column{key: -1, agg: i}
	}
	return column{key: -1, agg: -1, win: name}
}

func newTopN(up *spec.Plan, op *spec.TopNOp, view *spec.WindowOp) *topN {
	t := &topN{op: op}
	for _, p := range op.PartitionBy {
		t.part = append(t.part, columnOf(up, p))
	}
	for _, o := range op.OrderBy {
		t.order = append(t.order, columnOf(up, o.Field))
	}
	for _, a := range view.Aggregates {
		t.vals = append(t.vals, columnOf(up, a.Field))
	}
	return t
}

// text is column c of a result whose key fields are keys and aggregate
// texts aggs.
func (c column) text(r *window.Result[string, []byte], keys []string, aggs [][]byte) string {
	switch {
	case c.key >= 0:
		return keys[c.key]
	case c.agg >= 0:
		return string(aggs[c.agg])
	case c.win == spec.ColWindowStart:
		return strconv.FormatInt(int64(r.Window.Start), 10)
	case c.win == spec.ColWindowEnd:
		return strconv.FormatInt(int64(r.Window.End), 10)
	}
	return strconv.FormatInt(int64(r.Window.MaxTimestamp()), 10) // window_time
}

// TopRow is a result of the window a Top-N ranks, as the Top-N keeps it
// (its fields are exported for the state's codec).
type TopRow struct {
	// Order holds the order columns' texts (JSON numbers, or null).
	Order []string
	// Tie is the result's key: rows equal in the order rank by it.
	Tie string
	// Part is the partition columns' texts, record.KeySep between them.
	Part       string
	Start, End etime.Time
	// Vals are the ranked row's values (topNView's aggregates), each
	// followed by a NUL byte, as a result's value.
	Vals []byte
	// Rank is the row's rank, 1 to N, once ranked.
	Rank int
}

// row is result r as a TopRow of the Top-N over window plan up.
func (t *topN) row(up *spec.Plan, r window.Result[string, []byte]) TopRow {
	keys := outfmt.SplitKey(r.Key, len(up.Key))
	aggs := splitValues(r.Value, len(up.Aggregates))
	row := TopRow{Tie: r.Key, Start: r.Window.Start, End: r.Window.End}
	for _, c := range t.order {
		row.Order = append(row.Order, c.text(&r, keys, aggs))
	}
	parts := make([]string, len(t.part))
	for i, c := range t.part {
		parts[i] = c.text(&r, keys, aggs)
	}
	row.Part = strings.Join(parts, record.KeySep)
	for _, c := range t.vals {
		row.Vals = append(row.Vals, c.text(&r, keys, aggs)...)
		row.Vals = append(row.Vals, 0)
	}
	return row
}

// groupKey is the key a row is ranked under: its window and partition.
func (t *topN) groupKey(r TopRow) string {
	k := strconv.FormatInt(int64(r.Start), 10) + record.KeySep + strconv.FormatInt(int64(r.End), 10)
	if len(t.part) > 0 {
		k += record.KeySep + r.Part
	}
	return k
}

// TopAcc is a Top-N's accumulator: at most N rows, in rank order.
type TopAcc struct{ Rows []TopRow }

// topFunc keeps the N first rows of a group (an AggregateFunc).
type topFunc struct{ t *topN }

func (topFunc) CreateAccumulator() TopAcc { return TopAcc{} }

func (f topFunc) Add(acc TopAcc, in TopRow) TopAcc {
	i, _ := slices.BinarySearchFunc(acc.Rows, in, f.t.compare)
	if i >= f.t.op.N {
		return acc
	}
	acc.Rows = slices.Insert(acc.Rows, i, in)
	if len(acc.Rows) > f.t.op.N {
		acc.Rows = acc.Rows[:f.t.op.N]
	}
	return acc
}

func (f topFunc) Merge(a, b TopAcc) TopAcc {
	for _, r := range b.Rows {
		a = f.Add(a, r)
	}
	return a
}

func (topFunc) Result(acc TopAcc) []TopRow { return acc.Rows }

// compare orders rows by rank: the order columns as exact numbers or
// strings by their UTF-8 bytes (null lowest: first ascending, last
// descending, as Flink orders nulls by default), then by the result's
// key, bytewise.
func (t *topN) compare(a, b TopRow) int {
	for i, o := range t.op.OrderBy {
		c := compareValues(a.Order[i], b.Order[i])
		if o.Desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return strings.Compare(a.Tie, b.Tie)
}

// compareValues compares two JSON values of an order column: strings by
// their UTF-8 bytes, numbers exactly (compareNumbers), a string above a
// number (a column holds one type) and null below both.
func compareValues(a, b string) int {
	as, aStr := jsonString(a)
	bs, bStr := jsonString(b)
	switch {
	case aStr && bStr:
		return strings.Compare(as, bs)
	case aStr:
		return 1
	case bStr:
		return -1
	}
	return compareNumbers(a, b)
}

// jsonString is JSON text t's string, when it is one.
func jsonString(t string) (string, bool) {
	if t == "" || t[0] != '"' {
		return "", false
	}
	var s string
	return s, json.Unmarshal([]byte(t), &s) == nil
}

// compareNumbers compares two JSON numbers exactly (null below every
// number; a text that is no number compares as null).
func compareNumbers(a, b string) int {
	x, okA := new(big.Rat).SetString(a)
	y, okB := new(big.Rat).SetString(b)
	switch {
	case !okA && !okB:
		return 0
	case !okA:
		return -1
	case !okB:
		return 1
	}
	return x.Cmp(y)
}

// buildTopN ranks the results up of the window feeding Top-N branch b
// and sends its ranked rows to b's results sinks: each a result whose
// key is the partition columns and the rank, of the ranked window.
func (j *Job) buildTopN(b *branch, up weir.Stream[window.Result[string, []byte]]) {
	t, upPlan := b.topn, j.branches[b.From].plan
	rows := weir.FlatMap(up, func(r window.Result[string, []byte], emit func(TopRow)) {
		if r.Firing != window.Retract {
			emit(t.row(upPlan, r))
		}
	})
	byWindow(j, b, rows, t.groupKey, topFunc{t}, func(rows []TopRow, emit func(key string, w window.Window, vals []byte)) {
		for i, r := range rows {
			key := strconv.Itoa(i + 1)
			if len(t.part) > 0 {
				key = r.Part + record.KeySep + key
			}
			emit(key, window.Window{Start: r.Start, End: r.End}, r.Vals)
		}
	})
}

// byWindow groups rows, made of the results of windows that fire each
// window once (W12: timestamped at their window's maxTimestamp, before
// the watermark that fired them), by key (their window and more) in a
// window operator of branch b's stage whose windows are one millisecond
// long: a group fires on the watermark that fired its rows, when fire
// turns its result (f's) into b's rows, results of b's window view (a
// key, the window they are of, their values), which go to b's results
// sinks.
func byWindow[T, ACC, R any](j *Job, b *branch, rows weir.Stream[T], key func(T) string, f weir.AggregateFunc[T, ACC, R],
	fire func(r R, emit func(key string, w window.Window, vals []byte))) {
	at, _ := window.Tumbling(1, 0) // a valid size: it cannot fail
	type row struct {
		key  string
		w    window.Window
		vals []byte
	}
	out := weir.AggregateProcess(weir.Window(weir.KeyByEncoded(rows, key, appendKey), at, weir.WindowOptions{Name: b.stage}), f,
		func(ctx *weir.WindowContext[string, row], r R) {
			fire(r, func(key string, w window.Window, vals []byte) { ctx.Emit(row{key, w, vals}) })
		})
	bi := uint8(b.i)
	var where *record.Having // a join's where, over its rows
	if b.Join != nil {
		where = record.NewHaving(b.Window, j.nulls)
	}
	weir.ForEachSubtask(out.Results, func(sub weir.Subtask) func(etime.Time, window.Result[string, row]) {
		return func(_ etime.Time, res window.Result[string, row]) {
			r := res.Value
			if where != nil && !where.Keep(r.key, r.vals, b.plan.BoundValues(r.w)) {
				j.out.add(sub, item{kind: itemHaving, b: bi})
				return
			}
			j.out.add(sub, item{kind: itemResult, b: bi, res: window.Result[string, []byte]{
				Key: r.key, Window: r.w, Firing: res.Firing, Watermark: res.Watermark, Value: r.vals}})
		}
	})
}
