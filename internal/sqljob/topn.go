package sqljob

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/weirstream/weir/internal/sqlparse"
	"github.com/weirstream/weir/spec"
)

const topNHint = "rank a windowed aggregation: SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY total DESC) AS rownum FROM (SELECT ... GROUP BY window_start, window_end, ...)) WHERE rownum <= 3"

// topNQuery reports whether sel is a window Top-N: SELECT ... FROM
// (SELECT ..., ROW_NUMBER() OVER (...) AS rownum FROM (...)) WHERE
// rownum <= N.
func topNQuery(sel *sqlparse.Select) (*sqlparse.Select, *sqlparse.SelectItem, bool) {
	sub, ok := sel.From.(*sqlparse.Subquery)
	if !ok || len(sub.Query.Selects) != 1 {
		return nil, nil, false
	}
	inner := sub.Query.Selects[0]
	for _, it := range inner.Items {
		if call, ok := it.Expr.(*sqlparse.Call); ok && call.Over != nil && strings.EqualFold(tableName(call.Name), "ROW_NUMBER") {
			return inner, it, true
		}
	}
	return nil, nil, false
}

// compileTopN compiles a window Top-N (semantics W13) of a windowed
// aggregation: the inner query ranks the aggregation's rows of each
// window and partition with ROW_NUMBER() OVER (PARTITION BY
// window_start, window_end, columns ORDER BY columns), and the outer
// keeps the ranks up to N and selects columns of them.
func (c *compiler) compileTopN(in *sqlparse.Insert, sel, inner *sqlparse.Select, rn *sqlparse.SelectItem, sinkT *sqlparse.CreateTable) error {
	if tvf, ok := inner.From.(*sqlparse.TableFunc); ok && rn.Alias.Name != "" && sel.GroupBy == nil && sel.Having == nil && !sel.Distinct &&
		inner.GroupBy == nil && inner.Having == nil && !inner.Distinct {
		return c.compileDedup(in, sel, inner, rn, tvf, sinkT)
	}
	switch {
	case sel.GroupBy != nil || sel.Having != nil || sel.Distinct || inner.Where != nil || inner.GroupBy != nil || inner.Having != nil || inner.Distinct:
		return errAt(sel.Pos, "SELECT", topNHint, "this Top-N query is not compiled yet: filter and aggregate in the ranked query, keep the ranks in the outer WHERE")
	case rn.Alias.Name == "":
		return errAt(rn.Pos, "ROW_NUMBER", "name it: ROW_NUMBER() OVER (...) AS rownum", "the row number has no name")
	}
	if err := c.firesOnce(sel.Pos, "a Top-N", "rank"); err != nil {
		return err
	}
	sub, ok := inner.From.(*sqlparse.Subquery)
	if !ok || len(sub.Query.Selects) != 1 || sub.Query.With != nil || sub.Query.OrderBy != nil || sub.Query.Limit != nil {
		return errAt(inner.Pos, "FROM", topNHint, "a Top-N ranks the rows of a windowed aggregation in parentheses; Flink's Top-N of a table function's records is not compiled yet")
	}
	agg := sub.Query.Selects[0]
	items, err := c.windowed(agg)
	if err != nil {
		return err
	}
	if c.job.cascade != nil {
		return errAt(agg.Pos, "FROM", "rank the windowed view's own windows, or window a table", "a Top-N of a window over a windowed view is not compiled yet")
	}
	// The aggregation's columns by name, as the ranked query reads them.
	cols := map[string]item{}
	var names []string
	for i, it := range agg.Items {
		name := columnName(it, i)
		cols[name] = items[i]
		names = append(names, name)
	}
	column := func(x sqlparse.Expr, what string) (item, error) {
		ref, ok := x.(*sqlparse.Ref)
		if !ok {
			return item{}, errAt(sqlparse.ExprPos(x), sqlparse.FormatExpr(x), "name a column of the aggregation: "+strings.Join(names, ", "), "a Top-N %s by columns", what)
		}
		name := ref.Parts[len(ref.Parts)-1]
		it, ok := cols[name.Name]
		if !ok || len(ref.Parts) > 2 {
			return item{}, errAt(name.Pos, sqlparse.FormatExpr(x), "its columns: "+strings.Join(names, ", "), "the aggregation has no column %s", sqlparse.FormatExpr(x))
		}
		return it, nil
	}
	op := &spec.TopNOp{Rank: rn.Alias.Name}
	over := rn.Expr.(*sqlparse.Call).Over
	bounds := map[string]bool{}
	for _, p := range over.PartitionBy {
		it, err := column(p, "partitions")
		if err != nil {
			return err
		}
		if isBound(it.from) {
			bounds[it.from] = true
			continue
		}
		op.PartitionBy = append(op.PartitionBy, it.from)
	}
	if !bounds[spec.ColWindowStart] || !bounds[spec.ColWindowEnd] {
		return errAt(rn.Pos, "PARTITION BY", "partition by window_start, window_end and any other columns", "a window Top-N ranks each window's rows: PARTITION BY window_start and window_end")
	}
	for _, o := range over.OrderBy {
		it, err := column(o.Expr, "orders")
		if err != nil {
			return err
		}
		op.OrderBy = append(op.OrderBy, spec.SortKey{Field: it.from, Desc: o.Desc})
	}
	if op.N, err = rankLimit(sel.Where, op.Rank); err != nil {
		return err
	}
	// The ranked query's columns: the aggregation's (all of them for *),
	// and the rank.
	ranked := map[string]item{op.Rank: {from: op.Rank}}
	var rankedNames []string
	for _, it := range inner.Items {
		switch {
		case it == rn:
			rankedNames = append(rankedNames, op.Rank)
		case it.Star:
			for _, n := range names {
				ranked[n] = cols[n]
				rankedNames = append(rankedNames, n)
			}
		default:
			x, err := column(it.Expr, "selects")
			if err != nil {
				return err
			}
			name := it.Alias.Name
			if name == "" {
				name = x.from
				if ref, ok := it.Expr.(*sqlparse.Ref); ok {
					name = ref.Parts[len(ref.Parts)-1].Name
				}
			}
			ranked[name] = x
			rankedNames = append(rankedNames, name)
		}
	}
	var out []item
	for _, it := range sel.Items {
		if it.Star {
			for _, n := range rankedNames {
				out = append(out, item{pos: it.Pos, from: ranked[n].from})
			}
			continue
		}
		ref, ok := it.Expr.(*sqlparse.Ref)
		var x item
		if ok {
			x, ok = ranked[ref.Parts[len(ref.Parts)-1].Name]
		}
		if !ok {
			return errAt(it.Pos, sqlparse.FormatExpr(it.Expr), "select the ranked query's columns: "+strings.Join(rankedNames, ", "), "a Top-N selects the ranked query's columns")
		}
		out = append(out, item{pos: it.Pos, from: x.from})
	}
	if tableName(sinkT.Name) == stdoutName && len(sel.Items) == 1 && sel.Items[0].Star {
		// A bare SELECT * prints the ranked query's columns.
		sinkT.Columns = nil
		for i, it := range out {
			col := &sqlparse.Column{Pos: it.pos, Name: sqlparse.Ident{Pos: it.pos, Name: rankedNames[i]}}
			if isBound(it.from) {
				col.Type = &sqlparse.Type{Pos: it.pos, Name: "TIMESTAMP", Params: []int{3}}
			}
			sinkT.Columns = append(sinkT.Columns, col)
		}
	}
	k, err := c.sink(sinkT)
	if err != nil {
		return err
	}
	c.job.topN = op
	return c.mapColumns(in, sel, out, sinkT, k)
}

// rankLimit reads the outer WHERE of a Top-N: rank <= N, rank < N + 1
// or rank = 1.
func rankLimit(where sqlparse.Expr, rank string) (int, error) {
	bad := func(pos sqlparse.Pos, text string) error {
		return errAt(pos, text, "keep the first ranks: WHERE "+rank+" <= 3", "a Top-N's outer WHERE keeps the ranks up to a number")
	}
	if where == nil {
		return 0, bad(sqlparse.Pos{Line: 1, Col: 1}, "")
	}
	b, ok := where.(*sqlparse.Binary)
	if !ok {
		return 0, bad(sqlparse.ExprPos(where), sqlparse.FormatExpr(where))
	}
	ref, ok1 := b.X.(*sqlparse.Ref)
	lit, ok2 := b.Y.(*sqlparse.Lit)
	if !ok1 || !ok2 || lit.Kind != "number" || ref.Parts[len(ref.Parts)-1].Name != rank {
		return 0, bad(sqlparse.ExprPos(where), sqlparse.FormatExpr(where))
	}
	n, err := strconv.Atoi(lit.Text)
	switch {
	case err != nil:
		return 0, bad(lit.Pos, lit.Text)
	case b.Op == "<=":
	case b.Op == "<":
		n--
	case b.Op == "=" && n == 1:
	default:
		return 0, bad(sqlparse.ExprPos(where), sqlparse.FormatExpr(where))
	}
	if n < 1 || n > spec.MaxTopN {
		return 0, errAt(lit.Pos, lit.Text, fmt.Sprintf("keep 1 to %d ranks", spec.MaxTopN), "a Top-N keeps %d ranks", n)
	}
	return n, nil
}

// firesOnce refuses the emit keys that fire a window more than once
// (allowed lateness, early firing) for a query (what) that reads a
// window's results: a second firing would revise a row it has read
// (semantics W12-W14). Said in SQL's terms before the plan says it.
func (c *compiler) firesOnce(pos sqlparse.Pos, what, verb string) error {
	s := c.job.Spec
	switch {
	case s.AllowedLateness != nil && *s.AllowedLateness > 0:
		return errAt(pos, "table.exec.emit.allow-lateness", "leave table.exec.emit.allow-lateness out: too-late rows are counted (late_dropped)",
			"table.exec.emit.allow-lateness does not apply to %s: a late firing would revise a row it has %sed", what, verb)
	case s.Trigger != nil:
		return errAt(pos, "table.exec.emit.early-fire", "leave table.exec.emit.early-fire.* out",
			"early firing does not apply to %s: it would %s rows the window's end revises", what, verb)
	}
	return nil
}

// composed reports whether the job's results come from an operator of
// windows' results (a join, a Top-N), whose rows the sink's columns
// describe, not the window's.
func (c composition) composed() bool { return c.join != nil || c.topN != nil || c.selectOp != nil }

// compileDedup compiles Flink's window deduplication: of a window table
// function's records, the first (ORDER BY the time attribute ASC) or
// the last (DESC) of each window and partition,
//
//	SELECT ... FROM (SELECT ..., ROW_NUMBER() OVER (PARTITION BY
//	window_start, window_end, k ORDER BY ts [ASC|DESC]) AS rownum FROM
//	TABLE(TUMBLE(...))) WHERE rownum = 1
//
// as the windowed aggregation it is: grouped by the window and the
// partition's columns, each other column the value of the first
// (weir's event-time first: the earliest record, ties by arrival, as
// Flink keeps the first row of equal times) or last record
// (FIRST_BY_TIME, LAST_BY_TIME), NULL kept as a value, and rownum 1.
// So it takes allowed lateness, early firings and the ledger as any
// windowed aggregation. A Top-N of records that is no deduplication is
// refused.
func (c *compiler) compileDedup(in *sqlparse.Insert, sel, inner *sqlparse.Select, rn *sqlparse.SelectItem, tvf *sqlparse.TableFunc, sinkT *sqlparse.CreateTable) error {
	const hint = "deduplicate a window's records: SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end, k ORDER BY ts DESC) AS rownum FROM TABLE(TUMBLE(...))) WHERE rownum = 1, or rank a windowed aggregation"
	over := rn.Expr.(*sqlparse.Call).Over
	refuse := func(pos sqlparse.Pos, text, format string, args ...any) error {
		return errAt(pos, text, hint, "a Top-N of a window table function's records is compiled as Flink's window deduplication only: "+format, args...)
	}
	fn := strings.ToUpper(tableName(tvf.Call.Name))
	d, ok := argDescriptor(tvf.Call)
	if !ok {
		return noDescriptor(tvf.Call, fn, false)
	}
	timeCol := d.Name
	if fn != "TUMBLE" && fn != "HOP" && fn != "CUMULATE" {
		return refuse(tvf.Pos, fn, "of TUMBLE, HOP or CUMULATE windows, as Flink's")
	}
	if data, ok := arg(tvf.Call, 0, "DATA"); ok {
		if ta, ok := data.(*sqlparse.TableArg); ok {
			if t := c.tables[tableName(ta.Name)]; t != nil {
				if col := column(t, timeCol); col != nil && isProctime(col.Computed) {
					return refuse(d.Pos, timeCol, "ORDER BY an event-time attribute, as Flink's (%s is PROCTIME())", timeCol)
				}
			}
		}
	}
	if len(over.OrderBy) != 1 {
		return refuse(rn.Pos, "ORDER BY", "ORDER BY the time attribute %s, ASC or DESC", timeCol)
	}
	if ref, ok := over.OrderBy[0].Expr.(*sqlparse.Ref); !ok || len(ref.Parts) != 1 || ref.Parts[0].Name != timeCol {
		return refuse(sqlparse.ExprPos(over.OrderBy[0].Expr), sqlparse.FormatExpr(over.OrderBy[0].Expr), "ORDER BY the time attribute %s, ASC or DESC", timeCol)
	}
	// WHERE rownum = 1 [AND conditions]: the conditions filter the
	// deduplicated rows, the aggregation's HAVING.
	var rank sqlparse.Expr
	var conds []sqlparse.Expr
	if sel.Where != nil {
		for _, x := range conjuncts(sel.Where) {
			if rank == nil && mentions(x, rn.Alias.Name) {
				rank = x
			} else {
				conds = append(conds, x)
			}
		}
	}
	if n, err := rankLimit(rank, rn.Alias.Name); err != nil || n != 1 {
		pos, text := sel.Pos, "WHERE"
		if sel.Where != nil {
			pos, text = sqlparse.ExprPos(sel.Where), sqlparse.FormatExpr(sel.Where)
		}
		return refuse(pos, text, "the outer WHERE keeps %s = 1 (AND conditions on the other columns)", rn.Alias.Name)
	}
	for _, x := range conds {
		if mentions(x, rn.Alias.Name) {
			return refuse(sqlparse.ExprPos(x), sqlparse.FormatExpr(x), "the outer WHERE reads %s once, as %s = 1", rn.Alias.Name, rn.Alias.Name)
		}
		if !onlyBounds(x) {
			// The kept row's values may change with a later firing,
			// which a filter of them could not take back.
			if err := c.firesOnce(sqlparse.ExprPos(x), "a condition on the deduplicated rows ("+sqlparse.FormatExpr(x)+")", "pass"); err != nil {
				return err
			}
		}
	}
	pick := "FIRST_BY_TIME"
	if over.OrderBy[0].Desc {
		pick = "LAST_BY_TIME"
	}
	keys := map[string]bool{}
	bounds := 0
	for _, p := range over.PartitionBy {
		ref, ok := p.(*sqlparse.Ref)
		if !ok || len(ref.Parts) != 1 {
			return refuse(sqlparse.ExprPos(p), sqlparse.FormatExpr(p), "PARTITION BY window_start, window_end and columns")
		}
		if n := ref.Parts[0].Name; n == "window_start" || n == "window_end" {
			bounds++
		} else {
			keys[n] = true
		}
	}
	if bounds != 2 {
		return refuse(rn.Pos, "PARTITION BY", "PARTITION BY window_start, window_end and columns")
	}
	// The inner query's columns by name: each is its expression.
	var names []string
	exprs := map[string]sqlparse.Expr{}
	add := func(name string, x sqlparse.Expr) {
		names = append(names, name)
		exprs[name] = x
	}
	for _, it := range inner.Items {
		switch {
		case it == rn:
			add(rn.Alias.Name, nil)
		case it.Star:
			data, _ := arg(tvf.Call, 0, "DATA")
			ta, ok := data.(*sqlparse.TableArg)
			t := c.tables[tableName(ta.Name)]
			if !ok || t == nil {
				return refuse(it.Pos, "*", "name the columns of a view's records")
			}
			for _, col := range t.Columns {
				add(col.Name.Name, &sqlparse.Ref{Parts: []sqlparse.Ident{{Pos: it.Pos, Name: col.Name.Name}}})
			}
			for _, b := range []string{"window_start", "window_end", "window_time"} {
				add(b, &sqlparse.Ref{Parts: []sqlparse.Ident{{Pos: it.Pos, Name: b}}})
			}
		default:
			name := it.Alias.Name
			if ref, ok := it.Expr.(*sqlparse.Ref); ok && name == "" {
				name = ref.Parts[len(ref.Parts)-1].Name
			}
			if name == "" {
				return refuse(it.Pos, sqlparse.FormatExpr(it.Expr), "name the column: %s AS name", sqlparse.FormatExpr(it.Expr))
			}
			add(name, it.Expr)
		}
	}
	// The aggregation: the outer query's columns, of the first or last
	// record.
	agg := &sqlparse.Select{Pos: sel.Pos, From: tvf, Where: inner.Where, Hint: inner.Hint}
	for i, x := range conds {
		// A column the outer query does not select is the kept record's
		// value all the same: its first or last, which no column shows.
		conds[i] = mapExpr(x, func(e sqlparse.Expr) sqlparse.Expr {
			r, ok := e.(*sqlparse.Ref)
			if !ok || len(r.Parts) != 1 || keys[r.Parts[0].Name] || isBound(r.Parts[0].Name) || selected(sel, r.Parts[0].Name) {
				return e
			}
			if x, ok := exprs[r.Parts[0].Name]; ok && x != nil {
				return &sqlparse.Call{Pos: r.Parts[0].Pos, Name: sqlparse.Name{Parts: []sqlparse.Ident{{Pos: r.Parts[0].Pos, Name: pick}}}, Args: []sqlparse.Arg{{Value: x}}}
			}
			return e
		})
	}
	for _, x := range conds {
		if agg.Having == nil {
			agg.Having = x
		} else {
			agg.Having = &sqlparse.Binary{Pos: sqlparse.ExprPos(x), Op: "AND", X: agg.Having, Y: x}
		}
	}
	item := func(pos sqlparse.Pos, name string) error {
		x, ok := exprs[name]
		switch {
		case !ok:
			return errAt(pos, name, "select a column of the ranked query", "the ranked query has no column %s", name)
		case name == rn.Alias.Name:
			agg.Items = append(agg.Items, &sqlparse.SelectItem{Pos: pos, Alias: sqlparse.Ident{Pos: pos, Name: name},
				Expr: &sqlparse.Cast{Pos: pos, X: &sqlparse.Lit{Pos: pos, Kind: "number", Text: "1"}, Type: &sqlparse.Type{Pos: pos, Name: "BIGINT"}}})
		case keys[name] || isBound(name):
			agg.Items = append(agg.Items, &sqlparse.SelectItem{Pos: pos, Expr: x, Alias: sqlparse.Ident{Pos: pos, Name: name}})
		default:
			agg.Items = append(agg.Items, &sqlparse.SelectItem{Pos: pos, Alias: sqlparse.Ident{Pos: pos, Name: name},
				Expr: &sqlparse.Call{Pos: pos, Name: sqlparse.Name{Parts: []sqlparse.Ident{{Pos: pos, Name: pick}}}, Args: []sqlparse.Arg{{Value: x}}}})
		}
		return nil
	}
	for _, it := range sel.Items {
		if it.Star {
			for _, n := range names {
				if err := item(it.Pos, n); err != nil {
					return err
				}
			}
			continue
		}
		ref, ok := it.Expr.(*sqlparse.Ref)
		if !ok || len(ref.Parts) != 1 || it.Alias.Name != "" && it.Alias.Name != ref.Parts[0].Name {
			return refuse(it.Pos, sqlparse.FormatExpr(it.Expr), "the outer query selects the ranked query's columns as they are")
		}
		if err := item(it.Pos, ref.Parts[0].Name); err != nil {
			return err
		}
	}
	for _, b := range []string{"window_start", "window_end"} {
		agg.GroupBy = append(agg.GroupBy, &sqlparse.Ref{Parts: []sqlparse.Ident{{Pos: rn.Pos, Name: b}}})
	}
	for _, p := range over.PartitionBy {
		if ref := p.(*sqlparse.Ref); !isBound(ref.Parts[0].Name) {
			agg.GroupBy = append(agg.GroupBy, exprOr(exprs[ref.Parts[0].Name], ref))
		}
	}
	if tableName(sinkT.Name) == stdoutName {
		// A bare SELECT prints the columns the aggregation has, * of
		// the ranked query's expanded.
		sinkT.Columns = nil
		for _, it := range agg.Items {
			addStdoutColumn(sinkT, it.Pos, it.Alias.Name, isBound(it.Alias.Name))
		}
	}
	before := len(c.job.Spec.Aggregate)
	items, err := c.windowed(agg)
	if err != nil {
		return err
	}
	for i := before; i < len(c.job.Spec.Aggregate); i++ {
		// The row's NULLs are its values: every column of one record.
		if a := &c.job.Spec.Aggregate[i]; a.Fn == "first" || a.Fn == "last" {
			a.Nulls = "respect"
		}
	}
	k, err := c.sink(sinkT)
	if err != nil {
		return err
	}
	return c.mapColumns(in, agg, items, sinkT, k)
}

// exprOr is x, or y when x is nil.
func exprOr(x, y sqlparse.Expr) sqlparse.Expr {
	if x == nil {
		return y
	}
	return x
}

// noDescriptor is the error of window table function call (fn, its
// table partitioned or not) whose second argument is no DESCRIPTOR of
// one column.
func noDescriptor(call *sqlparse.Call, fn string, partitioned bool) error {
	pos, text, hint := call.Pos, fn, "write DESCRIPTOR(ts) with the table's time attribute"
	if second, ok := arg(call, 1, "TIMECOL"); ok {
		pos, text = sqlparse.ExprPos(second), sqlparse.FormatExpr(second)
		if _, ref := second.(*sqlparse.Ref); ref && fn == "SESSION" && partitioned {
			// PARTITION BY a, b: b read as the next argument.
			hint = "partition by several columns in parentheses, PARTITION BY (a, b), then DESCRIPTOR(ts) with the table's time attribute"
		}
	}
	return errAt(pos, text, hint, "%s's second argument is DESCRIPTOR of one column", fn)
}

// argDescriptor is the column of a window table function's DESCRIPTOR
// (its TIMECOL).
func argDescriptor(call *sqlparse.Call) (sqlparse.Ident, bool) {
	tc, ok := arg(call, 1, "TIMECOL")
	d, isDesc := tc.(*sqlparse.Descriptor)
	if !ok || !isDesc || len(d.Columns) != 1 {
		return sqlparse.Ident{}, false
	}
	return d.Columns[0], true
}

// mentions reports whether x reads column name.
func mentions(x sqlparse.Expr, name string) bool {
	found := false
	mapExpr(x, func(e sqlparse.Expr) sqlparse.Expr {
		if r, ok := e.(*sqlparse.Ref); ok && r.Parts[len(r.Parts)-1].Name == name {
			found = true
		}
		return e
	})
	return found
}

// selected reports whether the outer query sel selects column name (or
// everything).
func selected(sel *sqlparse.Select, name string) bool {
	for _, it := range sel.Items {
		if it.Star {
			return true
		}
		if r, ok := it.Expr.(*sqlparse.Ref); ok && r.Parts[len(r.Parts)-1].Name == name {
			return true
		}
	}
	return false
}
