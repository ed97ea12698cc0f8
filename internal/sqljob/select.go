package sqljob

import (
	"fmt"
	"slices"
	"strings"

	"github.com/weirstream/weir/internal/expr"
	"github.com/weirstream/weir/internal/sqlparse"
	"github.com/weirstream/weir/spec"
)

// isSelect reports whether sel is a query without a window: no GROUP BY,
// no aggregate, no ROW_NUMBER, from one table or view.
func isSelect(sel *sqlparse.Select) bool {
	if _, ok := sel.From.(*sqlparse.TableRef); !ok || sel.GroupBy != nil || sel.Having != nil {
		return false
	}
	for _, it := range sel.Items {
		if call, ok := it.Expr.(*sqlparse.Call); ok {
			if _, agg := aggregates[strings.ToUpper(tableName(call.Name))]; agg || call.Over != nil {
				return false
			}
		}
	}
	return true
}

// compileSelect compiles INSERT INTO sink SELECT columns FROM t [WHERE
// ...]: a stateless query (spec.SelectOp), every record a row of its
// columns, no window. Its time is the table's time attribute (so that
// a record without a valid one is a dead letter, as in a windowed job),
// or processing time for a table without a watermark.
func (c *compiler) compileSelect(in *sqlparse.Insert, sel *sqlparse.Select, sinkT *sqlparse.CreateTable) error {
	from := sel.From.(*sqlparse.TableRef)
	switch {
	case sel.Distinct:
		return errAt(sel.Pos, "DISTINCT", "group by the columns in a window: SELECT ... FROM TABLE(TUMBLE(...)) GROUP BY window_start, window_end, columns", "SELECT DISTINCT without a window is not compiled (its state would grow without end)")
	}
	items, fields, err := c.selectColumns(sel, from)
	if err != nil {
		return err
	}
	s := c.job.Spec
	// The emit keys of windows do not apply: there is no window.
	for _, set := range []bool{s.AllowedLateness != nil, s.Trigger != nil, s.LateFiringInterval != nil} {
		if set {
			c.job.Warnings = append(c.job.Warnings, fmt.Sprintf("%s: table.exec.emit.* keys apply to windows; this query has none, and they are ignored", sel.Pos))
			break
		}
	}
	selectSpec(s, fields)
	if tableName(sinkT.Name) == stdoutName && slices.ContainsFunc(sel.Items, func(it *sqlparse.SelectItem) bool { return it.Star }) {
		// A bare SELECT * prints the columns * stands for.
		sinkT.Columns = nil
		for _, it := range items {
			col := &sqlparse.Column{Pos: it.pos, Name: sqlparse.Ident{Pos: it.pos, Name: strings.TrimPrefix(it.from, hiddenField)}}
			if it.from == spec.ColWindowStart {
				col.Name.Name = c.timeAttr
				col.Type = c.timeAttrType(it.pos)
			}
			sinkT.Columns = append(sinkT.Columns, col)
		}
	}
	k, err := c.sink(sinkT)
	if err != nil {
		return err
	}
	if err := appendOnly(in, sinkT, k, "a query without a window"); err != nil {
		return err
	}
	c.job.selectOp = &spec.SelectOp{Fields: fields}
	return c.mapColumns(in, sel, items, sinkT, k)
}

// appendOnly refuses sink k (table t) for rows that append (what, a
// query without a window or a join of records), which have no key and
// window to upsert a SQL table by.
func appendOnly(in *sqlparse.Insert, t *sqlparse.CreateTable, k *spec.Sink, what string) error {
	if sqlTable(k) {
		return errAt(in.Pos, tableName(t.Name), "write the rows to a filesystem, kafka, print or blackhole table", "table %s: %s appends rows, which have no key and window to upsert a SQL table by", tableName(t.Name), what)
	}
	return nil
}

// selectSpec makes spec s, whose read compileSelect or a join of records
// compiled, a select's: no window emit keys, a window that compiles
// (SelectPlan replaces it), each field an aggregate (its value as the
// record has it).
func selectSpec(s *spec.Spec, fields []string) {
	s.AllowedLateness, s.Trigger, s.LateFiringInterval = nil, nil, nil
	s.Window, s.Trigger = spec.Window{Type: "global"}, &spec.Trigger{Type: "count", Count: 1}
	for _, f := range fields {
		s.Aggregate = append(s.Aggregate, spec.Aggregate{Name: f, Fn: "first", Field: f})
	}
}

// hiddenField prefixes the name a row's value takes for a record's field
// of a result line's name (window_start, run, pane).
const hiddenField = "_weir_field_"

// selectColumns compiles the read, where and select list of SELECT
// columns FROM from [WHERE ...] into the job's spec: the items (each a
// field of the record, or window_start for the table's time attribute,
// the row's time) and the record fields they read.
func (c *compiler) selectColumns(sel *sqlparse.Select, from *sqlparse.TableRef) ([]item, []string, error) {
	rel, err := c.relationOf(from.Name, from.Alias.Name)
	if err != nil {
		return nil, nil, err
	}
	if rel.results != nil {
		return nil, nil, errAt(from.Name.Pos(), rel.name, "window its rows again, or select from the table it reads", "a query of a windowed view's rows without a window is not compiled yet")
	}
	if rel.table, err = tableHint(rel.table, from.Hint); err != nil {
		return nil, nil, err
	}
	timeCol := ""
	if wm := rel.table.Watermark; wm != nil {
		timeCol = wm.Column.Name
	}
	filter, err := c.source(rel, timeCol)
	if err != nil {
		return nil, nil, err
	}
	if err := c.where(sel.Where, rel, filter); err != nil {
		return nil, nil, err
	}
	var items []item
	var fields []string
	field := func(pos sqlparse.Pos, name string) {
		typ := c.fieldType(rel.table)([]sqlparse.Ident{{Name: name}})
		if slices.Contains(spec.ResultColumns, name) {
			// A record's field of a result line's name (weir's own
			// results read back: window_start, run, pane) is a row's
			// value under a name of its own.
			hidden := hiddenField + name
			if !slices.Contains(fields, hidden) {
				c.addComputed(rel.table, hidden, &sqlparse.Ref{Parts: []sqlparse.Ident{{Pos: pos, Name: name}}})
			}
			name = hidden
		}
		items = append(items, item{pos: pos, from: name, typ: typ})
		if !slices.Contains(fields, name) {
			fields = append(fields, name)
		}
	}
	for i, it := range sel.Items {
		if it.Star {
			for _, col := range rel.cols {
				switch {
				case c.isField(rel, &col):
					field(it.Pos, col.name)
				case col.name == c.timeAttr:
					items = append(items, item{pos: it.Pos, from: spec.ColWindowStart})
				}
			}
			continue
		}
		if ref, ok := it.Expr.(*sqlparse.Ref); ok {
			col, id, rest, perr := rel.path(ref)
			if perr != nil {
				return nil, nil, perr
			}
			if len(rest) == 0 && col.name == c.timeAttr && timeCol != "" {
				// The time attribute read as the timestamp: the row's time.
				items = append(items, item{pos: it.Pos, from: spec.ColWindowStart})
				continue
			}
			if len(rest) == 0 && c.isField(rel, col) {
				field(it.Pos, col.name)
				continue
			}
			if !c.isField(rel, col) {
				return nil, nil, errAt(id.Pos, id.Name, "select the record's own fields and computed columns", "%s is not a field of the record (a metadata column)", id.Name)
			}
		}
		// An expression (or a nested field): a computed field holds it.
		x, err := c.fields(it.Expr, rel)
		if err != nil {
			return nil, nil, err
		}
		if err := c.timeCompares(x, rel.table); err != nil {
			return nil, nil, err
		}
		if _, err := expr.CompileValue(x, func(sqlparse.Ident) (int, *sqlparse.Error) { return 0, nil }); err != nil {
			return nil, nil, err
		}
		if ref, ok := it.Expr.(*sqlparse.Ref); ok {
			if t := declaredType(rel.table, ref.Parts); isRowType(t) {
				// A nested ROW: its declared fields alone (sinkCast).
				if x, err = sqlparse.ParseExpr(c.sinkCast(sqlparse.FormatExpr(x), &sqlparse.Column{Type: t})); err != nil {
					return nil, nil, err
				}
			}
		}
		name := fmt.Sprintf("_weir_col_%d", i)
		c.addComputed(rel.table, name, x)
		field(it.Pos, name)
	}
	if len(fields) == 0 {
		return nil, nil, errAt(sel.Pos, "SELECT", "select a column of the record", "the query selects no field of the record")
	}
	return items, fields, nil
}
