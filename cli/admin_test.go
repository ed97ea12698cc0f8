package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// gateWriter passes writes through while open; closed, a write blocks
// until it opens again (a sink stuck on a full pipe or a hung disk), and
// blocked is closed at the first such write.
type gateWriter struct {
	mu      sync.Mutex
	open    chan struct{} // closed while the gate is open
	blocked chan struct{}
	once    sync.Once
}

func newGateWriter() *gateWriter {
	g := &gateWriter{open: make(chan struct{}), blocked: make(chan struct{})}
	close(g.open)
	return g
}

func (g *gateWriter) Write(p []byte) (int, error) {
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	select {
	case <-open:
	default:
		g.once.Do(func() { close(g.blocked) })
		<-open
	}
	return len(p), nil
}

func (g *gateWriter) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open = make(chan struct{})
}

func (g *gateWriter) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

// adminURL waits for weir run's "dashboard at" line and returns the
// server's base URL.
func adminURL(t *testing.T, stderr func() string) string {
	t.Helper()
	addr := regexp.MustCompile(`dashboard at (http://[^/\s]+)/`)
	var m []string
	waitUntil(t, 20*time.Second, "the dashboard address", func() bool {
		m = addr.FindStringSubmatch(stderr())
		return m != nil
	}, stderr)
	return m[1]
}

// get fetches url on a fresh connection within timeout.
func get(url string, timeout time.Duration) (int, string, time.Duration, error) {
	c := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	began := time.Now()
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", time.Since(began), err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), time.Since(began), err
}

// metricValue is the value of the series line that starts with name
// (with its labels) in a Prometheus text page; false when there is none.
func metricValue(page, name string) (float64, bool) {
	for _, line := range strings.Split(page, "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// TestAdminAnswersWhileSinkStuck runs a job whose results sink (stdout)
// blocks, with and without checkpoints: while it is stuck /metrics and
// /api/v1/snapshot answer within a second (they blocked, behind the
// checkpoint's lock and the output's, before), the snapshot is fresh
// and names what is stuck and since when, /metrics has the age of the
// stuck checkpoint and of the sink's call, and /healthz answers 503 with
// the reason. Once the sink moves again, /healthz says ok.
func TestAdminAnswersWhileSinkStuck(t *testing.T) {
	for _, ck := range []bool{true, false} {
		t.Run(fmt.Sprint("checkpoints=", ck), func(t *testing.T) {
			dir := t.TempDir()
			job := `name: stuck
source:
  type: generator
  generator: {records: 50000000, keys: 20, duration: 1000h, seed: 3}
watermark: {max_out_of_orderness: 1s}
key: [user_id]
window: {type: tumbling, size: 1m}
aggregate: [{name: n, fn: count}]
sinks:
  results: {type: stdout}
`
			if ck {
				job += "checkpoint: {dir: ck, interval: 50ms}\n"
			}
			if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644); err != nil {
				t.Fatal(err)
			}
			out := newGateWriter()
			ctx, cancel := context.WithCancel(context.Background())
			var stderr syncBuffer
			done := make(chan int, 1)
			go func() {
				done <- Main(ctx, []string{"run", "job.yaml", "--http", "127.0.0.1:0", "--parallelism", "2"},
					IO{Dir: dir, Stdout: out, Stderr: &stderr, StuckAfter: time.Second})
			}()
			defer func() {
				out.release()
				cancel()
				select {
				case <-done:
				case <-time.After(30 * time.Second):
					t.Errorf("weir run did not stop: %s", stderr.String())
				}
			}()
			base := adminURL(t, stderr.String)
			if ck { // let a checkpoint or two commit first
				waitUntil(t, 20*time.Second, "two checkpoints to complete", func() bool {
					_, page, _, _ := get(base+"/metrics", 5*time.Second)
					n, _ := metricValue(page, `weir_checkpoints_total{result="completed"}`)
					return n >= 2
				}, stderr.String)
			}
			out.shut()
			select {
			case <-out.blocked:
			case <-time.After(20 * time.Second):
				t.Fatal("the sink was never written to")
			}
			stuckAt := time.Now()
			time.Sleep(1500 * time.Millisecond) // past StuckAfter

			code, page, took, err := get(base+"/metrics", 2*time.Second)
			if err != nil || code != http.StatusOK {
				t.Fatalf("/metrics while the sink is stuck: %d %v (after %v)", code, err, took)
			}
			t.Logf("/metrics answered in %v while the sink was stuck", took)
			if v, ok := metricValue(page, `weir_sink_call_age_seconds{sink="results"}`); !ok || v < 1 {
				t.Errorf("weir_sink_call_age_seconds{sink=\"results\"} = %v (%v), want >= 1", v, ok)
			}
			if ck {
				if v, ok := metricValue(page, "weir_checkpoint_in_progress_age_seconds"); !ok || v < 1 {
					t.Errorf("weir_checkpoint_in_progress_age_seconds = %v (%v), want >= 1", v, ok)
				}
			}

			// The snapshot is sampled every second: it names what is
			// stuck from the first sample StuckAfter after the block on.
			type stuckEntry struct {
				What, Name, Phase, Why string
				Since                  int64
				ForS                   float64 `json:"for_s"`
			}
			var snap struct {
				Now    int64        `json:"now"`
				Stuck  []stuckEntry `json:"stuck"`
				Totals struct {
					InFlight *struct {
						Phase string `json:"phase"`
					} `json:"checkpoint_in_flight"`
				} `json:"totals"`
			}
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				code, body, took, err := get(base+"/api/v1/snapshot", time.Second)
				if err != nil || code != http.StatusOK {
					t.Fatalf("/api/v1/snapshot while the sink is stuck: %d %v (after %v)", code, err, took)
				}
				if err := json.Unmarshal([]byte(body), &snap); err != nil {
					t.Fatal(err)
				}
				if age := time.Since(time.UnixMilli(snap.Now)); age > 2500*time.Millisecond {
					t.Fatalf("the snapshot is %v old: it froze while the sink was stuck", age)
				}
				found := map[string]bool{}
				for _, s := range snap.Stuck {
					found[s.What] = true
				}
				if found["sink"] && (found["checkpoint"] || !ck) {
					t.Logf("/api/v1/snapshot answered in %v", took)
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the snapshot does not name what is stuck: %+v, in flight %+v", snap.Stuck, snap.Totals.InFlight)
				}
			}
			for _, s := range snap.Stuck {
				switch {
				case s.What == "sink" && (s.Name != "results" || s.Phase != "write" && s.Phase != "sync" || s.ForS < 1 || time.UnixMilli(s.Since).After(stuckAt)):
					t.Errorf("stuck sink: %+v", s)
				case s.What == "checkpoint" && (s.Phase != "pre-commit" || s.ForS < 1 || snap.Totals.InFlight == nil || snap.Totals.InFlight.Phase != "pre-commit"):
					t.Errorf("stuck checkpoint: %+v, in flight %+v", s, snap.Totals.InFlight)
				}
			}

			code, body, _, err := get(base+"/healthz", 2*time.Second)
			if err != nil || code != http.StatusServiceUnavailable || !strings.Contains(body, "sink results") {
				t.Errorf("/healthz while the sink is stuck: %d %q %v", code, body, err)
			}
			if ck && !strings.Contains(body, "checkpoint ") {
				t.Errorf("/healthz does not name the checkpoint: %q", body)
			}

			// weir run says so on stderr too, without --http's pages
			// (an SRE trial saw nothing there through an outage), and
			// says when it goes on.
			waitUntil(t, 5*time.Second, "a warning on stderr naming the stuck sink", func() bool {
				return strings.Contains(stderr.String(), "warning: sink results has been in a ")
			}, stderr.String)
			if ck && !strings.Contains(stderr.String(), "warning: checkpoint ") {
				t.Errorf("stderr does not name the stuck checkpoint: %s", stderr.String())
			}
			out.release()
			waitUntil(t, 20*time.Second, "/healthz to answer 200 after the sink moved again", func() bool {
				code, body, _, err = get(base+"/healthz", 2*time.Second)
				return code == http.StatusOK
			}, func() string { return fmt.Sprintf("/healthz: %d %q %v", code, body, err) })
			waitUntil(t, 5*time.Second, "stderr to say the sink goes on", func() bool {
				return strings.Contains(stderr.String(), "sink results answered again after")
			}, stderr.String)
		})
	}
}

// TestHTTPWarnsNotLoopback: --http on an address beyond loopback says on
// stderr that the server is unauthenticated, naming the address; a
// loopback address gets no such line.
func TestHTTPWarnsNotLoopback(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(stdinJob), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{"0.0.0.0:0", "127.0.0.1:0"} {
		var stderr syncBuffer
		code := Main(context.Background(), []string{"run", "job.yaml", "--http", addr},
			IO{Dir: dir, Stdin: strings.NewReader(`{"k":"a","ts":1767225600000}` + "\n"), Stdout: io.Discard, Stderr: &stderr})
		if code != ExitOK {
			t.Fatalf("--http %s: exit %d: %s", addr, code, stderr.String())
		}
		warned := regexp.MustCompile(`(?m)^warning: .*0\.0\.0\.0:\d+.*unauthenticated`).MatchString(stderr.String())
		if want := addr == "0.0.0.0:0"; warned != want {
			t.Errorf("--http %s: warned %v, want %v:\n%s", addr, warned, want, stderr.String())
		}
	}
}

// openFDs counts the open files of process pid (Linux: /proc).
func openFDs(pid int) (int, error) {
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(es), err
}

// fdsOf is openFDs, failing the test when they cannot be counted.
func fdsOf(t *testing.T, pid int) int {
	t.Helper()
	n, err := openFDs(pid)
	if err != nil {
		t.Fatalf("open files of weir (pid %d): %v", pid, err)
	}
	return n
}

// TestAdminSurvivesIdleConnections runs weir with --http in a child
// process limited to 256 open files and holds 400 idle keep-alive
// connections to its admin server (the incident: idle connections took
// every descriptor, a checkpoint failed, the job exited). The server
// keeps under its connection limit, closing idle connections to make
// room, so /metrics answers a fresh connection at once, checkpoints go
// on completing while the connections are held, none fails, and the job
// stops cleanly.
func TestAdminSurvivesIdleConnections(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc")
	}
	const limit, idle = 256, 400
	dir := t.TempDir()
	job := `name: fds
source:
  type: generator
  generator: {records: 1000000000, keys: 100, duration: 10000h, seed: 1}
watermark: {max_out_of_orderness: 1s}
key: [user_id]
window: {type: tumbling, size: 1h}
aggregate: [{name: n, fn: count}]
sinks:
  results: {type: jsonl, path: out.jsonl}
checkpoint: {dir: ck, interval: 100ms}
`
	if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, limit), weirBinary(t), "run", "job.yaml", "--http", "127.0.0.1:0", "--parallelism", "1")
	cmd.Dir = dir
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Kill()
		<-exited
	}()
	base := adminURL(t, stderr.String)
	host := strings.TrimPrefix(base, "http://")
	checkpoints := func() (completed, failed float64) {
		code, page, _, err := get(base+"/metrics", 5*time.Second)
		if err != nil || code != http.StatusOK {
			t.Fatalf("/metrics: %d %v\nweir's stderr:\n%s", code, err, stderr.String())
		}
		completed, _ = metricValue(page, `weir_checkpoints_total{result="completed"}`)
		failed, _ = metricValue(page, `weir_checkpoints_total{result="failed"}`)
		return completed, failed
	}
	waitUntil(t, 20*time.Second, "a checkpoint to complete", func() bool {
		n, _ := checkpoints()
		return n >= 1
	}, stderr.String)
	before, _ := checkpoints()
	// What weir holds besides the admin server's connections, and how
	// many of those it may hold.
	baseFDs := fdsOf(t, cmd.Process.Pid)
	_, page, _, err := get(base+"/metrics", 5*time.Second)
	maxConns, ok := metricValue(page, "weir_admin_connections_max")
	if err != nil || !ok || maxConns < 1 || maxConns > limit/4 {
		t.Fatalf("weir_admin_connections_max %v (%v, %v), want 1 to a quarter of the open-file limit %d", maxConns, ok, err, limit)
	}

	// 400 keep-alive connections, each one request, all kept open.
	conns := make([]net.Conn, 0, idle)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range idle {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		conns = append(conns, c)
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", host)
	}
	deadline := time.Now().Add(3 * time.Second)
	answered := 0
	for _, c := range conns {
		c.SetReadDeadline(deadline)
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
			resp.Body.Close()
			answered++
		}
	}
	maxFDs := fdsOf(t, cmd.Process.Pid)
	t.Logf("%d of %d connections answered; weir holds %d files (%d before the connections, limit %d, admin connections at most %v)", answered, idle, maxFDs, baseFDs, limit, maxConns)

	code, _, took, err := get(base+"/metrics", 2*time.Second)
	if err != nil || code != http.StatusOK {
		t.Fatalf("/metrics on a fresh connection with %d idle ones held: %d %v (after %v)\nweir's stderr:\n%s", idle, code, err, took, stderr.String())
	}
	t.Logf("/metrics answered a fresh connection in %v", took)
	// Checkpoints go on while the connections are held.
	var n float64
	waitUntil(t, 10*time.Second, "3 more checkpoints", func() bool {
		var failed float64
		n, failed = checkpoints()
		if failed > 0 {
			t.Fatalf("%v checkpoints failed:\n%s", failed, stderr.String())
		}
		maxFDs = max(maxFDs, fdsOf(t, cmd.Process.Pid))
		return n >= before+3
	}, func() string {
		return fmt.Sprintf("checkpoints stopped at %v (before the connections: %v):\n%s", n, before, stderr.String())
	})
	// The admin server holds at most its connection limit (one more
	// while it makes room); the rest is what weir held before, give or
	// take a checkpoint's files and the /metrics connections. The
	// process could not exceed its limit anyway: what counts is that the
	// connections stay far below it.
	if bound := baseFDs + int(maxConns) + 16; maxFDs > bound || maxFDs >= limit/2 {
		t.Errorf("weir held %d files: %d before the connections, admin connections at most %v; want at most %d and under half its limit %d", maxFDs, baseFDs, maxConns, bound, limit)
	}
	cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-exited:
		exited <- err
		if err != nil || strings.Contains(stderr.String(), "checkpoint failed") || strings.Contains(stderr.String(), "job failed") {
			t.Fatalf("weir: %v\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("weir did not stop on SIGINT:\n%s", stderr.String())
	}
}
