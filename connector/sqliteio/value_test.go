package sqliteio

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/weirstream/weir/internal/jsonnum"
)

// slowNumber is jsonValue's number conversion without the shortestFloat
// fast path: canonicalize, then keep the float64 only if it is exact.
func slowNumber(b []byte) any {
	var lit [64]byte
	c := jsonnum.AppendCanonical(lit[:0], b)
	if f, err := strconv.ParseFloat(string(b), 64); err == nil && exactFloat(c, f) {
		return f
	}
	return string(c)
}

// TestShortestFloat: the floats weir writes (strconv 'g', -1), such as 0.1
// and 2.5, take the fast path to REAL; other spellings of them do not, and
// still become the same REAL by the canonical path; for every number the
// two paths agree.
func TestShortestFloat(t *testing.T) {
	for _, c := range []struct {
		text string
		f    float64
	}{
		{"0.1", 0.1}, {"2.5", 2.5}, {"-1.5", -1.5}, {"1e-07", 1e-7}, {"1.2345675e+06", 1.2345675e6},
		{"1e+21", 1e21}, {"5e-324", 5e-324}, {"1.7976931348623157e+308", math.MaxFloat64},
	} {
		f, err := strconv.ParseFloat(c.text, 64)
		if err != nil || f != c.f || !shortestFloat([]byte(c.text), f) {
			t.Errorf("%s: ParseFloat = %v, %v; shortestFloat false or not %v: want the fast path", c.text, f, err, c.f)
		}
		if v, err := Value([]byte(c.text)); err != nil || v != any(c.f) {
			t.Errorf("Value(%s) = %#v, %v; want REAL %v", c.text, v, err, c.f)
		}
	}
	for _, c := range []struct {
		text string
		f    float64
	}{
		{"0.10", 0.1}, {"2.50", 2.5}, {"25e-1", 2.5}, {"1E-2", 0.01}, {"1e-7", 1e-7}, {"1e21", 1e21}, {"-2e3", -2000},
	} {
		f, err := strconv.ParseFloat(c.text, 64)
		if err != nil || shortestFloat([]byte(c.text), f) {
			t.Errorf("%s: ParseFloat = %v, %v; shortestFloat true: want the canonical path", c.text, f, err)
		}
		if v, err := Value([]byte(c.text)); err != nil || v != any(c.f) {
			t.Errorf("Value(%s) = %#v, %v; want REAL %v (by the canonical path)", c.text, v, err, c.f)
		}
	}

	r := rand.New(rand.NewPCG(1, 2))
	check := func(text string) {
		t.Helper()
		b := []byte(text)
		if _, ok := numberSyntax(b); !ok {
			return
		}
		v, err := Value(b)
		if err != nil {
			t.Fatalf("Value(%s): %v", text, err)
		}
		if blob, ok := v.([]byte); ok {
			v = string(blob)
		}
		if _, isInt := v.(int64); isInt {
			return // integers do not reach either path
		}
		if want := slowNumber(b); v != want {
			t.Fatalf("Value(%s) = %#v; the canonical path gives %#v", text, v, want)
		}
	}
	for range 20000 {
		f := math.Float64frombits(r.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		short := strconv.FormatFloat(f, 'g', -1, 64)
		check(short)
		check(strconv.FormatFloat(f, 'e', 20, 64))
		check(strconv.FormatFloat(f, 'f', -1, 64))
		x := r.Float64() * math.Pow10(r.IntN(30)-15)
		check(strconv.FormatFloat(x, 'g', -1, 64))
		check(strconv.FormatFloat(x, 'g', 17, 64))
		check(strconv.FormatFloat(x, 'g', 25, 64))
	}
	for _, text := range []string{"1e400", "-10E399", "1e-400", "0.1000000000000000001", "9223372036854775809.0", "1.0", "0e5", "-0.0"} {
		check(text)
	}
}

// BenchmarkValueFloat converts floats as weir writes them (the fast path)
// and in another spelling (the canonical path).
func BenchmarkValueFloat(b *testing.B) {
	for _, c := range []struct{ name, text string }{
		{"shortest", "1234.5678"},
		{"other", "1234.56780"},
	} {
		b.Run(c.name, func(b *testing.B) {
			text := []byte(c.text)
			var buf bytes.Buffer
			b.ReportAllocs()
			for b.Loop() {
				if _, err := jsonValue(text, &buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
