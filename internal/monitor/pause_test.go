package monitor

import (
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// fakePause makes the pause watch see that the process did not run for d
// just now (its last look at the clock d ago), as it sees after SIGSTOP
// and SIGCONT.
func fakePause(d time.Duration) {
	pauses.mu.Lock()
	pauses.last = time.Now().Add(-d)
	pauses.mu.Unlock()
}

// TestPauseNotBlamed: a sink call and a checkpoint in progress across a
// pause of the process are judged on the time the process ran, before
// the watch noted the pause (the first caller after the process runs
// again) and after; one that ran long enough besides is still stuck.
func TestPauseNotBlamed(t *testing.T) {
	release := WatchPauses()
	defer release()
	start := time.Now()
	fakePause(30 * time.Second)
	stuck := func() []Stuck {
		now := time.Now()
		return FindStuck(weir.CheckpointStats{InFlight: weir.InFlightCheckpoint{ID: 7, Started: now.Add(-35 * time.Second), PhaseSince: now.Add(-35 * time.Second), Phase: "pre-commit"}},
			[]SinkCall{
				{Sink: "results", Call: "write", Since: now.Add(-35 * time.Second)},
				{Sink: "late", Call: "write", Since: now.Add(-50 * time.Second)},
			}, now, 10*time.Second)
	}
	if d := PausedBetween(start.Add(-time.Minute), time.Now()); d < 29*time.Second || d > 31*time.Second {
		t.Fatalf("paused %v before the watch noted it, want about 30s", d)
	}
	if st := stuck(); len(st) != 1 || st[0].Name != "late" {
		t.Fatalf("before the watch noted the pause: stuck %+v, want the late sink only (50s, of which 30s paused)", st)
	}
	for deadline := time.Now().Add(10 * time.Second); len(PausesAfter(time.Time{})) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the watch never noted the pause")
		}
	}
	if st := stuck(); len(st) != 1 || st[0].Name != "late" {
		t.Fatalf("after the watch noted the pause: stuck %+v, want the late sink only", st)
	}
	if d := PausedBetween(time.Now().Add(-10*time.Second), time.Now()); d < 9*time.Second || d > 11*time.Second {
		t.Fatalf("paused %v in the last 10s of a 30s pause, want about 10s", d)
	}
	// A judgement on another clock (a test's fake one, years back) meets
	// no pause of this one.
	if d := PausedBetween(time.Unix(1_000_000, 0), time.Unix(1_000_100, 0)); d != 0 {
		t.Fatalf("paused %v in 1970", d)
	}
	var told []string
	last := TellPauses(start.Add(-time.Minute), 10*time.Second, func(s string) { told = append(told, s) })
	if len(told) != 1 || !strings.Contains(told[0], "this process did not run for 30s") || !strings.Contains(told[0], "SIGSTOP") {
		t.Fatalf("told %q", told)
	}
	if again := TellPauses(last, 10*time.Second, func(s string) { told = append(told, s) }); !again.Equal(last) || len(told) != 1 {
		t.Fatalf("a pause told twice: %q", told)
	}
}
