package admin

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/promtest"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weirstream/weir/internal/monitor"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/spec"
)

// TestVendoredFiles: the embedded uPlot files are the ones npm served
// (static/vendor/SHA256SUMS), and the page loads only files that exist.
func TestVendoredFiles(t *testing.T) {
	sums, err := fs.ReadFile(static, "static/vendor/SHA256SUMS")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	sc := bufio.NewScanner(strings.NewReader(string(sums)))
	for sc.Scan() {
		want, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("bad line %q", sc.Text())
		}
		b, err := fs.ReadFile(static, "static/vendor/"+name)
		if err != nil {
			t.Fatal(err)
		}
		got := sha256.Sum256(b)
		if hex.EncodeToString(got[:]) != want {
			t.Errorf("%s changed: sha256 %x, want %s", name, got, want)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("%d vendored files checked, want 2", n)
	}
	page, err := fs.ReadFile(static, "static/index.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"vendor/uPlot.min.css", "app.css", "vendor/uPlot.iife.min.js", "app.js"} {
		if !strings.Contains(string(page), `"`+ref+`"`) {
			t.Errorf("index.html does not load %s", ref)
		}
		if _, err := fs.Stat(static, "static/"+ref); err != nil {
			t.Error(err)
		}
	}
}

// start starts a server on loopback with o, stopped at the test's end.
func start(t *testing.T, o Options) (*Server, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	o.Addr, o.Gatherer, o.Registerer = "127.0.0.1:0", reg, reg
	s, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s, reg
}

func gathered(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	v, ok := promtest.Value(t, reg, name)
	if !ok {
		t.Fatalf("no %s", name)
	}
	return v
}

// TestConnLimit: at MaxConns a new connection is answered 503 and closed
// while every open one is busy (here: just connected), and closes the
// longest-idle one to make room once one counts as idle (no request for
// IdleGrace); both are counted.
func TestConnLimit(t *testing.T) {
	s, reg := start(t, Options{MaxConns: 3, IdleGrace: 300 * time.Millisecond})
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range 3 {
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	for gathered(t, reg, "weir_admin_connections") < 3 { // accepted
		time.Sleep(time.Millisecond)
	}
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	c.Close()
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a connection over the limit: %v %v, want a 503", resp, err)
	}
	if got := gathered(t, reg, "weir_admin_connections_refused_total"); got != 1 {
		t.Errorf("refused %v, want 1", got)
	}
	time.Sleep(400 * time.Millisecond) // the held ones are idle now
	cl := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	r, err := cl.Get("http://" + s.Addr() + "/healthz")
	if err != nil || r.StatusCode != http.StatusOK {
		t.Fatalf("a connection at the limit with idle ones open: %v %v", r, err)
	}
	r.Body.Close()
	if got := gathered(t, reg, "weir_admin_connections_evicted_total"); got != 1 {
		t.Errorf("evicted %v, want 1", got)
	}
	// The first connection, the longest idle, was the one closed.
	held[0].SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := held[0].Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the longest-idle connection: read %v, want EOF", err)
	}
	if got := gathered(t, reg, "weir_admin_connections_max"); got != 3 {
		t.Errorf("max %v, want 3", got)
	}
}

// TestDefaultMaxConns: the default limit is a quarter of the open-file
// limit when that is low, else DefaultMaxConns; an explicit one stays.
func TestDefaultMaxConns(t *testing.T) {
	for _, c := range []struct {
		limit uint64
		want  int
	}{
		{0, DefaultMaxConns}, // unknown
		{1, 1}, {3, 1}, {4, 1}, {8, 2},
		{256, 64}, {511, 127}, {512, DefaultMaxConns}, {1024, DefaultMaxConns},
		{1 << 20, DefaultMaxConns}, {math.MaxUint64, DefaultMaxConns}, // RLIM_INFINITY
	} {
		if got := defaultMaxConns(c.limit); got != c.want {
			t.Errorf("defaultMaxConns(%d) = %d, want %d", c.limit, got, c.want)
		}
	}
	if o, want := (Options{}).withDefaults(), defaultMaxConns(fdLimit()); o.MaxConns != want {
		t.Errorf("MaxConns %d with an open-file limit of %d, want %d", o.MaxConns, fdLimit(), want)
	}
	if o := (Options{MaxConns: 1000}).withDefaults(); o.MaxConns != 1000 {
		t.Errorf("an explicit MaxConns of 1000 became %d", o.MaxConns)
	}
}

// TestNotLoopbackWarning: Start warns, naming the address, when it
// listens beyond loopback, and not on loopback.
func TestNotLoopbackWarning(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "127.0.0.1:0", ":0"} {
		var log strings.Builder
		s, err := Start(Options{Addr: addr, Gatherer: prometheus.NewRegistry(), Logger: slog.New(slog.NewTextHandler(&log, nil))})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		_, port, _ := net.SplitHostPort(s.Addr())
		warned := strings.Contains(log.String(), "level=WARN") && strings.Contains(log.String(), "0.0.0.0:"+port) &&
			strings.Contains(log.String(), "unauthenticated")
		if want := addr == "0.0.0.0:0"; warned != want {
			t.Errorf("%s: warned %v, want %v: %s", addr, warned, want, log.String())
		}
	}
}

// TestEventsOutliveTimeouts: the event stream goes on past ReadTimeout
// and WriteTimeout (it clears its read deadline and renews its write
// deadline per event), while a plain connection is closed after them.
func TestEventsOutliveTimeouts(t *testing.T) {
	p, err := spec.Parse([]byte(`name: live
source: {type: stdin}
watermark: {max_out_of_orderness: 1s}
key: [k]
window: {type: tumbling, size: 10s}
aggregate: [{name: n, fn: count}]
sinks: {results: {type: jsonl, path: out.jsonl}}
`))
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	j, err := job.Open(p, job.RunOptions{Dir: t.TempDir(), Stdin: pr})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { _, err := j.Run(context.Background()); ran <- err }()
	defer func() {
		pw.Close()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	}()
	mon := monitor.New(monitor.Options{Env: j.Env, Every: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	sampled := make(chan struct{})
	go func() { defer close(sampled); mon.Run(ctx) }()
	defer func() { cancel(); <-sampled }()
	const timeout = 300 * time.Millisecond
	s, _ := start(t, Options{Monitor: mon, ReadTimeout: timeout, WriteTimeout: timeout, ReadHeaderTimeout: timeout, IdleTimeout: timeout})

	resp, err := http.Get("http://" + s.Addr() + "/api/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	began, points := time.Now(), 0
	for time.Since(began) < 4*timeout && sc.Scan() {
		if sc.Text() == "event: point" {
			points++
		}
	}
	if time.Since(began) < 4*timeout {
		t.Fatalf("the stream ended after %v (%d points): %v", time.Since(began), points, sc.Err())
	}
	if points < 5 {
		t.Errorf("%d points in %v", points, 4*timeout)
	}
	// An idle connection that sends nothing is closed.
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * timeout))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("a connection that sent nothing: read %v, want EOF after ReadHeaderTimeout", err)
	}
}

// TestGroupHealth: a group member's stall (GroupHealth) makes /healthz
// answer 503 with its reasons; without one it answers ok.
func TestGroupHealth(t *testing.T) {
	var mu sync.Mutex
	var why []string
	s, _ := start(t, Options{GroupHealth: func() []string {
		mu.Lock()
		defer mu.Unlock()
		return why
	}})
	get := func() (int, string) {
		t.Helper()
		r, err := http.Get("http://" + s.Addr() + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r.StatusCode, string(b)
	}
	if code, body := get(); code != http.StatusOK || body != "ok\n" {
		t.Errorf("healthy: %d %q", code, body)
	}
	mu.Lock()
	why = []string{"instance a has committed nothing for 12s"}
	mu.Unlock()
	if code, body := get(); code != http.StatusServiceUnavailable || body != "instance a has committed nothing for 12s\n" {
		t.Errorf("stalled: %d %q", code, body)
	}
}
