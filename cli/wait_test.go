package cli

import (
	"strings"
	"testing"
	"time"
)

// waitUntil polls cond every 10ms for up to timeout; when it never holds,
// the test fails naming what it waited for, with what each of detail
// returns then (a process's stderr, the last answer seen). cond may fail
// the test itself.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool, detail ...func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			var b strings.Builder
			for _, d := range detail {
				b.WriteString("\n")
				b.WriteString(d())
			}
			t.Fatalf("timed out after %v waiting for %s%s", timeout, what, b.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
