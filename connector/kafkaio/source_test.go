package kafkaio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// cluster starts an in-process Kafka (kfake) with topic of n partitions.
func cluster(t testing.TB, topic string, n int) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(n), topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// produce writes "key,ts" records to the given partitions, synchronously.
func produce(t testing.TB, brokers []string, topic string, recs ...*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func rec(p int32, key string, ts etime.Time) *kgo.Record {
	return &kgo.Record{Partition: p, Key: []byte(key), Value: fmt.Appendf(nil, "%s,%d", key, ts), Timestamp: ts.Wall()}
}

type event struct {
	Key string
	TS  etime.Time
	P   int32
	Off int64
}

// decodeEvent parses "key,ts".
func decodeEvent(r *Record) (event, etime.Time, error) {
	k, ts, ok := strings.Cut(string(r.Value), ",")
	n, err := strconv.ParseInt(ts, 10, 64)
	if !ok || err != nil {
		return event{}, 0, &weir.BadInput{Reason: "bad_value", Detail: fmt.Sprintf("%q is not key,ts", r.Value)}
	}
	return event{Key: k, TS: etime.Time(n), P: r.Partition, Off: r.Offset}, etime.Time(n), nil
}

// out is a SourceOutput that records what a reader does.
type out struct {
	recs []event
	wms  []etime.Time
	idle bool
	dead []string
	lost int64
}

func (o *out) Emit(_ etime.Time, v event)         { o.recs = append(o.recs, v) }
func (o *out) EmitWatermark(wm etime.Time)        { o.wms = append(o.wms, wm) }
func (o *out) MarkIdle()                          { o.idle = true }
func (o *out) MarkActive()                        { o.idle = false }
func (o *out) DeadLetter(reason, _ string, _ any) { o.dead = append(o.dead, reason) }
func (o *out) Lost(n int64, _ string)             { o.lost += n }
func (o *out) wm() etime.Time                     { return o.last(etime.MinTime) }
func (o *out) last(def etime.Time) etime.Time     { return lastOr(o.wms, def) }
func lastOr(s []etime.Time, def etime.Time) etime.Time {
	if len(s) == 0 {
		return def
	}
	return s[len(s)-1]
}

// harness drives one reader on a fake clock.
type harness struct {
	t   *testing.T
	r   *reader[event]
	o   *out
	clk *clock.Fake
}

func newHarness(t *testing.T, brokers []string, topic string, mod func(*SourceOptions[event])) *harness {
	clk := clock.NewFake(time.UnixMilli(1_000_000))
	o := SourceOptions[event]{Brokers: brokers, Topic: topic, Decode: decodeEvent, Clock: clk,
		WatermarkInterval: 100 * time.Millisecond}
	if mod != nil {
		mod(&o)
	}
	src, err := NewSource(o)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := src.Open(context.Background(), 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, r: rd.(*reader[event]), o: &out{}, clk: clk}
	t.Cleanup(func() { _ = h.r.Close() })
	return h
}

// readUntil reads (advancing the fake clock by step per read) until cond
// holds, failing after 10 s of real time.
func (h *harness) readUntil(step time.Duration, what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s; watermarks %v, %d records, status %+v", what, h.o.wms, len(h.o.recs), h.r.Status())
		}
		if _, err := h.r.Read(context.Background(), h.o); err != nil {
			h.t.Fatal(err)
		}
		h.clk.Advance(step)
	}
}

func (h *harness) status(p int32) PartitionStatus {
	for _, s := range h.r.Status() {
		if s.Partition == p {
			return s
		}
	}
	h.t.Fatalf("no partition %d", p)
	return PartitionStatus{}
}

// TestSilentPartitionIdleOnlyWhenCaughtUp: a partition that never gets a
// record holds the watermark at MinTime until the idle timeout, then is
// idle and the others carry the watermark. A quiet partition with a
// backlog (records the reader has not taken yet) is never idle.
func TestSilentPartitionIdleOnlyWhenCaughtUp(t *testing.T) {
	brokers := cluster(t, "in", 3)
	for i := range 50 {
		produce(t, brokers, "in", rec(0, "a", etime.Time(1000+i*10)), rec(1, "b", etime.Time(1000+i*10)))
	}
	h := newHarness(t, brokers, "in", func(o *SourceOptions[event]) { o.IdleTimeout = 2 * time.Second })
	h.readUntil(10*time.Millisecond, "100 records", func() bool { return len(h.o.recs) == 100 })
	if h.o.wm() != etime.MinTime {
		t.Fatalf("watermark %v before the silent partition is idle, want none", h.o.wm())
	}
	// Partitions 0 and 1 keep getting records; 2 stays silent.
	ts := etime.Time(1500)
	for !h.status(2).Idle {
		produce(t, brokers, "in", rec(0, "a", ts), rec(1, "b", ts+5))
		want := h.status(0).NextOffset + 1
		h.readUntil(time.Millisecond, "the new records", func() bool { return h.status(0).NextOffset == want && h.status(1).NextOffset == want })
		h.clk.Advance(300 * time.Millisecond)
		ts += 100
		if ts > 5000 {
			t.Fatal("partition 2 never went idle")
		}
	}
	if h.status(0).Idle || h.status(1).Idle || h.o.idle {
		t.Fatalf("only partition 2 should be idle: %+v", h.r.Status())
	}
	h.readUntil(100*time.Millisecond, "the watermark of partitions 0 and 1", func() bool { return h.o.wm() == ts-100-1 })
	h.clk.Advance(time.Second)
	if got := h.status(2).IdleFor; got < time.Second {
		t.Fatalf("partition 2 idle for %v, want >= 1s", got)
	}
	// What metrics and the dashboard see (weir.InputReporter).
	in := h.r.Inputs()
	if len(in) != 3 || in[2].Name != "partition 2" || !in[2].Idle || in[2].Backlog != 0 || !in[2].LastRecord.IsZero() || in[2].MaxEventTime != etime.MinTime ||
		in[0].IdleFor != 0 || in[0].Idle || in[0].Backlog != 0 || in[0].LastRecord.IsZero() || in[0].MaxEventTime != ts-100 || in[1].MaxEventTime != ts-100+5 {
		t.Fatalf("inputs %+v", in)
	}

	// Partition 2 gets records the reader has not taken: a backlog. With
	// the idle timeout long passed, it must not be idle.
	h2 := newHarness(t, brokers, "in", func(o *SourceOptions[event]) { o.IdleTimeout = 2 * time.Second })
	before := len(h.o.recs)
	h2.readUntil(10*time.Millisecond, "partitions 0 and 1", func() bool { return len(h2.o.recs) == before })
	produce(t, brokers, "in", rec(2, "c", 500))
	h2.clk.Advance(5 * time.Second)
	if err := h2.r.tick(context.Background(), h2.clk.Now(), h2.r.lastTick); err != nil { // no poll: the record is still in Kafka
		t.Fatal(err)
	}
	if h2.status(2).Idle {
		t.Fatal("partition 2 has a backlog but was marked idle")
	}
	if in := h2.r.Inputs(); len(in) != 3 || in[2].Backlog != 1 || in[2].Idle {
		t.Fatalf("inputs %+v: partition 2 should show its backlog of 1", in)
	}
	h2.readUntil(10*time.Millisecond, "the backlog record", func() bool { return len(h2.o.recs) == before+1 })
	if got := h2.o.recs[before]; got.TS != 500 {
		t.Fatalf("backlog record %+v", got)
	}
	for _, wm := range h2.o.wms {
		if wm >= 500 {
			t.Fatalf("watermark %v passed the backlog record at 500 before it was read: %v", wm, h2.o.wms)
		}
	}
}

// TestFutureRecordDoesNotMoveWatermark: with max_future, a record dated
// far ahead is a dead letter and its partition's watermark stays.
func TestFutureRecordDoesNotMoveWatermark(t *testing.T) {
	brokers := cluster(t, "in", 1)
	now := etime.Time(1_000_000)
	produce(t, brokers, "in", rec(0, "a", now-100), rec(0, "a", now+10*3_600_000), rec(0, "a", now-50),
		&kgo.Record{Partition: 0, Value: []byte("garbage")})
	h := newHarness(t, brokers, "in", func(o *SourceOptions[event]) { o.MaxFuture = 3_600_000 })
	h.readUntil(10*time.Millisecond, "the records", func() bool { return len(h.o.recs)+len(h.o.dead) == 4 })
	h.readUntil(100*time.Millisecond, "a watermark", func() bool { return len(h.o.wms) > 0 })
	if !slices.Equal(h.o.dead, []string{"timestamp_future", "bad_value"}) {
		t.Fatalf("dead letters %v", h.o.dead)
	}
	if h.o.wm() != now-51 {
		t.Fatalf("watermark %v, want %v (the future record must not count)", h.o.wm(), now-51)
	}
}

// TestReactivatedPartitionHoldsWatermark: an idle partition that gets a
// record with an old timestamp holds the channel's watermark back until
// it catches up, so its records are not late.
func TestReactivatedPartitionHoldsWatermark(t *testing.T) {
	brokers := cluster(t, "in", 2)
	for i := range 20 {
		produce(t, brokers, "in", rec(0, "a", etime.Time(10_000+i*100)))
	}
	h := newHarness(t, brokers, "in", func(o *SourceOptions[event]) { o.IdleTimeout = time.Second })
	// Partition 0 keeps getting records; 1 is silent and goes idle.
	ts := etime.Time(12_000)
	next := int64(20)
	for !h.status(1).Idle {
		produce(t, brokers, "in", rec(0, "a", ts))
		next++
		h.readUntil(time.Millisecond, "the new record", func() bool { return h.status(0).NextOffset == next })
		h.clk.Advance(300 * time.Millisecond)
		ts += 100
	}
	h.readUntil(100*time.Millisecond, "partition 0's watermark", func() bool { return h.o.wm() == ts-100-1 })
	held := h.o.wm()
	produce(t, brokers, "in", rec(1, "b", 5000))
	for range 10 {
		produce(t, brokers, "in", rec(0, "a", ts))
		ts += 100
	}
	h.readUntil(10*time.Millisecond, "partition 1's record", func() bool { return h.status(1).Watermark == 4999 })
	if h.status(1).Idle {
		t.Fatal("partition 1 got a record but is still idle")
	}
	h.readUntil(10*time.Millisecond, "partition 0's records", func() bool { return h.status(0).NextOffset == next+10 })
	// A tick, well within the idle timeout: both partitions stay active
	// (were both idle, the maximum would be flushed, H6).
	h.clk.Advance(200 * time.Millisecond)
	h.readUntil(10*time.Millisecond, "a tick", func() bool { return h.status(0).Watermark == ts-100-1 })
	if h.status(0).Idle || h.status(1).Idle {
		t.Fatalf("a partition went idle within the idle timeout: %+v", h.r.Status())
	}
	if wm := h.o.wm(); wm != held {
		t.Fatalf("channel watermark %v: partition 1 (at 4999) must hold it at %v while partition 0 runs ahead", wm, held)
	}
	produce(t, brokers, "in", rec(1, "b", 50_000))
	h.readUntil(100*time.Millisecond, "partition 1 catches up", func() bool { return h.o.wm() >= ts-100-1 })
}

// TestAlignmentPausesFastPartition: with max_drift, a partition running
// ahead is paused, not dropped; pause time is counted; it resumes when
// the slow one catches up and every record is read exactly once.
func TestAlignmentPausesFastPartition(t *testing.T) {
	brokers := cluster(t, "in", 2)
	var fast []*kgo.Record
	for i := range 200 {
		fast = append(fast, rec(0, "f", etime.Time(i*100)))
	}
	produce(t, brokers, "in", fast...)
	produce(t, brokers, "in", rec(1, "s", 0), rec(1, "s", 100))
	h := newHarness(t, brokers, "in", func(o *SourceOptions[event]) { o.MaxDrift = 1000 })
	h.readUntil(100*time.Millisecond, "partition 0 paused", func() bool { return h.status(0).Paused })
	h.clk.Advance(3 * time.Second)
	if got := h.status(0).PausedFor; got < 3*time.Second {
		t.Fatalf("paused for %v, want >= 3s", got)
	}
	var slow []*kgo.Record
	for i := range 200 {
		slow = append(slow, rec(1, "s", etime.Time(200+i*100)))
	}
	produce(t, brokers, "in", slow...)
	h.readUntil(50*time.Millisecond, "every record", func() bool { return len(h.o.recs) == 402 })
	seen := map[[2]int64]int{}
	for _, e := range h.o.recs {
		seen[[2]int64{int64(e.P), e.Off}]++
	}
	if len(seen) != 402 {
		t.Fatalf("%d distinct records of 402", len(seen))
	}
	// The alignment is judged at the watermark ticks: the one after the
	// last record resumes partition 0.
	h.readUntil(50*time.Millisecond, "partition 0 resumed once partition 1 caught up", func() bool { return !h.status(0).Paused })
}

// TestRestorePosition: a reader restored from another's position resumes
// after the last record emitted, with its watermark state: nothing lost,
// nothing twice.
func TestRestorePosition(t *testing.T) {
	brokers := cluster(t, "in", 3)
	var all []*kgo.Record
	for i := range 300 {
		all = append(all, rec(int32(i%3), "k", etime.Time(i*10)))
	}
	produce(t, brokers, "in", all...)
	bounded := func(o *SourceOptions[event]) {
		o.Watermarks = func() watermark.Generator[event] { return watermark.BoundedOutOfOrderness[event](50) }
		o.MaxPollRecords = 10
		o.BacklogEvery = 20 // watermarks during the backlog (W10), before the snapshot
	}
	h := newHarness(t, brokers, "in", bounded)
	h.readUntil(100*time.Millisecond, "some records and a watermark", func() bool { return len(h.o.recs) >= 100 && h.o.wm() > etime.MinTime })
	pos, err := h.r.SnapshotPosition()
	if err != nil {
		t.Fatal(err)
	}
	first := slices.Clone(h.o.recs)
	wm := h.o.wm()

	h2 := newHarness(t, brokers, "in", bounded)
	if err := h2.r.RestorePosition(pos); err != nil {
		t.Fatal(err)
	}
	h2.readUntil(100*time.Millisecond, "the rest", func() bool { return len(first)+len(h2.o.recs) >= 300 })
	h2.readUntil(100*time.Millisecond, "a tick", func() bool { return len(h2.o.wms) > 0 })
	got := map[[2]int64]int{}
	for _, e := range append(first, h2.o.recs...) {
		got[[2]int64{int64(e.P), e.Off}]++
	}
	if len(got) != 300 || len(first)+len(h2.o.recs) != 300 {
		t.Fatalf("%d distinct of %d read, want 300 exactly once", len(got), len(first)+len(h2.o.recs))
	}
	if h2.o.wms[0] < wm {
		t.Fatalf("restored watermark %v went back from %v", h2.o.wms[0], wm)
	}
	// Another topic's position is refused.
	h3 := newHarness(t, brokers, "in", nil)
	h3.r.o.Topic = "other"
	if err := h3.r.RestorePosition(pos); err == nil || !strings.Contains(err.Error(), "topic") {
		t.Fatalf("restoring another topic's position: %v", err)
	}
}

// TestSourceEndToEnd runs a windowed count over a 6-partition topic read
// by two channels: the counts equal a plain group-by of what was produced,
// and every record is counted once.
func TestSourceEndToEnd(t *testing.T) {
	brokers := cluster(t, "in", 6)
	want := map[string]int64{}
	var recs []*kgo.Record
	for i := range 6000 {
		p := int32(i % 6)
		ts := etime.Time(i * 7)
		key := fmt.Sprintf("k%d", i%13)
		recs = append(recs, rec(p, key, ts))
		want[fmt.Sprintf("%s@%d", key, ts/1000*1000)]++
	}
	recs = append(recs, &kgo.Record{Partition: 2, Value: []byte("not an event")}, &kgo.Record{Partition: 5, Value: []byte("nor this")})
	produce(t, brokers, "in", recs...)
	src, err := NewSource(SourceOptions[event]{Brokers: brokers, Topic: "in", Decode: decodeEvent, StopAtEnd: true})
	if err != nil {
		t.Fatal(err)
	}
	env, err := weir.NewEnv(weir.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	s := weir.FromSource(env, "kafka", src, weir.SourceOptions{Channels: 2})
	a, _ := window.Tumbling(1000, 0)
	counts := weir.Aggregate(weir.Window(weir.KeyBy(s, func(e event) string { return e.Key }), a, weir.WindowOptions{}),
		weir.Sum(func(event) int64 { return 1 }))
	res := weir.Collect(counts.Results)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := env.Execute(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Conservation: every record read is counted in a window or is a dead
	// letter.
	wc := rep.Windows["window"]
	if rep.DeadLetters != 2 || rep.SourceRecords["kafka"] != 6002 || wc.Accepted != 6000 {
		t.Fatalf("dead letters %d, source records %d, accepted %d: want 2, 6002, 6000 (%+v)", rep.DeadLetters, rep.SourceRecords["kafka"], wc.Accepted, rep)
	}
	got := map[string]int64{}
	for _, r := range res.Items() {
		got[fmt.Sprintf("%s@%d", r.Key, r.Window.Start)] += r.Value
	}
	if len(got) != len(want) {
		t.Fatalf("%d windows, want %d", len(got), len(want))
	}
	for k, n := range want {
		if got[k] != n {
			t.Fatalf("%s: %d, want %d", k, got[k], n)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		o    SourceOptions[event]
		want string
	}{
		{SourceOptions[event]{Topic: "t", Decode: decodeEvent}, "Brokers"},
		{SourceOptions[event]{Brokers: []string{"x:1"}, Decode: decodeEvent}, "Topic"},
		{SourceOptions[event]{Brokers: []string{"x:1"}, Topic: "t"}, "Decode"},
		{SourceOptions[event]{Brokers: []string{"x:1"}, Topic: "t", Decode: decodeEvent, Start: Start{Kind: StartCommitted}}, "Group"},
	} {
		if _, err := NewSource(c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %s", c.o, err, c.want)
		}
	}
}

// TestGroupCommitAfterCheckpoint: with a group, the offsets of a
// checkpoint's snapshot are committed when the checkpoint completes, not
// the reader's later position, and not before.
func TestGroupCommitAfterCheckpoint(t *testing.T) {
	brokers := cluster(t, "in", 2)
	for i := range 20 {
		produce(t, brokers, "in", rec(int32(i%2), "k", etime.Time(i*10)))
	}
	h := newHarness(t, brokers, "in", func(o *SourceOptions[event]) { o.Group = "watchers"; o.MaxPollRecords = 4 })
	h.readUntil(10*time.Millisecond, "some records", func() bool { return len(h.o.recs) >= 8 })
	if _, err := h.r.SnapshotPosition(); err != nil {
		t.Fatal(err)
	}
	h.r.CheckpointTaken(7)
	at := map[int32]int64{0: h.status(0).NextOffset, 1: h.status(1).NextOffset}
	h.readUntil(10*time.Millisecond, "the rest", func() bool { return len(h.o.recs) == 20 })
	committed := func() map[int32]int64 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		os, err := h.r.adm.FetchOffsets(ctx, "watchers")
		if errors.Is(err, kerr.GroupIDNotFound) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		out := map[int32]int64{}
		os.Each(func(o kadm.OffsetResponse) { out[o.Partition] = o.At })
		return out
	}
	if got := committed(); len(got) != 0 {
		t.Fatalf("offsets committed before the checkpoint completed: %v", got)
	}
	h.r.CheckpointComplete(7)
	if got := committed(); !maps.Equal(got, at) {
		t.Fatalf("committed %v, want the checkpoint's %v", got, at)
	}
}

// TestRestoreRefusesOtherChannelCount: partitions move between channels
// with the channel count, so a position is restored only with the count
// it was taken with.
func TestRestoreRefusesOtherChannelCount(t *testing.T) {
	brokers := cluster(t, "in", 4)
	src, err := NewSource(SourceOptions[event]{Brokers: brokers, Topic: "in", Decode: decodeEvent, StopAtEnd: true})
	if err != nil {
		t.Fatal(err)
	}
	r4, err := src.Open(context.Background(), 0, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer r4.Close()
	pos, err := r4.(weir.CheckpointedReader).SnapshotPosition()
	if err != nil {
		t.Fatal(err)
	}
	r2, err := src.Open(context.Background(), 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if err := r2.(weir.CheckpointedReader).RestorePosition(pos); err == nil || !strings.Contains(err.Error(), "restore with 4 channels") {
		t.Fatalf("restoring a 4-channel position into 2 channels: %v", err)
	}
}

// TestRawKeepsHeaders: the reader reuses its Record, so Raw's copies must
// not share headers.
func TestRawKeepsHeaders(t *testing.T) {
	brokers := cluster(t, "in", 1)
	produce(t, brokers, "in", &kgo.Record{Partition: 0, Value: []byte("a"), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("1")}}},
		&kgo.Record{Partition: 0, Value: []byte("b"), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("2")}}})
	src, err := NewSource(SourceOptions[*Record]{Brokers: brokers, Topic: "in", Decode: Raw, StopAtEnd: true})
	if err != nil {
		t.Fatal(err)
	}
	env, err := weir.NewEnv(weir.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	res := weir.Collect(weir.FromSource(env, "kafka", src, weir.SourceOptions{}))
	if _, err := env.Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Items() {
		got = append(got, string(r.Value)+"="+string(r.Headers[0].Value))
	}
	if !slices.Equal(got, []string{"a=1", "b=2"}) {
		t.Fatalf("records %v", got)
	}
}

// TestBacklogWatermarks (W10): a partition's backlog gets a watermark
// after every BacklogEvery of its records, with processing time standing
// still, and none after its last record (caught up, the periodic schedule
// applies again): a backlog cannot be read whole before the first
// watermark.
func TestBacklogWatermarks(t *testing.T) {
	brokers := cluster(t, "in", 1)
	var all []*kgo.Record
	for i := range 4500 {
		all = append(all, rec(0, "k", etime.Time(i*10)))
	}
	produce(t, brokers, "in", all...)
	h := newHarness(t, brokers, "in", func(o *SourceOptions[event]) { o.BacklogEvery = 1000; o.MaxPollRecords = 300 })
	h.readUntil(0, "every record", func() bool { return len(h.o.recs) == 4500 })
	// Monotonous: after the n-th record the watermark is its timestamp - 1.
	want := []etime.Time{9989, 19989, 29989, 39989}
	if !slices.Equal(h.o.wms, want) {
		t.Fatalf("watermarks %v, want %v (one per 1,000 records of the backlog)", h.o.wms, want)
	}
	h.clk.Advance(time.Second)
	h.readUntil(0, "the periodic watermark once caught up", func() bool { return h.o.wm() == 44989 })
}

// TestRestoreRecreatedTopic: a topic deleted and created again under its
// name has a new topic id; a checkpoint of the old one is refused with
// ErrTopicChanged (its offsets would point into other records), and so is
// one without a topic id (of weir before topic ids) that read more
// partitions than the topic has.
func TestRestoreRecreatedTopic(t *testing.T) {
	brokers := cluster(t, "in", 2)
	produce(t, brokers, "in", rec(0, "a", 1000), rec(1, "b", 2000))
	h := newHarness(t, brokers, "in", nil)
	h.readUntil(10*time.Millisecond, "both records", func() bool { return len(h.o.recs) == 2 })
	pos, err := h.r.SnapshotPosition()
	if err != nil {
		t.Fatal(err)
	}
	if h2 := newHarness(t, brokers, "in", nil); h2.r.RestorePosition(pos) != nil {
		t.Fatalf("the same topic: %v", h2.r.RestorePosition(pos))
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	if _, err := adm.DeleteTopics(ctx, "in"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "in"); err != nil {
		t.Fatal(err)
	}
	h3 := newHarness(t, brokers, "in", nil)
	if err := h3.r.RestorePosition(pos); !errors.Is(err, ErrTopicChanged) || !strings.Contains(err.Error(), "deleted and created again") {
		t.Fatalf("a recreated topic: %v, want ErrTopicChanged", err)
	}

	// Without a topic id only the partition count tells: the checkpoint
	// read 2, the topic has 1.
	var p position
	if err := json.Unmarshal(pos, &p); err != nil {
		t.Fatal(err)
	}
	if p.TopicID == "" || p.TopicPartitions != 2 {
		t.Fatalf("the checkpoint has topic id %q and %d partitions, want an id and 2", p.TopicID, p.TopicPartitions)
	}
	p.TopicID = ""
	noID, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	h4 := newHarness(t, brokers, "in", nil)
	if err := h4.r.RestorePosition(noID); !errors.Is(err, ErrTopicChanged) || !strings.Contains(err.Error(), `topic "in" has 1 partitions, the checkpoint read 2`) {
		t.Fatalf("a checkpoint without a topic id that read more partitions than the topic has: %v, want ErrTopicChanged naming the partition counts", err)
	}
}

// TestTransactionalTopicCatchesUp: on a topic written in transactions
// (weir's own results are), the commit marker takes the offset after the
// last record, so the last stable offset lies beyond it. The reader passes
// the marker: its next offset reaches the last stable offset, the
// partition is caught up (periodic watermarks, W10) and goes idle.
func TestTransactionalTopicCatchesUp(t *testing.T) {
	brokers := cluster(t, "in", 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("in"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID("txn-test"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := cl.ProduceSync(ctx, rec(0, "a", etime.Time(1000+i*10))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, brokers, "in", func(o *SourceOptions[event]) { o.IdleTimeout = time.Second })
	h.readUntil(10*time.Millisecond, "the records", func() bool { return len(h.o.recs) == 10 })
	h.readUntil(100*time.Millisecond, "the commit marker passed", func() bool { return h.status(0).NextOffset == 11 })
	h.readUntil(100*time.Millisecond, "the partition idle", func() bool { return h.status(0).Idle })
	if len(h.o.recs) != 10 || len(h.o.dead) != 0 {
		t.Fatalf("%d records and dead letters %v, want 10 and none (a marker is no record)", len(h.o.recs), h.o.dead)
	}
}

// nowhere is a SourceOutput that keeps nothing.
type nowhere struct{}

func (nowhere) Emit(etime.Time, event)         {}
func (nowhere) EmitWatermark(etime.Time)       {}
func (nowhere) MarkIdle()                      {}
func (nowhere) MarkActive()                    {}
func (nowhere) DeadLetter(string, string, any) {}

// TestEmitAllocatesNothing: a record's way from the fetched kgo.Record
// through the partition's watermark generator to the output allocates
// nothing (a generator Output converted per record once did).
func TestEmitAllocatesNothing(t *testing.T) {
	brokers := cluster(t, "in", 1)
	produce(t, brokers, "in", rec(0, "a", 1000))
	h := newHarness(t, brokers, "in", func(o *SourceOptions[event]) {
		o.Watermarks = func() watermark.Generator[event] { return watermark.BoundedOutOfOrderness[event](10) }
		o.Decode = func(r *Record) (event, etime.Time, error) {
			return event{TS: etime.Time(r.Offset)}, etime.Time(r.Offset), nil
		}
	})
	h.readUntil(10*time.Millisecond, "the first record", func() bool { return len(h.o.recs) == 1 })
	h.r.out = nowhere{}
	kr := &kgo.Record{Topic: "in", Value: []byte("a,1"), Offset: 1}
	now := h.clk.Now()
	if a := testing.AllocsPerRun(1000, func() {
		if !h.r.emit(kr, now) {
			t.Fatal("not emitted")
		}
		kr.Offset++
	}); a > 0 {
		t.Fatalf("%v allocations per record", a)
	}
}

// TestReachBrokerDown: a reader tells its Reach that the brokers answer
// while they do, and that they do not once they are gone (an outage the
// client's quiet retries of fetches hide), with the failure.
func TestReachBrokerDown(t *testing.T) {
	defer func(p time.Duration) { ProbeEvery = p }(ProbeEvery)
	ProbeEvery = 50 * time.Millisecond
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "in"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	produce(t, brokers, "in", rec(0, "a", 1000), rec(0, "a", 1010))
	var reach connector.Reach
	h := newHarness(t, brokers, "in", func(o *SourceOptions[event]) {
		o.Reach = &reach
		o.ClientOptions = append(o.ClientOptions, kgo.RetryTimeout(200*time.Millisecond), kgo.RequestTimeoutOverhead(200*time.Millisecond))
	})
	h.readUntil(10*time.Millisecond, "the records", func() bool { return len(h.o.recs) == 2 })
	time.Sleep(2 * ProbeEvery)
	h.readUntil(10*time.Millisecond, "a probe's answer", func() bool { return !h.r.lastProbe.IsZero() && h.r.call == nil })
	if since, err := reach.Failing(); !since.IsZero() {
		t.Fatalf("the broker is up, yet Reach says failing since %v: %v", since, err)
	}
	// The broker stops answering (as one stopped or cut off does): a
	// request for the end offsets gets no answer, so a probe takes its 2 s,
	// which a Read must not wait for.
	c.ControlKey(int16(kmsg.ListOffsets), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return nil, nil, true
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if since, err := reach.Failing(); !since.IsZero() {
			if err == nil {
				t.Fatal("failing without the failure")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the broker is gone, and Reach never said so")
		}
		start := time.Now()
		if _, err := h.r.Read(context.Background(), h.o); err != nil {
			t.Fatalf("a Read failed (%v): the reader waits for the brokers, and Reach tells", err)
		}
		if took := time.Since(start); took > time.Second {
			t.Fatalf("a Read took %v while the broker was gone: it waited on the probe", took)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// While the brokers are down, the backlog is not known.
	h.r.publishInputs(time.Now())
	if in := h.r.Inputs(); len(in) != 1 || in[0].Backlog != -1 {
		t.Fatalf("inputs while the broker is down: %+v, want the backlog unknown (-1)", in)
	}
}

// TestReachStrict: a deterministic read (Strict) waiting for the record
// whose turn it is tells Reach that the brokers stopped answering, where
// it waited without a word (SRE trial: a broker down under a
// --deterministic run, /healthz ok and no warning for 40 s).
func TestReachStrict(t *testing.T) {
	defer func(p time.Duration) { ProbeEvery = p }(ProbeEvery)
	ProbeEvery = 50 * time.Millisecond
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "in"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	produce(t, brokers, "in", rec(0, "a", 1000), rec(1, "b", 1010))
	// The broker answers no fetch, and once one was asked for (the
	// reader started: its end offsets listed), no listing either.
	var down atomic.Bool
	c.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		down.Store(true)
		return nil, nil, true
	})
	c.ControlKey(int16(kmsg.ListOffsets), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return nil, nil, down.Load()
	})
	var reach connector.Reach
	h := newHarness(t, brokers, "in", func(o *SourceOptions[event]) {
		o.Reach, o.Strict = &reach, true
		o.ClientOptions = append(o.ClientOptions, kgo.RetryTimeout(200*time.Millisecond), kgo.RequestTimeoutOverhead(200*time.Millisecond))
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { // the Read waits for the records' turns until cancelled
		_, err := h.r.Read(ctx, h.o)
		done <- err
	}()
	deadline := time.Now().Add(20 * time.Second)
	for since, _ := reach.Failing(); since.IsZero(); since, _ = reach.Failing() {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatal("the broker is gone under a deterministic read, and Reach never said so")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestPartitionsAdded: partitions added to the topic while a reader runs
// (records flowing or not) make its Read fail with ErrInputGrew within
// DiscoverEvery, rather than stay unread without a word (SRE trial); a
// reader restored from a position taken before reads the added
// partitions from their start, even when it starts at the latest offsets
// (they were added while the job ran).
func TestPartitionsAdded(t *testing.T) {
	defer func(d time.Duration) { DiscoverEvery = d }(DiscoverEvery)
	DiscoverEvery = 50 * time.Millisecond
	brokers := cluster(t, "in", 2)
	produce(t, brokers, "in", rec(0, "a", 1000), rec(1, "b", 1010))
	latest := func(o *SourceOptions[event]) { o.Start = Start{Kind: StartLatest} }
	h := newHarness(t, brokers, "in", latest)
	h.readUntil(10*time.Millisecond, "a start", func() bool { return h.r.started })
	pos, err := h.r.SnapshotPosition()
	if err != nil {
		t.Fatal(err)
	}
	produce(t, brokers, "in", rec(0, "a", 2000))
	h.readUntil(10*time.Millisecond, "the record after the start", func() bool { return len(h.o.recs) == 1 })
	// A job with checkpoints hears of added partitions once one completed
	// (before, a reopen would start over); a bounded read never.
	hc := newHarness(t, brokers, "in", func(o *SourceOptions[event]) { o.Checkpointed = true })
	hb := newHarness(t, brokers, "in", func(o *SourceOptions[event]) { o.StopAtEnd = true })
	hb.readUntil(10*time.Millisecond, "a start", func() bool { return hb.r.started })

	adm, err := newAdmin(brokers, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if _, err := adm.CreatePartitions(context.Background(), 2, "in"); err != nil {
		t.Fatal(err)
	}
	produce(t, brokers, "in", rec(2, "c", 3000), rec(3, "d", 3010))
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := h.r.Read(context.Background(), h.o)
		if errors.Is(err, connector.ErrInputGrew) {
			if !strings.Contains(err.Error(), `topic "in" has 4 partitions, 2 when the job started`) {
				t.Fatalf("the error: %v", err)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("partitions were added, and the reader never said so")
		}
		time.Sleep(5 * time.Millisecond)
	}

	for range 20 {
		for _, x := range []*harness{hc, hb} {
			if _, err := x.r.Read(context.Background(), x.o); err != nil {
				t.Fatalf("checkpointed %v, bounded %v: %v", x.r.o.Checkpointed, x.r.o.StopAtEnd, err)
			}
		}
		time.Sleep(DiscoverEvery / 4)
	}
	hc.r.CheckpointComplete(1)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		_, err := hc.r.Read(context.Background(), hc.o)
		if errors.Is(err, connector.ErrInputGrew) {
			break
		}
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("after a checkpoint completed: %v, want ErrInputGrew", err)
		}
	}

	h2 := newHarness(t, brokers, "in", latest)
	if err := h2.r.RestorePosition(pos); err != nil {
		t.Fatal(err)
	}
	h2.readUntil(10*time.Millisecond, "every record after the position", func() bool { return len(h2.o.recs) == 3 })
	got := map[int32]int{}
	for _, e := range h2.o.recs {
		got[e.P]++
	}
	if got[0] != 1 || got[2] != 1 || got[3] != 1 {
		t.Fatalf("records by partition %v, want the one after the position and both added partitions' from their start", got)
	}
}

// TestRestoreRetentionGap: a position whose next records the topic's
// retention removed resumes at the partition's start, and says how many
// records it lost (SRE trial: a retention gap was only a line for NATS,
// and for Kafka not even that).
func TestRestoreRetentionGap(t *testing.T) {
	brokers := cluster(t, "in", 1)
	var first []*kgo.Record
	for i := range 4 {
		first = append(first, rec(0, "a", etime.Time(1000+i)))
	}
	produce(t, brokers, "in", first...)
	h := newHarness(t, brokers, "in", nil)
	h.readUntil(10*time.Millisecond, "the first records", func() bool { return len(h.o.recs) == 4 })
	pos, err := h.r.SnapshotPosition()
	if err != nil {
		t.Fatal(err)
	}
	var more []*kgo.Record
	for i := range 5 {
		more = append(more, rec(0, "a", etime.Time(2000+i)))
	}
	produce(t, brokers, "in", more...)
	adm, err := newAdmin(brokers, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	var del kadm.Offsets
	del.Add(kadm.Offset{Topic: "in", Partition: 0, At: 7})
	if _, err := adm.DeleteRecords(context.Background(), del); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	h2 := newHarness(t, brokers, "in", func(o *SourceOptions[event]) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	if err := h2.r.RestorePosition(pos); err != nil {
		t.Fatal(err)
	}
	h2.readUntil(10*time.Millisecond, "the records retention kept", func() bool { return len(h2.o.recs) == 2 })
	if h2.o.recs[0].Off != 7 {
		t.Fatalf("resumed at offset %d, want 7 (the partition's start)", h2.o.recs[0].Off)
	}
	if !strings.Contains(logs.String(), "removed by the topic's retention") || !strings.Contains(logs.String(), "records=3") {
		t.Fatalf("the loss was not told: %s", logs.String())
	}
	if h2.o.lost != 3 {
		t.Fatalf("the output was told of %d lost records, want 3 (connector.LossOutput)", h2.o.lost)
	}
}
