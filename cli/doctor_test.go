package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir/ledger"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/job"

	"github.com/weirstream/weir/internal/doctor"
	"github.com/weirstream/weir/internal/monitor"
	"github.com/weirstream/weir/spec"
)

// startAdmin runs args (a run or demo with --http 127.0.0.1:0) in the
// background and returns the admin address and a function that stops
// the run and returns its exit code and output.
func startAdmin(t *testing.T, dir string, args []string) (string, func() (int, string)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan int, 1)
	go func() { done <- Main(ctx, args, IO{Dir: dir, Stdout: &out, Stderr: &out}) }()
	re := regexp.MustCompile(`dashboard at http://(\S+)/ `)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m[1], func() (int, string) {
				cancel()
				select {
				case code := <-done:
					return code, out.String()
				case <-time.After(30 * time.Second):
					t.Fatalf("weir %v did not stop:\n%s", args, out.String())
					return 0, ""
				}
			}
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no dashboard address:\n%s", out.String())
		}
	}
}

func runDoctor(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code := Main(context.Background(), append([]string{"doctor"}, args...), IO{Dir: dir, Stdout: &out, Stderr: &out})
	return code, out.String()
}

// TestDoctorSilentPartition: a live Kafka job of 6 partitions, 4 of
// which never get a record, with the default idle timeout (1m): no
// window can fire, and within seconds, long before the idle timeout,
// weir doctor names the empty partitions as holding the window
// operator's watermark at none (D5), with the spec field to change and
// --drain, and exits 1. A saved dump gives the same diagnosis offline.
func TestDoctorSilentPartition(t *testing.T) {
	broker, cl := kafkatest.Topic(t, "orders", 6)
	var recs []*kgo.Record
	for i := range 2000 {
		recs = append(recs, &kgo.Record{Partition: int32(i % 2), Value: fmt.Appendf(nil, `{"user_id":"u%d","ts":%d}`, i%7, time.Now().UnixMilli()-60_000+int64(i)*10)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	job := fmt.Sprintf(`name: silent
source:
  type: kafka
  kafka: {brokers: ['%s'], topic: orders}
watermark: {max_out_of_orderness: 2s, interval: 50ms}
key: [user_id]
window: {type: tumbling, size: 1s}
aggregate: [{name: n, fn: count}]
sinks: {results: {type: jsonl, path: out.jsonl}}
`, broker)
	if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, stop := startAdmin(t, dir, []string{"run", "job.yaml", "--http", "127.0.0.1:0"})
	var code int
	var out string
	started := time.Now()
	for deadline := started.Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		code, out = runDoctor(t, dir, "--addr", addr, "--save", "dump.json")
		if code == doctorFindings {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	}
	if took := time.Since(started); took > 50*time.Second {
		t.Errorf("the finding came after %v, past the idle timeout", took)
	}
	for _, want := range []string{"the job: no watermark yet", "D5 warning source[0] partition 2: no window can fire: records were read but window has no watermark yet",
		"4 inputs have sent no record yet (source[0] partition 2, source[0] partition 3, source[0] partition 4, source[0] partition 5)",
		"the idle timeout (1m) is not reached yet", "chain window[0] source[0] ← source[0] partition 2", "fix: the windows fire by themselves once the idle timeout (1m) marks the quiet input idle; lower watermark.idle_timeout", "weir run --drain"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "D19") {
		t.Errorf("D19 besides D5 (the holder explains it):\n%s", out)
	}
	// Offline, from the saved dump: the same findings.
	code2, out2 := runDoctor(t, dir, "--from", "dump.json")
	if code2 != doctorFindings || !strings.Contains(out2, "D5 warning source[0] partition 2") {
		t.Fatalf("from the dump: exit %d\n%s", code2, out2)
	}
	if code, out := stop(); code != ExitOK {
		t.Fatalf("run exit %d\n%s", code, out)
	}
	// A file that is not a dump: exit 2, with the reason.
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte("{not json"), 0o644)
	if code, out := runDoctor(t, dir, "--from", "bad.json"); code != doctorNoJob || !strings.Contains(out, "not a dump") {
		t.Fatalf("bad dump: exit %d\n%s", code, out)
	}
	// A job that cannot be reached: exit 2.
	if code, out := runDoctor(t, dir, "--addr", "127.0.0.1:1"); code != doctorNoJob {
		t.Fatalf("unreachable: exit %d\n%s", code, out)
	}
}

// TestDoctorHealthyDemo: weir doctor finds nothing of warning severity
// on the demo, a replay of historical orders, while it runs and after
// (the replay may be reported as information, D3).
func TestDoctorHealthyDemo(t *testing.T) {
	dir := t.TempDir()
	addr, stop := startAdmin(t, dir, []string{"demo", "--orders", "400000", "--http", "127.0.0.1:0", "--keep-serving"})
	reports := 0
	var out string
	for {
		code, o := runDoctor(t, dir, "--addr", addr)
		if code == doctorNoJob && reports == 0 {
			time.Sleep(50 * time.Millisecond) // not sampled yet
			continue
		}
		if code != doctorHealthy {
			t.Fatalf("exit %d on the healthy demo:\n%s", code, o)
		}
		reports++
		out = o
		if reports >= 5 {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	if strings.Contains(out, " warning ") || strings.Contains(out, " critical ") {
		t.Fatalf("findings on the demo:\n%s", out)
	}
	if code, o := stop(); code != ExitOK {
		t.Fatalf("demo exit %d\n%s", code, o)
	}
}

// TestDoctorDuringReplay runs the demo job (a replay of historical
// orders) with the monitor sampling every 20 ms and diagnoses every
// sample while it runs: never a finding of warning severity, and the
// replay is recognized as old data by design (D3, information).
func TestDoctorDuringReplay(t *testing.T) {
	s, err := spec.Load(DemoSpec)
	if err != nil {
		t.Fatal(err)
	}
	s.Source.Generator.Records = 600_000
	p, err := spec.Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	j, err := job.Open(p, job.RunOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	mon := monitor.New(monitor.Options{Info: jobInfo(p), Env: j.Env, Every: 20 * time.Millisecond,
		Extra: func() monitor.Extra { return monitor.Extra{Counters: j.Counters()} }})
	points, unsubscribe := mon.Subscribe()
	defer unsubscribe()
	ctx, cancel := context.WithCancel(context.Background())
	sampled := make(chan struct{})
	go func() { defer close(sampled); mon.Run(ctx) }()
	ran := make(chan error, 1)
	go func() { _, err := j.Run(context.Background()); ran <- err }()
	samples, d3 := 0, false
	check := func() {
		snap := mon.Snapshot()
		if snap == nil {
			return
		}
		r := doctor.Diagnose(doctor.Dump{Snapshot: *snap, History: mon.History(), Thresholds: doctorThresholds(p)}, doctor.Thresholds{})
		if r.Worst() >= doctor.Warning {
			t.Fatalf("sample %d:\n%s", samples, r.Text())
		}
		for _, f := range r.Findings {
			d3 = d3 || f.Rule == "D3"
		}
		samples++
	}
	for done := false; !done; {
		select {
		case <-points:
			check()
		case err := <-ran:
			if err != nil {
				t.Fatal(err)
			}
			done = true
		}
	}
	mon.Sample()
	check()
	cancel()
	<-sampled
	if samples < 3 || !d3 {
		t.Fatalf("%d samples diagnosed, D3 seen %v: the run was too short to judge", samples, d3)
	}
	t.Logf("%d samples diagnosed, none with a warning", samples)
}

// TestDoctorFutureRecord: a file job with the timestamp checks off reads
// one record dated two hours ahead of the clock: its watermark runs ahead
// of processing time and weir doctor says so (D8, critical), naming the
// spec field that would have stopped it.
func TestDoctorFutureRecord(t *testing.T) {
	dir := t.TempDir()
	now := time.Now().UnixMilli()
	var in strings.Builder
	for i := range 200 {
		fmt.Fprintf(&in, `{"user_id":"u%d","ts":%d}`+"\n", i%5, now-60_000+int64(i)*100)
	}
	fmt.Fprintf(&in, `{"user_id":"u1","ts":%d}`+"\n", now+2*3600_000)
	if err := os.WriteFile(filepath.Join(dir, "in.jsonl"), []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	r := diagnoseRun(t, `name: future
source: {type: file, path: in.jsonl, final_watermark: false, timestamp: {field: ts, checks: false}}
watermark: {max_out_of_orderness: 5s, emit: every_record}
key: [user_id]
window: {type: tumbling, size: 1m}
aggregate: [{name: n, fn: count}]
sinks: {results: {type: jsonl, path: out.jsonl}}
`, job.RunOptions{Dir: dir})
	if r.Worst() != doctor.Critical || !strings.Contains(r.Text(), "D8 critical") || !strings.Contains(r.Text(), "timestamp.max_future") {
		t.Fatalf("report:\n%s", r.Text())
	}
}

// TestDoctorLatenessTooLarge: a job keeps an hour of allowed lateness
// while its late records are at most 20 s late: weir doctor suggests a
// smaller allowed lateness (D12, information) from the lateness it saw.
func TestDoctorLatenessTooLarge(t *testing.T) {
	r := diagnoseRun(t, `name: lateness
source:
  type: generator
  generator:
    records: 50000
    keys: 50
    duration: 1h
    disorder:
      - {share: 0.9, max: 5s}
      - {share: 0.1, min: 10s, max: 20s}
    seed: 7
watermark: {max_out_of_orderness: 5s}
key: [user_id]
window: {type: tumbling, size: 1m}
allowed_lateness: 1h
aggregate: [{name: n, fn: count}]
sinks: {results: {type: jsonl, path: out.jsonl}}
`, job.RunOptions{Dir: t.TempDir(), Deterministic: true, Now: time.Now()})
	if !strings.Contains(r.Text(), "D12 info") || !strings.Contains(r.Text(), "lower allowed_lateness to about") || r.Worst() >= doctor.Warning {
		t.Fatalf("report:\n%s", r.Text())
	}
}

// diagnoseRun runs a job spec to its end, samples it once and returns
// weir doctor's report on it.
func diagnoseRun(t *testing.T, yaml string, o job.RunOptions) doctor.Report {
	t.Helper()
	p, err := spec.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	j, err := job.Open(p, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	mon := monitor.New(monitor.Options{Info: jobInfo(p), Env: j.Env})
	mon.Sample()
	return doctor.Diagnose(doctor.Dump{Snapshot: *mon.Snapshot(), History: mon.History()}, doctor.Thresholds{})
}

// TestDoctorHealthyStart: a live Kafka job starts on four minutes of
// history (with records late within the allowed lateness) and goes on
// with live records. Its first watermark fires the windows of the
// history minutes after their end, and the catch-up fires more; once
// caught up the job is healthy, and no sample, from the first to the
// last, gives a finding of warning severity (before, D11 called it a
// timer backlog on every start).
func TestDoctorHealthyStart(t *testing.T) {
	broker, cl := kafkatest.Topic(t, "orders", 2)
	now := time.Now().UnixMilli()
	var recs []*kgo.Record
	for i := range 48_000 {
		ts := now - 240_000 + int64(i)*5
		if i%30 == 0 {
			ts -= 20_000 // late, within the lateness
		}
		recs = append(recs, &kgo.Record{Partition: int32(i % 2), Value: fmt.Appendf(nil, `{"user_id":"u%d","ts":%d}`, i%7, ts)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	p, err := spec.Parse(fmt.Appendf(nil, `name: start
source:
  type: kafka
  kafka: {brokers: ['%s'], topic: orders}
watermark: {max_out_of_orderness: 2s, interval: 50ms}
key: [user_id]
window: {type: tumbling, size: 10s}
allowed_lateness: 1m
aggregate: [{name: n, fn: count}]
sinks: {results: {type: jsonl, path: out.jsonl}}
`, broker))
	if err != nil {
		t.Fatal(err)
	}
	j, err := job.Open(p, job.RunOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	mon := monitor.New(monitor.Options{Info: jobInfo(p), Env: j.Env, Every: 100 * time.Millisecond,
		Extra: func() monitor.Extra { return monitor.Extra{Counters: j.Counters()} }})
	points, unsubscribe := mon.Subscribe()
	defer unsubscribe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sampled := make(chan struct{})
	go func() { defer close(sampled); mon.Run(ctx) }()
	ran := make(chan error, 1)
	go func() { _, err := j.Run(ctx); ran <- err }()
	// Live records, each partition every 10 ms, some late.
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for i := 0; ctx.Err() == nil; i++ {
			ts := time.Now().UnixMilli()
			if i%30 == 0 {
				ts -= 20_000
			}
			cl.Produce(ctx, &kgo.Record{Partition: int32(i % 2), Value: fmt.Appendf(nil, `{"user_id":"u%d","ts":%d}`, i%7, ts)}, nil)
			time.Sleep(5 * time.Millisecond)
		}
	}()
	samples := 0
	for end := time.After(8 * time.Second); samples >= 0; {
		select {
		case <-points:
			snap := mon.Snapshot()
			if snap == nil {
				continue
			}
			r := doctor.Diagnose(doctor.Dump{Snapshot: *snap, History: mon.History()}, doctor.Thresholds{})
			if r.Worst() >= doctor.Warning {
				t.Fatalf("sample %d of a healthy start:\n%s", samples, r.Text())
			}
			samples++
		case <-end:
			snap := mon.Snapshot()
			w := snap.Operators[len(snap.Operators)-1].Window
			if samples < 20 || w == nil || w.FiredOnTime == 0 || w.LateAccepted == 0 {
				t.Fatalf("%d samples; window %+v: the run did not fire on time and late", samples, w)
			}
			if snap.Operators[len(snap.Operators)-1].LagS == nil || *snap.Operators[len(snap.Operators)-1].LagS > 10 {
				t.Fatalf("not caught up: %+v", snap.Operators[len(snap.Operators)-1])
			}
			samples = -1
		case err := <-ran:
			t.Fatalf("the job ended: %v", err)
		}
	}
	cancel()
	<-produced
	<-sampled
	if err := <-ran; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// TestDoctorRefusesNoDump: JSON that is no job's dump ({}) is refused,
// exit 2, not read as a healthy job with an empty name.
func TestDoctorRefusesNoDump(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "d.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := runDoctor(t, dir, "--from", "d.json")
	if code != 2 || !strings.Contains(out, "it names no job") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// TestDoctorUnansweredJob: a job that takes the connection and never
// answers (a process stopped by SIGSTOP: the kernel still accepts) is
// named as not running, not only "context deadline exceeded".
func TestDoctorUnansweredJob(t *testing.T) {
	defer func(was time.Duration) { dumpTimeout = was }(dumpTimeout)
	dumpTimeout = 200 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var held []net.Conn
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	defer func() {
		ln.Close()
		<-done
		for _, c := range held {
			c.Close()
		}
	}()
	code, out := runDoctor(t, t.TempDir(), "--addr", ln.Addr().String())
	if code != 2 || !strings.Contains(out, "did not answer within 200ms: its process is not running (stopped by SIGSTOP") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// TestLedgerStatsByJob: a ledger holding entries of several jobs (one
// copied from another job's) says so, by job, since weir backfill folds
// only its own job's.
func TestLedgerStatsByJob(t *testing.T) {
	var b strings.Builder
	ledgerStats(&b, "ledger/one", []ledger.Entry{{Job: "one", Reason: "window_expired"}, {Job: "two", Reason: "window_expired"}, {Job: "one", Reason: "window_expired"}}, 0)
	if !strings.Contains(b.String(), "by job (weir backfill folds its own job's only):\n  one                                      2\n  two                                      1\n") {
		t.Fatalf("stats:\n%s", b.String())
	}
	b.Reset()
	ledgerStats(&b, "ledger/one", []ledger.Entry{{Job: "one"}}, 0)
	if strings.Contains(b.String(), "by job") {
		t.Fatalf("one job's ledger shows its jobs:\n%s", b.String())
	}
}

// TestWindowsText: one entry's windows read alike: all by their times of
// day, or all with their dates when one spans days (a trial found
// [00:00:00,00:00:20)[1969-12-31T23:59:50,...) in one line).
func TestWindowsText(t *testing.T) {
	if got := windowsText([][2]int64{{0, 20_000}, {10_000, 30_000}}); got != "[00:00:00,00:00:20)[00:00:10,00:00:30)" {
		t.Errorf("one day: %s", got)
	}
	if got := windowsText([][2]int64{{0, 20_000}, {-10_000, 10_000}}); got != "[1970-01-01T00:00:00,1970-01-01T00:00:20)[1969-12-31T23:59:50,1970-01-01T00:00:10)" {
		t.Errorf("across midnight: %s", got)
	}
}
