package memstate

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/state/statetest"
)

// TestKVValueMatchesHeap drives the KV-backed Value (with a tiny cache, so
// entries are evicted and reloaded all the time), its namespace-major form,
// the heap Value and the key-major heap Value with the same random
// operations: every observation agrees, namespace walks, drops and counts
// included.
func TestKVValueMatchesHeap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		heap := state.NewValue[string, int, int64](New(), "v")
		keyed := state.NewKeyedValue[string, int, int64](New(), "v")
		kv := state.NewKVValue[string, int, int64](NewKV(), 7, state.CodecFor[string](), state.CodecFor[int](), state.CodecFor[int64](),
			func(k string) state.KeyGroup { return state.KeyGroup(len(k) % 5) }, rapid.IntRange(1, 6).Draw(t, "cache"))
		nsv := state.NewKVNamespaces[string, int, int64](NewKV(), 7, state.CodecFor[string](), state.CodecFor[int](), state.CodecFor[int64](),
			func(k string) state.KeyGroup { return state.KeyGroup(len(k) % 5) }, rapid.IntRange(1, 6).Draw(t, "nscache"))
		hns := heap.(state.Namespaces[string, int, int64])
		keys := []string{"a", "bb", "ccc", "dddd", "", "ff"}
		for i := range rapid.IntRange(1, 200).Draw(t, "ops") {
			k := rapid.SampledFrom(keys).Draw(t, "k")
			n := rapid.IntRange(-2, 3).Draw(t, "n")
			switch op := rapid.IntRange(0, 9).Draw(t, "op"); op {
			case 0:
				v := rapid.Int64().Draw(t, "v")
				heap.Put(k, n, v)
				kv.Put(k, n, v)
				keyed.Put(k, n, v)
				nsv.Put(k, n, v)
			case 1:
				d := rapid.Int64Range(-5, 5).Draw(t, "d")
				create := rapid.Bool().Draw(t, "create")
				var ph, pk, py, pn *int64
				if _, exists := heap.Get(k, n); create && !exists && rapid.Bool().Draw(t, "new") {
					ph, pk, py, pn = heap.Create(k, n), kv.Create(k, n), keyed.Create(k, n), nsv.Create(k, n)
				} else {
					ph, pk, py, pn = heap.Ref(k, n, create), kv.Ref(k, n, create), keyed.Ref(k, n, create), nsv.Ref(k, n, create)
				}
				if (ph == nil) != (pk == nil) || (ph == nil) != (py == nil) || (ph == nil) != (pn == nil) {
					t.Fatalf("op %d: Ref(%q, %d, %v): heap %v kv %v keyed %v ns %v", i, k, n, create, ph != nil, pk != nil, py != nil, pn != nil)
				}
				if ph != nil {
					*ph += d
					*pk += d
					*py += d
					*pn += d
				}
			case 2:
				heap.Delete(k, n)
				kv.Delete(k, n)
				keyed.Delete(k, n)
				nsv.Delete(k, n)
			case 3:
				vh, okh := heap.Get(k, n)
				vk, okk := kv.Get(k, n)
				vy, oky := keyed.Get(k, n)
				vn, okn := nsv.Get(k, n)
				if vh != vk || okh != okk || vh != vy || okh != oky || vh != vn || okh != okn {
					t.Fatalf("op %d: Get(%q, %d): heap %d,%v kv %d,%v keyed %d,%v ns %d,%v", i, k, n, vh, okh, vk, okk, vy, oky, vn, okn)
				}
			case 4:
				kv.Evict()
				nsv.Evict()
			case 5:
				kv.Flush()
				nsv.Flush()
				if kv.Bytes() != nsv.Bytes() {
					t.Fatalf("op %d: Bytes: kv %d ns %d", i, kv.Bytes(), nsv.Bytes())
				}
			case 6:
				if a, b, c, d := dump(heap), dump(kv), dump(keyed), dump(nsv); !slices.Equal(a, b) || !slices.Equal(a, c) || !slices.Equal(a, d) {
					t.Fatalf("op %d: Range: heap %v kv %v keyed %v ns %v", i, a, b, c, d)
				}
			case 7:
				// A walk that changes what it visits.
				d := rapid.Int64Range(-5, 5).Draw(t, "d")
				for _, v := range []state.Namespaces[string, int, int64]{hns, nsv} {
					v.RangeNamespace(n, func(_ string, x *int64) bool { *x += d; return true })
				}
				for _, k := range nsKeys(hns, n) {
					*kv.Ref(k, n, false) += d
					*keyed.Ref(k, n, false) += d
				}
			case 8:
				var a, b []string
				hns.RangeNamespace(n, func(k string, x *int64) bool { a = append(a, fmt.Sprintf("%q=%d", k, *x)); return true })
				nsv.ViewNamespace(n, func(k string, x *int64) bool { b = append(b, fmt.Sprintf("%q=%d", k, *x)); return true })
				slices.Sort(a)
				slices.Sort(b)
				if !slices.Equal(a, b) {
					t.Fatalf("op %d: namespace %d: heap %v ns %v", i, n, a, b)
				}
			case 9:
				for _, k := range nsKeys(hns, n) {
					kv.Delete(k, n)
					keyed.Delete(k, n)
				}
				hns.DropNamespace(n)
				nsv.DropNamespace(n)
			}
			if heap.Len() != kv.Len() || heap.Len() != keyed.Len() || heap.Len() != nsv.Len() {
				t.Fatalf("op %d: Len: heap %d kv %d keyed %d ns %d", i, heap.Len(), kv.Len(), keyed.Len(), nsv.Len())
			}
			if a, b := hns.NamespaceLen(n), nsv.NamespaceLen(n); a != b {
				t.Fatalf("op %d: NamespaceLen(%d): heap %d ns %d", i, n, a, b)
			}
		}
		if a, b, c, d := dump(heap), dump(kv), dump(keyed), dump(nsv); !slices.Equal(a, b) || !slices.Equal(a, c) || !slices.Equal(a, d) {
			t.Fatalf("end: heap %v kv %v keyed %v ns %v", a, b, c, d)
		}
	})
}

// nsKeys returns namespace n's keys.
func nsKeys(v state.Namespaces[string, int, int64], n int) []string {
	var ks []string
	v.RangeNamespace(n, func(k string, _ *int64) bool { ks = append(ks, k); return true })
	return ks
}

func dump(v state.Value[string, int, int64]) []string {
	var out []string
	v.Range(func(k string, n int, x *int64) bool {
		out = append(out, fmt.Sprintf("%q/%d=%d", k, n, *x))
		return true
	})
	slices.Sort(out)
	return out
}

// TestKVValueRemembersAbsent: looking up an entry the Value never wrote
// to its KV costs no KV lookup (the filter of written keys: a new key, a
// new session); one it wrote and deleted costs one, after which the miss
// is remembered until the entry is made (a sliding window's firing asks
// for every pane of the window, most of which a key never had).
func TestKVValueRemembersAbsent(t *testing.T) {
	kv := &statetest.CountingKV{KV: NewKV()}
	v := state.NewKVValue[string, int, int64](kv, 7, state.CodecFor[string](), state.CodecFor[int](), state.CodecFor[int64](),
		func(string) state.KeyGroup { return 0 }, 100)
	for _, k := range []string{"a", "b"} {
		for range 3 {
			if p := v.Ref(k, 1, false); p != nil {
				t.Fatal("Ref of an absent entry")
			}
			if _, ok := v.Get(k, 1); ok {
				t.Fatal("Get of an absent entry")
			}
			v.Delete(k, 1)
		}
		if k == "a" && kv.Gets != 0 {
			t.Fatalf("%d KV lookups of an entry never written, want 0", kv.Gets)
		}
		if k == "a" {
			// Written back, then deleted: the filter still says maybe.
			*v.Ref("b", 1, true) = 5
			v.Flush()
			v.Delete("b", 1)
		}
	}
	if kv.Gets != 1 || v.Len() != 0 {
		t.Fatalf("%d KV lookups of a deleted entry, want 1; Len %d", kv.Gets, v.Len())
	}
	*v.Ref("a", 1, true) = 5
	if got, ok := v.Get("a", 1); !ok || got != 5 || v.Len() != 1 || kv.Gets != 1 {
		t.Fatalf("after Ref(create): %d, %v, Len %d, %d lookups", got, ok, v.Len(), kv.Gets)
	}
}

// TestKVValueFilterRebuilds: far more keys than the filter was sized for,
// written back through a small cache and half of them deleted, so the
// filter is rebuilt several times: every live key is still found, every
// deleted one is absent, and lookups of keys never written mostly skip
// the KV.
func TestKVValueFilterRebuilds(t *testing.T) {
	kv := &statetest.CountingKV{KV: NewKV()}
	v := state.NewKVValue[int, int, int64](kv, 3, state.CodecFor[int](), state.CodecFor[int](), state.CodecFor[int64](),
		func(k int) state.KeyGroup { return state.KeyGroup(k % 7) }, 10)
	const n = 30_000
	for k := range n {
		*v.Ref(k, k%3, true) = int64(k)
		if k%2 == 1 {
			v.Delete(k-1, (k-1)%3)
		}
		v.Evict()
	}
	v.Flush()
	for k := range n {
		got, ok := v.Get(k, k%3)
		if want := k%2 == 1; ok != want || (ok && got != int64(k)) {
			t.Fatalf("key %d: %d, %v", k, got, ok)
		}
		v.Evict()
	}
	kv.Gets = 0
	for k := n; k < 2*n; k++ {
		if _, ok := v.Get(k, k%3); ok {
			t.Fatalf("key %d was never written", k)
		}
	}
	if kv.Gets > n/20 {
		t.Fatalf("%d KV lookups of %d keys never written, want under 5%%", kv.Gets, n)
	}
}
