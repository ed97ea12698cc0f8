// Package expr compiles a SQL expression (internal/sqlparse's AST) over
// a JSON record's fields into a predicate evaluated per record: a job
// spec's where, a SQL job's WHERE. Compiled once, evaluated without
// allocating: fields are read from the record's parsed values (fastjson)
// that the decoder gathers, strings compared as bytes.
//
// Values are SQL's: NULL (a missing field too), booleans, numbers (int64
// while exact, float64 beyond: a fraction, an overflow) and strings.
// Logic is three-valued: a predicate keeps a record only when it is TRUE.
// An operation on NULL is NULL; so is a comparison of a number with a
// string, a division by zero, and a value of another type than an
// operator takes (Flink would refuse some of them at planning, knowing
// the columns' types; a JSON record has none).
package expr

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/internal/sqlparse"
	"github.com/weirstream/weir/internal/suggest"
)

type kind uint8

const (
	null kind = iota
	boolean
	integer
	float
	str
	raw     // an object or array, as the record holds it
	decimal // i / 10^sc, exactly: a number with a fraction of up to 18 digits
	// bigdec is a DECIMAL(p, s) beyond decimal's 18 digits: its text s
	// (at its scale) and f, the float64 nearest it, which arithmetic
	// and comparisons use.
	bigdec
)

// value is one SQL value; s aliases the record's text or a literal's.
type value struct {
	k  kind
	b  bool
	i  int64
	f  float64
	s  []byte
	r  *fastjson.Value // raw
	sc uint8           // decimal's scale
}

func (v value) num() float64 {
	switch v.k {
	case integer:
		return float64(v.i)
	case decimal:
		return float64(v.i) / pow10[v.sc]
	}
	return v.f
}

func (v value) isNum() bool {
	return v.k == integer || v.k == float || v.k == decimal || v.k == bigdec
}

// exact reports whether v is an integer or a decimal: a mantissa and a
// scale (0 for an integer).
func (v value) exact() (int64, uint8, bool) {
	switch v.k {
	case integer:
		return v.i, 0, true
	case decimal:
		return v.i, v.sc, true
	}
	return 0, 0, false
}

// pow10 are the powers of ten a decimal's scale takes.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18}

// maxScale is the largest scale of a decimal value.
const maxScale = 18

// rescale is mantissa m at scale from as one at scale to (to >= from),
// false when it overflows int64.
func rescale(m int64, from, to uint8) (int64, bool) {
	for ; from < to; from++ {
		if m > math.MaxInt64/10 || m < math.MinInt64/10 {
			return 0, false
		}
		m *= 10
	}
	return m, true
}

// dec is the decimal m / 10^sc, an integer when sc is 0.
func dec(m int64, sc uint8) value {
	if sc == 0 {
		return value{k: integer, i: m}
	}
	return value{k: decimal, i: m, sc: sc}
}

// appendDecimal renders a decimal as a JSON number.
func appendDecimal(b []byte, m int64, sc uint8) []byte {
	if m < 0 {
		b = append(b, '-')
	}
	u := uint64(m)
	if m < 0 {
		u = -u
	}
	var digits [24]byte
	d := strconv.AppendUint(digits[:0], u, 10)
	for len(d) <= int(sc) {
		d = append([]byte{'0'}, d...)
	}
	n := len(d) - int(sc)
	b = append(b, d[:n]...)
	b = append(b, '.')
	return append(b, d[n:]...)
}

var nullV = value{}

func boolV(b bool) value { return value{k: boolean, b: b} }

// eval evaluates a compiled expression over a record's gathered fields.
type eval func(got []*fastjson.Value) value

// Pred is a compiled predicate.
type Pred struct{ e eval }

// Keep reports whether the record whose fields are got (as the field
// function given to Compile numbered them) satisfies the predicate:
// true when it is TRUE, false when FALSE or NULL.
func (p *Pred) Keep(got []*fastjson.Value) bool {
	v := p.e(got)
	return v.k == boolean && v.b
}

// Functions are the functions an expression may call. TO_TIMESTAMP_LTZ
// (n, 3) is n, (n, 0) n * 1000: times are epoch milliseconds here.
var Functions = []string{"ABS", "CEIL", "CEILING", "CHAR_LENGTH", "COALESCE", "CONCAT", "CONCAT_WS", "DATE_FORMAT", "DAYOFMONTH", "DAYOFWEEK", "DAYOFYEAR", "FLOOR", "FROM_UNIXTIME", "GREATEST",
	"HOUR", "IF", "INITCAP", "LEAST", "LEFT", "LOCATE", "LOWER", "LPAD", "LTRIM", "MINUTE", "MOD", "MONTH", "NULLIF", "POWER", "QUARTER", "REGEXP_EXTRACT", "REGEXP_REPLACE", "REPLACE", "ROUND", "RIGHT", "RPAD", "RTRIM", "SECOND",
	"SPLIT_INDEX", "SUBSTR", "SUBSTRING", "TIMESTAMPDIFF", "TO_TIMESTAMP", "TO_TIMESTAMP_LTZ", "TRIM", "UPPER", "WEEK", "YEAR"}

// stringFunctions are the Functions whose value is a string (or NULL)
// whatever their arguments.
var stringFunctions = map[string]bool{"CONCAT": true, "CONCAT_WS": true, "REGEXP_EXTRACT": true, "SUBSTRING": true, "SUBSTR": true, "TRIM": true, "LTRIM": true, "RTRIM": true,
	"REPLACE": true, "LOWER": true, "UPPER": true, "DATE_FORMAT": true, "FROM_UNIXTIME": true,
	"REGEXP_REPLACE": true, "LPAD": true, "RPAD": true, "INITCAP": true, "SPLIT_INDEX": true, "LEFT": true, "RIGHT": true}

// upper is UPPER's: Unicode's upper case, with ß as SS, as Java's
// toUpperCase (Flink's) writes it, where Go's simple mapping keeps ß.
func upper(s []byte) []byte {
	u := bytes.ToUpper(s)
	if bytes.Contains(u, []byte("ß")) {
		u = bytes.ReplaceAll(u, []byte("ß"), []byte("SS"))
	}
	return u
}

// ReturnsString reports whether function name (upper case) always
// returns a string, which the SQL front end types as STRING.
func ReturnsString(name string) bool { return stringFunctions[name] }

// Expr is a compiled expression whose value a computed field takes.
type Expr struct {
	e eval
	// get (nil: x is no plain reference) reads a field that x names
	// without a decimal scale: Value passes its value on as it is where
	// evaluating it would write the same JSON (verbatim).
	get func(g []*fastjson.Value) *fastjson.Value
}

// CompileValue compiles x as Compile does, for its value.
func CompileValue(x sqlparse.Expr, field func(col sqlparse.Ident) (int, *sqlparse.Error), opts ...Option) (*Expr, error) {
	p, err := Compile(x, field, opts...)
	if err != nil {
		return nil, err
	}
	e := &Expr{e: p.e}
	if r, ok := x.(*sqlparse.Ref); ok {
		c := newCompiler(field, opts)
		if _, typed := c.typedSlot(r); typed {
			return e, nil // no field to pass on as it is
		}
		if _, dec := c.fieldScale(r); !dec {
			at, _ := field(r.Parts[0]) // resolved by Compile above
			e.get = getter(at, r)
		}
	}
	return e, nil
}

// Value is the expression's value over the record's fields got, as a
// JSON value made in a (valid until a is reset; an object or array the
// record holds, and a field's own value that would be written alike, are
// returned as they are).
func (x *Expr) Value(a *fastjson.Arena, got []*fastjson.Value) *fastjson.Value {
	if x.get != nil {
		if v := x.get(got); verbatim(v) {
			return v
		}
	}
	v := x.e(got)
	switch v.k {
	case boolean:
		if v.b {
			return a.NewTrue()
		}
		return a.NewFalse()
	case integer:
		return a.NewNumberInt(int(v.i))
	case float:
		if math.IsInf(v.f, 0) || math.IsNaN(v.f) {
			return a.NewNull()
		}
		return a.NewNumberFloat64(v.f)
	case decimal:
		var buf [48]byte
		return a.NewNumberString(string(appendDecimal(buf[:0], v.i, v.sc)))
	case bigdec:
		return a.NewNumberString(string(v.s))
	case str:
		if ArenaSafe(unsafe.String(unsafe.SliceData(v.s), len(v.s))) {
			return a.NewStringBytes(v.s)
		}
		// The arena would escape it as Go does (\x01, \v), which no
		// JSON reader takes back: a string parsed from its JSON text
		// instead (rare: an allocation).
		j, err := fastjson.ParseBytes(appendJSONText(nil, v.s))
		if err != nil {
			return a.NewNull()
		}
		return j
	case raw:
		return v.r
	}
	return a.NewNull()
}

// ArenaSafe reports whether fastjson's arena (Arena.NewString) keeps
// text s as it is: it escapes it as Go's strconv.Quote does, which JSON
// reads back only for text without control characters but \b, \f, \n, \r
// and \t, without DEL, in valid UTF-8, and without unprintable runes
// beyond the BMP.
func ArenaSafe(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\b' && c != '\f' && c != '\n' && c != '\r' && c != '\t' || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || r > 0xffff && !strconv.IsPrint(r) {
			return false
		}
		i += n
	}
	return true
}

// appendJSONText appends s as a JSON string: quotes and backslashes
// escaped, control characters and DEL as \u escapes, other bytes as
// they are.
func appendJSONText(b, s []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20 || c == 0x7f:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// Compile compiles x, resolving each column it names (the first part of
// a dotted name; the rest are nested fields) through field, which returns
// the index of that top-level field in the values Keep is given, or the
// *sqlparse.Error that says why it cannot be read. Its errors are
// *sqlparse.Error, at their place in x.
//
// Options tell the compiler more of the fields (Decimals).
func Compile(x sqlparse.Expr, field func(col sqlparse.Ident) (int, *sqlparse.Error), opts ...Option) (p *Pred, err error) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(*sqlparse.Error)
			if !ok {
				panic(r)
			}
			p, err = nil, e
		}
	}()
	return &Pred{e: newCompiler(field, opts).expr(x)}, nil
}

// newCompiler is a compiler of the fields field resolves, told more of
// them by opts.
func newCompiler(field func(col sqlparse.Ident) (int, *sqlparse.Error), opts []Option) compiler {
	c := compiler{field: field}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// An Option tells Compile more of the fields.
type Option func(*compiler)

// Decimals names the fields that hold DECIMAL(p, s) values and their
// scales (a nested object's by its dotted name, ship.fee): a reference to one is a decimal at that scale (3.00 stays
// 3.00, not the integer 3), and a quotient cast to a DECIMAL with one
// (or a decimal literal, or a cast to DECIMAL) as either operand is a
// decimal division (CAST(price / qty AS DECIMAL(21, 13))), as Flink
// divides decimals, where two integers divide as integers.
func Decimals(scale func(field string) (int, bool)) Option {
	return func(c *compiler) { c.scale = scale }
}

// DecimalScale reports whether x is a cast to DECIMAL(p, s), and s.
func DecimalScale(x sqlparse.Expr) (int, bool) {
	c, ok := x.(*sqlparse.Cast)
	if !ok || !isDecimalType(c.Type.Name) {
		return 0, false
	}
	if len(c.Type.Params) == 2 {
		return c.Type.Params[1], true
	}
	return 0, true
}

// isDecimalType reports whether a type's name is DECIMAL's.
func isDecimalType(name string) bool {
	switch strings.ToUpper(name) {
	case "DECIMAL", "DEC", "NUMERIC":
		return true
	}
	return false
}

type compiler struct {
	field func(sqlparse.Ident) (int, *sqlparse.Error)
	// scale gives a decimal field's scale (nil: no field is one).
	scale func(string) (int, bool)
	// timeField, timeMillis: the field holding the event time as a
	// number of another unit than milliseconds, and its conversion.
	timeField  string
	timeMillis func(value) (int64, bool)
	// timeNames are fields that hold times as epoch milliseconds (a
	// window's bounds), which a string literal compares with as a time.
	timeNames []string
	// onNull (nil: none) is OnNull's.
	onNull NullNote
	// cols and column (nil: none) are Typed's.
	cols   *Columns
	column func(name string) (int, bool)
}

// Columns are the values of a typed record's columns (a source's typed
// records, connector.TypedRecord), by slot, that expressions compiled
// with Typed over them read. Its owner sets them before each evaluation;
// they are not safe for concurrent use (a set per evaluating goroutine,
// with its own compiled expressions).
type Columns struct{ v []value }

// NewColumns returns n column slots, each null.
func NewColumns(n int) *Columns { return &Columns{v: make([]value, n)} }

// SetNull sets slot i to NULL.
func (c *Columns) SetNull(i int) { c.v[i] = nullV }

// SetInt sets slot i to the integer x.
func (c *Columns) SetInt(i int, x int64) { c.v[i] = value{k: integer, i: x} }

// SetString sets slot i to the string s, which must not change while
// the slot holds it.
func (c *Columns) SetString(i int, s string) {
	c.v[i] = value{k: str, s: unsafe.Slice(unsafe.StringData(s), len(s))}
}

// Typed makes a reference whose dotted name column resolves read slot
// of cols, the typed record's value there, which must be the value the
// record's JSON form holds there as a JSON number (an integer) or string
// (its text) would be read: so the expressions give what they would over
// the JSON form. Other references read the fields given to Keep and
// Value, as without it. A reference to a decimal field (Decimals) that
// column resolves is a compile error.
func Typed(cols *Columns, column func(name string) (slot int, ok bool)) Option {
	return func(c *compiler) { c.cols, c.column = cols, column }
}

// typedSlot is the slot of cols that x reads under Typed, if any.
func (c compiler) typedSlot(x *sqlparse.Ref) (int, bool) {
	if c.column == nil {
		return 0, false
	}
	return c.column(refName(x))
}

// TimeNames says that fields names hold times as epoch milliseconds (a
// window's bounds): compared with one, a string literal is a time, as
// Flink casts '2026-01-01 00:01:00' compared with a TIMESTAMP; one that
// is no time is a compile error.
func TimeNames(names ...string) Option {
	return func(c *compiler) { c.timeNames = names }
}

// timeStrings rewrites, in a comparison of x and y, a string literal
// compared with a field of timeNames as the TIMESTAMP literal it means.
func (c compiler) timeStrings(xs ...sqlparse.Expr) []sqlparse.Expr {
	if !slices.ContainsFunc(xs, c.timeNamed) {
		return xs
	}
	out := slices.Clone(xs)
	for i, x := range out {
		if l, ok := x.(*sqlparse.Lit); ok && l.Kind == "string" {
			ms, ok := sqlMillis([]byte(l.Text))
			if !ok {
				c.fail(l.Pos, "'"+l.Text+"'", "write a time such as '2026-01-01 00:01:00', or TIMESTAMP '2026-01-01 00:01:00'", "'%s' is compared with a time and is none", l.Text)
			}
			out[i] = &sqlparse.Lit{Pos: l.Pos, Kind: "number", Text: strconv.FormatInt(ms, 10)}
		}
	}
	return out
}

// timeNamed reports whether x is a time of timeNames: one of them, one
// moved by an INTERVAL, or a CASE, COALESCE, IF or NULLIF that gives one
// (an outer join's padded bound).
func (c compiler) timeNamed(x sqlparse.Expr) bool {
	switch x := x.(type) {
	case *sqlparse.Ref:
		return len(x.Parts) == 1 && slices.Contains(c.timeNames, x.Parts[0].Name)
	case *sqlparse.Binary:
		ivX, ivY := sqlparse.IsInterval(x.X), sqlparse.IsInterval(x.Y)
		return ivY && (x.Op == "+" || x.Op == "-") && c.timeNamed(x.X) || ivX && x.Op == "+" && c.timeNamed(x.Y)
	case *sqlparse.Case:
		if x.Else != nil && c.timeNamed(x.Else) {
			return true
		}
		return slices.ContainsFunc(x.Whens, func(w sqlparse.When) bool { return c.timeNamed(w.Result) })
	case *sqlparse.Call:
		switch strings.ToUpper(x.Name.Parts[len(x.Name.Parts)-1].Name) {
		case "COALESCE", "IF", "NULLIF", "GREATEST", "LEAST":
			return slices.ContainsFunc(x.Args, func(a sqlparse.Arg) bool { return c.timeNamed(a.Value) })
		}
	}
	return false
}

// TimeField says that field holds the event time as a number of a unit
// of unitMillis milliseconds (seconds: 1000), or of 1/perMilli of one
// (microseconds: perMilli 1000): compared with a TIMESTAMP or DATE
// literal, or moved by an INTERVAL, its number is read so, a fraction
// and a time before 1970 rounded down as the decoder reads the event
// time. A field holding epoch milliseconds, or a time's text, needs none.
func TimeField(field string, unitMillis, perMilli int64) Option {
	return func(c *compiler) {
		if unitMillis <= 1 && perMilli <= 1 {
			return
		}
		c.timeField = field
		c.timeMillis = func(v value) (int64, bool) {
			switch {
			case v.k == integer && perMilli > 1:
				q := v.i / perMilli
				if v.i%perMilli < 0 {
					q--
				}
				return q, true
			case v.k == integer:
				return v.i * unitMillis, true
			case v.isNum():
				f := math.Floor(v.num() * float64(unitMillis) / float64(max(perMilli, 1)))
				if f >= math.MinInt64 && f < math.MaxInt64 {
					return int64(f), true
				}
			}
			return 0, false
		}
	}
}

// asTime is e, x's compiled form, read as a time for a comparison with a
// time literal: the event-time field in its unit (TimeField), else as
// millis reads a value.
func (c compiler) asTime(x sqlparse.Expr, e eval) eval {
	if r, ok := x.(*sqlparse.Ref); ok && c.timeMillis != nil && len(r.Parts) == 1 && r.Parts[0].Name == c.timeField {
		conv := c.timeMillis
		return func(g []*fastjson.Value) value {
			v := e(g)
			if v.isNum() {
				if ms, ok := conv(v); ok {
					return value{k: integer, i: ms}
				}
				return nullV
			}
			if ms, ok := millis(v); ok {
				return value{k: integer, i: ms}
			}
			return nullV
		}
	}
	return asTime(e)
}

// decimal reports whether x is a decimal by its form: a decimal
// literal, a decimal field, a cast to DECIMAL, or arithmetic, a sign,
// a CASE or ABS, ROUND, COALESCE, IF or NULLIF of one (and no float).
func (c compiler) decimal(x sqlparse.Expr) bool {
	switch x := x.(type) {
	case *sqlparse.Lit:
		return x.Kind == "number" && strings.Contains(x.Text, ".") && !strings.ContainsAny(x.Text, "eE")
	case *sqlparse.Ref:
		_, ok := c.fieldScale(x)
		return ok
	case *sqlparse.Cast:
		return isDecimalType(x.Type.Name)
	case *sqlparse.Unary:
		return x.Op != "NOT" && c.decimal(x.X)
	case *sqlparse.Binary:
		switch x.Op {
		case "+", "-", "*", "/", "%":
			return c.decimal(x.X) || c.decimal(x.Y)
		}
	case *sqlparse.Case:
		for _, w := range x.Whens {
			if c.decimal(w.Result) {
				return true
			}
		}
		return x.Else != nil && c.decimal(x.Else)
	case *sqlparse.Call:
		switch strings.ToUpper(x.Name.Parts[len(x.Name.Parts)-1].Name) {
		case "ABS", "ROUND", "COALESCE", "IF", "NULLIF", "GREATEST", "LEAST":
			for _, a := range x.Args {
				if c.decimal(a.Value) {
					return true
				}
			}
		}
	}
	return false
}

func (c compiler) fail(pos sqlparse.Pos, text, hint, format string, args ...any) {
	panic(&sqlparse.Error{Pos: pos, Text: text, Hint: hint, Msg: fmt.Sprintf(format, args...)})
}

func (c compiler) expr(x sqlparse.Expr) eval {
	switch x := x.(type) {
	case *sqlparse.Lit:
		v := c.lit(x)
		return func([]*fastjson.Value) value { return v }
	case *sqlparse.TypedLit:
		v := c.timeLit(x)
		return func([]*fastjson.Value) value { return v }
	case *sqlparse.Interval:
		v := c.interval(x)
		return func([]*fastjson.Value) value { return v }
	case *sqlparse.Ref:
		return c.ref(x)
	case *sqlparse.Unary:
		return c.unary(x)
	case *sqlparse.Binary:
		return c.binary(x)
	case *sqlparse.IsNull:
		return c.isNull(x)
	case *sqlparse.Between:
		xs := c.timeStrings(x.X, x.Lo, x.Hi)
		x = &sqlparse.Between{Pos: x.Pos, X: xs[0], Lo: xs[1], Hi: xs[2], Not: x.Not}
		e, lo, hi := c.expr(x.X), c.expr(x.Lo), c.expr(x.Hi)
		if ts := c.timed([]sqlparse.Expr{x.X, x.Lo, x.Hi}, []eval{e, lo, hi}); ts != nil {
			e, lo, hi = ts[0], ts[1], ts[2]
		}
		nlo, nhi := numericLit(x.Lo), numericLit(x.Hi)
		not := x.Not
		return func(g []*fastjson.Value) value {
			x := e(g)
			v := and(cmpOp(">=", x, against(nlo, lo(g), x)), cmpOp("<=", x, against(nhi, hi(g), x)))
			if not {
				return notV(v)
			}
			return v
		}
	case *sqlparse.In:
		if xs := c.timeStrings(append([]sqlparse.Expr{x.X}, x.List...)...); len(xs) > 0 {
			x = &sqlparse.In{Pos: x.Pos, X: xs[0], List: xs[1:], Not: x.Not}
		}
		e := c.expr(x.X)
		list := make([]eval, len(x.List))
		for i, l := range x.List {
			list[i] = c.expr(l)
		}
		if ts := c.timed(append([]sqlparse.Expr{x.X}, x.List...), append([]eval{e}, list...)); ts != nil {
			e, list = ts[0], ts[1:]
		}
		nums := make([]*value, len(x.List))
		for i, l := range x.List {
			nums[i] = numericLit(l)
		}
		not := x.Not
		return func(g []*fastjson.Value) value {
			v, r := e(g), boolV(false)
			for i, l := range list {
				r = or(r, cmpOp("=", v, against(nums[i], l(g), v)))
				if r.k == boolean && r.b {
					break
				}
			}
			if not {
				return notV(r)
			}
			return r
		}
	case *sqlparse.Case:
		return c.caseExpr(x)
	case *sqlparse.Cast:
		return c.cast(x)
	case *sqlparse.Call:
		return c.call(x)
	}
	c.fail(sqlparse.ExprPos(x), sqlparse.FormatExpr(x), "filter with comparisons, AND, OR, NOT, IN, BETWEEN, LIKE, IS NULL, CASE, CAST, arithmetic and "+strings.Join(Functions, ", "),
		"this expression is not supported in weir's expressions")
	return nil
}

func (c compiler) lit(x *sqlparse.Lit) value {
	switch x.Kind {
	case "string":
		return value{k: str, s: []byte(x.Text)}
	case "number":
		return number([]byte(x.Text))
	case "true", "false":
		return boolV(x.Kind == "true")
	case "null":
		return nullV
	}
	c.fail(x.Pos, x.Text, "", "a %s literal is not supported in weir's expressions", x.Kind)
	return nullV
}

// timeLit is TIMESTAMP 'yyyy-MM-dd HH:mm:ss[.fff]' or DATE
// 'yyyy-MM-dd' as epoch milliseconds (in UTC, weir's only time zone), a
// time as TO_TIMESTAMP_LTZ and a window bound are.
func (c compiler) timeLit(x *sqlparse.TypedLit) value {
	layouts := map[string][]string{"TIMESTAMP": {"2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05", "2006-01-02 15:04"}, "DATE": {"2006-01-02"}}[x.Type]
	if layouts == nil {
		c.fail(x.Pos, x.Type, "compare with a TIMESTAMP 'yyyy-MM-dd HH:mm:ss' or DATE 'yyyy-MM-dd' literal", "a %s literal is not supported in weir's expressions", x.Type)
	}
	for _, l := range layouts {
		if t, err := time.Parse(l, x.Text); err == nil {
			if t.Nanosecond()%1e6 != 0 {
				c.fail(x.Pos, x.Text, "write at most 3 fraction digits: weir's times are milliseconds", "%q has a fraction of a millisecond", x.Text)
			}
			return value{k: integer, i: t.UnixMilli()}
		}
	}
	c.fail(x.Pos, x.Text, "write "+map[string]string{"TIMESTAMP": "TIMESTAMP '2026-01-01 00:05:00' (or with .fff)", "DATE": "DATE '2026-01-01'"}[x.Type], "%q is not a %s", x.Text, x.Type)
	return nullV
}

// intervalMillis are the milliseconds of the units an INTERVAL literal
// may have in an expression (a fixed length of time).
var intervalMillis = map[string]int64{"MILLISECOND": 1, "SECOND": 1000, "MINUTE": 60_000, "HOUR": 3_600_000, "DAY": 86_400_000}

// interval is INTERVAL 'n' unit as its milliseconds, which a time (epoch
// milliseconds) adds: window_end - INTERVAL '1' SECOND.
func (c compiler) interval(x *sqlparse.Interval) value {
	unit, ok := intervalMillis[strings.ToUpper(x.Unit)]
	// An amount with a fraction ('0.5' SECOND, '1.5' MINUTE) is one of
	// whole milliseconds.
	var err error
	var n int64
	if r, rok := new(big.Rat).SetString(strings.TrimSpace(x.Value)); !rok {
		err = strconv.ErrSyntax
	} else if ms := new(big.Rat).Mul(r, new(big.Rat).SetInt64(max(unit, 1))); !ms.IsInt() || !ms.Num().IsInt64() {
		err = strconv.ErrRange
	} else {
		n, unit = ms.Num().Int64(), 1
	}
	switch {
	case x.To != "" || !ok:
		unit := x.Unit
		if x.To != "" {
			unit += " TO " + x.To
		}
		c.fail(x.Pos, "INTERVAL", "write INTERVAL 'n' SECOND, MINUTE, HOUR or DAY", "INTERVAL '%s' %s is not a fixed length of time weir's expressions take", x.Value, unit)
	case err != nil:
		c.fail(x.Pos, "INTERVAL", "write an amount of whole milliseconds, such as INTERVAL '1.5' SECOND", "INTERVAL '%s' %s is not a whole number of milliseconds", x.Value, x.Unit)
	}
	return value{k: integer, i: n * unit}
}

// timed reads es, the compiled xs, as times (asTime) when one of xs is a
// TIMESTAMP or DATE literal: a comparison (BETWEEN, IN, GREATEST) with
// one compares times. It returns nil when none is.
func (c compiler) timed(xs []sqlparse.Expr, es []eval) []eval {
	if !slices.ContainsFunc(xs, func(x sqlparse.Expr) bool { _, ok := x.(*sqlparse.TypedLit); return ok }) {
		return nil
	}
	out := make([]eval, len(es))
	for i := range es {
		out[i] = c.asTime(xs[i], es[i])
	}
	return out
}

// asTime reads e's value as a time (millis: epoch milliseconds, or a
// TIMESTAMP's text as a record holds it), NULL when it is none.
func asTime(e eval) eval {
	return func(g []*fastjson.Value) value {
		if ms, ok := millis(e(g)); ok {
			return value{k: integer, i: ms}
		}
		return nullV
	}
}

// number reads a number's text: an int64 when it is a whole number
// within range, else a float64.
func number(b []byte) value {
	whole, ok := len(b) > 0, len(b) > 0
	for i, c := range b {
		switch {
		case c >= '0' && c <= '9':
		case (c == '-' || c == '+') && (i == 0 || b[i-1] == 'e' || b[i-1] == 'E'):
			whole = whole && i == 0
		case c == '.' || c == 'e' || c == 'E':
			whole = false
		default:
			ok = false
		}
	}
	if !ok { // not a number: no parser error to allocate
		return nullV
	}
	if whole {
		if i, err := strconv.ParseInt(string(b), 10, 64); err == nil {
			return value{k: integer, i: i}
		}
	}
	if v, ok := parseDecimal(b); ok {
		return v
	}
	if v, ok := parseBigDecimal(b); ok {
		return v
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return nullV
	}
	return value{k: float, f: f}
}

// parseDecimal reads d.ddd (a sign, digits, one point, no exponent) of up
// to 18 significant digits as a decimal.
func parseDecimal(b []byte) (value, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg || len(b) > 0 && b[0] == '+' {
		b = b[1:]
	}
	var m int64
	sc, point, digits := uint8(0), false, 0
	for _, c := range b {
		switch {
		case c == '.' && !point:
			point = true
		case c >= '0' && c <= '9':
			if m == 0 && c == '0' && !point {
				continue // leading zeros
			}
			if digits++; digits > maxScale {
				return nullV, false
			}
			m = m*10 + int64(c-'0')
			if point {
				sc++
			}
		default:
			return nullV, false
		}
	}
	if !point || sc > maxScale {
		return nullV, false
	}
	if neg {
		m = -m
	}
	return dec(m, sc), true
}

// parseBigDecimal reads a whole number beyond int64 or d.ddd (a sign,
// digits, at most one point, no exponent) of up to 38 significant
// digits, beyond parseDecimal's 18, exactly (a bigdec), as Flink reads
// a DECIMAL literal or casts a string to a DECIMAL.
func parseBigDecimal(b []byte) (value, bool) {
	t := b
	if len(t) > 0 && (t[0] == '-' || t[0] == '+') {
		t = t[1:]
	}
	sc, point := 0, false
	for _, c := range t {
		switch {
		case c == '.' && !point:
			point = true
		case c >= '0' && c <= '9':
			if point {
				sc++
			}
		default:
			return nullV, false
		}
	}
	r, ok := new(big.Rat).SetString(string(b))
	if !ok || sc > 38 {
		return nullV, false
	}
	m := new(big.Int).Mul(r.Num(), pow10Int(sc))
	m.Quo(m, r.Denom())
	if v := decimalOf(m, 38, sc); v.k != null {
		return v, true
	}
	return nullV, false
}

func (c compiler) ref(x *sqlparse.Ref) eval {
	if slot, ok := c.typedSlot(x); ok {
		if _, dec := c.fieldScale(x); dec {
			panic(&sqlparse.Error{Pos: x.Parts[0].Pos, Text: refName(x), Msg: "a typed column read as a DECIMAL"})
		}
		cols := c.cols
		return func([]*fastjson.Value) value { return cols.v[slot] }
	}
	at, err := c.field(x.Parts[0])
	if err != nil {
		panic(err)
	}
	get := getter(at, x)
	if sc, ok := c.fieldScale(x); ok {
		return func(g []*fastjson.Value) value { return decimalField(get(g), sc) }
	}
	return func(g []*fastjson.Value) value { return fromJSON(get(g)) }
}

// getter reads the field x names, whose first part is at index at of
// the fields.
func getter(at int, x *sqlparse.Ref) func(g []*fastjson.Value) *fastjson.Value {
	var path []string
	for _, p := range x.Parts[1:] {
		path = append(path, p.Name)
	}
	return func(g []*fastjson.Value) *fastjson.Value {
		v := g[at]
		if v != nil && len(path) > 0 {
			v = v.Get(path...)
		}
		return v
	}
}

// verbatim reports whether v, a field's value, is the JSON that Value
// would make of it (fromJSON, then back): a string, a boolean, an object
// or array, or a whole number written plainly within float64's exact
// integers. A number written otherwise (1.50, 1e3) is read and written
// again; a missing field is a null.
func verbatim(v *fastjson.Value) bool {
	if v == nil {
		return false
	}
	switch v.Type() {
	case fastjson.TypeString, fastjson.TypeTrue, fastjson.TypeFalse, fastjson.TypeObject, fastjson.TypeArray:
		return true
	case fastjson.TypeNumber:
		var buf [24]byte
		t := v.MarshalTo(buf[:0])
		neg := len(t) > 0 && t[0] == '-'
		if neg {
			t = t[1:]
		}
		if len(t) == 0 || len(t) > 15 || t[0] == '0' && (len(t) > 1 || neg) {
			return false
		}
		for _, c := range t {
			if c < '0' || c > '9' {
				return false
			}
		}
		return true
	}
	return false
}

// refName is x's field name: its parts joined by dots (ship.fee, a
// field of a nested object).
func refName(x *sqlparse.Ref) string {
	names := make([]string, len(x.Parts))
	for i, p := range x.Parts {
		names[i] = p.Name
	}
	return strings.Join(names, ".")
}

// fieldScale is the scale of x when it names a decimal field.
func (c compiler) fieldScale(x *sqlparse.Ref) (uint8, bool) {
	if c.scale == nil {
		return 0, false
	}
	sc, ok := c.scale(refName(x))
	return uint8(sc), ok && sc <= maxScale
}

// decimalField is the value of a decimal field at scale sc: exactly,
// also beyond the 15 significant digits a float64 keeps (the field's
// text then, as the decoder rounded it; read again, which allocates).
func decimalField(v *fastjson.Value, sc uint8) value {
	d := fromJSON(v)
	if m, _, ok := d.exact(); ok && m < 1e14 && m > -1e14 {
		return atScale(d, sc)
	}
	if v == nil || v.Type() != fastjson.TypeNumber {
		return d
	}
	t := v.MarshalTo(nil)
	if e, ok := parseDecimal(t); ok {
		return atScale(e, sc)
	}
	if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
		return atScale(value{k: integer, i: i}, sc)
	}
	if r, ok := new(big.Rat).SetString(string(t)); ok {
		return decimalOf(roundRat(r, int(sc)), 38, int(sc))
	}
	return d
}

// atScale is a decimal field's value v at the field's scale sc (which v,
// read as the field's rounded text, does not exceed): 3 is 3.00 at
// scale 2. A value that would leave int64 stays as it is.
func atScale(v value, sc uint8) value {
	m, have, ok := v.exact()
	if !ok || have >= sc || sc == 0 {
		return v
	}
	if m, ok := rescale(m, have, sc); ok {
		return value{k: decimal, i: m, sc: sc}
	}
	return v
}

// fromJSON is a JSON value as a SQL value (an object or array: one
// that operators take as NULL, and a computed field passes on whole).
func fromJSON(v *fastjson.Value) value {
	if v == nil {
		return nullV
	}
	switch v.Type() {
	case fastjson.TypeTrue:
		return boolV(true)
	case fastjson.TypeFalse:
		return boolV(false)
	case fastjson.TypeString:
		return value{k: str, s: v.GetStringBytes()}
	case fastjson.TypeObject, fastjson.TypeArray:
		return value{k: raw, r: v}
	case fastjson.TypeNumber:
		// A whole number within float64's exact integers is an int64;
		// beyond them, Int64 says whether it is one (it allocates its
		// error when not: rare).
		f := v.GetFloat64()
		if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return value{k: integer, i: int64(f)}
		}
		if math.Abs(f) >= 1<<53 {
			// Beyond float64's exact integers, the record's own text
			// exactly: an int64, or a decimal of up to 38 digits (a
			// SUM of a DECIMAL(38, 2) in a result; it allocates: rare).
			if i, err := v.Int64(); err == nil {
				return value{k: integer, i: i}
			}
			if d, ok := parseBigDecimal(v.MarshalTo(nil)); ok {
				return d
			}
			return value{k: float, f: f}
		}
		// A fraction: a decimal of the shortest text that reads as f
		// (the record's own text up to 15 significant digits).
		var buf [32]byte
		if d, ok := parseDecimal(strconv.AppendFloat(buf[:0], f, 'f', -1, 64)); ok {
			return d
		}
		return value{k: float, f: f}
	}
	return nullV
}

func notV(v value) value {
	if v.k != boolean {
		return nullV
	}
	return boolV(!v.b)
}

// and and or are SQL's three-valued AND and OR.
func and(a, b value) value {
	switch {
	case a.k == boolean && !a.b, b.k == boolean && !b.b:
		return boolV(false)
	case a.k == boolean && b.k == boolean:
		return boolV(true)
	}
	return nullV
}

func or(a, b value) value {
	switch {
	case a.k == boolean && a.b, b.k == boolean && b.b:
		return boolV(true)
	case a.k == boolean && b.k == boolean:
		return boolV(false)
	}
	return nullV
}

func (c compiler) unary(x *sqlparse.Unary) eval {
	e := c.expr(x.X)
	switch x.Op {
	case "NOT":
		return func(g []*fastjson.Value) value { return notV(e(g)) }
	case "-":
		return func(g []*fastjson.Value) value {
			v := e(g)
			switch {
			case v.k == integer && v.i != math.MinInt64:
				return value{k: integer, i: -v.i}
			case v.k == decimal && v.i != math.MinInt64:
				return dec(-v.i, v.sc)
			case v.k == bigdec:
				return negBig(v)
			case v.isNum():
				return value{k: float, f: -v.num()}
			}
			return nullV
		}
	case "+":
		return e
	}
	c.fail(x.Pos, x.Op, "", "operator %s is not supported in weir's expressions", x.Op)
	return nil
}

func (c compiler) binary(x *sqlparse.Binary) eval {
	switch x.Op {
	case "=", "<>", "<", "<=", ">", ">=", "IS DISTINCT FROM", "IS NOT DISTINCT FROM":
		xs := c.timeStrings(x.X, x.Y)
		x = &sqlparse.Binary{Pos: x.Pos, Op: x.Op, X: xs[0], Y: xs[1]}
	}
	a, b := c.expr(x.X), c.expr(x.Y)
	switch op := x.Op; op {
	case "AND":
		return func(g []*fastjson.Value) value {
			l := a(g)
			if l.k == boolean && !l.b {
				return l
			}
			return and(l, b(g))
		}
	case "OR":
		return func(g []*fastjson.Value) value {
			l := a(g)
			if l.k == boolean && l.b {
				return l
			}
			return or(l, b(g))
		}
	case "=", "<>", "<", "<=", ">", ">=":
		if ts := c.timed([]sqlparse.Expr{x.X, x.Y}, []eval{a, b}); ts != nil {
			a, b = ts[0], ts[1]
		}
		if nx, ny := numericLit(x.X), numericLit(x.Y); nx != nil || ny != nil {
			return func(g []*fastjson.Value) value {
				l, r := a(g), b(g)
				return cmpOp(op, against(nx, l, r), against(ny, r, l))
			}
		}
		return func(g []*fastjson.Value) value { return cmpOp(op, a(g), b(g)) }
	case "IS DISTINCT FROM", "IS NOT DISTINCT FROM":
		// Equality with NULL a value: never NULL itself.
		if ts := c.timed([]sqlparse.Expr{x.X, x.Y}, []eval{a, b}); ts != nil {
			a, b = ts[0], ts[1]
		}
		not := op == "IS NOT DISTINCT FROM"
		return func(g []*fastjson.Value) value {
			l, r := a(g), b(g)
			var same bool
			switch {
			case l.k == null || r.k == null:
				same = l.k == r.k
			default:
				eq := cmpOp("=", l, r)
				same = eq.k == boolean && eq.b
			}
			return boolV(same == not)
		}
	case "+", "-", "*", "/", "%":
		if sqlparse.IsInterval(x.Y) && (op == "+" || op == "-") {
			// A time plus or minus an interval: the time's epoch
			// milliseconds (a TIMESTAMP's text read as one), moved.
			a = c.asTime(x.X, a)
		} else if sqlparse.IsInterval(x.X) && op == "+" {
			b = c.asTime(x.Y, b)
		}
		if note := c.arithNote(x.Pos, x, op == "/" || op == "%"); note != nil {
			return func(g []*fastjson.Value) value {
				l, r := a(g), b(g)
				note(l, r)
				return arith(op, l, r)
			}
		}
		return func(g []*fastjson.Value) value { return arith(op, a(g), b(g)) }
	case "||":
		return concat([]eval{a, b})
	case "LIKE", "NOT LIKE":
		not := op == "NOT LIKE"
		return func(g []*fastjson.Value) value {
			s, p := a(g), b(g)
			if s.k != str || p.k != str {
				return nullV
			}
			return boolV(like(s.s, p.s) != not)
		}
	}
	c.fail(x.Pos, x.Op, "", "operator %s is not supported in weir's expressions", x.Op)
	return nil
}

// cmpOp compares a and b by op: numbers by value, strings by their bytes,
// booleans (false before true); NULL when either is NULL or their types
// differ.
// numericLit is the number string literal x holds, if it is one that
// holds a number: compared with a number, the literal is that number, as
// Flink casts a literal to the other side's type (store_id = '12345' of
// a CSV cell read as the number 12345). A record's text is not cast:
// only a literal is.
func numericLit(x sqlparse.Expr) *value {
	l, ok := x.(*sqlparse.Lit)
	if !ok || l.Kind != "string" {
		return nil
	}
	if n := number(bytes.TrimSpace([]byte(l.Text))); n.isNum() {
		return &n
	}
	return nil
}

// against is v, a side's value, compared with other's: the number n its
// literal holds (numericLit) where other is a number.
func against(n *value, v, other value) value {
	if n != nil && other.isNum() {
		return *n
	}
	return v
}

func cmpOp(op string, a, b value) value {
	var c int
	switch {
	case a.k == integer && b.k == integer:
		c = cmpInt(a.i, b.i)
	case (a.k == bigdec || b.k == bigdec) && a.k != float && b.k != float && a.isNum() && b.isNum():
		x, _ := ratOf(a)
		y, _ := ratOf(b)
		c = x.Cmp(y)
	case exactPair(a, b):
		x, y, _ := aligned(a, b)
		c = cmpInt(x, y)
	case a.isNum() && b.isNum():
		x, y := a.num(), b.num()
		if math.IsNaN(x) || math.IsNaN(y) {
			return nullV
		}
		c = cmpInt(x, y)
	case a.k == str && b.k == str:
		c = bytes.Compare(a.s, b.s)
	case a.k == boolean && b.k == boolean:
		c = cmpInt(b2i(a.b), b2i(b.b))
	case a.k == raw && b.k == raw && (op == "=" || op == "<>"):
		// Arrays and rows are equal when their elements are, in order
		// (Flink compares them so; it orders neither).
		c = cmpInt(0, b2i(!rawEqual(a.r, b.r)))
	default:
		return nullV
	}
	switch op {
	case "=":
		return boolV(c == 0)
	case "<>":
		return boolV(c != 0)
	case "<":
		return boolV(c < 0)
	case "<=":
		return boolV(c <= 0)
	case ">":
		return boolV(c > 0)
	}
	return boolV(c >= 0)
}

func cmpInt[T int64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// exactPair reports whether a and b are integers or decimals that align
// to one scale.
func exactPair(a, b value) bool {
	_, _, ok := aligned(a, b)
	return ok && (a.k == decimal || b.k == decimal)
}

// aligned returns the mantissas of exact a and b at their larger scale.
func aligned(a, b value) (int64, int64, bool) {
	x, xs, ok1 := a.exact()
	y, ys, ok2 := b.exact()
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	sc := max(xs, ys)
	x, ok1 = rescale(x, xs, sc)
	y, ok2 = rescale(y, ys, sc)
	return x, y, ok1 && ok2
}

// arith is a + b, a - b, a * b, a / b or a % b: exact on int64 (integer
// division truncates, as SQL's on integers) and on decimals for +, - and
// *, float64 when either is a float, for a decimal's / and %, or when the
// exact result would overflow; NULL on NULL or division by zero.
func arith(op string, a, b value) value {
	if !a.isNum() || !b.isNum() {
		return nullV
	}
	if (a.k == bigdec || b.k == bigdec) && a.k != float && b.k != float {
		if v, ok := bigArith(op, a, b); ok {
			return v
		}
	}
	if (a.k == decimal || b.k == decimal) && a.k != float && b.k != float {
		if v, ok := decArith(op, a, b); ok {
			return v
		}
		if v, ok := bigArith(op, a, b); ok {
			return v
		}
	}
	if a.k == integer && b.k == integer {
		x, y := a.i, b.i
		switch op {
		case "+":
			if r := x + y; (r > x) == (y > 0) {
				return value{k: integer, i: r}
			}
		case "-":
			if r := x - y; (r < x) == (y > 0) {
				return value{k: integer, i: r}
			}
		case "*":
			if x == 0 || y == 0 {
				return value{k: integer}
			}
			if r := x * y; r/y == x && !(x == -1 && y == math.MinInt64) && !(y == -1 && x == math.MinInt64) {
				return value{k: integer, i: r}
			}
		case "/", "%":
			if y == 0 {
				return nullV
			}
			if x == math.MinInt64 && y == -1 {
				break
			}
			if op == "/" {
				return value{k: integer, i: x / y}
			}
			return value{k: integer, i: x % y}
		}
	}
	x, y := a.num(), b.num()
	var r float64
	switch op {
	case "+":
		r = x + y
	case "-":
		r = x - y
	case "*":
		r = x * y
	case "/":
		if y == 0 {
			return nullV
		}
		r = x / y
	case "%":
		if y == 0 {
			return nullV
		}
		r = math.Mod(x, y)
	}
	return value{k: float, f: r}
}

// decArith is a + b, a - b or a * b of exact a and b, exactly; false
// for another operator or when the result leaves int64 or scale 18.
func decArith(op string, a, b value) (value, bool) {
	switch op {
	case "+", "-":
		x, y, ok := aligned(a, b)
		if !ok {
			return nullV, false
		}
		sc := max(a.sc, b.sc)
		if op == "-" {
			if y == math.MinInt64 {
				return nullV, false
			}
			y = -y
		}
		if r := x + y; (r > x) == (y > 0) || y == 0 {
			return dec(r, sc), true
		}
	case "*":
		x, xs, _ := a.exact()
		y, ys, _ := b.exact()
		if xs+ys > maxScale {
			return nullV, false
		}
		if x == 0 || y == 0 {
			return dec(0, xs+ys), true
		}
		if r := x * y; r/y == x && !(x == -1 && y == math.MinInt64) && !(y == -1 && x == math.MinInt64) {
			return dec(r, xs+ys), true
		}
	}
	return nullV, false
}

// bigArith is a + b, a - b, a * b or a % b of exact a and b (a bigdec among
// them, or beyond int64), exactly (38 digits at most, as Flink's DECIMAL;
// NULL beyond); false for another operator or operand.
func bigArith(op string, a, b value) (value, bool) {
	if op != "+" && op != "-" && op != "*" && op != "%" {
		return nullV, false
	}
	bx, xs, ok1 := mantissa(a)
	by, ys, ok2 := mantissa(b)
	if !ok1 || !ok2 {
		return nullV, false
	}
	var m *big.Int
	sc := max(xs, ys)
	switch op {
	case "+", "-":
		bx.Mul(bx, pow10Int(sc-xs))
		by.Mul(by, pow10Int(sc-ys))
		if op == "+" {
			m = bx.Add(bx, by)
		} else {
			m = bx.Sub(bx, by)
		}
	case "*":
		m, sc = bx.Mul(bx, by), xs+ys
	case "%":
		// The remainder at the larger scale, with the dividend's sign
		// (Java's BigDecimal.remainder, as Flink's MOD of decimals):
		// MOD(999.99, 0.01) is 0.00.
		if by.Sign() == 0 {
			return nullV, true
		}
		bx.Mul(bx, pow10Int(sc-xs))
		by.Mul(by, pow10Int(sc-ys))
		m = bx.Rem(bx, by)
	}
	return decimalOf(m, 38, sc), true
}

// mantissa is exact v (an integer, a decimal or a bigdec) as a mantissa
// and a scale.
func mantissa(v value) (*big.Int, int, bool) {
	switch v.k {
	case integer:
		return big.NewInt(v.i), 0, true
	case decimal:
		return big.NewInt(v.i), int(v.sc), true
	case bigdec:
		t := string(v.s)
		whole, frac, _ := strings.Cut(t, ".")
		m, ok := new(big.Int).SetString(whole+frac, 10)
		return m, len(frac), ok
	}
	return nil, 0, false
}

// ratOf is exact v as a rational.
func ratOf(v value) (*big.Rat, bool) {
	m, sc, ok := mantissa(v)
	if !ok {
		return nil, false
	}
	return new(big.Rat).SetFrac(m, pow10Int(sc)), true
}

// negBig is -v of a bigdec.
func negBig(v value) value {
	t, ok := bytes.CutPrefix(v.s, []byte("-"))
	if !ok {
		t = append([]byte("-"), v.s...)
	}
	return value{k: bigdec, s: t, f: -v.f}
}

// quotient is a / b of exact a and b (integers, decimals or bigdecs)
// at scale sc, rounded half away from zero (Java's BigDecimal divide with
// HALF_UP, as Flink divides decimals), as a mantissa; false when either
// is not exact or b is zero.
func quotient(a, b value, sc int) (*big.Int, bool) {
	x, ok1 := ratOf(a)
	y, ok2 := ratOf(b)
	if !ok1 || !ok2 || y.Sign() == 0 {
		return nil, false
	}
	return roundRat(x.Quo(x, y), sc), true
}

// like matches s against SQL's LIKE pattern p: % any run, _ any one byte
// (of ASCII text: one character), \ before a character that character
// itself (Flink's default escape).
func like(s, p []byte) bool {
	// Iterative, with one backtrack point for the last %.
	si, pi, star, mark := 0, 0, -1, 0
	for si < len(s) {
		switch {
		case pi+1 < len(p) && p[pi] == '\\' && p[pi+1] == s[si]:
			si, pi = si+1, pi+2
		case pi < len(p) && p[pi] == '\\':
			if star < 0 {
				return false
			}
			mark++
			si, pi = mark, star+1
		case pi < len(p) && (p[pi] == '_' || p[pi] == s[si]) && p[pi] != '%':
			si, pi = si+1, pi+1
		case pi < len(p) && p[pi] == '%':
			star, mark = pi, si
			pi++
		case star >= 0:
			mark++
			si, pi = mark, star+1
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '%' {
		pi++
	}
	return pi == len(p)
}

func (c compiler) isNull(x *sqlparse.IsNull) eval {
	e, what, not := c.expr(x.X), x.What, x.Not
	return func(g []*fastjson.Value) value {
		v := e(g)
		var r bool
		switch what {
		case "NULL":
			r = v.k == null
		case "TRUE":
			r = v.k == boolean && v.b
		case "FALSE":
			r = v.k == boolean && !v.b
		}
		return boolV(r != not)
	}
}

func (c compiler) caseExpr(x *sqlparse.Case) eval {
	var operand eval
	if x.Operand != nil {
		operand = c.expr(x.Operand)
	}
	conds, results := make([]eval, len(x.Whens)), make([]eval, len(x.Whens))
	for i, w := range x.Whens {
		conds[i], results[i] = c.expr(w.Cond), c.expr(w.Result)
	}
	els := func([]*fastjson.Value) value { return nullV }
	if x.Else != nil {
		els = c.expr(x.Else)
	}
	return func(g []*fastjson.Value) value {
		var op value
		if operand != nil {
			op = operand(g)
		}
		for i, cond := range conds {
			v := cond(g)
			if operand != nil {
				v = cmpOp("=", op, v)
			}
			if v.k == boolean && v.b {
				return results[i](g)
			}
		}
		return els(g)
	}
}

// cast converts to the numeric types and BOOLEAN (a string holding one
// reads as it; a failure is NULL, as TRY_CAST) or keeps a string.
// stringOf is v cast to a string as Flink casts it: a string itself,
// NULL, TRUE or FALSE, a number's text, an array as [a, b] and a row as
// (a, b), their values as cast (a NULL as NULL).
func stringOf(v value) value {
	switch v.k {
	case str, null:
		return v
	case boolean:
		// As Flink casts a BOOLEAN: TRUE or FALSE (read only).
		if v.b {
			return value{k: str, s: trueText}
		}
		return value{k: str, s: falseText}
	case raw:
		return value{k: str, s: appendFlinkText(nil, v.r)}
	}
	if t, ok := text(v); ok { // a number's text
		return value{k: str, s: t}
	}
	return nullV
}

// appendFlinkText appends JSON value j as Flink's cast to a string writes
// it: strings bare, arrays [a, b], objects (rows) (a, b) in their order,
// null as NULL, numbers and booleans as their text.
func appendFlinkText(b []byte, j *fastjson.Value) []byte {
	switch j.Type() {
	case fastjson.TypeString:
		return append(b, j.GetStringBytes()...)
	case fastjson.TypeNull:
		return append(b, "NULL"...)
	case fastjson.TypeTrue:
		return append(b, trueText...)
	case fastjson.TypeFalse:
		return append(b, falseText...)
	case fastjson.TypeArray:
		b = append(b, '[')
		for i, e := range j.GetArray() {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendFlinkText(b, e)
		}
		return append(b, ']')
	case fastjson.TypeObject:
		b = append(b, '(')
		i := 0
		j.GetObject().Visit(func(_ []byte, e *fastjson.Value) {
			if i > 0 {
				b = append(b, ", "...)
			}
			i++
			b = appendFlinkText(b, e)
		})
		return append(b, ')')
	}
	if t, ok := text(fromJSON(j)); ok {
		return append(b, t...)
	}
	return j.MarshalTo(b)
}

// rawEqual reports whether JSON values x and y are equal as SQL
// compares arrays and rows: element by element in order (members by
// name, in order), numbers by value, a null equal to a null.
func rawEqual(x, y *fastjson.Value) bool {
	if x.Type() != y.Type() {
		return false
	}
	switch x.Type() {
	case fastjson.TypeArray:
		xs, ys := x.GetArray(), y.GetArray()
		if len(xs) != len(ys) {
			return false
		}
		for i := range xs {
			if !rawEqual(xs[i], ys[i]) {
				return false
			}
		}
		return true
	case fastjson.TypeObject:
		xo, yo := x.GetObject(), y.GetObject()
		if xo.Len() != yo.Len() {
			return false
		}
		same := true
		xo.Visit(func(k []byte, v *fastjson.Value) {
			if w := yo.Get(string(k)); same && (w == nil || !rawEqual(v, w)) {
				same = false
			}
		})
		return same
	case fastjson.TypeString:
		return bytes.Equal(x.GetStringBytes(), y.GetStringBytes())
	case fastjson.TypeNumber:
		eq := cmpOp("=", fromJSON(x), fromJSON(y))
		return eq.k == boolean && eq.b
	}
	return true // null, true, false: their type is their value
}

// NullNote is told, on the evaluating goroutine, of a NULL that an
// expression gave where Flink fails the job: a CAST (not TRY_CAST) of a
// value that is not of its type, or a division by zero; text is the
// expression as written, at its place in the text compiled; what is
// NullCast or NullDivision.
type NullNote func(at sqlparse.Pos, what, text string)

// The kinds of NULL a NullNote is told of.
const (
	NullCast     = "cast_invalid"     // CAST of a value not of its type
	NullDivision = "division_by_zero" // a / 0, a % 0, MOD(a, 0)
)

// OnNull makes the compiled expressions tell note of the NULLs that stand
// for Flink's failures (NullNote). It costs nothing on values that are
// not NULL.
func OnNull(note NullNote) Option {
	return func(c *compiler) { c.onNull = note }
}

// arithNote is, with OnNull, what tells it of the NULL of arithmetic x
// at pos on an operand that is no number (a text such as "x", a boolean:
// Flink refuses the job or fails it casting the text) and, for a
// division (div), of a division by zero, given its operands; nil without
// OnNull.
func (c compiler) arithNote(pos sqlparse.Pos, x sqlparse.Expr, div bool) func(l, r value) {
	if c.onNull == nil {
		return nil
	}
	var zero func(l, r value)
	if div {
		zero = c.divisionNote(pos, x)
	}
	note, text := c.onNull, sqlparse.FormatExpr(x)
	return func(l, r value) {
		switch {
		case l.k == null || r.k == null:
		case !l.isNum() || !r.isNum():
			note(pos, NullCast, text)
		case zero != nil:
			zero(l, r)
		}
	}
}

// divisionNote is, with OnNull, what tells it of a division by zero
// (x / 0, x % 0, MOD(x, 0): NULL in weir, a failure in Flink) of the
// expression x at pos, given its operands; nil without OnNull.
func (c compiler) divisionNote(pos sqlparse.Pos, x sqlparse.Expr) func(l, r value) {
	if c.onNull == nil {
		return nil
	}
	note, text := c.onNull, sqlparse.FormatExpr(x)
	return func(l, r value) {
		if l.isNum() && r.isNum() && r.num() == 0 {
			note(pos, NullDivision, text)
		}
	}
}

// cast is castValue, telling the compiler's onNull of a NULL from a text
// that is no value of the type (its input is evaluated again then, with
// no notes: expressions have no side effects).
func (c compiler) cast(x *sqlparse.Cast) eval {
	e := c.castValue(x)
	if e == nil || c.onNull == nil || x.Try {
		return e
	}
	quiet := c
	quiet.onNull = nil // the input's own NULLs were told by e
	in := quiet.expr(x.X)
	note, pos, text := c.onNull, x.Pos, sqlparse.FormatExpr(x)
	return func(g []*fastjson.Value) value {
		r := e(g)
		if r.k == null {
			// A text that is no value of the type: Flink fails the job. A
			// number beyond a DECIMAL's precision is NULL in Flink too.
			if v := in(g); v.k == str {
				note(pos, NullCast, text)
			}
		}
		return r
	}
}

// castValue is CAST(x AS type)'s value: NULL where x is NULL or not of
// the type (TRY_CAST's value, and CAST's in weir).
func (c compiler) castValue(x *sqlparse.Cast) eval {
	e := c.expr(x.X)
	switch t := strings.ToUpper(x.Type.Name); t {
	case "TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT":
		// Flink's (Java's) narrowing: an integer keeps the type's low
		// bits (CAST(-500 AS TINYINT) is 12); a float is cut toward zero
		// and saturates at INT's or BIGINT's range first.
		bits := map[string]uint{"TINYINT": 8, "SMALLINT": 16, "INT": 32, "INTEGER": 32, "BIGINT": 64}[t]
		narrow := func(i int64) int64 {
			if bits == 64 {
				return i
			}
			sh := 64 - bits
			return i << sh >> sh
		}
		return func(g []*fastjson.Value) value {
			v := boolNumber(e(g))
			text := v.k == str
			if text {
				v = number(bytes.TrimSpace(v.s))
			}
			switch {
			case text && v.k == integer && narrow(v.i) != v.i:
				// A text beyond the type's range: Flink fails the job
				// (Integer.parseInt), where a number keeps its low bits.
				return nullV
			case v.k == integer:
				return value{k: integer, i: narrow(v.i)}
			case v.k == decimal:
				return value{k: integer, i: narrow(v.i / int64(pow10[v.sc]))}
			case v.k == bigdec:
				if r, ok := ratOf(v); ok {
					if q := new(big.Int).Quo(r.Num(), r.Denom()); q.IsInt64() {
						return value{k: integer, i: narrow(q.Int64())}
					}
				}
				return nullV
			case v.k == float && !math.IsNaN(v.f):
				lo, hi := float64(math.MinInt64), float64(math.MaxInt64)
				if bits < 64 {
					lo, hi = math.MinInt32, math.MaxInt32
				}
				return value{k: integer, i: narrow(int64(max(lo, min(math.Trunc(v.f), hi))))}
			}
			return nullV
		}
	case "DECIMAL", "NUMERIC", "DEC":
		// DECIMAL(p, s): s fraction digits exactly, rounded half away
		// from zero (Flink's cast); NULL beyond p digits. DECIMAL is
		// DECIMAL(10, 0) and DECIMAL(p) DECIMAL(p, 0), as in Flink.
		p, sc := 10, 0
		switch ps := x.Type.Params; len(ps) {
		case 1:
			p = ps[0]
		case 2:
			p, sc = ps[0], ps[1]
		}
		if p < 1 || p > 38 || sc < 0 || sc > p {
			c.fail(x.Pos, x.Type.Name, "write DECIMAL(p, s) with 1 <= p <= 38 and 0 <= s <= p", "CAST to DECIMAL(%d, %d) is not supported", p, sc)
			return nil
		}
		if div, ok := x.X.(*sqlparse.Binary); ok && div.Op == "/" && c.decimal(div) {
			// A quotient at the cast's scale, computed there: Flink's
			// division of decimals has a scale of its own (the SQL
			// compiler casts each quotient to it), which a float
			// quotient rounded afterwards would miss in the last digits.
			a, b := c.expr(div.X), c.expr(div.Y)
			zero := c.divisionNote(div.Pos, div)
			return func(g []*fastjson.Value) value {
				x, y := a(g), b(g)
				if q, ok := quotient(x, y, sc); ok {
					return decimalOf(q, p, sc)
				}
				if zero != nil {
					zero(x, y)
				}
				return toDecimal(arith("/", x, y), p, sc)
			}
		}
		return func(g []*fastjson.Value) value {
			v := boolNumber(e(g))
			if v.k == str {
				v = number(bytes.TrimSpace(v.s))
			}
			return toDecimal(v, p, sc)
		}
	case "FLOAT", "DOUBLE", "REAL":
		// A float: CAST(1 AS DOUBLE) / 3 divides as floats.
		return func(g []*fastjson.Value) value {
			v := boolNumber(e(g))
			if v.k == str {
				v = number(bytes.TrimSpace(v.s))
			}
			if v.isNum() {
				return value{k: float, f: v.num()}
			}
			return nullV
		}
	case "BOOLEAN":
		return func(g []*fastjson.Value) value {
			v := e(g)
			if v.k == str {
				// Flink's texts of a BOOLEAN (BinaryStringDataUtil).
				switch strings.ToUpper(string(bytes.TrimSpace(v.s))) {
				case "TRUE", "T", "YES", "Y", "1":
					return boolV(true)
				case "FALSE", "F", "NO", "N", "0":
					return boolV(false)
				}
				return nullV
			}
			if v.k == boolean {
				return v
			}
			if v.isNum() {
				// A number is TRUE unless it is zero, as Flink casts it.
				return boolV(v.num() != 0)
			}
			return nullV
		}
	case "STRING", "VARCHAR", "CHAR":
		// VARCHAR(n) keeps the first n characters, CHAR(n) is padded
		// with spaces to n, as Flink casts (STRING, VARCHAR and CHAR
		// without a length keep every character).
		n := -1
		if len(x.Type.Params) == 1 && t != "STRING" {
			n = x.Type.Params[0]
		}
		pad := t == "CHAR"
		return func(g []*fastjson.Value) value {
			v := stringOf(e(g))
			if n < 0 || v.k != str {
				return v
			}
			if k := utf8.RuneCount(v.s); k > n {
				cut := 0
				for range n {
					_, size := utf8.DecodeRune(v.s[cut:])
					cut += size
				}
				v.s = v.s[:cut:cut]
			} else if pad && k < n {
				v.s = append(bytes.Clone(v.s), bytes.Repeat([]byte{' '}, n-k)...)
			}
			return v
		}
	case "TIMESTAMP", "TIMESTAMP_LTZ", "DATE":
		// A time as epoch milliseconds (UTC), as TO_TIMESTAMP_LTZ and a
		// window bound are: a TIMESTAMP's text (or RFC 3339), or a
		// number of milliseconds; a DATE at its day's midnight.
		date := t == "DATE"
		return func(g []*fastjson.Value) value {
			ms, ok := millis(e(g))
			if !ok {
				return nullV
			}
			if date {
				ms -= ((ms % dayMillis) + dayMillis) % dayMillis
			}
			return value{k: integer, i: ms}
		}
	default:
		c.fail(x.Pos, x.Type.Name, "cast to BIGINT, INT, DOUBLE, DECIMAL, BOOLEAN, STRING, TIMESTAMP or DATE", "CAST to %s is not supported in weir's expressions", t)
	}
	return nil
}

// dayMillis is a day's milliseconds.
const dayMillis = 24 * 60 * 60 * 1000

// The texts of a BOOLEAN cast to a string (shared: values are read
// only).
var trueText, falseText = []byte("TRUE"), []byte("FALSE")

// boolNumber is v as a cast to a number reads it: TRUE 1 and FALSE 0,
// as Flink casts a BOOLEAN; any other value as it is.
func boolNumber(v value) value {
	if v.k == boolean {
		return value{k: integer, i: b2i(v.b)}
	}
	return v
}

func (c compiler) call(x *sqlparse.Call) eval {
	name := strings.ToUpper(x.Name.Parts[len(x.Name.Parts)-1].Name)
	if x.Filter != nil || x.Over != nil {
		c.fail(x.Pos, name, "FILTER and OVER belong to aggregates", "function %s takes no FILTER or OVER here", name)
	}
	// weir's own functions (WEIR_...), which compilers write, are not
	// offered to users.
	if _, own := moreFunctions[name]; !slices.Contains(Functions, name) && !(own && strings.HasPrefix(name, "WEIR_")) {
		hint := suggest.Or(name, Functions, "the functions of a filter: "+strings.Join(Functions, ", "))
		c.fail(x.Pos, name, hint, "function %s is not supported in weir's expressions", name)
	}
	args := make([]eval, len(x.Args))
	for i, a := range x.Args {
		args[i] = c.expr(a.Value)
	}
	if _, ok := moreFunctions[name]; ok {
		return c.moreCall(x, name, args)
	}
	want := map[string]int{"ABS": 1, "CHAR_LENGTH": 1, "LOWER": 1, "UPPER": 1, "MOD": 2, "NULLIF": 2, "IF": 3, "TO_TIMESTAMP_LTZ": 2}
	if name == "TO_TIMESTAMP" && (len(args) == 0 || len(args) > 2) {
		c.fail(x.Pos, name, "", "TO_TIMESTAMP takes a text and, optionally, its format")
	}
	if n, ok := want[name]; ok && len(args) != n || (name == "COALESCE" || name == "GREATEST" || name == "LEAST") && len(args) == 0 {
		c.fail(x.Pos, name, "", "%s takes %d argument(s)", name, want[name])
	}
	switch name {
	case "ABS":
		return func(g []*fastjson.Value) value {
			v := args[0](g)
			switch {
			case v.k == integer && v.i < 0 && v.i != math.MinInt64:
				v.i = -v.i
			case v.k == integer && v.i == math.MinInt64:
				return value{k: float, f: -float64(v.i)}
			case v.k == float:
				v.f = math.Abs(v.f)
			case v.k == decimal && v.i < 0 && v.i != math.MinInt64:
				v.i = -v.i
			case v.k == bigdec && v.f < 0:
				return negBig(v)
			}
			return v
		}
	case "MOD":
		if zero := c.divisionNote(x.Pos, x); zero != nil {
			return func(g []*fastjson.Value) value {
				l, r := args[0](g), args[1](g)
				zero(l, r)
				return arith("%", l, r)
			}
		}
		return func(g []*fastjson.Value) value { return arith("%", args[0](g), args[1](g)) }
	case "TO_TIMESTAMP":
		// TO_TIMESTAMP(text [, format]) of a text in the format
		// 'yyyy-MM-dd HH:mm:ss' (fractions of a second read too), as the
		// time attribute reads it, or in another Java pattern of numbers
		// ('yyyyMMddHHmmss'): the time in epoch milliseconds of its wall
		// time in UTC, NULL for a text of another form.
		var toks []dateTok
		if len(x.Args) == 2 {
			f, ok := x.Args[1].Value.(*sqlparse.Lit)
			if !ok || f.Kind != "string" {
				c.fail(x.Pos, name, "write the format as a text literal, such as 'yyyyMMddHHmmss'", "TO_TIMESTAMP's format is a literal")
			} else if f.Text != "yyyy-MM-dd HH:mm:ss" && f.Text != "yyyy-MM-dd HH:mm:ss.SSS" {
				var okp bool
				if toks, okp = javaPattern(f.Text); !okp || !parsable(toks) {
					c.fail(x.Pos, f.Text, "use the letters yyyy, yy, MM, dd, HH, mm, ss and SSS (numbers), and other text in quotes", "TO_TIMESTAMP cannot read the format '%s'", f.Text)
				}
			}
		}
		return func(g []*fastjson.Value) value {
			v := args[0](g)
			if v.k != str {
				return nullV
			}
			var ms int64
			var ok bool
			if toks != nil {
				ms, ok = parseDate(v.s, toks)
			} else {
				ms, ok = sqlMillis(v.s)
			}
			if !ok {
				return nullV
			}
			return value{k: integer, i: ms}
		}
	case "TO_TIMESTAMP_LTZ":
		p, ok := x.Args[1].Value.(*sqlparse.Lit)
		if !ok || p.Text != "3" && p.Text != "0" {
			c.fail(x.Pos, name, "write TO_TIMESTAMP_LTZ(ms, 3) or TO_TIMESTAMP_LTZ(seconds, 0)", "TO_TIMESTAMP_LTZ's precision is 3 or 0")
		}
		if p.Text == "3" {
			return args[0]
		}
		thousand := value{k: integer, i: 1000}
		return func(g []*fastjson.Value) value { return arith("*", args[0](g), thousand) }
	case "CHAR_LENGTH":
		return func(g []*fastjson.Value) value {
			v := args[0](g)
			if v.k != str {
				return nullV
			}
			return value{k: integer, i: int64(utf8.RuneCount(v.s))}
		}
	case "LOWER", "UPPER":
		f := bytes.ToLower
		if name == "UPPER" {
			f = upper
		}
		return func(g []*fastjson.Value) value {
			v := args[0](g)
			if v.k != str {
				return nullV
			}
			return value{k: str, s: f(v.s)}
		}
	case "COALESCE":
		return func(g []*fastjson.Value) value {
			for _, a := range args {
				if v := a(g); v.k != null {
					return v
				}
			}
			return nullV
		}
	case "GREATEST", "LEAST":
		// Flink's: NULL when any argument is NULL, or when two cannot be
		// compared (a number and a string).
		op := ">"
		if name == "LEAST" {
			op = "<"
		}
		var xs []sqlparse.Expr
		for _, a := range x.Args {
			xs = append(xs, a.Value)
		}
		if ts := c.timed(xs, args); ts != nil {
			args = ts
		}
		return func(g []*fastjson.Value) value {
			best := args[0](g)
			if best.k == null {
				return nullV
			}
			for _, a := range args[1:] {
				v := a(g)
				r := cmpOp(op, v, best)
				if v.k == null || r.k != boolean {
					return nullV
				}
				if r.b {
					best = v
				}
			}
			return best
		}
	case "NULLIF":
		return func(g []*fastjson.Value) value {
			v := args[0](g)
			if eq := cmpOp("=", v, args[1](g)); eq.k == boolean && eq.b {
				return nullV
			}
			return v
		}
	}
	// IF(cond, then, else)
	return func(g []*fastjson.Value) value {
		if v := args[0](g); v.k == boolean && v.b {
			return args[1](g)
		}
		return args[2](g)
	}
}
