package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLiveLatencyMeasure: a firing's latency runs from the sample before
// the watermark first shows its time to when its last row was seen;
// firings of the final watermark and those before the first sample are
// left out, and each kind gets its own figures.
func TestLiveLatencyMeasure(t *testing.T) {
	t0 := time.UnixMilli(1_000_000)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	r := &liveRun{cfg: liveConfig{Early: time.Second, Duration: time.Minute, Bound: time.Second}, began: t0, firings: map[firingKey]*firingSeen{}}
	// The watermark: 5000 at 0 ms, 9999 at 20, 10000 at 40, 12000 at 60.
	for i, wm := range []int64{5000, 9999, 10000, 12000} {
		r.trace = append(r.trace, wmSample{At: at(20 * i), WM: wm, In: int64(100 * i)})
	}
	// Window [0, 10000): on time at wm 9999 (passed after the sample at
	// 0 ms), rows seen at 300 and 500 ms; early at wm 10000 would be
	// early of another window.
	r.see(10000, 9999, "on_time", 1, at(300))
	r.see(10000, 9999, "on_time", 1, at(500))
	// Window [10000, 20000): early at the 11000 timer, fired at wm 12000
	// (passed after the 40 ms sample), seen at 240 ms.
	r.see(20000, 12000, "early", 1, at(240))
	// A firing the first sample already shows, one of the final
	// watermark, and late rows.
	r.see(5000, 4999, "on_time", 1, at(100))
	r.see(30000, 1<<62, "on_time", 1, at(900))
	r.see(10000, 12000, "late", 3, at(600))
	rep := r.report()
	if rep.OnTime.N != 1 || rep.OnTime.Median != 500 {
		t.Errorf("on time: %+v, want one firing of 500 ms (the last row at 500, passed after 0)", rep.OnTime)
	}
	if rep.Early.N != 1 || rep.Early.Median != 200 {
		t.Errorf("early: %+v, want one firing of 200 ms (seen at 240, passed after 40)", rep.Early)
	}
	if rep.Unmeasured != 1 || rep.LateRows != 3 {
		t.Errorf("unmeasured %d, late rows %d; want 1 and 3", rep.Unmeasured, rep.LateRows)
	}
	if got, ok := passed(r.trace, 12001); ok {
		t.Errorf("a time no sample reached passed at %v", got)
	}
}

// TestBenchLive runs weir bench live briefly, to Kafka and to SQLite: the
// job reads every record, keeps up, fires early and on time with
// latencies measured, re-fires for late records and writes the too-late
// ones to the ledger, and the SVG is drawn.
func TestBenchLive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two live jobs of 8 s")
	}
	bin := weirBinary(t)
	for _, sink := range []string{"kafka", "sqlite"} {
		t.Run(sink, func(t *testing.T) {
			dir := t.TempDir()
			var out, errb bytes.Buffer
			code := benchCmd(context.Background(), []string{"live", "--rate", "2000", "--duration", "8s", "--keys", "50",
				"--window", "2s", "--early", "500ms", "--lateness", "1s", "--bound", "300ms", "--too-late", "0.02", "--late", "0.05",
				"--checkpoint-interval", "300ms", "--parallelism", "2", "--sink", sink, "--binary", bin,
				"--dir", filepath.Join(dir, "job"), "--svg", filepath.Join(dir, "live.svg"), "--json"}, IO{Stdout: &out, Stderr: &errb, Dir: dir})
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			var rep struct {
				Records  int64       `json:"records"`
				KeptUp   bool        `json:"kept_up"`
				RSS      int64       `json:"job_peak_rss_bytes"`
				LateRows int64       `json:"late_rows"`
				TooLate  int64       `json:"too_late"`
				PerS     float64     `json:"records_per_s"`
				OnTime   liveLatency `json:"on_time"`
				Early    liveLatency `json:"early"`
			}
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("%v: %s", err, out.String())
			}
			t.Logf("%s", out.String())
			// Whether it kept up depends on the machine (tests run beside
			// each other): it is reported, not required.
			if rep.Records != 16000 || rep.RSS <= 0 || rep.PerS <= 0 {
				t.Errorf("records %d (want 16000), %.0f/s, peak RSS %d", rep.Records, rep.PerS, rep.RSS)
			}
			// 8 s of 2 s windows: about 3 on time firings measured and 9 or
			// more early ones, each visible after its watermark.
			for _, l := range []struct {
				name string
				l    liveLatency
				n    int
			}{{"on time", rep.OnTime, 2}, {"early", rep.Early, 6}} {
				if l.l.N < l.n || l.l.Median <= 0 || l.l.FirstMedian <= 0 || l.l.FirstMedian > l.l.Median || l.l.Max > 60000 {
					t.Errorf("%s firings: %+v, want %d or more, each visible after its watermark, first rows no later than last", l.name, l.l, l.n)
				}
			}
			if rep.TooLate < 100 || rep.LateRows == 0 {
				t.Errorf("too late %d (want about 2%% of 16000), late rows %d", rep.TooLate, rep.LateRows)
			}
			svg, err := os.ReadFile(filepath.Join(dir, "live.svg"))
			if err != nil || !strings.Contains(string(svg), "<polyline") || !strings.Contains(string(svg), "<circle") {
				t.Errorf("the SVG has no throughput line or latency dots (%v): %.200s", err, svg)
			}
		})
	}
}
