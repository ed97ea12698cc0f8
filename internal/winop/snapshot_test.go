package winop

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/state/memstate"
	"github.com/weirstream/weir/state/pebblestate"
	"github.com/weirstream/weir/trigger"
	"github.com/weirstream/weir/window"
)

type snapEvent struct {
	key uint64
	ts  etime.Time
}

type snapSum struct{}

func (snapSum) CreateAccumulator() int64               { return 0 }
func (snapSum) Add(a int64, e snapEvent) int64         { return a + int64(e.key) + 1 }
func (snapSum) Merge(a, b int64) int64                 { return a + b }
func (snapSum) Result(a int64) int64                   { return a }
func kgOf(k uint64) state.KeyGroup                     { return state.KeyGroup(k % 128) }
func (c *lines) Result(r window.Result[uint64, int64]) { *c = append(*c, fmt.Sprint("R ", r)) }
func (c *lines) Late(r window.LateRecord[uint64, snapEvent]) {
	*c = append(*c, fmt.Sprint("L ", r.Key, r.Record, r.Windows, r.Watermark, r.Reason))
}

type lines []string

// TestSnapshotRestore cuts a stream at several points: a snapshot taken
// there and restored into a fresh operator (or split by key groups into
// two, a rescale) continues exactly as the uncut operator does, for
// tumbling windows with early firings and lateness, pane-mode sliding
// windows, and merging sessions with lateness; and, skipping unchanged
// results (W20), the restored operator skips what the uncut one skips.
func TestSnapshotRestore(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var evs []snapEvent
	for i := range 4000 {
		d := r.IntN(300)
		if r.IntN(20) == 0 {
			d = 500 + r.IntN(3000) // late, some beyond the lateness
		}
		evs = append(evs, snapEvent{key: r.Uint64N(40), ts: etime.Time(i*5 - d)})
	}
	cont, _ := trigger.Continuous(200)
	cases := []struct {
		name string
		a    window.Assigner
		trig trigger.Trigger
		skip bool
	}{
		{"tumbling", mustA(window.Tumbling(1000, 0)), cont, false},
		{"sliding", mustA(window.Sliding(1000, 250, 0)), nil, false},
		{"session", mustA(window.Session(60)), nil, false},
		{"tumbling_skip", mustA(window.Tumbling(1000, 0)), cont, true},
		{"session_skip", mustA(window.Session(60)), cont, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			newOp := func(out *lines) *Operator[uint64, snapEvent, int64, int64] {
				return newSnapOp(t, c.a, c.trig, 800, c.skip, out)
			}
			feed := func(op *Operator[uint64, snapEvent, int64, int64], from, to int) {
				feedEvents(t, op, evs, from, to, 50, 500, nil)
			}
			var ref lines
			for _, cut := range []int{1, 777, 2000, 3999} {
				ref = ref[:0]
				refOp := newOp(&ref)
				feed(refOp, 0, cut)
				before := len(ref)
				snap, err := refOp.Snapshot(nil)
				if err != nil {
					t.Fatal(err)
				}
				feed(refOp, cut, len(evs))
				refOp.AdvanceWatermark(etime.MaxTime)
				want := slices.Clone(ref[before:])

				var one lines
				op := newOp(&one)
				if err := op.Restore(snap, 0, 127, true); err != nil {
					t.Fatal(err)
				}
				feed(op, cut, len(evs))
				op.AdvanceWatermark(etime.MaxTime)
				if !slices.Equal(one, want) {
					t.Fatalf("cut %d: restored output differs:\n got %d lines %v\nwant %d lines %v", cut, len(one), head(one), len(want), head(want))
				}
				if op.Counters() != refOp.Counters() {
					t.Fatalf("cut %d: counters %+v, want %+v", cut, op.Counters(), refOp.Counters())
				}
				// The snapshot cut into items, shuffled and put together
				// again (a keyed changelog's restore), restores the same.
				var joined lines
				op = newOp(&joined)
				if err := op.Restore(rejoin(t, snap, r), 0, 127, true); err != nil {
					t.Fatal(err)
				}
				feed(op, cut, len(evs))
				op.AdvanceWatermark(etime.MaxTime)
				if !slices.Equal(joined, want) || op.Counters() != refOp.Counters() {
					t.Fatalf("cut %d: output restored from the snapshot's items differs:\n got %d lines %v\nwant %d lines %v", cut, len(joined), head(joined), len(want), head(want))
				}
				if c.skip && cut > 1 && op.Counters().Unchanged == 0 {
					t.Fatalf("cut %d: no firing was skipped as unchanged: the case does not test W20", cut)
				}

				// Rescale 1 -> 2: each half takes its key groups and sees
				// only its keys; together they give the same lines.
				var a, b lines
				opA, opB := newOp(&a), newOp(&b)
				if err := opA.Restore(snap, 0, 63, true); err != nil {
					t.Fatal(err)
				}
				if err := opB.Restore(snap, 64, 127, false); err != nil {
					t.Fatal(err)
				}
				maxTs := etime.MinTime
				for i := range evs {
					maxTs = max(maxTs, evs[i].ts)
					if i >= cut {
						o := opA
						if kgOf(evs[i].key) >= 64 {
							o = opB
						}
						if err := o.ProcessElement(evs[i].key, evs[i], evs[i].ts); err != nil {
							t.Fatal(err)
						}
					}
					if i >= cut && i%50 == 49 {
						opA.AdvanceWatermark(maxTs - 500 - 1)
						opB.AdvanceWatermark(maxTs - 500 - 1)
					}
				}
				opA.AdvanceWatermark(etime.MaxTime)
				opB.AdvanceWatermark(etime.MaxTime)
				got := append(slices.Clone(a), b...)
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Fatalf("cut %d: rescaled output differs: got %d lines, want %d", cut, len(got), len(want))
				}
				sum := opA.Counters()
				sum.Add(opB.Counters())
				if sum != refOp.Counters() {
					t.Fatalf("cut %d: rescaled counters %+v, want %+v", cut, sum, refOp.Counters())
				}
			}
		})
	}
}

func head(l lines) lines { return l[:min(5, len(l))] }

// newSnapOp is an operator summing snapEvents (snapSum) into lines, with
// assigner a, trigger trig, the lateness and late records to the side
// output; skip gives it a fingerprint (W20).
func newSnapOp(t *testing.T, a window.Assigner, trig trigger.Trigger, lateness etime.Duration, skip bool, out *lines) *Operator[uint64, snapEvent, int64, int64] {
	t.Helper()
	var fp func(int64) uint64
	if skip {
		fp = func(v int64) uint64 { return uint64(v) }
	}
	op, err := New(Config[uint64, snapEvent, int64, int64]{
		Assigner: a, Trigger: trig, Lateness: lateness, Fingerprint: fp,
		Contents:   AggContents[snapEvent, int64, int64]{F: snapSum{}},
		Func:       func(ctx *FireContext[uint64, int64], acc *int64) { ctx.Emit(*acc) },
		KeyEncoder: encU64, Backend: memstate.New(), LateOutput: true,
		KeyCodec: state.CodecFor[uint64](), AccCodec: state.CodecFor[int64](), KeyGroup: kgOf,
	}, out)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// feedEvents runs evs[from:to] through op, advancing the watermark to the
// largest timestamp so far - bound - 1 every `every` records (counted
// from the stream's start, so a restored operator advances where the
// uncut one did), and calls advanced after each advance.
func feedEvents(tb testing.TB, op *Operator[uint64, snapEvent, int64, int64], evs []snapEvent, from, to, every int, bound etime.Duration, advanced func()) {
	maxTs := etime.MinTime
	for i := range to {
		maxTs = max(maxTs, evs[i].ts)
		if i < from {
			continue
		}
		if err := op.ProcessElement(evs[i].key, evs[i], evs[i].ts); err != nil {
			tb.Fatal(err)
		}
		if i%every == every-1 {
			op.AdvanceWatermark(maxTs.Add(-bound) - 1)
			if advanced != nil {
				advanced()
			}
		}
	}
}

func TestRestoreRefusesGarbage(t *testing.T) {
	op, err := New(Config[uint64, snapEvent, int64, int64]{
		Assigner: mustA(window.Tumbling(10, 0)), Contents: AggContents[snapEvent, int64, int64]{F: snapSum{}},
		Func: func(ctx *FireContext[uint64, int64], acc *int64) {}, KeyEncoder: encU64, Backend: memstate.New(),
		KeyCodec: state.CodecFor[uint64](), AccCodec: state.CodecFor[int64](), KeyGroup: kgOf,
	}, &lines{})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.ProcessElement(1, snapEvent{1, 5}, 5); err != nil {
		t.Fatal(err)
	}
	snap, err := op.Snapshot(nil)
	if err != nil {
		t.Fatal(err)
	}
	older := append([]byte("weir-winop-3"), snap[len(snapshotMagic):]...)
	for _, bad := range [][]byte{nil, []byte("nope"), snap[:len(snap)-3], older} {
		fresh, err := New(Config[uint64, snapEvent, int64, int64]{
			Assigner: mustA(window.Tumbling(10, 0)), Contents: AggContents[snapEvent, int64, int64]{F: snapSum{}},
			Func: func(ctx *FireContext[uint64, int64], acc *int64) {}, KeyEncoder: encU64, Backend: memstate.New(),
			KeyCodec: state.CodecFor[uint64](), AccCodec: state.CodecFor[int64](), KeyGroup: kgOf,
		}, &lines{})
		if err != nil {
			t.Fatal(err)
		}
		err = fresh.Restore(bad, 0, 127, true)
		if err == nil {
			t.Errorf("restore of %d bytes of garbage succeeded", len(bad))
		}
		if string(bad) == string(older) && !strings.Contains(fmt.Sprint(err), `format "weir-winop-3"`) {
			t.Errorf("a snapshot of an older format must say so: %v", err)
		}
	}
}

// BenchmarkSnapshot measures a window operator's snapshot (what a
// checkpoint costs the subtask that takes it) and its restore against the
// state size, on the in-memory and the pebble backend: keys with one open
// tumbling window each, an int64 accumulator and two timers.
//
//	go test -run x -bench Snapshot ./internal/winop/
func BenchmarkSnapshot(b *testing.B) {
	backends := map[string]func(b *testing.B) state.Backend{
		"memory": func(*testing.B) state.Backend { return memstate.New() },
		"pebble": func(b *testing.B) state.Backend {
			kv, err := pebblestate.Open(b.TempDir()+"/db", pebblestate.Options{})
			if err != nil {
				b.Fatal(err)
			}
			return state.NewKVBackend(kv, 100_000)
		},
	}
	newOp := func(backend state.Backend) *Operator[uint64, snapEvent, int64, int64] {
		op, err := New(Config[uint64, snapEvent, int64, int64]{
			Assigner: mustA(window.Tumbling(1000, 0)), Lateness: 100,
			Contents:   AggContents[snapEvent, int64, int64]{F: snapSum{}},
			Func:       func(ctx *FireContext[uint64, int64], acc *int64) { ctx.Emit(*acc) },
			KeyEncoder: encU64, Backend: backend,
			KeyCodec: state.CodecFor[uint64](), AccCodec: state.CodecFor[int64](), KeyGroup: kgOf,
		}, &lines{})
		if err != nil {
			b.Fatal(err)
		}
		return op
	}
	for _, name := range []string{"memory", "pebble"} {
		for _, keys := range []int{10_000, 100_000, 1_000_000} {
			backend := backends[name](b)
			op := newOp(backend)
			for k := range keys {
				if err := op.ProcessElement(uint64(k), snapEvent{key: uint64(k), ts: 5}, 5); err != nil {
					b.Fatal(err)
				}
			}
			var snap []byte
			b.Run(fmt.Sprintf("%s/snapshot/keys=%d", name, keys), func(b *testing.B) {
				for b.Loop() {
					var err error
					if snap, err = op.Snapshot(nil); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(snap))/1e6, "MB")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*keys), "ns/key")
			})
			b.Run(fmt.Sprintf("%s/restore/keys=%d", name, keys), func(b *testing.B) {
				for b.Loop() {
					bk := backends[name](b)
					if err := newOp(bk).Restore(snap, 0, 127, true); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					_ = bk.Close()
					b.StartTimer()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*keys), "ns/key")
			})
			_ = backend.Close()
		}
	}
}

// TestSkipUnchangedForgetsWhenOff: a window restored with the fingerprint
// of its last results (W20) into an operator that does not skip forgets it
// at its next firing, so a later run that skips again never compares with
// results older than the window's last.
func TestSkipUnchangedForgetsWhenOff(t *testing.T) {
	w := window.Window{Start: 0, End: 1000}
	newOp := func(out *lines, skip bool) *Operator[uint64, snapEvent, int64, int64] {
		return newSnapOp(t, mustA(window.Tumbling(1000, 0)), nil, 5000, skip, out)
	}
	last := func(op *Operator[uint64, snapEvent, int64, int64]) bool {
		e := op.entries.Ref(1, w, false)
		return e != nil && e.lastSet
	}
	var out lines
	on := newOp(&out, true)
	if err := on.ProcessElement(1, snapEvent{key: 1, ts: 10}, 10); err != nil {
		t.Fatal(err)
	}
	on.AdvanceWatermark(999) // on time
	if !last(on) {
		t.Fatal("the on-time firing kept no fingerprint")
	}
	snap, err := on.Snapshot(nil)
	if err != nil {
		t.Fatal(err)
	}
	off := newOp(&out, false)
	if err := off.Restore(snap, 0, 127, true); err != nil {
		t.Fatal(err)
	}
	if !last(off) {
		t.Fatal("the restore lost the fingerprint")
	}
	if err := off.ProcessElement(1, snapEvent{key: 1, ts: 20}, 20); err != nil { // late: fires
		t.Fatal(err)
	}
	if last(off) {
		t.Fatal("a firing without skipping kept the older fingerprint")
	}
	if len(out) != 2 {
		t.Fatalf("results %v, want an on-time and a late one", out)
	}
}

// rejoin cuts snap into its items (SplitSnapshot), checks that each id
// comes once, and puts them together again in a random order.
func rejoin(t *testing.T, snap []byte, r *rand.Rand) []byte {
	t.Helper()
	type item struct{ id, val string }
	var items []item
	seen := map[string]bool{}
	if err := SplitSnapshot(snap, func(id, val []byte) {
		if seen[string(id)] {
			t.Fatalf("item %q twice", id)
		}
		seen[string(id)] = true
		items = append(items, item{string(id), string(val)})
	}); err != nil {
		t.Fatal(err)
	}
	r.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
	out, err := JoinSnapshot(func(yield func(id, val []byte) bool) {
		for _, it := range items {
			if !yield([]byte(it.id), []byte(it.val)) {
				return
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
