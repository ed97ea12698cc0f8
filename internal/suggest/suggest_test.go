package suggest

import "testing"

// TestClosest: the nearest known name within two edits, a name equal but
// for case first of all, nothing when all are farther.
func TestClosest(t *testing.T) {
	known := []string{"window", "watermark", "SELECT", "key"}
	for name, want := range map[string]string{
		"windw":     "window",
		"watremark": "watermark",
		"select":    "SELECT",
		"kye":       "key",
		"keys":      "key",
		"aggregate": "",
		"":          "",
	} {
		if got := Closest(name, known); got != want {
			t.Errorf("Closest(%q) = %q, want %q", name, got, want)
		}
	}
	if got := Or("kye", known, "else"); got != `did you mean "key"?` {
		t.Errorf("Or of a close name: %s", got)
	}
	if got := Or("aggregate", known, "else"); got != "else" {
		t.Errorf("Or of a far name: %s", got)
	}
	if got := DidYouMean("key"); got != `did you mean "key"?` {
		t.Errorf("DidYouMean: %s", got)
	}
}

// TestFreeName: a taken name gets the first free suffix, as Flink names
// a second column of one name.
func TestFreeName(t *testing.T) {
	taken := map[string]bool{"total": true, "total0": true}
	if got := FreeName("total", func(n string) bool { return taken[n] }); got != "total1" {
		t.Errorf("FreeName(total) = %s, want total1", got)
	}
	if got := FreeName("n", func(n string) bool { return taken[n] }); got != "n" {
		t.Errorf("FreeName(n) = %s, want n", got)
	}
}
