package sqljob

import (
	"cmp"
	"slices"
	"strings"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/sqlparse"
	"github.com/weirstream/weir/internal/suggest"
	"github.com/weirstream/weir/spec"
)

const recordJoinHint = "join a table's records with a windowed aggregation on equalities and a time range of the records' time attribute: FROM t JOIN (SELECT ... GROUP BY window_start, window_end, ...) w ON t.k = w.k WHERE t.ts BETWEEN w.window_end - INTERVAL '10' SECOND AND w.window_end"

// compileRecordJoin compiles INSERT INTO sink SELECT columns FROM t JOIN
// (windowed aggregation) w ON equalities [WHERE] a time range: a join of
// t's records with w's results (semantics W19), as Nexmark q7 writes
// it. The ON and the WHERE together hold the equalities of a record
// column and a result column, and the range of the record's time
// attribute around one of the window's bounds (BETWEEN, or >= and <=).
// The left side compiles to a select of the record columns the query
// reads (the job's spec), the right to a windowed aggregation.
func (c *compiler) compileRecordJoin(in *sqlparse.Insert, sel *sqlparse.Select, j *sqlparse.Join, from *sqlparse.TableRef, sinkT *sqlparse.CreateTable) error {
	switch {
	case j.Type != sqlparse.InnerJoin:
		return errAt(j.Pos, string(j.Type), recordJoinHint, "a %s of records with windowed results is not compiled; weir joins them as an inner join", j.Type)
	case sel.GroupBy != nil || sel.Having != nil || sel.Distinct:
		return errAt(sel.Pos, "GROUP BY", "aggregate in the windowed side's query", "an aggregation of a join's rows is not compiled yet")
	}
	base := *c.job.Spec
	right, err := c.joinSide(j.Right, base)
	if err != nil {
		return err
	}
	if right.cascade != nil {
		return errAt(right.pos, right.alias, "join the records with a windowed aggregation of a table", "a join of records with an aggregation per window is not compiled yet")
	}
	alias := from.Alias.Name
	if alias == "" {
		alias = tableName(from.Name)
	}
	if alias == right.alias {
		return errAt(right.pos, right.alias, "give the sides two names", "both sides of the join are named %s", alias)
	}
	// The record side: what the query reads of t, compiled as a select.
	left := base
	left.Sinks = spec.Sinks{}
	c.job.Spec = &left
	rel, err := c.relationOf(from.Name, from.Alias.Name)
	if err != nil {
		return err
	}
	if rel.table != nil {
		if rel.table, err = tableHint(rel.table, from.Hint); err != nil {
			return err
		}
	}
	if rel.table != nil && rel.table.Watermark == nil {
		return errAt(from.Name.Pos(), tableName(from.Name), "declare the table's WATERMARK FOR its time attribute", "a join of records needs the records' event time")
	}
	// Which side a column reference is of: the records' (0) or the
	// results' (1).
	sideOf := func(r *sqlparse.Ref) (int, string, error) {
		name := r.Parts[len(r.Parts)-1].Name
		switch {
		case len(r.Parts) == 2 && r.Parts[0].Name == right.alias:
			if _, ok := right.col(name); !ok {
				return 0, "", errAt(r.Parts[1].Pos, sqlparse.FormatExpr(r), suggest.Or(name, right.names, "its columns: "+strings.Join(right.names, ", ")),
					"%s has no column %s", right.alias, name)
			}
			return 1, name, nil
		case len(r.Parts) == 2 && r.Parts[0].Name == alias, len(r.Parts) == 1 && rel.col(name) != nil:
			if _, ok := right.col(name); ok && len(r.Parts) == 1 {
				return 0, "", errAt(r.Parts[0].Pos, name, "write "+alias+"."+name+" or "+right.alias+"."+name, "column %s is ambiguous: both sides have it", name)
			}
			return 0, name, nil
		case len(r.Parts) == 1:
			if _, ok := right.col(name); ok {
				return 1, name, nil
			}
		}
		return 0, "", errAt(r.Parts[0].Pos, sqlparse.FormatExpr(r), recordJoinHint, "%s is not a column of the join (%s's or %s's)", sqlparse.FormatExpr(r), alias, right.alias)
	}
	// The record columns the query reads, as a select's items.
	var reads []*sqlparse.SelectItem
	read := func(name string, pos sqlparse.Pos) {
		if !slices.ContainsFunc(reads, func(it *sqlparse.SelectItem) bool { return it.Expr.(*sqlparse.Ref).Parts[0].Name == name }) {
			reads = append(reads, &sqlparse.SelectItem{Pos: pos, Expr: &sqlparse.Ref{Parts: []sqlparse.Ident{{Pos: pos, Name: name}}}})
		}
	}
	op := &spec.JoinOp{Type: spec.InnerJoin}
	var lo, hi *etime.Duration
	var bound string
	var terms []sqlparse.Expr
	for _, x := range []sqlparse.Expr{j.On, sel.Where} {
		if x != nil {
			terms = append(terms, conjuncts(x)...)
		}
	}
	timeAttr := ""
	if rel.table != nil && rel.table.Watermark != nil {
		timeAttr = rel.table.Watermark.Column.Name
	}
	// rangeTerm reads t.ts <op> w.bound [+- INTERVAL] into lo or hi.
	rangeTerm := func(t sqlparse.Expr, x, y sqlparse.Expr, op string) (bool, error) {
		rx, ok := x.(*sqlparse.Ref)
		if !ok {
			return false, nil
		}
		s, name, err := sideOf(rx)
		if err != nil || s != 0 || name != timeAttr {
			return false, err
		}
		b, off, ok := boundPlus(y)
		if !ok {
			return false, nil
		}
		s, bname, err := sideOf(b)
		if err != nil {
			return false, err
		}
		it, _ := right.col(bname)
		if s != 1 || !isBound(it.from) || bound != "" && bound != it.from {
			return false, errAt(sqlparse.ExprPos(t), sqlparse.FormatExpr(t), recordJoinHint, "the time range is of one window bound of %s", right.alias)
		}
		bound = it.from
		switch op {
		case ">=": // several lower bounds: the highest holds
			if lo == nil || off > *lo {
				lo = &off
			}
		case "<=":
			if hi == nil || off < *hi {
				hi = &off
			}
		default:
			return false, errAt(sqlparse.ExprPos(t), sqlparse.FormatExpr(t), recordJoinHint, "the time range is inclusive: write >= and <=, or BETWEEN")
		}
		return true, nil
	}
	for _, t := range terms {
		switch t := t.(type) {
		case *sqlparse.Between:
			if !t.Not {
				okLo, err := rangeTerm(t, t.X, t.Lo, ">=")
				if err != nil {
					return err
				}
				okHi, err := rangeTerm(t, t.X, t.Hi, "<=")
				if err != nil {
					return err
				}
				if okLo && okHi {
					continue
				}
			}
		case *sqlparse.Binary:
			if t.Op == "=" {
				x, xok := t.X.(*sqlparse.Ref)
				y, yok := t.Y.(*sqlparse.Ref)
				if xok && yok {
					sx, nx, err := sideOf(x)
					if err != nil {
						return err
					}
					sy, ny, err := sideOf(y)
					if err != nil {
						return err
					}
					if sx != sy {
						if sx == 1 {
							nx, ny, x = ny, nx, y
						}
						it, _ := right.col(ny)
						if isBound(it.from) || it.expr != "" || nx == timeAttr {
							return errAt(sqlparse.ExprPos(t), sqlparse.FormatExpr(t), recordJoinHint, "an equality of a join of records pairs a record's column with a key or aggregate of the results")
						}
						read(nx, x.Parts[0].Pos)
						op.On = append(op.On, spec.JoinOn{Left: nx, Right: it.from})
						continue
					}
				}
			}
			if ok, err := rangeTerm(t, t.X, t.Y, t.Op); ok || err != nil {
				if err != nil {
					return err
				}
				continue
			}
			flip := map[string]string{">=": "<=", "<=": ">=", "<": ">", ">": "<"}
			if ok, err := rangeTerm(t, t.Y, t.X, flip[t.Op]); ok || err != nil {
				if err != nil {
					return err
				}
				continue
			}
		}
		return errAt(sqlparse.ExprPos(t), sqlparse.FormatExpr(t), recordJoinHint, "a join of records with windowed results compiles equalities and the records' time range; this condition is not compiled yet")
	}
	if lo == nil || hi == nil {
		return errAt(j.Pos, "JOIN", recordJoinHint, "the join has no time range of %s's %s around a window bound of %s on both sides (its state would grow without end)", alias, cmp.Or(timeAttr, "time attribute"), right.alias)
	}
	if len(op.On) == 0 {
		return errAt(j.Pos, "JOIN", recordJoinHint, "the join has no equality of a record's column and a result's column")
	}
	op.Range = &spec.JoinRange{Bound: bound, Lo: *lo, Hi: *hi}
	// The select list: the records' columns (their time attribute is the
	// joined row's time), the ON's record columns as the joined row's key,
	// the results' keys and aggregates.
	var items []item
	for _, it := range sel.Items {
		ref, ok := it.Expr.(*sqlparse.Ref)
		if it.Star || !ok {
			return errAt(it.Pos, sqlparse.FormatExpr(it.Expr), "select the sides' columns, alias.column, each", "only the sides' columns are selected from a join yet")
		}
		s, name, err := sideOf(ref)
		if err != nil {
			return err
		}
		out := cmp.Or(it.Alias.Name, name)
		switch {
		case s == 0 && name == timeAttr:
			items = append(items, item{pos: it.Pos, from: spec.ColWindowStart})
		case s == 0 && slices.ContainsFunc(op.On, func(o spec.JoinOn) bool { return o.Left == name }):
			items = append(items, item{pos: it.Pos, from: name})
		case s == 0:
			read(name, it.Pos)
			op.Columns = append(op.Columns, spec.JoinColumn{Name: out, Field: name})
			items = append(items, item{pos: it.Pos, from: out, agg: true})
		default:
			x, _ := right.col(name)
			switch {
			case isBound(x.from) || x.expr != "":
				return errAt(it.Pos, sqlparse.FormatExpr(ref), "select the records' columns and the results' keys and aggregates", "a join of records selects no window bound or expression of %s yet", right.alias)
			case !x.agg && slices.Contains(right.spec.Key, x.from):
				from := x.from
				for _, o := range op.On {
					if o.Right == from {
						from = o.Left
					}
				}
				items = append(items, item{pos: it.Pos, from: from})
			default:
				op.Columns = append(op.Columns, spec.JoinColumn{Name: out, Right: true, Field: x.from})
				items = append(items, item{pos: it.Pos, from: out, agg: true})
			}
		}
	}
	// The records' side: a select of the columns read.
	if len(reads) == 0 {
		read(op.On[0].Left, j.Pos)
	}
	lsel := &sqlparse.Select{Pos: sel.Pos, Items: reads, From: from}
	_, fields, err := c.selectColumns(lsel, from)
	if err != nil {
		return err
	}
	for _, o := range op.On {
		if !slices.Contains(fields, o.Left) {
			return errAt(j.Pos, o.Left, recordJoinHint, "%s is not a field of %s's records", o.Left, alias)
		}
	}
	selectSpec(&left, fields)
	c.job.Spec = right.spec
	if err := c.firesOnce(j.Pos, "a join", "pair"); err != nil {
		return err
	}
	c.job.Spec = &left
	k, err := c.sink(sinkT)
	if err != nil {
		return err
	}
	if err := appendOnly(in, sinkT, k, "a join of records"); err != nil {
		return err
	}
	r := *k
	r.Columns = nil
	right.spec.Sinks.Results = []*spec.Sink{&r}
	c.job.join = &joined{right: right.spec, op: op, prefix: right.alias + ".", leftPrefix: alias + ".", records: &spec.SelectOp{Fields: fields}}
	return c.mapColumns(in, sel, items, sinkT, k)
}

// conjuncts splits x at its ANDs.
func conjuncts(x sqlparse.Expr) []sqlparse.Expr {
	if b, ok := x.(*sqlparse.Binary); ok && strings.EqualFold(b.Op, "AND") {
		return append(conjuncts(b.X), conjuncts(b.Y)...)
	}
	return []sqlparse.Expr{x}
}

// boundPlus reads x as a column plus or minus an interval (or the column
// alone): the column and the signed offset.
func boundPlus(x sqlparse.Expr) (*sqlparse.Ref, etime.Duration, bool) {
	switch x := x.(type) {
	case *sqlparse.Ref:
		return x, 0, true
	case *sqlparse.Binary:
		r, ok := x.X.(*sqlparse.Ref)
		iv, isIv := x.Y.(*sqlparse.Interval)
		if !ok || !isIv || x.Op != "+" && x.Op != "-" {
			return nil, 0, false
		}
		d, err := intervalDuration(iv)
		if err != nil {
			return nil, 0, false
		}
		off := etime.Duration(*d)
		if x.Op == "-" {
			off = -off
		}
		return r, off, true
	}
	return nil, 0, false
}
