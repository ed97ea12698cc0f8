package job

import "testing"

// TestCompareValues: an order column's values compare as numbers
// (exactly), strings (by their UTF-8 bytes, escapes read), null below
// both.
func TestCompareValues(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{`2`, `10`, -1},
		{`12345678901234567.89`, `12345678901234567.88`, 1},
		{`"p2"`, `"p10"`, 1},
		{`"Zoe"`, `"adam"`, -1},
		{`"\u00e9va"`, `"zed"`, 1},
		{`"a\"b"`, `"a\"b"`, 0},
		{`null`, `"a"`, -1},
		{`null`, `-5`, -1},
		{`"a"`, `5`, 1},
	} {
		if got := compareValues(c.a, c.b); got != c.want {
			t.Errorf("compareValues(%s, %s) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
