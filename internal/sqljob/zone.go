package sqljob

import (
	"slices"
	"strconv"
	"strings"

	"github.com/weirstream/weir/internal/sqlparse"
)

// ltzAttr reports whether table t's time attribute timeCol ("": the
// processing time of PROCTIME(), or none) is a TIMESTAMP_LTZ, whose
// windows Flink cuts in table.local-time-zone and whose window_time is
// one too. The Kafka record time declared a TIMESTAMP(3) is refused
// under a zone: Flink shifts it to the zone's wall time.
func (c *compiler) ltzAttr(t *sqlparse.CreateTable, timeCol string) (bool, error) {
	if timeCol == "" {
		return c.job.Spec.Time == "processing", nil
	}
	col := column(t, timeCol)
	switch {
	case col == nil:
		return false, nil
	case col.Metadata && timeKind(col.Type) != tTimeLTZ && c.zone != 0:
		return false, errAt(col.Pos, timeCol, "declare it TIMESTAMP_LTZ(3), as Flink types the Kafka record time",
			"table %s: %s, the Kafka record time, is declared %s, which table.local-time-zone %s would make its wall time there", tableName(t.Name), timeCol, sqlparse.FormatType(col.Type), c.zoneName)
	case col.Metadata:
		return timeKind(col.Type) == tTimeLTZ, nil
	case col.Computed != nil:
		return typeOf(col.Computed, c.fieldType(t)).kind == tTimeLTZ, nil
	}
	return timeKind(col.Type) == tTimeLTZ, nil
}

// The functions a zoned expression calls (internal/expr): a
// TIMESTAMP_LTZ's wall time in the zone, a TIMESTAMP(3) holding it, and
// back.
const (
	wallFn    = "WEIR_WALL_TIME"
	instantFn = "WEIR_INSTANT"
)

// zoned rewrites x (over the fields of table t; nil: over results) for
// table.local-time-zone: each TIMESTAMP_LTZ that x reads as a wall time
// (its text, a DATE of it, its hour, FLOOR to a day, DATE_FORMAT, a
// comparison with a TIMESTAMP, a DATE or a string) reads its wall time
// in the zone, and a TIMESTAMP cast to a TIMESTAMP_LTZ is the instant of
// its wall time there, as Flink reads them. A TIMESTAMP_LTZ compared
// with another, moved by an INTERVAL or written as a TIMESTAMP_LTZ stays
// the instant. Without a zone (UTC) x is returned as it is.
func (c *compiler) zoned(x sqlparse.Expr, t *sqlparse.CreateTable) sqlparse.Expr {
	if c.zone == 0 || x == nil {
		return x
	}
	field := c.fieldType(t)
	ltz := func(e sqlparse.Expr) bool { return typeOf(e, field).kind == tTimeLTZ }
	call := func(pos sqlparse.Pos, name string, e sqlparse.Expr) sqlparse.Expr {
		return &sqlparse.Call{Pos: pos, Name: sqlparse.Name{Parts: []sqlparse.Ident{{Pos: pos, Name: name}}},
			Args: []sqlparse.Arg{{Value: e}, {Value: &sqlparse.Lit{Pos: pos, Kind: "number", Text: strconv.FormatInt(int64(c.zone), 10)}}}}
	}
	wall := func(e sqlparse.Expr) sqlparse.Expr {
		if ltz(e) {
			return call(sqlparse.ExprPos(e), wallFn, e)
		}
		return e
	}
	// walls are the operands of a comparison: each TIMESTAMP_LTZ as its
	// wall time when another operand is a wall time (a TIMESTAMP, a
	// DATE, a string).
	walls := func(xs []sqlparse.Expr) []sqlparse.Expr {
		other := false
		for _, e := range xs {
			switch k := typeOf(e, field).kind; {
			case k == tTime || k == tDate || k == tStr:
				other = true
			}
			if _, lit := e.(*sqlparse.TypedLit); lit {
				other = true
			}
		}
		if !other {
			return xs
		}
		out := make([]sqlparse.Expr, len(xs))
		for i, e := range xs {
			out[i] = wall(e)
		}
		return out
	}
	// mapExpr does not descend into what its function returns: each
	// case rewrites its operands first.
	sub := func(e sqlparse.Expr) sqlparse.Expr { return c.zoned(e, t) }
	return mapExpr(x, func(e sqlparse.Expr) sqlparse.Expr {
		if y, ok := comparison(e, sub, walls); ok {
			return y
		}
		switch e := e.(type) {
		case *sqlparse.Cast:
			to, in := timeKind(e.Type), sub(e.X)
			switch {
			case ltz(in) && (to == tTime || to == tDate || isString(e.Type)):
				return &sqlparse.Cast{Pos: e.Pos, X: wall(in), Type: e.Type}
			case to == tTimeLTZ && !ltz(in):
				if k := typeOf(in, field).kind; k == tTime || k == tDate || k == tStr {
					return call(e.Pos, instantFn, &sqlparse.Cast{Pos: e.Pos, X: in, Type: &sqlparse.Type{Pos: e.Pos, Name: "TIMESTAMP", Params: []int{3}}})
				}
			}
			return &sqlparse.Cast{Pos: e.Pos, X: in, Type: e.Type}
		case *sqlparse.Call:
			fn := strings.ToUpper(tableName(e.Name))
			if fn == "FROM_UNIXTIME" && len(e.Args) >= 1 && len(e.Args) <= 2 {
				// Seconds since the epoch written as a wall time in the
				// zone, as Flink's FROM_UNIXTIME writes them: the
				// instant's wall time, formatted.
				pos := e.Pos
				ms := &sqlparse.Binary{Pos: pos, Op: "*", X: sub(e.Args[0].Value), Y: &sqlparse.Lit{Pos: pos, Kind: "number", Text: "1000"}}
				var pattern sqlparse.Expr = &sqlparse.Lit{Pos: pos, Kind: "string", Text: "yyyy-MM-dd HH:mm:ss"}
				if len(e.Args) == 2 {
					pattern = e.Args[1].Value
				}
				return &sqlparse.Call{Pos: pos, Name: sqlparse.Name{Parts: []sqlparse.Ident{{Pos: pos, Name: "DATE_FORMAT"}}},
					Args: []sqlparse.Arg{{Value: call(pos, wallFn, ms)}, {Value: pattern}}}
			}
			switch fn {
			case "YEAR", "QUARTER", "MONTH", "WEEK", "DAYOFYEAR", "DAYOFMONTH", "DAYOFWEEK", "HOUR", "MINUTE", "SECOND", "DATE_FORMAT", "FLOOR", "CEIL", "CEILING":
			default:
				// TIMESTAMPDIFF of two TIMESTAMP_LTZ counts on UTC's
				// calendar, as Flink's does (it never reads the zone).
				return e
			}
			out := *e
			out.Args = make([]sqlparse.Arg, len(e.Args))
			for i, a := range e.Args {
				out.Args[i] = sqlparse.Arg{Name: a.Name, Value: sub(a.Value)}
			}
			switch {
			case len(out.Args) == 0 || !ltz(out.Args[0].Value):
			case fn == "FLOOR" || fn == "CEIL" || fn == "CEILING":
				if len(out.Args) == 2 {
					// Rounded on the zone's clock, and an instant again.
					out.Args[0].Value = wall(out.Args[0].Value)
					return call(e.Pos, instantFn, &out)
				}
			default:
				out.Args[0].Value = wall(out.Args[0].Value)
			}
			return &out
		}
		return e
	})
}

// mixesZones reports whether x, a call or CASE whose value is one of its
// operands (GREATEST, LEAST, COALESCE, NULLIF, IF, CASE), takes both a
// TIMESTAMP_LTZ and a TIMESTAMP or DATE.
func mixesZones(x sqlparse.Expr, field func([]sqlparse.Ident) numType) bool {
	var xs []sqlparse.Expr
	switch x := x.(type) {
	case *sqlparse.Call:
		switch strings.ToUpper(tableName(x.Name)) {
		case "GREATEST", "LEAST", "COALESCE", "NULLIF", "IF":
		default:
			return false
		}
		for i, a := range x.Args {
			if i > 0 || !strings.EqualFold(tableName(x.Name), "IF") {
				xs = append(xs, a.Value)
			}
		}
	case *sqlparse.Case:
		for _, w := range x.Whens {
			xs = append(xs, w.Result)
		}
		if x.Else != nil {
			xs = append(xs, x.Else)
		}
	}
	var ltz, wall bool
	for _, e := range xs {
		switch typeOf(e, field).kind {
		case tTimeLTZ:
			ltz = true
		case tTime, tDate:
			wall = true
		}
	}
	return ltz && wall
}

// zoneColumn is x, the text of an expression of kind k (a field's name,
// a result expression), as written into sink column col, as Flink casts
// a time on insert: a TIMESTAMP_LTZ into a wall time's column (a
// TIMESTAMP, a DATE, a string) is its wall time in the zone (under
// table.local-time-zone), of kind TIMESTAMP; a TIMESTAMP (or DATE) into
// a TIMESTAMP_LTZ column is the instant of its wall time there (UTC's
// without a zone), of kind TIMESTAMP_LTZ, written with its Z; anything
// else x and k as they are.
func (c *compiler) zoneColumn(x string, k numKind, col *sqlparse.Column) (string, numKind) {
	if col == nil || col.Type == nil {
		return x, k
	}
	off := strconv.FormatInt(int64(c.zone), 10)
	to := timeKind(col.Type)
	switch {
	case k == tTimeLTZ && c.zone != 0 && (to == tTime || to == tDate || isString(col.Type)):
		return wallFn + "(" + x + ", " + off + ")", tTime
	case (k == tTime || k == tDate) && to == tTimeLTZ:
		return instantFn + "(" + x + ", " + off + ")", tTimeLTZ
	}
	return x, k
}

// literalTimes reads, in x (over the fields of table t; nil: over
// results), each string literal that a comparison compares with a time
// as a TIMESTAMP (or DATE) literal, as Flink casts it to the time's type:
// a TIMESTAMP_LTZ (epoch milliseconds) compared with '2026-01-01
// 08:00:00' would compare a number with a string, which is NULL. Under
// table.local-time-zone, zoned reads the TIMESTAMP_LTZ as its wall time
// there, as Flink reads the string in the zone.
func (c *compiler) literalTimes(x sqlparse.Expr, t *sqlparse.CreateTable) sqlparse.Expr {
	field := c.fieldType(t)
	typed := func(xs []sqlparse.Expr) []sqlparse.Expr {
		kind := tOther
		for _, e := range xs {
			switch k := typeOf(e, field).kind; k {
			case tTime, tTimeLTZ:
				kind = tTime
			case tDate:
				if kind == tOther {
					kind = tDate
				}
			}
		}
		if kind == tOther {
			return xs
		}
		out := slices.Clone(xs)
		for i, e := range out {
			if l, ok := e.(*sqlparse.Lit); ok && l.Kind == "string" {
				ty := "TIMESTAMP"
				if kind == tDate || len(strings.TrimSpace(l.Text)) == len("2006-01-02") {
					ty = "DATE"
				}
				out[i] = &sqlparse.TypedLit{Pos: l.Pos, Type: ty, Text: strings.TrimSpace(l.Text)}
			}
		}
		return out
	}
	sub := func(e sqlparse.Expr) sqlparse.Expr { return c.literalTimes(e, t) }
	return mapExpr(x, func(e sqlparse.Expr) sqlparse.Expr {
		if y, ok := comparison(e, sub, typed); ok {
			return y
		}
		return e
	})
}

// comparison rewrites e when it is a comparison (=, <>, <, <=, >, >=,
// IS [NOT] DISTINCT FROM, BETWEEN, IN): each operand by sub (mapExpr
// does not descend into what its function returns), then the operands
// together by f; ok false for another expression.
func comparison(e sqlparse.Expr, sub func(sqlparse.Expr) sqlparse.Expr, f func([]sqlparse.Expr) []sqlparse.Expr) (sqlparse.Expr, bool) {
	switch e := e.(type) {
	case *sqlparse.Binary:
		switch e.Op {
		case "=", "<>", "<", "<=", ">", ">=", "IS DISTINCT FROM", "IS NOT DISTINCT FROM":
			xs := f([]sqlparse.Expr{sub(e.X), sub(e.Y)})
			return &sqlparse.Binary{Pos: e.Pos, Op: e.Op, X: xs[0], Y: xs[1]}, true
		}
	case *sqlparse.Between:
		xs := f([]sqlparse.Expr{sub(e.X), sub(e.Lo), sub(e.Hi)})
		return &sqlparse.Between{Pos: e.Pos, X: xs[0], Lo: xs[1], Hi: xs[2], Not: e.Not}, true
	case *sqlparse.In:
		list := []sqlparse.Expr{sub(e.X)}
		for _, l := range e.List {
			list = append(list, sub(l))
		}
		xs := f(list)
		return &sqlparse.In{Pos: e.Pos, X: xs[0], List: xs[1:], Not: e.Not}, true
	}
	return nil, false
}

// resultTimes reads the times of x, an expression over a window's
// results (a HAVING, a select list's expression, a join's or a
// cascade's condition), as Flink does: a string compared with a time as
// a time (literalTimes), a TIMESTAMP_LTZ read as a wall time in the
// zone (zoned), a time cast to a string as its text (timeCasts), and the
// times a comparison compares as epoch milliseconds (timeOperands: a
// FIRST_VALUE of a TIMESTAMP(3) column holds its text, a window bound
// its milliseconds).
func (c *compiler) resultTimes(x sqlparse.Expr) sqlparse.Expr {
	return c.timeOperands(c.timeCasts(nil, c.zoned(c.literalTimes(x, nil), nil)), nil)
}
