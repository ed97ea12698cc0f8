package weir_test

import (
	"encoding/json"
	"testing"

	"github.com/weirstream/weir"
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
