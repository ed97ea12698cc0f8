package sqljob

import (
	"cmp"
	"strings"

	"fmt"
	"slices"

	"github.com/weirstream/weir/internal/expr"

	"github.com/weirstream/weir/internal/sqlparse"
	"github.com/weirstream/weir/spec"
)

// cascaded is the window a job's window reads the results of (a cascade,
// semantics W12): a view that is a windowed aggregation, windowed again
// by its window_time column, as Flink's cascading window aggregations
// are written.
type cascaded struct {
	// up is the spec of the view's windowed aggregation.
	up *spec.Spec
	// name is the view's, for its window's node; into the sink table's,
	// for the node of the window that reads the view.
	name, into string
	// attached: the window that reads the view groups its rows by their
	// windows (W18), not by a window table function of their rowtime.
	attached bool
	// ltz: the view's windows are of a TIMESTAMP_LTZ attribute, so its
	// window_time, the time attribute of the window that reads it, is
	// one too.
	ltz bool
}

// cascadeRelation compiles view v, a windowed aggregation, into a spec of
// its own (c.job.cascade) and returns the relation a query over it reads: its
// columns by the view's names, each a column of the aggregation's
// results (results: a key field, window_start, window_end, window_time
// or an aggregate).
func (c *compiler) cascadeRelation(v *sqlparse.CreateView, alias string) (*relation, error) {
	name := tableName(v.Name)
	q := v.Query
	if c.job.cascade != nil {
		return nil, errAt(v.Pos, name, "window a table's records, then the view's results once", "view %s: a cascade of more than two windows is not compiled yet", name)
	}
	if len(q.Selects) != 1 || q.With != nil || q.OrderBy != nil || q.Limit != nil {
		return nil, errAt(q.Pos, name, "a windowed view is one SELECT ... GROUP BY window_start, window_end, ...", "view %s: this query is not compiled yet", name)
	}
	down := c.job.Spec
	up := *down
	up.Sinks = spec.Sinks{}
	c.job.Spec = &up
	items, err := c.windowed(q.Selects[0])
	c.job.Spec = down
	if err != nil {
		return nil, err
	}
	c.job.cascade = &cascaded{up: &up, name: name, ltz: c.attrLTZ}
	r := &relation{name: name, alias: alias, view: true, results: map[string]string{}}
	for i, it := range q.Selects[0].Items {
		col := columnName(it, i)
		if len(v.Columns) > i {
			col = v.Columns[i].Name
		}
		r.cols = append(r.cols, relCol{name: col, pos: it.Pos})
		r.results[col] = items[i].from
	}
	return r, nil
}

// cascadeAggregation compiles a windowed aggregation over windowed
// view rel's results (time column timeCol): cascadeWindow's checks, the
// aggregation, then the view's column names as the results'.
func (c *compiler) cascadeAggregation(sel *sqlparse.Select, rel *relation, group *sqlparse.Call, timeCol string) ([]item, error) {
	if sel.Where != nil {
		if err := c.cascadeWhere(sel.Where, rel); err != nil {
			return nil, err
		}
	}
	if err := c.cascadeWindow(rel, timeCol, sel.Pos); err != nil {
		return nil, err
	}
	return c.resultsAggregation(sel, rel, group)
}

// cascadeWhere compiles the WHERE x of a window over windowed view rel's
// results, which filters the view's rows before the window reads them:
// the view's HAVING, over its results' columns (its key fields, bounds
// and aggregates), as the view's window fires each window once. A row it
// drops is counted in the view's having_filtered.
func (c *compiler) cascadeWhere(x sqlparse.Expr, rel *relation) error {
	var bad *sqlparse.Error
	out := rewriteRefs(x, func(r *sqlparse.Ref) sqlparse.Expr {
		col, id, err := rel.ref(r)
		if err != nil {
			bad = cmp.Or(bad, err)
			return r
		}
		return &sqlparse.Ref{Parts: []sqlparse.Ident{{Pos: id.Pos, Name: rel.results[col.name]}}}
	})
	if bad != nil {
		return bad
	}
	if inner := aggregateIn(out); inner != nil {
		return errAt(inner.Pos, sqlparse.FormatExpr(inner), "filter on the view's columns; aggregate in the view", "a WHERE over view %s's rows holds an aggregate, %s", rel.name, sqlparse.FormatExpr(inner))
	}
	out = c.resultTimes(out)
	if err := c.condition(out, nil, "WHERE"); err != nil {
		return err
	}
	if _, err := expr.Compile(out, func(sqlparse.Ident) (int, *sqlparse.Error) { return 0, nil }, resultTimes); err != nil {
		return err
	}
	up := c.job.cascade.up
	text := sqlparse.FormatExpr(flinkCasts(out, c.fieldType(nil)))
	if up.Having != "" {
		text = "(" + up.Having + ") AND (" + text + ")"
	}
	up.Having = text
	return nil
}

// aggregateIn is the first aggregate call in x, or nil.
func aggregateIn(x sqlparse.Expr) *sqlparse.Call {
	var found *sqlparse.Call
	mapExpr(x, func(e sqlparse.Expr) sqlparse.Expr {
		if f, ok := e.(*sqlparse.Call); ok && found == nil {
			if _, agg := aggregates[strings.ToUpper(tableName(f.Name))]; agg {
				found = f
			}
		}
		return e
	})
	return found
}

// resultsAggregation compiles the aggregation of sel over windowed
// relation rel's results: its keys and aggregated fields renamed to the
// results' columns (cascadeFields), and its items too.
func (c *compiler) resultsAggregation(sel *sqlparse.Select, rel *relation, group *sqlparse.Call) ([]item, error) {
	items, err := c.aggregation(sel, rel, group)
	if err != nil {
		return nil, err
	}
	for _, g := range sel.GroupBy {
		// A view's bound under its own name (window_start AS ws) as a
		// key: the results' field is the window's bound, which the
		// outer window's rows have as their own.
		if ref, ok := g.(*sqlparse.Ref); ok {
			if col, id, err := rel.ref(ref); err == nil && isBound(rel.results[col.name]) && slices.Contains(c.job.Spec.Key, col.name) {
				return nil, errAt(id.Pos, id.Name, "select MIN("+id.Name+") or MAX("+id.Name+") instead, or group by the outer window's window_start and window_end alone",
					"grouping by %s, a bound of %s's windows, is not compiled yet", id.Name, rel.name)
			}
		}
	}
	if err := c.cascadeFields(rel, sel.Pos); err != nil {
		return nil, err
	}
	for i := range items {
		if f, ok := rel.results[items[i].from]; ok && !items[i].agg && !isBound(items[i].from) {
			items[i].from = f
		}
	}
	return items, nil
}

// attachedAggregation compiles an aggregation of windowed relation rel's
// rows per window (semantics W18): SELECT ... FROM rel GROUP BY its
// window_start and window_end columns (under the names rel gives them)
// and keys. It is a cascade whose window is the relation's own: every
// window of it holds that window's results (window.Attached).
func (c *compiler) attachedAggregation(sel *sqlparse.Select, rel *relation) ([]item, error) {
	if sel.Where != nil {
		return nil, errAt(sqlparse.ExprPos(sel.Where), "WHERE", "filter the rows in the windowed query (HAVING)", "a filter of %s's rows is not compiled yet", rel.name)
	}
	if err := c.firesOnce(sel.Pos, "an aggregation of a windowed query's rows", "count"); err != nil {
		return nil, err
	}
	up := c.job.cascade.up
	if t := up.Window.Type; t != "tumbling" && t != "sliding" && t != "cumulate" {
		return nil, errAt(sel.Pos, rel.name, "aggregate per window the rows of TUMBLE, HOP or CUMULATE windows, whose bounds are known from their ends",
			"%s's windows are %s windows: an aggregation of its rows per window is not compiled", rel.name, windowSQL(up.Window))
	}
	s := c.job.Spec
	s.Source, s.Watermark, s.Time, s.Window = up.Source, up.Watermark, up.Time, up.Window
	c.job.cascade.attached = true
	// The relation's window bounds, by whatever name it gives them, as
	// the bounds aggregation reads; its other columns as they are.
	bound := func(x sqlparse.Expr) sqlparse.Expr {
		// Also inside expressions (DATE_FORMAT(t.wstart, 'HH:mm')).
		return rewriteRefs(x, func(ref *sqlparse.Ref) sqlparse.Expr {
			col, _, err := rel.ref(ref)
			if err != nil || !isBound(rel.results[col.name]) {
				return ref
			}
			return &sqlparse.Ref{Parts: []sqlparse.Ident{{Pos: ref.Parts[0].Pos, Name: rel.results[col.name]}}}
		})
	}
	q := *sel
	q.GroupBy = nil
	for _, g := range sel.GroupBy {
		q.GroupBy = append(q.GroupBy, bound(g))
	}
	q.Items = nil
	for _, it := range sel.Items {
		cp := *it
		cp.Expr = bound(it.Expr)
		q.Items = append(q.Items, &cp)
	}
	return c.resultsAggregation(&q, rel, nil)
}

// cascadeWindow finishes the spec of a window over a windowed view's
// results: its time column must be the view's window_time; its keys and
// aggregates read the results' columns by their names in the results
// (not the view's aliases); it computes and filters nothing, since it
// reads no records of its own; it reads the view's source, so that the
// spec compiles (the plan keeps only its window).
func (c *compiler) cascadeWindow(rel *relation, timeCol string, pos sqlparse.Pos) error {
	s := c.job.Spec
	if rel.results[timeCol] != spec.ColWindowTime {
		return errAt(pos, timeCol, "window by the view's window_time column (SELECT window_time AS rowtime ... in the view, DESCRIPTOR(rowtime) here)",
			"a window over view %s's results is windowed by its window_time, not %s", rel.name, timeCol)
	}
	if err := c.firesOnce(pos, "a window over a windowed view", "count"); err != nil {
		return err
	}
	up := c.job.cascade.up
	s.Source, s.Watermark, s.Time = up.Source, up.Watermark, up.Time
	// The view's window_time is this window's time attribute: a
	// TIMESTAMP_LTZ, cut in the view's zone, when the view's is.
	c.attrLTZ, s.TimeZone = c.job.cascade.ltz, up.TimeZone
	return nil
}

// cascadeFields renames the spec's keys and aggregated fields from the
// view's column names to the results' and refuses what a window over
// results cannot do (compute or filter on them).
func (c *compiler) cascadeFields(rel *relation, pos sqlparse.Pos) error {
	s := c.job.Spec
	if len(s.Computed) > 0 || s.Where != "" {
		return errAt(pos, "SELECT", "aggregate and group by the view's columns as they are", "a window over view %s's results computes and filters nothing yet", rel.name)
	}
	for i, k := range s.Key {
		s.Key[i] = rel.results[k]
	}
	for i := range s.Aggregate {
		if f := s.Aggregate[i].Field; f != "" {
			s.Aggregate[i].Field = rel.results[f]
		}
	}
	return nil
}

// cascadeQueryPlan compiles a cascade: the view's window (c.up), its
// results feeding the query's window (s's), whose results go to the
// sink. The view's window is named after the view, the other after the
// sink's table.
func cascadeQueryPlan(s *spec.Spec, c *cascaded) (*spec.Plan, error) {
	k := s.Sinks.Results[0]
	p, err := cascadePlan(s, c, c.into)
	if err != nil {
		return nil, err
	}
	if len(k.Columns) > 0 {
		if err := p.SetResultColumns(k.Columns); err != nil {
			return nil, inSQLTerms(err, nil)
		}
	}
	return p, nil
}

// cascadePlan compiles spec down, whose window reads the results of
// cascade's (its up spec's) window: the up window named after cascade's
// name feeds down's, node into, whose results go to down's results sink.
// An attached cascade's window is up's own windows (window.Attached).
func cascadePlan(down *spec.Spec, cascade *cascaded, into string) (*spec.Plan, error) {
	k := down.Sinks.Results[0]
	r := *k
	r.Columns = nil // the view's rows have not the sink's columns
	up := *cascade.up
	up.Sinks.Results = []*spec.Sink{&r}
	if down.TimeZone == "" {
		// down's time attribute is up's window_time: a TIMESTAMP_LTZ
		// when up's windows are cut in a zone, and cut in it too.
		down.TimeZone = up.TimeZone
	}
	dp, err := spec.Compile(down)
	if err != nil {
		return nil, inSQLTerms(err, nil)
	}
	p, err := spec.Compile(&up)
	if err != nil {
		return nil, fmt.Errorf("view %s: %w", cascade.name, inSQLTerms(err, nil))
	}
	var win, upWin *spec.WindowOp
	for _, n := range dp.Graph.Nodes {
		if w, ok := n.Op.(*spec.WindowOp); ok {
			win = w
		}
	}
	for i, n := range p.Graph.Nodes {
		if w, ok := n.Op.(*spec.WindowOp); ok {
			p.Graph.Nodes[i].Name, upWin = cascade.name, w
		}
	}
	var def any = down
	if cascade.attached {
		if win, err = spec.Attach(win, upWin, cascade.name); err != nil {
			return nil, fmt.Errorf("an aggregation of %s's rows per window: %w", cascade.name, err)
		}
		def = struct {
			*spec.Spec
			Attached bool
		}{down, true}
	}
	if p, err = spec.FeedPlan(p, win, into, def); err != nil {
		return nil, inSQLTerms(err, nil)
	}
	return p, nil
}
