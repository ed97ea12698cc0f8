package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRunMetrics: weir run --http serves /metrics while a live job runs on
// stdin: the counts of the records fed so far, the watermark, the
// checkpoint series at 0 (the job takes none), and Go's own series;
// /healthz answers; the server stops with the job.
func TestRunMetrics(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(stdinJob), 0o644); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	var stderr syncBuffer
	done := make(chan int)
	go func() {
		done <- Main(context.Background(), []string{"run", "job.yaml", "--http", "127.0.0.1:0"}, IO{Dir: dir, Stdin: pr, Stdout: io.Discard, Stderr: &stderr})
	}()
	// One record on time, one window closed by the third, one too late.
	for _, ts := range []int64{1767225600000, 1767225612000, 1767225601000} {
		fmt.Fprintf(pw, `{"k": "a", "ts": %d}`+"\n", ts)
	}
	addr := regexp.MustCompile(`dashboard at (http://\S+)/ `)
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == ""; time.Sleep(5 * time.Millisecond) {
		if m := addr.FindStringSubmatch(stderr.String()); m != nil {
			base = m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no metrics address in %q", stderr.String())
		}
	}
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr.String())
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %s %s", path, resp.Status, b)
		}
		return string(b)
	}
	if h := get("/healthz"); h != "ok\n" {
		t.Fatalf("/healthz = %q", h)
	}
	want := []string{
		`weir_window_records_total{operator="window",outcome="on_time"} 2`,
		`weir_window_records_total{operator="window",outcome="dropped"} 1`,
		`weir_window_firings_total{kind="on_time",operator="window"} 1`,
		`weir_operator_watermark_timestamp_seconds{operator="window",subtask="0"} 1.767225610999e+09`,
		`go_goroutines `,
		`weir_window_lateness_seconds_count{operator="window"} 1`,
		`weir_subtask_busy_seconds_total{operator="window",subtask="0"} `,
		`weir_subtask_records_in_total{operator="window",subtask="`,
		`weir_restores_total 0`,
		`weir_late_ratio_warning 0.001`,
		`weir_late_ratio_critical 0.01`,
		"\nweir_late_ratio ",
		`weir_restore_last_timestamp_seconds NaN`,
		// The job takes no checkpoints: their series exist all the same,
		// at 0, so dashboards and alerts over them do not break.
		`weir_checkpoints_total{result="completed"} 0`,
		`weir_checkpoints_total{result="failed"} 0`,
		`weir_checkpoint_in_progress 0`,
		`weir_checkpoint_last_completed_timestamp_seconds NaN`,
		`weir_checkpoint_duration_seconds_count 0`,
	}
	var text string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		text = get("/metrics")
		missing := ""
		for _, w := range want {
			if !strings.Contains(text, w) {
				missing = w
			}
		}
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics has no %s:\n%s", missing, text)
		}
	}
	// The monitor's API: a snapshot with the window operator and its
	// watermark, and an event stream that starts with the history.
	var snap struct {
		Operators []struct {
			Name      string `json:"name"`
			Watermark *int64 `json:"watermark"`
		} `json:"operators"`
		Totals struct {
			RecordsIn int64 `json:"records_in"`
		} `json:"totals"`
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := json.Unmarshal([]byte(get("/api/v1/snapshot")), &snap); err != nil {
			t.Fatal(err)
		}
		if snap.Totals.RecordsIn == 3 && len(snap.Operators) == 2 && snap.Operators[1].Watermark != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("snapshot %+v", snap)
		}
	}
	if w := *snap.Operators[1].Watermark; snap.Operators[1].Name != "window" || w != 1767225610999 {
		t.Fatalf("window operator %+v", snap.Operators[1])
	}
	resp, err := http.Get(base + "/api/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(resp.Body)
	var events []string
	for len(events) < 3 {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("events %v: %v", events, err)
		}
		if ev, ok := strings.CutPrefix(line, "event: "); ok {
			events = append(events, strings.TrimSpace(ev))
		}
	}
	if !slices.Equal(events, []string{"history", "snapshot", "point"}) {
		t.Fatalf("events %v", events)
	}
	pw.Close()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	resp.Body.Close() // the stream ended with the server
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Fatal("the admin server still answers after the run")
	}
}

// TestLateRatioWarning: a run warns once when the share of too-late
// records crosses the spec's critical level (and at most once before at
// the lower level, when a sample caught the start of the burst), names the
// spec field, and says when it is back to normal.
func TestLateRatioWarning(t *testing.T) {
	dir := t.TempDir()
	job := strings.Replace(stdinJob, "key: [k]", "key: [k]\nalerts: {late_ratio: 0.05, late_ratio_critical: 0.2}", 1)
	if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	var stderr syncBuffer
	done := make(chan int)
	go func() {
		done <- Main(context.Background(), []string{"run", "job.yaml"}, IO{Dir: dir, Stdin: pr, Stdout: io.Discard, Stderr: &stderr, LateEvery: 20 * time.Millisecond})
	}()
	send := func(ts int64) { fmt.Fprintf(pw, `{"k": "a", "ts": %d}`+"\n", ts) }
	wait := func(what string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(stderr.String(), what); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in:\n%s", what, stderr.String())
			}
		}
	}
	// The watermark passes 20 s (a periodic watermark, 200 ms, while the
	// reader is caught up: during the burst below stdin has lines waiting,
	// a backlog, whose watermarks come by count, W10); then half the
	// records are a minute old.
	send(1767225620000)
	time.Sleep(400 * time.Millisecond)
	for i := range 20 {
		send(1767225620000 + int64(i))
		send(1767225560000) // too late
	}
	wait("above alerts.late_ratio_critical 20%")
	// Then only on-time records: back to normal.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(stderr.String(), "back to"); time.Sleep(10 * time.Millisecond) {
		send(1767225621000)
		if time.Now().After(deadline) {
			t.Fatalf("never back to normal:\n%s", stderr.String())
		}
	}
	// One critical warning; a sample that caught the burst's start may
	// have warned at the lower level first (one warning per level).
	out := stderr.String()
	n, crit, warn := strings.Count(out, "warning: too-late records"), strings.Count(out, "above alerts.late_ratio_critical 20%"), strings.Count(out, "above alerts.late_ratio 5%")
	if crit != 1 || warn > 1 || n != crit+warn {
		t.Fatalf("%d warnings (%d critical, %d at the lower level), want one critical and at most one before it:\n%s", n, crit, warn, out)
	}
	pw.Close()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

// TestLateRatioDeterministic: a --deterministic run, whose processing
// time stands still, does not watch its too-late share by wall-clock
// intervals (which made its stderr differ run to run): the summary
// gives the too-late records.
func TestLateRatioDeterministic(t *testing.T) {
	dir := t.TempDir()
	job := strings.Replace(stdinJob, "key: [k]", "key: [k]\nalerts: {late_ratio: 0.05, late_ratio_critical: 0.2}", 1)
	if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	var in strings.Builder
	fmt.Fprintf(&in, `{"k": "a", "ts": %d}`+"\n", 1767225620000)
	for i := range 20000 {
		fmt.Fprintf(&in, `{"k": "a", "ts": %d}`+"\n", 1767225620000+int64(i))
		if i%10 == 0 {
			fmt.Fprintf(&in, `{"k": "a", "ts": %d}`+"\n", 1767225560000) // too late
		}
	}
	var stderr syncBuffer
	code := Main(context.Background(), []string{"run", "--deterministic", "--now", "1767225700000", "job.yaml"},
		IO{Dir: dir, Stdin: strings.NewReader(in.String()), Stdout: io.Discard, Stderr: &stderr, LateEvery: time.Microsecond})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if out := stderr.String(); strings.Contains(out, "too-late records were") || !strings.Contains(out, "2000 dropped and counted") {
		t.Fatalf("want no alert and the too-late records in the summary:\n%s", out)
	}
}
