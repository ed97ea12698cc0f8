package sqljob

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/weirstream/weir/internal/expr"

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
	if merged, ok, err := projectedWindow(sel); err != nil {
		return err
	} else if ok {
		sel = merged
	}
	if err := c.queryHint(sel.Hint); err != nil {
		return err
	}
	c.hinted, c.descriptor = sel, sqlparse.Ident{}
	if err := c.earlyFiring(); err != nil {
		return err
	}
	if j, ok := sel.From.(*sqlparse.Join); ok {
		return c.compileJoin(in, sel, j, sinkT)
	}
	if inner, rn, ok := topNQuery(sel); ok {
		return c.compileTopN(in, sel, inner, rn, sinkT)
	}
	if isSelect(sel) && legacyWindow(sel) == nil {
		return c.compileSelect(in, sel, sinkT)
	}
	items, err := c.windowed(sel)
	if err != nil {
		return err
	}
	if c.job.cascade != nil {
		c.job.cascade.into = tableName(in.Table)
		if c.job.cascade.into == stdoutName {
			c.job.cascade.into = "query"
		}
	}
	k, err := c.sink(sinkT)
	if err != nil {
		return err
	}
	return c.mapColumns(in, sel, items, sinkT, k)
}

// windowed compiles a windowed aggregation, SELECT keys, window bounds
// and aggregates FROM TABLE(window function) GROUP BY the window and
// keys (or a legacy group window), into the spec: its source, window,
// where, key and aggregates. It returns the query's columns.
func (c *compiler) windowed(sel *sqlparse.Select) ([]item, error) {
	if sel != c.hinted && sel.Hint != nil {
		// The hint of a window inside the query (a join's side, a
		// Top-N's or a cascade's input): its emit options are the
		// query's, refused where a SET of them would be.
		if err := c.queryHint(sel.Hint); err != nil {
			return nil, err
		}
		if err := c.earlyFiring(); err != nil {
			return nil, err
		}
	}
	// Nested keys are computed fields of this aggregation's spec.
	saved := c.nested
	c.nested = nil
	defer func() { c.nested = saved }()
	if sel.Distinct && len(sel.GroupBy) == 0 {
		// SELECT DISTINCT of a window's rows, as Flink plans it: a
		// grouping by every column selected.
		d := *sel
		d.Distinct = false
		for _, it := range sel.Items {
			if it.Star {
				return nil, errAt(it.Pos, "*", "name the columns: SELECT DISTINCT k, window_start, window_end", "SELECT DISTINCT * of a window's rows is not compiled")
			}
			d.GroupBy = append(d.GroupBy, it.Expr)
		}
		sel = &d
	}
	var err error
	var rel *relation
	var timeCol string
	attached := false // an aggregation per window of a windowed relation (W18)
	group := legacyWindow(sel)
	switch from := sel.From.(type) {
	case *sqlparse.TableFunc:
		if rel, timeCol, err = c.window(from.Call); err != nil {
			return nil, err
		}
	case *sqlparse.Subquery:
		// An aggregation of a windowed subquery's rows per window
		// (W18), or nothing compiled.
		if group != nil || from.Alias.Name == "" {
			return nil, errAt(sel.Pos, "SELECT", "aggregate over a window table function: FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))", "only windowed aggregations are compiled yet")
		}
		v := &sqlparse.CreateView{Pos: from.Pos, Name: sqlparse.Name{Parts: []sqlparse.Ident{from.Alias}}, Query: from.Query}
		if rel, err = c.cascadeRelation(v, from.Alias.Name); err != nil {
			return nil, err
		}
		attached = true
	case *sqlparse.TableRef:
		if group == nil {
			if v, ok := c.views[tableName(from.Name)]; ok && isWindowed(v) {
				if rel, err = c.relationOf(from.Name, from.Alias.Name); err != nil {
					return nil, err
				}
				attached = true
				break
			}
			return nil, errAt(sel.Pos, "SELECT", "aggregate over a window table function: FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))", "only windowed aggregations are compiled yet")
		}
		if rel, err = c.relationOf(from.Name, from.Alias.Name); err != nil {
			return nil, err
		}
		if rel.table, err = tableHint(rel.table, from.Hint); err != nil {
			return nil, err
		}
		var ref *sqlparse.Ref
		if len(group.Args) > 0 {
			ref, _ = group.Args[0].Value.(*sqlparse.Ref)
		}
		if ref == nil {
			return nil, errAt(group.Pos, tableName(group.Name), "write "+tableName(group.Name)+"(ts, INTERVAL '1' MINUTE) with the table's time attribute", "a group window's first argument is the time attribute")
		}
		col, _, perr := rel.ref(ref)
		if perr != nil {
			return nil, perr
		}
		timeCol = col.name
		if err := c.assign(group, strings.ToUpper(tableName(group.Name)), -1); err != nil {
			return nil, err
		}
	default:
		return nil, errAt(sel.Pos, "SELECT", "aggregate over a window table function: FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))", "only windowed aggregations are compiled yet")
	}
	sel = c.booleanExtremes(sel, rel)
	if !attached && rel.results == nil {
		sel = boundsWhere(sel)
	}
	var items []item
	switch {
	case attached:
		items, err = c.attachedAggregation(sel, rel)
	case rel.results != nil:
		items, err = c.cascadeAggregation(sel, rel, group, timeCol)
	default:
		var filter string
		if filter, err = c.source(rel, timeCol); err == nil {
			err = c.where(sel.Where, rel, filter)
		}
		if err == nil {
			items, err = c.aggregation(sel, rel, group)
		}
		if tf, ok := sel.From.(*sqlparse.TableFunc); ok && err == nil {
			err = c.sessionKeys(tf.Call, sel)
		}
	}
	if err == nil && sel.Having != nil {
		err = c.having(sel, rel, items)
	}
	if err == nil && len(c.job.Spec.Aggregate) == 0 {
		// GROUP BY alone (a window's distinct keys): the spec needs an
		// aggregate; a count no column shows.
		c.job.Spec.Aggregate = []spec.Aggregate{{Name: hiddenCount, Fn: "count"}}
	}
	return items, err
}

// having compiles a windowed aggregation's HAVING into the spec's having:
// a condition over its select list's aliases and keys, its aggregates
// written as in the select list (HAVING COUNT(*) > 3 with COUNT(*) AS n
// selected reads n).
func (c *compiler) having(sel *sqlparse.Select, rel *relation, items []item) error {
	s := c.job.Spec
	if sel.Having != nil {
		c.job.place(s, "having", sqlparse.ExprPos(sel.Having))
	}
	var bad *sqlparse.Error
	unshown := map[string]string{} // an aggregate's text: its hidden one's name
	rw := func(x sqlparse.Expr) sqlparse.Expr {
		if k, ok := c.groupedExpr(x); ok {
			return k
		}
		if call, ok := x.(*sqlparse.Call); ok {
			if _, agg := aggregates[strings.ToUpper(tableName(call.Name))]; agg {
				text := sqlparse.FormatExpr(call)
				for i, it := range sel.Items {
					if it.Expr != nil && sqlparse.FormatExpr(it.Expr) == text && items[i].agg {
						return &sqlparse.Ref{Parts: []sqlparse.Ident{{Pos: call.Pos, Name: items[i].from}}}
					}
				}
				// An aggregate the select list does not show: one of
				// the window's that no column writes, as Flink computes
				// it for the HAVING alone.
				if name, ok := unshown[text]; ok {
					return &sqlparse.Ref{Parts: []sqlparse.Ident{{Pos: call.Pos, Name: name}}}
				}
				ref, err := c.hiddenAggregate(call, rel)
				if err != nil {
					bad = cmp.Or(bad, err.(*sqlparse.Error))
					return x
				}
				unshown[text] = ref.Parts[0].Name
				return ref
			}
		}
		return x
	}
	out := rewriteRefs(mapExpr(sel.Having, rw), func(r *sqlparse.Ref) sqlparse.Expr {
		name := r.Parts[len(r.Parts)-1]
		if r.Parts[0].Name == name.Name || len(r.Parts) == 1 {
			for i, it := range sel.Items {
				if it.Alias.Name != name.Name {
					continue
				}
				if items[i].expr != "" {
					// An expression of the results: HAVING reads it.
					x, err := sqlparse.ParseExpr(items[i].expr)
					if err == nil {
						return x
					}
				}
				return &sqlparse.Ref{Parts: []sqlparse.Ident{{Pos: name.Pos, Name: items[i].from}}}
			}
		}
		for _, a := range s.Aggregate {
			if a.Name == name.Name {
				return &sqlparse.Ref{Parts: []sqlparse.Ident{name}}
			}
		}
		if isBound(name.Name) && rel.col(name.Name) == nil {
			// The window's bounds, which the results have (a window
			// query groups by them).
			return &sqlparse.Ref{Parts: []sqlparse.Ident{name}}
		}
		if len(r.Parts) == 1 && slices.Contains(s.Key, name.Name) && slices.Contains(slices.Collect(maps.Values(c.nested)), name.Name) {
			return r // a grouped expression's key (rw's)
		}
		col, id, err := rel.ref(r)
		switch {
		case err != nil:
			bad = cmp.Or(bad, err)
		case !slices.Contains(s.Key, col.name):
			bad = cmp.Or(bad, errAt(id.Pos, id.Name, "group by it, or aggregate it in the select list", "%s is neither grouped by nor an aggregate of the select list", id.Name))
		default:
			return &sqlparse.Ref{Parts: []sqlparse.Ident{{Pos: id.Pos, Name: col.name}}}
		}
		return r
	})
	if bad != nil {
		return bad
	}
	// Times and numbers as Flink's planner takes them, and what weir's
	// expressions do not take, refused at their place in the query.
	out = c.resultTimes(out)
	if err := c.timeCompares(out, nil); err != nil {
		return err
	}
	if _, err := expr.Compile(out, func(sqlparse.Ident) (int, *sqlparse.Error) { return 0, nil }, resultTimes); err != nil {
		return err
	}
	s.Having = sqlparse.FormatExpr(out)
	return nil
}

// mapExpr copies x with each node replaced by f's: f returns another
// node to replace it (which mapExpr does not enter), or the node itself
// to keep it, its operands mapped.
func mapExpr(x sqlparse.Expr, f func(sqlparse.Expr) sqlparse.Expr) sqlparse.Expr {
	if y := f(x); y != x {
		return y
	}
	switch x := x.(type) {
	case *sqlparse.Unary:
		y := *x
		y.X = mapExpr(x.X, f)
		return &y
	case *sqlparse.Binary:
		y := *x
		y.X, y.Y = mapExpr(x.X, f), mapExpr(x.Y, f)
		return &y
	case *sqlparse.IsNull:
		y := *x
		y.X = mapExpr(x.X, f)
		return &y
	case *sqlparse.Between:
		y := *x
		y.X, y.Lo, y.Hi = mapExpr(x.X, f), mapExpr(x.Lo, f), mapExpr(x.Hi, f)
		return &y
	case *sqlparse.In:
		y := *x
		y.X = mapExpr(x.X, f)
		y.List = make([]sqlparse.Expr, len(x.List))
		for i, l := range x.List {
			y.List[i] = mapExpr(l, f)
		}
		return &y
	case *sqlparse.Case:
		y := *x
		if x.Operand != nil {
			y.Operand = mapExpr(x.Operand, f)
		}
		y.Whens = make([]sqlparse.When, len(x.Whens))
		for i, w := range x.Whens {
			y.Whens[i] = sqlparse.When{Cond: mapExpr(w.Cond, f), Result: mapExpr(w.Result, f)}
		}
		if x.Else != nil {
			y.Else = mapExpr(x.Else, f)
		}
		return &y
	case *sqlparse.Cast:
		y := *x
		y.X = mapExpr(x.X, f)
		return &y
	case *sqlparse.Call:
		y := *x
		y.Args = make([]sqlparse.Arg, len(x.Args))
		for i, a := range x.Args {
			y.Args[i] = sqlparse.Arg{Name: a.Name, Value: mapExpr(a.Value, f)}
		}
		if x.Filter != nil {
			y.Filter = mapExpr(x.Filter, f)
		}
		return &y
	}
	return x
}

// metadataKeys are the metadata a results sink's METADATA columns may
// read, beside the row: the firing's kind, run, pane and watermark.
var metadataKeys = []string{"firing", "run", "pane", "watermark"}

// mapColumns maps the query's columns (items) onto the columns of sink
// table t (written by k) by position, as Flink's INSERT does: their
// numbers must agree (METADATA columns, which weir fills, and computed
// ones aside). An aggregate takes its sink column's name; a JSON sink's
// rows get the table's names, order and time formats (spec.Sink.Columns);
// a SQL table keeps weir's own columns, so its key and window columns
// must have the fields' names.
func (c *compiler) mapColumns(in *sqlparse.Insert, sel *sqlparse.Select, items []item, t *sqlparse.CreateTable, k *spec.Sink) error {
	name := tableName(t.Name)
	var written []*sqlparse.Column
	for _, col := range t.Columns {
		if !col.Metadata && col.Computed == nil {
			written = append(written, col)
		}
	}
	if len(in.Columns) > 0 {
		var err error
		if items, err = listedColumns(in, sel, items, written, name); err != nil {
			return err
		}
	}
	if len(items) != len(written) {
		var names []string
		for _, col := range written {
			names = append(names, col.Name.Name)
		}
		return errAt(sel.Pos, "SELECT", "select one column per column of "+name+" ("+strings.Join(names, ", ")+"), in its order",
			"the query has %d columns and table %s has %d", len(items), name, len(written))
	}
	// A declared table (weir.layout = declared) takes the table's own
	// columns as a JSON sink's rows do, without expressions.
	declared := k.Layout == spec.LayoutDeclared
	jsonRows := !sqlTable(k) || declared
	if !jsonRows {
		// A SQL table keeps each aggregate under its column's name:
		// aggregates first take names of their places, so that a query
		// whose aliases are the table's names in another order (COUNT(*)
		// AS b, SUM(x) AS a into columns a, b) is written by position.
		items = slices.Clone(items)
		for i := range items {
			if tmp := fmt.Sprintf("_weir_col_%d", i); items[i].agg && c.renameAggregate(items[i].from, tmp) {
				items[i].from = tmp
			}
		}
	}
	var cols []spec.Column
	j := 0
	for _, col := range t.Columns {
		if col.Computed != nil {
			continue
		}
		var it item
		if col.Metadata {
			key := col.MetadataKey
			if key == "" {
				key = col.Name.Name
			}
			if !slices.Contains(metadataKeys, key) {
				hint := suggest.Or(key, metadataKeys, "weir fills firing, run, pane and watermark")
				return errAt(col.Pos, key, hint, "table %s: %s is not metadata weir writes", name, key)
			}
			it = item{pos: col.Pos, from: key}
		} else {
			it = items[j]
			j++
			t, ok := c.itemType(it)
			if ok && it.expr == "" && col.Type != nil {
				if err := insertable(t, col, name, j); err != nil {
					return err
				}
			}
		}
		dst := col.Name.Name
		if it.expr != "" && declared {
			return errAt(it.pos, "", "select the aggregates themselves (a declared table's columns hold key fields, window bounds, aggregates or metadata), or write to a JSON table",
				"table %s: a declared table's columns cannot hold an expression of the results", name)
		}
		if it.expr != "" {
			if !jsonRows && it.expr == "NULL" && len(in.Columns) > 0 {
				return errAt(col.Pos, dst, "list it: weir's tables are written whole, each row by its key and window", "table %s: INSERT INTO %s leaves out column %s", name, name, dst)
			}
			if !jsonRows {
				return errAt(it.pos, "", "select the aggregates themselves (weir's tables keep a window's aggregates), or write to a JSON table", "table %s: a SQL table's columns cannot hold an expression of the results", name)
			}
			// A time the expression computes (window_end - INTERVAL '1'
			// SECOND) is written as its kind, into the column's type.
			var tf string
			x := it.expr
			if e, err := sqlparse.ParseExpr(it.expr); err == nil {
				k := typeOf(e, c.fieldType(nil)).kind
				x, k = c.zoneColumn(x, k, col)
				tf = timeFormatOf(k, col.Type)
			}
			t, _ := c.itemType(it)
			cast := col
			if rc := c.rowColumn(it, col, name); rc != nil && c.job.selectOp != nil {
				cast = rc
			}
			cols = append(cols, spec.Column{Name: dst, Expr: c.sinkCast(x, cast), Float: floatFormat(col, t), Time: tf})
			continue
		}
		if rc := c.rowColumn(it, col, name); jsonRows && c.job.selectOp != nil && !it.agg && it.expr == "" && rc != nil {
			// A ROW column of the record: its declared fields (sinkCast).
			cols = append(cols, spec.Column{Name: dst, Expr: c.sinkCast("`"+strings.ReplaceAll(it.from, ".", "`.`")+"`", rc)})
			continue
		}
		if t := typeOfSQL(col.Type); jsonRows && c.job.selectOp != nil && t.kind == tDec && c.computedTypes[it.from] != t &&
			!slices.Contains(spec.ColumnSources, it.from) {
			// A query without a window: a record's value into a
			// DECIMAL(p, s) column is cast on insert, as Flink casts it
			// (20.21 into a DECIMAL(10, 4) is 20.2100). A window's
			// aggregate is cast by the aggregate (spec.Aggregate.Decimal,
			// below).
			cols = append(cols, spec.Column{Name: dst, Expr: c.sinkCast(it.from, col)})
			continue
		}
		if it.agg && (!jsonRows || !c.reserved(dst)) {
			// The aggregate takes the column's name; in a JSON row a name
			// weir's own rows keep for themselves (job, firing, a key
			// field) stays the column's alone.
			if c.renameAggregate(it.from, dst) {
				it.from = dst
			}
		}
		if col.Type == nil && name == stdoutName && it.from == spec.ColWindowStart {
			// A bare SELECT of the time attribute: its own type.
			col = &sqlparse.Column{Pos: col.Pos, Name: col.Name, Type: c.timeAttrType(col.Pos)}
		}
		if name == stdoutName && it.from == spec.ColWindowTime && c.attrLTZ {
			// window_time is the time attribute's type: a TIMESTAMP_LTZ
			// prints as the instant, with its Z.
			col = &sqlparse.Column{Pos: col.Pos, Name: col.Name, Type: c.timeAttrType(col.Pos)}
		}
		tf, err := timeFormat(it, col, name)
		if err != nil {
			return err
		}
		if tf == "timestamp_ltz" && jsonRows && c.zone != 0 && c.job.Spec.TimeZone == "" {
			// A window bound of a TIMESTAMP attribute (a wall time) into
			// a TIMESTAMP_LTZ column: the instant of that wall time in
			// the zone, as Flink casts it (a zone's windows' bounds are
			// instants already).
			if x, k := c.zoneColumn(it.from, tTime, col); x != it.from {
				cols = append(cols, spec.Column{Name: dst, Expr: x, Time: timeFormatOf(k, col.Type)})
				continue
			}
		}
		if tf == "" && jsonRows {
			k := c.computedTypes[it.from].kind
			if k == tOther {
				k = it.typ.kind
			}
			if x, k := c.zoneColumn(it.from, k, col); x != it.from {
				// A time into a column of the other kind of time.
				cols = append(cols, spec.Column{Name: dst, Expr: x, Time: timeFormatOf(k, col.Type)})
				continue
			}
			tf = c.fieldTimeFormat(it.from, col.Type)
		}
		if !jsonRows && !it.agg && dst != it.from {
			return errAt(col.Pos, dst, "name the column "+it.from+" (weir's tables keep a key or window column under its field's name)",
				"table %s: column %s would hold %s", name, dst, it.from)
		}
		if !jsonRows && it.from == "window_time" {
			return errAt(it.pos, it.from, "select window_end (window_time is window_end - 1 ms)", "table %s: weir's tables have no window_time column", name)
		}
		if it.present != "" && jsonRows {
			// Null when the column's side is absent (an outer join).
			name := func(n string) string { return sqlparse.FormatExpr(&sqlparse.Ref{Parts: []sqlparse.Ident{{Name: n}}}) }
			guard := fmt.Sprintf("CASE WHEN %s IS NULL THEN NULL ELSE %s END", name(it.present), name(it.from))
			cols = append(cols, spec.Column{Name: dst, Expr: guard, Time: tf})
			continue
		}
		t, _ := c.itemType(it)
		k := spec.Column{Name: dst, From: it.from, Time: tf, Float: floatFormat(col, t)}
		if ct := typeOfSQL(col.Type); jsonRows && it.agg && ct.kind == tDec && t != ct && c.job.join == nil && c.job.topN == nil {
			// A window's aggregate into a DECIMAL(p, s) column of JSON
			// rows is written cast, as Flink casts it on insert (a SUM
			// of 3.236 into a DECIMAL(10, 2) is 3.24); the window, a
			// having and backfill keep the value.
			aggs := c.job.Spec.Aggregate
			if i := slices.IndexFunc(aggs, func(a spec.Aggregate) bool { return a.Name == it.from }); i >= 0 && spec.CastsToDecimal(aggs[i]) {
				k.Decimal = &spec.ColumnDecimal{Precision: ct.p, Scale: ct.s}
			}
		}
		cols = append(cols, k)
	}
	switch conn := optionsOf(t)["connector"].Value; {
	case conn == "upsert-kafka",
		// A jdbc table's declared key must be the one weir upserts by:
		// Flink would upsert by it, and another would give other rows.
		conn == "jdbc" && t.PrimaryKey != nil && c.job.selectOp == nil:
		if err := c.upsertKey(t, cols); err != nil {
			return err
		}
		if conn == "upsert-kafka" && c.job.join == nil && c.job.topN == nil && c.job.cascade == nil {
			// Its messages are keyed by the primary key's columns, a
			// retraction the key's tombstone, as Flink's upsert-kafka
			// writes them.
			k.PrimaryKey = nil
			for _, id := range t.PrimaryKey.Columns {
				k.PrimaryKey = append(k.PrimaryKey, id.Name)
			}
		}
	}
	if declared {
		for i, col := range cols {
			if col.Expr != "" {
				return errAt(t.Pos, col.Name, "select the column's field itself, or write to a JSON table", "table %s: column %s would be computed, which a declared table's columns are not", name, col.Name)
			}
			if tc := writtenColumn(t, col.Name); tc != nil && tc.Type != nil {
				cols[i].Type = sqlparse.FormatType(tc.Type)
			}
			// Flink's JDBC sink names the columns unquoted, which
			// Postgres folds to lower case (userId is userid).
			cols[i].Name = strings.ToLower(col.Name)
		}
		if t.PrimaryKey != nil {
			k.PrimaryKey = nil
			for _, id := range t.PrimaryKey.Columns {
				k.PrimaryKey = append(k.PrimaryKey, strings.ToLower(id.Name))
			}
		}
	}
	if jsonRows {
		k.Columns = cols
		firing := slices.ContainsFunc(cols, func(c spec.Column) bool { return c.From == "firing" })
		s := c.job.Spec
		// A fired session is merged into another only by a late firing
		// (allowed lateness) or after an early one.
		refires := s.AllowedLateness != nil && *s.AllowedLateness > 0 || s.Trigger != nil
		// (A jdbc table deletes the row, an upsert-kafka topic gets
		// the key's tombstone.)
		rowsRetract := !slices.Contains([]string{"jdbc", "upsert-kafka"}, optionsOf(t)["connector"].Value)
		if s.Window.Type == "session" && !firing && refires && rowsRetract {
			c.job.Warnings = append(c.job.Warnings, fmt.Sprintf("%s: table %s: sessions merge, and the row of a session absorbed into another is retracted; "+
				"without a firing STRING METADATA column a retraction is a row whose aggregates are null", t.Pos, name))
		}
	}
	return nil
}

// writtenColumn is table t's column named name (nil: none).
func writtenColumn(t *sqlparse.CreateTable, name string) *sqlparse.Column {
	for _, c := range t.Columns {
		if c.Name.Name == name {
			return c
		}
	}
	return nil
}

// upsertKey checks an upsert-kafka table's PRIMARY KEY, which Flink
// requires, or a jdbc table's, when it declares one: weir keys a result's record by its key fields and window, so
// the primary key is the columns that hold them (cols says what each
// column holds), no more and no fewer. A query without a window has no
// key to upsert by. (A join's, a Top-N's or a cascade's rows are keyed by
// their own keys and window; their primary key is not checked.)
func (c *compiler) upsertKey(t *sqlparse.CreateTable, cols []spec.Column) error {
	name := tableName(t.Name)
	if c.job.selectOp != nil {
		return errAt(t.Pos, name, "write the rows to a 'kafka' table", "table %s: a query without a window appends rows, which have no key to upsert by", name)
	}
	want := append(slices.Clone(c.job.Spec.Key), spec.ColWindowStart, spec.ColWindowEnd)
	var names []string
	for _, cl := range cols {
		if slices.Contains(want, cl.From) {
			names = append(names, cl.Name)
		}
	}
	fix := "declare PRIMARY KEY (" + strings.Join(names, ", ") + ") NOT ENFORCED: the key columns and window_start, window_end"
	pk := t.PrimaryKey
	if pk == nil {
		return errAt(t.Pos, name, fix, "table %s: an upsert-kafka table needs a PRIMARY KEY, as in Flink", name)
	}
	if c.job.join != nil || c.job.topN != nil || c.job.cascade != nil {
		return nil
	}
	var got []string
	for _, id := range pk.Columns {
		i := slices.IndexFunc(cols, func(cl spec.Column) bool { return cl.Name == id.Name })
		if i < 0 || !slices.Contains(want, cols[i].From) {
			return errAt(id.Pos, id.Name, fix, "table %s: primary key column %s holds no key field or window bound of the query", name, id.Name)
		}
		got = append(got, cols[i].From)
	}
	for _, w := range want {
		if slices.Contains(got, w) {
			continue
		}
		// One window bound names a window as well as both do, except
		// that cumulating windows share their start.
		other := map[string]string{spec.ColWindowStart: spec.ColWindowEnd, spec.ColWindowEnd: spec.ColWindowStart}[w]
		if other != "" && slices.Contains(got, other) && (w == spec.ColWindowStart || c.job.Spec.Window.Type != "cumulate") {
			continue
		}
		return errAt(pk.Pos, "PRIMARY KEY", fix, "table %s: the primary key leaves out %s, which keys the query's results", name, w)
	}
	return nil
}

// reserved reports whether name is one of weir's own result columns or
// a key field (names compare without case, as SQL's do), which no
// aggregate may be named.
func (c *compiler) reserved(name string) bool {
	keys := c.job.Spec.Key
	if jn := c.job.join; jn != nil {
		// A joined row's key: the equalities under their left names, and
		// the sides' other keys (a join's own names, spec.JoinKey).
		keys = slices.Clone(keys)
		for _, o := range jn.op.On {
			keys = append(keys, o.Left)
		}
		keys = append(keys, jn.right.Key...)
	}
	for _, r := range append(append([]string{"job", spec.AccColumn}, spec.ResultColumns...), keys...) {
		if strings.EqualFold(r, name) {
			return true
		}
	}
	return false
}

// renameAggregate renames aggregate from to name: a join's column, in
// a join; the having's reference to it too. A name another aggregate
// (column) has already stays that one's, and false says from kept its
// name: the sink's columns are written in order, whatever the results
// call them (SUM(a) AS x, COUNT(*) AS y into a table of columns y, x).
func (c *compiler) renameAggregate(from, name string) bool {
	if c.job.join != nil {
		cols := c.job.join.op.Columns
		if slices.ContainsFunc(cols, func(c spec.JoinColumn) bool { return c.Name != from && strings.EqualFold(c.Name, name) }) {
			return false
		}
		for i := range cols {
			if cols[i].Name == from {
				cols[i].Name = name
			}
		}
		c.renameType(from, name)
		return true
	}
	if slices.ContainsFunc(c.job.Spec.Aggregate, func(a spec.Aggregate) bool { return a.Name != from && strings.EqualFold(a.Name, name) }) {
		return false
	}
	if h := c.job.Spec.Having; h != "" {
		if x, err := sqlparse.ParseExpr(h); err == nil {
			c.job.Spec.Having = sqlparse.FormatExpr(rewriteRefs(x, func(r *sqlparse.Ref) sqlparse.Expr {
				if len(r.Parts) == 1 && r.Parts[0].Name == from {
					return &sqlparse.Ref{Parts: []sqlparse.Ident{{Pos: r.Parts[0].Pos, Name: name}}}
				}
				return r
			}))
		}
	}
	for i := range c.job.Spec.Aggregate {
		if c.job.Spec.Aggregate[i].Name == from {
			c.job.Spec.Aggregate[i].Name = name
		}
	}
	c.renameType(from, name)
	return true
}

// renameType moves the type known of field from to name.
func (c *compiler) renameType(from, name string) {
	if t, ok := c.computedTypes[from]; ok {
		delete(c.computedTypes, from)
		c.computedTypes[name] = t
	}
}

// listedColumns maps the query's items onto the sink's written columns
// as INSERT INTO t (columns) lists them, as Flink does: each listed
// column takes the query's column of its place in the list, and a
// column the list leaves out is NULL. It returns the items in the
// table's column order.
func listedColumns(in *sqlparse.Insert, sel *sqlparse.Select, items []item, written []*sqlparse.Column, table string) ([]item, error) {
	if len(in.Columns) != len(items) {
		return nil, errAt(sel.Pos, "SELECT", "select one column per listed column, in the list's order",
			"the query has %d columns and INSERT INTO %s lists %d", len(items), table, len(in.Columns))
	}
	out := make([]item, len(written))
	listed := make([]bool, len(written))
	for i, id := range in.Columns {
		j := slices.IndexFunc(written, func(c *sqlparse.Column) bool { return c.Name.Name == id.Name })
		if j < 0 {
			var names []string
			for _, c := range written {
				names = append(names, c.Name.Name)
			}
			return nil, errAt(id.Pos, id.Name, suggest.Or(id.Name, names, "its columns: "+strings.Join(names, ", ")), "table %s has no column %s that an INSERT writes", table, id.Name)
		}
		if listed[j] {
			return nil, errAt(id.Pos, id.Name, "list each column once", "column %s is listed twice", id.Name)
		}
		listed[j], out[j] = true, items[i]
	}
	for j, c := range written {
		if !listed[j] {
			if c.NotNull {
				return nil, errAt(c.Pos, c.Name.Name, "list it, or declare it without NOT NULL", "table %s: column %s is NOT NULL, and INSERT INTO %s leaves it out (NULL)", table, c.Name.Name, table)
			}
			out[j] = item{pos: in.Pos, expr: "NULL"}
		}
	}
	return out, nil
}

// timeFormat is how column col of table (holding it) writes a time
// (spec.Column.Time): a TIMESTAMP as Flink's JSON does, a BIGINT as epoch
// milliseconds; "" for what is not a time.
func timeFormat(it item, col *sqlparse.Column, table string) (string, error) {
	switch it.from {
	case "window_start", "window_end", "window_time", "watermark":
	default:
		return "", nil
	}
	ty := col.Type
	switch {
	case ty == nil:
	case ty.Name == "BIGINT":
		return "ms", nil
	case ty.Name == "TIMESTAMP_LTZ" || ty.Name == "TIMESTAMP" && ty.LocalTZ:
		return "timestamp_ltz", nil
	case ty.Name == "TIMESTAMP":
		return "timestamp", nil
	}
	return "", errAt(col.Pos, col.Name.Name, "declare it TIMESTAMP(3), TIMESTAMP_LTZ(3) or BIGINT (epoch milliseconds)", "table %s: column %s holds %s, a time", table, col.Name.Name, it.from)
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
func (c *compiler) window(call *sqlparse.Call) (*relation, string, error) {
	fn := strings.ToUpper(tableName(call.Name))
	data, ok := arg(call, 0, "DATA")
	ta, isTable := data.(*sqlparse.TableArg)
	if !ok || !isTable {
		return nil, "", errAt(call.Pos, fn, "write "+fn+"(TABLE t, DESCRIPTOR(ts), ...)", "%s's first argument is TABLE and the table", fn)
	}
	t, err := c.relationOf(ta.Name, "")
	if err != nil {
		return nil, "", err
	}
	timeCol, ok := argDescriptor(call)
	if !ok {
		return nil, "", noDescriptor(call, fn, len(ta.PartitionBy) > 0)
	}
	c.descriptor = timeCol
	c.job.place(c.job.Spec, "window", call.Pos)
	if err := c.assign(call, fn, 0); err != nil {
		return nil, "", err
	}
	if fn == "SESSION" {
		for _, k := range ta.PartitionBy {
			if t.col(k.Name) == nil {
				return nil, "", t.unknown(k)
			}
			c.job.Spec.Key = append(c.job.Spec.Key, k.Name)
		}
	}
	if t.col(timeCol.Name) == nil {
		return nil, "", t.unknown(timeCol)
	}
	return t, timeCol.Name, nil
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
		if v, neg := strings.CutPrefix(strings.TrimSpace(iv.Value), "-"); neg && name == "OFFSET" {
			// An offset may be negative, as Flink's window functions
			// take it (INTERVAL '-8' HOUR: the days of UTC+8).
			pos := *iv
			pos.Value = v
			d, err := intervalDuration(&pos)
			if err == nil {
				*d = -*d
			}
			return d, err
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
		if err == nil && off == 0 && *w.Slide > 0 && *w.Size%*w.Slide != 0 {
			// Flink's window table function refuses it, so a port never
			// meets windows that leave gaps or overlap unevenly.
			return errAt(call.Pos, fn, fmt.Sprintf("make the size a multiple of the slide, such as %v", (*w.Size / *w.Slide + 1)**w.Slide),
				"HOP's size (%v) is not a whole number of slides (%v), which Flink's HOP requires", *w.Size, *w.Slide)
		}
	case "CUMULATE":
		if off < 0 {
			return errAt(call.Pos, fn, "write TABLE(CUMULATE(TABLE t, DESCRIPTOR(ts), step, size))", "CUMULATE is a window table function; Flink has no legacy group window of that name")
		}
		w.Type = "cumulate"
		if w.Step, err = interval(2, "STEP"); err == nil {
			w.Size, err = interval(3, "SIZE")
		}
		if _, ok := arg(call, 4+off, "OFFSET"); ok && err == nil {
			w.Offset, err = interval(4, "OFFSET")
		}
	case "SESSION":
		w.Type = "session"
		w.Gap, err = interval(2, "GAP")
	default:
		hint := suggest.Or(fn, []string{"TUMBLE", "HOP", "CUMULATE", "SESSION"}, "use TUMBLE, HOP, CUMULATE or SESSION")
		return errAt(call.Pos, fn, hint, "unknown window function %s", fn)
	}
	if err != nil {
		return err
	}
	return windowSizes(call, fn, off, w)
}

// windowSizes refuses, at the argument, the sizes of window function fn
// (call's, its arguments from off) that its windows cannot have: a
// CUMULATE size that is no whole number of steps, an offset not shorter
// than a tumbling or cumulating window's size or a sliding window's
// slide (the spec refuses them too, without the query's words).
func windowSizes(call *sqlparse.Call, fn string, off int, w *spec.Window) error {
	at := func(i int, name string) (sqlparse.Pos, string) {
		if e, ok := arg(call, i+off, name); ok {
			return sqlparse.ExprPos(e), sqlparse.FormatExpr(e)
		}
		return call.Pos, fn
	}
	if fn == "CUMULATE" && *w.Step > 0 {
		switch {
		case *w.Step > *w.Size:
			pos, text := at(2, "STEP")
			return errAt(pos, text, "make the step at most the size", "CUMULATE's step (%v) is longer than its size (%v)", *w.Step, *w.Size)
		case *w.Size%*w.Step != 0:
			pos, text := at(3, "SIZE")
			return errAt(pos, text, fmt.Sprintf("make the size a multiple of the step, such as %v", (*w.Size / *w.Step + 1)**w.Step),
				"CUMULATE's size (%v) is not a whole number of steps (%v), which Flink's CUMULATE requires", *w.Size, *w.Step)
		}
	}
	if w.Offset == nil {
		return nil
	}
	limit, of := w.Size, "size"
	if fn == "HOP" {
		limit, of = w.Slide, "slide"
	}
	i := 4 // HOP's and CUMULATE's offset; TUMBLE's is its third
	if fn == "TUMBLE" {
		i = 3
	}
	if o := *w.Offset; limit != nil && (o >= *limit || -o >= *limit) {
		pos, text := at(i, "OFFSET")
		return errAt(pos, text, fmt.Sprintf("give an offset shorter than the %s (%v), such as %v", of, *limit, o%*limit),
			"%s's offset (%v) is not shorter than its %s (%v)", fn, o, of, *limit)
	}
	return nil
}

// intervalDuration is an INTERVAL literal's length.
func intervalDuration(iv *sqlparse.Interval) (*spec.Duration, error) {
	if iv.To != "" {
		return nil, errAt(iv.Pos, "TO", "write the interval in one unit", "INTERVAL ... TO ... is not supported")
	}
	if v := strings.TrimSpace(iv.Value); strings.HasPrefix(v, "-") {
		return nil, errAt(iv.Pos, iv.Value, "write a positive length, such as INTERVAL '1' "+iv.Unit, "INTERVAL '%s' %s is negative", iv.Value, iv.Unit)
	}
	d, err := flinkDuration(strings.TrimSpace(iv.Value) + " " + strings.ToLower(iv.Unit))
	if err != nil || iv.Unit == "MONTH" || iv.Unit == "YEAR" {
		return nil, errAt(iv.Pos, iv.Value, "use SECOND, MINUTE, HOUR or DAY", "INTERVAL '%s' %s is not a fixed length of time", iv.Value, iv.Unit)
	}
	return &d, nil
}

// where compiles the query's WHERE over relation rel, and the view's
// filter field (filter, "" for none): the spec's where.
func (c *compiler) where(x sqlparse.Expr, rel *relation, filter string) error {
	var conds []string
	if filter != "" {
		conds = append(conds, filter)
	}
	if x != nil {
		c.job.place(c.job.Spec, "where", sqlparse.ExprPos(x))
		x, err := c.fields(x, rel)
		if err != nil {
			return err
		}
		if err := c.condition(x, rel.table, "WHERE"); err != nil {
			return err
		}
		if _, err := expr.Compile(x, func(sqlparse.Ident) (int, *sqlparse.Error) { return 0, nil }); err != nil {
			return err
		}
		conds = append(conds, sqlparse.FormatExpr(flinkCasts(x, c.fieldType(rel.table))))
	}
	if len(conds) == 2 {
		conds = []string{conds[0] + " AND (" + conds[1] + ")"}
	}
	if len(conds) == 1 {
		c.job.Spec.Where = conds[0]
	}
	return nil
}

// boundsWhere returns sel (itself when nothing moves) with the
// conditions of its WHERE that read only the window's bounds
// (window_start, window_end, window_time) moved to its HAVING: they hold
// for every row of a window or for none, so filtering the rows is
// filtering the windows, as Flink's WHERE after a window table function
// does.
func boundsWhere(sel *sqlparse.Select) *sqlparse.Select {
	if sel.Where == nil {
		return sel
	}
	var rows, bounds []sqlparse.Expr
	for _, x := range conjuncts(sel.Where) {
		if onlyBounds(x) {
			bounds = append(bounds, x)
		} else {
			rows = append(rows, x)
		}
	}
	if len(bounds) == 0 {
		return sel
	}
	out := *sel
	out.Where = conjunction(rows)
	if sel.Having != nil {
		bounds = append([]sqlparse.Expr{sel.Having}, bounds...)
	}
	out.Having = conjunction(bounds)
	return &out
}

// conjunction is the AND of xs (nil for none).
func conjunction(xs []sqlparse.Expr) sqlparse.Expr {
	var out sqlparse.Expr
	for _, x := range xs {
		if out == nil {
			out = x
		} else {
			out = andExpr(out, x)
		}
	}
	return out
}

// onlyBounds reports whether x reads a window bound and no other column
// (nor an aggregate, which a WHERE cannot hold).
func onlyBounds(x sqlparse.Expr) bool {
	bound, other := false, false
	mapExpr(x, func(e sqlparse.Expr) sqlparse.Expr {
		switch e := e.(type) {
		case *sqlparse.Ref:
			switch e.Parts[len(e.Parts)-1].Name {
			case "window_start", "window_end", "window_time":
				bound = true
			default:
				other = true
			}
		case *sqlparse.Call:
			if _, agg := aggregates[strings.ToUpper(tableName(e.Name))]; agg || isProctime(e) {
				other = true
			}
		}
		return e
	})
	return bound && !other
}

// condition refuses x, clause's expression over the record fields of
// table t (c.fields; nil: over results, typed by computedTypes), when it
// is no condition: a number, a string or a time, as
// Flink's planner refuses a WHERE or FILTER that is not a BOOLEAN (weir
// would read it as never true).
func (c *compiler) condition(x sqlparse.Expr, t *sqlparse.CreateTable, clause string) error {
	if err := c.timeCompares(x, t); err != nil {
		return err
	}
	var what string
	switch typeOf(x, c.fieldType(t)).kind {
	case tInt, tDec, tFloat:
		what = "a number"
	case tStr:
		what = "a string"
	case tTimeLTZ, tTime, tDate:
		what = "a time"
	default:
		return nil
	}
	text := sqlparse.FormatExpr(x)
	return errAt(sqlparse.ExprPos(x), text, "write a comparison, such as "+text+" > 0, or "+text+" IS NOT NULL", "%s takes a condition (a BOOLEAN), and %s is %s", clause, text, what)
}

// fields rewrites the column references of x, an expression of the
// query over rel, as the record fields that hold them: a column named
// alone (rel's name or alias stripped). A column that is no field (a
// Kafka record time, a time attribute read as the timestamp) is
// refused.
func (c *compiler) fields(x sqlparse.Expr, rel *relation) (sqlparse.Expr, error) {
	var bad *sqlparse.Error
	out := rewriteRefs(x, func(r *sqlparse.Ref) sqlparse.Expr {
		col, id, rest, err := rel.path(r)
		switch {
		case err != nil:
			bad = cmp.Or(bad, err)
		case !c.isField(rel, col) && col.name == c.timeAttr && len(rest) == 0 && rel.results == nil && col.expr == nil && timeAttrExpr(rel, col) != nil:
			// A computed time attribute (TO_TIMESTAMP_LTZ(ts, 3)),
			// which the decoder reads as the event time: a computed
			// field of its name holds it for expressions.
			if !slices.ContainsFunc(c.job.Spec.Computed, func(f spec.ComputedField) bool { return f.Name == col.name }) {
				x, err := c.fields(timeAttrExpr(rel, col), rel)
				if err != nil {
					bad = cmp.Or(bad, err.(*sqlparse.Error))
					return r
				}
				c.addComputed(rel.table, col.name, x)
			}
			return &sqlparse.Ref{Parts: []sqlparse.Ident{{Pos: id.Pos, Name: col.name}}}
		case !c.isField(rel, col):
			bad = cmp.Or(bad, errAt(id.Pos, id.Name, "filter and compute on the record's own fields and computed columns", "%s is not a field of the record (a metadata column, or the time attribute read as the event time)", id.Name))
		default:
			return &sqlparse.Ref{Parts: append([]sqlparse.Ident{{Pos: id.Pos, Name: col.name}}, rest...)}
		}
		return r
	})
	if bad != nil {
		return nil, bad
	}
	return c.timeOperands(c.zoned(c.literalTimes(out, rel.table), rel.table), rel.table), nil
}

// isField reports whether rel's column col is a field of the records:
// not a metadata column, nor the time attribute read as the timestamp
// (c.timeAttr), which no computed field holds.
func (c *compiler) isField(rel *relation, col *relCol) bool {
	if rel.results != nil {
		return true
	}
	if col.expr != nil {
		return !isProctime(col.expr)
	}
	bc := column(rel.table, col.name)
	return bc != nil && !bc.Metadata && (col.name != c.timeAttr || bc.Computed == nil) && !isProctime(bc.Computed)
}

// insertable refuses the query's column i (1-based), of type t, into
// sink column col of table table where Flink's INSERT refuses it: a
// DOUBLE or a decimal with a fraction into an integer column, a number
// into a string column, a string into a number or BOOLEAN column (weir
// would write it as it is, Flink casts nothing implicitly there).
func insertable(t numType, col *sqlparse.Column, table string, i int) error {
	sink := typeOfSQL(col.Type)
	var what string
	switch {
	case t.kind == tStr:
		// A string into a number or BOOLEAN column: Flink's INSERT
		// casts nothing implicitly (weir would write the string).
		if sink.kind == tInt || sink.kind == tDec || sink.kind == tFloat || col.Type != nil && strings.EqualFold(col.Type.Name, "BOOLEAN") {
			return errAt(col.Pos, col.Name.Name, "CAST the query's column to "+sqlparse.FormatType(col.Type)+", as Flink asks",
				"table %s: column %s is %s and the query's column %d is a STRING, which Flink's INSERT refuses", table, col.Name.Name, withArticle(sqlparse.FormatType(col.Type)), i)
		}
		return nil
	case t.kind == tFloat:
		what = "a DOUBLE"
	case t.kind == tDec:
		what = fmt.Sprintf("a DECIMAL(%d, %d)", t.p, t.s)
	case t.kind == tInt:
		what = "an integer"
	default:
		return nil
	}
	if sink.kind == tInt && (t.kind == tFloat || t.kind == tDec && t.s > 0) || isString(col.Type) {
		return errAt(col.Pos, col.Name.Name, "CAST the query's column to "+sqlparse.FormatType(col.Type)+", as Flink asks",
			"table %s: column %s is %s and the query's column %d is %s, which Flink's INSERT refuses", table, col.Name.Name, withArticle(sqlparse.FormatType(col.Type)), i, what)
	}
	return nil
}

// itemType is the type of a query's column it, when known: an
// expression's, a computed field's, or a key's as the source table
// declares it.
func (c *compiler) itemType(it item) (numType, bool) {
	if it.typ.kind != tOther {
		return it.typ, true
	}
	if it.expr != "" {
		if e, err := sqlparse.ParseExpr(it.expr); err == nil {
			return typeOf(e, c.fieldType(nil)), true
		}
		return numType{}, false
	}
	if t, ok := c.computedTypes[it.from]; ok {
		return t, true
	}
	if it.from != "" && (slices.Contains(c.job.Spec.Key, it.from) || c.job.selectOp != nil) {
		// A key column, or a query without a window's field: the source
		// table's, as declared.
		if dt := declaredType(c.srcTable, fieldParts(it.from)); dt != nil {
			return typeOfSQL(dt), true
		}
	}
	return numType{}, false
}

// rowColumn is the column of a ROW type that item it, written into
// column col of sink name, is cast to (sinkCast): col when it declares a
// ROW; for a printed row (a bare SELECT) the source table's declared
// ROW type of the field or nested field it selects; nil otherwise.
func (c *compiler) rowColumn(it item, col *sqlparse.Column, name string) *sqlparse.Column {
	if isRowType(col.Type) {
		return col
	}
	if col.Type != nil || name != stdoutName {
		return nil
	}
	var parts []sqlparse.Ident
	if it.expr == "" {
		parts = fieldParts(it.from)
	} else if e, err := sqlparse.ParseExpr(it.expr); err == nil {
		if ref, ok := e.(*sqlparse.Ref); ok {
			parts = ref.Parts
		}
	}
	if len(parts) == 0 {
		return nil
	}
	if t := declaredType(c.srcTable, parts); isRowType(t) {
		return &sqlparse.Column{Pos: col.Pos, Name: col.Name, Type: t}
	}
	return nil
}

// fieldParts is a record field's dotted name (an item's from) as the
// parts of a reference.
func fieldParts(from string) []sqlparse.Ident {
	var parts []sqlparse.Ident
	for _, n := range strings.Split(from, ".") {
		parts = append(parts, sqlparse.Ident{Name: n})
	}
	return parts
}

// withArticle is a type's name after "a" or "an" (an INT, a BIGINT).
func withArticle(name string) string {
	if name != "" && strings.ContainsRune("AEIOU", rune(name[0])) {
		return "an " + name
	}
	return "a " + name
}

// floatFormat is how a sink column writes its numbers (spec.Column.Float):
// a DOUBLE or a FLOAT as Flink's JSON format writes it; a column of no
// declared type (a bare SELECT's) as its value's type, t (2.0 for a
// DOUBLE 2, as Flink's SQL client shows it).
func floatFormat(col *sqlparse.Column, t numType) string {
	if col.Type == nil {
		if t.kind == tFloat {
			return "double"
		}
		return ""
	}
	switch col.Type.Name {
	case "DOUBLE":
		return "double"
	case "FLOAT", "REAL":
		return "float"
	}
	return ""
}

// rewriteRefs copies x with each column reference replaced by f's.
func rewriteRefs(x sqlparse.Expr, f func(*sqlparse.Ref) sqlparse.Expr) sqlparse.Expr {
	return mapExpr(x, func(e sqlparse.Expr) sqlparse.Expr {
		if r, ok := e.(*sqlparse.Ref); ok {
			return f(r)
		}
		return e
	})
}

// timeCompares refuses in x (an expression over the fields of table t;
// nil: over results, typed by computedTypes) what Flink's planner
// refuses of times and numbers, which weir would read as epoch
// milliseconds: a comparison of a number with a time (a BIGINT of epoch
// seconds with a TIMESTAMP literal), a time plus or minus a number (an
// INTERVAL moves a time), a number cast to a TIMESTAMP or DATE
// (TO_TIMESTAMP_LTZ reads one), and a TIMESTAMP(3) column cast to a
// number (its text is no number).
func (c *compiler) timeCompares(x sqlparse.Expr, t *sqlparse.CreateTable) error {
	var bad error
	field := c.fieldType(t)
	// timeOf names what is a time ("" for other operands).
	timeOf := func(e sqlparse.Expr) string {
		switch e := e.(type) {
		case *sqlparse.TypedLit:
			return "a " + e.Type + " literal"
		case *sqlparse.Ref:
			if dt := declaredType(t, e.Parts); dt != nil && timeKind(dt) != tOther {
				return "a " + strings.ToUpper(dt.Name)
			}
		}
		switch typeOf(e, field).kind {
		case tTime:
			return "a TIMESTAMP"
		case tTimeLTZ:
			return "a TIMESTAMP_LTZ"
		case tDate:
			return "a DATE"
		}
		return ""
	}
	number := func(e sqlparse.Expr) bool {
		switch typeOf(e, field).kind {
		case tInt, tDec, tFloat:
			return true
		}
		return false
	}
	refuse := func(e sqlparse.Expr, hint, format string, args ...any) {
		text := c.shown(sqlparse.FormatExpr(e))
		for i, a := range args {
			if s, ok := a.(string); ok {
				args[i] = c.shown(s)
			}
		}
		bad = cmp.Or(bad, error(errAt(sqlparse.ExprPos(e), text, hint, format, args...)))
	}
	check := func(xs ...sqlparse.Expr) {
		for _, e := range xs {
			if _, ok := e.(*sqlparse.Interval); ok {
				refuse(e, "move a time by it: window_end - INTERVAL '1' SECOND", "an INTERVAL is compared with nothing in weir's expressions")
				return
			}
		}
		var what string
		for _, e := range xs {
			what = cmp.Or(what, timeOf(e))
		}
		if what == "" {
			return
		}
		for _, e := range xs {
			if number(e) {
				refuse(e, "compare times: TO_TIMESTAMP_LTZ(x, 3) of a number of epoch milliseconds (0: seconds), TIMESTAMP '2026-01-01 00:00:00' for a literal",
					"%s is a number, which is not compared with %s (as in Flink)", sqlparse.FormatExpr(e), what)
			}
		}
	}
	mapExpr(x, func(e sqlparse.Expr) sqlparse.Expr {
		switch e := e.(type) {
		case *sqlparse.Binary:
			switch e.Op {
			case "=", "<>", "<", "<=", ">", ">=", "IS DISTINCT FROM", "IS NOT DISTINCT FROM":
				check(e.X, e.Y)
			case "||":
				for _, o := range []sqlparse.Expr{e.X, e.Y} {
					if w := timeOf(o); w != "" {
						refuse(o, "CAST("+c.shown(sqlparse.FormatExpr(o))+" AS STRING) || ... for its text", "%s is %s, which || does not take (Flink refuses it too)", c.shown(sqlparse.FormatExpr(o)), w)
					}
				}
			case "+", "-", "*", "/", "%":
				ivX, ivY := sqlparse.IsInterval(e.X), sqlparse.IsInterval(e.Y)
				switch {
				case ivX || ivY:
				case timeOf(e.X) != "" && timeOf(e.Y) != "":
					refuse(e, "count the units between them with TIMESTAMPDIFF(SECOND, a, b), compare the times, or move one by an INTERVAL", "%s computes with two times, which Flink refuses", sqlparse.FormatExpr(e))
				case timeOf(e.X) != "" && number(e.Y), number(e.X) && timeOf(e.Y) != "":
					refuse(e, "move a time by an INTERVAL, such as window_end - INTERVAL '1' SECOND", "%s mixes a time and a number, which Flink refuses (weir would read the time as epoch milliseconds)", sqlparse.FormatExpr(e))
				}
			}
		case *sqlparse.Between:
			check(e.X, e.Lo, e.Hi)
		case *sqlparse.In:
			check(append([]sqlparse.Expr{e.X}, e.List...)...)
		case *sqlparse.Call, *sqlparse.Case:
			if call, ok := e.(*sqlparse.Call); ok && strings.EqualFold(tableName(call.Name), "TIMESTAMPDIFF") && len(call.Args) == 3 {
				ka, kb := typeOf(call.Args[1].Value, field).kind, typeOf(call.Args[2].Value, field).kind
				if wall := func(k numKind) bool { return k == tTime || k == tDate }; ka == tTimeLTZ && wall(kb) || kb == tTimeLTZ && wall(ka) {
					refuse(e, "CAST one of them first: CAST(ts AS TIMESTAMP(3)) is a TIMESTAMP_LTZ's wall time", "%s takes a TIMESTAMP_LTZ and a TIMESTAMP or DATE, which Flink refuses (it counts between times of one type)", sqlparse.FormatExpr(e))
				}
			}
			if c.zone != 0 && mixesZones(e, field) {
				refuse(e, "CAST the TIMESTAMP_LTZ to TIMESTAMP(3) (its wall time in the zone), or the TIMESTAMP to TIMESTAMP_LTZ(3), first",
					"%s mixes a TIMESTAMP_LTZ with a TIMESTAMP or DATE, whose common type table.local-time-zone %s would decide", sqlparse.FormatExpr(e), c.zoneName)
			}
		case *sqlparse.Cast:
			switch to := typeOfSQL(e.Type).kind; {
			case timeKind(e.Type) != tOther && number(e.X):
				refuse(e, "TO_TIMESTAMP_LTZ(x, 3) reads epoch milliseconds (0: seconds)", "CAST of a number to %s is refused, as Flink refuses it", sqlparse.FormatType(e.Type))
			case (to == tInt || to == tDec || to == tFloat) && timeOf(e.X) != "":
				refuse(e, "compare or format the time (DATE_FORMAT, EXTRACT); a TO_TIMESTAMP_LTZ column's number is its source field", "CAST of %s to %s is refused, as Flink refuses it", timeOf(e.X), sqlparse.FormatType(e.Type))
			}
		}
		return e
	})
	return bad
}

// timeAttrExpr is the expression of rel's computed column col (nil for
// another column).
func timeAttrExpr(rel *relation, col *relCol) sqlparse.Expr {
	bc := column(rel.table, col.name)
	if bc == nil || bc.Metadata || isProctime(bc.Computed) {
		return nil
	}
	return bc.Computed
}

// timeOperands reads, in x (over the fields of table t), each time that
// a comparison (or NULLIF) compares with another time as epoch
// milliseconds (CAST AS TIMESTAMP(3)): a TIMESTAMP or DATE column's text
// compared with a time computed as milliseconds (ts <= l, t2 <= ts +
// INTERVAL '1' SECOND, CAST(ts AS DATE) = d) would compare a string with
// a number, which is never true. A comparison with a number is left to
// timeCompares to refuse.
func (c *compiler) timeOperands(x sqlparse.Expr, t *sqlparse.CreateTable) sqlparse.Expr {
	field := c.fieldType(t)
	wrap := func(xs []sqlparse.Expr) []sqlparse.Expr {
		times, numbers := 0, 0
		for _, e := range xs {
			switch k := typeOf(e, field).kind; {
			case typeOf(e, field).isTime():
				times++
			case k == tInt || k == tDec || k == tFloat:
				numbers++
			}
		}
		if times < 2 || numbers > 0 {
			return xs
		}
		// As epoch milliseconds: of DATEs alone, as DATEs (GREATEST of
		// two DATEs is one), else as TIMESTAMP(3)s.
		to := &sqlparse.Type{Name: "DATE"}
		for _, e := range xs {
			if k := typeOf(e, field).kind; k == tTime || k == tTimeLTZ {
				to = &sqlparse.Type{Name: "TIMESTAMP", Params: []int{3}}
			}
		}
		out := slices.Clone(xs)
		for i, e := range out {
			// A literal and a window bound (of results) are epoch
			// milliseconds already.
			if r, ok := e.(*sqlparse.Ref); ok && len(r.Parts) == 1 && isBound(r.Parts[0].Name) && t == nil {
				continue
			}
			if _, lit := e.(*sqlparse.TypedLit); !lit && typeOf(e, field).isTime() {
				ty := *to
				ty.Pos = sqlparse.ExprPos(e)
				out[i] = &sqlparse.Cast{Pos: sqlparse.ExprPos(e), X: e, Type: &ty}
			}
		}
		return out
	}
	sub := func(e sqlparse.Expr) sqlparse.Expr { return c.timeOperands(e, t) }
	return mapExpr(x, func(e sqlparse.Expr) sqlparse.Expr {
		if y, ok := comparison(e, sub, wrap); ok {
			return y
		}
		switch e := e.(type) {
		case *sqlparse.Call:
			if fn := strings.ToUpper(tableName(e.Name)); (fn == "GREATEST" || fn == "LEAST") && len(e.Args) > 1 {
				var xs []sqlparse.Expr
				for _, a := range e.Args {
					xs = append(xs, a.Value)
				}
				if ys := wrap(xs); ys[0] != xs[0] || !slices.Equal(xs, ys) {
					out := &sqlparse.Call{Pos: e.Pos, Name: e.Name}
					for _, y := range ys {
						out.Args = append(out.Args, sqlparse.Arg{Value: c.timeOperands(y, t)})
					}
					return out
				}
			}
			if strings.EqualFold(tableName(e.Name), "NULLIF") && len(e.Args) == 2 {
				xs := wrap([]sqlparse.Expr{e.Args[0].Value, e.Args[1].Value})
				if xs[0] != e.Args[0].Value {
					// NULLIF compares as times, and gives its first
					// argument as it was (its text, or milliseconds).
					cmp := &sqlparse.Binary{Pos: e.Pos, Op: "=", X: xs[0], Y: xs[1]}
					return &sqlparse.Case{Pos: e.Pos, Whens: []sqlparse.When{{Cond: cmp, Result: &sqlparse.Lit{Pos: e.Pos, Kind: "null"}}}, Else: c.timeOperands(e.Args[0].Value, t)}
				}
			}
		}
		return e
	})
}

// hiddenName matches the names the compiler gives what no column shows.
var hiddenName = regexp.MustCompile(`\b_weir_(agg|x)_\d+\b`)

// shown is text with each of the compiler's hidden names as the query
// wrote it (shownAs).
func (c *compiler) shown(text string) string {
	return hiddenName.ReplaceAllStringFunc(text, func(n string) string { return cmp.Or(c.shownAs[n], n) })
}

// showAs notes that hidden name stands for the query's x.
func (c *compiler) showAs(name string, x sqlparse.Expr) {
	if c.shownAs == nil {
		c.shownAs = map[string]string{}
	}
	c.shownAs[name] = sqlparse.FormatExpr(x)
}

// sessionKeys refuses a SESSION table function's aggregation grouped by
// other columns than its PARTITION BY (besides the window), as Flink
// refuses it: weir's sessions would be the group's, not the table
// function's (one session of all records without a PARTITION BY).
func (c *compiler) sessionKeys(call *sqlparse.Call, sel *sqlparse.Select) error {
	if !strings.EqualFold(tableName(call.Name), "SESSION") {
		return nil
	}
	var parts []string
	if data, ok := arg(call, 0, "DATA"); ok {
		if ta, ok := data.(*sqlparse.TableArg); ok {
			for _, k := range ta.PartitionBy {
				parts = append(parts, k.Name)
			}
		}
	}
	keys := slices.Compact(slices.Sorted(slices.Values(c.job.Spec.Key)))
	if slices.Equal(keys, slices.Compact(slices.Sorted(slices.Values(parts)))) {
		return nil
	}
	want := "window_start, window_end"
	if len(parts) > 0 {
		want += ", " + strings.Join(parts, ", ")
	}
	return errAt(sel.Pos, "GROUP BY", "group by "+want+", or partition the sessions by the grouped columns: SESSION(TABLE t PARTITION BY k, DESCRIPTOR(ts), ...)",
		"a SESSION window's aggregation groups by window_start, window_end and the function's PARTITION BY columns alone, as Flink requires (here %s)", strings.Join(keys, ", "))
}
