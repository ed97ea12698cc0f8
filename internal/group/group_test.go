package group

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/kafkaio"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/doctor"
	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/internal/monitor"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/spec"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// groupJob counts and sums orders per user in 1 s windows with 1 s of
// allowed lateness; too-late orders go to a late topic. Its input is
// keyed by user, so each partition is a task.
const groupJob = `
name: %s
source:
  type: kafka
  kafka: {brokers: [%s], topic: in, stop_at_end: true, partitioned_by_key: true}
watermark: {max_out_of_orderness: 300ms, idle_timeout: 0s, interval: 50ms, backlog_every: 20}
key: [user_id]
window: {type: tumbling, size: 1s}
allowed_lateness: 1s
aggregate:
  - {name: orders, fn: count}
  - {name: total, fn: sum, field: amount}
sinks:
  results: {type: kafka, brokers: [%s], topic: %s-out}
  late: {type: kafka, brokers: [%s], topic: %s-late}
  dead_letter: {type: kafka, brokers: [%s], topic: %s-bad}
`

// fakeKafka starts kfake with topic in (parts partitions) and each job's
// output topics (<job>-out, -late, -bad), and a client producing to in;
// both close when the test ends.
func fakeKafka(t testing.TB, parts int32, jobs ...string) (*kfake.Cluster, *kgo.Client) {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(parts, "in"), kfake.GroupMinSessionTimeout(200 * time.Millisecond)}
	for _, j := range jobs {
		opts = append(opts, kfake.SeedTopics(3, j+"-out"), kfake.SeedTopics(1, j+"-late", j+"-bad"))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("in"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return c, cl
}

// cluster starts kfake with topic in (4 partitions) holding n orders of
// 13 users, keyed by user with Kafka's default partitioner; every 50th
// order is 4 s late (beyond the lateness), every 7th 800 ms (late but
// accepted or on time), and two records are malformed.
// orderTime is the time of cluster's order i: 10 ms apart, every 50th
// 4 s late (beyond the lateness), every 7th 800 ms.
func orderTime(i int) int64 {
	ts := int64(1767225600000) + int64(i)*10
	switch {
	case i%50 == 49:
		ts -= 4000
	case i%7 == 6:
		ts -= 800
	}
	return ts
}

func cluster(t testing.TB, n int, jobs ...string) string {
	t.Helper()
	c, cl := fakeKafka(t, 4, jobs...)
	var recs []*kgo.Record
	for i := range n {
		ts := orderTime(i)
		u := fmt.Sprintf("u%d", i%13)
		recs = append(recs, &kgo.Record{Key: []byte(u), Value: fmt.Appendf(nil, `{"user_id":%q,"amount":%d,"ts":%d}`, u, i%10, ts)})
	}
	recs = append(recs, &kgo.Record{Key: []byte("u1"), Value: []byte(`{"user_id":"u1"}`)}, &kgo.Record{Key: []byte("u2"), Value: []byte(`not json`)})
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return c.ListenAddrs()[0]
}

func plan(t testing.TB, name, broker string) *spec.Plan {
	t.Helper()
	p, err := spec.Parse(fmt.Appendf(nil, groupJob, name, broker, broker, name, broker, name, broker, name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// joinSession is the session timeout of members no test kills. kfake
// expires a member's session while its JoinGroup waits for the others
// (Kafka keeps a member awaiting a join alive), so a short one drops a
// member in the middle of a rebalance on a loaded machine, its join
// never answered, and hands its tasks on while it still runs them.
const joinSession = 5 * time.Second

// joinTxnTimeout is their transaction timeout, Kafka's default: on a
// loaded machine a restore or a commit may keep a transaction open for
// seconds, and kfake aborts one older than its timeout (the member then
// fails: its producer is in an invalid state).
const joinTxnTimeout = 10 * time.Second

// runMembers runs the job with one member per name until the group read
// its input to the end.
func runMembers(t testing.TB, p *spec.Plan, dir string, names ...string) []job.Summary {
	t.Helper()
	return runGroup(t, p, dir, nil, names...)
}

// runGroup is runMembers with each member's options changed by opt
// (unless nil).
func runGroup(t testing.TB, p *spec.Plan, dir string, opt func(*Options), names ...string) []job.Summary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	sums := make([]job.Summary, len(names))
	// Each task's committed watermarks by checkpoint id, whichever
	// member committed them.
	var mu sync.Mutex
	wms := map[int32]map[int64]etime.Time{}
	by := map[int32]map[int64]string{}
	onCommit := func(name string) func(int32, int64, etime.Time) {
		return func(task int32, id int64, wm etime.Time) {
			mu.Lock()
			defer mu.Unlock()
			if wms[task] == nil {
				wms[task], by[task] = map[int64]etime.Time{}, map[int64]string{}
			}
			if _, dup := wms[task][id]; dup {
				t.Errorf("task %d: checkpoint %d committed twice, by %s (watermark %d) and by %s (watermark %d)", task, id, by[task][id], wms[task][id], name, wm)
			}
			wms[task][id], by[task][id] = wm, name
		}
	}
	for i, n := range names {
		wg.Go(func() {
			o := Options{Plan: p, Instance: n, StateDir: filepath.Join(dir, n), SessionTimeout: joinSession, TransactionTimeout: joinTxnTimeout,
				Info: func(msg string) { t.Log(msg) }, Summary: func(s job.Summary) { sums[i] = s }, OnCommit: onCommit(n)}
			if opt != nil {
				opt(&o)
			}
			errs[i] = Run(ctx, o)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("member %s: %v", names[i], err)
		}
	}
	if ctx.Err() != nil {
		t.Fatal("the group did not read its input to the end within 2 minutes")
	}
	// No task's watermark goes back, across owners.
	for task, byID := range wms {
		prev := etime.MinTime
		for _, id := range slices.Sorted(maps.Keys(byID)) {
			if byID[id] < prev {
				t.Errorf("task %d: checkpoint %d has watermark %d, below the %d of an earlier one", task, id, byID[id], prev)
			}
			prev = byID[id]
		}
	}
	return sums
}

// sameOutputs compares the committed results, late records and dead
// letters of job got with those of job want (the baseline, which must
// have written results).
func sameOutputs(t *testing.T, broker, want, got string) {
	t.Helper()
	for _, kind := range []string{"out", "late", "bad"} {
		a, b := committed(t, broker, want+"-"+kind), committed(t, broker, got+"-"+kind)
		if len(a) == 0 && kind == "out" {
			t.Fatalf("%s wrote no results", want)
		}
		if !slices.Equal(a, b) {
			t.Errorf("%s: %s wrote %d records, %s %d; first differences:\n%s", kind, want, len(a), got, len(b), jobtest.Diff(a, b))
		}
	}
}

// committed is topic as read_committed readers see it.
func committed(t *testing.T, broker, topic string) []string {
	return jobtest.Committed(t, broker, topic)
}

// TestGroup runs the job once with one member (the baseline) and once
// with three: the committed results, late records and dead letters are
// the same, and each result appears once.
func TestGroup(t *testing.T) {
	broker := cluster(t, 3000, "one", "three")
	dir := t.TempDir()
	// Inboxes of 100 records: the members pause and resume fetching.
	defer func(n int) { inboxRecords = n }(inboxRecords)
	inboxRecords = 100
	before := pauses.Load()
	one := runMembers(t, plan(t, "one", broker), dir, "a")
	three := runMembers(t, plan(t, "three", broker), dir, "x", "y", "z")
	if pauses.Load() == before {
		t.Error("no member paused a partition with a full inbox")
	}
	// Every member gives the group's summary: the counts of one member's
	// run, conserved, with every record read.
	for i, s := range append(one, three...) {
		if !s.Conserved() || s.Get("records_in") != 3002 || s.Get("dead_letter") != 2 || s.Get("late_side_output") < 50 {
			t.Errorf("summary %d: conserved %v: %s", i, s.Conserved(), s.JSON())
		}
		if string(s.JSON()) != string(one[0].JSON()) {
			t.Errorf("summary %d differs from one member's:\n%s%s", i, s.JSON(), one[0].JSON())
		}
	}
	sameOutputs(t, broker, "one", "three")
	if n := len(committed(t, broker, "one-late")); n < 50 {
		t.Errorf("%d late records, want the 60 orders 4 s late", n)
	}
	if runs := runIDs(t, broker, "three-out"); len(runs) != 1 {
		t.Errorf("the group's results carry run ids %v, want one: the group is one run", runs)
	}

	// A reset group runs again from the start: a second run, the same
	// counts, its results under a new run id.
	did, err := Reset(context.Background(), plan(t, "one", broker))
	if err != nil || len(did) != 2 {
		t.Fatalf("reset: %v %v", did, err)
	}
	again := runMembers(t, plan(t, "one", broker), dir, "a")
	if string(again[0].JSON()) != string(one[0].JSON()) {
		t.Errorf("the run after the reset:\n%s, the first:\n%s", again[0].JSON(), one[0].JSON())
	}
	if runs := runIDs(t, broker, "one-out"); len(runs) != 2 {
		t.Errorf("after a reset and a run, one-out holds runs %v, want two", runs)
	}

	// A member of another spec is refused by the group.
	other := plan(t, "three", broker)
	other.Key = []string{"amount"}
	err = Run(context.Background(), Options{Plan: other, Instance: "w", StateDir: filepath.Join(dir, "w")})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "the members of a group run one spec") {
		t.Errorf("a member of another spec: %v", err)
	}

	// A member of a finished group whose input grew since is refused: the
	// group would never read the new records.
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.DefaultProduceTopic("in"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Key: []byte("u1"), Value: []byte(`{"user_id":"u1","amount":1,"ts":1767225600000}`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	err = Run(context.Background(), Options{Plan: plan(t, "three", broker), Instance: "x", StateDir: filepath.Join(dir, "x")})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "finished its run") || !strings.Contains(err.Error(), "weir reset") {
		t.Errorf("a member of a finished group whose input grew: %v", err)
	}
}

// TestTransactionLapse: a member whose transaction stays open past its
// transaction timeout (here a commit stalled between its records and its
// end, as a stalled rebalance or a paused process does) finds its
// producer fenced by Kafka. It joins the group again under its name with
// a new producer, its tasks restart from their commits, and the group's
// results are those of a run without the stall.
func TestTransactionLapse(t *testing.T) {
	broker := cluster(t, 3000, "one", "lapse")
	dir := t.TempDir()
	one := runMembers(t, plan(t, "one", broker), dir, "a")
	var stalls atomic.Int32
	var rejoined atomic.Bool
	lapse := runGroup(t, plan(t, "lapse", broker), t.TempDir(), func(o *Options) {
		o.TransactionTimeout = 2 * time.Second
		o.Crash = func(point string) {
			// The first two commits stall past the timeout: the
			// member joins again twice.
			if point == "group-produced" && stalls.Add(1) <= 2 {
				time.Sleep(3 * time.Second)
			}
		}
		info := o.Info
		o.Info = func(msg string) {
			if strings.Contains(msg, "past its transaction timeout") && strings.Contains(msg, "joins the group again") {
				rejoined.Store(true)
			}
			info(msg)
		}
	}, "a")
	if !rejoined.Load() {
		t.Error("the member never said it joined again after a lapsed transaction")
	}
	if string(lapse[0].JSON()) != string(one[0].JSON()) {
		t.Errorf("the summary after lapses:\n%s, without:\n%s", lapse[0].JSON(), one[0].JSON())
	}
	sameOutputs(t, broker, "one", "lapse")
}

// runIDs are the weir-run headers of topic's committed records.
func runIDs(t *testing.T, broker, topic string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	seen := map[string]bool{}
	err := kafkaio.ReadCommitted(ctx, []string{broker}, []string{topic}, time.Second, func(r *kgo.Record) {
		for _, h := range r.Headers {
			if h.Key == "weir-run" {
				seen[string(h.Value)] = true
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return slices.Sorted(maps.Keys(seen))
}

// TestStateDir refuses a directory of another instance and a second
// process on one directory.
func TestStateDir(t *testing.T) {
	dir := t.TempDir()
	p := plan(t, "j", "127.0.0.1:1")
	unlock, err := lockStateDir(dir, p, "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockStateDir(dir, p, "a"); err == nil {
		t.Error("a second lock of one directory succeeded")
	}
	unlock()
	if _, err := lockStateDir(dir, p, "b"); err == nil {
		t.Error("instance b took instance a's directory")
	}
	// Another spec of the job (after a reset) takes the directory over.
	other := plan(t, "j", "127.0.0.1:1")
	other.Key = []string{"amount"}
	unlock, err = lockStateDir(dir, other, "a")
	if err != nil {
		t.Errorf("another spec of the job: %v", err)
	} else {
		unlock()
	}
	if _, err := lockStateDir(dir, plan(t, "k", "127.0.0.1:1"), "a"); err == nil {
		t.Error("job k took job j's directory")
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "a b", string(make([]byte, 65))} {
		if CheckInstance(bad) == nil {
			t.Errorf("instance %q accepted", bad)
		}
	}
}

// TestFenced starts a second member under a running member's name: the
// first is fenced off and fails, naming the instance.
func TestFenced(t *testing.T) {
	broker := cluster(t, 300, "f")
	p := plan(t, "f", broker)
	p.Source.Kafka.StopAtEnd = false
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := make(chan error, 1)
	assigned := make(chan struct{}, 1)
	go func() {
		first <- Run(ctx, Options{Plan: p, Instance: "a", StateDir: filepath.Join(dir, "1"), SessionTimeout: time.Second, TransactionTimeout: 3 * time.Second,
			Logger: slog.New(slog.NewTextHandler(tlog{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
			Info: func(msg string) {
				t.Log("first:", msg)
				if strings.Contains(msg, "assigned") {
					select {
					case assigned <- struct{}{}:
					default:
					}
				}
			}})
	}()
	select {
	case <-assigned:
	case err := <-first:
		t.Fatalf("the first member stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the first member got no tasks")
	}
	second := make(chan error, 1)
	var stopped []int32
	var stoppedSum job.Summary
	var others []string
	go func() {
		second <- Run(ctx, Options{Plan: p, Instance: "a", StateDir: filepath.Join(dir, "2"), SessionTimeout: time.Second, TransactionTimeout: 3 * time.Second, Info: func(msg string) { t.Log("second:", msg) },
			Stopped: func(tasks []int32, s job.Summary, o []string) { stopped, stoppedSum, others = tasks, s, o }})
	}()
	select {
	case err := <-first:
		if err == nil || !strings.Contains(err.Error(), `instance "a"`) {
			t.Errorf("the fenced member: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("the first member was not fenced off")
	}
	time.Sleep(2 * time.Second) // the second member runs its tasks
	cancel()
	if err := <-second; err != nil {
		t.Errorf("the second member: %v", err)
	}
	// Its graceful stop tells its tasks' counts.
	if len(stopped) != 4 || !stoppedSum.Conserved() || stoppedSum.Get("records_in") == 0 {
		t.Errorf("the stopped member's tasks %v, summary (conserved %v) %s", stopped, stoppedSum.Conserved(), stoppedSum.JSON())
	}
	// The fenced member is gone: no other member runs.
	if others == nil || len(others) != 0 {
		t.Errorf("the stopped member saw other members %#v, want none", others)
	}
}

type tlog struct{ t *testing.T }

func (l tlog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// TestAssignInterrupted: a rebalance that cancels an assignment's
// restores makes assign return the context's error, for the client to
// assign again, and does not fail the member.
func TestAssignInterrupted(t *testing.T) {
	broker := cluster(t, 10)
	p := plan(t, "i", broker)
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	m := &Member{o: Options{Plan: p, Instance: "a", Logger: slog.New(slog.DiscardHandler)}, topic: "in", group: Name(p), adm: kadm.NewClient(cl), tasks: map[int32]*task{}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = m.assign(ctx, map[string]map[int32]kgo.Offset{"in": {0: kgo.NewOffset()}})
	if !errors.Is(err, context.Canceled) || m.failure() != nil {
		t.Errorf("an interrupted assignment: %v; the member failed: %v", err, m.failure())
	}
	if len(m.tasks) != 0 {
		t.Errorf("an interrupted assignment started tasks %v", slices.Collect(maps.Keys(m.tasks)))
	}
}

// TestInbox: an inbox reports full at its bound and roomy again once
// its reader took half.
func TestInbox(t *testing.T) {
	defer func(n int) { inboxRecords = n }(inboxRecords)
	inboxRecords = 10
	b := newInbox("in", 0, 5)
	var rs []*kgo.Record
	for i := range 10 {
		rs = append(rs, &kgo.Record{Offset: int64(5 + i), Value: []byte("v")})
	}
	if b.put(rs[:9]) || !b.put(rs[9:]) {
		t.Fatal("the inbox is not full at exactly its bound")
	}
	if b.roomy() {
		t.Error("a full inbox is roomy")
	}
	f := b.PollRecords(context.Background(), 5)
	if n := f.NumRecords(); n != 5 || !b.roomy() || b.position() != 10 {
		t.Errorf("took %d records: roomy %v, position %d", n, b.roomy(), b.position())
	}
}

// TestMeta: a task's commit metadata reads back, and metadata of an
// older weir (no offset, no watermark) still names its checkpoint.
func TestMeta(t *testing.T) {
	for _, tm := range []taskMeta{{ID: 7, At: 120, Watermark: 1767225600000}, {ID: 8, Done: true, At: 0, Watermark: etime.MaxTime}, {ID: 1, At: -1, Watermark: etime.MinTime}, {ID: 3, At: 9, Watermark: 1767225600000, Idle: true}} {
		got, ok := parseMeta(tm.String())
		if !ok || got != tm {
			t.Errorf("%q reads back as %+v (%v), want %+v", tm.String(), got, ok, tm)
		}
	}
	if got, ok := parseMeta("weir 5 done"); !ok || got != (taskMeta{ID: 5, Done: true, At: -1, Watermark: etime.MinTime}) {
		t.Errorf("older metadata: %+v %v", got, ok)
	}
	for _, bad := range []string{"", "weir", "weir x", "weir 5 at=x", "other 5"} {
		if _, ok := parseMeta(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestStatus: a running member's status shows the group (its members,
// every task's owner, checkpoint and watermark, who holds the
// watermark), its metrics count its commits and hand-overs, and the
// doctor finds nothing wrong.
func TestStatus(t *testing.T) {
	broker := cluster(t, 300, "s")
	p := plan(t, "s", broker)
	p.Source.Kafka.StopAtEnd = false
	reg := prometheus.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	statusCh := make(chan func(context.Context) *monitor.GroupStatus, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Plan: p, Instance: "a", StateDir: t.TempDir(), SessionTimeout: time.Second, TransactionTimeout: 3 * time.Second, Registerer: reg,
			Serve: func(s Served) error { statusCh <- s.Status; return nil }})
	}()
	var status func(context.Context) *monitor.GroupStatus
	select {
	case status = <-statusCh:
	case err := <-done:
		t.Fatalf("the member stopped: %v", err)
	}
	var s *monitor.GroupStatus
	for deadline := time.Now().Add(30 * time.Second); ; {
		s = status(context.Background())
		ready := len(s.Members) == 1 && len(s.Tasks) == 4
		for _, tk := range s.Tasks {
			ready = ready && tk.Owner == "a" && tk.Checkpoint > 0 && (tk.WatermarkMS != nil || tk.End == 0) && tk.Lag == 0
		}
		if ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the status never showed every task run and committed by a: %+v", s)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if s.Holder == nil || s.InputPartitions != 4 || s.StatePartitions != 4 || s.Committed == 0 || len(s.Rebalances) == 0 || len(s.Errors) > 0 {
		t.Errorf("status: %+v", s)
	}
	if r := doctor.Diagnose(doctor.Dump{Group: s}, doctor.Thresholds{}); len(r.Findings) > 0 {
		t.Errorf("the doctor on a healthy group: %s", r.Text())
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
			got[mf.GetName()] += v
		}
	}
	for name, min := range map[string]float64{"weir_group_transactions_total": 1, "weir_group_handover_seconds": 4, "weir_group_tasks_assigned_total": 4,
		"weir_group_task_owner": 4, "weir_group_members": 1, "weir_group_changelog_bytes_total": 1} {
		if got[name] < min {
			t.Errorf("%s = %v, want at least %v", name, got[name], min)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestDoctorGroup: the group rules on made-up statuses.
func TestDoctorGroup(t *testing.T) {
	now := time.Now()
	wm := int64(1767225600000)
	base := monitor.GroupStatus{Group: "g", Instance: "a", At: now, Topic: "in", InputPartitions: 2, StatePartitions: 2,
		Members: []monitor.GroupMember{{Instance: "a", Tasks: []int32{0, 1}}},
		Tasks:   []monitor.GroupTask{{Task: 0, Owner: "a", WatermarkMS: &wm}, {Task: 1, Owner: "a", WatermarkMS: &wm}}}
	for _, c := range []struct {
		name string
		mod  func(s *monitor.GroupStatus)
		rule string
	}{
		{"healthy", func(*monitor.GroupStatus) {}, ""},
		{"storm", func(s *monitor.GroupStatus) {
			for i := range 6 {
				s.Rebalances = append(s.Rebalances, now.Add(-time.Duration(i)*time.Minute))
			}
		}, "D23"},
		{"no owner", func(s *monitor.GroupStatus) { s.Tasks[1].Owner = "" }, "D24"},
		{"no member", func(s *monitor.GroupStatus) { s.Members, s.Tasks[0].Owner, s.Tasks[1].Owner = nil, "", "" }, "D24"},
		{"slow restore", func(s *monitor.GroupStatus) {
			s.Restores = []monitor.GroupRestore{{Task: 1, Started: now.Add(-time.Minute), Seconds: 60, InProgress: true}}
		}, "D25"},
		{"partitions added", func(s *monitor.GroupStatus) { s.InputPartitions = 3 }, "D26"},
		{"mismatch", func(s *monitor.GroupStatus) { s.Mismatches = []string{"the record at offset 3 ..."} }, "D26"},
	} {
		s := base
		s.Tasks = slices.Clone(base.Tasks)
		c.mod(&s)
		r := doctor.Diagnose(doctor.Dump{Group: &s}, doctor.Thresholds{})
		var rules []string
		for _, f := range r.Findings {
			rules = append(rules, f.Rule)
		}
		if c.rule == "" && len(rules) > 0 || c.rule != "" && !slices.Contains(rules, c.rule) {
			t.Errorf("%s: findings %v, want %q:\n%s", c.name, rules, c.rule, r.Text())
		}
	}
}

// repartitionJob is groupJob without partitioned_by_key: the members
// route each record by its key through the repartition topic.
const repartitionJob = `
name: %[1]s
source:
  type: kafka
  kafka: {brokers: [%[2]s], topic: %[3]s}
watermark: {max_out_of_orderness: 300ms, idle_timeout: 0s, interval: 50ms, backlog_every: 20}
key: [user_id]
window: {type: tumbling, size: 1s}
allowed_lateness: 1s
aggregate:
  - {name: orders, fn: count}
  - {name: total, fn: sum, field: amount}
sinks:
  results: {type: kafka, brokers: [%[2]s], topic: %[1]s-out}
  late: {type: kafka, brokers: [%[2]s], topic: %[1]s-late}
  dead_letter: {type: kafka, brokers: [%[2]s], topic: %[1]s-bad}
`

// TestRepartition runs a job whose input is not partitioned by its key
// (orders of 13 users spread round-robin over 4 partitions) with one
// member and with three: the route tasks send each order to the window
// task of its user, and the committed results, late records and dead
// letters are the same, and so are the members' counts, conserved. A
// window task's watermark follows the route tasks' markers, which come
// in blocks per route task and commit: while a backlog is read in one
// go, it waits for every route task's first marker and records are
// judged by a watermark that trails (leniently). So the input comes in
// two batches, the second once the group committed the first: its
// orders an hour late are too late whatever the commits, and every other
// order is within the out-of-orderness bound of its partition. There is
// no idle timeout: a route task idle between the batches would let the
// others' markers pass its first records of the second, depending on
// timing.
func TestRepartition(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "rr1", "rr3"), kfake.SeedTopics(3, "r1-out", "r3-out"),
		kfake.SeedTopics(1, "r1-late", "r1-bad", "r3-late", "r3-bad"), kfake.GroupMinSessionTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	broker := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	const n = 6000
	produce := func(topic string, from, to int) {
		for i := from; i < to; i++ {
			ts := int64(1767225600000) + int64(i)*10 - int64(i%7)*30
			if i >= n/2 && i%97 == 0 {
				ts -= 3600_000
			}
			u := fmt.Sprintf("u%d", i%13)
			v := fmt.Appendf(nil, `{"user_id":%q,"amount":%d,"ts":%d}`, u, i%10, ts)
			if i%1000 == 999 {
				v = []byte(`{"user_id":"u1"}`) // a dead letter
			}
			cl.Produce(context.Background(), &kgo.Record{Topic: topic, Value: v}, nil)
		}
		if err := cl.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	run := func(name, topic string, names ...string) job.Summary {
		p, err := spec.Parse(fmt.Appendf(nil, repartitionJob, name, broker, topic))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var mu sync.Mutex
		var sum job.Summary
		var wg sync.WaitGroup
		dir := t.TempDir()
		for _, m := range names {
			wg.Go(func() {
				err := Run(ctx, Options{Plan: p, Instance: m, StateDir: filepath.Join(dir, m), SessionTimeout: joinSession, TransactionTimeout: joinTxnTimeout, Logger: slog.New(slog.NewTextHandler(tlog{t}, nil)),
					Info: func(msg string) { t.Log(msg) },
					Stopped: func(_ []int32, s job.Summary, _ []string) {
						mu.Lock()
						defer mu.Unlock()
						for _, c := range s.Counters {
							_ = addSummary(&sum, fmt.Appendf(nil, "%s %d\n", c.Name, c.Value))
						}
					}})
				if err != nil {
					t.Errorf("member %s: %v", m, err)
				}
			})
		}
		produce(topic, 0, n/2)
		jobtest.CaughtUp(t, broker, Name(p), time.Minute, topic, RepartitionTopic(p))
		produce(topic, n/2, n)
		jobtest.CaughtUp(t, broker, Name(p), time.Minute, topic, RepartitionTopic(p))
		cancel()
		wg.Wait()
		return sum
	}
	defer func(d time.Duration) { purgeEvery = d }(purgeEvery)
	purgeEvery = 0
	one := run("r1", "rr1", "a")
	three := run("r3", "rr3", "x", "y", "z")
	// The members purged the repartition topics up to what they
	// committed.
	for _, topic := range []string{"weir-r1-repartition", "weir-r3-repartition"} {
		starts, err := adm.ListStartOffsets(context.Background(), topic)
		if err != nil {
			t.Fatal(err)
		}
		starts.Each(func(l kadm.ListedOffset) {
			if l.Offset == 0 {
				t.Errorf("%s partition %d was not purged", topic, l.Partition)
			}
		})
	}
	for i, s := range []job.Summary{one, three} {
		if !s.Conserved() || s.Get("records_in") != n || s.Get("dead_letter") != 6 || s.Get("late_side_output") < 20 {
			t.Errorf("summary %d: conserved %v: %s", i, s.Conserved(), s.JSON())
		}
	}
	if string(one.JSON()) != string(three.JSON()) {
		t.Errorf("three members counted otherwise than one:\n%s\n%s", three.JSON(), one.JSON())
	}
	for _, kind := range []string{"out", "late", "bad"} {
		a, b := committed(t, broker, "r1-"+kind), committed(t, broker, "r3-"+kind)
		if len(a) == 0 {
			t.Fatalf("%s: one member wrote nothing", kind)
		}
		// The runs read topics of their own; a late record's lateness is
		// against the watermark when it came, which follows the commits.
		lateness := regexp.MustCompile(`"lateness_ms":\d+,`)
		for i := range a {
			a[i] = lateness.ReplaceAllString(a[i], "")
		}
		for i := range b {
			b[i] = lateness.ReplaceAllString(strings.ReplaceAll(b[i], `"kafka:rr3"`, `"kafka:rr1"`), "")
		}
		slices.Sort(a)
		slices.Sort(b)
		if !slices.Equal(a, b) {
			t.Errorf("%s: one member wrote %d records, three wrote %d; first differences:\n%s", kind, len(a), len(b), jobtest.Diff(a, b))
		}
	}
}

// rtOut records what an rtReader emits.
type rtOut struct {
	wms  []etime.Time
	idle []bool
	n    int
}

func (o *rtOut) Emit(etime.Time, connector.Line) { o.n++ }
func (o *rtOut) EmitWatermark(wm etime.Time)     { o.wms = append(o.wms, wm) }
func (o *rtOut) MarkIdle()                       { o.idle = append(o.idle, true) }
func (o *rtOut) MarkActive()                     { o.idle = append(o.idle, false) }

// TestRTWatermark: a window task's watermark waits for every route task,
// is the minimum over the active ones, the largest when all are idle,
// never goes back, and survives a restore; every route task done ends
// the bounded read.
func TestRTWatermark(t *testing.T) {
	r := &rtReader{nup: 2, bound: true, pos: rtPosition{WM: etime.MinTime}, inbox: newInbox("rt", 0, 0)}
	var o rtOut
	step := func(mk marker) {
		r.hear(mk)
		r.advance(&o)
	}
	step(marker{From: 0, WM: 100})
	if len(o.wms) != 0 {
		t.Fatalf("a watermark before every route task was heard: %v", o.wms)
	}
	step(marker{From: 1, WM: 50})
	step(marker{From: 0, WM: 200})
	step(marker{From: 1, WM: 150})
	if !slices.Equal(o.wms, []etime.Time{50, 150}) {
		t.Fatalf("watermarks %v, want the minimum over both: [50 150]", o.wms)
	}
	step(marker{From: 1, WM: 150, Idle: true}) // the active one alone
	step(marker{From: 0, WM: 300, Idle: true}) // all idle: the largest
	if !slices.Equal(o.wms, []etime.Time{50, 150, 200, 300}) || !slices.Equal(o.idle, []bool{true}) {
		t.Fatalf("watermarks %v idle %v, want [50 150 200 300] then idle", o.wms, o.idle)
	}
	step(marker{From: 1, WM: 160}) // active again, behind: no step back
	if last := o.wms[len(o.wms)-1]; last != 300 || !slices.Equal(o.idle, []bool{true, false}) {
		t.Fatalf("watermarks %v idle %v after a route task came back behind", o.wms, o.idle)
	}
	// A restore keeps what was heard.
	b, err := r.SnapshotPosition()
	if err != nil {
		t.Fatal(err)
	}
	r2 := &rtReader{nup: 2, bound: true, inbox: newInbox("rt", 0, 0)}
	if err := r2.RestorePosition(b); err != nil || r2.pos.WM != 300 || len(r2.pos.Up) != 2 {
		t.Fatalf("restored %+v, %v", r2.pos, err)
	}
	if r2.allDone() {
		t.Fatal("done before any route task was")
	}
	r2.hear(marker{From: 0, WM: 400, Done: true})
	r2.hear(marker{From: 1, WM: 400, Done: true})
	if st, err := r2.Read(context.Background(), &o); err != nil || st != connector.Done {
		t.Fatalf("every route task done: %v %v, want Done", st, err)
	}
}

// TestTaskNext: a checkpoint taken before the task's reader started
// (its position says -1) resumes where the task started; committed as
// -1 it would read as no commit (the next owner starting over and
// committing the checkpoint's id again), and a restart from it could not
// rewind the member's fetch (the task waited for records already taken).
func TestTaskNext(t *testing.T) {
	tk := &task{from: 7}
	if got := tk.next(kafkaio.Position{Next: -1}); got != 7 {
		t.Errorf("before the reader started: %d, want the task's start 7", got)
	}
	if got := tk.next(kafkaio.Position{Next: 9}); got != 9 {
		t.Errorf("%d, want the reader's 9", got)
	}
}

// TestAlignment: with max_drift, a task whose partition's event time runs
// far ahead of another task's pauses its reader until the slow one
// catches up, across members (the group's watermarks are read from the
// committed offsets), and the results equal those of a run without
// alignment (pauses change when records are read, never how they are
// classified).
func TestAlignment(t *testing.T) {
	c, cl := fakeKafka(t, 2, "free", "aligned")
	broker := c.ListenAddrs()[0]
	// Partition 0's 5,000 orders are a second apart in event time,
	// partition 1's 20,000 ten milliseconds: read as fast as Kafka gives
	// them, partition 0's watermark would run far ahead while partition 1
	// is still read.
	keys := kgo.StickyKeyPartitioner(nil).ForTopic("in")
	users := [2][]string{}
	for i := 0; len(users[0]) < 3 || len(users[1]) < 3; i++ {
		u := fmt.Sprintf("u%d", i)
		p := keys.Partition(&kgo.Record{Key: []byte(u)}, 2)
		users[p] = append(users[p], u)
	}
	var recs []*kgo.Record
	for p, n := range []int{5000, 20000} {
		step := []int64{1000, 10}[p]
		for i := range n {
			u := users[p][i%3]
			ts := int64(1767225600000) + int64(i)*step
			recs = append(recs, &kgo.Record{Key: []byte(u), Value: fmt.Appendf(nil, `{"user_id":%q,"amount":%d,"ts":%d}`, u, i%10, ts)})
		}
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	runMembers(t, plan(t, "free", broker), t.TempDir(), "a", "b")
	// max_drift 5s, checked every millisecond (every watermark tick): a
	// reader reads its whole partition within a few ticks of 50ms.
	aligned, err := spec.Parse(fmt.Appendf(nil, strings.Replace(groupJob, "interval: 50ms", "interval: 1ms, max_drift: 5s", 1),
		"aligned", broker, broker, "aligned", broker, "aligned", broker, "aligned"))
	if err != nil || aligned.MaxDrift != 5000 {
		t.Fatalf("the aligned job: %v (max_drift %v)", err, aligned.MaxDrift)
	}
	var mu sync.Mutex
	paused := map[string]int{}
	runGroup(t, aligned, t.TempDir(), func(o *Options) {
		o.Run.Logger = slog.New(slog.NewTextHandler(writerFunc(func(b []byte) {
			if m := regexp.MustCompile(`kafka partition paused \(alignment\)" topic=in partition=(\d+)`).FindSubmatch(b); m != nil {
				mu.Lock()
				paused[string(m[1])]++
				mu.Unlock()
			}
		}), nil))
	}, "a", "b")
	if paused["0"] == 0 {
		t.Errorf("the fast partition 0 never paused (pauses by partition: %v)", paused)
	}
	// The slow partition may pause too, at the start: a task without a
	// commit yet holds the others, as a partition without a watermark
	// does in one process.
	t.Logf("pauses by partition: %v", paused)
	sameOutputs(t, broker, "free", "aligned")
}

type writerFunc func([]byte)

func (f writerFunc) Write(b []byte) (int, error) {
	f(b)
	return len(b), nil
}

// TestFencedOrLapsed: a fenced producer, or an end past its deadline, in
// a transaction older than the transaction timeout is a lapse (the member
// joins again); in a young one, a fencing is another process under the
// member's name, and a fenced instance id always is.
func TestFencedOrLapsed(t *testing.T) {
	m := &Member{o: Options{Plan: plan(t, "x", "127.0.0.1:1"), Instance: "a", TransactionTimeout: time.Second}}
	end := func(err error) error { return fmt.Errorf("group: ending the transaction: %w", err) }
	for _, c := range []struct {
		age    time.Duration
		err    error
		lapsed bool
		other  bool
	}{
		{2 * time.Second, end(kerr.ProducerFenced), true, false},
		{2 * time.Second, end(kerr.InvalidProducerEpoch), true, false},
		{2 * time.Second, end(context.DeadlineExceeded), true, false},
		{2 * time.Second, end(kerr.FencedInstanceID), false, true},
		{100 * time.Millisecond, end(kerr.ProducerFenced), false, true},
		{100 * time.Millisecond, end(context.DeadlineExceeded), false, false},
		{2 * time.Second, end(kerr.UnknownServerError), false, false},
		// Kafka not answering: an outage the member waits out; an
		// error Kafka answers with is none, retriable or not (a deleted
		// topic would otherwise make the member rejoin forever).
		{100 * time.Millisecond, end(syscall.ECONNREFUSED), true, false},
		{100 * time.Millisecond, end(kerr.UnknownTopicOrPartition), false, false},
		{100 * time.Millisecond, end(kerr.CorruptMessage), false, false},
	} {
		m.txnBegan = time.Now().Add(-c.age)
		err := m.fenced(c.err)
		var le *lapsedError
		if errors.As(err, &le) != c.lapsed || strings.Contains(err.Error(), `another process runs instance "a"`) != c.other {
			t.Errorf("%v after %v: %v", c.err, c.age, err)
		}
	}
	m.txnBegan = time.Time{} // no transaction open: a fetch's fencing
	if err := m.fenced(kerr.ProducerFenced); !strings.Contains(err.Error(), "another process") {
		t.Errorf("a fencing without a transaction: %v", err)
	}
}

// TestGroupDoneRetries: a member whose tasks read their input to the end
// waits while Kafka does not answer its reads of the group's progress (a
// broker restart), rather than exit 1 without a summary as a trial saw.
func TestGroupDoneRetries(t *testing.T) {
	c, cl := fakeKafka(t, 4, "r")
	broker := c.ListenAddrs()[0]
	for i := range 200 {
		u := fmt.Sprintf("u%d", i%13)
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Key: []byte(u), Value: fmt.Appendf(nil, `{"user_id":%q,"amount":1,"ts":%d}`, u, 1767225600000+int64(i)*10)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var failed atomic.Int32
	var once sync.Once
	sums := runGroup(t, plan(t, "r", broker), t.TempDir(), func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(tlog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
		info := o.Info
		o.Info = func(msg string) {
			info(msg)
			if strings.Contains(msg, "read its input to the end") {
				once.Do(func() {
					// The next reads of committed offsets fail, as while
					// a broker restarts.
					c.ControlKey(int16(kmsg.OffsetFetch), func(kmsg.Request) (kmsg.Response, error, bool) {
						if failed.Load() >= 4 {
							c.DropControl()
							return nil, nil, false
						}
						failed.Add(1)
						c.KeepControl()
						return nil, errors.New("broker restarting"), true
					})
				})
			}
		}
	}, "a")
	if failed.Load() < 4 {
		t.Errorf("%d reads of the offsets failed, want 4", failed.Load())
	}
	if s := sums[0]; !s.Conserved() || s.Get("records_in") != 200 {
		t.Errorf("summary: %s", s.JSON())
	}
}

// TestStopLapse: a graceful stop whose last commit lapses (its
// transaction outlives the timeout while Kafka is unavailable) still
// leaves the group and ends cleanly, saying that the tasks resume from
// their previous commits (a trial saw it exit 1 after 30s, without the
// stopped member's counts).
func TestStopLapse(t *testing.T) {
	broker := cluster(t, 300, "sl")
	p := plan(t, "sl", broker)
	p.Source.Kafka.StopAtEnd = false
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stopping, said, stopped atomic.Bool
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Plan: p, Instance: "a", StateDir: t.TempDir(), SessionTimeout: joinSession, TransactionTimeout: 2 * time.Second,
			Crash: func(point string) {
				if point == "group-stop" {
					stopping.Store(true)
				}
				if point == "group-produced" && stopping.Load() {
					time.Sleep(3 * time.Second) // the stop's commit stalls past the timeout
				}
			},
			Info: func(msg string) {
				t.Log(msg)
				if strings.Contains(msg, "past its transaction timeout") && strings.Contains(msg, "its tasks resume from their previous commits") {
					said.Store(true)
				}
				if strings.Contains(msg, "assigned") {
					go func() {
						time.Sleep(500 * time.Millisecond)
						cancel()
					}()
				}
			},
			Stopped: func([]int32, job.Summary, []string) { stopped.Store(true) }})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the stopped member: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the member did not stop")
	}
	if !said.Load() || !stopped.Load() {
		t.Errorf("said the lapse %v, told its stopped tasks %v", said.Load(), stopped.Load())
	}
}

// TestStopWhileFinishing: a stop (SIGTERM) that comes while the member
// reads the tasks' last checkpoints after the group's end stops it
// cleanly, as at any other time (the multi-process test saw it exit 1
// with "reading checkpoint 8 interrupted: context canceled").
func TestStopWhileFinishing(t *testing.T) {
	broker := cluster(t, 300, "sf")
	p := plan(t, "sf", broker)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var finishing, stopped atomic.Bool
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Plan: p, Instance: "a", StateDir: t.TempDir(), SessionTimeout: joinSession, TransactionTimeout: joinTxnTimeout,
			Info: func(msg string) {
				t.Log(msg)
				if strings.Contains(msg, "every task of the group read its input to the end") {
					finishing.Store(true)
					cancel()
				}
			},
			Stopped: func([]int32, job.Summary, []string) { stopped.Store(true) }})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the member stopped while finishing: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the member did not stop")
	}
	if !finishing.Load() || !stopped.Load() {
		t.Errorf("finishing %v, told its stopped tasks %v", finishing.Load(), stopped.Load())
	}
}

// TestStall: a member whose Kafka goes away says so on stderr within its
// StallAfter, naming the failed connection, and its Health (which the
// admin server's /healthz answers 503 with) names the stall; while it
// commits, Health is nil.
func TestStall(t *testing.T) {
	c, cl := fakeKafka(t, 2, "st")
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Key: []byte("u"), Value: []byte(`{"user_id":"u","amount":1,"ts":1767225600000}`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	addr := c.ListenAddrs()[0]
	p := plan(t, "st", addr)
	p.Source.Kafka.StopAtEnd = false
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan Served, 1)
	infos := make(chan string, 100)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Plan: p, Instance: "a", StateDir: t.TempDir(), SessionTimeout: time.Second, TransactionTimeout: 3 * time.Second,
			StallAfter: 2 * time.Second, Info: func(msg string) {
				select {
				case infos <- msg:
				default:
				}
			}, Serve: func(s Served) error { served <- s; return nil }})
	}()
	var m Served
	select {
	case m = <-served:
	case err := <-done:
		t.Fatalf("the member stopped: %v", err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		s := m.Status(context.Background())
		if s.Committed > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the member never committed: %+v", s)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if why := m.Health(); why != nil {
		t.Fatalf("a committing member is stalled: %q", why)
	}
	// A reset while a member runs is refused (weir reset exits 2).
	if _, err := Reset(context.Background(), p); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "has members [a]") {
		t.Errorf("a reset with a live member: %v", err)
	}
	c.Close() // the outage
	var warning string
	for deadline := time.Now().Add(20 * time.Second); warning == ""; {
		select {
		case msg := <-infos:
			if strings.HasPrefix(msg, "warning: instance a has committed nothing for") {
				warning = msg
			}
		case err := <-done:
			t.Fatalf("the member stopped: %v", err)
		case <-time.After(time.Until(deadline)):
			t.Fatal("no warning on stderr in 20s of outage")
		}
	}
	t.Logf("stderr: %s", warning)
	why := m.Health()
	if len(why) != 1 || !strings.Contains(why[0], "committed nothing for") || !strings.Contains(why[0], "Kafka at "+addr+" fails") {
		t.Errorf("health in an outage: %q (stderr said %q)", why, warning)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the member did not stop in a minute of outage")
	}
}

// TestStallRecovery: the stall watch says once that the member stalled,
// and once that it commits again; a restore under way is no stall, nor
// is a gap shorter than two commit intervals, nor the end of a group
// that read its input to the end (an SRE trial saw it blamed on Kafka).
func TestStallRecovery(t *testing.T) {
	infos := make(chan string, 10)
	m := &Member{o: Options{Instance: "a", StallAfter: 100 * time.Millisecond, Logger: slog.New(slog.DiscardHandler), Info: func(msg string) { infos <- msg }},
		brokers: []string{"k:9092"}}
	m.ev.lastCommit = time.Now().Add(-10 * time.Second) // two presence records missed, and more
	m.OnBrokerConnect(kgo.BrokerMetadata{}, 0, nil, errors.New("connection refused"))
	if why := m.Health(); len(why) != 1 || !strings.Contains(why[0], "Kafka at k:9092 fails: connection refused") {
		t.Fatalf("health: %q", why)
	}
	m.ev.restores = []monitor.GroupRestore{{InProgress: true}}
	if why := m.Health(); why != nil {
		t.Errorf("health while restoring: %q", why)
	}
	m.ev.restores = nil
	m.o.CommitInterval = 6 * time.Second // a commit due every 6s: 10s is not two missed
	if why := m.Health(); why != nil {
		t.Errorf("health with a 6s commit interval: %q", why)
	}
	m.o.CommitInterval = 0
	m.ev.finishing = true // the group read its input to the end: no more commits, no stall
	if why := m.Health(); why != nil {
		t.Errorf("health while finishing: %q", why)
	}
	m.ev.finishing = false
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { m.watchStalls(stop) })
	defer func() {
		close(stop)
		wg.Wait()
	}()
	next := func() string {
		select {
		case msg := <-infos:
			return msg
		case <-time.After(10 * time.Second):
			t.Fatal("the watch said nothing in 10s")
			return ""
		}
	}
	if msg := next(); !strings.HasPrefix(msg, "warning: instance a has committed nothing for ") || !strings.Contains(msg, "Kafka at k:9092 fails: connection refused") {
		t.Errorf("stall: %q", msg)
	}
	m.mu.Lock()
	m.ev.lastCommit = time.Now() // as committedTasks sets it
	m.mu.Unlock()
	if msg := next(); !strings.HasPrefix(msg, "instance a commits again (nothing committed for 1") {
		t.Errorf("recovery: %q", msg)
	}
}

// TestMisplacedRecord: with partitioned_by_key, a record in another
// partition than Kafka's default partitioner gives its key, far past the
// first records of its partition, stops the member with an error naming
// it; no output of the records after it is committed, so nothing of a
// split key's windows reaches a reader.
func TestMisplacedRecord(t *testing.T) {
	c, cl := fakeKafka(t, 2, "misplaced")
	var recs []*kgo.Record
	for i := range 2000 {
		u := fmt.Sprintf("u%d", i%13)
		recs = append(recs, &kgo.Record{Key: []byte(u), Value: fmt.Appendf(nil, `{"user_id":%q,"amount":1,"ts":%d}`, u, 1767225600000+int64(i)*2)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// u0's right partition, and one u0 record put in the other one.
	right := int32(kgo.StickyKeyPartitioner(nil).ForTopic("in").Partition(&kgo.Record{Key: []byte("u0")}, 2))
	bad := &kgo.Record{Key: []byte("u0"), Partition: 1 - right, Value: []byte(`{"user_id":"u0","amount":1000,"ts":1767225604000}`)}
	manual, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("in"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer manual.Close()
	if err := manual.ProduceSync(context.Background(), bad).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if bad.Offset < 100 {
		t.Fatalf("the misplaced record is at offset %d: the test wants it past the first 100", bad.Offset)
	}
	broker := c.ListenAddrs()[0]
	p := plan(t, "misplaced", broker)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = Run(ctx, Options{Plan: p, Instance: "a", StateDir: t.TempDir(), SessionTimeout: joinSession, TransactionTimeout: joinTxnTimeout, Info: func(msg string) { t.Log(msg) }})
	want := fmt.Sprintf("the record at offset %d with key \"u0\" is in partition %d, but Kafka's default partitioner (murmur2) puts that key in partition %d", bad.Offset, 1-right, right)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want an error with %q", err, want)
	}
	for _, line := range committed(t, broker, "misplaced-out") {
		var r struct{ Total int64 }
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.Total >= 1000 {
			t.Errorf("a result holds the misplaced record (amount 1000): %s (%v)", line, err)
		}
	}
}

// TestPartitionsAdded: partitions added to the input while the group
// runs stop the member with the fix (they would never be read: the
// group's state is split by the partitions it started with).
func TestPartitionsAdded(t *testing.T) {
	defer func(d time.Duration) { partsEvery = d }(partsEvery)
	partsEvery = 100 * time.Millisecond
	broker := cluster(t, 200, "grown")
	p, err := spec.Parse([]byte(strings.Replace(fmt.Sprintf(groupJob, "grown", broker, broker, "grown", broker, "grown", broker, "grown"), "stop_at_end: true", "stop_at_end: false", 1)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Plan: p, Instance: "a", StateDir: t.TempDir(), SessionTimeout: joinSession, TransactionTimeout: joinTxnTimeout, Info: func(msg string) { t.Log(msg) }})
	}()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for len(committed(t, broker, "grown-out")) == 0 {
		select {
		case err := <-done:
			t.Fatalf("the member ended before it committed: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if _, err := adm.CreatePartitions(ctx, 2, "in"); err != nil {
		t.Fatal(err)
	}
	// Records keyed as before, spread over the 6 partitions: some land in
	// old partitions under keys that 4 partitions would put elsewhere,
	// which the key check must not blame on the producer.
	prod, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.DefaultProduceTopic("in"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range 100 {
		u := fmt.Sprintf("u%d", i%13)
		prod.Produce(ctx, &kgo.Record{Key: []byte(u), Value: fmt.Appendf(nil, `{"user_id":%q,"amount":1,"ts":%d}`, u, 1767225700000+int64(i))}, nil)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "the input topic in now has 6 partitions and the group's state 4") || !strings.Contains(err.Error(), "weir reset") {
			t.Fatalf("got %v, want the partitions added named", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the member did not notice the partitions added within 30 s")
	}
}

// TestChangelogLost: a group whose changelog topic was deleted after it
// committed progress is refused at once (its state is lost), naming
// weir reset, rather than recreate the topic and wait for checkpoints
// that are gone (an SRE trial saw a failure 50 s later).
func TestChangelogLost(t *testing.T) {
	broker := cluster(t, 300, "lost")
	p := plan(t, "lost", broker)
	dir := t.TempDir()
	runMembers(t, p, dir, "a")
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).DeleteTopics(context.Background(), ChangelogTopic(p)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = Run(ctx, Options{Plan: p, Instance: "a", StateDir: filepath.Join(dir, "a"), SessionTimeout: joinSession, TransactionTimeout: joinTxnTimeout})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "is gone (deleted?): the group's state is lost; reset the group (weir reset)") {
		t.Fatalf("got %v, want a refusal naming the lost changelog", err)
	}
}

// TestSessionTimeoutRange: a session timeout the brokers refuse names
// group.session_timeout (the broker's error named its own settings, and
// no topic).
func TestSessionTimeoutRange(t *testing.T) {
	broker := cluster(t, 10, "st")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := Run(ctx, Options{Plan: plan(t, "st", broker), Instance: "a", StateDir: t.TempDir(), SessionTimeout: 100 * time.Millisecond, TransactionTimeout: joinTxnTimeout})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "group.session_timeout: 100ms is outside the range the brokers allow") {
		t.Fatalf("got %v", err)
	}
}

// TestChangelogRaceNotLost: a new member that listed no changelog while
// another new member created it and committed progress is not refused
// (the lost-topic check lists the topic again after reading the progress);
// a topic still missing after progress was read is gone.
func TestChangelogRaceNotLost(t *testing.T) {
	broker := cluster(t, 10, "race")
	p := plan(t, "race", broker)
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	m := &Member{adm: adm, group: Name(p)}
	topic := ChangelogTopic(p)
	if gone, err := m.goneAfterProgress(ctx, topic); err != nil || gone {
		t.Fatalf("no progress: gone %v, %v; want a new group", gone, err)
	}
	// The other member: it created the topic, then committed progress.
	if _, err := adm.CreateTopic(ctx, 4, -1, nil, topic); err != nil {
		t.Fatal(err)
	}
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "in", Partition: 0, At: 1, LeaderEpoch: -1, Metadata: metaPrefix + "1"})
	if r, err := adm.CommitOffsets(ctx, Name(p), offs); err != nil || r.Error() != nil {
		t.Fatal(err, r.Error())
	}
	if !m.committedProgress(ctx) {
		t.Fatal("the progress committed is not read")
	}
	if gone, err := m.goneAfterProgress(ctx, topic); err != nil || gone {
		t.Fatalf("progress and a topic created meanwhile: gone %v, %v; want it found", gone, err)
	}
	// A topic that a client has listed stays listed after its deletion
	// on kfake: the deletion and the check use clients of their own.
	admin := func() *kadm.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return kadm.NewClient(cl)
	}
	if r, err := admin().DeleteTopics(ctx, topic); err != nil || r.Error() != nil {
		t.Fatal(err, r.Error())
	}
	m.adm = admin()
	if gone, err := m.goneAfterProgress(ctx, topic); err != nil || !gone {
		t.Fatalf("progress and no topic: gone %v, %v; want it gone", gone, err)
	}
}

// TestRetentionLossRouted: in a repartitioning group, input records that
// the topic's retention removed after a route task's committed position,
// before it read them, are counted in the group's summary
// (lost_before_read), as a single process counts them: the route task's
// report goes through the repartition topic to a window task.
func TestRetentionLossRouted(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "rl"), kfake.SeedTopics(3, "rl-out"),
		kfake.SeedTopics(1, "rl-late", "rl-bad"), kfake.GroupMinSessionTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	broker := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.DefaultProduceTopic("rl"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(from, to int) {
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			u := fmt.Sprintf("u%d", i%5)
			recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, `{"user_id":%q,"amount":1,"ts":%d}`, u, int64(1767225600000)+int64(i)*10)})
		}
		if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	p, err := spec.Parse(fmt.Appendf(nil, repartitionJob, "rl", broker, "rl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(between func()) job.Summary {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var mu sync.Mutex
		var sum job.Summary
		done := make(chan error, 1)
		go func() {
			done <- Run(ctx, Options{Plan: p, Instance: "a", StateDir: filepath.Join(dir, "a"), SessionTimeout: joinSession, TransactionTimeout: joinTxnTimeout,
				Logger: slog.New(slog.NewTextHandler(tlog{t}, nil)),
				Stopped: func(_ []int32, s job.Summary, _ []string) {
					mu.Lock()
					defer mu.Unlock()
					for _, c := range s.Counters {
						_ = addSummary(&sum, fmt.Appendf(nil, "%s %d\n", c.Name, c.Value))
					}
				}})
		}()
		between()
		jobtest.CaughtUp(t, broker, Name(p), time.Minute, "rl", RepartitionTopic(p))
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("member: %v", err)
		}
		return sum
	}
	produce(0, 100)
	if s := run(func() {}); s.Has("lost_before_read") {
		t.Fatalf("the first run lost records: %s", s.JSON())
	}
	// While no member runs: 50 more records, of which retention removes
	// the first 30 before any route task read them.
	produce(100, 150)
	adm := kadm.NewClient(cl)
	var del kadm.Offsets
	del.Add(kadm.Offset{Topic: "rl", Partition: 0, At: 130})
	if _, err := adm.DeleteRecords(context.Background(), del); err != nil {
		t.Fatal(err)
	}
	if s := run(func() {}); s.Get("lost_before_read") != 30 {
		t.Fatalf("the second run's summary %s: want lost_before_read 30", s.JSON())
	}
}

// TestRestartBackoff: a task whose run fails again and again restarts
// at once the first time, then after a delay that doubles with each
// failure in a row (it restarted 43 times a second before); once it
// runs, the group's results are those of a run without failures.
func TestRestartBackoff(t *testing.T) {
	broker := cluster(t, 600, "base", "bo")
	dir := t.TempDir()
	runMembers(t, plan(t, "base", broker), dir, "a")

	defer func(b, mx time.Duration) { restartBackoff, restartMaxBackoff = b, mx }(restartBackoff, restartMaxBackoff)
	restartBackoff, restartMaxBackoff = 50*time.Millisecond, 300*time.Millisecond
	const fails = 6
	var mu sync.Mutex
	var runs []time.Time
	failTask = func(p int32) error {
		if p != 1 {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		runs = append(runs, time.Now())
		if len(runs) <= fails {
			return fmt.Errorf("failure %d on purpose", len(runs))
		}
		return nil
	}
	defer func() { failTask = nil }()
	runMembers(t, plan(t, "bo", broker), dir, "b")
	mu.Lock()
	defer mu.Unlock()
	if len(runs) != fails+1 {
		t.Fatalf("task 1 ran %d times, want %d", len(runs), fails+1)
	}
	// The restarts after failures 2, 3, ... wait 50, 100, 200, 300 and
	// 300 ms (less a commit interval's slack at most, never less).
	for i, want := range []time.Duration{0, 50, 100, 200, 300, 300} {
		if gap := runs[i+1].Sub(runs[i]); gap < want*time.Millisecond {
			t.Errorf("restart after failure %d came %v after the run, want at least %v", i+1, gap, want*time.Millisecond)
		}
	}
	if total := runs[fails].Sub(runs[0]); total > 20*time.Second {
		t.Errorf("six failures took %v to restart from", total)
	}
	sameOutputs(t, broker, "base", "bo")
}

// TestNoTasksAfterStop: members stopped one after another while the
// group rebalances take no task after they told their stop (a SIGTERM'd
// member printed its summary, then took and restored a task before
// leaving), and each stops cleanly.
func TestNoTasksAfterStop(t *testing.T) {
	broker := cluster(t, 20000, "ns")
	p := plan(t, "ns", broker)
	p.Source.Kafka.StopAtEnd = false
	dir := t.TempDir()
	names := []string{"x", "y", "z"}
	var mu sync.Mutex
	stopped := map[string]bool{}
	assigned := map[string]int{}
	cancels := make([]context.CancelFunc, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	ended := make([]chan struct{}, len(names))
	for i, n := range names {
		ctx, cancel := context.WithCancel(context.Background())
		cancels[i] = cancel
		defer cancel()
		ended[i] = make(chan struct{})
		wg.Go(func() {
			defer close(ended[i])
			errs[i] = Run(ctx, Options{Plan: p, Instance: n, StateDir: filepath.Join(dir, n), SessionTimeout: joinSession, TransactionTimeout: joinTxnTimeout,
				Info: func(msg string) {
					t.Log(msg)
					if strings.Contains(msg, "assigned tasks") {
						mu.Lock()
						defer mu.Unlock()
						assigned[n]++
						if stopped[n] {
							t.Errorf("member %s took tasks after it stopped: %s", n, msg)
						}
					}
				},
				Stopped: func([]int32, job.Summary, []string) {
					mu.Lock()
					stopped[n] = true
					mu.Unlock()
					if n == "x" {
						// While x tells its stop, y leaves: the group
						// rebalances, x's share of y's tasks waiting
						// for x's next poll.
						cancels[1]()
						time.Sleep(time.Second)
					}
				}})
		})
	}
	deadline := time.Now().Add(time.Minute)
	for {
		mu.Lock()
		all := len(assigned) == len(names)
		mu.Unlock()
		if all {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not every member was assigned tasks within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancels[0]()
	<-ended[0]
	<-ended[1]
	cancels[2]()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("member %s: %v", names[i], err)
		}
	}
}

// TestEmptyPartition: an input partition that never holds a record,
// beside a partition whose orders are an hour older than the others'
// (all of them a backlog when the members start): the group finishes its
// stop_at_end run (the empty partition's task commits its end too), and
// two members' committed results, late records and dead letters equal
// one member's.
func TestEmptyPartition(t *testing.T) {
	c, cl := fakeKafka(t, 4, "e1", "e2")
	broker := c.ListenAddrs()[0]
	part := kgo.StickyKeyPartitioner(nil).ForTopic("in")
	partOf := func(u string) int { return part.Partition(&kgo.Record{Key: []byte(u)}, 4) }
	var users []string
	for i := 0; len(users) < 20; i++ {
		if u := fmt.Sprintf("u%d", i); partOf(u) != 3 {
			users = append(users, u)
		}
	}
	var recs []*kgo.Record
	for i := range 4000 {
		u := users[i%len(users)]
		ts := orderTime(i)
		if partOf(u) == 0 {
			ts -= 3600_000
		}
		recs = append(recs, &kgo.Record{Key: []byte(u), Value: fmt.Appendf(nil, `{"user_id":%q,"amount":%d,"ts":%d}`, u, i%10, ts)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	one := runMembers(t, plan(t, "e1", broker), t.TempDir(), "a")
	two := runMembers(t, plan(t, "e2", broker), t.TempDir(), "x", "y")
	for i, s := range append(one, two...) {
		if !s.Conserved() || s.Get("records_in") != 4000 || string(s.JSON()) != string(one[0].JSON()) {
			t.Errorf("summary %d: conserved %v: %s", i, s.Conserved(), s.JSON())
		}
	}
	sameOutputs(t, broker, "e1", "e2")
}
