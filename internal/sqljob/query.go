package sqljob

import (
	"strings"

	"github.com/weirstream/weir/internal/sqlparse"
	"github.com/weirstream/weir/internal/suggest"
	"github.com/weirstream/weir/spec"
)

// compileInsert compiles INSERT INTO sink SELECT keys, window bounds and
// aggregates FROM TABLE(window function) GROUP BY the window and keys.
func (c *compiler) compileInsert(in *sqlparse.Insert) error {
	sinkT, err := c.lookup(in.Table)
	if err != nil {
		return err
	}
	q := in.Query
	if len(q.Selects) != 1 || q.With != nil || q.OrderBy != nil || q.Limit != nil {
		return errAt(q.Pos, "", "write one SELECT ... FROM TABLE(TUMBLE(...)) GROUP BY window_start, window_end, keys", "this query is not compiled yet")
	}
	sel := q.Selects[0]
	var src *sqlparse.CreateTable
	var timeCol string
	group := legacyWindow(sel)
	switch from := sel.From.(type) {
	case *sqlparse.TableFunc:
		if src, timeCol, err = c.window(from.Call); err != nil {
			return err
		}
	case *sqlparse.TableRef:
		if group == nil {
			return errAt(sel.Pos, "SELECT", "aggregate over a window table function: FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))", "only windowed aggregations are compiled yet")
		}
		if src, err = c.lookup(from.Name); err != nil {
			return err
		}
		var ref *sqlparse.Ref
		if len(group.Args) > 0 {
			ref, _ = group.Args[0].Value.(*sqlparse.Ref)
		}
		if ref == nil || len(ref.Parts) != 1 {
			return errAt(group.Pos, tableName(group.Name), "write "+tableName(group.Name)+"(ts, INTERVAL '1' MINUTE) with the table's time attribute", "a group window's first argument is the time attribute")
		}
		timeCol = ref.Parts[0].Name
		if err := c.assign(group, strings.ToUpper(tableName(group.Name)), -1); err != nil {
			return err
		}
	default:
		return errAt(sel.Pos, "SELECT", "aggregate over a window table function: FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))", "only windowed aggregations are compiled yet")
	}
	if err := c.source(src, timeCol); err != nil {
		return err
	}
	if sel.Where != nil || sel.Having != nil {
		return errAt(sel.Pos, "WHERE", "", "filters are not compiled yet")
	}
	if err := c.aggregation(sel, src, group); err != nil {
		return err
	}
	// INSERT maps the query's columns onto the sink's by position, as
	// Flink does: their numbers must agree (metadata columns, which weir
	// fills, aside).
	var written []string
	for _, col := range sinkT.Columns {
		if !col.Metadata && col.Computed == nil {
			written = append(written, col.Name.Name)
		}
	}
	if len(in.Columns) > 0 {
		return errAt(in.Pos, "INSERT", "leave out the column list: the query's columns go to the sink's in order", "INSERT INTO t (columns) is not compiled yet")
	}
	if len(sel.Items) != len(written) {
		return errAt(sel.Pos, "SELECT", "select one column per column of "+tableName(in.Table)+" ("+strings.Join(written, ", ")+"), in its order",
			"the query has %d columns and table %s has %d", len(sel.Items), tableName(in.Table), len(written))
	}
	return c.sink(sinkT)
}

// legacyWindow is the group window of a legacy windowed aggregation
// (GROUP BY TUMBLE(ts, INTERVAL ...), HOP or SESSION), or nil.
func legacyWindow(sel *sqlparse.Select) *sqlparse.Call {
	for _, g := range sel.GroupBy {
		if call, ok := g.(*sqlparse.Call); ok {
			switch strings.ToUpper(tableName(call.Name)) {
			case "TUMBLE", "HOP", "SESSION":
				return call
			}
		}
	}
	return nil
}

// arg finds a window function's argument by position or name.
func arg(call *sqlparse.Call, i int, name string) (sqlparse.Expr, bool) {
	for _, a := range call.Args {
		if strings.EqualFold(a.Name.Name, name) {
			return a.Value, true
		}
	}
	if i < len(call.Args) && call.Args[i].Name.Name == "" {
		return call.Args[i].Value, true
	}
	return nil, false
}

// window compiles a window table function into the spec's window and
// returns its table and time column.
func (c *compiler) window(call *sqlparse.Call) (*sqlparse.CreateTable, string, error) {
	fn := strings.ToUpper(tableName(call.Name))
	data, ok := arg(call, 0, "DATA")
	ta, isTable := data.(*sqlparse.TableArg)
	if !ok || !isTable {
		return nil, "", errAt(call.Pos, fn, "write "+fn+"(TABLE t, DESCRIPTOR(ts), ...)", "%s's first argument is TABLE and the table", fn)
	}
	t, err := c.lookup(ta.Name)
	if err != nil {
		return nil, "", err
	}
	tc, ok := arg(call, 1, "TIMECOL")
	d, isDesc := tc.(*sqlparse.Descriptor)
	if !ok || !isDesc || len(d.Columns) != 1 {
		return nil, "", errAt(call.Pos, fn, "write DESCRIPTOR(ts) with the table's time attribute", "%s's second argument is DESCRIPTOR of one column", fn)
	}
	if err := c.assign(call, fn, 0); err != nil {
		return nil, "", err
	}
	if fn == "SESSION" {
		for _, k := range ta.PartitionBy {
			c.job.Spec.Key = append(c.job.Spec.Key, k.Name)
		}
	}
	return t, d.Columns[0].Name, nil
}

// assign compiles a window function's sizes into the spec's window: a
// table function's (off 0: the sizes from its third argument) or a
// legacy group window's (off -1: from its second).
func (c *compiler) assign(call *sqlparse.Call, fn string, off int) error {
	interval := func(i int, name string) (*spec.Duration, error) {
		e, ok := arg(call, i+off, name)
		if !ok {
			return nil, errAt(call.Pos, fn, "", "%s needs its %s argument", fn, name)
		}
		iv, ok := e.(*sqlparse.Interval)
		if !ok {
			return nil, errAt(sqlparse.ExprPos(e), "", "write INTERVAL '1' MINUTE", "%s's %s is an INTERVAL", fn, name)
		}
		return intervalDuration(iv)
	}
	w := &c.job.Spec.Window
	var err error
	switch fn {
	case "TUMBLE":
		w.Type = "tumbling"
		if w.Size, err = interval(2, "SIZE"); err != nil {
			return err
		}
		if _, ok := arg(call, 3+off, "OFFSET"); ok {
			w.Offset, err = interval(3, "OFFSET")
		}
	case "HOP":
		w.Type = "sliding"
		if w.Slide, err = interval(2, "SLIDE"); err == nil {
			w.Size, err = interval(3, "SIZE")
		}
		if _, ok := arg(call, 4+off, "OFFSET"); ok && err == nil {
			w.Offset, err = interval(4, "OFFSET")
		}
	case "SESSION":
		w.Type = "session"
		w.Gap, err = interval(2, "GAP")
	default:
		hint := suggest.Or(fn, []string{"TUMBLE", "HOP", "SESSION"}, "use TUMBLE, HOP or SESSION")
		if fn == "CUMULATE" {
			hint = "CUMULATE is not compiled yet; use TUMBLE, HOP or SESSION"
		}
		return errAt(call.Pos, fn, hint, "unknown window function %s", fn)
	}
	return err
}

// intervalDuration is an INTERVAL literal's length.
func intervalDuration(iv *sqlparse.Interval) (*spec.Duration, error) {
	if iv.To != "" {
		return nil, errAt(iv.Pos, "TO", "write the interval in one unit", "INTERVAL ... TO ... is not supported")
	}
	d, err := flinkDuration(strings.TrimSpace(iv.Value) + " " + strings.ToLower(iv.Unit))
	if err != nil || iv.Unit == "MONTH" || iv.Unit == "YEAR" {
		return nil, errAt(iv.Pos, iv.Value, "use SECOND, MINUTE, HOUR or DAY", "INTERVAL '%s' %s is not a fixed length of time", iv.Value, iv.Unit)
	}
	return &d, nil
}
