package record

import (
	"math"
	"math/big"
	"math/bits"
	"strconv"
)

// dec is an exact decimal number, m × 10^-scale, where m is a 128-bit
// two's complement integer (hi:lo) with |m| < 10^38 and scale <= 38: the
// values of SQL's DECIMAL(38, scale). It is a value type of fixed size,
// so that sums and comparisons of decimals allocate nothing (see
// docs/DESIGN.md, "Exact decimals"). The zero dec is 0 at scale 0.
//
// The scale is part of the value as SQL keeps it: 1.10 is 110 at scale 2,
// equal to 1.1 (11 at scale 1) in cmpDec, but written as 1.10.
type dec struct {
	hi    int64
	lo    uint64
	scale uint8
}

// maxDecDigits is the precision of a dec, and its largest scale.
const maxDecDigits = 38

// pow10 holds 10^0 .. 10^19, every power of ten that fits in a uint64.
var pow10 = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// dec38 is 10^38 as hi:lo, the bound on a dec's magnitude.
var dec38hi, dec38lo = bits.Mul64(pow10[19], pow10[19])

func decFromInt(i int64) dec {
	var hi int64
	if i < 0 {
		hi = -1
	}
	return dec{hi: hi, lo: uint64(i)}
}

func (d dec) isNeg() bool { return d.hi < 0 }

// abs returns d's magnitude as an unsigned 128-bit number.
func (d dec) abs() (hi, lo uint64) {
	hi, lo = uint64(d.hi), d.lo
	if d.hi < 0 {
		lo, b := bits.Sub64(0, lo, 0)
		hi, _ = bits.Sub64(0, hi, b)
		return hi, lo
	}
	return hi, lo
}

// fromAbs builds a dec of sign neg and magnitude hi:lo at scale s; ok is
// false when the magnitude is 10^38 or more.
func fromAbs(neg bool, hi, lo uint64, s uint8) (dec, bool) {
	if hi > dec38hi || hi == dec38hi && lo >= dec38lo {
		return dec{}, false
	}
	if neg {
		var b uint64
		lo, b = bits.Sub64(0, lo, 0)
		hi, _ = bits.Sub64(0, hi, b)
	}
	return dec{hi: int64(hi), lo: lo, scale: s}, true
}

// mulPow10 multiplies the magnitude hi:lo by 10^k; ok is false when the
// product does not fit in 128 bits.
func mulPow10(hi, lo uint64, k int) (uint64, uint64, bool) {
	for k > 0 {
		step := min(k, 19)
		m := pow10[step]
		h1, l1 := bits.Mul64(lo, m)
		h2, l2 := bits.Mul64(hi, m)
		if h2 != 0 {
			return 0, 0, false
		}
		var c uint64
		hi, c = bits.Add64(h1, l2, 0)
		if c != 0 {
			return 0, 0, false
		}
		lo = l1
		k -= step
	}
	return hi, lo, true
}

// rescale returns d at scale s >= d.scale (the same value with more
// fraction digits); ok is false when it would need more than 38 digits.
func (d dec) rescale(s uint8) (dec, bool) {
	if s == d.scale {
		return d, true
	}
	if s < d.scale || s > maxDecDigits {
		return dec{}, false
	}
	hi, lo := d.abs()
	hi, lo, ok := mulPow10(hi, lo, int(s-d.scale))
	if !ok {
		return dec{}, false
	}
	return fromAbs(d.isNeg(), hi, lo, s)
}

// round returns d at scale s: rounded half away from zero (SQL's and
// Java's HALF_UP) when d has more fraction digits, else rescaled; ok is
// false when it would need more than 38 digits.
func (d dec) round(s uint8) (dec, bool) {
	if d.scale <= s {
		return d.rescale(s)
	}
	hi, lo := d.abs()
	// Drop all but the last of the digits beyond s; the last decides.
	for k := int(d.scale-s) - 1; k > 0; {
		step := min(k, 19)
		hi, lo, _ = divU128(hi, lo, pow10[step])
		k -= step
	}
	hi, lo, r := divU128(hi, lo, 10)
	if r >= 5 {
		var c uint64
		lo, c = bits.Add64(lo, 1, 0)
		hi += c
	}
	return fromAbs(d.isNeg(), hi, lo, s)
}

// divU128 divides the unsigned hi:lo by v (> 0): the quotient and the
// remainder.
func divU128(hi, lo, v uint64) (qhi, qlo, r uint64) {
	qhi = hi / v
	qlo, r = bits.Div64(hi%v, lo, v)
	return qhi, qlo, r
}

// fits reports whether d has at most p digits (|m| < 10^p, p <= 38).
func (d dec) fits(p int) bool {
	hi, lo := d.abs()
	bhi, blo, _ := mulPow10(0, 1, p)
	return hi < bhi || hi == bhi && lo < blo
}

// addDec returns a + b at the larger of their scales, as SQL's DECIMAL
// sum does; ok is false when the sum needs more than 38 digits.
func addDec(a, b dec) (dec, bool) {
	s := max(a.scale, b.scale)
	a, ok1 := a.rescale(s)
	b, ok2 := b.rescale(s)
	if !ok1 || !ok2 {
		return dec{}, false
	}
	lo, c := bits.Add64(a.lo, b.lo, 0)
	hi, _ := bits.Add64(uint64(a.hi), uint64(b.hi), c)
	r := dec{hi: int64(hi), lo: lo, scale: s}
	if (a.hi < 0) == (b.hi < 0) && (r.hi < 0) != (a.hi < 0) {
		return dec{}, false // beyond 128 bits
	}
	h, l := r.abs()
	return fromAbs(r.isNeg(), h, l, s)
}

// cmpDec compares a and b by value: -1, 0 or +1 (1.10 and 1.1 are
// equal).
func cmpDec(a, b dec) int {
	if a.isNeg() != b.isNeg() {
		if a.isNeg() {
			return -1
		}
		return 1
	}
	s := max(a.scale, b.scale)
	x, ok1 := a.rescale(s)
	y, ok2 := b.rescale(s)
	if !ok1 || !ok2 {
		return a.big().Cmp(b.big()) // aligned, one needs more than 38 digits
	}
	switch {
	case x.hi != y.hi:
		if x.hi < y.hi {
			return -1
		}
		return 1
	case x.lo != y.lo:
		if x.lo < y.lo {
			return -1
		}
		return 1
	}
	return 0
}

// big returns d as a rational (for the rare comparisons and averages
// that need more than 128 bits).
func (d dec) big() *big.Rat {
	hi, lo := d.abs()
	m := new(big.Int).Lsh(new(big.Int).SetUint64(hi), 64)
	m.Or(m, new(big.Int).SetUint64(lo))
	if d.isNeg() {
		m.Neg(m)
	}
	return new(big.Rat).SetFrac(m, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.scale)), nil))
}

// float returns the float64 nearest to d.
func (d dec) float() float64 {
	var buf [48]byte
	f, _ := strconv.ParseFloat(string(appendDec(buf[:0], d)), 64)
	return f
}

// appendDec writes d in plain notation with exactly d.scale fraction
// digits: 0.30, -12.5, 7.
func appendDec(b []byte, d dec) []byte {
	hi, lo := d.abs()
	if d.isNeg() {
		b = append(b, '-')
	}
	return appendScaled(b, hi, lo, int(d.scale))
}

// appendScaled writes the magnitude hi:lo × 10^-scale in plain notation.
func appendScaled(b []byte, hi, lo uint64, scale int) []byte {
	var digits [40]byte
	n := appendU128(digits[:0], hi, lo)
	if len(n) <= scale { // 0.0…: pad with zeros
		b = append(b, '0', '.')
		for range scale - len(n) {
			b = append(b, '0')
		}
		return append(b, n...)
	}
	b = append(b, n[:len(n)-scale]...)
	if scale > 0 {
		b = append(b, '.')
		b = append(b, n[len(n)-scale:]...)
	}
	return b
}

// appendU128 writes the unsigned 128-bit hi:lo in decimal.
func appendU128(b []byte, hi, lo uint64) []byte {
	if hi == 0 {
		return strconv.AppendUint(b, lo, 10)
	}
	// hi:lo = q × 10^19 + r, r < 10^19; q < 2^128 / 10^19 < 2^65.
	qhi := hi / pow10[19]
	qlo, r := bits.Div64(hi%pow10[19], lo, pow10[19])
	b = appendU128(b, qhi, qlo)
	var chunk [19]byte
	s := strconv.AppendUint(chunk[:0], r, 10)
	for range 19 - len(s) {
		b = append(b, '0')
	}
	return append(b, s...)
}

// parseDec reads a JSON number's text as a dec: its scale is the number
// of fraction digits as written, less the exponent (1.50 has scale 2,
// 1.5e1 is 15 at scale 0, 1e-2 is 0.01). ok is false for text that is not
// a JSON number, and for numbers beyond DECIMAL(38, s): more than 38
// digits at their scale, or a scale above 38.
func parseDec(t []byte) (dec, bool) {
	i, neg := 0, false
	if i < len(t) && t[i] == '-' {
		neg, i = true, i+1
	}
	var hi, lo uint64
	digits, frac, seen := 0, 0, false
	point := false
	for ; i < len(t); i++ {
		c := t[i]
		switch {
		case c >= '0' && c <= '9':
			seen = true
			if point {
				frac++
			}
			if digits == 0 && c == '0' {
				continue // a leading zero counts for nothing
			}
			if digits++; digits > maxDecDigits {
				return dec{}, false
			}
			if digits <= 19 { // fits a uint64: the common case, no 128-bit step
				lo = lo*10 + uint64(c-'0')
				continue
			}
			var ok bool
			if hi, lo, ok = mulPow10(hi, lo, 1); !ok {
				return dec{}, false
			}
			var carry uint64
			lo, carry = bits.Add64(lo, uint64(c-'0'), 0)
			hi += carry
		case c == '.' && !point:
			point = true
		case c == 'e' || c == 'E':
			goto exponent
		default:
			return dec{}, false
		}
	}
	return finishDec(neg, hi, lo, digits, frac, 0, seen)
exponent:
	{
		i++
		eneg := false
		if i < len(t) && (t[i] == '+' || t[i] == '-') {
			eneg, i = t[i] == '-', i+1
		}
		if i == len(t) {
			return dec{}, false
		}
		exp := 0
		for ; i < len(t); i++ {
			c := t[i]
			if c < '0' || c > '9' {
				return dec{}, false
			}
			if exp = exp*10 + int(c-'0'); exp > 1000 {
				exp = 1000 // far beyond any dec either way
			}
		}
		if eneg {
			exp = -exp
		}
		return finishDec(neg, hi, lo, digits, frac, exp, seen)
	}
}

// finishDec builds the dec of a parsed number: magnitude hi:lo of digits
// significant digits, frac of them after the point, times 10^exp.
func finishDec(neg bool, hi, lo uint64, digits, frac, exp int, seen bool) (dec, bool) {
	if !seen {
		return dec{}, false
	}
	scale := frac - exp
	if scale < 0 {
		if digits-scale > maxDecDigits && (hi|lo) != 0 {
			return dec{}, false
		}
		var ok bool
		if hi, lo, ok = mulPow10(hi, lo, -scale); !ok {
			return dec{}, false
		}
		scale = 0
	}
	if scale > maxDecDigits {
		if hi|lo != 0 {
			return dec{}, false
		}
		scale = maxDecDigits // a zero written with more fraction digits is still exact
	}
	return fromAbs(neg, hi, lo, uint8(scale))
}

// avgScale is the scale of the average of decimals of scale s: at least
// 6, as Flink's AVG over DECIMAL(p, s) gives DECIMAL(38, max(6, s)).
func avgScale(s uint8) int { return max(6, int(s)) }

// appendAvg writes sum / n (n > 0) rounded half away from zero (SQL's
// and Java's HALF_UP) to avgScale(sum.scale) fraction digits.
func appendAvg(b []byte, sum dec, n int64) []byte {
	t := avgScale(sum.scale)
	hi, lo := sum.abs()
	if h, l, ok := mulPow10(hi, lo, t-int(sum.scale)); ok {
		un := uint64(n)
		qhi, r := bits.Div64(0, h, un)
		qlo, r := bits.Div64(r, l, un)
		if r >= un-r { // 2r >= n: round half up
			var c uint64
			qlo, c = bits.Add64(qlo, 1, 0)
			qhi += c
		}
		if sum.isNeg() && (qhi|qlo) != 0 {
			b = append(b, '-')
		}
		return appendScaled(b, qhi, qlo, t)
	}
	// Beyond 128 bits once scaled: the same rounding in math/big.
	num := sum.big()
	num.Quo(num, new(big.Rat).SetInt64(n))
	scaled := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t)), nil)
	num.Mul(num, new(big.Rat).SetInt(scaled))
	q, r := new(big.Int).QuoRem(num.Num(), num.Denom(), new(big.Int))
	if r.Abs(r).Lsh(r, 1).Cmp(num.Denom()) >= 0 {
		if q.Sign() < 0 || num.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	if q.Sign() < 0 {
		b = append(b, '-')
		q.Neg(q)
	}
	s := q.String()
	for len(s) <= t {
		s = "0" + s
	}
	b = append(b, s[:len(s)-t]...)
	return append(append(b, '.'), s[len(s)-t:]...)
}

// isFinite reports whether f is neither infinite nor NaN.
func isFinite(f float64) bool { return !math.IsInf(f, 0) && !math.IsNaN(f) }

// AppendDecimalCast appends JSON value v cast to a DECIMAL(p, s), as
// Flink casts a value into a DECIMAL sink column (spec.Column.Decimal):
// a number rounded half away from zero to scale s, null beyond p digits;
// null, and a value that is no number, as they are.
func AppendDecimalCast(b, v []byte, p, s int) []byte {
	d, ok := parseDec(v)
	if !ok {
		// A float beyond 38 digits at its scale (1.5e+40, 1e-40): exactly,
		// through a fraction.
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil || !isFinite(f) {
			return append(b, v...)
		}
		r := new(big.Rat).SetFloat64(f)
		scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s)), nil)))
		q, m := new(big.Int).QuoRem(scaled.Num(), scaled.Denom(), new(big.Int))
		if new(big.Int).Mul(new(big.Int).Abs(m), big.NewInt(2)).Cmp(scaled.Denom()) >= 0 {
			q.Add(q, big.NewInt(int64(q.Sign()|m.Sign()))) // half away from zero
		}
		if new(big.Int).Abs(q).Cmp(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil)) >= 0 {
			return append(b, "null"...)
		}
		hi, lo := new(big.Int).Rsh(new(big.Int).Abs(q), 64).Uint64(), new(big.Int).Abs(q).Uint64()
		d, _ = fromAbs(q.Sign() < 0, hi, lo, uint8(s))
		return appendDec(b, d)
	}
	if d, ok = d.round(uint8(s)); !ok || !d.fits(p) {
		return append(b, "null"...)
	}
	return appendDec(b, d)
}
