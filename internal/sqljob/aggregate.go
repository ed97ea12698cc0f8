package sqljob

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/weirstream/weir/internal/expr"
	"github.com/weirstream/weir/internal/sqlparse"
	"github.com/weirstream/weir/internal/suggest"
	"github.com/weirstream/weir/spec"
)

// aggregates maps SQL's aggregate functions to the spec's.
// FIRST_VALUE and LAST_VALUE are Flink's, by arrival (the source's
// order: a file's lines, a Kafka partition's offsets); FIRST_BY_TIME and
// LAST_BY_TIME are weir's: the value of the record with the earliest or
// latest event time (ties by arrival); ARRAY_AGG is weir's collect (in
// arrival order).
var aggregates = map[string]string{"COUNT": "count", "SUM": "sum", "MIN": "min", "MAX": "max", "AVG": "avg",
	"FIRST_VALUE": "first_value", "LAST_VALUE": "last_value",
	"FIRST_BY_TIME": "first", "LAST_BY_TIME": "last", "ARRAY_AGG": "collect"}

// item is what a column of the query holds: a key field, a window
// bound (window_start, window_end, window_time) or an aggregate (agg).
type item struct {
	pos  sqlparse.Pos
	from string
	agg  bool
	// expr, instead of from: an expression over the key fields and
	// aggregates (spec.Column.Expr).
	expr string
	// present (an outer join's column of a side that may be absent: its
	// join column or window bound) names a column of the join's rows
	// that is null exactly when that side is absent: the column is null
	// then too, as SQL pads the missing side.
	present string
	// typ is the column's type, where the query knows it (a record's
	// field in a query without a window); else see computedTypes.
	typ numType
}

// aggregation compiles the select list and GROUP BY of a windowed
// aggregation: keys, window_start, window_end, window_time and
// aggregates, which it returns in the query's order; with a legacy group
// window (group), the window in GROUP BY and its FN_START, FN_END and
// FN_ROWTIME functions in the select list.
func (c *compiler) aggregation(sel *sqlparse.Select, rel *relation, group *sqlparse.Call) ([]item, error) {
	s := c.job.Spec
	bounds := map[string]bool{}
	if group != nil {
		bounds["window_start"], bounds["window_end"] = true, true
	}
	session := s.Window.Type == "session"
	for _, g := range sel.GroupBy {
		if g == sqlparse.Expr(group) {
			continue
		}
		ref, ok := g.(*sqlparse.Ref)
		if !ok {
			// An expression (MOD(id, 4), UPPER(user)): a computed field
			// holds it, named as the select list's item of the same
			// expression names it; that item, and the same expression
			// in the select list or HAVING, read the key.
			k, err := c.exprKey(g, sel, rel)
			if err != nil {
				return nil, err
			}
			if !slices.Contains(s.Key, k) {
				s.Key = append(s.Key, k)
			}
			continue
		}
		name := ref.Parts[len(ref.Parts)-1].Name
		switch name {
		case "window_start", "window_end":
			bounds[name] = true
		case "window_time": // window_end - 1: grouping by it adds nothing
		default:
			if k, err := c.nestedKey(ref, rel); err != nil || k != "" {
				if err != nil {
					return nil, err
				}
				if !slices.Contains(s.Key, k) {
					s.Key = append(s.Key, k)
				}
				continue
			}
			col, id, err := rel.ref(ref)
			if err != nil {
				return nil, err
			}
			if !c.isField(rel, col) {
				return nil, errAt(id.Pos, id.Name, "group by a field of the record", "%s is not a field of the record", id.Name)
			}
			name = col.name
			if !session || !slices.Contains(s.Key, name) {
				s.Key = append(s.Key, name)
			}
		}
	}
	if len(sel.GroupBy) == 0 {
		// No GROUP BY: the table function's records themselves, as
		// rows (Flink's window projection or a window join of records).
		return nil, errAt(sel.Pos, "SELECT", "aggregate them (GROUP BY window_start, window_end and the keys), deduplicate them (ROW_NUMBER() OVER (PARTITION BY window_start, window_end ... ORDER BY the time attribute) = 1), or select from the table itself",
			"the records of a window table function are compiled into a window aggregation or deduplication only; selecting or joining them as rows is not compiled yet")
	}
	if !bounds["window_start"] || !bounds["window_end"] {
		pos, text := sel.Pos, "SELECT"
		if len(sel.GroupBy) > 0 {
			pos, text = sqlparse.ExprPos(sel.GroupBy[0]), sqlparse.FormatExpr(sel.GroupBy[0])
		}
		return nil, errAt(pos, text, "group by window_start, window_end and the keys (a GROUP BY without both is Flink's unbounded aggregation, which weir does not compile)", "a window aggregation groups by window_start and window_end")
	}
	var items []item
	for _, it := range sel.Items {
		if it.Star {
			return nil, errAt(it.Pos, "*", "name the keys, window_start, window_end and the aggregates", "SELECT * of an aggregation")
		}
		x := it.Expr
		if group != nil {
			// The group window's bounds inside an expression
			// (CAST(TUMBLE_START(ts, ...) AS STRING)) are the window's.
			var berr error
			x = mapExpr(x, func(e sqlparse.Expr) sqlparse.Expr {
				if call, ok := e.(*sqlparse.Call); ok {
					if bound, ok, err := groupBound(call, group); ok {
						berr = cmp.Or(berr, err)
						return &sqlparse.Ref{Parts: []sqlparse.Ident{{Pos: call.Pos, Name: bound}}}
					}
				}
				return e
			})
			if berr != nil {
				return nil, berr
			}
		}
		if k, ok := c.groupedExpr(x); ok {
			items = append(items, item{pos: it.Pos, from: k.Parts[0].Name})
			continue
		}
		switch e := x.(type) {
		case *sqlparse.Ref:
			name := e.Parts[len(e.Parts)-1].Name
			if k, ok := c.nested[sqlparse.FormatExpr(e)]; ok {
				name = k
			} else if name != "window_start" && name != "window_end" && name != "window_time" {
				col, _, err := rel.ref(e)
				if err != nil && !slices.Contains(s.Key, name) {
					return nil, err // no such column: its did-you-mean
				}
				if err == nil {
					name = col.name
				}
			}
			if name != "window_start" && name != "window_end" && name != "window_time" && !slices.Contains(s.Key, name) {
				return nil, errAt(it.Pos, name, "group by it, or aggregate it", "%s is neither grouped by nor aggregated", name)
			}
			items = append(items, item{pos: it.Pos, from: name})
		case *sqlparse.Call:
			if group != nil {
				if bound, ok, err := groupBound(e, group); ok || err != nil {
					if err != nil {
						return nil, err
					}
					items = append(items, item{pos: it.Pos, from: bound})
					continue
				}
			}
			if fn := strings.ToUpper(tableName(e.Name)); aggregates[fn] == "" && slices.Contains(expr.Functions, fn) {
				// A function of the results' values (an unknown one is
				// read as a misspelt aggregate below).
				x, err := c.resultExpr(e, rel)
				if err != nil {
					return nil, err
				}
				items = append(items, item{pos: it.Pos, expr: x})
				continue
			}
			alias := it.Alias
			if alias.Name == "" {
				// As Flink names it; named before it is compiled, so that
				// its type is known by that name (computedTypes).
				alias = sqlparse.Ident{Pos: it.Pos, Name: fmt.Sprintf("EXPR$%d", len(items))}
			}
			a, err := c.aggregate(e, alias, rel, len(items))
			if err != nil {
				return nil, err
			}
			s.Aggregate = append(s.Aggregate, a)
			items = append(items, item{pos: it.Pos, from: a.Name, agg: true})
		default:
			x, err := c.resultExpr(e, rel)
			if err != nil {
				return nil, err
			}
			items = append(items, item{pos: it.Pos, expr: x})
		}
	}
	return items, nil
}

// resultTimes reads a string compared with a window bound as a time, as
// the spec's results expressions do.
var resultTimes = expr.TimeNames(spec.ColWindowStart, spec.ColWindowEnd, spec.ColWindowTime)

// groupedExpr is x as the key that holds it when the query groups by x,
// an expression (GROUP BY MOD(id, 4): c.nested), and false otherwise.
func (c *compiler) groupedExpr(x sqlparse.Expr) (*sqlparse.Ref, bool) {
	if _, isRef := x.(*sqlparse.Ref); isRef {
		return nil, false // a column, or a nested field's path: c.nested by its own rule
	}
	k, ok := c.nested[sqlparse.FormatExpr(x)]
	if !ok {
		return nil, false
	}
	return &sqlparse.Ref{Parts: []sqlparse.Ident{{Pos: sqlparse.ExprPos(x), Name: k}}}, true
}

// hiddenAggregate adds aggregate call (over rel) to the spec under a
// name no column shows (_weir_agg_N) and returns a reference to it: an
// aggregate an expression of the results or a HAVING reads.
func (c *compiler) hiddenAggregate(call *sqlparse.Call, rel *relation) (*sqlparse.Ref, error) {
	s := c.job.Spec
	name := fmt.Sprintf("_weir_agg_%d", len(s.Aggregate))
	c.showAs(name, call)
	a, err := c.aggregate(call, sqlparse.Ident{Pos: call.Pos, Name: name}, rel, len(s.Aggregate)+1000)
	if err != nil {
		return nil, err
	}
	s.Aggregate = append(s.Aggregate, a)
	return &sqlparse.Ref{Parts: []sqlparse.Ident{{Pos: call.Pos, Name: name}}}, nil
}

// booleanExtremes returns sel with each MIN or MAX of a BOOLEAN in its
// select list and HAVING written as weir computes it, over numbers:
// MIN(b) is (MIN(CASE WHEN b THEN 1 WHEN NOT b THEN 0 END) = 1), as
// Flink's MIN of a BOOLEAN is FALSE when any row's is, MAX TRUE when
// any row's is, and either NULL without a row that is not NULL. sel
// itself is left as it is.
func (c *compiler) booleanExtremes(sel *sqlparse.Select, rel *relation) *sqlparse.Select {
	rw := func(e sqlparse.Expr) sqlparse.Expr {
		call, ok := e.(*sqlparse.Call)
		if !ok || call.Star || call.Distinct || len(call.Args) != 1 {
			return e
		}
		if fn := strings.ToUpper(tableName(call.Name)); fn != "MIN" && fn != "MAX" {
			return e
		}
		arg := call.Args[0].Value
		if x, err := c.fields(arg, rel); err != nil || !c.boolean(x, rel.table) {
			return e
		}
		pos := call.Pos
		one, zero := &sqlparse.Lit{Pos: pos, Kind: "number", Text: "1"}, &sqlparse.Lit{Pos: pos, Kind: "number", Text: "0"}
		inner := *call
		inner.Args = []sqlparse.Arg{{Value: &sqlparse.Case{Pos: pos, Whens: []sqlparse.When{
			{Cond: arg, Result: one}, {Cond: &sqlparse.Unary{Pos: pos, Op: "NOT", X: arg}, Result: zero}}}}}
		return &sqlparse.Binary{Pos: pos, Op: "=", X: &inner, Y: one}
	}
	out := *sel
	out.Items = slices.Clone(sel.Items)
	for i := range out.Items {
		if out.Items[i].Expr != nil {
			out.Items[i].Expr = mapExpr(out.Items[i].Expr, rw)
		}
	}
	if sel.Having != nil {
		out.Having = mapExpr(sel.Having, rw)
	}
	return &out
}

// resultExpr compiles an expression of the select list over the
// window's results (SUM(amount) / COUNT(*), ROUND(AVG(price), 2)): each
// aggregate in it becomes an aggregate of the spec that no column
// shows (_weir_agg_N), each column a grouped one; the expression, over
// their names, is a results column's (spec.Column.Expr).
func (c *compiler) resultExpr(x sqlparse.Expr, rel *relation) (string, error) {
	s := c.job.Spec
	var bad error
	out := mapExpr(x, func(e sqlparse.Expr) sqlparse.Expr {
		if k, ok := c.groupedExpr(e); ok {
			return k
		}
		switch e := e.(type) {
		case *sqlparse.Call:
			if _, isAgg := aggregates[strings.ToUpper(tableName(e.Name))]; !isAgg {
				return e
			}
			ref, err := c.hiddenAggregate(e, rel)
			if err != nil {
				bad = cmp.Or(bad, err)
				return e
			}
			return ref
		case *sqlparse.Ref:
			id := e.Parts[len(e.Parts)-1]
			switch id.Name {
			case "window_start", "window_end", "window_time":
				// The result's window bound, epoch milliseconds
				// (DATE_FORMAT(window_start, 'HH:mm') formats it).
				return &sqlparse.Ref{Parts: []sqlparse.Ident{id}}
			}
			col, cid, err := rel.ref(e)
			switch {
			case err != nil:
				bad = cmp.Or(bad, error(err))
			case !slices.Contains(s.Key, col.name):
				bad = cmp.Or(bad, error(errAt(cid.Pos, cid.Name, "group by it, or aggregate it", "%s is neither grouped by nor aggregated", cid.Name)))
			default:
				return &sqlparse.Ref{Parts: []sqlparse.Ident{{Pos: cid.Pos, Name: col.name}}}
			}
		}
		return e
	})
	if bad != nil {
		return "", bad
	}
	// A time cast to a string is its text (a window bound's, MIN or MAX
	// of a time's), as Flink casts a TIMESTAMP(3).
	out = c.resultTimes(out)
	if err := c.timeCompares(out, nil); err != nil {
		return "", err
	}
	// What weir's expressions do not take is refused here, at its place
	// in the query (the spec would name its results column).
	if _, err := expr.CompileValue(out, func(sqlparse.Ident) (int, *sqlparse.Error) { return 0, nil }, resultTimes); err != nil {
		return "", err
	}
	// Its quotients and value with Flink's types, over the aggregates'
	// types (SUM(amount) / 3 of a DECIMAL(8, 2) is a DECIMAL(38, 6)).
	return sqlparse.FormatExpr(flinkCasts(out, c.fieldType(rel.table))), nil
}

// exprKey compiles a GROUP BY of expression g over rel's fields into a
// computed field and returns its name: the alias of the select list's
// item of the same expression (salt of MOD(id, 4) AS salt), unless a
// column, key or computed field has it, else _weir_key_N. c.nested maps
// the expression's text to it.
func (c *compiler) exprKey(g sqlparse.Expr, sel *sqlparse.Select, rel *relation) (string, error) {
	text := sqlparse.FormatExpr(g)
	if k, ok := c.nested[text]; ok {
		return k, nil
	}
	x, err := c.fields(g, rel)
	if err != nil {
		return "", err
	}
	if _, err := expr.CompileValue(x, func(sqlparse.Ident) (int, *sqlparse.Error) { return 0, nil }); err != nil {
		return "", err
	}
	s := c.job.Spec
	name := fmt.Sprintf("_weir_key_%d", len(s.Key))
	for _, it := range sel.Items {
		if a := it.Alias.Name; a != "" && it.Expr != nil && sqlparse.FormatExpr(it.Expr) == text &&
			rel.col(a) == nil && !slices.Contains(s.Key, a) && !slices.ContainsFunc(s.Computed, func(f spec.ComputedField) bool { return f.Name == a }) {
			name = a
			break
		}
	}
	c.addComputed(rel.table, name, x)
	if c.nested == nil {
		c.nested = map[string]string{}
	}
	c.nested[text] = name
	return name, nil
}

// nestedKey compiles a GROUP BY of a nested field (bid.bidder of a ROW
// column): a computed field holds it, named as Flink names the column
// (its last name) unless a column or key has that name. It returns the
// field's name, "" for a reference that is not nested.
func (c *compiler) nestedKey(ref *sqlparse.Ref, rel *relation) (string, error) {
	col, id, rest, err := rel.path(ref)
	if err != nil || len(rest) == 0 {
		return "", nil // rel.ref says what is wrong with it
	}
	if !c.isField(rel, col) {
		return "", errAt(id.Pos, id.Name, "group by a field of the record", "%s is not a field of the record", id.Name)
	}
	text := sqlparse.FormatExpr(ref)
	if k, ok := c.nested[text]; ok {
		return k, nil
	}
	s := c.job.Spec
	name := rest[len(rest)-1].Name
	if rel.col(name) != nil || slices.Contains(s.Key, name) || slices.ContainsFunc(s.Computed, func(f spec.ComputedField) bool { return f.Name == name }) {
		name = fmt.Sprintf("_weir_key_%d", len(s.Key))
	}
	x, ferr := c.fields(ref, rel)
	if ferr != nil {
		return "", ferr
	}
	c.addComputed(rel.table, name, x)
	if c.nested == nil {
		c.nested = map[string]string{}
	}
	c.nested[text] = name
	return name, nil
}

// groupBound reads FN_START(...) or FN_END(...) of the group window
// FN(...) as window_start or window_end (ok false for another call); its
// arguments must be the group window's.
func groupBound(call, group *sqlparse.Call) (string, bool, error) {
	fn := strings.ToUpper(tableName(group.Name))
	name := strings.ToUpper(tableName(call.Name))
	suffix, ok := strings.CutPrefix(name, fn+"_")
	if !ok {
		return "", false, nil
	}
	var bound string
	switch suffix {
	case "START":
		bound = "window_start"
	case "END":
		bound = "window_end"
	case "ROWTIME":
		bound = "window_time"
	default:
		return "", true, errAt(call.Pos, name, "select "+fn+"_START, "+fn+"_END or "+fn+"_ROWTIME", "%s is not a function of group window %s", name, fn)
	}
	same := len(call.Args) == len(group.Args)
	for i := 0; same && i < len(call.Args); i++ {
		same = sqlparse.FormatExpr(call.Args[i].Value) == sqlparse.FormatExpr(group.Args[i].Value)
	}
	if !same {
		return "", true, errAt(call.Pos, name, "give it the arguments of "+sqlparse.FormatExpr(group), "%s's arguments are not its group window's", name)
	}
	return bound, true, nil
}

// aggregate compiles one aggregate call named alias.
func (c *compiler) aggregate(call *sqlparse.Call, alias sqlparse.Ident, rel *relation, at int) (spec.Aggregate, error) {
	fn := strings.ToUpper(tableName(call.Name))
	a := spec.Aggregate{Name: alias.Name}
	known := slices.Sorted(maps.Keys(aggregates))
	var ok bool
	if a.Fn, ok = aggregates[fn]; !ok {
		if suggest.Closest(fn, known) == "" {
			// No misspelt aggregate: a function weir's expressions lack
			// (GREATEST, LEAST).
			return a, errAt(call.Pos, fn, "aggregates: "+strings.Join(known, ", ")+"; functions: "+strings.Join(expr.Functions, ", "),
				"%s is neither an aggregate weir compiles nor a function of weir's expressions", fn)
		}
		hint := suggest.Or(fn, known, "use "+strings.Join(known, ", ")+" or COUNT(DISTINCT x)")
		return a, errAt(call.Pos, fn, hint, "%s is not an aggregate weir compiles", fn)
	}
	if call.Over != nil {
		return a, errAt(call.Pos, fn, "", "OVER windows are not compiled yet")
	}
	switch {
	case a.Fn == "collect" && call.Nulls == "IGNORE":
		a.Nulls = "ignore"
	case a.Fn == "collect":
		// ARRAY_AGG keeps NULLs unless told to ignore them, as in Flink.
		a.Nulls = "respect"
	case call.Nulls != "":
		return a, errAt(call.Pos, fn, "remove it: it is ARRAY_AGG's", "%s NULLS is not taken by %s, as in Flink", call.Nulls, fn)
	}
	var arg sqlparse.Expr
	if call.Filter != nil {
		// FILTER (WHERE c): the aggregate takes only the rows where c
		// holds (a computed field the decoder reads per aggregate); the
		// others never reach it, so ARRAY_AGG still collects the kept
		// rows' NULLs.
		if inner := aggregateIn(call.Filter); inner != nil {
			return a, errAt(inner.Pos, sqlparse.FormatExpr(inner), "filter on the rows' columns; compare aggregates in HAVING", "FILTER (WHERE ...) holds an aggregate, %s, as Flink refuses too", sqlparse.FormatExpr(inner))
		}
		cond, err := c.fields(call.Filter, rel)
		if err != nil {
			return a, err
		}
		if err := c.condition(cond, rel.table, "FILTER (WHERE ...)"); err != nil {
			return a, err
		}
		if _, err := expr.Compile(cond, func(sqlparse.Ident) (int, *sqlparse.Error) { return 0, nil }); err != nil {
			return a, err
		}
		a.When = fmt.Sprintf("_weir_filter_%d", at)
		c.addComputed(rel.table, a.When, cond)
	}
	switch {
	case call.Star && fn == "COUNT":
		c.setComputedType(a.Name, aggType("count", numType{}))
		return a, nil
	case call.Star:
		return a, errAt(call.Pos, fn, "", "%s(*) is only COUNT's", fn)
	case len(call.Args) != 1:
		return a, errAt(call.Pos, fn, "", "%s takes one column", fn)
	default:
		arg = call.Args[0].Value
	}
	// A column, or an expression, which a computed field holds.
	x, err := c.fields(arg, rel)
	if err != nil {
		return a, err
	}
	t := typeOf(x, c.fieldType(rel.table))
	if (a.Fn == "sum" || a.Fn == "avg" || a.Fn == "min" || a.Fn == "max") && c.boolean(x, rel.table) {
		// (MIN and MAX of a BOOLEAN were written over numbers before,
		// booleanExtremes.)
		return a, errAt(call.Pos, fn, "count the TRUE values with COUNT(*) FILTER (WHERE "+sqlparse.FormatExpr(arg)+") or SUM(CAST("+sqlparse.FormatExpr(arg)+" AS INT))",
			"%s of %s, a BOOLEAN, is refused, as Flink refuses it", fn, sqlparse.FormatExpr(arg))
	}
	if a.Fn == "min" || a.Fn == "max" {
		x, t = c.timeArg(x, t, rel, call.Pos)
	}
	c.setComputedType(a.Name, aggType(a.Fn, t))
	switch a.Fn {
	case "sum", "avg", "min", "max":
		if t.kind == tFloat {
			// A DOUBLE's sum is a DOUBLE's, as in Flink (0.1 + 0.2 is
			// 0.30000000000000004); decimals and integers stay exact.
			a.Type = "float"
		}
		if t.kind == tInt && a.Fn == "avg" {
			// AVG of an integer column has its type, as in Flink: the
			// average cut toward zero (AVG of 1, 2 and 4 is 2).
			a.Type = "integer"
			c.setComputedType(a.Name, t)
		}
		if t.kind == tStr && (a.Fn == "min" || a.Fn == "max") {
			// The smallest or largest string, by its UTF-8 bytes.
			a.Type = "string"
			break
		}
		if ty := c.columnType(x, rel); ty != nil && !numeric(ty) {
			return a, errAt(call.Pos, fn, "aggregate a numeric column, or CAST it to one", "%s of %s, a %s, is not compiled: weir's %s takes numbers", fn, sqlparse.FormatExpr(arg), sqlparse.FormatType(ty), fn)
		}
		if t.kind == tStr {
			return a, errAt(call.Pos, fn, "aggregate a numeric column, or CAST it to one", "%s of %s, a string, is not compiled: weir's %s takes numbers", fn, sqlparse.FormatExpr(arg), fn)
		}
	}
	if ref, ok := x.(*sqlparse.Ref); ok && len(ref.Parts) == 1 {
		a.Field = ref.Parts[0].Name
	} else {
		if _, err := expr.Compile(x, func(sqlparse.Ident) (int, *sqlparse.Error) { return 0, nil }); err != nil {
			return a, err
		}
		a.Field = fmt.Sprintf("_weir_arg_%d", at)
		c.addComputed(rel.table, a.Field, x)
	}
	if call.Distinct {
		switch fn {
		case "MIN", "MAX":
			// The smallest or largest of the distinct values is the
			// smallest or largest value.
		case "COUNT", "SUM", "AVG":
			// Each distinct value once, kept in a set as COUNT's are.
			a.Fn += "_distinct"
		default:
			return a, errAt(call.Pos, fn, "count the distinct values with COUNT(DISTINCT x), or deduplicate in a first windowed query grouped by x and aggregate its results in a second (a cascade)", "%s(DISTINCT ...) is not compiled yet: weir keeps distinct values for COUNT, SUM, AVG, MIN and MAX", fn)
		}
	} else if fn == "COUNT" {
		// COUNT(x): the spec's count of a field, which counts the records
		// whose field is present and not null, as SQL's COUNT(x) does.
		a.Fn = "count"
	}
	return a, nil
}

// timeArg is x, the argument of a MIN or MAX over rel of type t, as the
// aggregate reads a time: a column declared TIMESTAMP(3), TIMESTAMP_LTZ
// or DATE, which the record holds as text, cast to epoch milliseconds
// (a DATE's midnight), its type a time that rows write as one; a window
// bound of a windowed view's results (epoch milliseconds already) a
// TIMESTAMP(3). Other arguments are as they are.
func (c *compiler) timeArg(x sqlparse.Expr, t numType, rel *relation, pos sqlparse.Pos) (sqlparse.Expr, numType) {
	if ref, ok := x.(*sqlparse.Ref); ok && rel.results != nil && len(ref.Parts) == 1 {
		if from, ok := rel.results[ref.Parts[0].Name]; ok && isBound(from) {
			if from == spec.ColWindowTime && c.attrLTZ {
				// The view's window_time, a TIMESTAMP_LTZ.
				return x, numType{kind: tTimeLTZ}
			}
			return x, numType{kind: tTime}
		}
	}
	ty := c.columnType(x, rel)
	if ty == nil {
		return x, t
	}
	switch n := strings.ToUpper(ty.Name); n {
	case "TIMESTAMP", "TIMESTAMP_LTZ", "DATE":
		cast := &sqlparse.Cast{Pos: pos, X: x, Type: &sqlparse.Type{Pos: pos, Name: n, LocalTZ: ty.LocalTZ}}
		return cast, typeOf(cast, c.fieldType(rel.table))
	}
	return x, t
}

// boolean reports whether x, an expression over the fields of table t,
// is a BOOLEAN: a comparison, a logical operator, a test (IS, BETWEEN,
// IN, LIKE), TRUE or FALSE, a computed field holding one, or a column
// declared BOOLEAN.
func (c *compiler) boolean(x sqlparse.Expr, t *sqlparse.CreateTable) bool {
	switch e := x.(type) {
	case *sqlparse.Binary:
		switch e.Op {
		case "=", "<>", "<", "<=", ">", ">=", "AND", "OR", "LIKE", "NOT LIKE", "IS DISTINCT FROM", "IS NOT DISTINCT FROM":
			return true
		}
	case *sqlparse.Unary:
		return e.Op == "NOT"
	case *sqlparse.IsNull, *sqlparse.Between, *sqlparse.In:
		return true
	case *sqlparse.Lit:
		return e.Kind == "true" || e.Kind == "false"
	case *sqlparse.Ref:
		if len(e.Parts) == 1 {
			for _, f := range slices.Backward(c.job.Spec.Computed) {
				if f.Name == e.Parts[0].Name {
					fx, err := sqlparse.ParseExpr(f.Expr)
					return err == nil && c.boolean(fx, t)
				}
			}
		}
		if col := column(t, e.Parts[0].Name); len(e.Parts) == 1 && col != nil && col.Computed != nil {
			// The table's computed column, before the query adds it to
			// the spec's computed fields (a column of its own name in
			// the expression is another: DDL refuses a cycle).
			if r, ok := col.Computed.(*sqlparse.Ref); ok && len(r.Parts) == 1 && r.Parts[0].Name == e.Parts[0].Name {
				return false
			}
			return c.boolean(col.Computed, t)
		}
		dt := declaredType(t, e.Parts)
		return dt != nil && strings.EqualFold(dt.Name, "BOOLEAN")
	}
	return false
}
