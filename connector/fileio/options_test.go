package fileio

import (
	"strings"
	"testing"
)

// TestOptionsValidate: New refuses a negative count or an unknown format,
// naming the field, before it opens anything; zero values are defaults.
func TestOptionsValidate(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Path: "x", Channels: -1}, "Options.Channels is -1"},
		{Options{Path: "x", MaxLine: -5}, "Options.MaxLine is -5"},
		{Options{Path: "x", Batch: -2}, "Options.Batch is -2"},
		{Options{Path: "x", Format: Format(9)}, "Options.Format 9 is unknown"},
	} {
		_, err := New(c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want an error naming %q", c.o, err, c.want)
		}
	}
	s, err := New(Options{Input: strings.NewReader(`{"ts": 1}` + "\n")})
	if err != nil {
		t.Fatal(err)
	}
	if o := s.(*source).o; o.Channels != 1 || o.MaxLine != DefaultMaxLine || o.Batch != DefaultBatch {
		t.Errorf("defaults: %d channels, max line %d, batch %d", o.Channels, o.MaxLine, o.Batch)
	}
}
