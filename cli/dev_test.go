package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// kcat returns Debian's kcat, skipping the test when it is missing
// (failing it when WEIR_REQUIRE_SERVICES=1: .ci/run installs it).
func kcat(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("kcat")
	if err != nil {
		msg := "kcat not installed (apt-get install kcat)"
		if os.Getenv("WEIR_REQUIRE_SERVICES") == "1" {
			t.Fatal(msg + " (WEIR_REQUIRE_SERVICES=1)")
		}
		t.Skip(msg)
	}
	return p
}

// TestDevKafkaWithKcat: a client no one here wrote (librdkafka's kcat)
// produces the input of a weir job against `weir dev kafka` and reads its
// results with read_committed.
func TestDevKafkaWithKcat(t *testing.T) {
	kc := kcat(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	addr := fmt.Sprintf("127.0.0.1:%d", port)

	ctx, cancel := context.WithCancel(context.Background())
	var devOut bytes.Buffer
	done := make(chan int)
	go func() {
		done <- Main(ctx, []string{"dev", "kafka", "--port", strconv.Itoa(port), "--topic", "in:3", "--topic", "out:2", "--topic", "out-weir-checkpoints"},
			IO{Stdout: &devOut, Stderr: &devOut})
	}()
	defer func() {
		cancel()
		if code := <-done; code != ExitOK {
			t.Errorf("weir dev kafka exited %d: %s", code, devOut.String())
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("weir dev kafka did not listen on %s: %s", addr, devOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}

	dir := t.TempDir()
	var in strings.Builder
	const n = 3000
	for i := range n {
		fmt.Fprintf(&in, `{"user_id":"u%d","amount":%d,"ts":%d}`+"\n", i%5, i%10, 1767225600000+int64(i)*10)
	}
	produce := exec.Command(kc, "-P", "-b", addr, "-t", "in", "-X", "partitioner=murmur2_random")
	produce.Stdin = strings.NewReader(in.String())
	if out, err := produce.CombinedOutput(); err != nil {
		t.Fatalf("kcat -P: %v: %s", err, out)
	}

	job := fmt.Sprintf(`name: kcat
source:
  type: kafka
  kafka: {brokers: [%s], topic: in, stop_at_end: true}
watermark: {max_out_of_orderness: 1s}
key: [user_id]
window: {type: tumbling, size: 10s}
aggregate:
  - {name: orders, fn: count}
  - {name: total, fn: sum, field: amount}
sinks:
  results: {type: kafka, brokers: [%s], topic: out}
`, addr, addr)
	if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := Main(context.Background(), []string{"run", "job.yaml"}, IO{Dir: dir, Stdout: &stdout, Stderr: &stderr}); code != ExitOK {
		t.Fatalf("weir run exited %d: %s %s", code, stdout.String(), stderr.String())
	}

	consume := exec.Command(kc, "-C", "-b", addr, "-t", "out", "-X", "isolation.level=read_committed", "-o", "beginning", "-e", "-q", "-f", "%k\t%s\t%h\n")
	out, err := consume.CombinedOutput()
	if err != nil {
		t.Fatalf("kcat -C: %v: %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	// 30 s of event time in 10 s windows, 5 users: 15 results.
	if len(lines) != 15 {
		t.Fatalf("kcat read %d results, want 15:\n%s", len(lines), out)
	}
	var orders int
	for _, l := range lines {
		f := strings.Split(l, "\t")
		if len(f) != 3 || !strings.HasPrefix(f[0], `{"user_id":"u`) || !strings.Contains(f[2], "weir-firing=on_time") {
			t.Fatalf("result %q: want key, value and headers", l)
		}
		var c int
		if _, err := fmt.Sscanf(f[1][strings.Index(f[1], `"orders":`)+9:], "%d", &c); err != nil {
			t.Fatalf("result %q: %v", l, err)
		}
		orders += c
	}
	if orders != n {
		t.Fatalf("the results count %d orders, want %d", orders, n)
	}
}

// TestDemoKafka runs `weir demo --kafka` on a small input: the orders go
// through an in-process Kafka, conservation holds, and the results, late
// orders and dead letters are read back from their topics.
func TestDemoKafka(t *testing.T) {
	var out bytes.Buffer
	code := Main(context.Background(), []string{"demo", "--kafka", "--orders", "20000", "--dir", t.TempDir()}, IO{Stdout: &out, Stderr: &out})
	if code != ExitOK {
		t.Fatalf("exit %d:\n%s", code, out.String())
	}
	for _, want := range []string{"produced 20000 records", "conservation holds: 20000 in", "read_committed: ", "dead letters in orders-dead"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "read_committed: 0 results") {
		t.Fatalf("no results read back:\n%s", out.String())
	}
}
