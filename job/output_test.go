package job

import (
	"encoding/json"
	"testing"
)

// TestSinkStateFormats: a checkpoint's output part gives each message
// sink its state: from sinks (meta format 3), or, in a checkpoint of
// format 2, a file sink's length from offsets; a sink the checkpoint has
// no state of gets nil.
func TestSinkStateFormats(t *testing.T) {
	for _, c := range []struct {
		part, sink, want string
		none             bool
	}{
		{`{"sinks":{"results":"MTIz"}}`, "results", "123", false},
		{`{"offsets":{"results":123,"late":0}}`, "results", "123", false},
		{`{"offsets":{"results":123,"late":0}}`, "late", "0", false},
		{`{"sinks":{"results":"MTIz"},"offsets":{"results":9}}`, "results", "123", false},
		{`{"sinks":{"results":"MTIz"}}`, "late", "", true},
		{`{"offsets":{}}`, "dead_letter", "", true},
	} {
		var oc outCounters
		if err := json.Unmarshal([]byte(c.part), &oc); err != nil {
			t.Fatal(err)
		}
		got := oc.sinkState(c.sink)
		if c.none != (got == nil) || string(got) != c.want {
			t.Errorf("%s: state of %s = %q, want %q", c.part, c.sink, got, c.want)
		}
	}
	b, err := json.Marshal(outCounters{Sinks: map[string][]byte{"results": []byte("42")}})
	if err != nil {
		t.Fatal(err)
	}
	var back outCounters
	if err := json.Unmarshal(b, &back); err != nil || string(back.sinkState("results")) != "42" {
		t.Fatalf("round trip of %s: %q, %v", b, back.sinkState("results"), err)
	}
}
