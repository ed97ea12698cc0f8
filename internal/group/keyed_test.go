package group

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/internal/winop"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/state/memstate"
	"github.com/weirstream/weir/window"
)

type kcEvent struct {
	key uint64
	ts  etime.Time
}

type kcSum struct{}

func (kcSum) CreateAccumulator() int64                 { return 0 }
func (kcSum) Add(a int64, e kcEvent) int64             { return a + int64(e.key) + 1 }
func (kcSum) Merge(a, b int64) int64                   { return a + b }
func (kcSum) Result(a int64) int64                     { return a }
func (kcDrop) Result(window.Result[uint64, int64])     {}
func (kcDrop) Late(window.LateRecord[uint64, kcEvent]) {}

type kcDrop struct{}

// kcOperator is a window operator whose snapshots the test commits, of
// windows a (nil: sessions of a 40 ms gap: entries, merging sets, timers
// come and go), with lateness.
func kcOperator(t testing.TB, a window.Assigner) *winop.Operator[uint64, kcEvent, int64, int64] {
	t.Helper()
	if a == nil {
		var err error
		if a, err = window.Session(40); err != nil {
			t.Fatal(err)
		}
	}
	op, err := winop.New(winop.Config[uint64, kcEvent, int64, int64]{
		Assigner: a, Lateness: 100,
		Contents:   winop.AggContents[kcEvent, int64, int64]{F: kcSum{}},
		Func:       func(ctx *winop.FireContext[uint64, int64], acc *int64) { ctx.Emit(*acc) },
		KeyEncoder: func(dst []byte, k uint64) []byte { return strconv.AppendUint(dst, k, 10) },
		Backend:    memstate.New(), LateOutput: true,
		KeyCodec: state.CodecFor[uint64](), AccCodec: state.CodecFor[int64](), KeyGroup: func(k uint64) state.KeyGroup { return state.KeyGroup(k % 128) },
	}, kcDrop{})
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// logRecord is a record of the simulated changelog partition.
type logRecord struct {
	off        int64
	key, value []byte
}

// TestKeyedChangelog commits a window operator's checkpoints through
// the keyed changelog into a simulated partition (some transactions
// abort, compaction runs now and then, tombstones expire), and restores
// after every commit: from the offset the commit's metadata names, and
// from the state directory's copy of an earlier checkpoint. Each restore
// gives exactly the committed checkpoint's parts; deltas and bases both
// occur; the partition keeps about one base's keys.
func TestKeyedChangelog(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	op := kcOperator(t, nil)
	var log []logRecord
	next := int64(0)
	k := &keyed{}
	type committed struct {
		s   *snapshot
		at  int64 // header offset
		c   chain
		ofs int64 // the offset the metadata names
	}
	var hist []committed
	now := time.Unix(1767225600, 0)
	bases, deltas, buckets := 0, 0, 0
	ts := etime.Time(0)
	for id := int64(1); id <= 300; id++ {
		for range r.IntN(200) {
			ts += etime.Time(r.IntN(3))
			key := r.Uint64N(500)
			if r.IntN(5) == 0 {
				key = r.Uint64N(20000) // many keys that come once
			}
			if err := op.ProcessElement(key, kcEvent{key, ts - etime.Time(r.IntN(60))}, ts-etime.Time(r.IntN(60))); err != nil {
				t.Fatal(err)
			}
		}
		op.AdvanceWatermark(ts - 50)
		snapPart, err := op.Snapshot(nil)
		if err != nil {
			t.Fatal(err)
		}
		s := &snapshot{ID: id, Meta: []byte("m"), Parts: map[string][]byte{"s/0/window": snapPart, "s/0/source": fmt.Appendf(nil, "pos %d", id)}, Position: id * 10}
		if id%37 == 0 {
			s.Parts["pg"] = []byte("rows") // a part that comes and goes
		}
		now = now.Add(200 * time.Millisecond)
		c := k.commit("cl", 0, s, now)
		if r.IntN(8) == 0 {
			// Aborted: a read_committed reader never sees it; the keyed
			// side stays as it was.
			next += int64(len(c.recs)) + 1 // and the abort marker
			id--
			continue
		}
		for _, rec := range c.recs {
			rec.Offset = next
			log = append(log, logRecord{next, rec.Key, rec.Value})
			next++
			if bytes.HasPrefix(rec.Key, []byte(deltaPrefix)) && rec.Value != nil {
				buckets++
			}
		}
		next++ // the commit marker
		if c.base {
			bases++
		} else {
			deltas++
		}
		ofs := c.at(k)
		c.apply()
		hist = append(hist, committed{s, c.hdr.Offset, k.chain(), ofs})
		if r.IntN(10) == 0 {
			log = compact(log, r.IntN(2) == 0)
		}

		// Restore the newest from its metadata's offset, and from each of
		// a few earlier copies.
		want := hist[len(hist)-1]
		got, b := scanLog(t, log, want.ofs, want.s.ID, nil)
		checkRestored(t, got, want.s)
		if b.chain().base != want.c.base {
			t.Fatalf("checkpoint %d: restored chain on base %d, want %d", id, b.chain().base, want.c.base)
		}
		for range 3 {
			old := hist[r.IntN(len(hist))]
			if old.s.ID == want.s.ID || old.at < want.ofs || old.c.base < 0 {
				continue
			}
			start := &rebuild{}
			if err := start.startFrom(old.s, old.c); err != nil {
				t.Fatal(err)
			}
			got, b := scanLog(t, log, old.at+1, want.s.ID, start)
			checkRestored(t, got, want.s)
			if !maps.Equal(b.written, want.c.written) && !(len(b.written) == 0 && len(want.c.written) == 0) {
				t.Fatalf("checkpoint %d from copy %d: written %d keys, want %d", id, old.s.ID, len(b.written), len(want.c.written))
			}
		}
	}
	if bases < 3 || deltas < 100 || buckets < 1000 {
		t.Fatalf("%d bases, %d deltas, %d bucket records: the test does not exercise the keyed changelog", bases, deltas, buckets)
	}
	// Compacted, the partition holds about one base and its deltas' keys.
	log = compact(log, true)
	last := hist[len(hist)-1]
	size := 0
	for _, rec := range log {
		size += len(rec.key) + len(rec.value)
	}
	full := len(encodeParts(last.s.Parts))
	t.Logf("%d bases, %d deltas, %d bucket records; compacted partition %d bytes, last checkpoint %d bytes whole", bases, deltas, buckets, size, full)
	if size > 2*max(full, rebaseBytes)+4096 {
		t.Fatalf("the compacted partition holds %d bytes, the checkpoint is %d whole: keys leak", size, full)
	}
}

// compact keeps each key's newest record, as Kafka's log cleaner does
// (and, with expire, drops tombstones, as it does past
// delete.retention.ms).
func compact(log []logRecord, expire bool) []logRecord {
	newest := map[string]int64{}
	for _, r := range log {
		newest[string(r.key)] = r.off
	}
	var out []logRecord
	for _, r := range log {
		if newest[string(r.key)] != r.off || (expire && r.value == nil) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// scanLog restores checkpoint id from the simulated partition, from
// offset from.
func scanLog(t *testing.T, log []logRecord, from, id int64, start *rebuild) (*snapshot, *rebuild) {
	t.Helper()
	sc := newScan("test", id, start)
	for _, r := range log {
		if r.off < from {
			continue
		}
		s, err := sc.record(r.key, r.value)
		if err != nil {
			t.Fatalf("checkpoint %d from offset %d: %v", id, from, err)
		}
		if s != nil {
			return s, sc.b
		}
	}
	t.Fatalf("checkpoint %d not found from offset %d", id, from)
	return nil, nil
}

// checkRestored compares a restored checkpoint with the committed one:
// the same parts, the window operator's as the same items.
func checkRestored(t *testing.T, got, want *snapshot) {
	t.Helper()
	if got.ID != want.ID || got.Position != want.Position || !bytes.Equal(got.Meta, want.Meta) {
		t.Fatalf("restored checkpoint %d at %d, want %d at %d", got.ID, got.Position, want.ID, want.Position)
	}
	items := func(s *snapshot) map[string]string {
		m := map[string]string{}
		if err := splitParts(s.Parts, func(id, val []byte) { m[string(id)] = string(val) }); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if g, w := items(got), items(want); !maps.Equal(g, w) {
		t.Fatalf("checkpoint %d: restored %d items, want %d", want.ID, len(g), len(w))
	}
}

// BenchmarkKeyedCommit commits checkpoints of a window operator holding
// 100,000 keys' hour windows, of which 1% change between commits,
// through the keyed changelog and whole (go test -run XXX -bench
// KeyedCommit -benchmem ./internal/group): the changelog bytes a commit
// writes, and its time (the snapshot, cut into items and hashed; or
// chunked).
func BenchmarkKeyedCommit(b *testing.B) {
	changelogModes(b, func(b *testing.B) {
		a, err := window.Tumbling(3600_000, 0)
		if err != nil {
			b.Fatal(err)
		}
		op := kcOperator(b, a)
		const keys = 100_000
		k := &keyed{}
		now := time.Unix(1767225600, 0)
		id := int64(0)
		commit := func(changed int) int {
			for j := range changed {
				key := uint64((int(id)*changed + j) % keys)
				if err := op.ProcessElement(key, kcEvent{key, 1000}, 1000); err != nil {
					b.Fatal(err)
				}
			}
			part, err := op.Snapshot(nil)
			if err != nil {
				b.Fatal(err)
			}
			now = now.Add(200 * time.Millisecond)
			id++
			c := k.commit("cl", 0, &snapshot{ID: id, Parts: map[string][]byte{"s/0/window": part}}, now)
			n := 0
			for i, r := range c.recs {
				r.Offset = int64(i)
				n += len(r.Key) + len(r.Value)
			}
			c.apply()
			return n
		}
		commit(keys) // the base
		bytes := 0
		b.ResetTimer()
		for range b.N {
			bytes += commit(keys / 100)
		}
		b.ReportMetric(float64(bytes)/float64(b.N), "changelog-B/commit")
	})
}

// changelogModes runs f as sub-benchmark "keyed" and, with every commit
// a whole checkpoint (fullCheckpoints), as "whole".
func changelogModes(b *testing.B, f func(b *testing.B)) {
	for _, full := range []bool{false, true} {
		name := "keyed"
		if full {
			name = "whole"
		}
		b.Run(name, func(b *testing.B) {
			fullCheckpoints = full
			defer func() { fullCheckpoints = false }()
			f(b)
		})
	}
}

// TestKeyedRestore: a member commits its tasks' state as deltas while it
// reads the input, and stops half-way; a second member, with a state
// directory of its own, restores every task from the changelog (a base
// and the deltas after it) and reads the rest: the committed results and
// late records equal one member's uninterrupted run.
func TestKeyedRestore(t *testing.T) {
	c, cl := fakeKafka(t, 4, "kbase", "kr")
	broker := c.ListenAddrs()[0]
	const n = 20_000
	produce := func(from, to int) {
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			u := fmt.Sprintf("u%d", i%13)
			recs = append(recs, &kgo.Record{Key: []byte(u), Value: fmt.Appendf(nil, `{"user_id":%q,"amount":%d,"ts":%d}`, u, i%10, orderTime(i))})
		}
		if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(0, n)
	// Inboxes of 100 records: the member reads slowly enough to stop it
	// half-way.
	defer func(n int) { inboxRecords = n }(inboxRecords)
	inboxRecords = 100
	p := plan(t, "kr", broker)
	p.Source.Kafka.StopAtEnd = false
	reg := prometheus.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	var commits atomic.Int64
	go func() {
		done <- Run(ctx, Options{Plan: p, Instance: "a", StateDir: t.TempDir(), SessionTimeout: joinSession, TransactionTimeout: joinTxnTimeout,
			CommitInterval: 50 * time.Millisecond, Registerer: reg, Info: func(msg string) { t.Log(msg) },
			OnCommit: func(int32, int64, etime.Time) { commits.Add(1) }})
	}()
	deadline := time.Now().Add(time.Minute)
	for commits.Load() < 40 {
		if time.Now().After(deadline) {
			t.Fatal("the member did not commit 40 checkpoints within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if deltaCheckpoints(t, reg) == 0 && !fullCheckpoints {
		t.Fatal("the member committed no deltas")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("member a: %v", err)
	}
	reg = prometheus.NewRegistry()
	runGroup(t, plan(t, "kr", broker), t.TempDir(), func(o *Options) { o.Registerer = reg }, "b")
	deltas := counter(t, reg, "weir_group_restore_deltas_total", "", "")
	if deltas == 0 && !fullCheckpoints {
		t.Error("no restore read deltas: the test does not exercise the keyed changelog")
	}
	runMembers(t, plan(t, "kbase", broker), t.TempDir(), "a")
	for _, kind := range []string{"out", "late"} {
		want, got := committed(t, broker, "kbase-"+kind), committed(t, broker, "kr-"+kind)
		if len(want) == 0 || !slices.Equal(want, got) {
			t.Errorf("%s: %d records, want the uninterrupted run's %d; first differences:\n%s", kind, len(got), len(want), jobtest.Diff(want, got))
		}
	}
}

// deltaCheckpoints is the delta checkpoints a member committed, from its
// registry.
func deltaCheckpoints(t *testing.T, reg *prometheus.Registry) int {
	t.Helper()
	return counter(t, reg, "weir_group_changelog_checkpoints_total", "kind", "delta")
}

// counter is the value of reg's counter name (of the series whose label
// has value, unless label is empty).
func counter(t *testing.T, reg *prometheus.Registry, name, label, value string) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label == "" {
				return int(m.GetCounter().GetValue())
			}
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return int(m.GetCounter().GetValue())
				}
			}
		}
	}
	return 0
}

// TestKeyedMalformed: a restore fed malformed changelog records (bucket
// counts beyond any allocation, cut values, garbage headers) fails or
// ignores them, never panics.
func TestKeyedMalformed(t *testing.T) {
	op := kcOperator(t, nil)
	for i := range 500 {
		if err := op.ProcessElement(uint64(i%50), kcEvent{uint64(i), etime.Time(i)}, etime.Time(i)); err != nil {
			t.Fatal(err)
		}
	}
	part, err := op.Snapshot(nil)
	if err != nil {
		t.Fatal(err)
	}
	k := &keyed{}
	c := k.commit("cl", 0, &snapshot{ID: 1, Parts: map[string][]byte{"s/0/window": part}}, time.Now())
	var base []logRecord
	for i, r := range c.recs {
		base = append(base, logRecord{int64(i), r.Key, r.Value})
	}
	r := rand.New(rand.NewPCG(1, 2))
	keys := []string{"d/4611686018427387904/0", "d/1073741824/5", "d/64/3", "d/64/99", "d/-1/0", "d/x/y", "d/64", "hd", "h", "c/0", "c/-1"}
	for range 2000 {
		sc := newScan("test", 2, nil)
		for _, rec := range base {
			if _, err := sc.record(rec.key, rec.value); err != nil {
				t.Fatal(err)
			}
		}
		v := make([]byte, r.IntN(40))
		for i := range v {
			v[i] = byte(r.IntN(256))
		}
		if r.IntN(2) == 0 && len(v) > 0 {
			v[0] = 0
		}
		_, _ = sc.record([]byte(keys[r.IntN(len(keys))]), v)
		hd := appendDeltaHeader(nil, &snapshot{ID: 2}, 1, r.Uint64())
		_, _ = sc.record([]byte(deltaHeaderKey), hd)
	}
}

// TestKeyedLargeItem: an item too large for one record (a large distinct
// set) makes its commits bases, in chunks: no record of any commit is
// larger than a chunk (a trial saw MESSAGE_TOO_LARGE end every member).
func TestKeyedLargeItem(t *testing.T) {
	k := &keyed{}
	now := time.Unix(1767225600, 0)
	big := make([]byte, 3*chunkSize)
	for id := int64(1); id <= 4; id++ {
		big[id] = byte(id) // it changes every commit
		s := &snapshot{ID: id, Parts: map[string][]byte{"s/0/distinct": big, "s/0/source": fmt.Appendf(nil, "pos %d", id)}}
		now = now.Add(time.Second)
		c := k.commit("cl", 0, s, now)
		for i, r := range c.recs {
			if len(r.Value) > chunkSize+64 {
				t.Fatalf("commit %d: a record of %d bytes (base %v)", id, len(r.Value), c.base)
			}
			r.Offset = int64(i)
		}
		c.apply()
	}
}

// TestCacheOfAnotherTask: a state directory copy moved to another task's
// file is refused (the member then restores from the changelog); a trial
// swapped two copies of one checkpoint id and the task restarted 43
// times a second, its source refusing the other partition's position.
func TestCacheOfAnotherTask(t *testing.T) {
	dir := t.TempDir()
	s := &snapshot{ID: 3, Parts: map[string][]byte{"s/0/source": []byte("pos")}, Position: 7}
	if err := writeCache(dir, 5, 1, s, 42, chain{base: 2}); err != nil {
		t.Fatal(err)
	}
	got, at, c, err := readCache(dir, 5, 1)
	if err != nil || got == nil || at != 42 || c.base != 2 || len(got.Parts) != 1 {
		t.Fatalf("read back: %v at %d, chain %v, %v", got, at, c, err)
	}
	if err := os.Rename(cachePath(dir, 5, 1), cachePath(dir, 5, 0)); err != nil {
		t.Fatal(err)
	}
	if got, _, _, err := readCache(dir, 5, 0); err == nil || got != nil || !strings.Contains(err.Error(), "task 1's, not task 0's") {
		t.Fatalf("another task's copy: %v, %v", got, err)
	}
}

// TestKeyedChurn: a commit that changes more than its base holds is
// written as a base, and the next commits write bases without looking
// for changes: 1, then 2, 4, ... up to 64 as the churn repeats; a commit
// that finds a delta again starts the count over. An aborted commit
// changes none of it.
func TestKeyedChurn(t *testing.T) {
	k := &keyed{}
	now := time.Unix(1767225600, 0)
	id := int64(0)
	// commit commits a checkpoint of 100 parts of 1 kB: every part
	// changed (churn), or only the first.
	commit := func(churn, abort bool) keyedCommit {
		id++
		s := &snapshot{ID: id, Meta: []byte("m"), Parts: map[string][]byte{}, Position: id}
		for i := range 100 {
			v := id
			if !churn && i > 0 {
				v = 0
			}
			s.Parts[fmt.Sprintf("p%d", i)] = bytes.Repeat(fmt.Appendf(nil, "%08d", v), 128)
		}
		now = now.Add(time.Second)
		c := k.commit("cl", 0, s, now)
		for i, r := range c.recs {
			r.Offset = id*1000 + int64(i)
		}
		if !abort {
			c.apply()
		}
		return c
	}
	if c := commit(false, false); !c.base {
		t.Fatal("the first commit is no base")
	}
	if c := commit(false, false); c.base {
		t.Fatal("one changed part made a base")
	}
	// Churn after churn: each a base, then 1, 2, 4, ... skipped bases,
	// then a base to find changes against again.
	for n, skipped := range []int{1, 2, 4, 8, 16, 32, 64, 64} {
		if n > 0 {
			if c := commit(true, false); !c.base || k.skip != 0 {
				t.Fatalf("the base after skipping: base %v, skip %d", c.base, k.skip)
			}
		}
		if c := commit(true, false); !c.base || k.skip != skipped || k.backoff != skipped {
			t.Fatalf("a churning commit: base %v, skip %d, backoff %d; want a base and %d", c.base, k.skip, k.backoff, skipped)
		}
		for i := range skipped {
			if i == 0 {
				// An aborted commit counts nothing.
				if c := commit(false, true); !c.base || k.skip != skipped {
					t.Fatalf("an aborted skipping commit: base %v, skip %d, want %d", c.base, k.skip, skipped)
				}
			}
			if c := commit(false, false); !c.base || k.skip != skipped-i-1 {
				t.Fatalf("skipping commit %d of %d: base %v, skip %d", i+1, skipped, c.base, k.skip)
			}
		}
	}
	// Quiet again: a commit after the skips is a base (nothing based),
	// then deltas, and the backoff starts over.
	commit(false, false)
	if c := commit(false, false); c.base || k.backoff != 0 {
		t.Fatalf("after the churn: base %v, backoff %d", c.base, k.backoff)
	}
}

// BenchmarkRestore restores a task the way a new owner does: it reads
// the task's changelog partition (an in-process kfake) from its base to
// the committed checkpoint, a base of a window operator holding keys
// hour windows then 20 deltas of 1% of the keys each, and restores the
// operator from it (go test -run XXX -bench Restore ./internal/group):
// changelog records/s and MB/s of the whole restore, the read's share.
func BenchmarkRestore(b *testing.B) {
	for _, keys := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			ch := changelogChain(b, keys)
			var st readStats
			var read time.Duration
			b.ResetTimer()
			for range b.N {
				began := time.Now()
				s, _, rs, _, err := readSnapshot(context.Background(), ch.opts, "cl", 0, ch.from, ch.id, time.Minute, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				read += time.Since(began)
				st = rs
				op := kcOperator(b, ch.assigner)
				if err := op.Restore(s.Parts["s/0/window"], 0, 127, true); err != nil {
					b.Fatal(err)
				}
			}
			sec := b.Elapsed().Seconds()
			b.ReportMetric(float64(st.records*b.N)/sec, "records/s")
			b.ReportMetric(float64(st.bytes*int64(b.N))/sec/1e6, "MB/s")
			b.ReportMetric(float64(st.deltas), "deltas")
			b.ReportMetric(float64(st.records), "records")
			b.ReportMetric(float64(st.bytes)/1e6, "MB")
			b.ReportMetric(read.Seconds()/sec, "read-share")
		})
	}
}

// testChain is a task's changelog partition in an in-process kfake
// (topic cl, partition 0), which changelogChain writes: a base of a
// window operator holding keys hour windows, then 20 deltas of 1% of the
// keys each; a restore of checkpoint id reads from offset from.
type testChain struct {
	opts     []kgo.Opt
	assigner window.Assigner
	from, id int64
}

func changelogChain(tb testing.TB, keys int) testChain {
	tb.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "cl"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	cl, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic("cl"), kgo.ProducerBatchMaxBytes(1<<20))...)
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	a, err := window.Tumbling(3600_000, 0)
	if err != nil {
		tb.Fatal(err)
	}
	op := kcOperator(tb, a)
	k := &keyed{}
	now := time.Unix(1767225600, 0)
	ch := testChain{opts: opts, assigner: a}
	for n := range 21 {
		changed := keys / 100
		if n == 0 {
			changed = keys // the base
		}
		for j := range changed {
			key := uint64((n*changed + j) % keys)
			if err := op.ProcessElement(key, kcEvent{key, 1000}, 1000); err != nil {
				tb.Fatal(err)
			}
		}
		part, err := op.Snapshot(nil)
		if err != nil {
			tb.Fatal(err)
		}
		ch.id++
		now = now.Add(time.Second)
		kc := k.commit("cl", 0, &snapshot{ID: ch.id, Meta: []byte("m"), Parts: map[string][]byte{"s/0/window": part}}, now)
		var recs []*kgo.Record
		for _, r := range kc.recs {
			recs = append(recs, &kgo.Record{Topic: "cl", Partition: 0, Key: r.Key, Value: r.Value})
		}
		res := cl.ProduceSync(context.Background(), recs...)
		if err := res.FirstErr(); err != nil {
			tb.Fatal(err)
		}
		for i, r := range res {
			kc.recs[i].Offset = r.Record.Offset
		}
		kc.apply()
		ch.from = kc.at(k)
	}
	if k.since == 0 {
		tb.Fatal("the chain has no deltas")
	}
	return ch
}

// TestRestoreProgress: a restore reading a changelog partition larger
// than a fetch tells its progress after each fetch: the records and
// bytes read so far, growing, and the records left to the partition's
// end, shrinking, the last call giving what the read returns.
func TestRestoreProgress(t *testing.T) {
	ch := changelogChain(t, 60_000)
	type call struct{ records, bytes, remaining int64 }
	var calls []call
	_, _, st, _, err := readSnapshot(context.Background(), ch.opts, "cl", 0, ch.from, ch.id, time.Minute, nil, func(r, b, left int64) {
		calls = append(calls, call{r, b, left})
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) < 2 {
		t.Fatalf("%d progress calls for a read of %d bytes: want one per fetch", len(calls), st.bytes)
	}
	for i := 1; i < len(calls); i++ {
		if calls[i].records <= calls[i-1].records || calls[i].bytes <= calls[i-1].bytes || calls[i].remaining >= calls[i-1].remaining {
			t.Errorf("progress %d: %+v after %+v", i, calls[i], calls[i-1])
		}
	}
	if last := calls[len(calls)-1]; last.records != int64(st.records) || last.bytes != st.bytes || last.remaining != 0 {
		t.Errorf("last progress %+v; the read: %d records, %d bytes", last, st.records, st.bytes)
	}
	if calls[0].remaining == 0 {
		t.Error("the first fetch left nothing to read")
	}
}
