package memstate

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/weirstream/weir/state"
)

// TestKVValueMatchesHeap drives the KV-backed Value (with a tiny cache, so
// entries are evicted and reloaded all the time), the heap Value and the
// key-major heap Value with the same random operations: every observation
// agrees.
func TestKVValueMatchesHeap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		heap := state.NewValue[string, int, int64](New(), "v")
		keyed := state.NewKeyedValue[string, int, int64](New(), "v")
		kv := state.NewKVValue[string, int, int64](NewKV(), 7, state.CodecFor[string](), state.CodecFor[int](), state.CodecFor[int64](),
			func(k string) state.KeyGroup { return state.KeyGroup(len(k) % 5) }, rapid.IntRange(1, 6).Draw(t, "cache"))
		keys := []string{"a", "bb", "ccc", "dddd", "", "ff"}
		for i := range rapid.IntRange(1, 200).Draw(t, "ops") {
			k := rapid.SampledFrom(keys).Draw(t, "k")
			n := rapid.IntRange(-2, 3).Draw(t, "n")
			switch op := rapid.IntRange(0, 6).Draw(t, "op"); op {
			case 0:
				v := rapid.Int64().Draw(t, "v")
				heap.Put(k, n, v)
				kv.Put(k, n, v)
				keyed.Put(k, n, v)
			case 1:
				d := rapid.Int64Range(-5, 5).Draw(t, "d")
				create := rapid.Bool().Draw(t, "create")
				var ph, pk, py *int64
				if _, exists := heap.Get(k, n); create && !exists && rapid.Bool().Draw(t, "new") {
					ph, pk, py = heap.Create(k, n), kv.Create(k, n), keyed.Create(k, n)
				} else {
					ph, pk, py = heap.Ref(k, n, create), kv.Ref(k, n, create), keyed.Ref(k, n, create)
				}
				if (ph == nil) != (pk == nil) || (ph == nil) != (py == nil) {
					t.Fatalf("op %d: Ref(%q, %d, %v): heap %v kv %v keyed %v", i, k, n, create, ph != nil, pk != nil, py != nil)
				}
				if ph != nil {
					*ph += d
					*pk += d
					*py += d
				}
			case 2:
				heap.Delete(k, n)
				kv.Delete(k, n)
				keyed.Delete(k, n)
			case 3:
				vh, okh := heap.Get(k, n)
				vk, okk := kv.Get(k, n)
				vy, oky := keyed.Get(k, n)
				if vh != vk || okh != okk || vh != vy || okh != oky {
					t.Fatalf("op %d: Get(%q, %d): heap %d,%v kv %d,%v keyed %d,%v", i, k, n, vh, okh, vk, okk, vy, oky)
				}
			case 4:
				kv.Evict()
			case 5:
				kv.Flush()
			case 6:
				if a, b, c := dump(heap), dump(kv), dump(keyed); !slices.Equal(a, b) || !slices.Equal(a, c) {
					t.Fatalf("op %d: Range: heap %v kv %v keyed %v", i, a, b, c)
				}
			}
			if heap.Len() != kv.Len() || heap.Len() != keyed.Len() {
				t.Fatalf("op %d: Len: heap %d kv %d keyed %d", i, heap.Len(), kv.Len(), keyed.Len())
			}
		}
		if a, b, c := dump(heap), dump(kv), dump(keyed); !slices.Equal(a, b) || !slices.Equal(a, c) {
			t.Fatalf("end: heap %v kv %v keyed %v", a, b, c)
		}
	})
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

// countingKV counts a KV's Gets.
type countingKV struct {
	state.KV
	gets int
}

func (c *countingKV) Get(k []byte) ([]byte, bool, error) {
	c.gets++
	return c.KV.Get(k)
}

// TestKVValueRemembersAbsent: an entry looked up and not found is not
// looked up in the KV again (a sliding window's firing asks for every
// pane of the window, most of which a key never had), until it is made.
func TestKVValueRemembersAbsent(t *testing.T) {
	kv := &countingKV{KV: NewKV()}
	v := state.NewKVValue[string, int, int64](kv, 7, state.CodecFor[string](), state.CodecFor[int](), state.CodecFor[int64](),
		func(string) state.KeyGroup { return 0 }, 100)
	for range 3 {
		if p := v.Ref("a", 1, false); p != nil {
			t.Fatal("Ref of an absent entry")
		}
		if _, ok := v.Get("a", 1); ok {
			t.Fatal("Get of an absent entry")
		}
		v.Delete("a", 1)
	}
	if kv.gets != 1 || v.Len() != 0 {
		t.Fatalf("%d KV lookups of one absent entry, want 1; Len %d", kv.gets, v.Len())
	}
	*v.Ref("a", 1, true) = 5
	if got, ok := v.Get("a", 1); !ok || got != 5 || v.Len() != 1 || kv.gets != 1 {
		t.Fatalf("after Ref(create): %d, %v, Len %d, %d lookups", got, ok, v.Len(), kv.gets)
	}
}
