package sqljob

import (
	"slices"
	"strconv"
	"strings"

	"github.com/weirstream/weir/internal/expr"
	"github.com/weirstream/weir/internal/sqlparse"
	"github.com/weirstream/weir/spec"
)

// numType is what the compiler knows of an expression's numeric type:
// Flink's rules for exact numbers give a computed decimal its precision
// and scale (docs/SQL.md, "Decimals").
type numType struct {
	kind numKind
	p, s int // tInt: the integer's precision (INT 10, BIGINT 19); tDec: DECIMAL(p, s)
}

type numKind uint8

const (
	tOther numKind = iota // not a number, or unknown
	tInt
	tDec
	tFloat
	// tTimeLTZ is a TIMESTAMP_LTZ(3) that a field holds as epoch
	// milliseconds (TO_TIMESTAMP_LTZ): a row writes it as a time.
	tTimeLTZ
	// tTime is a TIMESTAMP(3) that a field holds as epoch milliseconds
	// (a CAST to TIMESTAMP, MIN or MAX of a TIMESTAMP column, of a
	// window bound): a row writes it as a TIMESTAMP(3), without a Z.
	tTime
	// tDate is a DATE that a field holds as the epoch milliseconds of
	// its midnight (UTC): a row writes it as 2026-01-01.
	tDate
	// tStr is a string (STRING, VARCHAR, CHAR, a string literal or a
	// string function's result): MIN and MAX of it compare strings.
	tStr
	// tNull is a NULL literal among a function's arguments (typeOf
	// gives it no other type).
	tNull
)

// maxPrecision is DECIMAL's largest precision; minAdjustedScale the
// fraction digits an adjusted type keeps at least (Flink's
// LogicalTypeMerging, after SQL Server's rules).
const (
	maxPrecision     = 38
	minAdjustedScale = 6
)

// decType is DECIMAL(p, s) with a precision beyond 38 adjusted as Flink
// adjusts it: the integer digits are kept, the scale gives way down to
// min(s, 6).
func decType(p, s int) numType {
	if p > maxPrecision {
		s = max(maxPrecision-(p-s), min(s, minAdjustedScale))
		p = maxPrecision
	}
	return numType{kind: tDec, p: p, s: s}
}

// asDec is an exact number as a decimal (an integer of precision p is
// DECIMAL(p, 0)).
func (t numType) asDec() (p, s int) {
	if t.kind == tInt {
		return t.p, 0
	}
	return t.p, t.s
}

func (t numType) exact() bool { return t.kind == tInt || t.kind == tDec }

// isTime reports whether t is a time held as epoch milliseconds.
func (t numType) isTime() bool { return t.kind == tTime || t.kind == tTimeLTZ || t.kind == tDate }

// typeOfSQL is a declared type's numType.
func typeOfSQL(t *sqlparse.Type) numType {
	if t == nil {
		return numType{}
	}
	switch strings.ToUpper(t.Name) {
	case "TINYINT":
		return numType{kind: tInt, p: 3}
	case "SMALLINT":
		return numType{kind: tInt, p: 5}
	case "INT", "INTEGER":
		return numType{kind: tInt, p: 10}
	case "BIGINT":
		return numType{kind: tInt, p: 19}
	case "DECIMAL", "DEC", "NUMERIC":
		p, s := 10, 0
		if len(t.Params) > 0 {
			p = t.Params[0]
		}
		if len(t.Params) > 1 {
			s = t.Params[1]
		}
		return numType{kind: tDec, p: p, s: s}
	case "FLOAT", "DOUBLE", "REAL":
		return numType{kind: tFloat}
	case "STRING", "VARCHAR", "CHAR":
		return numType{kind: tStr}
	}
	return numType{}
}

// typeOfLit is a number literal's type: an integer is an INT, or a
// BIGINT beyond it; 1.50 is a DECIMAL(3, 2); with an exponent, a DOUBLE.
func typeOfLit(text string) numType {
	if strings.ContainsAny(text, "eE") {
		return numType{kind: tFloat}
	}
	whole, frac, point := strings.Cut(strings.TrimLeft(text, "+-"), ".")
	// Calcite's precision of a literal is its digits as written, leading
	// zeros too (0.5 is a DECIMAL(2, 1)).
	if !point {
		n, err := strconv.ParseInt(whole, 10, 64)
		switch {
		case err != nil:
			return numType{kind: tDec, p: min(len(strings.TrimLeft(whole, "0")), maxPrecision)}
		case n <= 1<<31-1:
			return numType{kind: tInt, p: 10}
		}
		return numType{kind: tInt, p: 19}
	}
	return numType{kind: tDec, p: min(max(len(whole)+len(frac), 1), maxPrecision), s: len(frac)}
}

// typeOf is x's numeric type, as Flink derives it: field gives the type
// of a record field (a dotted path into a ROW).
func typeOf(x sqlparse.Expr, field func(parts []sqlparse.Ident) numType) numType {
	switch x := x.(type) {
	case *sqlparse.Lit:
		switch x.Kind {
		case "number":
			return typeOfLit(x.Text)
		case "string":
			return numType{kind: tStr}
		}
	case *sqlparse.Ref:
		return field(x.Parts)
	case *sqlparse.TypedLit:
		switch x.Type {
		case "TIMESTAMP":
			return numType{kind: tTime}
		case "DATE":
			return numType{kind: tDate}
		}
	case *sqlparse.Cast:
		// A cast to a time is one as epoch milliseconds; a declared
		// column of such a type is its record's text (typeOfSQL).
		switch strings.ToUpper(x.Type.Name) {
		case "TIMESTAMP":
			if x.Type.LocalTZ {
				return numType{kind: tTimeLTZ}
			}
			return numType{kind: tTime}
		case "TIMESTAMP_LTZ":
			return numType{kind: tTimeLTZ}
		case "DATE":
			return numType{kind: tDate}
		}
		return typeOfSQL(x.Type)
	case *sqlparse.Unary:
		if x.Op != "NOT" {
			return typeOf(x.X, field)
		}
	case *sqlparse.Binary:
		if x.Op == "||" {
			return numType{kind: tStr}
		}
		ivX, ivY := sqlparse.IsInterval(x.X), sqlparse.IsInterval(x.Y)
		if (ivY && (x.Op == "+" || x.Op == "-")) || (ivX && x.Op == "+") {
			// A time moved by an interval is a time of its kind (a
			// TIMESTAMP(3) unless it is another).
			other, iv := x.X, x.Y
			if ivX {
				other, iv = x.Y, x.X
			}
			t := typeOf(other, field)
			if ivl, ok := iv.(*sqlparse.Interval); t.kind == tDate && (!ok || !strings.EqualFold(ivl.Unit, "DAY")) {
				return numType{kind: tTime} // a DATE moved by hours is a TIMESTAMP
			}
			if t.isTime() {
				return t
			}
			return numType{kind: tTime}
		}
		return arithType(x.Op, typeOf(x.X, field), typeOf(x.Y, field))
	case *sqlparse.Case:
		// A NULL branch takes the others' type (CASE WHEN ... THEN
		// NULL ELSE window_start END is a time).
		var ts []numType
		for _, w := range x.Whens {
			if !isNullLit(w.Result) {
				ts = append(ts, typeOf(w.Result, field))
			}
		}
		if x.Else != nil && !isNullLit(x.Else) {
			ts = append(ts, typeOf(x.Else, field))
		}
		return commonType(ts)
	case *sqlparse.Call:
		var ts []numType
		for _, a := range x.Args {
			if isNullLit(a.Value) {
				ts = append(ts, numType{kind: tNull})
				continue
			}
			ts = append(ts, typeOf(a.Value, field))
		}
		name := strings.ToUpper(tableName(x.Name))
		if expr.ReturnsString(name) {
			return numType{kind: tStr}
		}
		switch name {
		case "TO_TIMESTAMP_LTZ", instantFn:
			return numType{kind: tTimeLTZ}
		case wallFn, "TO_TIMESTAMP":
			return numType{kind: tTime}
		case "FLOOR", "CEIL", "CEILING":
			if len(ts) == 2 {
				// FLOOR(t TO unit): a time of t's kind (a TIMESTAMP of
				// a column's text), a DATE of a DATE.
				if ts[0].isTime() {
					return ts[0]
				}
				return numType{kind: tTime}
			}
		case "TIMESTAMPDIFF", "LOCATE":
			return numType{kind: tInt, p: 10}
		case "ABS":
			if len(ts) == 1 && ts[0].kind != tNull {
				return ts[0]
			}
		case "MOD":
			// x % y's type (MOD(999.99, 0.01) is a DECIMAL, 0.00).
			if len(ts) == 2 {
				return arithType("%", ts[0], ts[1])
			}
		case "COALESCE", "GREATEST", "LEAST":
			return commonType(ts)
		case "NULLIF":
			if len(ts) == 2 && ts[0].kind != tNull {
				return ts[0]
			}
		case "IF":
			if len(ts) == 3 {
				return commonType(ts[1:])
			}
		case "ROUND":
			// Flink's findRoundDecimalType.
			if len(ts) == 0 || ts[0].kind != tDec {
				break
			}
			p, s := ts[0].p, ts[0].s
			r := 0
			if len(x.Args) == 2 {
				lit, ok := x.Args[1].Value.(*sqlparse.Lit)
				n, err := strconv.Atoi(strings.TrimSpace(litText(lit, ok)))
				if err != nil {
					return numType{}
				}
				r = n
			}
			switch {
			case r >= s:
				return ts[0]
			case r < 0:
				return numType{kind: tDec, p: min(maxPrecision, 1+p-s)}
			}
			return numType{kind: tDec, p: 1 + p - s + r, s: r}
		}
	}
	return numType{}
}

func litText(l *sqlparse.Lit, ok bool) string {
	if !ok || l.Kind != "number" {
		return "x"
	}
	return l.Text
}

// arithType is the type of a op b for exact numbers, after Flink's
// LogicalTypeMerging: decimals by SQL Server's rules, integers as the
// wider, floats as floats.
func arithType(op string, a, b numType) numType {
	switch op {
	case "+", "-", "*", "/", "%":
	default:
		return numType{}
	}
	switch {
	case a.kind == tFloat && (b.kind == tFloat || b.exact()), b.kind == tFloat && a.exact():
		return numType{kind: tFloat}
	case a.kind == tInt && b.kind == tInt:
		return numType{kind: tInt, p: max(a.p, b.p)}
	case !a.exact() || !b.exact():
		return numType{}
	}
	p1, s1 := a.asDec()
	p2, s2 := b.asDec()
	switch op {
	case "+", "-":
		s := max(s1, s2)
		return decType(max(p1-s1, p2-s2)+s+1, s)
	case "*":
		return decType(p1+p2+1, s1+s2)
	case "/":
		s := max(minAdjustedScale, s1+p2+1)
		return decType(p1-s1+s2+s, s)
	}
	// %: an integer modulo of two integers is the divisor's type.
	if s1 == 0 && s2 == 0 {
		return b
	}
	s := max(s1, s2)
	return decType(min(p1-s1, p2-s2)+s, s)
}

// commonType is the type of CASE's or COALESCE's results: decimals
// with the most integer digits and the largest scale among them; floats
// when one is a float; unknown when one is not a number (NULL aside).
func commonType(ts []numType) numType {
	ts = slices.DeleteFunc(slices.Clone(ts), func(t numType) bool { return t.kind == tNull }) // a NULL takes the others' type
	var out numType
	for i, t := range ts {
		switch {
		case t.isTime() || out.isTime() && i > 0:
			// Times of one kind are that kind (COALESCE(MAX(t),
			// window_end)); a time with anything else is unknown.
			if i > 0 && t.kind != out.kind {
				return numType{}
			}
			out = t
		case t.kind == tOther, (t.kind == tStr) != (out.kind == tStr) && i > 0:
			return numType{}
		case t.kind == tStr:
			out = t
		case i == 0:
			out = t
		case out.kind == tFloat || t.kind == tFloat:
			out = numType{kind: tFloat}
		case out.kind == tInt && t.kind == tInt:
			out.p = max(out.p, t.p)
		default:
			p1, s1 := out.asDec()
			p2, s2 := t.asDec()
			s := max(s1, s2)
			out = numType{kind: tDec, p: min(max(p1-s1, p2-s2)+s, maxPrecision), s: s}
		}
	}
	return out
}

// decimalCast is x cast to DECIMAL(t.p, t.s).
func decimalCast(x sqlparse.Expr, t numType) sqlparse.Expr {
	pos := sqlparse.PosOf(x)
	return &sqlparse.Cast{Pos: pos, X: x, Type: &sqlparse.Type{Pos: pos, Name: "DECIMAL", Params: []int{t.p, t.s}}}
}

// doubleCast is x cast to a DOUBLE.
func doubleCast(x sqlparse.Expr) sqlparse.Expr {
	pos := sqlparse.PosOf(x)
	return &sqlparse.Cast{Pos: pos, X: x, Type: &sqlparse.Type{Pos: pos, Name: "DOUBLE"}}
}

// isString reports whether t is a character string type.
func isString(t *sqlparse.Type) bool {
	return t != nil && (t.Name == "STRING" || t.Name == "VARCHAR" || t.Name == "CHAR")
}

// flinkCasts casts each quotient of x whose type is a DECIMAL to
// that type, so that it is divided at its own scale (Flink's), each
// DOUBLE operand of arithmetic whose type is a DOUBLE, or of a CAST to a
// string, to a DOUBLE (a whole value divides as a float, and is written
// 3.0), and x too when its type is a DECIMAL: a computed field holds the decimal at the
// scale Flink gives it (price * 3 of a DECIMAL(10, 2) is 0.90).
func flinkCasts(x sqlparse.Expr, field func(parts []sqlparse.Ident) numType) sqlparse.Expr {
	var walk func(x sqlparse.Expr) sqlparse.Expr
	walk = func(x sqlparse.Expr) sqlparse.Expr {
		if ref, ok := x.(*sqlparse.Ref); ok && resultRef(ref) {
			// An aggregate of a result expression is cast to its type
			// first, wherever it stands: the expression knows the
			// record's decimal fields, not the results', and would
			// divide a whole value of one (2) as an integer, or write
			// SUM's 3.10 as a string without its scale ("3.1").
			if t := typeOf(ref, field); t.kind == tDec {
				return decimalCast(ref, t)
			}
			return x
		}
		if cast, ok := x.(*sqlparse.Cast); ok && isString(cast.Type) && typeOf(cast.X, field).kind == tFloat {
			// A DOUBLE whose value is whole in the record (3) is
			// written as a DOUBLE ("3.0"), as Flink casts it.
			z := *cast
			z.X = doubleCast(walk(cast.X))
			return &z
		}
		y, ok := x.(*sqlparse.Binary)
		if !ok {
			return mapChildren(x, walk)
		}
		z := *y
		z.X, z.Y = walk(y.X), walk(y.Y)
		t := typeOf(&z, field)
		if strings.Contains("+-*/%", z.Op) && t.kind == tFloat {
			// A DOUBLE's value may be whole in the record (7), or a
			// decimal text (0.1): each DOUBLE operand is cast, so that
			// 7 / 3 divides and 0.1 + 0.2 adds as floats, as Flink
			// computes a DOUBLE (0.30000000000000004).
			for _, op := range []*sqlparse.Expr{&z.X, &z.Y} {
				if typeOf(*op, field).kind == tFloat {
					*op = doubleCast(*op)
				}
			}
			return &z
		}
		if z.Op != "/" || t.kind != tDec {
			return &z
		}
		// A decimal quotient, divided at its own type's scale; a query's
		// own cast of it (CAST(a / b AS DECIMAL(30, 20))) casts that, as
		// in Flink.
		return decimalCast(&z, t)
	}
	out := walk(x)
	if t := typeOf(out, field); t.kind == tDec {
		if c, ok := out.(*sqlparse.Cast); ok && typeOfSQL(c.Type) == t {
			return out
		}
		return decimalCast(out, t)
	}
	return out
}

// mapChildren copies x with each direct subexpression replaced by f's
// (x itself when it has none).
func mapChildren(x sqlparse.Expr, f func(sqlparse.Expr) sqlparse.Expr) sqlparse.Expr {
	top := true
	return mapExpr(x, func(e sqlparse.Expr) sqlparse.Expr {
		if top {
			top = false
			return e
		}
		return f(e)
	})
}

// fieldType is the numType of record field parts[0] of table t (a path
// into its ROW for more parts): a computed field's as compiled, else a
// physical column's as t declares it.
func (c *compiler) fieldType(t *sqlparse.CreateTable) func(parts []sqlparse.Ident) numType {
	return func(parts []sqlparse.Ident) numType {
		if len(parts) == 1 {
			if t, ok := c.computedTypes[parts[0].Name]; ok {
				return t
			}
		}
		dt := declaredType(t, parts)
		if dt == nil && len(parts) == 1 && isBound(parts[0].Name) {
			// A window's bound (of the results, epoch milliseconds): a
			// TIMESTAMP(3); window_time is the time attribute's type.
			if parts[0].Name == "window_time" && c.timeAttrLTZ() {
				return numType{kind: tTimeLTZ}
			}
			return numType{kind: tTime}
		}
		if k := timeKind(dt); k != tOther {
			return numType{kind: k}
		}
		return typeOfSQL(dt)
	}
}

// isNullLit reports whether x is the literal NULL.
func isNullLit(x sqlparse.Expr) bool {
	l, ok := x.(*sqlparse.Lit)
	return ok && l.Kind == "null"
}

// timeKind is the time kind of declared type dt (tOther for none): the
// record holds such a column's text, which a comparison, an interval's
// arithmetic and a row read as a time.
func timeKind(dt *sqlparse.Type) numKind {
	if dt == nil {
		return tOther
	}
	switch strings.ToUpper(dt.Name) {
	case "TIMESTAMP":
		if dt.LocalTZ {
			return tTimeLTZ
		}
		return tTime
	case "TIMESTAMP_LTZ":
		return tTimeLTZ
	case "DATE":
		return tDate
	}
	return tOther
}

// declaredType is the SQL type that table t declares for the column
// (and nested ROW field) parts name; nil for a computed or metadata
// column, or none (t nil: a windowed view's results).
func declaredType(t *sqlparse.CreateTable, parts []sqlparse.Ident) *sqlparse.Type {
	if t == nil {
		return nil
	}
	col := column(t, parts[0].Name)
	if col == nil || col.Metadata || col.Computed != nil {
		return nil
	}
	typ := col.Type
	for _, p := range parts[1:] {
		typ = rowField(typ, p.Name)
	}
	return typ
}

// rowField is the type of field name of ROW type t (the last of that
// name); nil when t (nil: unknown) declares none.
func rowField(t *sqlparse.Type, name string) *sqlparse.Type {
	var out *sqlparse.Type
	if t != nil {
		for _, f := range t.Fields {
			if f.Name.Name == name {
				out = f.Type
			}
		}
	}
	return out
}

// columnType is the declared type of x when x names a column of rel's
// table (nil otherwise: an expression, a computed or view column).
func (c *compiler) columnType(x sqlparse.Expr, rel *relation) *sqlparse.Type {
	ref, ok := x.(*sqlparse.Ref)
	if !ok || rel.table == nil {
		return nil
	}
	if _, computed := c.computedTypes[ref.Parts[0].Name]; computed && len(ref.Parts) == 1 {
		return nil
	}
	return declaredType(rel.table, ref.Parts)
}

// numeric reports whether type t holds numbers (or times, which MIN and
// MAX compare as numbers).
func numeric(t *sqlparse.Type) bool {
	switch strings.ToUpper(t.Name) {
	case "BOOLEAN", "ROW", "ARRAY", "MAP", "MULTISET", "BYTES", "BINARY", "VARBINARY", "TIMESTAMP", "TIMESTAMP_LTZ", "DATE", "TIME":
		return false
	}
	return !isString(t)
}

// timeText is time x (epoch milliseconds, or a TIMESTAMP's text) as
// Flink casts a TIMESTAMP(3) to a string: 2026-01-01 00:05:00.000.
func timeText(pos sqlparse.Pos, x sqlparse.Expr) sqlparse.Expr {
	return &sqlparse.Call{Pos: pos, Name: sqlparse.Name{Parts: []sqlparse.Ident{{Pos: pos, Name: "DATE_FORMAT"}}},
		Args: []sqlparse.Arg{{Value: x}, {Value: &sqlparse.Lit{Pos: pos, Kind: "string", Text: "yyyy-MM-dd HH:mm:ss.SSS"}}}}
}

// timeCasts makes each CAST to a string of a time (over the fields of
// table t; nil: the results' names): a TIMESTAMP(3) or TIMESTAMP_LTZ(3)
// column, a TO_TIMESTAMP_LTZ, a window bound, MIN or MAX of a time, a
// time literal or interval arithmetic) its time's text, as Flink casts
// it (2026-01-01 00:05:00.000; a DATE's 2026-01-01), not the text or the
// milliseconds the record or the results hold.
func (c *compiler) timeCasts(t *sqlparse.CreateTable, x sqlparse.Expr) sqlparse.Expr {
	field := c.fieldType(t)
	return mapExpr(x, func(e sqlparse.Expr) sqlparse.Expr {
		cast, ok := e.(*sqlparse.Cast)
		if !ok || !isString(cast.Type) {
			return e
		}
		if ref, ok := cast.X.(*sqlparse.Ref); ok {
			if dt := declaredType(t, ref.Parts); dt != nil && timeKind(dt) != tDate && len(dt.Params) == 1 && dt.Params[0] != 3 {
				return e // a TIMESTAMP(0) or (6) is another text
			}
		}
		switch typeOf(cast.X, field).kind {
		case tTime, tTimeLTZ:
			return timeText(cast.Pos, cast.X)
		case tDate:
			return &sqlparse.Call{Pos: cast.Pos, Name: sqlparse.Name{Parts: []sqlparse.Ident{{Pos: cast.Pos, Name: "DATE_FORMAT"}}},
				Args: []sqlparse.Arg{{Value: cast.X}, {Value: &sqlparse.Lit{Pos: cast.Pos, Kind: "string", Text: "yyyy-MM-dd"}}}}
		}
		return e
	})
}

// addComputed adds computed field name = x, an expression over the
// fields of table t, to the job's spec, its quotients and its value as
// Flink types them (flinkCasts).
func (c *compiler) addComputed(t *sqlparse.CreateTable, name string, x sqlparse.Expr) {
	x = c.timeCasts(t, c.zoned(c.literalTimes(x, t), t))
	x = flinkCasts(x, c.fieldType(t))
	c.setComputedType(name, typeOf(x, c.fieldType(t)))
	c.job.Spec.Computed = append(c.job.Spec.Computed, spec.ComputedField{Name: name, Expr: sqlparse.FormatExpr(x)})
}

// fieldTimeFormat is how a row writes field from when it holds a
// TIMESTAMP_LTZ as epoch milliseconds (spec.Column.Time), into a column
// of type ty (nil: a bare SELECT's, which writes it as Flink's JSON
// format writes a TIMESTAMP_LTZ(3)); "" for a field that holds no such
// time.
func (c *compiler) fieldTimeFormat(from string, ty *sqlparse.Type) string {
	return timeFormatOf(c.computedTypes[from].kind, ty)
}

// timeFormatOf is how a row writes a value of kind k (epoch
// milliseconds of a time) into a column of type ty (nil: a bare
// SELECT's, which writes it as its own type); "" for no time.
func timeFormatOf(k numKind, ty *sqlparse.Type) string {
	switch {
	case k == tDate && (ty == nil || strings.EqualFold(ty.Name, "DATE") || isString(ty)):
		return "date"
	case k == tTime && (ty == nil || isString(ty)):
		return "timestamp"
	case k == tTime || k == tDate:
		// Into a TIMESTAMP, TIMESTAMP_LTZ or BIGINT column, as below.
	case k != tTimeLTZ:
		return ""
	}
	switch {
	case ty == nil, ty.Name == "TIMESTAMP_LTZ", ty.Name == "TIMESTAMP" && ty.LocalTZ:
		return "timestamp_ltz"
	case ty.Name == "TIMESTAMP", ty.Name == "STRING", ty.Name == "VARCHAR":
		return "timestamp"
	}
	return "ms"
}

// setComputedType records field (or aggregate) name's type.
func (c *compiler) setComputedType(name string, t numType) {
	if c.computedTypes == nil {
		c.computedTypes = map[string]numType{}
	}
	c.computedTypes[name] = t
}

// aggType is the type of aggregate fn (the spec's) of an argument of
// type t, as Flink's: SUM of a DECIMAL(p, s) a DECIMAL(38, s), AVG a
// DECIMAL(38, max(6, s)), MIN, MAX, FIRST_VALUE and LAST_VALUE the
// argument's (a TIMESTAMP_LTZ stays one: a row writes it as a time),
// the counts BIGINT; unknown otherwise (weir's AVG of integers is a
// float).
func aggType(fn string, t numType) numType {
	switch fn {
	case "sum":
		if t.kind == tDec {
			return numType{kind: tDec, p: maxPrecision, s: t.s}
		}
		if t.kind == tInt {
			return numType{kind: tInt, p: 19}
		}
		if t.kind == tFloat {
			return t
		}
	case "avg":
		if t.kind == tDec {
			return numType{kind: tDec, p: maxPrecision, s: max(minAdjustedScale, t.s)}
		}
		if t.kind == tFloat {
			return t
		}
	case "min", "max", "first", "last", "first_value", "last_value":
		return t
	case "count", "count_distinct":
		return numType{kind: tInt, p: 19}
	}
	return numType{}
}

// resultRef reports whether ref names an aggregate of a result
// expression (resultExpr's _weir_agg_N).
func resultRef(ref *sqlparse.Ref) bool {
	return len(ref.Parts) == 1 && strings.HasPrefix(ref.Parts[0].Name, "_weir_agg_")
}

// timeAttrLTZ reports whether the time attribute is a TIMESTAMP_LTZ(3)
// (timeAttrType's).
func (c *compiler) timeAttrLTZ() bool { return c.attrLTZ }

// timeAttrType is the type of the table's time attribute as a query
// without a window selects it: a TIMESTAMP_LTZ(3) (TO_TIMESTAMP_LTZ, a
// TIMESTAMP_LTZ(3) column, the Kafka record time, PROCTIME()), else a
// TIMESTAMP(3).
func (c *compiler) timeAttrType(pos sqlparse.Pos) *sqlparse.Type {
	if c.attrLTZ {
		return &sqlparse.Type{Pos: pos, Name: "TIMESTAMP_LTZ", Params: []int{3}}
	}
	return &sqlparse.Type{Pos: pos, Name: "TIMESTAMP", Params: []int{3}}
}

// sinkCast is expression x (the text of a results column's expression,
// or a field's name) as written into sink column col: cast to its type
// when that is a DECIMAL(p, s), as Flink's insert casts.
func (c *compiler) sinkCast(x string, col *sqlparse.Column) string {
	if isRowType(col.Type) {
		// A ROW column holds its declared fields alone, in their order,
		// a missing one null, as Flink reads and writes a ROW (a
		// record's other fields are not passed through).
		return "WEIR_ROW(" + x + ", '" + strings.ReplaceAll(rowFields(col.Type), "'", "''") + "')"
	}
	t := typeOfSQL(col.Type)
	if t.kind != tDec {
		return x
	}
	e, err := sqlparse.ParseExpr(x)
	if err != nil {
		return x
	}
	if cast, ok := e.(*sqlparse.Cast); ok && typeOfSQL(cast.Type) == t {
		return x
	}
	return sqlparse.FormatExpr(decimalCast(e, t))
}

// isRowType reports whether t is a ROW type with fields.
func isRowType(t *sqlparse.Type) bool {
	return t != nil && strings.EqualFold(t.Name, "ROW") && len(t.Fields) > 0
}

// rowFields is WEIR_ROW's fields argument for ROW type t
// (expr.RowFields).
func rowFields(t *sqlparse.Type) string {
	names := make([]string, len(t.Fields))
	nested := make([]string, len(t.Fields))
	for i, f := range t.Fields {
		names[i] = f.Name.Name
		if isRowType(f.Type) {
			nested[i] = rowFields(f.Type)
		}
	}
	return expr.RowFields(names, nested)
}
