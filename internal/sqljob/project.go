package sqljob

import (
	"strings"

	"github.com/weirstream/weir/internal/sqlparse"
	"github.com/weirstream/weir/internal/suggest"
)

// projectedWindow folds a projection and filter of a windowed
// aggregation's rows into the aggregation itself:
//
//	SELECT u, c * 2 AS c2 FROM (SELECT u, COUNT(*) AS c FROM TABLE(TUMBLE(...))
//	  GROUP BY u, window_start, window_end) [AS w] WHERE c > 1
//
// is SELECT u, COUNT(*) * 2 AS c2 FROM TABLE(TUMBLE(...)) GROUP BY u,
// window_start, window_end HAVING COUNT(*) > 1, which weir compiles (a
// column's expression over aggregates, a HAVING). Flink runs both; a
// window's results are rows of their own there, filtered and projected
// as they come, which is what the HAVING and the select list do to each
// firing here. ok is false when sel is not such a query (an outer
// aggregation, ROW_NUMBER, DISTINCT, an inner query that is not a
// windowed aggregation): the compiler goes on with sel as it is.
func projectedWindow(sel *sqlparse.Select) (merged *sqlparse.Select, ok bool, err error) {
	from, isSub := sel.From.(*sqlparse.Subquery)
	if !isSub || sel.GroupBy != nil || sel.Having != nil || sel.Distinct || from.Query == nil {
		return nil, false, nil
	}
	q := from.Query
	if len(q.Selects) != 1 || q.With != nil || q.OrderBy != nil || q.Limit != nil {
		return nil, false, nil
	}
	inner := q.Selects[0]
	if _, tvf := inner.From.(*sqlparse.TableFunc); (!tvf || inner.GroupBy == nil) && legacyWindow(inner) == nil {
		return nil, false, nil
	}
	plain := true // no aggregate and no OVER in the outer query
	check := func(x sqlparse.Expr) {
		mapExpr(x, func(e sqlparse.Expr) sqlparse.Expr {
			if call, isCall := e.(*sqlparse.Call); isCall {
				if _, agg := aggregates[strings.ToUpper(tableName(call.Name))]; agg || call.Over != nil {
					plain = false
				}
			}
			return e
		})
	}
	for _, it := range sel.Items {
		if !it.Star {
			check(it.Expr)
		}
	}
	check(sel.Where)
	if !plain {
		return nil, false, nil
	}
	// The inner query's columns by name: an alias, or a column's name.
	cols := map[string]*sqlparse.SelectItem{}
	var names []string
	for _, it := range inner.Items {
		if it.Star {
			return nil, false, nil // SELECT * of a window function's columns: left as it is
		}
		if call, isCall := it.Expr.(*sqlparse.Call); isCall && call.Over != nil {
			return nil, false, nil // ROW_NUMBER() OVER (...): a Top-N, compiled as one
		}
		if name := itemName(it); name != "" {
			if _, dup := cols[name]; !dup {
				cols[name], names = it, append(names, name)
			}
		}
	}
	var bad *sqlparse.Error
	subst := func(x sqlparse.Expr) sqlparse.Expr {
		return rewriteRefs(x, func(r *sqlparse.Ref) sqlparse.Expr {
			parts := r.Parts
			if len(parts) == 2 && from.Alias.Name != "" && strings.EqualFold(parts[0].Name, from.Alias.Name) {
				parts = parts[1:]
			}
			if len(parts) != 1 {
				return r
			}
			it, found := cols[parts[0].Name]
			if !found {
				if bad == nil {
					bad = errAt(parts[0].Pos, parts[0].Name, suggest.Or(parts[0].Name, names, "its columns: "+strings.Join(names, ", ")), "column %s is not a column of the windowed query", parts[0].Name)
				}
				return r
			}
			return it.Expr
		})
	}
	out := *inner
	out.Hint = sel.Hint
	if out.Hint == nil {
		out.Hint = inner.Hint
	}
	out.Items = nil
	for _, it := range sel.Items {
		if it.Star {
			if it.Expr != nil { // w.*: the alias's columns, which are all of them
				if r, isRef := it.Expr.(*sqlparse.Ref); !isRef || len(r.Parts) != 1 || !strings.EqualFold(r.Parts[0].Name, from.Alias.Name) {
					return nil, false, nil
				}
			}
			out.Items = append(out.Items, inner.Items...)
			continue
		}
		n := *it
		n.Expr = subst(it.Expr)
		if n.Alias.Name == "" {
			// The column keeps the name the outer query shows it by.
			if name := itemName(it); name != "" {
				n.Alias = sqlparse.Ident{Pos: it.Pos, Name: name}
			}
		}
		out.Items = append(out.Items, &n)
	}
	if sel.Where != nil {
		// The HAVING reads the select list's names first: a WHERE column
		// that the outer select list names anew (UPPER(page) AS page)
		// would read the new column, not the windowed query's.
		shadowed := func(r *sqlparse.Ref) sqlparse.Expr {
			parts := r.Parts
			if len(parts) == 2 && from.Alias.Name != "" && strings.EqualFold(parts[0].Name, from.Alias.Name) {
				parts = parts[1:]
			}
			if len(parts) != 1 || bad != nil {
				return r
			}
			for _, it := range sel.Items {
				if it.Star || !strings.EqualFold(itemName(it), parts[0].Name) {
					continue
				}
				if ref, isRef := it.Expr.(*sqlparse.Ref); !isRef || !strings.EqualFold(ref.Parts[len(ref.Parts)-1].Name, parts[0].Name) {
					bad = errAt(parts[0].Pos, parts[0].Name, "name the select list's column otherwise (AS "+parts[0].Name+"_2), or filter in the windowed query's HAVING",
						"the WHERE reads %s of the windowed query, and the select list names another column %s", parts[0].Name, parts[0].Name)
				}
			}
			return r
		}
		rewriteRefs(sel.Where, shadowed)
		out.Having = conjunction([]sqlparse.Expr{inner.Having, subst(sel.Where)})
		if inner.Having == nil {
			out.Having = subst(sel.Where)
		}
	}
	if bad != nil {
		return nil, false, bad
	}
	return &out, true, nil
}

// itemName is the name a select item's column goes by: its alias, or the
// name of the column it reads ("" for another expression).
func itemName(it *sqlparse.SelectItem) string {
	if it.Alias.Name != "" {
		return it.Alias.Name
	}
	if r, ok := it.Expr.(*sqlparse.Ref); ok {
		return r.Parts[len(r.Parts)-1].Name
	}
	return ""
}
