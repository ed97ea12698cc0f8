package weir_test

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/etime"
)

func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "a", "a~", "a\u00ad", "q\"b\\s", "\x7f", "\x00\x1f\n\r\t", "<&>", "\u2028\u2029", "bad\xff\xfeutf8", "日本"} {
		var buf []byte
		got := string(weir.AppendJSONString(buf, s))
		b, _ := json.Marshal(s)
		var want string
		// encoding/json escapes <, > and & for HTML; weir does not.
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		var back string
		if err := json.Unmarshal([]byte(got), &back); err != nil {
			t.Fatalf("%q: %s is not JSON: %v", s, got, err)
		}
		if back != want {
			t.Errorf("%q: round trip %q, want %q", s, back, want)
		}
	}
}

// TestDefaultKeyEncoderNamedKinds checks that named string and integer key
// types encode as their kinds do (by layout, without boxing).
func TestDefaultKeyEncoderNamedKinds(t *testing.T) {
	type myInt int64
	type myU8 uint8
	type myStr string
	for _, c := range []struct{ got, want string }{
		{string(weir.DefaultKeyEncoder[myInt]()(nil, -5)), "[-5]"},
		{string(weir.DefaultKeyEncoder[etime.Time]()(nil, 1436918400000)), "[1436918400000]"},
		{string(weir.DefaultKeyEncoder[myU8]()(nil, 255)), "[255]"},
		{string(weir.DefaultKeyEncoder[myStr]()(nil, `a"b`)), `["a\"b"]`},
		{string(weir.DefaultKeyEncoder[int16]()(nil, -300)), "[-300]"},
		{string(weir.DefaultKeyEncoder[uintptr]()(nil, 7)), "[7]"},
		{string(weir.DefaultKeyEncoder[[2]int]()(nil, [2]int{1, 2})), "[[1,2]]"},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
}

// textLevel has its own text form, which its key encoding must keep.
type textLevel int

func (l textLevel) MarshalText() ([]byte, error) { return []byte("L" + strconv.Itoa(int(l))), nil }

func TestDefaultKeyEncoderKeepsMarshalers(t *testing.T) {
	if got := string(weir.DefaultKeyEncoder[textLevel]()(nil, 3)); got != `["L3"]` {
		t.Fatalf("got %s, want [\"L3\"]", got)
	}
}
