package job

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/jsonnum"
	"github.com/weirstream/weir/internal/outfmt"
	"github.com/weirstream/weir/internal/record"
	"github.com/weirstream/weir/spec"
	"github.com/weirstream/weir/window"
)

// join runs a join branch (semantics W14): it pairs the results of its
// two windows of one window whose On columns are equal, in a window
// operator of one-millisecond windows keyed by the results' window and
// On columns (byWindow), on the watermark that fired them.
type join struct {
	op *spec.JoinOp
	// sides are the left window's columns, then the right's.
	sides [2]joinSide
	// cond is the join's further condition (nil: none).
	cond *record.Cond
}

// joinSide is where one side's columns are in its window's results.
type joinSide struct {
	plan *spec.Plan // the side's window plan view
	on   []column   // its On columns
	keys []column   // its key fields outside On (JoinKey's)
	cols []column   // per JoinOp.Columns: its column, if of this side
	mine []bool     // per JoinOp.Columns: of this side
	// conds and condMine are cols and mine of JoinOp.CondCols.
	conds    []column
	condMine []bool
}

func newJoin(left, right *spec.Plan, op *spec.JoinOp, nulls *record.NullCount) (*join, error) {
	jn := &join{op: op}
	if op.Cond != "" {
		names := make([]string, len(op.CondCols))
		for i, c := range op.CondCols {
			names[i] = c.Name
		}
		cond, err := record.NewCond(op.Cond, names, nulls)
		if err != nil {
			return nil, fmt.Errorf("job: the join's condition %q: %w", op.Cond, err)
		}
		jn.cond = cond
	}
	for s, p := range []*spec.Plan{left, right} {
		side := joinSide{plan: p}
		for _, o := range op.On {
			f := o.Left
			if s == 1 {
				f = o.Right
			}
			side.on = append(side.on, columnOf(p, f))
		}
		for _, k := range p.Key {
			if !slices.ContainsFunc(op.On, func(o spec.JoinOn) bool { return s == 0 && o.Left == k || s == 1 && o.Right == k }) {
				side.keys = append(side.keys, columnOf(p, k))
			}
		}
		for _, c := range op.Columns {
			side.mine = append(side.mine, c.Right == (s == 1))
			side.cols = append(side.cols, columnOf(p, c.Field))
		}
		for _, c := range op.CondCols {
			side.condMine = append(side.condMine, c.Right == (s == 1))
			side.conds = append(side.conds, columnOf(p, c.Field))
		}
		jn.sides[s] = side
	}
	return jn, nil
}

// JoinRow is a result of one side of a join, as the join keeps it (its
// fields are exported for the state's codec).
type JoinRow struct {
	Right bool
	// On are its On columns' texts; Keys its key fields outside On.
	On, Keys []string
	// Cols holds, per JoinOp.Columns, the column's text if it is of this
	// side ("" otherwise).
	Cols []string
	// Conds holds, per JoinOp.CondCols, the column's text if it is of
	// this side.
	Conds      []string
	Tie        string // the result's key: the order of a group's rows
	Start, End etime.Time
	// At, in a join of records (W19), is a left row's record's time,
	// which its joined rows carry as their window [At, At+1).
	At etime.Time
}

// row is result r of side s as a JoinRow.
func (jn *join) row(s int, r window.Result[string, []byte]) JoinRow {
	side := &jn.sides[s]
	keys := outfmt.SplitKey(r.Key, len(side.plan.Key))
	aggs := splitValues(r.Value, len(side.plan.Aggregates))
	row := JoinRow{Right: s == 1, Tie: r.Key, Start: r.Window.Start, End: r.Window.End}
	for _, c := range side.on {
		row.On = append(row.On, canonicalNumber(c.text(&r, keys, aggs)))
	}
	for _, c := range side.keys {
		row.Keys = append(row.Keys, c.text(&r, keys, aggs))
	}
	row.Cols = make([]string, len(side.cols))
	for i, c := range side.cols {
		if side.mine[i] {
			row.Cols[i] = c.text(&r, keys, aggs)
		}
	}
	if len(side.conds) > 0 {
		row.Conds = make([]string, len(side.conds))
		for i, c := range side.conds {
			if side.condMine[i] {
				row.Conds[i] = c.text(&r, keys, aggs)
			}
		}
	}
	return row
}

// meets reports whether rows l and r meet the join's condition (true
// without one).
func (jn *join) meets(l, r *JoinRow, buf *[]byte) bool {
	if jn.cond == nil {
		return true
	}
	b := (*buf)[:0]
	for i := range jn.op.CondCols {
		v := l.Conds[i]
		if jn.sides[1].condMine[i] {
			v = r.Conds[i]
		}
		b = append(append(b, v...), 0)
	}
	*buf = b
	return jn.cond.Keep(b)
}

// sortableTime encodes t so that the encodings sort as the times do.
func sortableTime(t etime.Time) string {
	return fmt.Sprintf("%016x", uint64(t)^1<<63)
}

// canonicalNumber is t, a column's JSON text, with a number in its
// canonical form (9.0 and 9, 12.50 and 12.5 are one), so that a join
// column pairs equal numbers whichever side wrote them how: a key field
// or a record's value is canonical, a max or a first keeps its input's
// text.
func canonicalNumber(t string) string {
	if t == "" || t[0] != '-' && (t[0] < '0' || t[0] > '9') {
		return t
	}
	return string(jsonnum.AppendCanonical(nil, []byte(t)))
}

// splitValues splits a result's value into its first n aggregate texts.
func splitValues(v []byte, n int) [][]byte {
	aggs := make([][]byte, n)
	for i := range aggs {
		k := slices.Index(v, 0)
		aggs[i], v = v[:k], v[k+1:]
	}
	return aggs
}

// groupKey is the key a row joins under: its window and On columns.
func (jn *join) groupKey(r JoinRow) string {
	return strconv.FormatInt(int64(r.Start), 10) + record.KeySep + strconv.FormatInt(int64(r.End), 10) + record.KeySep + strings.Join(r.On, record.KeySep)
}

// JoinAcc holds a group's rows of each side, each in the order of their
// results' keys.
type JoinAcc struct{ Left, Right []JoinRow }

// joinFunc gathers a group's rows (an AggregateFunc).
type joinFunc struct{}

func (joinFunc) CreateAccumulator() JoinAcc { return JoinAcc{} }

func (joinFunc) Add(acc JoinAcc, in JoinRow) JoinAcc {
	rows := &acc.Left
	if in.Right {
		rows = &acc.Right
	}
	i, _ := slices.BinarySearchFunc(*rows, in, func(a, b JoinRow) int { return strings.Compare(a.Tie, b.Tie) })
	*rows = slices.Insert(*rows, i, in)
	return acc
}

func (f joinFunc) Merge(a, b JoinAcc) JoinAcc {
	for _, r := range append(b.Left, b.Right...) {
		a = f.Add(a, r)
	}
	return a
}

func (joinFunc) Result(acc JoinAcc) JoinAcc { return acc }

// pairs emits a group's joined rows: each left row with each right row
// that meets the condition, then, as the join's type asks, each row of a
// side that met no row of the other with nulls for the other side's
// columns.
func (jn *join) pairs(acc JoinAcc, emit func(key string, w window.Window, vals []byte)) {
	one := func(l, r *JoinRow) {
		some := l
		if some == nil {
			some = r
		}
		key := slices.Clone(some.On)
		for s, row := range []*JoinRow{l, r} {
			if row != nil {
				key = append(key, row.Keys...)
				continue
			}
			for range jn.sides[s].keys {
				key = append(key, "null")
			}
		}
		var vals []byte
		for i := range jn.op.Columns {
			v := "null"
			for s, row := range []*JoinRow{l, r} {
				if row != nil && jn.sides[s].mine[i] {
					v = row.Cols[i]
				}
			}
			vals = append(append(vals, v...), 0)
		}
		w := window.Window{Start: some.Start, End: some.End}
		if jn.op.Range != nil {
			w = window.Window{Start: l.At, End: l.At.Add(1)} // inner: l is there
		}
		emit(strings.Join(key, record.KeySep), w, vals)
	}
	t := jn.op.Type
	var buf []byte
	rightMet := make([]bool, len(acc.Right))
	for i := range acc.Left {
		met := false
		// A NULL join column equals nothing, not even a NULL: the row
		// meets no row (it is in this group with the other side's NULL
		// rows, which meet nothing either).
		for k := range acc.Right {
			if !slices.Contains(acc.Left[i].On, "null") && !slices.Contains(acc.Right[k].On, "null") && jn.meets(&acc.Left[i], &acc.Right[k], &buf) {
				one(&acc.Left[i], &acc.Right[k])
				met, rightMet[k] = true, true
			}
		}
		if !met && (t == spec.LeftJoin || t == spec.FullJoin) {
			one(&acc.Left[i], nil)
		}
	}
	if t == spec.RightJoin || t == spec.FullJoin {
		for k := range acc.Right {
			if !rightMet[k] {
				one(nil, &acc.Right[k])
			}
		}
	}
}

// buildJoin joins the results left and right of the windows feeding join
// branch b and sends the joined rows to b's results sinks.
func (j *Job) buildJoin(b *branch, left, right weir.Stream[window.Result[string, []byte]]) {
	jn := b.join
	side := func(s int) func(window.Result[string, []byte], func(JoinRow)) {
		return func(r window.Result[string, []byte], emit func(JoinRow)) {
			if r.Firing != window.Retract {
				emit(jn.row(s, r))
			}
		}
	}
	id := func(r JoinRow) JoinRow { return r }
	if rng := jn.op.Range; rng != nil {
		// A join of records (W19): each record meets the windows whose
		// range holds its time; the rows of a window group when every
		// record that meets it is in (Due).
		a := j.branches[b.Right].Window.Assigner
		// A row whose window is due by its record's watermark is too
		// late, judged here: the join's own watermark is the smaller of
		// its inputs', which depends on how they interleave.
		bi := uint8(b.i)
		recs := weir.FlatMapTimedLate(left, func(ts etime.Time, r window.Result[string, []byte], emit func(etime.Time, JoinRow)) {
			rng.Windows(a, ts, func(w window.Window) {
				row := jn.row(0, r)
				// Rows of a group pair in the order of their records'
				// times and values, not of their arrival.
				row.Tie = sortableTime(ts) + record.KeySep + string(r.Value)
				row.Start, row.End, row.At = w.Start, w.End, ts
				emit(rng.Due(w), row)
			})
		}, func(sub weir.Subtask) func(etime.Time, JoinRow) {
			return func(etime.Time, JoinRow) { j.out.add(sub, item{kind: itemJoinLate, b: bi}) }
		})
		res := weir.FlatMapTimed(right, func(_ etime.Time, r window.Result[string, []byte], emit func(etime.Time, JoinRow)) {
			if r.Firing != window.Retract {
				emit(rng.Due(r.Window), jn.row(1, r))
			}
		})
		byWindow(j, b, weir.Connect(recs, res, id, id), jn.groupKey, joinFunc{}, jn.pairs)
		return
	}
	rows := weir.Connect(weir.FlatMap(left, side(0)), weir.FlatMap(right, side(1)), id, id)
	byWindow(j, b, rows, jn.groupKey, joinFunc{}, jn.pairs)
}
