package timers

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/state/memstate"
	"github.com/weirstream/weir/window"
)

func encInt(dst []byte, k int) []byte { return strconv.AppendInt(dst, int64(k), 10) }

// TestKVServiceMatchesService drives the in-memory service and KV services
// with tiny head caches (so that trimming, refilling and extending happen
// all the time, and cached timers are written back) with the same random
// operations, and checks that they agree on every answer, including the
// order of due timers, and that a drained service leaves its KV empty.
func TestKVServiceMatchesService(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		head := rapid.IntRange(1, 4).Draw(t, "head")
		groups := rapid.IntRange(1, 4).Draw(t, "groups")
		ref := New(encInt)
		store := memstate.NewKV()
		kv := NewKVHead(store, 9, encInt, state.CodecFor[int](), func(k int) state.KeyGroup { return state.KeyGroup(k % groups) }, head)
		genTimer := rapid.Custom(func(t *rapid.T) Timer[int] {
			ts := etime.Time(rapid.IntRange(0, 12).Draw(t, "ts"))
			start := ts - etime.Time(rapid.IntRange(0, 2).Draw(t, "len"))
			return Timer[int]{TS: ts, Key: rapid.IntRange(0, 9).Draw(t, "key"), Window: window.Window{Start: start, End: ts + 1}}
		})
		for i := range rapid.IntRange(1, 200).Draw(t, "ops") {
			switch op := rapid.IntRange(0, 10).Draw(t, "op"); {
			case op < 5:
				x := genTimer.Draw(t, "t")
				ref.Register(x)
				if !kv.Has(x) && op == 4 {
					kv.RegisterNew(x)
				} else {
					kv.Register(x)
				}
			case op < 7:
				x := genTimer.Draw(t, "t")
				ref.Delete(x)
				kv.Delete(x)
			case op < 8:
				x := genTimer.Draw(t, "t")
				if a, b := ref.Has(x), kv.Has(x); a != b {
					t.Fatalf("op %d: Has(%+v) = %v, want %v", i, x, b, a)
				}
			case op == 10:
				// A snapshot: the cached timers are written back.
				if a, b := rangeAll(ref), rangeAll(kv); !slices.Equal(a, b) {
					t.Fatalf("op %d: Range:\n%v\nwant\n%v", i, b, a)
				}
			default:
				upTo := etime.Time(rapid.IntRange(0, 12).Draw(t, "upTo"))
				a := slices.Clone(ref.PopDue(upTo))
				b := slices.Clone(kv.PopDue(upTo))
				if fmt.Sprint(a) != fmt.Sprint(b) {
					t.Fatalf("op %d: PopDue(%d) = %v, want %v", i, upTo, b, a)
				}
				// Fire them as operators do (each unless an earlier one
				// deleted it); firing may delete a due timer or register
				// a later one.
				for j, x := range a {
					if ref.Has(x) != kv.Has(x) {
						t.Fatalf("op %d: Has(%+v) differs while firing", i, x)
					}
					if !ref.Has(x) {
						continue
					}
					ref.Fired(x)
					kv.Fired(x)
					switch j % 3 {
					case 0:
						later := Timer[int]{TS: x.TS + etime.Time(j%4), Key: x.Key + 1, Window: x.Window}
						ref.Register(later)
						kv.Register(later)
					case 1:
						if j+1 < len(a) {
							ref.Delete(a[j+1])
							kv.Delete(a[j+1])
						}
					}
				}
			}
			if ref.Len() != kv.Len() {
				t.Fatalf("op %d: Len %d, want %d", i, kv.Len(), ref.Len())
			}
			a, aok := ref.Next()
			b, bok := kv.Next()
			if a != b || aok != bok {
				t.Fatalf("op %d: Next = %d %v, want %d %v", i, b, bok, a, aok)
			}
		}
		if a, b := rangeAll(ref), rangeAll(kv); !slices.Equal(a, b) {
			t.Fatalf("Range:\n%v\nwant\n%v", b, a)
		}
		var keyBytes int64
		kv.Range(func(x Timer[int]) bool {
			keyBytes += int64(len(kv.key(x)))
			return true
		})
		if kv.Bytes() != keyBytes {
			t.Fatalf("Bytes = %d, want %d", kv.Bytes(), keyBytes)
		}
		// Draining fires everything in the same order.
		for {
			a := slices.Clone(ref.PopDue(etime.MaxTime))
			b := slices.Clone(kv.PopDue(etime.MaxTime))
			if fmt.Sprint(a) != fmt.Sprint(b) {
				t.Fatalf("drain: PopDue = %v, want %v", b, a)
			}
			if len(a) == 0 {
				break
			}
			for _, x := range a {
				ref.Fired(x)
				kv.Fired(x)
			}
		}
		if kv.Len() != 0 || kv.Bytes() != 0 || len(kv.groups) != 0 || len(kv.h) != 0 {
			t.Fatalf("drained service holds %d timers, %d groups, heap %d", kv.Len(), len(kv.groups), len(kv.h))
		}
		if st := store.Stats(); st.Keys != 0 {
			t.Fatalf("drained service left %d keys in the KV", st.Keys)
		}
	})
}

func rangeAll(s Timers[int]) []string {
	var out []string
	s.Range(func(t Timer[int]) bool {
		out = append(out, fmt.Sprint(t))
		return true
	})
	slices.Sort(out)
	return out
}

// TestKeyPrefixOrder checks that keys with different prefixes compare as
// their prefixes, on random short keys over a small alphabet (with zero
// bytes and common prefixes, the cases that could go wrong).
func TestKeyPrefixOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	key := func() string {
		b := make([]byte, r.IntN(11))
		for i := range b {
			b[i] = []byte{0, 1, 'a', 0xff}[r.IntN(4)]
		}
		return string(b)
	}
	for range 200_000 {
		a, b := key(), key()
		pa, pb := keyPrefix(a), keyPrefix(b)
		if pa == pb {
			continue
		}
		if want, got := strings.Compare(a, b), cmp.Compare(pa, pb); want != got {
			t.Fatalf("%q vs %q: bytewise %d, by prefix %d", a, b, want, got)
		}
	}
}

// TestKeyOrder checks KeyOrder.Sort against a plain sort of the encodings,
// for batches on both sides of the radix threshold, with keys that share
// long prefixes and keys that differ only after their first 8 bytes.
func TestKeyOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	enc := func(dst []byte, k string) []byte { return append(dst, k...) }
	var o KeyOrder[string]
	for _, n := range []int{0, 1, 5, 31, 32, 33, 500, 5000} {
		for range 3 {
			keys := make([]string, n)
			for i := range keys {
				b := []byte("[common-prefix-")
				b = b[:r.IntN(len(b)+1)]
				for range r.IntN(6) {
					b = append(b, []byte{0, '1', '9', 'a', 0xff}[r.IntN(5)])
				}
				keys[i] = string(b)
			}
			perm := o.Sort(keys, enc)
			got := make([]string, len(perm))
			for i, p := range perm {
				got[i] = keys[p]
			}
			want := slices.Clone(keys)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("n=%d: order differs", n)
			}
		}
	}
}

// TestSorterOrder checks the due timers' W5 order (window end, key
// encoding bytewise, window start) against a plain sort, for timers of
// one window (sorted by KeyOrder's radix sort) and of several.
func TestSorterOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var o sorter[int]
	for _, n := range []int{1, 2, 31, 32, 33, 1000, 5000} {
		for _, windows := range []int{1, 3} {
			due := make([]Timer[int], n)
			for i := range due {
				w := window.Window{Start: etime.Time(r.IntN(windows)), End: 10 + etime.Time(r.IntN(windows))}
				due[i] = Timer[int]{TS: 9, Key: r.IntN(4*n) - 2*n, Window: w}
			}
			due = slices.CompactFunc(slices.SortedFunc(slices.Values(due), func(a, b Timer[int]) int {
				return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(a.Window.Start, b.Window.Start), cmp.Compare(a.Window.End, b.Window.End))
			}), func(a, b Timer[int]) bool { return a == b })
			r.Shuffle(len(due), func(i, j int) { due[i], due[j] = due[j], due[i] })
			want := slices.SortedFunc(slices.Values(due), func(a, b Timer[int]) int {
				return cmp.Or(cmp.Compare(a.Window.End, b.Window.End),
					strings.Compare(string(encInt(nil, a.Key)), string(encInt(nil, b.Key))),
					cmp.Compare(a.Window.Start, b.Window.Start))
			})
			if got := o.sort(slices.Clone(due), encInt); !slices.Equal(got, want) {
				t.Fatalf("%d timers in %d windows: order differs\ngot  %v\nwant %v", len(due), windows, got[:min(10, len(got))], want[:min(10, len(want))])
			}
		}
	}
}
