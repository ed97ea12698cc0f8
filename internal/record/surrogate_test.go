package record

import "testing"

// TestLoneSurrogate: a \u escape of a surrogate that is not half of a
// pair is found; pairs, escaped backslashes and other escapes are not.
func TestLoneSurrogate(t *testing.T) {
	for in, want := range map[string]int{
		`{"k":"a"}`:                  -1,
		`{"k":"a\ud800"}`:            7,
		`{"k":"a\\ud800"}`:           -1,
		`{"k":"a\\\ud800"}`:          9,
		`{"k":"\ud83d\ude00"}`:       -1,
		`{"k":"\udc00\ud800"}`:       6,
		`{"k":"\ud83d\ude00\udc00"}`: 18,
		`{"k":"\u00e9\n\"\ud800x"}`:  16,
		`{"k":"\ud800\u0041"}`:       6,
		`{"k":"\ud83d"}`:             6,
		`{"k":"\u12"}`:               -1,
		`{"a":"\\","b":"\ud800"}`:    15,
	} {
		if got := LoneSurrogate([]byte(in)); got != want {
			t.Errorf("LoneSurrogate(%s) = %d, want %d", in, got, want)
		}
	}
}
