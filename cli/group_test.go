package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/backfill"
	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/internal/monitor"
	"github.com/weirstream/weir/spec"
)

// groupJob is a job for group mode: orders keyed by user, partitioned by
// key, counted and summed per user in 1 s windows with 1 s of allowed
// lateness; too-late orders go to the late topic.
const groupJob = `
name: %[1]s
source:
  type: kafka
  kafka: {brokers: ['%[2]s'], topic: in, stop_at_end: true, partitioned_by_key: true}
watermark: {max_out_of_orderness: 300ms, idle_timeout: 1s, interval: 50ms, backlog_every: 20}
key: [user_id]
window: {type: tumbling, size: 1s}
allowed_lateness: 1s
aggregate:
  - {name: orders, fn: count}
  - {name: total, fn: sum, field: amount}
group: {commit_interval: 100ms, session_timeout: 1s, transaction_timeout: 3s}
sinks:
  results: {type: kafka, brokers: ['%[2]s'], topic: %[1]s-out}
  late: {type: kafka, brokers: ['%[2]s'], topic: %[1]s-late}
  dead_letter: {type: kafka, brokers: ['%[2]s'], topic: %[1]s-bad}
`

// member is one weir run --instance process of a group test.
type member struct {
	name   string
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan struct{}
	err    error
}

// startMember starts member name of the job in dir (its spec in
// job.yaml, its state in dir/name), with env added.
func startMember(t testing.TB, dir, name string, env ...string) *member {
	t.Helper()
	return startProcess(t, dir, name, []string{"run", "job.yaml", "--instance", name, "--state-dir", name, "--summary-json", name + ".json"}, env...)
}

// startProcess starts weir with args in dir as process name, with env added.
func startProcess(t testing.TB, dir, name string, args []string, env ...string) *member {
	t.Helper()
	cmd := exec.Command(weirBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	m := &member{name: name, cmd: cmd, stderr: &bytes.Buffer{}, done: make(chan struct{})}
	cmd.Stderr = &syncWriter{w: m.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		m.err = cmd.Wait()
		close(m.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-m.done
	})
	return m
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

// wait waits for the member to exit and fails the test unless it exited
// 0.
func (m *member) wait(t testing.TB, d time.Duration) {
	t.Helper()
	select {
	case <-m.done:
	case <-time.After(d):
		t.Fatalf("member %s did not finish within %v:\n%s", m.name, d, m.cmd.Stderr.(*syncWriter).String())
	}
	if m.err != nil {
		t.Fatalf("member %s: %v:\n%s", m.name, m.err, m.cmd.Stderr.(*syncWriter).String())
	}
}

// crashed waits for a member armed with a crash point to crash there or
// to finish (the group ended before the point came): it reports whether
// it crashed, and fails the test if it exited otherwise.
func (m *member) crashed(t *testing.T, point string) bool {
	t.Helper()
	select {
	case <-m.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("member %s neither crashed at %s nor finished:\n%s", m.name, point, m.cmd.Stderr.(*syncWriter).String())
	}
	if m.err == nil {
		t.Logf("member %s finished before its crash point %s came", m.name, point)
		return false
	}
	if m.cmd.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("member %s: %v, not a crash at %s:\n%s", m.name, m.err, point, m.cmd.Stderr.(*syncWriter).String())
	}
	return true
}

// kill kills the member with SIGKILL.
func (m *member) kill() {
	_ = m.cmd.Process.Kill()
	<-m.done
}

// startGroupKafka starts weir dev kafka with topic in (4 partitions) and
// each job's topics as an OS process (not in the test process, whose race
// detector, under .ci/run, would slow the broker the members share); it
// returns its address.
func startGroupKafka(t testing.TB, jobs ...string) string {
	t.Helper()
	args := []string{"--topic", "in:4", "--min-session-timeout", "200ms"}
	for _, j := range jobs {
		args = append(args, "--topic", j+"-out:3", "--topic", j+"-bad", "--topic", j+"-late")
	}
	return startKafkaProcess(t, args...)
}

// produceGroupOrders writes n orders of 97 users to topic in, keyed by user
// (Kafka's default partitioner), out of order within 300 ms, and one in
// 200 an hour late; every 5000th is malformed.
func produceGroupOrders(t testing.TB, addr string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("in"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	r := rand.New(rand.NewPCG(7, 8))
	for i := range n {
		u := fmt.Sprintf("u%d", i%97)
		ts := 1767225600000 + int64(i)*2 - int64(r.IntN(300))
		if i%200 == 13 {
			ts -= 3600_000
		}
		v := fmt.Appendf(nil, `{"user_id":%q,"amount":%d,"ts":%d}`, u, i%10, ts)
		if i%5000 == 17 {
			v = fmt.Appendf(nil, `{"user_id":%q}`, u)
		}
		cl.Produce(context.Background(), &kgo.Record{Key: []byte(u), Value: v}, nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// groupDir writes the job's spec into a new directory.
func groupDir(t testing.TB, job, addr string) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "job.yaml"), fmt.Appendf(nil, groupJob, job, addr), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestGroupKill runs a job in group mode as OS processes on weir dev
// kafka: once by one member alone (the baseline), and once by three
// members of which one is killed with SIGKILL and restarted under its
// name (warm state), one crashes at a named point inside its commit and
// is restarted, and one is killed for good (its tasks restore on the
// survivors from the changelog). The read_committed results, late
// records and dead letters equal the baseline's.
func TestGroupKill(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the group test runs weir processes")
	}
	addr := startGroupKafka(t, "base", "kill")
	produceGroupOrders(t, addr, groupRecords())
	began := time.Now()
	base := startMember(t, groupDir(t, "base", addr), "a")
	base.wait(t, 3*time.Minute)
	t.Logf("the baseline took %v", time.Since(began))

	// Two members, then three, four and two: z crashes after producing a
	// transaction and comes back, y is killed with SIGKILL and comes back
	// under its name, then crashes after a commit and comes back again,
	// w joins and crashes while restoring a task, comes back and leaves
	// gracefully (SIGTERM), and z (armed to crash in a revoke) is killed
	// for good. A crash point that the run's timing does not reach (the
	// group finished first) is logged; the test fails when none is.
	dir := groupDir(t, "kill", addr)
	reached := 0
	x := startMember(t, dir, "x")
	y := startMember(t, dir, "y")
	time.Sleep(time.Second)
	z := startMember(t, dir, "z", "WEIR_TEST_CRASH=group-produced:8")
	time.Sleep(500 * time.Millisecond)
	y.kill()
	time.Sleep(300 * time.Millisecond)
	y = startMember(t, dir, "y", "WEIR_TEST_CRASH=group-committed:6")
	if z.crashed(t, "group-produced") {
		reached++
		z = startMember(t, dir, "z", "WEIR_TEST_CRASH=group-revoke:1")
	}
	if y.crashed(t, "group-committed") {
		reached++
		y = startMember(t, dir, "y")
	}
	w := startMember(t, dir, "w", "WEIR_TEST_CRASH=group-restore:1")
	if w.crashed(t, "group-restore") {
		reached++
		w = startMember(t, dir, "w")
	}
	time.Sleep(time.Second)
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	z.kill()
	if reached == 0 {
		t.Error("no member reached its crash point: the group finished first (make the input larger, WEIR_GROUP_RECORDS)")
	}
	w.wait(t, time.Minute)
	x.wait(t, 3*time.Minute)
	y.wait(t, 3*time.Minute)
	t.Logf("x:\n%s\ny:\n%s\nw:\n%s", x.stderr, y.stderr, w.stderr)
	if !bytes.Contains(w.stderr.Bytes(), []byte("member w stopped")) {
		t.Errorf("w did not stop gracefully:\n%s", w.stderr)
	}

	// The group's offsets reached the input's ends, and no transaction
	// is left open on the outputs.
	adm := kadmClient(t, addr)
	ends, err := adm.ListEndOffsets(context.Background(), "in")
	if err != nil {
		t.Fatal(err)
	}
	offs, err := adm.FetchOffsets(context.Background(), "weir-kill")
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(l kadm.ListedOffset) {
		if c, ok := offs.Lookup("in", l.Partition); !ok || c.At != l.Offset {
			t.Errorf("partition %d: the group committed %d, the input ends at %d", l.Partition, c.At, l.Offset)
		}
	})
	// z was killed inside a transaction: the broker aborts it once the
	// transaction timeout (10 s) passes, which may be after the group
	// ended.
	for _, topic := range []string{"kill-out", "kill-late", "kill-bad", "weir-kill-changelog"} {
		if open := openTransactions(t, adm, topic, 30*time.Second); open != "" {
			t.Errorf("%s: a transaction is still open 30 s after the end: %s", topic, open)
		}
	}

	// Each member that saw the end prints the group's summary: the
	// baseline's counts.
	baseSum, _ := os.ReadFile(filepath.Join(base.cmd.Dir, "a.json"))
	for _, m := range []*member{x, y} { // w left before the end
		got, err := os.ReadFile(filepath.Join(m.cmd.Dir, m.name+".json"))
		if err != nil || len(baseSum) == 0 || string(got) != string(baseSum) {
			t.Errorf("member %s's summary %s (%v), the baseline's %s", m.name, got, err, baseSum)
		}
	}
	sameCommitted(t, addr, "base", "kill", "the group with kills")
}

// sameCommitted compares the committed results, late records and dead
// letters of job run with those of job base, the baseline.
func sameCommitted(t *testing.T, addr, base, run, what string) {
	t.Helper()
	for _, kind := range []string{"out", "late", "bad"} {
		want, got := jobtest.Committed(t, addr, base+"-"+kind), jobtest.Committed(t, addr, run+"-"+kind)
		if len(want) == 0 {
			t.Fatalf("%s: the baseline wrote nothing", kind)
		}
		if !slices.Equal(want, got) {
			t.Errorf("%s: the baseline wrote %d records, %s %d; first differences:\n%s", kind, len(want), what, len(got), jobtest.Diff(want, got))
		}
	}
}

// groupRecords is the input size of the group tests: WEIR_GROUP_RECORDS,
// default 1,000,000 (several seconds of work, so that kills land while
// the members run).
func groupRecords() int {
	if n, err := strconv.Atoi(os.Getenv("WEIR_GROUP_RECORDS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

// openTransactions waits up to wait for every partition of topic to have
// its last stable offset at its end, and describes the partitions that
// still do not ("" when none).
func openTransactions(t testing.TB, adm *kadm.Client, topic string, wait time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		hwm, err1 := adm.ListEndOffsets(context.Background(), topic)
		lso, err2 := adm.ListCommittedOffsets(context.Background(), topic)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		var open []string
		hwm.Each(func(l kadm.ListedOffset) {
			if s, ok := lso.Lookup(topic, l.Partition); !ok || s.Offset != l.Offset {
				open = append(open, fmt.Sprintf("partition %d (last stable offset %d, end %d)", l.Partition, s.Offset, l.Offset))
			}
		})
		if len(open) == 0 || time.Now().After(deadline) {
			return strings.Join(open, ", ")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func kadmClient(t testing.TB, addr string) *kadm.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	t.Cleanup(adm.Close)
	return adm
}

// TestGroupExample follows README.md's group walk-through on
// examples/group: weir dev kafka, weir dev produce, and two members on
// the example's job. Both end (stop_at_end) with the same group summary,
// conserved, of every line of the input.
func TestGroupExample(t *testing.T) {
	addr := startDevKafka(t, "orders:4", "order-stats:3", "order-stats-late", "order-stats-bad")
	dir := t.TempDir()
	b, err := os.ReadFile("../examples/group/group.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "group.yaml"), bytes.ReplaceAll(b, []byte("127.0.0.1:9092"), []byte(addr)), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := os.ReadFile("../examples/orders/orders.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Count(in, []byte("\n"))
	var out bytes.Buffer
	if code := Main(context.Background(), []string{"dev", "produce", "group.yaml", "../../" + "orders.jsonl"}, IO{Dir: dir, Stdout: &out, Stderr: &out}); code != ExitUsage {
		t.Errorf("weir dev produce of a missing file: exit %d, want 2: %s", code, out.String())
	}
	out.Reset()
	code := Main(context.Background(), []string{"dev", "produce", "group.yaml", "-"}, IO{Dir: dir, Stdin: bytes.NewReader(in), Stdout: &out, Stderr: &out})
	if code != ExitOK || !strings.Contains(out.String(), fmt.Sprintf("produced %d records to orders, keyed by user_id", lines)) {
		t.Fatalf("weir dev produce: exit %d: %s", code, out.String())
	}
	var wg sync.WaitGroup
	outs := make([]bytes.Buffer, 2)
	codes := make([]int, 2)
	for i, name := range []string{"a", "b"} {
		wg.Go(func() {
			codes[i] = Main(context.Background(), []string{"run", "group.yaml", "--instance", name, "--state-dir", "state-" + name, "--summary-json", "summary-" + name + ".json"},
				IO{Dir: dir, Stdout: &outs[i], Stderr: &outs[i], Getenv: func(string) string { return "" }})
		})
	}
	wg.Wait()
	var sums []string
	for i := range outs {
		if codes[i] != ExitOK || !strings.Contains(outs[i].String(), fmt.Sprintf("finished (the whole group): %d records in", lines)) || !strings.Contains(outs[i].String(), "conservation holds") {
			t.Fatalf("member %d: exit %d:\n%s", i, codes[i], outs[i].String())
		}
		if strings.Contains(outs[i].String(), "warning") {
			t.Errorf("member %d warns:\n%s", i, outs[i].String())
		}
		// The counts are the group's: a member gives no rate of them
		// over its own time.
		if strings.Contains(outs[i].String(), "records/s") || !strings.Contains(outs[i].String(), "this member's time") {
			t.Errorf("member %d's took line:\n%s", i, outs[i].String())
		}
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("summary-%s.json", []string{"a", "b"}[i])))
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, string(b))
	}
	if sums[0] != sums[1] {
		t.Errorf("the members' group summaries differ:\n%s\n%s", sums[0], sums[1])
	}
	t.Logf("member a:\n%s", outs[0].String())
	if n := len(jobtest.Committed(t, addr, "order-stats")); n == 0 {
		t.Error("no committed results")
	}
	// The example shows the late-data layers: with backlog_every 5, some
	// orders are late and some too late (to the late topic).
	if o := outs[0].String(); strings.Contains(o, "too late: 0 ") || strings.Contains(o, "allowed lateness: 0 ") || len(jobtest.Committed(t, addr, "order-stats-late")) == 0 {
		t.Errorf("the example judged no order late or too late:\n%s", o)
	}
	twin := regexp.MustCompile(`(?m)^  type: kafka\n  kafka:\n(    .*\n)+`).ReplaceAll(bytes.ReplaceAll(b, []byte("127.0.0.1:9092"), []byte(addr)), []byte("  type: file\n  path: orders.jsonl\n"))
	fromFile, err := spec.Parse(twin)
	if err != nil {
		t.Fatalf("%v:\n%s", err, twin)
	}
	if err := os.WriteFile(filepath.Join(dir, "orders.jsonl"), in, 0o644); err != nil {
		t.Fatal(err)
	}
	ans, err := backfill.Complete(fromFile, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, n, err := ans.Compare(fromFile, dir, 5); err != nil || n == 0 {
		t.Fatalf("before weir backfill the results equal the complete answer (%v): the example has no too-late orders?", err)
	}
	// weir backfill folds the too-late orders into their windows, after
	// which the results equal the complete answer (every order grouped
	// without watermarks, read from the file the topic was produced
	// from); a second backfill changes nothing.
	out.Reset()
	if code := Main(context.Background(), []string{"backfill", "group.yaml"}, IO{Dir: dir, Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" }}); code != ExitOK ||
		!strings.Contains(out.String(), "backfill applied 26 entries") {
		t.Fatalf("weir backfill of the group: exit %d:\n%s", code, out.String())
	}
	t.Logf("weir backfill:\n%s", out.String())
	if diffs, n, err := ans.Compare(fromFile, dir, 5); err != nil || n != 0 || ans.Windows() == 0 {
		t.Fatalf("after weir backfill %d of %d windows differ from the complete answer (%v):\n%s", n, ans.Windows(), err, strings.Join(diffs, "\n"))
	}
	out.Reset()
	if code := Main(context.Background(), []string{"backfill", "group.yaml"}, IO{Dir: dir, Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" }}); code != ExitOK ||
		!strings.Contains(out.String(), "backfill applied 0 entries") || !strings.Contains(out.String(), "26 already applied") {
		t.Fatalf("a second weir backfill of the group: exit %d:\n%s", code, out.String())
	}
	// The job without --instance is refused: one process would start the
	// group's outputs over (a trial lost a group's Postgres rows so).
	out.Reset()
	if code := Main(context.Background(), []string{"run", "group.yaml"}, IO{Dir: dir, Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" }}); code != ExitUsage ||
		!strings.Contains(out.String(), "runs as a group (its changelog topic weir-order-stats-changelog exists)") || !strings.Contains(out.String(), "weir reset") {
		t.Errorf("the group's job in one process: exit %d:\n%s", code, out.String())
	}
}

// TestGroupDashboard runs a member with --http: its page, snapshot and
// metrics show the group, and weir doctor reads it and finds it healthy.
func TestGroupDashboard(t *testing.T) {
	addr := startDevKafka(t, "orders:4", "order-stats:3", "order-stats-late", "order-stats-bad")
	dir := t.TempDir()
	b, err := os.ReadFile("../examples/group/group.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.ReplaceAll(b, []byte("127.0.0.1:9092"), []byte(addr))
	b = bytes.Replace(b, []byte("stop_at_end: true"), []byte("stop_at_end: false"), 1)
	if err := os.WriteFile(filepath.Join(dir, "group.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := os.ReadFile("../examples/orders/orders.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if code := Main(context.Background(), []string{"dev", "produce", "group.yaml", "-"}, IO{Dir: dir, Stdin: bytes.NewReader(in), Stdout: &out, Stderr: &out}); code != ExitOK {
		t.Fatalf("weir dev produce: %s", out.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &syncWriter{w: &bytes.Buffer{}}
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"run", "group.yaml", "--instance", "a", "--state-dir", "a", "--http", "127.0.0.1:0"}, IO{Dir: dir, Stdout: io.Discard, Stderr: stderr, Getenv: func(string) string { return "" }})
	}()
	var base string
	for deadline := time.Now().Add(30 * time.Second); base == ""; time.Sleep(50 * time.Millisecond) {
		if m := regexp.MustCompile(`dashboard at (http://\S+)/ `).FindStringSubmatch(stderr.String()); m != nil {
			base = m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no dashboard address:\n%s", stderr.String())
		}
	}
	get := func(path string) string {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s: %s", path, resp.Status, body)
		}
		return string(body)
	}
	// Until every non-empty task committed its input.
	var s monitor.GroupStatus
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if err := json.Unmarshal([]byte(get("/api/v1/snapshot")), &s); err != nil {
			t.Fatal(err)
		}
		ready := len(s.Members) == 1 && len(s.Tasks) == 4
		for _, tk := range s.Tasks {
			ready = ready && tk.Owner == "a" && tk.Lag == 0 && tk.Committed >= 0
		}
		if ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the snapshot never showed the tasks committed: %+v\n%s", s, stderr.String())
		}
	}
	if page := get("/"); !strings.Contains(page, "group weir-order-stats") || !strings.Contains(page, "holds the group") {
		t.Errorf("the page:\n%s", page)
	}
	if m := get("/metrics"); !strings.Contains(m, `weir_group_task_owner{instance="a",task="0"} 1`) || !strings.Contains(m, "weir_group_transactions_total") {
		t.Errorf("the metrics lack the group's series:\n%s", m)
	}
	out.Reset()
	if code := Main(context.Background(), []string{"doctor", "--addr", strings.TrimPrefix(base, "http://")}, IO{Stdout: &out, Stderr: &out}); code != doctorHealthy ||
		!strings.Contains(out.String(), "group weir-order-stats") {
		t.Errorf("weir doctor: exit %d:\n%s", code, out.String())
	}
	cancel()
	if code := <-done; code != ExitOK {
		t.Errorf("the member: exit %d:\n%s", code, stderr.String())
	}
}

// TestGroupKillRepartition runs a job whose input is not partitioned by
// its key (orders spread round-robin over 4 partitions) in group mode as
// OS processes, on a live input that comes in two halves: once by one
// member alone, and once by three, of which, as the second half comes,
// one is killed with SIGKILL and restarted under its name, then crashes
// after a commit and is restarted, and one is killed for good.
// The route tasks send each order through the repartition topic to its
// user's window task. The read_committed results, late records (their
// lateness_ms aside: it is against the watermark when each came) and dead
// letters equal the baseline's. A repartitioned job's watermark follows
// the route tasks' commits, so the input keeps away from what depends on
// them: every order is within the out-of-orderness bound of its
// partition, the orders an hour late come in the second half (once the
// first is committed, every window task has every route task's
// watermark), and the job has no idle timeout (an idle route task would
// let the others' watermarks pass its next orders, depending on when each
// came, as in one process); the second half starts 10 s of event time
// after the first.
func TestGroupKillRepartition(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the group test runs weir processes")
	}
	addr := startKafkaProcess(t, "--topic", "rbase-in:4", "--topic", "rkill-in:4", "--min-session-timeout", "200ms",
		"--topic", "rbase-out:3", "--topic", "rbase-bad", "--topic", "rbase-late", "--topic", "rkill-out:3", "--topic", "rkill-bad", "--topic", "rkill-late")
	n := groupRecords() / 2
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(topic string, from, to int) {
		r := rand.New(rand.NewPCG(9, uint64(from)))
		for i := from; i < to; i++ {
			u := fmt.Sprintf("u%d", i%97)
			ts := 1767225600000 + int64(i)*2 - int64(r.IntN(300))
			if i >= n/2 {
				ts += 10_000 // no order of the second half is near the first's windows
				if i%200 == 13 {
					ts -= 3600_000
				}
			}
			v := fmt.Appendf(nil, `{"user_id":%q,"amount":%d,"ts":%d}`, u, i%10, ts)
			if i%5000 == 17 {
				v = fmt.Appendf(nil, `{"user_id":%q}`, u)
			}
			cl.Produce(context.Background(), &kgo.Record{Topic: topic, Value: v}, nil)
		}
		if err := cl.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// caughtUp waits until the group committed its input and repartition
	// topics to their ends.
	caughtUp := func(job string) {
		jobtest.CaughtUp(t, addr, "weir-"+job, 3*time.Minute, job+"-in", "weir-"+job+"-repartition")
	}
	dir := func(job string) string {
		d := groupDir(t, job, addr)
		b, err := os.ReadFile(filepath.Join(d, "job.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.Replace(b, []byte("topic: in, stop_at_end: true, partitioned_by_key: true"), fmt.Appendf(nil, "topic: %s-in", job), 1)
		// No idleness: a route task idle between the halves would let the
		// others' watermarks close windows its first orders of the second
		// half belong to, depending on when each saw them (as it would in
		// one process).
		b = bytes.Replace(b, []byte("idle_timeout: 1s"), []byte("idle_timeout: 0s"), 1)
		if err := os.WriteFile(filepath.Join(d, "job.yaml"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	// The end of a run: caught up, and still after a pause; then every
	// member leaves.
	end := func(job string, ms ...*member) {
		caughtUp(job)
		time.Sleep(2500 * time.Millisecond)
		caughtUp(job)
		for _, m := range ms {
			_ = m.cmd.Process.Signal(syscall.SIGTERM)
		}
		for _, m := range ms {
			m.wait(t, time.Minute)
		}
	}

	d := dir("rbase")
	a := startMember(t, d, "a")
	produce("rbase-in", 0, n/2)
	caughtUp("rbase")
	produce("rbase-in", n/2, n)
	end("rbase", a)

	d = dir("rkill")
	x := startMember(t, d, "x")
	y := startMember(t, d, "y")
	z := startMember(t, d, "z")
	produce("rkill-in", 0, n/2)
	caughtUp("rkill")
	y.kill()
	y = startMember(t, d, "y", "WEIR_TEST_CRASH=group-committed:3")
	produce("rkill-in", n/2, n)
	time.Sleep(300 * time.Millisecond)
	z.kill()
	if y.crashed(t, "group-committed") {
		y = startMember(t, d, "y")
	}
	end("rkill", x, y)
	t.Logf("x:\n%s\ny:\n%s", x.stderr, y.stderr)

	lateness := regexp.MustCompile(`"lateness_ms":\d+,`)
	for _, kind := range []string{"out", "late", "bad"} {
		want, got := jobtest.Committed(t, addr, "rbase-"+kind), jobtest.Committed(t, addr, "rkill-"+kind)
		if len(want) == 0 {
			t.Fatalf("%s: the baseline wrote nothing", kind)
		}
		for _, l := range [][]string{want, got} {
			for i := range l {
				l[i] = strings.ReplaceAll(lateness.ReplaceAllString(l[i], ""), "kafka:rkill-in", "kafka:rbase-in")
			}
			slices.Sort(l)
		}
		if !slices.Equal(want, got) {
			t.Errorf("%s: the baseline wrote %d records, the group with kills %d; first differences:\n%s", kind, len(want), len(got), jobtest.Diff(want, got))
		}
	}
	if late := jobtest.Committed(t, addr, "rbase-late"); len(late) < n/2/200-5 {
		t.Errorf("the baseline has %d too-late orders, want the %d an hour late", len(late), n/2/200)
	}
}

// TestDemoGroup runs weir demo --kafka --processes 3 (members as
// processes of the weir binary, one killed): it says the results equal
// one member's.
func TestDemoGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the group demo runs weir processes")
	}
	out, err := exec.Command(weirBinary(t), "demo", "--kafka", "--processes", "3", "--orders", "300000", "--dir", t.TempDir(), "--http", "").CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("the results of 3 members, one killed, equal one member's")) {
		t.Fatalf("%v:\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("killed member m2 with SIGKILL")) {
		t.Logf("the member was not killed in time (a fast machine):\n%s", out)
	}
}

// TestGroupKafkaOutage: the broker (weir dev kafka with a data
// directory) is killed while two members run and started again on the
// same port 4 s later: the members wait for it (an SRE trial saw them
// exit within seconds, or after 5 lapsed sessions), then finish, and the
// committed results, late records and dead letters equal one member's
// run without an outage.
func TestGroupKafkaOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the group test runs weir processes")
	}
	port, addr := freePort(t)
	data := t.TempDir()
	args := []string{"dev", "kafka", "--port", strconv.Itoa(port), "--data-dir", data, "--topic", "in:4", "--min-session-timeout", "200ms"}
	for _, j := range []string{"base", "outage"} {
		args = append(args, "--topic", j+"-out:3", "--topic", j+"-bad", "--topic", j+"-late")
	}
	broker := func() *exec.Cmd {
		k := exec.Command(weirBinary(t), args...)
		if err := k.Start(); err != nil {
			t.Fatal(err)
		}
		awaitListen(t, addr, func() string { return "" })
		return k
	}
	k := broker()
	t.Cleanup(func() { k.Process.Kill(); k.Wait() })
	produceGroupOrders(t, addr, groupRecords())
	base := startMember(t, groupDir(t, "base", addr), "a")
	base.wait(t, 3*time.Minute)

	dir := groupDir(t, "outage", addr)
	x, y := startMember(t, dir, "x"), startMember(t, dir, "y")
	waitUntil(t, time.Minute, "both members run tasks", func() bool {
		return strings.Contains(x.cmd.Stderr.(*syncWriter).String(), "assigned tasks") && strings.Contains(y.cmd.Stderr.(*syncWriter).String(), "assigned tasks")
	})
	time.Sleep(500 * time.Millisecond)
	// The broker stops (SIGTERM): kfake keeps a transaction that is open
	// then only across a stop that saves its state; after a SIGKILL the
	// open transaction's records stay neither committed nor aborted, and
	// read_committed readers stop before them for good (real Kafka
	// recovers it from its logs). That left the late and bad topics read
	// short here, now and then, while the members were right.
	_ = k.Process.Signal(syscall.SIGTERM)
	_ = k.Wait()
	time.Sleep(4 * time.Second)
	select {
	case <-x.done:
		t.Fatalf("member x exited during the outage:\n%s", x.stderr)
	case <-y.done:
		t.Fatalf("member y exited during the outage:\n%s", y.stderr)
	default:
	}
	k = broker()
	x.wait(t, 3*time.Minute)
	y.wait(t, 3*time.Minute)
	t.Logf("x:\n%s\ny:\n%s", x.stderr, y.stderr)
	if !strings.Contains(x.stderr.String()+y.stderr.String(), "connection refused") {
		t.Error("no member met the outage: the group finished first (make the input larger, WEIR_GROUP_RECORDS)")
	}
	sameCommitted(t, addr, "base", "outage", "the group through an outage")
}

// TestGroupEmptyPartition runs the rig's scenario of an empty partition
// beside a partition with an old backlog as OS processes on weir dev
// kafka: partition 3 of the input never holds a record, partition 0's
// orders are an hour behind the others', and all of it is a backlog when
// the members start. Two members, one killed with SIGKILL and restarted
// under its name, write the committed results, late records and dead
// letters of one uninterrupted member, and each exits 0 with its
// summary.
func TestGroupEmptyPartition(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the group test runs weir processes")
	}
	addr := startGroupKafka(t, "ebase", "empty")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("in"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	part := kgo.StickyKeyPartitioner(nil).ForTopic("in")
	partOf := func(u string) int { return part.Partition(&kgo.Record{Key: []byte(u)}, 4) }
	var users []string
	for i := 0; len(users) < 60; i++ {
		if u := fmt.Sprintf("u%d", i); partOf(u) != 3 {
			users = append(users, u)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 30000 {
		u := users[i%len(users)]
		ts := 1767225600000 + int64(i)*2 - int64(r.IntN(300))
		if partOf(u) == 0 {
			ts -= 3600_000
		}
		if i%300 == 11 {
			ts -= 5000 // too late
		}
		v := fmt.Appendf(nil, `{"user_id":%q,"amount":%d,"ts":%d}`, u, i%10, ts)
		if i%5000 == 17 {
			v = fmt.Appendf(nil, `{"user_id":%q}`, u) // a dead letter
		}
		cl.Produce(context.Background(), &kgo.Record{Key: []byte(u), Value: v}, nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	base := startMember(t, groupDir(t, "ebase", addr), "a")
	base.wait(t, 3*time.Minute)
	dir := groupDir(t, "empty", addr)
	x := startMember(t, dir, "x")
	y := startMember(t, dir, "y")
	time.Sleep(700 * time.Millisecond)
	x.kill()
	x = startMember(t, dir, "x")
	x.wait(t, 3*time.Minute)
	y.wait(t, 3*time.Minute)
	baseSum, _ := os.ReadFile(filepath.Join(base.cmd.Dir, "a.json"))
	for _, m := range []*member{x, y} {
		got, err := os.ReadFile(filepath.Join(m.cmd.Dir, m.name+".json"))
		if err != nil || len(baseSum) == 0 || string(got) != string(baseSum) {
			t.Errorf("member %s's summary %s (%v), the baseline's %s", m.name, got, err, baseSum)
		}
	}
	sameCommitted(t, addr, "ebase", "empty", "two members, one killed, beside an empty partition")
}
