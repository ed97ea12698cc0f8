package backfill

import (
	"fmt"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/spec"
)

// TestGeneratorPaceRefusals: pace and start: now are checked with the
// field, a suggestion for a near miss and the fix.
func TestGeneratorPaceRefusals(t *testing.T) {
	for _, c := range []struct{ gen, want string }{
		{"{pace: wal}", `source.generator.pace: unknown value "wal"; did you mean "wall"? (use none (as fast as the job reads) or wall (rate records per second of processing time))`},
		{"{pace: fast}", `source.generator.pace: unknown value "fast"; use none (as fast as the job reads) or wall (rate records per second of processing time)`},
		{"{start: Now}", `source.generator.start: "Now" is not an RFC 3339 time; did you mean "now"? (use now, or a time with a zone such as 2026-01-01T00:00:00Z)`},
		{"{start: now, duration: 1m}", "source.generator.start: start: now without pace: wall puts the last records up to 1m ahead of the clock, beyond source.timestamp.max_future (500ms): they would be dead letters (timestamp_future); add pace: wall, or shorten duration, or raise max_future"},
	} {
		_, err := spec.Parse(fmt.Appendf(nil, jobtest.LiveJob, c.gen))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v\nwant %s", c.gen, err, c.want)
		}
	}
	for _, gen := range []string{"{start: now, duration: 400ms}", "{start: now, pace: wall, duration: 1h}", "{pace: none}", "{pace: wall}"} {
		if _, err := spec.Parse(fmt.Appendf(nil, jobtest.LiveJob, gen)); err != nil {
			t.Errorf("%s: %v", gen, err)
		}
	}
	p, err := spec.Parse(fmt.Appendf(nil, jobtest.LiveJob, "{start: now, pace: wall}"))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckComplete(p, t.TempDir()); err == nil || !strings.Contains(err.Error(), "start: now") {
		t.Errorf("the complete answer of a generator that starts now: %v", err)
	}
}
