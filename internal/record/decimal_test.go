package record

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/connector/fileio"
	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/spec"
)

// decimalAgg returns jobtest.DecimalJob's aggregate function and a function that
// decodes an order of key a with that amount (JSON text) and line number
// no.
func decimalAgg(t testing.TB) (Aggregator, func(no int64, amount string) Record) {
	t.Helper()
	p, err := spec.Parse([]byte(jobtest.DecimalJob))
	if err != nil {
		t.Fatal(err)
	}
	dec := NewDecoder(p, clock.Real{})
	return NewAggregator(p, false), func(no int64, amount string) Record {
		t.Helper()
		r, err := dec.Decode(fileio.Line{Kind: fileio.Data, No: no, Text: []byte(`{"k":"a","ts":1767225600000,"amount":` + amount + `}`)})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
}

// randDecimal is a random JSON number: an integer (a fifth of them, some
// beyond int64) or a decimal with 1 to 6 fraction digits (trailing zeros
// kept, as written), of up to 24 digits, and its exact value.
func randDecimal(r *rand.Rand) (string, *big.Rat) {
	digits := 1 + r.IntN(24)
	m := new(big.Int)
	for range digits {
		m.Mul(m, big.NewInt(10)).Add(m, big.NewInt(int64(r.IntN(10))))
	}
	if r.IntN(2) == 0 {
		m.Neg(m)
	}
	scale := 0
	if r.IntN(5) > 0 {
		scale = 1 + r.IntN(6)
	}
	x := new(big.Rat).SetFrac(m, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
	return x.FloatString(scale), x
}

// TestDecimalSumsAgainstBig: sums, averages, minima and maxima of random
// decimals, added in random orders to accumulators that are split at
// random, round-tripped through the checkpoint encoding and merged in
// random order (as sliding and session windows and backfills merge
// them), give the exact answer that math/big computes, and the same text
// in every order: the sum at the largest scale of its inputs, the avg
// rounded half up to max(6, that scale) digits, min and max with the
// most fraction digits among equal values.
func TestDecimalSumsAgainstBig(t *testing.T) {
	agg, order := decimalAgg(t)
	r := rand.New(rand.NewPCG(17, 4))
	for round := range 300 {
		n := 1 + r.IntN(60)
		texts := make([]string, n)
		sum := new(big.Rat)
		scale := 0
		var lo, hi *big.Rat
		var loText, hiText string
		for i := range texts {
			s, x := randDecimal(r)
			texts[i] = s
			sum.Add(sum, x)
			fd := 0
			if _, f, ok := strings.Cut(s, "."); ok {
				fd = len(f)
			}
			scale = max(scale, fd)
			better := func(cur *big.Rat, curText string, c int) bool {
				return cur == nil || c < 0 || c == 0 && fd > fracDigits(curText)
			}
			if better(lo, loText, x.Cmp(orZero(lo))) {
				lo, loText = x, s
			}
			if better(hi, hiText, -x.Cmp(orZero(hi))) {
				hi, hiText = x, s
			}
		}
		mean := new(big.Rat).Quo(sum, big.NewRat(int64(n), 1))
		want := []string{sum.FloatString(scale), mean.FloatString(max(6, scale)), loText, hiText}
		if scale == 0 {
			// Integers: an int64 sum prints as one; the avg of integers
			// stays float64, as before decimals.
			want = want[:1]
		}
		recs := make([]Record, n)
		for i, s := range texts {
			recs[i] = order(int64(i+1), s)
		}
		var first []string
		for order := range 4 {
			got := SplitResult(agg.Result(shuffleSplitMerge(t, r, agg, recs)), len(agg.Fns))
			if !slices.Equal(got[:len(want)], want) {
				t.Fatalf("round %d, order %d: inputs %v\ngot  %v\nwant %v", round, order, texts, got, want)
			}
			if first == nil {
				first = got
			} else if !slices.Equal(got, first) {
				t.Fatalf("round %d: order %d gives %v, the first order %v", round, order, got, first)
			}
		}
	}
}

// shuffleSplitMerge adds recs, in a random order, to accumulators split
// at random, each round-tripped through the checkpoint encoding, and
// merges them in a random order (as sliding and session windows and
// backfills merge them).
func shuffleSplitMerge(t *testing.T, r *rand.Rand, agg Aggregator, recs []Record) *Acc {
	t.Helper()
	n := len(recs)
	r.Shuffle(n, func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	var parts []*Acc
	for i := 0; i < n; {
		k := 1 + r.IntN(n-i)
		ac := agg.CreateAccumulator()
		for _, rc := range recs[i : i+k] {
			agg.Add(ac, rc)
		}
		parts = append(parts, throughCheckpoint(t, ac))
		i += k
	}
	for len(parts) > 1 {
		i := r.IntN(len(parts) - 1)
		if r.IntN(2) == 0 {
			// As a session takes an absorbed window over.
			parts = slices.Replace(parts, i, i+2, agg.Merge(agg.Take(parts[i]), parts[i+1]))
			continue
		}
		// In place, as a two-phase window merges a bundle: the bundle
		// stays as it was.
		y := parts[i+1]
		before, _ := y.MarshalBinary()
		parts = slices.Replace(parts, i, i+2, agg.Merge(parts[i], y))
		if after, _ := y.MarshalBinary(); !bytes.Equal(before, after) {
			t.Fatal("Merge changed its second accumulator")
		}
	}
	return parts[0]
}

// throughCheckpoint returns ac encoded as a checkpoint holds it and
// decoded again.
func throughCheckpoint(t *testing.T, ac *Acc) *Acc {
	t.Helper()
	b, err := ac.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	back := new(Acc)
	if err := back.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	return back
}

func orZero(x *big.Rat) *big.Rat {
	if x == nil {
		return new(big.Rat)
	}
	return x
}

func fracDigits(s string) int {
	_, f, _ := strings.Cut(s, ".")
	return len(f)
}

// FuzzParseDec: parseDec never panics, agrees with math/big on the value
// of every number it accepts, and its text reads back as the same value
// at the same scale.
func FuzzParseDec(f *testing.F) {
	for _, s := range []string{"0", "-0.00", "1.10", "1e3", "1.5E-2", "99999999999999999999999999999999999999", "0." + strings.Repeat("0", 37) + "1", "1e-400", "-12.5e+1", "0." + strings.Repeat("0", 45), "0e-50"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := parseDec([]byte(s))
		if !ok {
			return
		}
		want, okBig := new(big.Rat).SetString(s)
		if !okBig {
			t.Fatalf("parseDec accepts %q, math/big does not", s)
		}
		if d.big().Cmp(want) != 0 {
			t.Fatalf("parseDec(%q) = %s", s, appendDec(nil, d))
		}
		text := appendDec(nil, d)
		back, ok := parseDec(text)
		if !ok || back != d {
			t.Fatalf("%q prints %s, which reads back as %v %v", s, text, back, ok)
		}
	})
}

// TestZeroBeyondScale: a zero written with more fraction digits than a
// decimal keeps is exact, not a decimal_overflow.
func TestZeroBeyondScale(t *testing.T) {
	for _, s := range []string{"0." + strings.Repeat("0", 45), "-0e-50"} {
		if d, ok := parseDec([]byte(s)); !ok || d.big().Sign() != 0 {
			t.Errorf("parseDec(%q) = %s, %v; want an exact zero", s, appendDec(nil, d), ok)
		}
	}
}

// TestOldCheckpointAccumulators: accumulators that a checkpoint of weir
// before decimals holds (encoded by it: a float sum of 0.1, 0.2 and 7,
// an int sum of 3 and 4) restore as they were, and go on: the float sum
// as a float, the int sum as an int; a decimal accumulator survives the
// encoding exactly.
func TestOldCheckpointAccumulators(t *testing.T) {
	agg, order := decimalAgg(t)
	add := func(ac *Acc, amount string) { agg.Add(ac, order(9, amount)) }
	for _, c := range []struct{ old, was, amount, now string }{
		{"040600b3e6cc99b3e6cc8e408002000000000000000600b3e6cc99b3e6cc8e4080020000000000000006000002009ab3e6cc99b3e6dc3f0000000000060000010e000000000000",
			"7.3 2.433333333333333 0.1 7", "1", "8.3 2.075 0.1 7"},
		{"04040e000000000000000000040e00000000000000000004000001060000000000000400000108000000000000",
			"7 3.5 3 4", "5", "12 4 3 5"},
	} {
		b, err := hex.DecodeString(c.old)
		if err != nil {
			t.Fatal(err)
		}
		ac := new(Acc)
		if err := ac.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(SplitResult(agg.Result(ac), 4), " "); got != c.was {
			t.Errorf("restored %s, want %s", got, c.was)
		}
		add(ac, c.amount)
		if got := strings.Join(SplitResult(agg.Result(ac), 4), " "); got != c.now {
			t.Errorf("restored, then %s: %s, want %s", c.amount, got, c.now)
		}
	}
	ac := agg.CreateAccumulator()
	for _, a := range []string{"12345678901234567890123456.789", "-0.001", "1.10", "7"} {
		add(ac, a)
	}
	back := throughCheckpoint(t, ac)
	want := "12345678901234567890123464.888 3086419725308641972530866.222000 -0.001 12345678901234567890123456.789"
	if got := strings.Join(SplitResult(agg.Result(back), 4), " "); got != want {
		t.Errorf("decimals through a checkpoint: %s, want %s", got, want)
	}
}

// TestDecimalFields: a field declared in source.decimals is read at its
// scale, rounded half away from zero, from a number or a string that
// holds one; beyond its precision it is null, and a value that is no
// number is a dead letter.
func TestDecimalFields(t *testing.T) {
	p, err := spec.Parse([]byte(strings.Replace(jobtest.DecimalJob, "path: in.jsonl}", "path: in.jsonl, decimals: [{field: amount, precision: 6, scale: 2}]}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	d := NewDecoder(p, clock.Real{})
	for _, c := range []struct{ in, want string }{
		{`1.005`, "1.01"}, {`-1.005`, "-1.01"}, {`1.004999`, "1.00"}, {`1.5`, "1.50"}, {`7`, "7.00"},
		{`"12.50"`, "12.50"}, {`"-0.125"`, "-0.13"}, {`1e2`, "100.00"}, {`-0.001`, "0.00"},
		{`9999.994`, "9999.99"}, {`9999.995`, "null"}, {`123456789`, "null"}, {`null`, "null"},
		{`1` + strings.Repeat("0", 40), "null"}, {`"1e400"`, "null"},
		{`"+1.5"`, "1.50"}, {`".5"`, "0.50"}, {`"1."`, "1.00"}, {`"-.125"`, "-0.13"}, {`"2.5E-1"`, "0.25"},
	} {
		r, err := d.Decode(fileio.Line{Kind: fileio.Data, No: 1, Text: []byte(`{"k":"a","ts":1767225600000,"amount":` + c.in + `}`)})
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if got, _, _ := strings.Cut(string(r.AppendValues(nil)), "\x00"); got != c.want {
			t.Errorf("%s reads as %s, want %s", c.in, got, c.want)
		}
	}
	for _, in := range []string{`"bad"`, `true`, `{"x":1}`, `"1,5"`, `""`, `" 3.5"`, `"NaN"`, `"0x10"`, `"."`, `"1e"`, `"++1"`, `"1.2.3"`} {
		_, err := d.Decode(fileio.Line{Kind: fileio.Data, No: 1, Text: []byte(`{"k":"a","ts":1767225600000,"amount":` + in + `}`)})
		if err == nil || !strings.Contains(err.Error(), "value_not_number") || !strings.Contains(err.Error(), "DECIMAL(6, 2)") {
			t.Errorf("%s: %v, want a dead letter value_not_number naming DECIMAL(6, 2)", in, err)
		}
	}
}

// TestDecimalRound: round gives math/big's half-away-from-zero rounding
// of random decimals at every smaller scale, and rescales to larger
// ones.
func TestDecimalRound(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		text, x := randDecimal(r)
		d, ok := parseDec([]byte(text))
		if !ok {
			t.Fatalf("%s does not parse", text)
		}
		s := uint8(r.IntN(8))
		got, ok := d.round(s)
		// The exact answer: |x| * 10^s + 1/2, truncated, with x's sign.
		scaled := new(big.Rat).Mul(new(big.Rat).Abs(x), new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s)), nil)))
		scaled.Add(scaled, big.NewRat(1, 2))
		q := new(big.Int).Quo(scaled.Num(), scaled.Denom())
		if x.Sign() < 0 {
			q.Neg(q)
		}
		want := new(big.Rat).SetFrac(q, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s)), nil)).FloatString(int(s))
		if !ok || string(appendDec(nil, got)) != want && !(q.Sign() == 0 && string(appendDec(nil, got)) == strings.TrimPrefix(want, "-")) {
			t.Fatalf("%s at scale %d: %s (%v), want %s", text, s, appendDec(nil, got), ok, want)
		}
	}
}

// TestJSONErrorDetail: a deeply nested record's json_malformed detail
// says its cause once, in a few hundred bytes (the record is the dead
// letter's raw), not once per level.
func TestJSONErrorDetail(t *testing.T) {
	p, err := spec.Parse([]byte(jobtest.DecimalJob))
	if err != nil {
		t.Fatal(err)
	}
	d := NewDecoder(p, clock.Real{})
	deep := strings.Repeat(`{"a":`, 3000) + "1" + strings.Repeat("}", 3000)
	_, err = d.Decode(fileio.Line{Kind: fileio.Data, No: 1, Text: []byte(deep)})
	var bi *weir.BadInput
	if !errors.As(err, &bi) || bi.Reason != "json_malformed" || len(bi.Detail) > maxJSONError+50 || !strings.Contains(bi.Detail, "too big depth") {
		t.Errorf("deep nesting: %v", err)
	}
}

// TestCollectOrderKept: a collect list that Add and Merge keep in input
// order is not sorted again (a session that every record extends takes
// its accumulator over once per record: a sort each time made collect
// quadratic), and one that falls out of order is sorted at the next
// merge or take, as before.
func TestCollectOrderKept(t *testing.T) {
	p, err := spec.Parse([]byte(`
name: c
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
key: [k]
window: {type: session, gap: 1m}
aggregate: [{name: c, fn: collect, field: v}]
`))
	if err != nil {
		t.Fatal(err)
	}
	agg := NewAggregator(p, false)
	d := NewDecoder(p, clock.NewFake(testNow))
	rec := func(no int64) Record {
		r, err := d.Decode(fileio.Line{Kind: fileio.Data, No: no, Text: fmt.Appendf(nil, `{"k":"a","v":%d,"ts":1780272000000}`, no)})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	acc := agg.CreateAccumulator()
	for no := range int64(50) {
		acc = agg.Add(agg.Take(acc), rec(no+1))
		if acc.s[0].disordered {
			t.Fatalf("after %d records in order the list is marked out of order", no+1)
		}
	}
	acc = agg.Add(acc, rec(0)) // an earlier line, added last
	if !acc.s[0].disordered {
		t.Fatal("a record of an earlier line did not mark the list out of order")
	}
	other := agg.Add(agg.CreateAccumulator(), rec(100))
	acc = agg.Merge(acc, other)
	res := string(agg.Result(acc))
	if !strings.HasPrefix(res, "[0,1,2,") || !strings.HasSuffix(res, ",50,100]\x00") || acc.s[0].disordered {
		t.Fatalf("merged list %q (out of order %v), want 0 to 50 then 100", res, acc.s[0].disordered)
	}
}

// TestAppendDecimalCast: a value written as a sink's DECIMAL(p, s),
// rounded half away from zero, null beyond p digits, floats too.
func TestAppendDecimalCast(t *testing.T) {
	for _, c := range []struct {
		v    string
		p, s int
		want string
	}{
		{"3.236", 10, 2, "3.24"}, {"-3.235", 10, 2, "-3.24"}, {"2", 5, 1, "2.0"}, {"9999.99", 5, 1, "null"},
		{"1.5e+40", 10, 2, "null"}, {"1e-40", 10, 2, "0.00"}, {"-1.2345678901234567e-30", 10, 2, "0.00"},
		{"2.953724091e+07", 12, 1, "29537240.9"}, {"-0.005", 4, 2, "-0.01"}, {"null", 4, 2, "null"}, {`"x"`, 4, 2, `"x"`},
	} {
		if got := string(AppendDecimalCast(nil, []byte(c.v), c.p, c.s)); got != c.want {
			t.Errorf("%s as DECIMAL(%d, %d) = %s, want %s", c.v, c.p, c.s, got, c.want)
		}
	}
}
