package expr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/internal/jsonnum"
	"github.com/weirstream/weir/internal/sqlparse"
)

// The string, number and time functions of Flink SQL that weir's
// expressions take besides Functions' first ones (funcs.go): each with
// its arity (a minimum and a maximum number of arguments).
var moreFunctions = map[string][2]int{
	"CONCAT": {1, 64}, "SUBSTRING": {2, 3}, "SUBSTR": {2, 3}, "TRIM": {1, 2}, "LTRIM": {1, 2}, "RTRIM": {1, 2},
	"CONCAT_WS": {2, 64}, "REGEXP_EXTRACT": {2, 3}, "REGEXP_REPLACE": {3, 3},
	"LPAD": {3, 3}, "RPAD": {3, 3}, "LEFT": {2, 2}, "RIGHT": {2, 2}, "INITCAP": {1, 1}, "SPLIT_INDEX": {3, 3}, "LOCATE": {2, 3},
	"REPLACE": {3, 3}, "ROUND": {1, 2}, "FLOOR": {1, 2}, "CEIL": {1, 2}, "CEILING": {1, 2}, "POWER": {2, 2},
	"TIMESTAMPDIFF": {3, 3},
	"DATE_FORMAT":   {2, 2}, "FROM_UNIXTIME": {1, 2}, "YEAR": {1, 1}, "QUARTER": {1, 1}, "MONTH": {1, 1}, "WEEK": {1, 1},
	"DAYOFYEAR": {1, 1}, "DAYOFMONTH": {1, 1}, "DAYOFWEEK": {1, 1}, "HOUR": {1, 1}, "MINUTE": {1, 1}, "SECOND": {1, 1},
	// weir's own, which the SQL compiler writes for
	// table.local-time-zone (internal/sqljob zone.go): a TIMESTAMP_LTZ's
	// wall time in a zone of one offset (its milliseconds), and back.
	"WEIR_WALL_TIME": {2, 2}, "WEIR_INSTANT": {2, 2},
	// WEIR_ROW(v, fields): a ROW column's value as its declared type
	// reads it (RowFields writes fields).
	"WEIR_ROW": {2, 2},
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
		// As Flink's CAST(DOUBLE AS STRING): Java's Double.toString.
		return jsonnum.AppendJava(nil, v.f, 64), true
	case decimal:
		return appendDecimal(nil, v.i, v.sc), true
	case bigdec:
		return v.s, true
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
		if ms, ok := sqlMillis(v.s); ok {
			return ms, true
		}
		var buf [48]byte
		if b, ok := padDate(buf[:0], v.s); ok {
			return sqlMillis(b)
		}
	}
	return 0, false
}

// padDate appends to out b with spaces around it trimmed and a
// one-digit month or day given its zero (2026-1-2 10:00:00 is 2026-01-02
// 10:00:00), as Flink's casts read a date (DateTimeUtils splits it at
// '-'); false when b has no yyyy-m-d date first.
func padDate(out, b []byte) ([]byte, bool) {
	b = bytes.TrimSpace(b)
	i := 0
	for part, width := range []int{4, 2, 2} {
		j := i
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		n := j - i
		if n == 0 || n > width || part == 0 && n != 4 {
			return nil, false
		}
		if part > 0 {
			out = append(out, '-')
		}
		for range width - n {
			out = append(out, '0')
		}
		out = append(out, b[i:j]...)
		if part < 2 {
			if j >= len(b) || b[j] != '-' {
				return nil, false
			}
			j++
		}
		i = j
	}
	if i < len(b) && b[i] != ' ' && b[i] != 'T' {
		return nil, false
	}
	return append(out, b[i:]...), true
}

// sqlMillis reads b, yyyy-MM-dd HH:mm:ss with up to nine fraction
// digits (a T for the space, and a trailing Z or an offset such as
// +08:00 as RFC 3339 writes it, are read too) or yyyy-MM-dd, without
// allocating: a WHERE reads a record's time so. False for another form
// or a date or time that does not exist.
func sqlMillis(b []byte) (int64, bool) {
	var offset int64 // milliseconds east of UTC
	if n := len(b); n >= 19+6 && (b[n-6] == '+' || b[n-6] == '-') && b[n-3] == ':' {
		oh, okh := twoDigits(b[n-5 : n-3])
		om, okm := twoDigits(b[n-2:])
		if !okh || !okm || oh > 23 || om > 59 {
			return 0, false
		}
		offset = int64(oh*60+om) * 60_000
		if b[n-6] == '-' {
			offset = -offset
		}
		b = b[:n-6]
	} else {
		b = bytes.TrimSuffix(b, []byte("Z"))
	}
	num := func(s []byte) (int, bool) {
		n := 0
		for _, c := range s {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, len(s) > 0
	}
	if (len(b) != 10 && len(b) < 19) || b[4] != '-' || b[7] != '-' {
		return 0, false
	}
	y, ok1 := num(b[:4])
	mo, ok2 := num(b[5:7])
	d, ok3 := num(b[8:10])
	var h, mi, s, nanos int
	ok := ok1 && ok2 && ok3
	if len(b) > 10 {
		var ok4, ok5, ok6 bool
		h, ok4 = num(b[11:13])
		mi, ok5 = num(b[14:16])
		s, ok6 = num(b[17:19])
		ok = ok && (b[10] == ' ' || b[10] == 'T') && b[13] == ':' && b[16] == ':' && ok4 && ok5 && ok6
		if f := b[19:]; len(f) > 0 {
			digits, okf := num(f[1:])
			ok = ok && f[0] == '.' && okf && len(f) <= 10
			nanos = digits
			for range 10 - len(f) {
				nanos *= 10
			}
		}
	}
	if !ok || mo < 1 || mo > 12 || h > 23 || mi > 59 || s > 59 {
		return 0, false
	}
	t := time.Date(y, time.Month(mo), d, h, mi, s, nanos, time.UTC)
	if t.Day() != d {
		return 0, false
	}
	return t.UnixMilli() - offset, true
}

// twoDigits reads two decimal digits.
func twoDigits(b []byte) (int, bool) {
	if len(b) != 2 || b[0] < '0' || b[0] > '9' || b[1] < '0' || b[1] > '9' {
		return 0, false
	}
	return int(b[0]-'0')*10 + int(b[1]-'0'), true
}

// dateTok is a piece of a Java DateTimeFormatter pattern: literal text,
// or a field letter repeated n times.
type dateTok struct {
	lit    string
	letter byte
	n      int
}

// javaPattern reads a Java DateTimeFormatter pattern (Flink's
// DATE_FORMAT and FROM_UNIXTIME take them: yyyy-MM-dd HH:mm:ss.SSS, with
// 'quoted' text and ” for a quote); false for a letter it does not
// format.
func javaPattern(p string) ([]dateTok, bool) {
	var toks []dateTok
	lit := func(s string) {
		if n := len(toks); n > 0 && toks[n-1].letter == 0 {
			toks[n-1].lit += s
			return
		}
		toks = append(toks, dateTok{lit: s})
	}
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c == '\'' && i+1 < len(p) && p[i+1] == '\'':
			lit("'")
			i += 2
		case c == '\'':
			// Quoted text up to the closing quote; '' inside is a quote.
			i++
			var b strings.Builder
			for {
				if i >= len(p) {
					return nil, false
				}
				if p[i] == '\'' {
					if i+1 < len(p) && p[i+1] == '\'' {
						b.WriteByte('\'')
						i += 2
						continue
					}
					i++
					break
				}
				b.WriteByte(p[i])
				i++
			}
			lit(b.String())
		case c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z':
			n := 1
			for i+n < len(p) && p[i+n] == c {
				n++
			}
			if !strings.ContainsRune("yMdHhmsSaE", rune(c)) {
				return nil, false
			}
			toks = append(toks, dateTok{letter: c, n: n})
			i += n
		default:
			lit(string(c))
			i++
		}
	}
	return toks, true
}

// formatDate appends t formatted by toks (javaPattern's).
func formatDate(b []byte, t time.Time, toks []dateTok) []byte {
	num := func(v, n int) {
		s := strconv.Itoa(v)
		for k := len(s); k < n; k++ {
			b = append(b, '0')
		}
		b = append(b, s...)
	}
	for _, k := range toks {
		switch k.letter {
		case 0:
			b = append(b, k.lit...)
		case 'y':
			if k.n == 2 {
				num(t.Year()%100, 2)
			} else {
				num(t.Year(), k.n)
			}
		case 'M':
			switch {
			case k.n == 3:
				b = append(b, t.Month().String()[:3]...)
			case k.n >= 4:
				b = append(b, t.Month().String()...)
			default:
				num(int(t.Month()), k.n)
			}
		case 'd':
			num(t.Day(), k.n)
		case 'H':
			num(t.Hour(), k.n)
		case 'h':
			num((t.Hour()+11)%12+1, k.n)
		case 'm':
			num(t.Minute(), k.n)
		case 's':
			num(t.Second(), k.n)
		case 'S':
			// The fraction of the second, its first n digits.
			frac := fmt.Sprintf("%09d", t.Nanosecond())
			for len(frac) < k.n {
				frac += "0"
			}
			b = append(b, frac[:k.n]...)
		case 'a':
			if t.Hour() < 12 {
				b = append(b, "AM"...)
			} else {
				b = append(b, "PM"...)
			}
		case 'E':
			if k.n >= 4 {
				b = append(b, t.Weekday().String()...)
			} else {
				b = append(b, t.Weekday().String()[:3]...)
			}
		}
	}
	return b
}

// javaReplacement is Java's replacement text r (Matcher.appendReplacement:
// $n a group, its number as many digits as name a group of the n groups,
// \x the character x) as a template of Go's Regexp.Expand; false for a
// reference to a group the pattern lacks, or a trailing \ or $.
func javaReplacement(r []byte, n int) ([]byte, bool) {
	out := make([]byte, 0, len(r)+8)
	for i := 0; i < len(r); i++ {
		switch c := r[i]; {
		case c == '\\':
			if i++; i == len(r) {
				return nil, false
			}
			if r[i] == '$' {
				out = append(out, '$', '$')
			} else {
				out = append(out, r[i])
			}
		case c == '$':
			if i+1 == len(r) || r[i+1] < '0' || r[i+1] > '9' {
				return nil, false // ${name}: named groups are not taken
			}
			g := int(r[i+1] - '0')
			i++
			for i+1 < len(r) && r[i+1] >= '0' && r[i+1] <= '9' && g*10+int(r[i+1]-'0') <= n {
				g = g*10 + int(r[i+1]-'0')
				i++
			}
			if g > n {
				return nil, false
			}
			out = append(out, '$', '{')
			out = strconv.AppendInt(out, int64(g), 10)
			out = append(out, '}')
		default:
			out = append(out, c)
		}
	}
	return out, true
}

// literalPattern compiles the pattern of regular expression function
// call x (name), its second argument, which is a text literal; nil (the
// compiler failed) otherwise.
func (c compiler) literalPattern(x *sqlparse.Call, name string) *regexp.Regexp {
	lit, ok := x.Args[1].Value.(*sqlparse.Lit)
	if !ok || lit.Kind != "string" {
		c.fail(x.Pos, name, "write the pattern as a text literal", "%s's pattern is a literal", name)
		return nil
	}
	re, err := regexp.Compile(lit.Text)
	if err != nil {
		c.fail(lit.Pos, lit.Text, "write a pattern without backreferences or lookaround (RE2 syntax)", "%s's pattern: %v", name, err)
		return nil
	}
	return re
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
	case "CONCAT_WS":
		// CONCAT_WS(sep, s1, ...): NULL when sep is; a NULL argument is
		// left out, as Flink's.
		return func(g []*fastjson.Value) value {
			sep, ok := text(args[0](g))
			if !ok {
				return nullV
			}
			out, first := []byte{}, true
			for _, a := range args[1:] {
				t, ok := text(a(g))
				if !ok {
					continue
				}
				if !first {
					out = append(out, sep...)
				}
				out, first = append(out, t...), false
			}
			return value{k: str, s: out}
		}
	case "REGEXP_EXTRACT":
		// REGEXP_EXTRACT(s, pattern [, group]): the group's match
		// (default 0, the whole match), NULL without a match. The pattern
		// is a literal, compiled once (Go's RE2 syntax, which is Java's
		// but for backreferences and lookaround).
		re := c.literalPattern(x, name)
		return func(g []*fastjson.Value) value {
			s := args[0](g)
			if s.k != str || re == nil {
				return nullV
			}
			group := int64(0)
			if len(args) == 3 {
				gv := args[2](g)
				if gv.k != integer {
					return nullV
				}
				group = gv.i
			}
			if group < 0 || group > int64(re.NumSubexp()) {
				return nullV
			}
			m := re.FindSubmatchIndex(s.s)
			if m == nil || m[2*group] < 0 {
				return nullV
			}
			return value{k: str, s: s.s[m[2*group]:m[2*group+1]]}
		}
	case "REGEXP_REPLACE":
		// REGEXP_REPLACE(s, pattern, replacement): every match replaced
		// ($1 names a group, as in Java). The pattern is a literal,
		// compiled once (RE2 syntax).
		re := c.literalPattern(x, name)
		var fixed []byte // a literal replacement's template, made once
		fixedOK := false
		if lit, ok := x.Args[2].Value.(*sqlparse.Lit); ok && lit.Kind == "string" && re != nil {
			fixed, fixedOK = javaReplacement([]byte(lit.Text), re.NumSubexp())
		}
		return func(g []*fastjson.Value) value {
			s, r := args[0](g), args[2](g)
			if s.k != str || r.k != str || re == nil {
				return nullV
			}
			tmpl, ok := fixed, fixedOK
			if fixed == nil && !fixedOK {
				tmpl, ok = javaReplacement(r.s, re.NumSubexp())
			}
			if !ok {
				return nullV // a group the pattern lacks: Java fails
			}
			return value{k: str, s: re.ReplaceAll(s.s, tmpl)}
		}
	case "LPAD", "RPAD":
		// As Flink's: s padded with pad (repeated) to n characters, or
		// cut to its first n; NULL for a negative n or an empty pad.
		left := name == "LPAD"
		return func(g []*fastjson.Value) value {
			s, n, pad := arg(g, 0), arg(g, 1), arg(g, 2)
			if s.k != str || n.k != integer || pad.k != str || n.i < 0 || len(pad.s) == 0 || n.i > 1<<20 {
				return nullV
			}
			base, fill := []rune(string(s.s)), []rune(string(pad.s))
			out := make([]rune, 0, n.i)
			need := max(int(n.i)-len(base), 0)
			if !left {
				out = append(out, base[:min(len(base), int(n.i))]...)
			}
			for i := 0; i < need; i++ {
				out = append(out, fill[i%len(fill)])
			}
			if left {
				out = append(out, base[:min(len(base), int(n.i)-need)]...)
			}
			return value{k: str, s: []byte(string(out))}
		}
	case "LEFT", "RIGHT":
		// The first (last) n characters of s; all of it for n beyond
		// its length, "" for n <= 0, as Flink's.
		right := name == "RIGHT"
		return func(g []*fastjson.Value) value {
			s, n := arg(g, 0), arg(g, 1)
			if s.k != str || n.k != integer {
				return nullV
			}
			rs := []rune(string(s.s))
			k := int(max(min(n.i, int64(len(rs))), 0))
			if right {
				return value{k: str, s: []byte(string(rs[len(rs)-k:]))}
			}
			return value{k: str, s: []byte(string(rs[:k]))}
		}
	case "INITCAP":
		// Each word's first character in upper case, the others in
		// lower case; a word is a run of letters and digits.
		return func(g []*fastjson.Value) value {
			s := arg(g, 0)
			if s.k != str {
				return nullV
			}
			out, start := make([]rune, 0, len(s.s)), true
			for _, r := range string(s.s) {
				word := unicode.IsLetter(r) || unicode.IsDigit(r)
				switch {
				case word && start:
					out = append(out, unicode.ToUpper(r))
				case word:
					out = append(out, unicode.ToLower(r))
				default:
					out = append(out, r)
				}
				start = !word
			}
			return value{k: str, s: []byte(string(out))}
		}
	case "SPLIT_INDEX":
		// SPLIT_INDEX(s, sep, i): the i-th (from 0) piece of s split at
		// sep; NULL when there is none.
		return func(g []*fastjson.Value) value {
			s, sep, i := arg(g, 0), arg(g, 1), arg(g, 2)
			if s.k != str || sep.k != str || i.k != integer || i.i < 0 || len(sep.s) == 0 || len(s.s) == 0 {
				return nullV // an empty string has no pieces, as in Flink
			}
			parts := bytes.Split(s.s, sep.s)
			if i.i >= int64(len(parts)) {
				return nullV
			}
			return value{k: str, s: parts[i.i]}
		}
	case "LOCATE":
		// LOCATE(needle, s [, from]) and POSITION(needle IN s): where
		// needle first starts in s at or after character from (1 by
		// default), counting characters from 1; 0 when it does not.
		return func(g []*fastjson.Value) value {
			needle, s := arg(g, 0), arg(g, 1)
			from := int64(1)
			if len(args) == 3 {
				f := arg(g, 2)
				if f.k != integer {
					return nullV
				}
				from = f.i
			}
			if needle.k != str || s.k != str {
				return nullV
			}
			if from < 1 {
				return value{k: integer}
			}
			rs := []rune(string(s.s))
			if from-1 > int64(len(rs)) {
				return value{k: integer}
			}
			i := strings.Index(string(rs[from-1:]), string(needle.s))
			if i < 0 {
				return value{k: integer}
			}
			return value{k: integer, i: from + int64(utf8.RuneCountInString(string(rs[from-1:])[:i]))}
		}
	case "TIMESTAMPDIFF":
		// TIMESTAMPDIFF(unit, a, b): whole units from a to b, cut toward
		// zero, as Flink's (of fixed units: SECOND to DAY).
		unit, months := c.unitArg(x, 0)
		a, b := c.asTime(x.Args[1].Value, args[1]), c.asTime(x.Args[2].Value, args[2])
		return func(g []*fastjson.Value) value {
			from, to := a(g), b(g)
			if from.k != integer || to.k != integer {
				return nullV
			}
			if months > 0 {
				return value{k: integer, i: monthsBetween(to.i, from.i) / months}
			}
			return value{k: integer, i: (to.i - from.i) / unit}
		}
	case "WEIR_WALL_TIME", "WEIR_INSTANT":
		// WEIR_WALL_TIME(t, offset): time t moved by the zone's offset
		// (milliseconds), WEIR_INSTANT(t, offset) back.
		t := c.asTime(x.Args[0].Value, args[0])
		sign := int64(1)
		if name == "WEIR_INSTANT" {
			sign = -1
		}
		return func(g []*fastjson.Value) value {
			v, off := t(g), arg(g, 1)
			if v.k != integer || off.k != integer {
				return nullV
			}
			return value{k: integer, i: v.i + sign*off.i}
		}
	case "WEIR_ROW":
		lit, ok := x.Args[1].Value.(*sqlparse.Lit)
		var fields []rowField
		if ok && lit.Kind == "string" {
			fields, ok = parseRowFields([]byte(lit.Text))
		}
		if !ok {
			c.fail(x.Pos, name, "", "WEIR_ROW takes a value and its fields (RowFields)")
			return nil
		}
		return func(g []*fastjson.Value) value {
			v := args[0](g)
			if v.k != raw || v.r.Type() != fastjson.TypeObject {
				return nullV
			}
			// A new value of its own (an allocation: a ROW column is rare
			// on a hot path).
			o, err := fastjson.ParseBytes(appendRow(nil, v.r, fields))
			if err != nil {
				return nullV
			}
			return value{k: raw, r: o}
		}
	case "SUBSTRING", "SUBSTR":
		// As Flink's: 1-based, in characters; start 0 is 1, a negative
		// start counts from the end; a negative length is NULL.
		return func(g []*fastjson.Value) value {
			s, start := arg(g, 0), arg(g, 1)
			if s.k != str || start.k != integer {
				return nullV
			}
			runes := []rune(string(s.s))
			n := int64(len(runes))
			var from int64
			switch {
			case start.i > 0:
				from = start.i - 1
			case start.i < 0:
				from = max(n+start.i, 0)
			}
			if from >= n {
				return value{k: str, s: []byte{}}
			}
			to := n
			if len(args) == 3 {
				l := arg(g, 2)
				if l.k != integer || l.i < 0 {
					return nullV
				}
				if n-from > l.i {
					to = from + l.i
				}
			}
			return value{k: str, s: []byte(string(runes[from:to]))}
		}
	case "TRIM", "LTRIM", "RTRIM":
		f := map[string]func([]byte, string) []byte{"TRIM": bytes.Trim, "LTRIM": bytes.TrimLeft, "RTRIM": bytes.TrimRight}[name]
		return func(g []*fastjson.Value) value {
			s := arg(g, 0)
			if s.k != str {
				return nullV
			}
			cut := " "
			if len(args) == 2 {
				// TRIM(BOTH chars FROM s): the characters of chars.
				chars := arg(g, 1)
				if chars.k != str {
					return nullV
				}
				cut = string(chars.s)
			}
			return value{k: str, s: f(s.s, cut)}
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
				if dv.k != integer {
					return nullV
				}
				// Beyond ±400 places nothing changes: a float64 has
				// fewer digits, and any value rounds to 0.
				d = min(max(dv.i, -400), 400)
			}
			return round(v, d)
		}
	case "FLOOR", "CEIL", "CEILING":
		up := name != "FLOOR"
		if len(args) == 2 {
			// FLOOR(t TO unit), CEIL(t TO unit): a time rounded to a
			// whole unit (epoch milliseconds, UTC).
			unit, months := c.unitArg(x, 1)
			t := c.asTime(x.Args[0].Value, args[0])
			return func(g []*fastjson.Value) value {
				v := t(g)
				if v.k != integer {
					return nullV
				}
				if months > 0 {
					return value{k: integer, i: roundMonths(v.i, months, up)}
				}
				r := ((v.i % unit) + unit) % unit
				f := v.i - r
				if up && r != 0 {
					f += unit
				}
				return value{k: integer, i: f}
			}
		}
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
			case bigdec:
				r, _ := ratOf(v)
				q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int)) // floor
				if up && m.Sign() != 0 {
					q.Add(q, big.NewInt(1))
				}
				return decimalOf(q, 38, 0)
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
		layout, _ := javaPattern("yyyy-MM-dd HH:mm:ss")
		if len(args) == 2 {
			lit, ok := x.Args[1].Value.(*sqlparse.Lit)
			if !ok || lit.Kind != "string" {
				c.fail(x.Pos, name, "write the pattern as a string literal, such as 'yyyy-MM-dd HH:mm'", "%s's pattern is a string literal", name)
				return nil
			}
			if layout, ok = javaPattern(lit.Text); !ok {
				c.fail(sqlparse.ExprPos(x.Args[1].Value), lit.Text, "use the letters y, M, d, H, h, m, s, S, a and E, 'quoted' text and '' for a quote", "%s's pattern %q has a letter weir does not format", name, lit.Text)
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
			return value{k: str, s: formatDate(nil, time.UnixMilli(ms).UTC(), layout)}
		}
	}
	// YEAR, QUARTER, MONTH, WEEK, DAYOFYEAR, DAYOFMONTH, DAYOFWEEK,
	// HOUR, MINUTE, SECOND of a time, in UTC.
	field := calendarField(name)
	return func(g []*fastjson.Value) value {
		ms, ok := millis(arg(g, 0))
		if !ok {
			return nullV
		}
		return value{k: integer, i: int64(field(time.UnixMilli(ms).UTC()))}
	}
}

// calendarField is the calendar function name's field of a time, as
// Flink (Calcite) computes it: QUARTER 1-4, WEEK the ISO 8601 week
// (1-53, weeks from Monday, week 1 holding the year's first Thursday),
// DAYOFWEEK 1 (Sunday) to 7 (Saturday), DAYOFYEAR 1-366.
func calendarField(name string) func(time.Time) int {
	switch name {
	case "YEAR":
		return time.Time.Year
	case "QUARTER":
		return func(t time.Time) int { return (int(t.Month())-1)/3 + 1 }
	case "MONTH":
		return func(t time.Time) int { return int(t.Month()) }
	case "WEEK":
		return func(t time.Time) int { _, w := t.ISOWeek(); return w }
	case "DAYOFYEAR":
		return time.Time.YearDay
	case "DAYOFMONTH":
		return time.Time.Day
	case "DAYOFWEEK":
		return func(t time.Time) int { return int(t.Weekday()) + 1 }
	case "HOUR":
		return time.Time.Hour
	case "MINUTE":
		return time.Time.Minute
	}
	return time.Time.Second
}

// round rounds v to d decimal places (d < 0: to tens, hundreds, ...),
// half away from zero, as Flink's ROUND does on the value's decimal
// text: an integer stays an integer, a decimal stays exact, a float is
// rounded as its shortest decimal text (ROUND(1.005e0, 2) is 1.01).
func round(v value, d int64) value {
	switch v.k {
	case bigdec:
		_, sc, _ := mantissa(v)
		if int64(sc) <= d {
			return v
		}
		if d < 0 {
			return round(value{k: float, f: v.f}, d)
		}
		r, _ := ratOf(v)
		return decimalOf(roundRat(r, int(d)), 38, int(d))
	case integer, decimal:
		sc := int64(0)
		if v.k == decimal {
			sc = int64(v.sc)
		}
		if sc <= d {
			return v
		}
		if sc-d > 18 {
			// A step of 10^19 or more: |v| (below 9.3e18 units) is less
			// than half of it.
			return dec(0, uint8(max(d, 0)))
		}
		p := pow10[sc-d]
		q, r := v.i/int64(p), v.i%int64(p)
		if 2*abs64(r) >= int64(p) {
			if v.i < 0 {
				q--
			} else {
				q++
			}
		}
		if d >= 0 {
			return dec(q, uint8(d))
		}
		// Back to an integer: q tens, hundreds, ...
		m := int64(pow10[-d])
		if q > math.MaxInt64/m || q < math.MinInt64/m {
			return value{k: float, f: float64(q) * float64(m)}
		}
		return value{k: integer, i: q * m}
	case float:
		if math.IsInf(v.f, 0) || math.IsNaN(v.f) {
			return v
		}
		r, ok := new(big.Rat).SetString(strconv.FormatFloat(v.f, 'g', -1, 64))
		if !ok {
			return nullV
		}
		scale := new(big.Rat).SetFrac(new(big.Int).Exp(big.NewInt(10), big.NewInt(abs64(d)), nil), big.NewInt(1))
		if d >= 0 {
			r.Mul(r, scale)
		} else {
			r.Quo(r, scale)
		}
		// Half away from zero: truncate |r| + 1/2.
		neg := r.Sign() < 0
		r.Abs(r)
		r.Add(r, big.NewRat(1, 2))
		q := new(big.Int).Quo(r.Num(), r.Denom())
		if neg {
			q.Neg(q)
		}
		out := new(big.Rat).SetInt(q)
		if d >= 0 {
			out.Quo(out, scale)
		} else {
			out.Mul(out, scale)
		}
		f, _ := out.Float64()
		return value{k: float, f: f}
	}
	return nullV
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// toDecimal is v as a DECIMAL(p, sc): rounded half away from zero to sc
// fraction digits and kept at that scale (10.5 is 10.50 at scale 2);
// NULL when it has more than p digits or is no number. A value whose
// mantissa leaves int64 (more than 18 digits) is a bigdec: its text.
func toDecimal(v value, p, sc int) value {
	switch v.k {
	case float:
		if math.IsInf(v.f, 0) || math.IsNaN(v.f) {
			return nullV
		}
		// The float rounded at sc (its shortest text's digits), then
		// that float's digits at sc.
		r, ok := new(big.Rat).SetString(strconv.FormatFloat(round(v, int64(sc)).f, 'f', sc, 64))
		if !ok {
			return nullV
		}
		return decimalOf(roundRat(r, sc), p, sc)
	case bigdec:
		r, ok := new(big.Rat).SetString(string(v.s))
		if !ok {
			return nullV
		}
		return decimalOf(roundRat(r, sc), p, sc)
	case integer, decimal:
	default:
		return nullV
	}
	if r := round(v, int64(sc)); r.k == integer || r.k == decimal {
		m, have := r.i, uint8(0)
		if r.k == decimal {
			have = r.sc
		}
		if m, ok := rescale(m, have, uint8(sc)); ok && sc <= maxScale {
			return smallDecimal(m, p, sc)
		}
	}
	m, have := v.i, 0
	if v.k == decimal {
		have = int(v.sc)
	}
	return decimalOf(roundRat(new(big.Rat).SetFrac(big.NewInt(m), pow10Int(have)), sc), p, sc)
}

// pow10Int is 10^n.
func pow10Int(n int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }

// roundRat is r's mantissa at scale sc, rounded half away from zero.
func roundRat(r *big.Rat, sc int) *big.Int {
	num := new(big.Int).Mul(r.Num(), pow10Int(sc))
	q, rem := new(big.Int).QuoRem(num, r.Denom(), new(big.Int))
	if rem.Sign() != 0 && new(big.Int).Abs(new(big.Int).Lsh(rem, 1)).Cmp(r.Denom()) >= 0 {
		q.Add(q, big.NewInt(int64(num.Sign())))
	}
	return q
}

// smallDecimal is decimalOf for a mantissa in int64 and a scale of at
// most 18, without math/big (the per-record path of a decimal cast).
func smallDecimal(m int64, p, sc int) value {
	u := uint64(m)
	if m < 0 {
		u = -u
	}
	digits := 1
	for ; u >= 10; u /= 10 {
		digits++
	}
	if digits > p && m != 0 {
		return nullV
	}
	if sc == 0 {
		return value{k: integer, i: m}
	}
	return value{k: decimal, i: m, sc: uint8(sc)}
}

// decimalOf is the decimal m / 10^sc of at most p digits (NULL beyond):
// an integer at scale 0, a decimal while m fits int64 and sc is at most
// 18, else a bigdec (its text, and a float64 near it).
func decimalOf(m *big.Int, p, sc int) value {
	if m.IsInt64() && sc <= maxScale {
		return smallDecimal(m.Int64(), p, sc)
	}
	var digits [48]byte
	d := m.Append(digits[:0], 10)
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) > p {
		return nullV
	}
	t := []byte(new(big.Rat).SetFrac(m, pow10Int(sc)).FloatString(sc))
	f, _ := strconv.ParseFloat(string(t), 64)
	return value{k: bigdec, s: t, f: f}
}

// unitArg is call x's argument i, a time unit (the parser makes FLOOR(t
// TO MINUTE)'s and TIMESTAMPDIFF(SECOND, ...)'s a string): SECOND,
// MINUTE, HOUR or DAY as its milliseconds, or MONTH or YEAR as its
// months (calendar units, 0 milliseconds).
func (c compiler) unitArg(x *sqlparse.Call, i int) (ms, months int64) {
	l, ok := x.Args[i].Value.(*sqlparse.Lit)
	known := false
	if ok && l.Kind == "string" {
		switch u := strings.ToUpper(l.Text); u {
		case "MONTH":
			return 0, 1
		case "YEAR":
			return 0, 12
		default:
			ms, known = intervalMillis[u]
		}
	}
	if !known || ms < 1000 {
		c.fail(sqlparse.ExprPos(x.Args[i].Value), sqlparse.FormatExpr(x.Args[i].Value), "use SECOND, MINUTE, HOUR, DAY, MONTH or YEAR", "%s's unit is SECOND, MINUTE, HOUR, DAY, MONTH or YEAR", x.Name.Parts[len(x.Name.Parts)-1].Name)
	}
	return ms, 0
}

// monthsBetween is the number of whole months from t1 to t0 (epoch
// milliseconds, UTC), as Flink's TIMESTAMPDIFF(MONTH, t1, t0) counts
// them (Calcite's DateTimeUtils.subtractMonths): a month from January
// 31 is February's last day, and a day that falls short of t1's time of
// day is not a whole month yet. Negative when t0 is before t1.
func monthsBetween(t0, t1 int64) int64 {
	const day = 86_400_000
	d0, ms0 := floorDiv(t0, day), floorMod(t0, day)
	d1, ms1 := floorDiv(t1, day), floorMod(t1, day)
	x := monthsBetweenDays(d0, d1)
	if addMonths(d1, x) == d0 && ms0 < ms1 {
		x--
	}
	return x
}

// monthsBetweenDays is monthsBetween of two dates (days since the epoch).
func monthsBetweenDays(d0, d1 int64) int64 {
	if d0 < d1 {
		return -monthsBetweenDays(d1, d0)
	}
	// No month is longer than 31 days: the estimate is at most the
	// answer.
	m := (d0 - d1) / 31
	for addMonths(d1, m+1) <= d0 {
		m++
	}
	return m
}

// addMonths is date d (days since the epoch) moved by m months, its day
// cut to the last of the month it lands in.
func addMonths(d, m int64) int64 {
	t := time.UnixMilli(d * 86_400_000).UTC()
	y, mon := int64(t.Year()), int64(t.Month())-1+m
	y, mon = y+floorDiv(mon, 12), floorMod(mon, 12)
	last := time.Date(int(y), time.Month(mon+2), 0, 0, 0, 0, 0, time.UTC).Day()
	return time.Date(int(y), time.Month(mon+1), min(t.Day(), last), 0, 0, 0, 0, time.UTC).UnixMilli() / 86_400_000
}

// roundMonths is FLOOR (up: CEIL) of time t (epoch milliseconds, UTC)
// to a whole number of months since year 0: 1 is the month, 12 the
// year.
func roundMonths(t, months int64, up bool) int64 {
	u := time.UnixMilli(t).UTC()
	n := int64(u.Year())*12 + int64(u.Month()) - 1
	f := n - floorMod(n, months)
	start := time.Date(int(floorDiv(f, 12)), time.Month(floorMod(f, 12)+1), 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	if up && start != t {
		f += months
		start = time.Date(int(floorDiv(f, 12)), time.Month(floorMod(f, 12)+1), 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	}
	return start
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

// parsable reports whether toks (javaPattern's) can be parsed back
// (parseDate): years, months and days, hours, minutes, seconds and
// fractions as numbers, and literal text.
func parsable(toks []dateTok) bool {
	for _, k := range toks {
		if k.letter != 0 && (!strings.ContainsRune("yMdHmsS", rune(k.letter)) || k.letter == 'M' && k.n > 2) {
			return false
		}
	}
	return true
}

// parseDate reads b by toks (javaPattern's, parsable): the wall time it
// gives, as epoch milliseconds in UTC (TO_TIMESTAMP's; a TIMESTAMP has no
// zone). A letter repeated n times takes n digits, one taken alone 1 or
// 2 (a year's yyyy 4, yy 2 in 2000-2099; S the fraction's n digits);
// literal text must match; false for a text of another form or a date
// that does not exist.
func parseDate(b []byte, toks []dateTok) (int64, bool) {
	y, mo, d, h, mi, s, ms := 1970, 1, 1, 0, 0, 0, 0
	for _, k := range toks {
		if k.letter == 0 {
			if !bytes.HasPrefix(b, []byte(k.lit)) {
				return 0, false
			}
			b = b[len(k.lit):]
			continue
		}
		lo, hi := k.n, k.n // digits taken
		if k.n == 1 && k.letter != 'S' && k.letter != 'y' {
			hi = 2
		}
		n, v := 0, 0
		for n < hi && n < len(b) && b[n] >= '0' && b[n] <= '9' {
			v = v*10 + int(b[n]-'0')
			n++
		}
		if n < lo {
			return 0, false
		}
		b = b[n:]
		switch k.letter {
		case 'y':
			if y = v; k.n == 2 {
				y = 2000 + v
			}
		case 'M':
			mo = v
		case 'd':
			d = v
		case 'H':
			h = v
		case 'm':
			mi = v
		case 's':
			s = v
		case 'S':
			for ; n < 3; n++ {
				v *= 10
			}
			for ; n > 3; n-- {
				v /= 10
			}
			ms = v
		}
	}
	if len(b) != 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 59 {
		return 0, false
	}
	t := time.Date(y, time.Month(mo), d, h, mi, s, ms*int(time.Millisecond), time.UTC)
	if t.Day() != d { // 31 April
		return 0, false
	}
	return t.UnixMilli(), true
}

// rowField is a field of a ROW type as WEIR_ROW projects it: its name
// and, for a nested ROW, its fields.
type rowField struct {
	name   string
	key    []byte     // the name as a JSON object's key, with its colon
	fields []rowField // nil: not a ROW
}

// RowFields is the fields argument of WEIR_ROW for a ROW type's fields
// (names, and each field's nested fields, nil when it is not a ROW): a
// JSON array of each field's name, or of [name, [its fields]].
func RowFields(names []string, nested []string) string {
	b := []byte{'['}
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		q, _ := json.Marshal(n)
		if nested[i] == "" {
			b = append(b, q...)
			continue
		}
		b = append(append(append(b, '['), q...), ',')
		b = append(append(b, nested[i]...), ']')
	}
	return string(append(b, ']'))
}

// newRowField is field name, of fields when it is a ROW.
func newRowField(name string, fields []rowField) rowField {
	q, _ := json.Marshal(name)
	return rowField{name: name, key: append(q, ':'), fields: fields}
}

// parseRowFields reads RowFields' text.
func parseRowFields(b []byte) ([]rowField, bool) {
	v, err := fastjson.ParseBytes(b)
	if err != nil {
		return nil, false
	}
	var walk func(v *fastjson.Value) ([]rowField, bool)
	walk = func(v *fastjson.Value) ([]rowField, bool) {
		a, err := v.Array()
		if err != nil {
			return nil, false
		}
		out := make([]rowField, 0, len(a))
		for _, e := range a {
			if n, err := e.StringBytes(); err == nil {
				out = append(out, newRowField(string(n), nil))
				continue
			}
			pair, err := e.Array()
			if err != nil || len(pair) != 2 {
				return nil, false
			}
			n, err := pair[0].StringBytes()
			sub, ok := walk(pair[1])
			if err != nil || !ok {
				return nil, false
			}
			out = append(out, newRowField(string(n), sub))
		}
		return out, true
	}
	return walk(v)
}

// appendRow appends object o as a ROW of fields writes it, as Flink
// reads a ROW column: the declared fields alone, in their order, a field
// the object lacks (or a nested ROW that is no object) null.
func appendRow(b []byte, o *fastjson.Value, fields []rowField) []byte {
	b = append(b, '{')
	for i, f := range fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, f.key...)
		v := o.Get(f.name)
		switch {
		case v == nil || v.Type() == fastjson.TypeNull:
			b = append(b, "null"...)
		case f.fields != nil && v.Type() == fastjson.TypeObject:
			b = appendRow(b, v, f.fields)
		case f.fields != nil:
			b = append(b, "null"...)
		default:
			b = v.MarshalTo(b)
		}
	}
	return append(b, '}')
}
