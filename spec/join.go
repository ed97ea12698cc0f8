package spec

import (
	"fmt"
	"slices"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/suggest"
	"github.com/weirstream/weir/window"
)

// JoinType is which rows a JoinOp emits.
type JoinType uint8

const (
	// InnerJoin emits the pairs of rows that match.
	InnerJoin JoinType = iota
	// LeftJoin also emits each left row that matches none, with nulls.
	LeftJoin
	// RightJoin also emits each right row that matches none.
	RightJoin
	// FullJoin emits the unmatched rows of both sides.
	FullJoin
)

var joinNames = [...]string{InnerJoin: "inner", LeftJoin: "left", RightJoin: "right", FullJoin: "full"}

func (t JoinType) String() string {
	if int(t) < len(joinNames) {
		return joinNames[t]
	}
	return fmt.Sprintf("join(%d)", t)
}

// JoinOp joins the results of two windows that fire each window once
// (window join, Flink SQL's join of two windowed relations on
// window_start, window_end and keys; semantics W14): rows of the same
// window whose On columns are equal are paired, on the watermark that
// fired the window. Its inputs are the left window's results, then the
// right's; its output goes to results sinks.
type JoinOp struct {
	Type JoinType
	// On pairs the columns (W12's: key fields, aggregates) that must be
	// equal, besides the window (none: every row of a window meets
	// every other side's row of that window).
	On []JoinOn
	// Columns are the values of a joined row, each a column of one side
	// under a name of its own.
	Columns []JoinColumn
	// Cond, when set, is a further condition of the join (a SQL
	// expression over the names of CondCols, each a column of one side):
	// a pair joins only where it is true, as a non-equi condition of
	// Flink's window join (AuctionBids.num >= MaxBids.maxn).
	Cond     string       `json:",omitempty"`
	CondCols []JoinColumn `json:",omitempty"`
	// Where, when set, is a condition over a joined row (a SQL
	// expression over JoinKey's names, the Columns' names and the
	// window's bounds), as SQL's WHERE over a join: a row for which it
	// is not true is not written (counted in having_filtered). Of an
	// outer join's row, the absent side's columns are null.
	Where string `json:",omitempty"`
	// Range, when set, makes this a join of a table's records with a
	// window's results on a time range (semantics W19): the left input
	// is a select's rows, one per record, each joined with the right
	// results of the windows whose Range holds its time.
	Range *JoinRange `json:",omitempty"`
}

// JoinRange is the time condition of a join of records with a window's
// results: a record at t meets the results of a window w where
// w's Bound + Lo <= t <= w's Bound + Hi.
type JoinRange struct {
	// Bound is the window's column: window_start, window_end or
	// window_time (window_end - 1).
	Bound  string
	Lo, Hi etime.Duration
}

// rangeGeometry is the size, slide and offset of a tumbling (its slide
// its size) or sliding assigner, whose windows a JoinRange finds; ok is
// false for others.
func rangeGeometry(a window.Assigner) (size, step, offset etime.Duration, ok bool) {
	if size, step, offset, ok = window.SlidingGeometry(a); ok {
		return size, step, offset, true
	}
	size, offset, ok = window.TumblingGeometry(a)
	return size, size, offset, ok
}

// Due is when every record that meets window w is in, on event time:
// the later of w's last millisecond (its results) and its Bound plus Hi
// (its last record).
func (r *JoinRange) Due(w window.Window) etime.Time {
	b := w.End
	switch r.Bound {
	case ColWindowStart:
		b = w.Start
	case ColWindowTime:
		b = w.MaxTimestamp()
	}
	return max(w.MaxTimestamp(), b.Add(r.Hi))
}

// maxRangeWindows bounds the windows one record of a record join may
// meet (Hi - Lo over the windows' slide).
const maxRangeWindows = 1000

// Windows calls each with the windows of w (the right side's tumbling
// or sliding assigner) whose range holds time t, in order. ok is false
// for other assigners.
func (r *JoinRange) Windows(a window.Assigner, t etime.Time, each func(window.Window)) (ok bool) {
	size, step, offset, ok := rangeGeometry(a)
	if !ok {
		return false
	}
	// w's Bound is its end plus c; t in [end+c+Lo, end+c+Hi] puts the
	// end in [t-c-Hi, t-c-Lo]. Ends are aligned as starts are.
	var c etime.Duration
	switch r.Bound {
	case ColWindowStart:
		c = -size
	case ColWindowTime:
		c = -1
	}
	// Starts are aligned (A2, A4), ends only when the size is a whole
	// number of slides: walk the starts of the ends in [lo, hi].
	lo, hi := t.Add(-(c + r.Hi)), t.Add(-(c + r.Lo))
	first, last := lo.Add(-size), hi.Add(-size)
	start := window.Start(first, offset, step)
	if start < first {
		start = start.Add(step)
	}
	for ; start <= last; start = start.Add(step) {
		each(window.Window{Start: start, End: start.Add(size)})
		if start.Add(step) <= start { // saturated at the end of the time axis
			break
		}
	}
	return true
}

// JoinOn is one equality of a join: a left column and a right one.
type JoinOn struct{ Left, Right string }

// JoinColumn is a value of a joined row: column Field of the right side
// (Right) or the left, named Name.
type JoinColumn struct {
	Name  string
	Right bool
	Field string
}

func (*JoinOp) Kind() string  { return "join" }
func (*JoinOp) Ports() []Port { return []Port{Out} }

// JoinKey is the key of a joined row (joinView's): the On columns under
// their left names, then the left key fields outside On, then the right
// key fields outside On. Each side's window has one result per key and
// window, so a row is one per key and window. A right key field whose
// name the key already has is named as Flink's planner names a second
// column of one name: with the first free suffix 0, 1, ... (region0).
func (j *JoinOp) JoinKey(left, right *WindowOp) []string {
	k, _ := j.joinKey(left.Key, right.Key)
	return k
}

// KeyName is the name in JoinKey of a side's (rightSide: the right
// one's) key field or On column f, the sides keyed by leftKey and
// rightKey, and false if f is neither.
func (j *JoinOp) KeyName(leftKey, rightKey []string, rightSide bool, f string) (string, bool) {
	k, from := j.joinKey(leftKey, rightKey)
	side := 0
	if rightSide {
		side = 1
	}
	for i, o := range j.On {
		if rightSide && o.Right == f || !rightSide && o.Left == f {
			return k[i], true
		}
	}
	for i, fr := range from {
		if fr.side == side && fr.field == f {
			return k[len(j.On)+i], true
		}
	}
	return "", false
}

// keyFrom is a key field of a join's side outside its On.
type keyFrom struct {
	side  int
	field string
}

// joinKey returns JoinKey and, for each name after the On columns, the
// side and field it is.
func (j *JoinOp) joinKey(leftKey, rightKey []string) ([]string, []keyFrom) {
	var k []string
	var from []keyFrom
	for _, o := range j.On {
		k = append(k, o.Left)
	}
	for side, key := range [][]string{leftKey, rightKey} {
		for _, f := range key {
			if slices.ContainsFunc(j.On, func(o JoinOn) bool { return side == 0 && o.Left == f || side == 1 && o.Right == f }) {
				continue
			}
			k = append(k, suggest.FreeName(f, func(n string) bool { return slices.Contains(k, n) }))
			from = append(from, keyFrom{side, f})
		}
	}
	return k, from
}

// checkJoin checks that j, node name, may join the results of windows
// left and right (nodes leftName and rightName): both fire each window
// once, every column it reads is a column of its side's results, and
// the joined row's names are distinct.
func checkJoin(leftName string, left *WindowOp, rightName string, right *WindowOp, name string, j *JoinOp) error {
	refuse := func(format string, args ...any) error {
		if j.Range != nil {
			return fmt.Errorf("join node %s, of records %s with window %s: %s (semantics W19)", name, leftName, rightName, fmt.Sprintf(format, args...))
		}
		return fmt.Errorf("join node %s, of windows %s and %s: %s (semantics W14)", name, leftName, rightName, fmt.Sprintf(format, args...))
	}
	sides := []struct {
		name string
		op   *WindowOp
	}{{leftName, left}, {rightName, right}}
	if r := j.Range; r != nil {
		sides = sides[1:] // the left side is records
		_, step, _, found := rangeGeometry(right.Assigner)
		switch {
		case j.Type != InnerJoin:
			return refuse("it is a %s join; a join of records with windows' results is an inner join", j.Type)
		case len(j.On) == 0:
			return refuse("it has no equality: give the column to join on (every record would meet every result of its windows)")
		case !found:
			return refuse("%s's windows are %v: a range finds the windows of tumbling or sliding ones", rightName, right.Assigner)
		case r.Bound != ColWindowStart && r.Bound != ColWindowEnd && r.Bound != ColWindowTime:
			return refuse("its range is of %q, not of window_start, window_end or window_time", r.Bound)
		case r.Hi < r.Lo:
			return refuse("its range is empty (%v to %v)", r.Lo.Std(), r.Hi.Std())
		case (r.Hi-r.Lo)/step > maxRangeWindows:
			return refuse("a record would meet more than %d windows", maxRangeWindows)
		}
	}
	for _, s := range sides {
		if err := checkFeeds(s.name, s.op, name, func(format string, args ...any) error {
			return refuse("%s", fmt.Sprintf(format, args...))
		}); err != nil {
			return err
		}
	}
	if leftName == rightName {
		return refuse("it joins a window with itself; join two windows")
	}
	if j.Type > FullJoin {
		return refuse("no such join type %v", j.Type)
	}
	lc, _ := resultColumns(left)
	rc, _ := resultColumns(right)
	has := func(side string, cols []string, f string) error {
		if f == ColWindowStart || f == ColWindowEnd || f == ColWindowTime || !slices.Contains(cols, f) {
			data := slices.DeleteFunc(slices.Clone(cols), func(c string) bool { return c == ColWindowStart || c == ColWindowEnd || c == ColWindowTime })
			return refuse("%s's results have no column %q to join on or take (they have %q; the window columns are joined already)", side, f, data)
		}
		return nil
	}
	for _, o := range j.On {
		if err := has(leftName, lc, o.Left); err != nil {
			return err
		}
		if err := has(rightName, rc, o.Right); err != nil {
			return err
		}
	}
	names := j.JoinKey(left, right)
	for _, c := range j.Columns {
		side, cols := leftName, lc
		if c.Right {
			side, cols = rightName, rc
		}
		if c.Field != ColWindowTime {
			if err := has(side, cols, c.Field); err != nil {
				return err
			}
		}
		if c.Name == "" || slices.Contains(names, c.Name) || c.Name == ColWindowStart || c.Name == ColWindowEnd {
			return refuse("a column of the joined row is named %q, which is empty or taken (its key is %q)", c.Name, names)
		}
		names = append(names, c.Name)
	}
	var conds []string
	for _, c := range j.CondCols {
		side, cols := leftName, lc
		if c.Right {
			side, cols = rightName, rc
		}
		if err := has(side, cols, c.Field); err != nil {
			return err
		}
		if c.Name == "" || slices.Contains(conds, c.Name) {
			return refuse("a column of its condition is named %q, which is empty or taken", c.Name)
		}
		conds = append(conds, c.Name)
	}
	if j.Where != "" {
		if pe := checkExpr(j.Where, append(slices.Clone(names), ColWindowStart, ColWindowEnd, ColWindowTime), true); pe != nil {
			return refuse("its where %q: %v", j.Where, pe)
		}
	}
	switch {
	case j.Cond == "" && len(j.CondCols) > 0:
		return refuse("it has condition columns but no condition")
	case j.Cond != "":
		if pe := checkExpr(j.Cond, conds, true); pe != nil {
			return refuse("its condition %q: %v", j.Cond, pe)
		}
	}
	return nil
}

// joinView is the window op as the plan reads for join j of windows left
// and right: its key is JoinKey, its values the columns (a key field as
// first: any JSON value; an aggregate as its own function, so that a
// results table types its column alike; window_time as a max, a number),
// its assigner the left window's (the right's, in a join of records).
func joinView(left, right *WindowOp, j *JoinOp) *WindowOp {
	v := *left
	if j.Range != nil {
		v = *right // the left side is records, with no window
	}
	v.Having = j.Where // over the joined rows (a side's having is its own)
	v.Key = j.JoinKey(left, right)
	v.Aggregates = nil
	for _, c := range j.Columns {
		side := left
		if c.Right {
			side = right
		}
		a := Aggregate{Name: c.Name, Fn: "first", Field: c.Field}
		if c.Field == ColWindowTime {
			a.Fn = "max"
		}
		if i := slices.IndexFunc(side.Aggregates, func(x Aggregate) bool { return x.Name == c.Field }); i >= 0 {
			a.Fn, a.Type = side.Aggregates[i].Fn, side.Aggregates[i].Type
		}
		v.Aggregates = append(v.Aggregates, a)
	}
	return &v
}
