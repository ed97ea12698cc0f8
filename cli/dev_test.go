package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/internal/testenv"
)

// kcat returns Debian's kcat, skipping the test when it is missing
// (failing it when WEIR_REQUIRE_SERVICES=1: .ci/run installs it).
func kcat(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("kcat")
	if err != nil {
		testenv.Unavailable(t, "kcat not installed (apt-get install kcat)")
	}
	return p
}

// TestDevKafkaWithKcat: a client no one here wrote (librdkafka's kcat)
// produces the input of a weir job against `weir dev kafka` and reads its
// results with read_committed.
func TestDevKafkaWithKcat(t *testing.T) {
	kc := kcat(t)
	addr := startDevKafka(t, "in:3", "out:2")

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

// startDevKafka runs `weir dev kafka` in the test on a free port with the
// given --topic arguments and returns its address; it stops with the test.
func startDevKafka(t *testing.T, topics ...string) string {
	t.Helper()
	port, addr := freePort(t)
	args := []string{"dev", "kafka", "--port", strconv.Itoa(port)}
	for _, tp := range topics {
		args = append(args, "--topic", tp)
	}
	ctx, cancel := context.WithCancel(context.Background())
	devOut := &syncWriter{w: &bytes.Buffer{}}
	done := make(chan int)
	go func() { done <- Main(ctx, args, IO{Stdout: devOut, Stderr: devOut}) }()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != ExitOK {
			t.Errorf("weir dev kafka exited %d: %s", code, devOut.String())
		}
	})
	awaitListen(t, addr, devOut.String)
	return addr
}

// TestIdlePartitionsFlush (H6): kcat writes a backlog into two of six
// partitions (partition 0 30 s of event time, partition 1 only 10 s) and
// then nothing more. An unbounded job reads the backlog quickly; every
// partition goes idle, and the channel flushes the maximum over its
// partitions first, so both complete windows fire without new data. (When
// the combination went idle without that flush, the watermark stayed at
// partition 1's 9 s and nothing fired.)
func TestIdlePartitionsFlush(t *testing.T) {
	kc := kcat(t)
	addr := startDevKafka(t, "in:6")
	const t0 = 1767225600000
	for _, part := range []struct {
		p, n int
	}{{0, 3000}, {1, 1000}} {
		var in strings.Builder
		for i := range part.n {
			fmt.Fprintf(&in, `{"user_id":"u%d","amount":1,"ts":%d}`+"\n", i%5, t0+int64(i)*10)
		}
		produce := exec.Command(kc, "-P", "-b", addr, "-t", "in", "-p", strconv.Itoa(part.p))
		produce.Stdin = strings.NewReader(in.String())
		if out, err := produce.CombinedOutput(); err != nil {
			t.Fatalf("kcat -P -p %d: %v: %s", part.p, err, out)
		}
	}
	dir := t.TempDir()
	job := fmt.Sprintf(`name: idle
source:
  type: kafka
  kafka: {brokers: [%s], topic: in}
watermark: {max_out_of_orderness: 1s, idle_timeout: 1s}
key: [user_id]
window: {type: tumbling, size: 10s}
aggregate: [{name: orders, fn: count}]
sinks:
  results: {type: jsonl, path: out.jsonl}
`, addr)
	if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var stdout, stderr bytes.Buffer
	done := make(chan int)
	go func() { done <- Main(ctx, []string{"run", "job.yaml"}, IO{Dir: dir, Stdout: &stdout, Stderr: &stderr}) }()
	// Windows [0,10) and [10,20) of 5 users: 10 results, within a few idle
	// timeouts.
	var lines []string
	for deadline := time.Now().Add(20 * time.Second); len(lines) < 10; {
		if time.Now().After(deadline) {
			stop()
			<-done
			t.Fatalf("%d results after 20 s, want 10 (the watermark must reach 20 s when every partition is idle):\n%s%s", len(lines), stdout.String(), stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
		b, _ := os.ReadFile(filepath.Join(dir, "out.jsonl"))
		lines = strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(b) == 0 {
			lines = nil
		}
	}
	stop()
	if code := <-done; code != ExitOK {
		t.Fatalf("weir run exited %d: %s %s", code, stdout.String(), stderr.String())
	}
	orders := 0
	for _, l := range lines[:10] {
		var c int
		if _, err := fmt.Sscanf(l[strings.Index(l, `"orders":`)+9:], "%d", &c); err != nil {
			t.Fatalf("result %q: %v", l, err)
		}
		orders += c
	}
	// [0,10) holds 1000 records of each partition, [10,20) 1000 of partition 0.
	if orders != 3000 {
		t.Fatalf("the two windows count %d orders, want 3000:\n%s", orders, strings.Join(lines, "\n"))
	}
}

// TestDevKafkaDataDirTopics: weir dev kafka started again on its
// --data-dir creates the --topic topics the directory lacks (a trial saw
// "topics: x (3 partitions)" printed and x missing) and says when one is
// there with other partitions.
func TestDevKafkaDataDirTopics(t *testing.T) {
	data := t.TempDir()
	run := func(topics ...string) (string, func()) {
		port, addr := freePort(t)
		args := []string{"dev", "kafka", "--port", strconv.Itoa(port), "--data-dir", data}
		for _, tp := range topics {
			args = append(args, "--topic", tp)
		}
		ctx, cancel := context.WithCancel(context.Background())
		out := &syncWriter{w: &bytes.Buffer{}}
		done := make(chan int)
		go func() { done <- Main(ctx, args, IO{Stdout: out, Stderr: out}) }()
		awaitListen(t, addr, out.String)
		waitUntil(t, 10*time.Second, "the topics line", func() bool { return strings.Contains(out.String(), "topics:") })
		return out.String(), func() {
			cancel()
			if code := <-done; code != ExitOK {
				t.Errorf("weir dev kafka exited %d: %s", code, out.String())
			}
		}
	}
	_, stop := run("a:2")
	stop()
	out, stop := run("a:3", "b:4")
	defer stop()
	if !strings.Contains(out, "a (2 partitions, from --data-dir; not the 3 asked)") || !strings.Contains(out, "b (4 partitions)") {
		t.Errorf("the second start says:\n%s", out)
	}
	addr := strings.Fields(strings.TrimPrefix(out[strings.Index(out, "listening on "):], "listening on "))[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topics, err := kadm.NewClient(cl).ListTopics(context.Background(), "a", "b")
	if err != nil || len(topics["b"].Partitions) != 4 || len(topics["a"].Partitions) != 2 {
		t.Errorf("topics after the restart: %v %v", topics, err)
	}
}
