package monitor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/job"
	"go.uber.org/goleak"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/monitor"
	"github.com/weirstream/weir/spec"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestSilentPartitionHolds runs a Kafka job whose partition 2 never gets
// a record: the snapshot names it as the input that holds the window
// operator's watermark, with the chain back to it and the reason; once
// the idle timeout has passed it is idle and partitions 0 and 1 carry
// the watermark. Snapshots and history encode as JSON (no NaN).
func TestSilentPartitionHolds(t *testing.T) {
	broker, cl := kafkatest.Topic(t, "in", 3)
	var recs []*kgo.Record
	for i := range 1000 {
		recs = append(recs, &kgo.Record{Partition: int32(i % 2), Value: fmt.Appendf(nil, `{"user_id":"u%d","ts":%d}`, i%5, 1767225600000+int64(i)*100)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	p, err := spec.Parse(fmt.Appendf(nil, `name: silent
source:
  type: kafka
  kafka: {brokers: ['%s'], topic: in}
watermark: {max_out_of_orderness: 1s, idle_timeout: 2s, interval: 20ms}
key: [user_id]
window: {type: tumbling, size: 10s}
aggregate: [{name: n, fn: count}]
sinks: {results: {type: jsonl, path: out.jsonl}}
`, broker))
	if err != nil {
		t.Fatal(err)
	}
	j, err := job.Open(p, job.RunOptions{Dir: t.TempDir(), Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := j.Run(ctx); done <- err }()
	m := monitor.New(monitor.Options{Info: monitor.JobInfo{Name: "silent", BoundMS: 1000, WindowMS: 10000, IdleMS: 2000}, Env: func() *weir.Env { return j.Env() }})
	var s *monitor.Snapshot
	wait := func(what string, cond func(*monitor.Snapshot) bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			m.Sample()
			if s = m.Snapshot(); s != nil && cond(s) {
				return
			}
			if time.Now().After(deadline) {
				b, _ := json.MarshalIndent(s, "", " ")
				t.Fatalf("waiting for %s:\n%s", what, b)
			}
		}
	}
	window := func(s *monitor.Snapshot) *monitor.Holder {
		for i := range s.Holders {
			if s.Holders[i].Operator == "window" {
				return &s.Holders[i]
			}
		}
		return nil
	}
	// Partitions 0 and 1 are read; 2 holds the watermark at "none".
	wait("partition 2 holding", func(s *monitor.Snapshot) bool {
		h := window(s)
		return s.Totals.RecordsIn == 1000 && h != nil && len(h.Chain) == 2 && strings.HasSuffix(h.Chain[1], "partition 2")
	})
	h := window(s)
	if !strings.HasPrefix(h.Chain[0], "window[") || !strings.HasPrefix(h.Chain[1], "source[0] partition 2") ||
		!strings.Contains(h.Reason, "partition 2 has no watermark yet (backlog 0; no record yet)") {
		t.Fatalf("holder %+v", h)
	}
	var win *monitor.Operator
	for i := range s.Operators {
		if s.Operators[i].Name == "window" {
			win = &s.Operators[i]
		}
	}
	if win == nil || win.Watermark != nil || win.WatermarkWhy == "" || win.LagS != nil {
		t.Fatalf("window operator %+v: no watermark yet, and it must say why", win)
	}
	// Partitions 0 and 1 keep getting records; after the idle timeout
	// partition 2 is idle, 0 or 1 holds, and the window operator has a
	// watermark and a lag.
	stop := make(chan struct{})
	produced := make(chan int64)
	go func() {
		ts := int64(1767225600000 + 1000*100)
		defer func() { produced <- ts }()
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			for p := range int32(2) {
				cl.Produce(context.Background(), &kgo.Record{Partition: p, Value: fmt.Appendf(nil, `{"user_id":"u1","ts":%d}`, ts)}, nil)
			}
			ts += 100
		}
	}()
	wait("partition 2 idle", func(s *monitor.Snapshot) bool {
		h := window(s)
		// (and the watermark has reached both window subtasks: one of
		// them may hold at "none" a moment longer)
		for _, op := range s.Operators {
			if op.Name == "window" && op.Watermark == nil {
				return false
			}
		}
		return h != nil && len(h.Chain) == 2 && !strings.HasSuffix(h.Chain[1], "partition 2")
	})
	close(stop)
	<-produced
	src := s.Operators[0]
	if !src.Source || src.Subtasks[0].Inputs[2].State != "idle" || src.Subtasks[0].Inputs[2].Why == "" {
		t.Fatalf("source %+v", src)
	}
	for _, op := range s.Operators {
		if op.Name == "window" && (op.Watermark == nil || op.LagS == nil || *op.Watermark < 1767225600000+999*100-1000-1) {
			t.Fatalf("window %+v", op)
		}
	}
	if len(m.History()) < 2 {
		t.Fatalf("%d history points", len(m.History()))
	}
	for _, v := range []any{s, m.History()} {
		if _, err := json.Marshal(v); err != nil {
			t.Fatalf("JSON: %v", err)
		}
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// TestBlockedSampleReported: a sample that blocks (here in Extra) does
// not block Snapshot, which serves the previous snapshot with the blocked
// sample in its stuck list once StuckAfter has passed, as Stuck (the
// health check) does; the next snapshot has no such entry.
func TestBlockedSampleReported(t *testing.T) {
	env, err := weir.NewEnv(weir.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var now atomic.Int64
	now.Store(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	entered, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int64
	m := monitor.New(monitor.Options{Env: func() *weir.Env { return env }, StuckAfter: 10 * time.Second,
		Now: func() time.Time { return time.Unix(0, now.Load()) },
		Extra: func() monitor.Extra {
			if calls.Add(1) == 2 {
				close(entered)
				<-release
			}
			return monitor.Extra{}
		}})
	m.Sample()
	first := m.Snapshot()
	if first == nil || len(first.Stuck) != 0 || len(m.Stuck()) != 0 {
		t.Fatalf("first snapshot %+v, stuck %v", first, m.Stuck())
	}
	now.Add(int64(time.Second))
	sampled := make(chan struct{})
	go func() { defer close(sampled); m.Sample() }()
	<-entered
	if s := m.Snapshot(); len(s.Stuck) != 0 {
		t.Fatalf("reported before StuckAfter: %+v", s.Stuck)
	}
	now.Add(int64(11 * time.Second))
	s := m.Snapshot()
	if s.Now != first.Now || len(s.Stuck) != 1 || s.Stuck[0].What != "monitor" || s.Stuck[0].ForS != 11 || len(first.Stuck) != 0 {
		t.Fatalf("while the sample blocks: now %d (first %d), stuck %+v", s.Now, first.Now, s.Stuck)
	}
	if st := m.Stuck(); len(st) != 1 || st[0].What != "monitor" {
		t.Fatalf("Stuck while the sample blocks: %+v", st)
	}
	close(release)
	<-sampled
	if s := m.Snapshot(); len(s.Stuck) != 0 || s.Now == first.Now || len(m.Stuck()) != 0 {
		t.Fatalf("after the sample: now %d, stuck %+v", s.Now, s.Stuck)
	}
}

// TestHoldingEndsWithTheInput: once a bounded job has the final
// watermark nothing holds it: the holder says the input ended, with no
// chain and no time counting on (10 s later it is still 0), no input is
// marked as holding, and the snapshot says since when.
func TestHoldingEndsWithTheInput(t *testing.T) {
	p, err := spec.Parse([]byte(`name: bounded
source: {type: generator, generator: {records: 2000, keys: 5, seed: 1}}
watermark: {max_out_of_orderness: 1s}
key: [user_id]
window: {type: tumbling, size: 1m}
aggregate: [{name: n, fn: count}]
sinks: {results: {type: jsonl, path: out.jsonl}}
`))
	if err != nil {
		t.Fatal(err)
	}
	j, err := job.Open(p, job.RunOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var now atomic.Int64
	now.Store(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	m := monitor.New(monitor.Options{Info: monitor.JobInfo{Name: "bounded", BoundMS: 1000}, Env: func() *weir.Env { return j.Env() },
		Now: func() time.Time { return time.Unix(0, now.Load()) }})
	if _, err := j.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	m.Sample()
	first := m.Snapshot()
	now.Add(int64(10 * time.Second))
	m.Sample()
	s := m.Snapshot()
	if first.EndedAt == nil || s.EndedAt == nil || *s.EndedAt != *first.EndedAt || *s.EndedAt != first.Now {
		t.Fatalf("ended at %v then %v, want %d both times", first.EndedAt, s.EndedAt, first.Now)
	}
	if len(s.Holders) != 1 {
		t.Fatalf("holders %+v", s.Holders)
	}
	if h := s.Holders[0]; !h.Ended || h.HoldingForS != 0 || len(h.Chain) != 0 || h.Source != nil || !strings.Contains(h.Reason, "input ended") {
		t.Fatalf("10s after the end: holder %+v", h)
	}
	for _, op := range s.Operators {
		for _, st := range op.Subtasks {
			for _, in := range st.Inputs {
				if in.Holding {
					t.Errorf("after the end, %s[%d] %s holds the watermark", op.Name, st.Index, in.Name)
				}
			}
		}
	}
}

// TestFindStuckSource: a source that has not reached its server for the
// threshold (a "reach" call) is stuck as a source, with its failure; a
// sink call as a sink; shorter ones are not.
func TestFindStuckSource(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	st := monitor.FindStuck(weir.CheckpointStats{}, []monitor.SinkCall{
		{Sink: "source", Call: "reach", Since: now.Add(-15 * time.Second), Err: "dial tcp 127.0.0.1:9092: connect: connection refused"},
		{Sink: "results", Call: "write", Since: now.Add(-12 * time.Second)},
		{Sink: "late", Call: "write", Since: now.Add(-time.Second)},
	}, now, 10*time.Second)
	if len(st) != 2 || st[0].What != "source" || st[0].Name != "source" || !strings.Contains(st[0].Why, "has not reached its server for 15s") ||
		!strings.Contains(st[0].Why, "connection refused") || st[1].What != "sink" || st[1].Name != "results" {
		t.Fatalf("stuck %+v", st)
	}
}
