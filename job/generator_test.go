package job

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/spec"
)

func openLive(t *testing.T, gen string, o RunOptions) *Job {
	t.Helper()
	p, err := spec.Parse(fmt.Appendf(nil, jobtest.LiveJob, gen))
	if err != nil {
		t.Fatal(err)
	}
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	j, err := Open(p, o)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestGeneratorLiveLoad: a generator with pace: wall and start: now runs a
// job at 20,000 records/s of the wall clock for 2s: it takes the 2s
// (unpaced, the 40,000 records take a fraction of it), no timestamp is
// ahead of the clock by more than max_future (500ms; unpaced, the last
// would be 2s ahead), and the windows are those of the clock.
func TestGeneratorLiveLoad(t *testing.T) {
	dir := t.TempDir()
	j := openLive(t, "{rate: 20000, duration: 2s, keys: 100, start: now, pace: wall}", RunOptions{Dir: dir})
	start := time.Now()
	sum, err := j.Run(context.Background())
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d records in %v (%.0f/s)", sum.Get("records_in"), elapsed.Round(time.Millisecond), float64(sum.Get("records_in"))/elapsed.Seconds())
	if !sum.Conserved() || sum.Get("records_in") != 40000 || sum.Get("dead_letter") != 0 {
		t.Fatalf("summary %s", sum.JSON())
	}
	if elapsed < 1900*time.Millisecond || elapsed > 20*time.Second {
		t.Fatalf("40,000 records at 20,000/s took %v, want about 2s", elapsed)
	}
	f, err := os.Open(filepath.Join(dir, "out.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var orders int64
	first, last := int64(1<<62), int64(0)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r struct {
			Start  int64 `json:"window_start"`
			Orders int64 `json:"orders"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		orders += r.Orders
		first, last = min(first, r.Start), max(last, r.Start)
	}
	if orders != 40000 {
		t.Fatalf("the results count %d orders, want 40000", orders)
	}
	if lo, hi := start.UnixMilli()-1000, start.Add(elapsed).UnixMilli(); first < lo || last > hi || last-first < 1000 {
		t.Fatalf("windows from %d to %d, want them within the run's clock [%d, %d] and spanning 2s", first, last, lo, hi)
	}
}

// TestGeneratorPacedByJobClock: a paced generator follows the job's
// injected clock: it emits only what that clock says is due, and a
// deterministic run, whose clock stands still, reads unpaced.
func TestGeneratorPacedByJobClock(t *testing.T) {
	clk := clock.NewFake(jobtest.TestNow)
	j := openLive(t, "{rate: 1000, duration: 10s, keys: 10, start: now, pace: wall}", RunOptions{Clock: clk})
	done := make(chan error, 1)
	var sum Summary
	go func() {
		var err error
		sum, err = j.Run(context.Background())
		done <- err
	}()
	waitFor := func(what string, ok func(n int64) bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !ok(j.Counters()["records_in"]) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: records_in %d", what, j.Counters()["records_in"])
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// The fake clock stands still: record 0 only.
	waitFor("at the start", func(n int64) bool { return n == 1 })
	time.Sleep(200 * time.Millisecond)
	if n := j.Counters()["records_in"]; n != 1 {
		t.Fatalf("the job's clock stood still and the generator emitted %d records, want 1", n)
	}
	clk.Advance(2 * time.Second)
	waitFor("2s later", func(n int64) bool { return n == 2001 })
	clk.Advance(time.Hour)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if sum.Get("records_in") != 10000 || sum.Get("dead_letter") != 0 {
		t.Fatalf("summary %s", sum.JSON())
	}

	start := time.Now()
	_, sum = runSpec(t, fmt.Sprintf(jobtest.LiveJob, "{rate: 1000, duration: 10s, keys: 10, pace: wall}"), nil, RunOptions{Deterministic: true})
	if sum.Get("records_in") != 10000 || time.Since(start) > 8*time.Second {
		t.Fatalf("deterministic: %s in %v, want 10000 records unpaced", sum.JSON(), time.Since(start))
	}
	// Unpaced, records that start now would run ahead of the clock.
	p, err := spec.Parse(fmt.Appendf(nil, jobtest.LiveJob, "{rate: 1000, duration: 10s, keys: 10, start: now, pace: wall}"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(p, RunOptions{Dir: t.TempDir(), Deterministic: true, Now: jobtest.TestNow})
	if want := "source.generator: read unpaced (a --deterministic run's clock stands still), start: now puts the last records up to 10s ahead of the clock, beyond source.timestamp.max_future (500ms)"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("deterministic with start: now: %v, want %s...", err, want)
	}
}

// TestGeneratorPacedStops: a paced generator an hour from its end stops
// at once when the job is stopped (Ctrl-C) or its context is cancelled.
func TestGeneratorPacedStops(t *testing.T) {
	var stop atomic.Bool
	j := openLive(t, "{rate: 1000, duration: 1h, start: now, pace: wall}", RunOptions{Stop: stop.Load})
	time.AfterFunc(300*time.Millisecond, func() { stop.Store(true) })
	start := time.Now()
	sum, err := j.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 5*time.Second || sum.Get("records_in") < 100 || sum.Get("records_in") > 5000 {
		t.Fatalf("stopped after 300ms: %d records in %v", sum.Get("records_in"), el)
	}

	j = openLive(t, "{rate: 1000, duration: 1h, start: now, pace: wall}", RunOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := j.Run(ctx); err == nil {
		t.Fatal("a cancelled run returned no error")
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("cancelled after 300ms, the run returned after %v", el)
	}
}

// TestCheckpointAfterFiring: with checkpoint.after_firing, a window's
// on-time results reach the exactly-once file while the job runs,
// although the interval (1h) never comes; without it they wait for the
// job's end (or the interval). The input lasts 5 s; rows seen in the
// file after 4 s may be the end's (which writes them before Run returns),
// so only what shows before counts as shown while the job ran.
func TestCheckpointAfterFiring(t *testing.T) {
	for _, after := range []bool{true, false} {
		t.Run(fmt.Sprint("after_firing=", after), func(t *testing.T) {
			dir := t.TempDir()
			text := fmt.Sprintf(jobtest.LiveJob, "{rate: 2000, duration: 5s, keys: 10, start: now, pace: wall}") +
				fmt.Sprintf("checkpoint: {dir: ck, interval: 1h, after_firing: %v}\n", after)
			p, err := spec.Parse([]byte(text))
			if err != nil {
				t.Fatal(err)
			}
			j, err := Open(p, RunOptions{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			began := time.Now()
			go func() { _, err := j.Run(context.Background()); done <- err }()
			// Until the job ends: do on-time rows show in the file
			// before the input's last second?
			shown := false
		wait:
			for !shown && time.Since(began) < 4*time.Second {
				select {
				case err := <-done:
					if err != nil {
						t.Fatal(err)
					}
					done <- nil // for the wait below
					break wait
				case <-time.After(20 * time.Millisecond):
				}
				b, _ := os.ReadFile(filepath.Join(dir, "out.jsonl"))
				shown = strings.Contains(string(b), `"on_time"`)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if shown != after {
				t.Fatalf("on-time rows visible while the job ran: %v, want %v", shown, after)
			}
		})
	}
}
