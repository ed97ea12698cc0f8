package procmem

import (
	"runtime"
	"testing"
)

// TestRSS: the resident set grows by what a program touches.
func TestRSS(t *testing.T) {
	before := RSS()
	if before <= 0 {
		t.Fatalf("RSS %d", before)
	}
	b := make([]byte, 64<<20)
	for i := range b {
		b[i] = 1
	}
	after := RSS()
	runtime.KeepAlive(b)
	if after-before < 32<<20 {
		t.Fatalf("RSS %d → %d after touching 64 MiB", before, after)
	}
}
