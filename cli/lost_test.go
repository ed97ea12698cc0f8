package cli

import (
	"strings"
	"testing"

	"github.com/weirstream/weir/job"
)

// TestPrintLost: a summary with records the source lost before it read
// them (lost_before_read) warns of them beside conservation, in each
// form of summary (one window, several, a query without a window); a
// summary without them prints no such line.
func TestPrintLost(t *testing.T) {
	lost := job.Summary{Counters: []job.Counter{{Name: "records_in", Value: 6}, {Name: "accepted", Value: 6}, {Name: "lost_before_read", Value: 34}}}
	var b strings.Builder
	printRunWarnings(&b, lost)
	printSelect(&b, lost)
	printWindows(&b, lost, nil)
	if got := strings.Count(b.String(), "warning: 34 records were lost before this job read them"); got != 3 {
		t.Fatalf("%d warnings of the lost records, want 3:\n%s", got, b.String())
	}
	b.Reset()
	printSelect(&b, job.Summary{Counters: lost.Counters[:2]})
	if strings.Contains(b.String(), "lost") {
		t.Fatalf("a summary without lost records warns of them:\n%s", b.String())
	}
}
