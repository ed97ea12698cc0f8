package sqljob

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/weirstream/weir/internal/expr"
	"github.com/weirstream/weir/internal/sqlparse"
	"github.com/weirstream/weir/internal/suggest"
	"github.com/weirstream/weir/spec"
)

// joined is the window join a job compiles to beside its spec (the
// left side's): the right side's spec and the join (semantics W14).
type joined struct {
	right *spec.Spec
	op    *spec.JoinOp
	// cascades are the windows the left side's window and the right's
	// read the results of (nil: a side reads a table).
	cascades [2]*cascaded
	// records, when set, is the select of the left side's records: a
	// join of records with windowed results (W19).
	records *spec.SelectOp
	// prefix names the right side's nodes (its alias and a dot), and
	// leftPrefix the left side's window.
	prefix, leftPrefix string
}

// joinSide is one side of a window join: a windowed aggregation under an
// alias, its spec and its columns by name.
type joinSide struct {
	alias string
	pos   sqlparse.Pos
	spec  *spec.Spec
	names []string
	items []item
	// cascade is the window whose results the side's window reads (nil:
	// it reads a table).
	cascade *cascaded
	// types are its aggregates' types, by name.
	types map[string]numType
}

// col finds the side's column name.
func (s *joinSide) col(name string) (item, bool) {
	i := slices.Index(s.names, name)
	if i < 0 {
		return item{}, false
	}
	return s.items[i], true
}

// hiddenCount is the aggregate a side without aggregates counts its rows
// in (GROUP BY keys alone, as q8's sides are): the spec needs one, and
// the join reads only the columns the query selects.
const hiddenCount = "_weir_rows"

var joinTypes = map[sqlparse.JoinType]spec.JoinType{
	sqlparse.InnerJoin: spec.InnerJoin, sqlparse.LeftJoin: spec.LeftJoin,
	sqlparse.RightJoin: spec.RightJoin, sqlparse.FullJoin: spec.FullJoin,
}

const joinHint = "join two windowed aggregations, (SELECT ... GROUP BY window_start, window_end, ...) AS a JOIN (...) AS b ON a.window_start = b.window_start AND a.window_end = b.window_end AND a.k = b.k"

// compileJoin compiles INSERT INTO sink SELECT columns FROM (windowed
// aggregation) a JOIN (windowed aggregation) b ON the windows' bounds and
// equalities: a window join of the two aggregations' results (W14).
// Each side compiles to a spec of its own (the job's is the left's); the
// join's rows go to sinkT.
func (c *compiler) compileJoin(in *sqlparse.Insert, sel *sqlparse.Select, j *sqlparse.Join, sinkT *sqlparse.CreateTable) error {
	typ, ok := joinTypes[j.Type]
	switch {
	case j.Type == sqlparse.CommaJoin:
		return errAt(j.Pos, string(j.Type), "write the join as ... JOIN ... ON its condition; "+joinHint+"; or a table's records with a windowed aggregation on a time range",
			"FROM a, b (an implicit join, its condition in the WHERE) is not compiled; nor is a join of two tables' records (an interval join, Flink's window join of table functions)")
	case !ok:
		return errAt(j.Pos, string(j.Type), joinHint, "a %s is not compiled; weir joins windowed results on their window", j.Type)
	}
	if from, ok := j.Left.(*sqlparse.TableRef); ok {
		if _, sub := j.Right.(*sqlparse.Subquery); sub {
			return c.compileRecordJoin(in, sel, j, from, sinkT)
		}
	}
	switch {
	case sel.Having != nil:
		return errAt(sel.Pos, "HAVING", "filter the join's rows with WHERE, or each side's results with its own HAVING", "a join's rows are not grouped: HAVING needs a GROUP BY")
	case sel.GroupBy != nil || sel.Distinct:
		return errAt(sel.Pos, "GROUP BY", "aggregate in each side's query", "an aggregation of a join's rows is not compiled yet (a cascade of a join)")
	}
	base := *c.job.Spec
	var sides [2]*joinSide
	for i, f := range []sqlparse.From{j.Left, j.Right} {
		s, err := c.joinSide(f, base)
		if err != nil {
			return err
		}
		sides[i] = s
	}
	left, right := sides[0], sides[1]
	if left.alias == right.alias {
		return errAt(right.pos, right.alias, "give the sides two aliases", "both sides of the join are named %s", left.alias)
	}
	if lw, rw := windowSQL(left.spec.Window), windowSQL(right.spec.Window); lw != rw {
		return errAt(right.pos, right.alias, "window both sides alike (the same function, size, slide and offset)",
			"the sides' windows differ (%s: %s; %s: %s): a window join pairs rows of one window", left.alias, lw, right.alias, rw)
	}
	// A side that fires a window more than once would revise a row the
	// join has paired (W14).
	c.job.Spec = &base
	if err := c.firesOnce(j.Pos, "a join", "pair"); err != nil {
		return err
	}
	op := &spec.JoinOp{Type: typ}
	if err := c.joinOn(j, sides, op); err != nil {
		return err
	}
	if star := slices.ContainsFunc(sel.Items, func(it *sqlparse.SelectItem) bool { return it.Star }); star {
		// SELECT * (or a.*) of a join: each side's columns, in order, as
		// Flink expands it; a bare SELECT shows them under their names,
		// the second of one name as name0.
		var err error
		if sel, err = expandJoinStar(sel, sides); err != nil {
			return err
		}
		if tableName(sinkT.Name) == stdoutName {
			sinkT.Columns = nil
			for _, it := range sel.Items {
				name := it.Expr.(*sqlparse.Ref).Parts[1].Name
				addStdoutColumn(sinkT, it.Pos, name, isBound(name))
			}
		}
	}
	items, err := c.joinItems(sel, sides, op)
	if err != nil {
		return err
	}
	if sel.Where != nil {
		// A filter of the joined rows, after the join (an outer join's
		// padded rows too: WHERE b.k IS NULL keeps a's rows that met
		// none), as SQL's WHERE over a join.
		x, err := c.joinExpr(sel.Where, sides, op)
		if err != nil {
			return err
		}
		if err := c.condition(x, nil, "WHERE"); err != nil {
			return err
		}
		if _, err := expr.Compile(x, func(sqlparse.Ident) (int, *sqlparse.Error) { return 0, nil }, resultTimes); err != nil {
			return err
		}
		op.Where = sqlparse.FormatExpr(x)
	}
	c.job.Spec = left.spec
	k, err := c.sink(sinkT)
	if err != nil {
		return err
	}
	r := *k
	r.Columns = nil
	right.spec.Sinks.Results = []*spec.Sink{&r} // left out of the plan: the join's rows go to k
	c.job.join = &joined{right: right.spec, op: op, prefix: right.alias + ".", leftPrefix: left.alias + ".", cascades: [2]*cascaded{left.cascade, right.cascade}}
	return c.mapColumns(in, sel, items, sinkT, k)
}

// expandJoinStar is sel with each * (every side's columns) and a.* (side
// a's) replaced by the columns it stands for, as alias.column.
func expandJoinStar(sel *sqlparse.Select, sides [2]*joinSide) (*sqlparse.Select, error) {
	out := *sel
	out.Items = nil
	for _, it := range sel.Items {
		if !it.Star {
			out.Items = append(out.Items, it)
			continue
		}
		var of []*joinSide
		switch q := it.Expr.(type) {
		case nil:
			of = sides[:]
		case *sqlparse.Ref:
			for _, s := range sides {
				if len(q.Parts) == 1 && q.Parts[0].Name == s.alias {
					of = append(of, s)
				}
			}
		}
		if len(of) == 0 {
			return nil, errAt(it.Pos, sqlparse.FormatExpr(it.Expr)+".*", "write "+sides[0].alias+".* or "+sides[1].alias+".*", "%s is neither side of the join", sqlparse.FormatExpr(it.Expr))
		}
		for _, s := range of {
			for _, n := range s.names {
				out.Items = append(out.Items, &sqlparse.SelectItem{Pos: it.Pos, Expr: &sqlparse.Ref{Parts: []sqlparse.Ident{{Pos: it.Pos, Name: s.alias}, {Pos: it.Pos, Name: n}}}})
			}
		}
	}
	return &out, nil
}

// joinSide compiles one side of a join: a subquery, a windowed
// aggregation, over a copy of spec base.
func (c *compiler) joinSide(f sqlparse.From, base spec.Spec) (*joinSide, error) {
	sub, ok := f.(*sqlparse.Subquery)
	if !ok {
		pos := sqlparse.Pos{}
		switch f := f.(type) {
		case *sqlparse.TableRef:
			pos = f.Name.Pos()
		case *sqlparse.TableFunc:
			pos = f.Pos
		case *sqlparse.Join:
			pos = f.Pos
		}
		return nil, errAt(pos, "", joinHint+"; or a table's records with a windowed aggregation on a time range (FROM t JOIN (SELECT ... GROUP BY window_start, window_end, ...) w ON ... WHERE t.ts BETWEEN w.window_end - INTERVAL ... AND w.window_end)",
			"a side of a join is a windowed aggregation in parentheses, or the table of a join of records with one; a join of two tables' records (an interval join, Flink's window join of table functions) or of three relations is not compiled yet")
	}
	q := sub.Query
	if len(q.Selects) != 1 || q.With != nil || q.OrderBy != nil || q.Limit != nil || sub.Alias.Name == "" {
		return nil, errAt(sub.Pos, "", joinHint, "a side of a join is one SELECT with an alias")
	}
	s := base
	s.Sinks = spec.Sinks{}
	c.job.Spec = &s
	items, err := c.windowed(q.Selects[0])
	if err != nil {
		return nil, err
	}
	cas := c.job.cascade
	c.job.cascade = nil
	if cas != nil && !cas.attached {
		return nil, errAt(sub.Pos, sub.Alias.Name, "join windows of tables, or aggregations of a windowed query per window", "a join of a window over a windowed view is not compiled yet")
	}
	if len(s.Aggregate) == 0 {
		s.Aggregate = []spec.Aggregate{{Name: hiddenCount, Fn: "count"}}
	}
	side := &joinSide{alias: sub.Alias.Name, pos: sub.Pos, spec: &s, items: items, cascade: cas, types: map[string]numType{}}
	for _, a := range s.Aggregate {
		// The side's aggregates' types, which the other side's
		// aggregates of the same names would hide.
		if t, ok := c.computedTypes[a.Name]; ok {
			side.types[a.Name] = t
		}
	}
	for i, it := range q.Selects[0].Items {
		name := columnName(it, i)
		if slices.Contains(side.names, name) {
			return nil, errAt(it.Pos, name, "give the columns distinct aliases", "%s has two columns named %s", side.alias, name)
		}
		side.names = append(side.names, name)
	}
	return side, nil
}

// windowSQL is a window as its table function reads: TUMBLE(1m0s),
// HOP(30s, 1m0s), SESSION(10s), with an offset after a comma.
func windowSQL(w spec.Window) string {
	var args []string
	for _, d := range []*spec.Duration{w.Slide, w.Step, w.Size, w.Gap, w.Offset} {
		if d != nil {
			args = append(args, d.String())
		}
	}
	fn := map[string]string{"tumbling": "TUMBLE", "sliding": "HOP", "cumulate": "CUMULATE", "session": "SESSION"}[w.Type]
	return cmp.Or(fn, w.Type) + "(" + strings.Join(args, ", ") + ")"
}

// joinRef resolves a column of the join: alias.column, or a column
// named alone that one side has.
func joinRef(r *sqlparse.Ref, sides [2]*joinSide) (int, string, item, error) {
	name := r.Parts[len(r.Parts)-1]
	if len(r.Parts) > 2 {
		return 0, "", item{}, errAt(r.Parts[0].Pos, sqlparse.FormatExpr(r), "name a side's column as alias.column", "%s is not a column of the join", sqlparse.FormatExpr(r))
	}
	found := -1
	var it item
	for i, s := range sides {
		if len(r.Parts) == 2 && r.Parts[0].Name != s.alias {
			continue
		}
		if x, ok := s.col(name.Name); ok {
			if found >= 0 {
				return 0, "", item{}, errAt(name.Pos, name.Name, "write "+sides[0].alias+"."+name.Name+" or "+sides[1].alias+"."+name.Name, "column %s is ambiguous: both sides have it", name.Name)
			}
			found, it = i, x
		}
	}
	if found < 0 {
		var known []string
		for _, s := range sides {
			for _, n := range s.names {
				known = append(known, s.alias+"."+n)
			}
		}
		return 0, "", item{}, errAt(name.Pos, sqlparse.FormatExpr(r), "the sides' columns: "+strings.Join(known, ", "), "the join has no column %s", sqlparse.FormatExpr(r))
	}
	return found, name.Name, it, nil
}

// isBound reports whether a side's column is a window bound.
func isBound(from string) bool {
	return from == spec.ColWindowStart || from == spec.ColWindowEnd || from == spec.ColWindowTime
}

// joinOn compiles the join's ON, a conjunction of equalities of a left
// and a right column: the window's bounds (window_start and window_end
// both, or window_time) and op's equalities.
func (c *compiler) joinOn(j *sqlparse.Join, sides [2]*joinSide, op *spec.JoinOp) error {
	if j.On == nil {
		return errAt(j.Pos, "JOIN", joinHint, "the join has no ON")
	}
	var terms []sqlparse.Expr
	var split func(x sqlparse.Expr)
	split = func(x sqlparse.Expr) {
		if b, ok := x.(*sqlparse.Binary); ok && strings.EqualFold(b.Op, "AND") {
			split(b.X)
			split(b.Y)
			return
		}
		terms = append(terms, x)
	}
	split(j.On)
	bounds := map[string]bool{}
	for _, t := range terms {
		b, ok := t.(*sqlparse.Binary)
		var x, y *sqlparse.Ref
		if ok && b.Op == "=" {
			x, _ = b.X.(*sqlparse.Ref)
			y, _ = b.Y.(*sqlparse.Ref)
		}
		var sx, sy int
		var ix, iy item
		if x != nil && y != nil {
			var err error
			if sx, _, ix, err = joinRef(x, sides); err != nil {
				return err
			}
			if sy, _, iy, err = joinRef(y, sides); err != nil {
				return err
			}
		}
		if x == nil || y == nil || sx == sy {
			// A further condition (W14): pairs join where it is true.
			if err := joinCond(t, sides, op); err != nil {
				return err
			}
			continue
		}
		if sx == 1 {
			ix, iy = iy, ix
		}
		switch {
		case isBound(ix.from) || isBound(iy.from):
			if ix.from != iy.from {
				return errAt(sqlparse.ExprPos(t), sqlparse.FormatExpr(t), "equal window_start to window_start and window_end to window_end", "a window bound equals another column")
			}
			bounds[ix.from] = true
		default:
			op.On = append(op.On, spec.JoinOn{Left: ix.from, Right: iy.from})
		}
	}
	if !(bounds[spec.ColWindowStart] && bounds[spec.ColWindowEnd]) && !bounds[spec.ColWindowTime] {
		return errAt(sqlparse.ExprPos(j.On), "ON", joinHint, "the join does not equal the sides' window_start and window_end: weir joins windowed results window by window")
	}
	return nil
}

// joinCond adds condition x of a join's ON, other than an equality of a
// left and a right column, to op's condition (JoinOp.Cond): each column
// it reads becomes a column of the condition (_weir_cond_N), a key field
// or an aggregate of its side (not a window bound: the sides' are
// equal).
func joinCond(x sqlparse.Expr, sides [2]*joinSide, op *spec.JoinOp) error {
	var bad error
	cond := rewriteRefs(x, func(r *sqlparse.Ref) sqlparse.Expr {
		s, _, it, err := joinRef(r, sides)
		switch {
		case err != nil:
		case it.expr != "":
			err = errAt(r.Parts[0].Pos, sqlparse.FormatExpr(r), "compare the columns the expression reads", "a condition of the join reads %s, an expression of its side's results, which is not compiled yet", sqlparse.FormatExpr(r))
		case isBound(it.from):
			err = errAt(r.Parts[0].Pos, sqlparse.FormatExpr(r), "filter the windows in each side's query (HAVING window_end <= ...), which keeps an outer join's rows, or the joined rows in WHERE", "a condition of the join's ON on a window bound is not compiled yet")
		}
		if err != nil {
			bad = cmp.Or(bad, err)
			return r
		}
		c := spec.JoinColumn{Right: s == 1, Field: it.from}
		i := slices.IndexFunc(op.CondCols, func(o spec.JoinColumn) bool { return o.Right == c.Right && o.Field == c.Field })
		if i < 0 {
			i = len(op.CondCols)
			c.Name = fmt.Sprintf("_weir_cond_%d", i)
			op.CondCols = append(op.CondCols, c)
		}
		return &sqlparse.Ref{Parts: []sqlparse.Ident{{Pos: r.Parts[0].Pos, Name: op.CondCols[i].Name}}}
	})
	if bad != nil {
		return bad
	}
	if _, err := expr.Compile(cond, func(id sqlparse.Ident) (int, *sqlparse.Error) {
		return max(slices.IndexFunc(op.CondCols, func(o spec.JoinColumn) bool { return o.Name == id.Name }), 0), nil
	}); err != nil {
		return err
	}
	text := sqlparse.FormatExpr(cond)
	if op.Cond != "" {
		text = "(" + op.Cond + ") AND (" + text + ")"
	}
	op.Cond = text
	return nil
}

// joinItems compiles the select list of a join: each a column of a side
// (alias.column): a window bound, a key of the joined row (the ON
// equalities under their left names, the sides' other keys), or a value
// of one side, which op takes as a column of its rows.
func (c *compiler) joinItems(sel *sqlparse.Select, sides [2]*joinSide, op *spec.JoinOp) ([]item, error) {
	var items []item
	joined := op.JoinKey(&spec.WindowOp{Key: sides[0].spec.Key}, &spec.WindowOp{Key: sides[1].spec.Key})
	for _, it := range sel.Items {
		ref, ok := it.Expr.(*sqlparse.Ref)
		if !ok {
			// An expression of the joined row's columns (O.total -
			// P.paid): a results column's expression.
			x, err := c.joinExpr(it.Expr, sides, op)
			if err != nil {
				return nil, err
			}
			if _, err := expr.CompileValue(x, func(sqlparse.Ident) (int, *sqlparse.Error) { return 0, nil }, resultTimes); err != nil {
				return nil, err
			}
			items = append(items, item{pos: it.Pos, expr: sqlparse.FormatExpr(flinkCasts(x, c.fieldType(nil)))})
			continue
		}
		side, name, x, err := joinRef(ref, sides)
		if err != nil {
			return nil, err
		}
		out := it.Alias.Name
		if out == "" {
			out = name
		}
		keys := sides[side].spec.Key
		switch {
		case isBound(x.from):
			items = append(items, item{pos: it.Pos, from: x.from})
		case !x.agg && slices.Contains(keys, x.from):
			// The joined row's key names a key field of both sides
			// outside the equalities twice, the right one's as region0.
			from, _ := op.KeyName(sides[0].spec.Key, sides[1].spec.Key, side == 1, x.from)
			items = append(items, item{pos: it.Pos, from: from})
		default:
			// The row's column is the query's column's name, or one
			// free: two sides' columns of one name (O.total, P.total)
			// are two columns, the sink's in order.
			name := suggest.FreeName(out, func(n string) bool {
				return slices.Contains(joined, n) || slices.ContainsFunc(op.Columns, func(c spec.JoinColumn) bool { return c.Name == n })
			})
			op.Columns = append(op.Columns, spec.JoinColumn{Name: name, Right: side == 1, Field: x.from})
			if t, ok := sides[side].types[x.from]; ok {
				c.setComputedType(name, t) // its side's aggregate's (a time, a decimal)
			}
			items = append(items, item{pos: it.Pos, from: name, agg: true})
			continue
		}
		// A join column or window bound is the row's, which either side
		// gives; of a side that an outer join may lack, it is null when
		// that side is (a right-only row of a FULL JOIN has a null
		// a.window_start and a.user).
		absent := op.Type == spec.FullJoin || op.Type == spec.LeftJoin && side == 1 || op.Type == spec.RightJoin && side == 0
		if absent {
			items[len(items)-1].present = presence(sides[side], side == 1, op)
		}
	}
	return items, nil
}

// joinExpr compiles expression x over the join's columns (alias.column)
// into one over its rows: a window bound or a key of the joined row by
// its name there (spec.JoinKey's), a value of a side as a column op
// takes for it (_weir_x_N, typed as its side types it). A bound or an
// equality's column of a side that an outer join may lack is null when
// that side is absent, as SQL pads it (the row keeps the other side's).
func (c *compiler) joinExpr(x sqlparse.Expr, sides [2]*joinSide, op *spec.JoinOp) (sqlparse.Expr, error) {
	var bad error
	out := rewriteRefs(x, func(r *sqlparse.Ref) sqlparse.Expr {
		side, _, it, err := joinRef(r, sides)
		if err == nil && it.expr != "" {
			err = errAt(r.Parts[0].Pos, sqlparse.FormatExpr(r), "select the columns the expression reads, or compute it in the side's query over its aggregates", "%s is an expression of its side's results, which an expression of the join does not read yet", sqlparse.FormatExpr(r))
		}
		if err != nil {
			bad = cmp.Or(bad, err)
			return r
		}
		pos := r.Parts[0].Pos
		right := side == 1
		var name string
		switch {
		case isBound(it.from):
			name = it.from
		case !it.agg && slices.Contains(sides[side].spec.Key, it.from):
			name, _ = op.KeyName(sides[0].spec.Key, sides[1].spec.Key, right, it.from)
			if !slices.ContainsFunc(op.On, func(o spec.JoinOn) bool { return right && o.Right == it.from || !right && o.Left == it.from }) {
				// A key of one side alone: null in a row without it.
				return &sqlparse.Ref{Parts: []sqlparse.Ident{{Pos: pos, Name: name}}}
			}
		default:
			// A side's value: null in a row without that side.
			i := slices.IndexFunc(op.Columns, func(col spec.JoinColumn) bool {
				return col.Right == right && col.Field == it.from && strings.HasPrefix(col.Name, "_weir_x_")
			})
			if i < 0 {
				i = len(op.Columns)
				op.Columns = append(op.Columns, spec.JoinColumn{Name: fmt.Sprintf("_weir_x_%d", i), Right: right, Field: it.from})
				c.showAs(op.Columns[i].Name, r)
				if t, ok := sides[side].types[it.from]; ok {
					c.setComputedType(op.Columns[i].Name, t)
				}
			}
			return &sqlparse.Ref{Parts: []sqlparse.Ident{{Pos: pos, Name: op.Columns[i].Name}}}
		}
		ref := &sqlparse.Ref{Parts: []sqlparse.Ident{{Pos: pos, Name: name}}}
		if op.Type == spec.FullJoin || op.Type == spec.LeftJoin && right || op.Type == spec.RightJoin && !right {
			has := presence(sides[side], right, op)
			return &sqlparse.Case{Pos: pos, Whens: []sqlparse.When{{
				Cond:   &sqlparse.IsNull{Pos: pos, X: &sqlparse.Ref{Parts: []sqlparse.Ident{{Pos: pos, Name: has}}}, What: "NULL"},
				Result: &sqlparse.Lit{Pos: pos, Kind: "null", Text: "NULL"}}}, Else: ref}
		}
		return ref
	})
	if bad != nil {
		return nil, bad
	}
	// A time cast to a string is its text, as Flink casts it.
	out = c.resultTimes(out)
	return out, c.timeCompares(out, nil)
}

// presence returns the name of a column of the join's rows that is null
// exactly when side s (right: the right one) is absent: its COUNT(*),
// added (hiddenCount) when it has none.
func presence(s *joinSide, right bool, op *spec.JoinOp) string {
	name := "_weir_has_" + s.alias
	if slices.ContainsFunc(op.Columns, func(c spec.JoinColumn) bool { return c.Name == name }) {
		return name
	}
	i := slices.IndexFunc(s.spec.Aggregate, func(a spec.Aggregate) bool { return a.Fn == "count" && a.Field == "" })
	if i < 0 {
		s.spec.Aggregate = append(s.spec.Aggregate, spec.Aggregate{Name: hiddenCount, Fn: "count"})
		i = len(s.spec.Aggregate) - 1
	}
	op.Columns = append(op.Columns, spec.JoinColumn{Name: name, Right: right, Field: s.spec.Aggregate[i].Name})
	return name
}

// kafkaReads refuses plan p if two of its reads read one Kafka topic in
// one consumer group (the group would split its partitions between them):
// after composing, where the reads that sides or queries share
// (spec.JoinPlans, spec.UnitePlans) are one.
func kafkaReads(p *spec.Plan) error {
	seen := map[[2]string]bool{}
	for _, n := range p.Graph.Nodes {
		src, ok := n.Op.(*spec.SourceOp)
		if !ok || src.Type != "kafka" || src.Config == nil || src.Config.Kafka == nil || src.Config.Kafka.Group == "" {
			continue
		}
		k := [2]string{src.Config.Kafka.Topic, src.Config.Kafka.Group}
		if seen[k] {
			return fmt.Errorf("two reads of Kafka topic %s in consumer group %s would split its partitions between them: read the topic through two tables with different 'properties.group.id's, or with none", k[0], k[1])
		}
		seen[k] = true
	}
	return nil
}
