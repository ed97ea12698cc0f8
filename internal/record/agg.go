package record

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/spec"
	"github.com/weirstream/weir/state"
)

// Acc is the accumulator of one window: one slot per aggregate. It is a
// pointer and is updated in place; the window operator owns it.
type Acc struct{ s []slot }

// slot is one aggregate's state. Which fields are used depends on the
// function: n counts values; the sum of sum and avg is i (int64) until it
// meets a fraction or overflows int64, then d (isD, an exact decimal),
// or f (isF, float64: an aggregate of type float, or a decimal sum beyond
// 38 digits, which sets over); v is min, max, first or last, with ts and
// no (line number) for first and last; list and set serve collect and
// count_distinct.
type slot struct {
	n    int64
	i    int64
	d    dec
	f    float64
	isF  bool
	isD  bool
	over bool // a decimal sum fell back to float64 (decimal_overflow)
	v    val
	ts   etime.Time
	no   int64
	list []collected
	set  map[string]struct{}
	// disordered: list may be out of input order (a value added after
	// one with a later line number, or a list decoded); inputOrder sorts
	// it then.
	disordered bool
}

type collected struct {
	no  int64
	raw string
}

// Aggregator is the declarative aggregate: it implements
// state.AggregateFunc[Record, *Acc, []byte], where the result is the
// aggregates as JSON values, each followed by a 0 byte. With withAcc the
// result has one value more, the accumulators (see appendAccs), for the
// spec.AccColumn of SQL results.
//
// float says, per aggregate, that it was declared type: float (its sums
// are float64 from the start); nil when none is.
type Aggregator struct {
	// Fns are the aggregates' functions (count, sum, ...), in output
	// order.
	Fns []string
	// float, integer and str mark the aggregates of type float, integer
	// and string.
	float, integer, str []bool
	// nullEmpty marks the collects with nulls set (SQL's ARRAY_AGG),
	// whose empty list is null, not [].
	nullEmpty []bool
	// nullOver marks the sums and averages whose decimal overflow is
	// null (spec.Plan.NullOnOverflow).
	nullOver []bool
	withAcc  bool
}

// isFloat reports whether aggregate i keeps float64 sums.
func (a Aggregator) isFloat(i int) bool { return i < len(a.float) && a.float[i] }

// isString reports whether aggregate i (a min or max) is of strings.
func (a Aggregator) isString(i int) bool { return i < len(a.str) && a.str[i] }

// width is how many values a result of a carries: one per aggregate,
// and the accumulators' text if it keeps them.
func (a Aggregator) Width() int {
	if a.withAcc {
		return len(a.Fns) + 1
	}
	return len(a.Fns)
}

// KeepsAccs reports whether the job's results carry the accumulators of
// the aggregates that are not their own (a spec.AccColumn of a SQL table, or
// the archive's rows).
func KeepsAccs(p *spec.Plan) bool {
	r := p.Sinks.Results
	return len(r) > 0 && (r.First("sqlite") != nil || r.First("postgres") != nil || p.Archive != nil) && needsAccColumn(planFns(p))
}

// aggFns lists the functions of the job's aggregates, in order.
func planFns(p *spec.Plan) []string {
	fns := make([]string, len(p.Aggregates))
	for i, a := range p.Aggregates {
		fns[i] = a.Fn
	}
	return fns
}

// NewAggregator returns the job's aggregate function; withAcc as the live job's
// results have it (KeepsAccs).
func NewAggregator(p *spec.Plan, withAcc bool) Aggregator {
	a := Aggregator{Fns: planFns(p), withAcc: withAcc}
	for i, ag := range p.Aggregates {
		switch ag.Type {
		case "float":
			if a.float == nil {
				a.float = make([]bool, len(p.Aggregates))
			}
			a.float[i] = true
		case "integer":
			if a.integer == nil {
				a.integer = make([]bool, len(p.Aggregates))
			}
			a.integer[i] = true
		case "string":
			if a.str == nil {
				a.str = make([]bool, len(p.Aggregates))
			}
			a.str[i] = true
		}
		if ag.Nulls != "" {
			if a.nullEmpty == nil {
				a.nullEmpty = make([]bool, len(p.Aggregates))
			}
			a.nullEmpty[i] = true
		}
		if p.NullOnOverflow(i) {
			if a.nullOver == nil {
				a.nullOver = make([]bool, len(p.Aggregates))
			}
			a.nullOver[i] = true
		}
	}
	return a
}

// appendIntAvg appends the average of s, an avg's state, cut toward zero
// to an integer (an avg of type integer: SQL's AVG of an integer column,
// whose type is the column's); null when it leaves int64.
func appendIntAvg(b []byte, s *slot) []byte {
	switch {
	case s.isD:
		q := new(big.Int).Quo(s.d.big().Num(), new(big.Int).Mul(s.d.big().Denom(), big.NewInt(s.n)))
		if !q.IsInt64() {
			return append(b, "null"...)
		}
		return strconv.AppendInt(b, q.Int64(), 10)
	case s.isF:
		q := math.Trunc(s.f / float64(s.n))
		if math.IsNaN(q) || q < math.MinInt64 || q >= math.MaxInt64 {
			return append(b, "null"...)
		}
		return strconv.AppendInt(b, int64(q), 10)
	}
	return strconv.AppendInt(b, s.i/s.n, 10)
}

// ownAcc reports whether an aggregate's published value is its whole
// accumulator.
func ownAcc(fn string) bool { return fn == "count" || fn == "sum" || fn == "min" || fn == "max" }

// needsAccColumn reports whether a job with these aggregates keeps an
// spec.AccColumn in its SQL results.
func needsAccColumn(fns []string) bool {
	return slices.ContainsFunc(fns, func(fn string) bool { return !ownAcc(fn) })
}

// CreateAccumulator returns an empty accumulator.
func (a Aggregator) CreateAccumulator() *Acc { return newAcc(len(a.Fns)) }

// Touch reads a word of each cache line of the accumulator, so that a
// snapshot that reads many windows ahead overlaps their cache misses (the
// window operator calls it through an interface of its own).
func (a *Acc) Touch() byte {
	var b byte
	for i := range a.s {
		s := &a.s[i]
		b += byte(s.n) + byte(s.v.i) + byte(s.no) + byte(len(s.set))
	}
	return b
}

// newAcc allocates an accumulator of n slots. Up to four slots share one
// allocation with the header, so reading an accumulator (a snapshot reads
// a million of them) costs one cache miss instead of two.
func newAcc(n int) *Acc {
	switch n {
	case 1:
		return colocated(func(s *[1]slot) []slot { return s[:] })
	case 2:
		return colocated(func(s *[2]slot) []slot { return s[:] })
	case 3:
		return colocated(func(s *[3]slot) []slot { return s[:] })
	case 4:
		return colocated(func(s *[4]slot) []slot { return s[:] })
	}
	return &Acc{s: make([]slot, n)}
}

// colocated allocates an accumulator and the slot array A in one object.
func colocated[A any](slots func(*A) []slot) *Acc {
	x := new(struct {
		a Acc
		s A
	})
	x.a.s = slots(&x.s)
	return &x.a
}

// Add adds record r's values to ac, in place, and returns it.
func (a Aggregator) Add(ac *Acc, r Record) *Acc {
	for i, fn := range a.Fns {
		s := &ac.s[i]
		var v val
		if i < len(r.vals) {
			v = r.vals[i]
		}
		if v.kind == vNone {
			continue
		}
		addVal(fn, s, v, r.TS, r.No, a.isFloat(i))
	}
	return ac
}

func addVal(fn string, s *slot, v val, ts etime.Time, no int64, float bool) {
	switch fn {
	case "count":
		s.n++
	case "sum", "avg":
		s.n++
		addNumber(s, v, float)
	case "min", "max":
		if s.n == 0 {
			s.v = v
		} else if c := cmpVal(v, s.v); fn == "min" && c < 0 || fn == "max" && c > 0 || c == 0 && moreDigits(v, s.v) {
			s.v = v
		}
		s.n++
	case "first", "last", "first_value", "last_value":
		if s.n == 0 || replaces(fn, ts, no, s.ts, s.no) {
			s.v, s.ts, s.no = v, ts, no
		}
		s.n++
	case "collect":
		s.n++
		s.disordered = s.disordered || len(s.list) > 0 && no < s.list[len(s.list)-1].no
		s.list = append(s.list, collected{no: no, raw: v.raw})
	case "count_distinct", "sum_distinct", "avg_distinct":
		if s.set == nil {
			s.set = map[string]struct{}{}
		}
		s.set[v.raw] = struct{}{}
		// A DECIMAL(p, 0)'s values are decimals, though their texts are
		// whole numbers: their avg is exact (distinctSlot).
		s.isD = s.isD || v.kind == vDec
	}
}

// distinctSlot is the sum or avg state of the distinct values of s, the
// set of a sum_distinct or avg_distinct (float: of type float), added
// in their sorted order so that a float sum does not depend on the
// map's.
func distinctSlot(s *slot, float bool) slot {
	var t slot
	for _, k := range slices.Sorted(maps.Keys(s.set)) {
		t.n++
		addNumber(&t, distinctVal(k, float, s.isD), float)
	}
	return t
}

// distinctVal reads back a distinct value's text (a number's canonical
// JSON): as a float64 for an aggregate of type float, else exactly (a
// decimal when dec: the values were decimals, 3 a DECIMAL(p, 0)'s).
func distinctVal(text string, float, dec bool) val {
	if !float {
		if i, err := strconv.ParseInt(text, 10, 64); err == nil && !dec {
			return val{kind: vInt, i: i}
		}
		if d, ok := parseDec([]byte(text)); ok {
			return decVal(d)
		}
	}
	f, _ := strconv.ParseFloat(text, 64)
	return val{kind: vFloat, f: f}
}

// distinctSlots are the sum or avg states of acc's sum_distinct and
// avg_distinct aggregates over their distinct values (distinctSlot), by
// aggregate index, computed once for a result (nil without such an
// aggregate); computed reads them.
func (a Aggregator) distinctSlots(ac *Acc) []slot {
	var ds []slot
	for i, fn := range a.Fns {
		if fn == "sum_distinct" || fn == "avg_distinct" {
			if ds == nil {
				ds = make([]slot, len(a.Fns))
			}
			ds[i] = distinctSlot(&ac.s[i], a.isFloat(i))
		}
	}
	return ds
}

// computed returns the slot of aggregate i of ac as sum or avg see it,
// and its function: a sum_distinct's or avg_distinct's sum over its
// distinct values (ds, distinctSlots'), as sum or avg; any other as it
// is.
func (a Aggregator) computed(i int, ac *Acc, ds []slot) (*slot, string) {
	switch fn := a.Fns[i]; fn {
	case "sum_distinct", "avg_distinct":
		return &ds[i], strings.TrimSuffix(fn, "_distinct")
	default:
		return &ac.s[i], fn
	}
}

// replaces reports whether a value at event time ts and arrival number
// no replaces the kept one (at kts, kno) of aggregate fn: first and last
// order by event time, ties by arrival; first_value and last_value by
// arrival, ties by event time. first keeps the earliest, last the
// latest (of equal ones, the later).
func replaces(fn string, ts etime.Time, no int64, kts etime.Time, kno int64) bool {
	a, b, ka, kb := int64(ts), no, int64(kts), kno
	if fn == "first_value" || fn == "last_value" {
		a, b, ka, kb = no, int64(ts), kno, int64(kts)
	}
	c := cmp.Or(cmp.Compare(a, ka), cmp.Compare(b, kb))
	if fn == "first" || fn == "first_value" {
		return c < 0
	}
	return c >= 0
}

// addNumber adds v to a sum. The sum stays int64 while its inputs are
// integers and it fits; then it is an exact decimal (a dec); a float
// input, or a decimal sum beyond 38 digits, makes it float64. float is the
// aggregate's type: float (an int64 overflow goes to float64 there, as a
// float sum needs no decimal; its float inputs are no overflow).
func addNumber(s *slot, v val, float bool) {
	switch {
	case s.isF:
		s.f += asFloat(v)
	case s.isD:
		if v.kind != vFloat {
			if d, ok := addDec(s.d, v.dec()); ok {
				s.d = d
				return
			}
		}
		s.isD, s.isF, s.over, s.f = false, true, true, s.d.float()+asFloat(v)
	case v.kind == vInt:
		r := s.i + v.i
		if (s.i >= 0) == (v.i >= 0) && (r >= 0) != (s.i >= 0) { // overflow
			if float {
				s.isF, s.f = true, float64(s.i)+float64(v.i)
			} else {
				s.isD = true
				s.d, _ = addDec(decFromInt(s.i), decFromInt(v.i)) // below 2^64: fits
			}
			return
		}
		s.i = r
	case v.kind == vDec:
		s.isD, s.d = true, decFromInt(s.i)
		addNumber(s, v, float)
	default: // vFloat
		s.isF, s.f, s.over = true, float64(s.i)+v.f, s.over || !float
	}
}

// mergeNumber adds the sum of q to s's (both of one aggregate).
func mergeNumber(s, q *slot, float bool) {
	switch {
	case q.isF:
		addNumber(s, val{kind: vFloat, f: q.f}, true)
		s.over = s.over || q.over
	case q.isD:
		addNumber(s, decVal(q.d), float)
	default:
		addNumber(s, val{kind: vInt, i: q.i}, float)
	}
}

func asFloat(v val) float64 {
	switch v.kind {
	case vInt:
		return float64(v.i)
	case vDec:
		return v.dec().float()
	}
	return v.f
}

// cmpVal compares two numbers: exactly when both are integers or
// decimals (1.10 equals 1.1), as float64 when either is a float; or two
// strings, by their bytes (SQL's order of strings, UTF-8 byte by byte).
func cmpVal(a, b val) int {
	switch {
	case a.kind == vStr || b.kind == vStr:
		return strings.Compare(a.raw, b.raw)
	case a.kind == vInt && b.kind == vInt:
		return cmp.Compare(a.i, b.i)
	case a.kind == vFloat || b.kind == vFloat:
		return cmp.Compare(asFloat(a), asFloat(b))
	}
	return cmpDec(a.dec(), b.dec())
}

// moreDigits breaks a tie of min or max between equal values so that the
// result does not depend on the order of the input: the one written with
// more fraction digits (1.10 over 1.1) is kept.
func moreDigits(a, b val) bool { return a.kind == vDec && (b.kind != vDec || a.scale > b.scale) }

// Merge adds y into x, in place (as state.AggregateFunc allows), and
// returns x; y is left as it was. A window's sets and lists are added
// to, not copied, as Add adds a record (session merges, sliding panes, a
// two-phase window's bundles).
func (a Aggregator) Merge(x, y *Acc) *Acc {
	for i, fn := range a.Fns {
		s, p, q := &x.s[i], &x.s[i], &y.s[i]
		switch fn {
		case "count":
			s.n = p.n + q.n
		case "sum", "avg":
			*s = *p
			s.list, s.set = nil, nil
			if q.n > 0 {
				s.n += q.n
				mergeNumber(s, q, a.isFloat(i))
			}
		case "min", "max", "first", "last", "first_value", "last_value":
			*s = *p
			if q.n > 0 {
				n := s.n
				if n == 0 {
					*s = *q
				} else {
					addVal(fn, s, q.v, q.ts, q.no, a.isFloat(i))
					s.n = n + q.n
				}
			}
		case "collect":
			s.n = p.n + q.n
			if len(q.list) > 0 {
				s.disordered = s.disordered || q.disordered || len(s.list) > 0 && q.list[0].no < s.list[len(s.list)-1].no
				s.list = append(s.list, q.list...)
			}
			s.inputOrder()
		case "count_distinct", "sum_distinct", "avg_distinct":
			s.isD = p.isD || q.isD
			if s.set == nil {
				s.set = make(map[string]struct{}, len(q.set))
			}
			for k := range q.set {
				s.set[k] = struct{}{}
			}
		}
	}
	return x
}

// Take returns x as a merge of x into an empty accumulator would make
// it (its collect lists in input order), in place: the window operator
// takes an absorbed window's accumulator over with it instead of copying
// it into the merged window's (a long session's sets, once per record).
func (a Aggregator) Take(x *Acc) *Acc {
	a.CollectInInputOrder(x)
	return x
}

// inputOrder sorts a collect's values by line number, their order in the
// input, when they may be out of it (disordered): the check costs
// nothing for a list that Add and Merge kept in order, so a session that
// every record extends is not sorted once per record.
func (s *slot) inputOrder() {
	if s.disordered {
		slices.SortStableFunc(s.list, func(a, b collected) int { return cmp.Compare(a.no, b.no) })
		s.disordered = false
	}
}

// CollectInInputOrder puts ac's collect lists in input order, as a run in
// which every record came in order has them (records folded in later,
// by a backfill or a batch group-by, come at the end otherwise).
func (a Aggregator) CollectInInputOrder(ac *Acc) {
	for i, fn := range a.Fns {
		if fn == "collect" {
			ac.s[i].inputOrder()
		}
	}
}

// Result renders each aggregate as JSON followed by a 0 byte. Empty
// aggregates (no non-null input) are null, except count (0) and
// count_distinct (0); sum_distinct and avg_distinct are sum and avg of
// the distinct values. A decimal sum has the largest scale of its inputs
// (0.10 + 0.2 is 0.30), a decimal avg is rounded half up to max(6, that
// scale) digits; a float sum that overflowed to ±Inf (or NaN) is null.
//
// When a sum or avg fell back to float64 or overflowed float64, the
// result has one segment more after its values (width of them), which
// SplitResult and the sinks do not read: overflowMark, then a byte per
// aggregate (see appendOverflows), then a 0 byte. The output counts it
// (ResultOverflows).
func (a Aggregator) Result(ac *Acc) []byte {
	var b []byte
	ds := a.distinctSlots(ac)
	for i := range a.Fns {
		s, fn := a.computed(i, ac, ds)
		switch {
		case fn == "count":
			b = strconv.AppendInt(b, s.n, 10)
		case fn == "count_distinct":
			b = strconv.AppendInt(b, int64(len(s.set)), 10)
		case fn == "collect" && len(s.list) == 0 && i < len(a.nullEmpty) && a.nullEmpty[i]:
			b = append(b, "null"...)
		case fn == "collect":
			b = append(b, '[')
			for j, it := range s.list {
				if j > 0 {
					b = append(b, ',')
				}
				b = append(b, it.raw...)
			}
			b = append(b, ']')
		case s.n == 0:
			b = append(b, "null"...)
		case s.over && i < len(a.nullOver) && a.nullOver[i]:
			b = append(b, "null"...) // a SQL DECIMAL's sum beyond 38 digits
		case fn == "sum" && s.isD:
			b = appendDec(b, s.d)
		case fn == "sum" && s.isF:
			b = appendFloat(b, s.f)
		case fn == "sum":
			b = strconv.AppendInt(b, s.i, 10)
		case fn == "avg" && i < len(a.integer) && a.integer[i]:
			b = appendIntAvg(b, s)
		case fn == "avg" && s.isD:
			b = appendAvg(b, s.d, s.n)
		case fn == "avg":
			sum := s.f
			if !s.isF {
				sum = float64(s.i) // integers: a float64 average, as before decimals
			}
			b = appendFloat(b, sum/float64(s.n))
		case fn == "min", fn == "max":
			b = appendVal(b, s.v)
		default: // first, last, first_value, last_value
			b = append(b, s.v.raw...)
		}
		b = append(b, 0)
	}
	if a.withAcc {
		b = weir.AppendJSONString(b, string(a.appendAccs(nil, ac)))
		b = append(b, 0)
	}
	return a.appendOverflows(b, ac, ds)
}

// overflowMark starts the segment of a result that says which of its
// sums overflowed (Result).
const overflowMark = 1

// The bytes of the overflow segment, one per aggregate.
const (
	OverNone     = '.' // exact, or an aggregate without a sum
	OverDecimal  = 'd' // a decimal sum beyond 38 digits: a float64 now
	OverInfinite = 'i' // a float sum beyond float64: written as null
)

// appendOverflows appends the overflow segment if a sum or avg of ac
// (of ds, its distinct sums: distinctSlots) overflowed (see Result).
func (a Aggregator) appendOverflows(b []byte, ac *Acc, ds []slot) []byte {
	start := -1
	for i := range a.Fns {
		s, fn := a.computed(i, ac, ds)
		c := byte(OverNone)
		switch {
		case fn != "sum" && fn != "avg" || s.n == 0:
		case s.isF && !isFinite(s.f):
			c = OverInfinite
		case s.over:
			c = OverDecimal
		}
		if c != OverNone && start < 0 {
			start = len(b)
			b = append(b, overflowMark)
			for range i {
				b = append(b, OverNone)
			}
		}
		if start >= 0 {
			b = append(b, c)
		}
	}
	if start >= 0 {
		b = append(b, 0)
	}
	return b
}

// ResultOverflows returns the overflow segment of a result of width
// values (one byte per aggregate), or nil when nothing overflowed.
func ResultOverflows(v []byte, width int) []byte {
	for range width {
		n := slices.Index(v, 0)
		if n < 0 {
			return nil
		}
		v = v[n+1:]
	}
	if len(v) < 2 || v[0] != overflowMark {
		return nil
	}
	return v[1 : len(v)-1]
}

// appendAccs renders the accumulators as a JSON array, one element per
// aggregate: null for count, sum, min and max (their value is their
// accumulator) and for an aggregate without input; [sum, n] for avg (an
// exact decimal sum as its text; a float sum of a decimal aggregate, one
// that overflowed, as a quoted string);
// [value, ts, no] for first and last; [[no, value], ...] for collect; the
// sorted distinct values for count_distinct. The results row stores it as
// a JSON string, so that a store that rewrites JSON (Postgres jsonb)
// keeps the values byte for byte. seedAccs reads it back.
func (a Aggregator) appendAccs(b []byte, ac *Acc) []byte {
	b = append(b, '[')
	for i, fn := range a.Fns {
		if i > 0 {
			b = append(b, ',')
		}
		s := &ac.s[i]
		switch {
		case fn == "collect":
			b = append(b, '[')
			for j, it := range s.list {
				if j > 0 {
					b = append(b, ',')
				}
				b = append(b, '[')
				b = strconv.AppendInt(b, it.no, 10)
				b = append(b, ',')
				b = append(b, it.raw...)
				b = append(b, ']')
			}
			b = append(b, ']')
		case fn == "count_distinct" || fn == "sum_distinct" || fn == "avg_distinct":
			b = append(b, '[')
			for j, k := range slices.Sorted(maps.Keys(s.set)) {
				if j > 0 {
					b = append(b, ',')
				}
				b = append(b, k...)
			}
			b = append(b, ']')
		case ownAcc(fn) || s.n == 0:
			b = append(b, "null"...)
		case fn == "avg":
			b = append(b, '[')
			switch {
			case s.isD:
				b = appendDec(b, s.d)
			case s.isF && !a.isFloat(i):
				// Quoted: a decimal sum that fell back to float64
				// stays one when it is read back.
				b = strconv.AppendQuote(b, strconv.FormatFloat(s.f, 'g', -1, 64))
			case s.isF:
				b = appendAccFloat(b, s.f)
			default:
				b = strconv.AppendInt(b, s.i, 10)
			}
			b = append(b, ',')
			b = strconv.AppendInt(b, s.n, 10)
			b = append(b, ']')
		default: // first, last, first_value, last_value
			b = append(b, '[')
			b = append(b, s.v.raw...)
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(s.ts), 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, s.no, 10)
			b = append(b, ']')
		}
	}
	return append(b, ']')
}

// appendAccFloat writes a float sum of an accumulator: infinities and NaN
// (a float sum that overflowed) as the strings "+Inf", "-Inf" and "NaN",
// which JSON has no numbers for, so that they come back as they were.
func appendAccFloat(b []byte, f float64) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return strconv.AppendQuote(b, strconv.FormatFloat(f, 'g', -1, 64))
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// seedAccs sets the slots of the aggregates that are not their own
// accumulator from what appendAccs wrote.
func (a Aggregator) seedAccs(ac *Acc, text string) error {
	var parts []json.RawMessage
	if err := json.Unmarshal([]byte(text), &parts); err != nil || len(parts) != len(a.Fns) {
		return fmt.Errorf("the %s column holds %.60q, not %d accumulators", spec.AccColumn, text, len(a.Fns))
	}
	for i, fn := range a.Fns {
		s, p := &ac.s[i], parts[i]
		if ownAcc(fn) || string(p) == "null" {
			continue
		}
		var err error
		switch fn {
		case "avg":
			var x [2]json.RawMessage
			if err = json.Unmarshal(p, &x); err == nil {
				if err = json.Unmarshal(x[1], &s.n); err == nil {
					err = a.seedSum(s, i, string(x[0]))
				}
			}
		case "first", "last", "first_value", "last_value":
			var x []json.RawMessage
			if err = json.Unmarshal(p, &x); err == nil && len(x) == 3 {
				var ts int64
				if err = json.Unmarshal(x[1], &ts); err == nil {
					err = json.Unmarshal(x[2], &s.no)
				}
				s.v, s.ts, s.n = val{kind: vJSON, raw: string(x[0])}, etime.Time(ts), 1
			} else if err == nil {
				err = errors.New("want [value, ts, no]")
			}
		case "collect":
			var x [][2]json.RawMessage
			if err = json.Unmarshal(p, &x); err == nil {
				s.list, s.disordered = make([]collected, len(x)), true
				for j, it := range x {
					if err = json.Unmarshal(it[0], &s.list[j].no); err != nil {
						break
					}
					s.list[j].raw = string(it[1])
				}
				s.n = int64(len(x))
			}
		case "count_distinct", "sum_distinct", "avg_distinct":
			var x []json.RawMessage
			if err = json.Unmarshal(p, &x); err == nil {
				s.set = make(map[string]struct{}, len(x))
				for _, k := range x {
					s.set[string(k)] = struct{}{}
				}
			}
		}
		if err != nil {
			return fmt.Errorf("the %s column's accumulator of %s (aggregate %d): %v", spec.AccColumn, fn, i, err)
		}
	}
	return nil
}

// seedSum sets the sum of slot s of aggregate i from its text in an
// accumulator (appendAccs): an integer, a decimal, or a float; quoted (a
// float of a decimal aggregate, "+Inf" and the like), it is a float.
// Texts of weir before decimals wrote float sums unquoted: a decimal
// aggregate reads them as the decimal they print.
func (a Aggregator) seedSum(s *slot, i int, text string) error {
	sum, quoted := strings.CutPrefix(text, `"`)
	if quoted {
		sum = strings.TrimSuffix(sum, `"`)
	} else if n, err := strconv.ParseInt(sum, 10, 64); err == nil {
		s.i = n
		return nil
	} else if d, ok := parseDec([]byte(sum)); ok && !a.isFloat(i) {
		s.isD, s.d = true, d
		return nil
	}
	f, err := strconv.ParseFloat(sum, 64)
	s.isF, s.f, s.over = true, f, !a.isFloat(i)
	return err
}

func appendVal(b []byte, v val) []byte {
	switch v.kind {
	case vDec:
		return appendDec(b, v.dec())
	case vInt:
		return strconv.AppendInt(b, v.i, 10)
	case vFloat:
		return appendFloat(b, v.f)
	case vStr:
		return weir.AppendJSONString(b, v.raw)
	}
	return append(b, v.raw...)
}

// appendFloat writes f as JSON; infinities (a float sum that overflowed)
// become null, since JSON has no infinity.
func appendFloat(b []byte, f float64) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// MarshalBinary encodes the accumulator for checkpoints.
func (a *Acc) MarshalBinary() ([]byte, error) { return a.AppendBinary(nil) }

// AppendBinary appends the accumulator's encoding to dst (checkpoints use
// it to encode without a buffer per window).
func (a *Acc) AppendBinary(dst []byte) ([]byte, error) {
	w := state.Writer{Buf: dst}
	w.Uint(uint64(len(a.s)))
	for i := range a.s {
		s := &a.s[i]
		w.Int(s.n)
		w.Int(s.i)
		w.Uint(math.Float64bits(s.f))
		flags := uint64(s.v.kind)
		if s.isF {
			flags |= 1 << 8
		}
		if s.isD {
			flags |= 1 << 9
		}
		if s.over {
			flags |= 1 << 10
		}
		w.Uint(flags)
		w.Int(s.v.i)
		w.Uint(math.Float64bits(s.v.f))
		w.Bytes([]byte(s.v.raw))
		w.Int(int64(s.ts))
		w.Int(s.no)
		w.Uint(uint64(len(s.list)))
		for _, c := range s.list {
			w.Int(c.no)
			w.Bytes([]byte(c.raw))
		}
		w.Uint(uint64(len(s.set)))
		if len(s.set) > 0 {
			// Sorted: the same state gives the same bytes.
			for _, k := range slices.Sorted(maps.Keys(s.set)) {
				w.Bytes([]byte(k))
			}
		}
		// Decimals, after what checkpoints before them held.
		if s.isD {
			w.Int(s.d.hi)
			w.Uint(s.d.lo)
			w.Uint(uint64(s.d.scale))
		}
		if s.v.kind == vDec {
			w.Int(s.v.hi)
			w.Uint(uint64(s.v.scale))
		}
	}
	return w.Buf, nil
}

// UnmarshalBinary decodes what MarshalBinary wrote.
func (a *Acc) UnmarshalBinary(b []byte) error {
	r := state.Reader{Buf: b}
	n := r.Uint()
	if n > uint64(len(b)) {
		return errors.New("record: corrupt accumulator")
	}
	a.s = make([]slot, n)
	for i := range a.s {
		s := &a.s[i]
		s.n = r.Int()
		s.i = r.Int()
		s.f = math.Float64frombits(r.Uint())
		flags := r.Uint()
		s.v.kind = uint8(flags)
		s.isF = flags&(1<<8) != 0
		s.isD = flags&(1<<9) != 0
		s.over = flags&(1<<10) != 0
		s.v.i = r.Int()
		s.v.f = math.Float64frombits(r.Uint())
		s.v.raw = string(r.Bytes())
		s.ts = etime.Time(r.Int())
		s.no = r.Int()
		if k := r.Uint(); k > 0 && k <= uint64(len(b)) {
			s.list, s.disordered = make([]collected, k), true
			for j := range s.list {
				s.list[j].no = r.Int()
				s.list[j].raw = string(r.Bytes())
			}
		}
		if k := r.Uint(); k > 0 && k <= uint64(len(b)) {
			s.set = make(map[string]struct{}, k)
			for range k {
				s.set[string(r.Bytes())] = struct{}{}
			}
		}
		if s.isD {
			s.d.hi = r.Int()
			s.d.lo = r.Uint()
			s.d.scale = uint8(min(r.Uint(), maxDecDigits))
		}
		if s.v.kind == vDec {
			s.v.hi = r.Int()
			s.v.scale = uint8(min(r.Uint(), maxDecDigits))
		}
	}
	return r.Err
}

// SplitResult splits Aggregator.Result into its first n JSON values.
func SplitResult(b []byte, n int) []string {
	out := make([]string, 0, n)
	for len(b) > 0 && len(out) < n {
		i := slices.Index(b, 0)
		out = append(out, string(b[:i]))
		b = b[i+1:]
	}
	return out
}
