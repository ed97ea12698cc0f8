package jsonnum

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

func canon(s string) string { return string(AppendCanonical(nil, []byte(s))) }

func TestAppendCanonical(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"0", "0"}, {"-0", "0"}, {"0.000", "0"}, {"0e99", "0"}, {"-0.0e-5", "0"},
		{"1", "1"}, {"1.0", "1"}, {"1e0", "1"}, {"10e-1", "1"}, {"1.00E+0", "1"},
		{"-42", "-42"}, {"123456", "123456"}, {"1234567.0", "1234567"}, {"1e6", "1000000"},
		{"9223372036854775807", "9223372036854775807"},
		{"-9223372036854775808", "-9223372036854775808"},
		{"9223372036854775808", "9223372036854775808"},
		{"9223372036854775809", "9223372036854775809"},
		{"9223372036854775809.000", "9223372036854775809"},
		{"92233720368547758.09e2", "9223372036854775809"},
		{"1e20", "100000000000000000000"}, {"100000000000000000000", "100000000000000000000"},
		{"1e39", "1" + zeros(39)}, {"1e40", "1e+40"}, {"1e400", "1e+400"}, {"10e399", "1e+400"}, {"1E500", "1e+500"},
		{"-1.5e400", "-1.5e+400"}, {"1e-400", "1e-400"},
		{"0.5", "0.5"}, {"-0.5", "-0.5"}, {"0.0001", "0.0001"}, {"0.00001", "1e-05"}, {"123.456", "123.456"},
		{"100000.5", "100000.5"}, {"1234567.5", "1.2345675e+06"},
		{"0.1000000000000000001", "0.1000000000000000001"}, {"0.10", "0.1"},
		{"1e99999999999999999999", "1e99999999999999999999"}, // beyond 2^40: as written
	} {
		if got := canon(c.in); got != c.want {
			t.Errorf("AppendCanonical(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

func zeros(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = '0'
	}
	return string(b)
}

// TestFloatText checks that a float64's shortest text is its canonical
// text (so keys of earlier weir keep their text), except integers, which
// are written in full.
func TestFloatText(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		f := math.Float64frombits(r.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		s := strconv.FormatFloat(f, 'g', -1, 64)
		want := s
		if f == math.Trunc(f) && math.Abs(f) < 1e40 {
			want = strconv.FormatFloat(f, 'f', -1, 64)
			if f == 0 {
				want = "0"
			}
		}
		if got := canon(s); got != want {
			t.Fatalf("AppendCanonical(%s) = %s, want %s", s, got, want)
		}
		if got := canon(want); got != want {
			t.Fatalf("AppendCanonical(%s) = %s, not itself", want, got)
		}
	}
}

func FuzzAppendCanonical(f *testing.F) {
	for _, s := range []string{"0", "-1.5e3", "9223372036854775809", "1e400", "0.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := canon(s)
		if cc := canon(c); cc != c {
			t.Fatalf("canonical %q of %q is not canonical: %q", c, s, cc)
		}
		x, err1 := strconv.ParseFloat(s, 64)
		y, err2 := strconv.ParseFloat(c, 64)
		if (err1 == nil) != (err2 == nil) || err1 == nil && x != y {
			t.Fatalf("%q is %v (%v), its canonical %q is %v (%v)", s, x, err1, c, y, err2)
		}
	})
}

// TestAppendJava: Java's Double.toString and Float.toString, their
// texts as the JDK (19 and later) writes them.
func TestAppendJava(t *testing.T) {
	for _, c := range []struct {
		f    float64
		bits int
		want string
	}{
		{7, 64, "7.0"}, {-7, 64, "-7.0"}, {0.001, 64, "0.001"}, {0.0001, 64, "1.0E-4"},
		{1e7, 64, "1.0E7"}, {2.953724091e7, 64, "2.953724091E7"}, {100, 64, "100.0"},
		{5e-324, 64, "4.9E-324"}, {float64(float32(0.1)), 32, "0.1"}, {float64(float32(1) / 3), 32, "0.33333334"},
		{math.Inf(1), 64, "Infinity"}, {math.NaN(), 64, "NaN"}, {math.Copysign(0, -1), 64, "-0.0"},
	} {
		if got := string(AppendJava(nil, c.f, c.bits)); got != c.want {
			t.Errorf("%v (%d bits): %s, want %s", c.f, c.bits, got, c.want)
		}
	}
}
