package state

import (
	"encoding/binary"
	"errors"
	"testing"
)

type binAcc struct{ n, sum int64 }

func (a *binAcc) MarshalBinary() ([]byte, error) {
	return binary.AppendVarint(binary.AppendVarint(nil, a.n), a.sum), nil
}

func (a *binAcc) UnmarshalBinary(b []byte) error {
	n, k := binary.Varint(b)
	s, k2 := binary.Varint(b[k:])
	if k <= 0 || k2 <= 0 {
		return errors.New("bad")
	}
	a.n, a.sum = n, s
	return nil
}

type gobbed struct {
	A string
	B []int
}

type unexported struct{ a int }

func roundTrip[T any](t *testing.T, v T, eq func(a, b T) bool) {
	t.Helper()
	c := CodecFor[T]()
	var w Writer
	if err := WriteValue(&w, c, v); err != nil {
		t.Fatalf("%T: %v", v, err)
	}
	w.Int(-7)
	r := Reader{Buf: w.Buf}
	got := ReadValue(&r, c)
	if r.Int() != -7 || r.Err != nil || len(r.Buf) != 0 {
		t.Fatalf("%T: framing broken: %v", v, r.Err)
	}
	if !eq(got, v) {
		t.Fatalf("%T: got %v, want %v", v, got, v)
	}
}

func TestCodecs(t *testing.T) {
	roundTrip(t, "héllo", func(a, b string) bool { return a == b })
	roundTrip(t, "", func(a, b string) bool { return a == b })
	roundTrip(t, int64(-1<<63), func(a, b int64) bool { return a == b })
	roundTrip(t, uint16(65535), func(a, b uint16) bool { return a == b })
	roundTrip(t, 2.5, func(a, b float64) bool { return a == b })
	roundTrip(t, true, func(a, b bool) bool { return a == b })
	roundTrip(t, binAcc{3, 9}, func(a, b binAcc) bool { return a == b })
	roundTrip(t, &binAcc{4, -1}, func(a, b *binAcc) bool { return *a == *b })
	roundTrip(t, gobbed{"x", []int{1, 2}}, func(a, b gobbed) bool { return a.A == b.A && len(a.B) == 2 && a.B[1] == 2 })
	// A value of 128 bytes or more needs a longer length prefix than the
	// reserved byte; the value is moved after it.
	for _, n := range []int{127, 128, 300, 16383, 16384, 1 << 21} {
		long := make([]byte, n)
		for i := range long {
			long[i] = byte(i * 7)
		}
		roundTrip(t, string(long), func(a, b string) bool { return a == b })
	}
	var w Writer
	if err := WriteValue(&w, CodecFor[unexported](), unexported{1}); err == nil {
		t.Fatal("a type gob cannot encode must fail with a clear error")
	}
	if len(w.Buf) != 0 {
		t.Fatal("a failed value must not leave bytes behind")
	}
}
