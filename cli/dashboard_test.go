package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/monitor"
)

// TestDashboardInChromium serves the dashboard of a live Kafka job whose
// partition 2 never gets a record, and drives it in Debian's headless
// Chromium with playwright-core (internal/admin/browsertest/dashboard.mjs):
// the page goes live, names partition 2 as idle, shows the holder chain,
// the graph is green while records come on time (the lag a little over
// the bound, as a healthy job's is), a watermark cell changes; then the
// records are dated 10 s ahead of the clock and the lag card shows a
// negative lag, still green; the charts are drawn with their y-axis
// labels unclipped, no NaN and no console error; it saves a screenshot
// (WEIR_SCREENSHOT, default in the test's temporary directory). The job
// takes no checkpoints: /metrics has their series at 0 all the same.
// Without Chromium, Node or the npm packages it skips, unless
// WEIR_BROWSER_TESTS=1 (.ci/run) makes that a failure.
func TestDashboardInChromium(t *testing.T) {
	need := func(what string, ok bool) {
		if ok {
			return
		}
		msg := what + " is missing: install Debian's chromium and run npm ci in internal/admin/browsertest"
		if os.Getenv("WEIR_BROWSER_TESTS") == "1" {
			t.Fatal(msg + " (WEIR_BROWSER_TESTS=1)")
		}
		t.Skip(msg)
	}
	chromium := os.Getenv("WEIR_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	_, err := os.Stat(chromium)
	need(chromium, err == nil)
	_, err = exec.LookPath("node")
	need("node", err == nil)
	script, _ := filepath.Abs("../internal/admin/browsertest/dashboard.mjs")
	_, err = os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "playwright-core"))
	need("playwright-core", err == nil)

	broker, cl := kafkatest.Topic(t, "orders", 3)
	// Partitions 0 and 1 get orders every 20 ms dated now (a healthy
	// live job), and now and then one an hour old (too late); 2 gets
	// none. When the page asks (GET /ahead on the control server), the
	// orders are dated 10 s ahead of the clock: the watermark passes it.
	var ahead atomic.Int64
	ctl := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ahead" {
			ahead.Store(10_000)
		}
	}))
	defer ctl.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
			ts := time.Now().UnixMilli() + ahead.Load()
			for p := range int32(2) {
				at := ts
				if i%25 == 7 && p == 0 {
					at -= 3600_000
				}
				cl.Produce(ctx, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, `{"user_id":"u%d","amount":%d,"ts":%d}`, i%7, i%10, at)}, nil)
			}
		}
	}()
	dir := t.TempDir()
	job := fmt.Sprintf(`name: dashboard
source:
  type: kafka
  channels: 1
  kafka: {brokers: ['%s'], topic: orders}
watermark: {max_out_of_orderness: 2s, idle_timeout: 1s, interval: 50ms}
key: [user_id]
window: {type: tumbling, size: 1s}
allowed_lateness: 1s
aggregate: [{name: orders, fn: count}, {name: total, fn: sum, field: amount}]
sinks:
  results: {type: jsonl, path: out.jsonl}
  late: {type: jsonl, path: late.jsonl}
`, broker)
	if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	done := make(chan int)
	go func() {
		done <- Main(ctx, []string{"run", "job.yaml", "--http", "127.0.0.1:0", "--parallelism", "2"}, IO{Dir: dir, Stdin: nil, Stdout: io.Discard, Stderr: &stderr})
	}()
	addr := regexp.MustCompile(`dashboard at (http://\S+/) `)
	var url string
	for deadline := time.Now().Add(20 * time.Second); url == ""; time.Sleep(10 * time.Millisecond) {
		if m := addr.FindStringSubmatch(stderr.String()); m != nil {
			url = m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no dashboard address in %q", stderr.String())
		}
	}
	shot := os.Getenv("WEIR_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(dir, "dashboard.png")
	}
	nctx, ncancel := context.WithTimeout(ctx, 2*time.Minute)
	defer ncancel()
	out, err := exec.CommandContext(nctx, "node", script, url, shot, "partition 2", ctl.URL).CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("dashboard check failed: %v\nweir: %s", err, stderr.String())
	}
	if fi, err := os.Stat(shot); err != nil || fi.Size() == 0 {
		t.Fatalf("no screenshot at %s: %v", shot, err)
	}
	// Checkpoints are off, and their series are there, at 0.
	resp, err := http.Get(url + "metrics")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`weir_checkpoints_total{result="completed"} 0`, `weir_checkpoints_total{result="failed"} 0`,
		"\nweir_checkpoint_in_progress 0", "\nweir_checkpoint_last_completed_timestamp_seconds NaN", "\nweir_checkpoint_duration_seconds_count 0"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	cancel()
	<-produced
	// The run stops as on Ctrl-C (the first cancel asks for a graceful stop).
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("weir run did not stop")
	}
}

// TestDemoDashboardKeepsServing: weir demo --keep-serving (the default
// when its output is a terminal) says everything it has to say, then
// keeps the dashboard up with the final state until Ctrl-C (here, ctx):
// the snapshot says the input ended, since when, and that nothing holds
// the watermark, without counting on; Ctrl-C then ends the demo with exit
// 0 and the server. Without the flag and without a terminal (TestDemo,
// CI) the demo says the dashboard stops with it, and ends.
func TestDemoDashboardKeepsServing(t *testing.T) {
	dir := t.TempDir()
	// Not a terminal, no flag: the demo says the dashboard stops with it,
	// and ends. The null device is no terminal either.
	var plain bytes.Buffer
	if code := Main(context.Background(), []string{"demo", "--orders", "2000"}, IO{Dir: dir, Stdout: &plain, Stderr: &plain}); code != ExitOK ||
		!strings.Contains(plain.String(), "dashboard at http://127.0.0.1:") || !strings.Contains(plain.String(), "(it stops when the demo ends; --keep-serving keeps it up until Ctrl-C)") {
		t.Fatalf("exit %d:\n%s", code, plain.String())
	}
	if null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0); err != nil || isTerminal(null) {
		t.Fatalf("%s is a terminal (%v)", os.DevNull, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"demo", "--orders", "20000", "--keep-serving"}, IO{Dir: dir, Stdout: &out, Stderr: &out})
	}()
	re := regexp.MustCompile(`the dashboard at (http://\S+/) keeps serving the final state; Ctrl-C to end`)
	var url string
	waitUntil(t, 60*time.Second, "the demo to keep serving", func() bool {
		select {
		case code := <-done:
			t.Fatalf("the demo ended (exit %d) instead of serving:\n%s", code, out.String())
		default:
		}
		if m := re.FindStringSubmatch(out.String()); m != nil {
			url = m[1]
			return true
		}
		return false
	}, out.String)
	text := out.String()
	for _, want := range []string{"(it stays up after the demo, with the final state, until Ctrl-C)", "conservation holds", "weir backfill weir-demo/demo.yaml --verify"} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q:\n%s", want, text)
		}
	}
	if strings.Index(text, "keeps serving the final state") < strings.Index(text, "weir backfill") {
		t.Errorf("the demo waits before it has said everything:\n%s", text)
	}
	snapshot := func() monitor.Snapshot {
		t.Helper()
		resp, err := http.Get(url + "api/v1/snapshot")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var s monitor.Snapshot
		if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	var s monitor.Snapshot
	waitUntil(t, 10*time.Second, "a snapshot with ended_at", func() bool { s = snapshot(); return s.EndedAt != nil })
	time.Sleep(1500 * time.Millisecond) // a sample or two later
	s2 := snapshot()
	if s2.EndedAt == nil || *s2.EndedAt != *s.EndedAt || s2.Now <= s.Now {
		t.Fatalf("ended at %v, then %v (now %d, then %d)", *s.EndedAt, s2.EndedAt, s.Now, s2.Now)
	}
	for _, h := range s2.Holders {
		if !h.Ended || h.HoldingForS != 0 || len(h.Chain) != 0 {
			t.Errorf("after the end: holder %+v", h)
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != ExitOK {
			t.Fatalf("exit %d:\n%s", code, out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the demo did not end on Ctrl-C:\n%s", out.String())
	}
	if _, err := http.Get(url + "healthz"); err == nil {
		t.Fatal("the dashboard still answers after the demo ended")
	}
}
