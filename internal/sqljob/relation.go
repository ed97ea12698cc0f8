package sqljob

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/weirstream/weir/internal/expr"
	"github.com/weirstream/weir/internal/sqlparse"
	"github.com/weirstream/weir/internal/suggest"
	"github.com/weirstream/weir/spec"
)

// relation is what a query reads: a table, or a view over one (a
// projection and a filter of its rows), with the alias the query gives
// it. Its columns are record fields: a table's physical columns, and its
// computed columns and a view's columns as computed fields (spec.Spec's
// Computed), which compile adds in order.
type relation struct {
	name  string
	alias string
	table *sqlparse.CreateTable
	// cols are the relation's columns by name: nil expr for a column
	// the record holds under that name, else its expression over the
	// table's columns.
	cols  []relCol
	where sqlparse.Expr // a view's filter, over the table's columns
	view  bool
	// results, for a view that is a windowed aggregation (a cascade's,
	// W12), maps each of its columns to the column of the results that
	// holds it: a key field, a window bound or an aggregate.
	results map[string]string
}

type relCol struct {
	name string
	pos  sqlparse.Pos
	expr sqlparse.Expr
}

func (r *relation) col(name string) *relCol {
	for i := range r.cols {
		if r.cols[i].name == name {
			return &r.cols[i]
		}
	}
	return nil
}

func (r *relation) names() []string {
	var out []string
	for _, c := range r.cols {
		out = append(out, c.name)
	}
	return out
}

// unknown is the error of a column r does not have, with a did-you-mean.
func (r *relation) unknown(id sqlparse.Ident) *sqlparse.Error {
	hint := suggest.Or(id.Name, r.names(), "its columns: "+strings.Join(r.names(), ", "))
	what := "table"
	if r.view {
		what = "view"
	}
	switch strings.ToUpper(id.Name) {
	case "CURRENT_DATE", "CURRENT_TIME", "CURRENT_TIMESTAMP", "LOCALTIME", "LOCALTIMESTAMP":
		// Flink's functions of the wall clock, written without ().
		return errAt(id.Pos, id.Name, "compare with a TIMESTAMP or DATE literal, or with the time attribute; a table's PROCTIME() column gives processing time",
			"%s is not supported in weir's expressions (a job's results would depend on when they were computed)", strings.ToUpper(id.Name))
	}
	if isBound(id.Name) {
		// Flink's window table functions add the bounds to each row;
		// weir gives them to the results, so what reads a record
		// before it is windowed (WHERE, FILTER) has none.
		return errAt(id.Pos, id.Name, "compare the time attribute instead, or filter the window's results with HAVING",
			"%s is the window's, not a column of %s %s: weir reads a WHERE or a FILTER (WHERE ...) from each record before it is windowed", id.Name, what, r.name)
	}
	return errAt(id.Pos, id.Name, hint, "%s %s has no column %s", what, r.name, id.Name)
}

// ref resolves a column reference of the query: the relation's column,
// named alone or after the relation's name or alias.
func (r *relation) ref(x *sqlparse.Ref) (*relCol, sqlparse.Ident, *sqlparse.Error) {
	col, id, rest, err := r.path(x)
	if err == nil && len(rest) > 0 {
		return nil, id, errAt(id.Pos, sqlparse.FormatExpr(x), "select nested fields in a view (CREATE VIEW v AS SELECT "+sqlparse.FormatExpr(x)+" AS name FROM ...)",
			"a nested field as a key or column of a windowed query is not compiled yet")
	}
	return col, id, err
}

// path resolves a reference that may reach into a column's nested
// fields (rest).
func (r *relation) path(x *sqlparse.Ref) (*relCol, sqlparse.Ident, []sqlparse.Ident, *sqlparse.Error) {
	parts := x.Parts
	if len(parts) > 1 && r.col(parts[0].Name) == nil && (parts[0].Name == r.alias && r.alias != "" || parts[0].Name == r.name) {
		parts = parts[1:]
	}
	c := r.col(parts[0].Name)
	if c == nil {
		return nil, parts[0], nil, r.unknown(parts[0])
	}
	if !r.view && r.table != nil {
		if err := nestedField(r.table, parts[0], parts[1:]); err != nil {
			return nil, parts[0], nil, err
		}
	}
	return c, parts[0], parts[1:], nil
}

// nestedField checks a reference to column col of table t and, through
// its ROW type, to its nested fields rest: a field that the ROW does not
// declare is an error with a did-you-mean (Flink refuses it; read, it
// would be NULL for every record). A column of another type is not
// checked.
func nestedField(t *sqlparse.CreateTable, col sqlparse.Ident, rest []sqlparse.Ident) *sqlparse.Error {
	c := column(t, col.Name)
	if c == nil || c.Computed != nil || c.Metadata {
		return nil
	}
	typ, path := c.Type, col.Name
	for _, p := range rest {
		if typ == nil || typ.Name != "ROW" {
			return nil
		}
		next := rowField(typ, p.Name)
		if next == nil {
			names := make([]string, 0, len(typ.Fields))
			for _, f := range typ.Fields {
				names = append(names, f.Name.Name)
			}
			hint := suggest.Or(p.Name, names, "its fields: "+strings.Join(names, ", "))
			return errAt(p.Pos, p.Name, hint, "%s is a ROW without a field %s", path, p.Name)
		}
		typ, path = next, path+"."+p.Name
	}
	return nil
}

// relationOf resolves a query's FROM name: a table or a view.
func (c *compiler) relationOf(n sqlparse.Name, alias string) (*relation, error) {
	name := tableName(n)
	if v, ok := c.views[name]; ok {
		if isWindowed(v) {
			return c.cascadeRelation(v, alias)
		}
		r, err := c.viewRelation(v)
		if err != nil {
			return nil, err
		}
		r.alias = alias
		return r, nil
	}
	t, ok := c.tables[name]
	if !ok {
		known := slices.Sorted(maps.Keys(c.tables))
		known = append(known, slices.Sorted(maps.Keys(c.views))...)
		hint := suggest.Or(name, known, "create it with CREATE TABLE "+name+" (...) WITH (...)")
		return nil, errAt(n.Pos(), name, hint, "unknown table %s", name)
	}
	r := &relation{name: name, alias: alias, table: t}
	for _, col := range t.Columns {
		r.cols = append(r.cols, relCol{name: col.Name.Name, pos: col.Pos})
	}
	return r, nil
}

// isWindowed reports whether view v is an aggregation (a windowed one:
// weir compiles no other).
func isWindowed(v *sqlparse.CreateView) bool {
	return len(v.Query.Selects) == 1 && (v.Query.Selects[0].GroupBy != nil || legacyWindow(v.Query.Selects[0]) != nil)
}

// viewRelation compiles CREATE VIEW v AS SELECT columns FROM t [WHERE
// ...]: a projection of one table's columns and nested fields, named by
// their aliases (or their last name, as Flink names them).
func (c *compiler) viewRelation(v *sqlparse.CreateView) (*relation, error) {
	name := tableName(v.Name)
	q := v.Query
	if len(q.Selects) != 1 || q.With != nil || q.OrderBy != nil || q.Limit != nil {
		return nil, errAt(q.Pos, name, "a view is one SELECT of columns FROM a table [WHERE ...]", "view %s: this query is not compiled yet", name)
	}
	sel := q.Selects[0]
	from, ok := sel.From.(*sqlparse.TableRef)
	if !ok || sel.GroupBy != nil || sel.Having != nil || sel.Distinct {
		return nil, errAt(sel.Pos, name, "a view is one SELECT of columns FROM a table [WHERE ...]", "view %s: this query is not compiled yet", name)
	}
	base, err := c.viewBase(v, from)
	if err != nil {
		return nil, err
	}
	where := sel.Where
	if where != nil && base.view {
		where = throughView(stripAlias(where, base), base)
	}
	if base.where != nil {
		where = andExpr(base.where, where)
	}
	r := &relation{name: name, table: base.table, where: where, view: true}
	for i, it := range sel.Items {
		if it.Star {
			r.cols = append(r.cols, base.cols...)
			continue
		}
		col := relCol{name: columnName(it, i), pos: it.Pos, expr: throughView(stripAlias(it.Expr, base), base)}
		if len(v.Columns) > i {
			col.name = v.Columns[i].Name
		}
		if ref, ok := col.expr.(*sqlparse.Ref); ok && len(ref.Parts) == 1 && ref.Parts[0].Name == col.name {
			col.expr = nil // the table's own column
		}
		r.cols = append(r.cols, col)
	}
	return r, nil
}

// viewBase is what view v's query reads (from): a table's columns as
// they are, or another view's relation (whose columns' expressions the
// view's own expressions read through, throughView).
func (c *compiler) viewBase(v *sqlparse.CreateView, from *sqlparse.TableRef) (*relation, error) {
	name := tableName(from.Name)
	if t, ok := c.tables[name]; ok {
		// A hint in the view's FROM is of the scan of its table, as in
		// a query's FROM.
		t, err := tableHint(t, from.Hint)
		if err != nil {
			return nil, err
		}
		base := &relation{name: tableName(t.Name), alias: from.Alias.Name, table: t}
		for _, col := range t.Columns {
			base.cols = append(base.cols, relCol{name: col.Name.Name, pos: col.Pos})
		}
		return base, nil
	}
	inner, ok := c.views[name]
	if !ok {
		_, err := c.lookup(from.Name)
		return nil, err
	}
	if c.viewDepth++; c.viewDepth > len(c.views) {
		return nil, errAt(v.Pos, tableName(v.Name), "let the views read tables, or views that do", "view %s reads itself through other views", tableName(v.Name))
	}
	defer func() { c.viewDepth-- }()
	if iq := inner.Query; len(iq.Selects) == 1 && iq.Selects[0].GroupBy != nil {
		return nil, errAt(from.Name.Pos(), name, "window the windowed view's rows with a window table function", "view %s reads windowed view %s; a view of a windowed view is not compiled yet", tableName(v.Name), name)
	}
	base, err := c.viewRelation(inner)
	if err != nil {
		return nil, err
	}
	if base.table, err = tableHint(base.table, from.Hint); err != nil {
		return nil, err
	}
	base.alias = from.Alias.Name
	return base, nil
}

// throughView rewrites x, an expression over view base's columns, over
// the table base reads: a column that base computes is its expression.
func throughView(x sqlparse.Expr, base *relation) sqlparse.Expr {
	if !base.view {
		return x
	}
	return rewriteRefs(x, func(r *sqlparse.Ref) sqlparse.Expr {
		col := base.col(r.Parts[0].Name)
		if col == nil || col.expr == nil {
			return r
		}
		if len(r.Parts) == 1 {
			return col.expr
		}
		if ref, ok := col.expr.(*sqlparse.Ref); ok {
			return &sqlparse.Ref{Parts: append(slices.Clone(ref.Parts), r.Parts[1:]...)}
		}
		return r
	})
}

// readLater reports whether an expression of cols reads column name.
func readLater(cols []relCol, name string) bool {
	for _, col := range cols {
		found := false
		if col.expr != nil {
			rewriteRefs(col.expr, func(r *sqlparse.Ref) sqlparse.Expr {
				found = found || r.Parts[0].Name == name
				return r
			})
		}
		if found {
			return true
		}
	}
	return false
}

// columnName is the name of a query's column it, the i-th: its alias,
// else the last name of the column it selects, else EXPR$i, as Flink
// names them.
func columnName(it *sqlparse.SelectItem, i int) string {
	if it.Alias.Name != "" {
		return it.Alias.Name
	}
	if ref, ok := it.Expr.(*sqlparse.Ref); ok {
		return ref.Parts[len(ref.Parts)-1].Name
	}
	return fmt.Sprintf("EXPR$%d", i)
}

// isProctime reports whether x is PROCTIME(), Flink's processing-time
// attribute: no field, the job's time.
func isProctime(x sqlparse.Expr) bool {
	call, ok := x.(*sqlparse.Call)
	return ok && strings.EqualFold(tableName(call.Name), "PROCTIME") && len(call.Args) == 0 && !call.Star
}

// andExpr is x AND y (x when y is nil).
func andExpr(x, y sqlparse.Expr) sqlparse.Expr {
	if y == nil {
		return x
	}
	return &sqlparse.Binary{Pos: sqlparse.ExprPos(x), Op: "AND", X: x, Y: y}
}

// stripAlias removes the table's name or alias from the references of x
// (bid.price of FROM t AS bid is t's column... unless bid is also a
// column: a nested field wins, as the table's columns shadow nothing).
func stripAlias(x sqlparse.Expr, base *relation) sqlparse.Expr {
	ref, ok := x.(*sqlparse.Ref)
	if !ok || len(ref.Parts) < 2 {
		return x
	}
	first := ref.Parts[0].Name
	if base.col(first) == nil && (first == base.alias || first == base.name) {
		return &sqlparse.Ref{Parts: ref.Parts[1:]}
	}
	return x
}

// computed adds the relation's computed fields to the spec, in order:
// the table's computed columns but skip (the time attribute read as the
// timestamp itself), then a view's filter (a boolean field, since the
// view's columns may replace the table's under the same names) and its
// columns that are not the table's own. It returns the name of the
// view's filter field ("" for none). Each expression is checked against
// the columns before it.
func (c *compiler) computed(r *relation, skip string) (string, error) {
	s := c.job.Spec
	known := map[string]bool{}
	for _, col := range r.table.Columns {
		if !col.Metadata && col.Computed == nil {
			known[col.Name.Name] = true
		}
	}
	// The time attribute read as the timestamp itself is no field: a
	// view's filter or column that reads it (rowtime AS et) reads its
	// expression (TO_TIMESTAMP_LTZ(ts, 3)).
	var attr sqlparse.Expr
	if col := column(r.table, skip); skip != "" && col != nil {
		attr = col.Computed
	}
	add := func(name string, x sqlparse.Expr) error {
		if attr != nil {
			x = rewriteRefs(x, func(ref *sqlparse.Ref) sqlparse.Expr {
				if len(ref.Parts) == 1 && ref.Parts[0].Name == skip {
					return attr
				}
				return ref
			})
		}
		_, err := expr.Compile(x, func(id sqlparse.Ident) (int, *sqlparse.Error) {
			if !known[id.Name] {
				return 0, errAt(id.Pos, id.Name, "", "table %s has no column %s that an expression can read", tableName(r.table.Name), id.Name)
			}
			return 0, nil
		})
		if err != nil {
			return err
		}
		var bad *sqlparse.Error
		rewriteRefs(x, func(ref *sqlparse.Ref) sqlparse.Expr {
			if bad == nil {
				bad = nestedField(r.table, ref.Parts[0], ref.Parts[1:])
			}
			return ref
		})
		if bad != nil {
			return bad
		}
		c.addComputed(r.table, name, x)
		known[name] = true
		return nil
	}
	for _, col := range r.table.Columns {
		if col.Computed != nil && col.Name.Name != skip && !isProctime(col.Computed) {
			if err := add(col.Name.Name, col.Computed); err != nil {
				return "", err
			}
		}
	}
	filter := ""
	if r.where != nil {
		filter = "_weir_view_" + r.name
		if err := add(filter, r.where); err != nil {
			return "", err
		}
	}
	// A view column that replaces a column a later one reads (v1's
	// amount * 2 AS amount, under v2's amount + 1, which reads the
	// table's amount) is computed under a name of its own and copied
	// after the others, so that every expression reads the table's value.
	var copies []spec.ComputedField
	for i, col := range r.cols {
		if col.expr == nil || isProctime(col.expr) {
			continue
		}
		name := col.name
		if known[name] && readLater(r.cols[i+1:], name) {
			name = "_weir_view_col_" + col.name
			copies = append(copies, spec.ComputedField{Name: col.name, Expr: name})
		}
		if err := add(name, col.expr); err != nil {
			return "", err
		}
	}
	for _, f := range copies {
		// The copy keeps the type (and a decimal's scale) of what it copies.
		t := c.computedTypes[f.Expr]
		if t.kind == tDec {
			f.Expr = sqlparse.FormatExpr(decimalCast(&sqlparse.Ref{Parts: []sqlparse.Ident{{Name: f.Expr}}}, t))
		}
		s.Computed = append(s.Computed, f)
		c.setComputedType(f.Name, t)
	}
	return filter, nil
}
