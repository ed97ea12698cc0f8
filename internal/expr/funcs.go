package expr

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/internal/sqlparse"
)

// The string, number and time functions of Flink SQL that weir's
// expressions take besides Functions' first ones (funcs.go): each with
// its arity (a minimum and a maximum number of arguments).
var moreFunctions = map[string][2]int{
	"CONCAT": {1, 64}, "SUBSTRING": {2, 3}, "SUBSTR": {2, 3}, "TRIM": {1, 1}, "LTRIM": {1, 1}, "RTRIM": {1, 1},
	"REPLACE": {3, 3}, "ROUND": {1, 2}, "FLOOR": {1, 1}, "CEIL": {1, 1}, "CEILING": {1, 1}, "POWER": {2, 2},
	"DATE_FORMAT": {2, 2}, "FROM_UNIXTIME": {1, 2}, "YEAR": {1, 1}, "MONTH": {1, 1}, "DAYOFMONTH": {1, 1},
	"HOUR": {1, 1}, "MINUTE": {1, 1}, "SECOND": {1, 1},
}

// text is v as CONCAT and || read it: a string's bytes, a number's or a
// boolean's text; false for NULL (and an object or array).
func text(v value) ([]byte, bool) {
	switch v.k {
	case str:
		return v.s, true
	case integer:
		return strconv.AppendInt(nil, v.i, 10), true
	case float:
		return strconv.AppendFloat(nil, v.f, 'g', -1, 64), true
	case decimal:
		return appendDecimal(nil, v.i, v.sc), true
	case boolean:
		return []byte(strconv.FormatBool(v.b)), true
	}
	return nil, false
}

// concat is CONCAT(args...) and a || b: NULL if any argument is NULL.
func concat(args []eval) eval {
	return func(g []*fastjson.Value) value {
		var out []byte
		for _, a := range args {
			t, ok := text(a(g))
			if !ok {
				return nullV
			}
			out = append(out, t...)
		}
		if out == nil {
			out = []byte{}
		}
		return value{k: str, s: out}
	}
}

// millis reads a time: epoch milliseconds (a TIMESTAMP computed by
// TO_TIMESTAMP_LTZ, a window bound), or a TIMESTAMP's text as Flink's
// JSON writes it (2026-01-01 00:05:00.000, in UTC; a trailing Z or a T
// is read too).
func millis(v value) (int64, bool) {
	switch v.k {
	case integer:
		return v.i, true
	case str:
		s := strings.TrimSuffix(strings.Replace(string(v.s), "T", " ", 1), "Z")
		for _, layout := range []string{"2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05", "2006-01-02"} {
			if t, err := time.Parse(layout, s); err == nil {
				return t.UnixMilli(), true
			}
		}
	}
	return 0, false
}

// javaLayout turns a Java DateTimeFormatter pattern (Flink's DATE_FORMAT
// and FROM_UNIXTIME take them: yyyy-MM-dd HH:mm:ss.SSS, with 'quoted'
// text) into Go's layout; false for a letter it does not know.
func javaLayout(p string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(p); {
		c := p[i]
		if c == '\'' {
			j := strings.IndexByte(p[i+1:], '\'')
			if j < 0 {
				return "", false
			}
			b.WriteString(p[i+1 : i+1+j])
			i += j + 2
			continue
		}
		n := 1
		for i+n < len(p) && p[i+n] == c {
			n++
		}
		tok := p[i : i+n]
		i += n
		if c < 'A' || c > 'z' || c > 'Z' && c < 'a' {
			b.WriteString(tok)
			continue
		}
		layout, ok := map[string]string{"yyyy": "2006", "yy": "06", "MM": "01", "M": "1", "dd": "02", "d": "2",
			"HH": "15", "mm": "04", "ss": "05", "SSS": "000", "SS": "00", "S": "0", "MMM": "Jan", "EEE": "Mon", "a": "PM", "hh": "03", "h": "3"}[tok]
		if !ok {
			return "", false
		}
		b.WriteString(layout)
	}
	return b.String(), true
}

// moreCall compiles the functions of moreFunctions.
func (c compiler) moreCall(x *sqlparse.Call, name string, args []eval) eval {
	if n := moreFunctions[name]; len(args) < n[0] || len(args) > n[1] {
		if n[0] == n[1] {
			c.fail(x.Pos, name, "", "%s takes %d argument(s)", name, n[0])
		} else {
			c.fail(x.Pos, name, "", "%s takes %d to %d arguments", name, n[0], n[1])
		}
		return nil
	}
	arg := func(g []*fastjson.Value, i int) value { return args[i](g) }
	switch name {
	case "CONCAT":
		return concat(args)
	case "SUBSTRING", "SUBSTR":
		// 1-based, in characters; a start below 1 counts from 1 as SQL's
		// (start + length - 1 is the last).
		return func(g []*fastjson.Value) value {
			s, start := arg(g, 0), arg(g, 1)
			if s.k != str || start.k != integer {
				return nullV
			}
			runes := []rune(string(s.s))
			from, to := start.i, int64(len(runes))+1
			if len(args) == 3 {
				n := arg(g, 2)
				if n.k != integer || n.i < 0 {
					return nullV
				}
				to = min(to, from+n.i)
			}
			from = max(from, 1)
			if from >= to {
				return value{k: str, s: []byte{}}
			}
			return value{k: str, s: []byte(string(runes[from-1 : to-1]))}
		}
	case "TRIM", "LTRIM", "RTRIM":
		f := map[string]func([]byte, string) []byte{"TRIM": bytes.Trim, "LTRIM": bytes.TrimLeft, "RTRIM": bytes.TrimRight}[name]
		return func(g []*fastjson.Value) value {
			s := arg(g, 0)
			if s.k != str {
				return nullV
			}
			return value{k: str, s: f(s.s, " ")}
		}
	case "REPLACE":
		return func(g []*fastjson.Value) value {
			s, from, to := arg(g, 0), arg(g, 1), arg(g, 2)
			if s.k != str || from.k != str || to.k != str {
				return nullV
			}
			if len(from.s) == 0 {
				return s
			}
			return value{k: str, s: bytes.ReplaceAll(s.s, from.s, to.s)}
		}
	case "ROUND":
		return func(g []*fastjson.Value) value {
			v := arg(g, 0)
			d := int64(0)
			if len(args) == 2 {
				dv := arg(g, 1)
				if dv.k != integer || dv.i < 0 || dv.i > 18 {
					return nullV
				}
				d = dv.i
			}
			return round(v, d)
		}
	case "FLOOR", "CEIL", "CEILING":
		up := name != "FLOOR"
		return func(g []*fastjson.Value) value {
			v := arg(g, 0)
			switch v.k {
			case integer:
				return v
			case float:
				if up {
					return value{k: float, f: math.Ceil(v.f)}
				}
				return value{k: float, f: math.Floor(v.f)}
			case decimal:
				p := int64(pow10[v.sc])
				q := v.i / p
				if r := v.i % p; r != 0 && (r > 0) == up {
					if up {
						q++
					} else {
						q--
					}
				}
				return value{k: integer, i: q}
			}
			return nullV
		}
	case "POWER":
		return func(g []*fastjson.Value) value {
			a, b := arg(g, 0), arg(g, 1)
			if !a.isNum() || !b.isNum() {
				return nullV
			}
			return value{k: float, f: math.Pow(a.num(), b.num())}
		}
	case "DATE_FORMAT", "FROM_UNIXTIME":
		layout := "2006-01-02 15:04:05"
		if len(args) == 2 {
			lit, ok := x.Args[1].Value.(*sqlparse.Lit)
			if !ok || lit.Kind != "string" {
				c.fail(x.Pos, name, "write the pattern as a string literal, such as 'yyyy-MM-dd HH:mm'", "%s's pattern is a string literal", name)
				return nil
			}
			if layout, ok = javaLayout(lit.Text); !ok {
				c.fail(sqlparse.ExprPos(x.Args[1].Value), lit.Text, "use yyyy, yy, MM, M, MMM, dd, d, HH, hh, h, mm, ss, SSS, a, EEE and 'quoted' text", "%s's pattern %q has a letter weir does not format", name, lit.Text)
				return nil
			}
		}
		seconds := name == "FROM_UNIXTIME"
		return func(g []*fastjson.Value) value {
			v := arg(g, 0)
			var ms int64
			var ok bool
			if seconds {
				ms, ok = v.i*1000, v.k == integer
			} else {
				ms, ok = millis(v)
			}
			if !ok {
				return nullV
			}
			return value{k: str, s: time.UnixMilli(ms).UTC().AppendFormat(nil, layout)}
		}
	}
	// YEAR, MONTH, DAYOFMONTH, HOUR, MINUTE, SECOND of a time, in UTC.
	return func(g []*fastjson.Value) value {
		ms, ok := millis(arg(g, 0))
		if !ok {
			return nullV
		}
		t := time.UnixMilli(ms).UTC()
		n := map[string]int{"YEAR": t.Year(), "MONTH": int(t.Month()), "DAYOFMONTH": t.Day(), "HOUR": t.Hour(), "MINUTE": t.Minute(), "SECOND": t.Second()}[name]
		return value{k: integer, i: int64(n)}
	}
}

// round rounds v to d decimal places, half away from zero (Flink's
// ROUND): an integer stays, a decimal stays exact, a float rounds as a
// float.
func round(v value, d int64) value {
	switch v.k {
	case integer:
		return v
	case decimal:
		if int64(v.sc) <= d {
			return v
		}
		p := int64(pow10[int64(v.sc)-d])
		q, r := v.i/p, v.i%p
		if 2*abs64(r) >= p {
			if v.i < 0 {
				q--
			} else {
				q++
			}
		}
		return dec(q, uint8(d))
	case float:
		p := math.Pow(10, float64(d))
		return value{k: float, f: math.Round(v.f*p) / p}
	}
	return nullV
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
