// Package jsonnum writes JSON numbers in one canonical form: two number
// literals get the same text exactly when they are the same number, at
// any size or precision. Keys compare by it (spec) and the SQLite sink
// stores numbers by it (connector/sqliteio), so that the job, its sinks
// and a backfill address one key the same way.
package jsonnum

import (
	"math"
	"strconv"
	"strings"
)

// MaxPlainDigits is the most digits an integer is written with in full:
// every integer up to 40 digits (128-bit integers, SQL decimal(38))
// keeps its digits; a larger one is written in exponent form.
const MaxPlainDigits = 40

// maxExp bounds the exponents normalized: a literal whose exponent is
// larger than this in magnitude is kept as written (see AppendCanonical).
const maxExp = 1 << 40

// AppendCanonical appends the canonical text of lit, a number in JSON
// syntax (the caller has validated it), and returns the extended buffer.
// lit must not alias dst's spare capacity.
//
// The canonical text is exact: it has every significant digit of lit.
//   - Zero is 0 (also -0, 0.0, 0e5).
//   - An integer with at most MaxPlainDigits digits is written in full:
//     1.0, 1e0 and 10e-1 are 1; 1e20 is 100000000000000000000.
//   - Any other number is written as strconv.FormatFloat(x, 'g', -1, 64)
//     writes a float64: fixed notation when its decimal exponent is in
//     -4..5, else d.ddde±XX, but with all of lit's significant digits,
//     so a number that is the shortest form of a float64 gets that
//     float64's text (1.5, 1e-07, 1.2345675e+06) and one beyond float64's
//     precision or range keeps its digits (0.1000000000000000001,
//     1e+400).
//
// A literal whose exponent exceeds 2^40 in magnitude is appended as
// written: no other number has that text, though two spellings of such a
// number are not merged.
func AppendCanonical(dst, lit []byte) []byte {
	d, ok := parse(lit)
	if !ok {
		return append(dst, lit...)
	}
	if len(d.digits) == 0 {
		return append(dst, '0')
	}
	if d.neg {
		dst = append(dst, '-')
	}
	nd := int64(len(d.digits))
	if d.dp >= nd && d.dp <= MaxPlainDigits { // an integer
		dst = append(dst, d.digits...)
		for range d.dp - nd {
			dst = append(dst, '0')
		}
		return dst
	}
	if exp := d.dp - 1; exp < -4 || exp >= 6 {
		dst = append(dst, d.digits[0])
		if nd > 1 {
			dst = append(dst, '.')
			dst = append(dst, d.digits[1:]...)
		}
		dst = append(dst, 'e')
		if exp < 0 {
			dst = append(dst, '-')
			exp = -exp
		} else {
			dst = append(dst, '+')
		}
		if exp < 10 {
			dst = append(dst, '0')
		}
		return strconv.AppendInt(dst, exp, 10)
	}
	if d.dp <= 0 {
		dst = append(dst, '0', '.')
		for range -d.dp {
			dst = append(dst, '0')
		}
		return append(dst, d.digits...)
	}
	dst = append(dst, d.digits[:d.dp]...)
	dst = append(dst, '.')
	return append(dst, d.digits[d.dp:]...)
}

// decimal is a number as 0.digits × 10^dp: digits has no leading or
// trailing zeros (none at all for zero).
type decimal struct {
	neg    bool
	digits []byte // a sub-slice of the literal when it has no '.', else a copy
	dp     int64
}

// parse reads a JSON number literal; false if it is not one or its
// exponent is beyond maxExp.
func parse(lit []byte) (decimal, bool) {
	var d decimal
	i := 0
	if i < len(lit) && lit[i] == '-' {
		d.neg = true
		i++
	}
	intStart := i
	for i < len(lit) && '0' <= lit[i] && lit[i] <= '9' {
		i++
	}
	intPart := lit[intStart:i]
	var frac []byte
	if i < len(lit) && lit[i] == '.' {
		i++
		f := i
		for i < len(lit) && '0' <= lit[i] && lit[i] <= '9' {
			i++
		}
		frac = lit[f:i]
	}
	if len(intPart) == 0 {
		return d, false
	}
	var exp int64
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		neg := false
		if i < len(lit) && (lit[i] == '+' || lit[i] == '-') {
			neg = lit[i] == '-'
			i++
		}
		if i == len(lit) {
			return d, false
		}
		for ; i < len(lit); i++ {
			c := lit[i]
			if c < '0' || c > '9' {
				return d, false
			}
			if exp = exp*10 + int64(c-'0'); exp > maxExp {
				return d, false
			}
		}
		if neg {
			exp = -exp
		}
	}
	if i != len(lit) {
		return d, false
	}
	digits := intPart
	if len(frac) > 0 {
		digits = append(append(make([]byte, 0, len(intPart)+len(frac)), intPart...), frac...)
	}
	d.dp = int64(len(intPart)) + exp
	for len(digits) > 0 && digits[0] == '0' {
		digits = digits[1:]
		d.dp--
	}
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
	}
	d.digits = digits
	if len(digits) == 0 {
		d.neg = false
	}
	return d, true
}

// AppendJava appends f as Java's Double.toString writes it (bits 64), or
// Float.toString (bits 32, f a float32's value), as Flink writes a
// DOUBLE or a FLOAT (its JSON format, CAST to STRING): the shortest
// digits that read back as f, at least one after the point; plain from
// 10^-3 up to 10^7, else d.dddE±n with a capital E and no plus sign:
// 7.0, 0.001, 1234567.0, 1.0E7, 2.953724091E7, 1.0E-4. Infinities and
// NaN are written as Java does (Infinity, NaN), which is not JSON.
func AppendJava(b []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "Infinity"...)
	case math.IsInf(f, -1):
		return append(b, "-Infinity"...)
	case f == 0 && math.Signbit(f):
		return append(b, "-0.0"...)
	case f == 0:
		return append(b, "0.0"...)
	}
	var buf [40]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, bits) // -d.ddde±XX
	if !strings.Contains(string(e), ".") {
		// Java writes two digits at least, the closer of them to the
		// value (Double.MIN_VALUE, 5e-324 at the shortest, is 4.9E-324).
		e = strconv.AppendFloat(buf[:0], f, 'e', 1, bits)
	}
	if e[0] == '-' {
		b = append(b, '-')
		e = e[1:]
	}
	mant, exps, _ := strings.Cut(string(e), "e")
	exp, _ := strconv.Atoi(exps)
	digits := strings.Replace(mant, ".", "", 1)
	if abs := math.Abs(f); abs >= 1e-3 && abs < 1e7 {
		// (The two digits are the significand's: 0.1, not 0.10.)
		if t := strings.TrimRight(digits, "0"); t != "" {
			digits = t
		}
		if exp < 0 {
			b = append(b, "0."...)
			b = append(b, strings.Repeat("0", -exp-1)...)
			return append(b, digits...)
		}
		for len(digits) < exp+1 {
			digits += "0"
		}
		b = append(b, digits[:exp+1]...)
		b = append(b, '.')
		if frac := digits[exp+1:]; frac != "" {
			return append(b, frac...)
		}
		return append(b, '0')
	}
	b = append(b, digits[0], '.')
	if len(digits) > 1 {
		b = append(b, digits[1:]...)
	} else {
		b = append(b, '0')
	}
	b = append(b, 'E')
	return strconv.AppendInt(b, int64(exp), 10)
}
