package spec

import "testing"

// TestBoundsOnly: a having of the window's bounds alone decides every
// firing of a window alike; one that reads a key or an aggregate does not.
func TestBoundsOnly(t *testing.T) {
	for src, want := range map[string]bool{
		"window_start >= '2026-01-01 00:01:00'":                        true,
		"window_start >= 1767225660000 AND window_end < 1767225840000": true,
		"HOUR(window_time) = 8":                                        true,
		"window_start >= 0 AND n > 2":                                  false,
		"n > 2":                                                        false,
		"user_id = 'a' OR window_end > 0":                              false,
		"1 = 1":                                                        false,
		"window_start >=":                                              false,
	} {
		if got := BoundsOnly(src); got != want {
			t.Errorf("BoundsOnly(%q) = %v, want %v", src, got, want)
		}
	}
}
