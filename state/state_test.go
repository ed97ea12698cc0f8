package state_test

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/state/memstate"
)

type sum struct{}

func (sum) CreateAccumulator() int { return 0 }
func (sum) Add(a, v int) int       { return a + v }
func (sum) Merge(a, b int) int     { return a + b }
func (sum) Result(a int) int       { return a }

func TestValue(t *testing.T) {
	b := memstate.New()
	v := state.NewValue[string, int, string](b, "v")
	if _, ok := v.Get("a", 1); ok {
		t.Fatal("empty value found")
	}
	v.Put("a", 1, "x")
	v.Put("a", 2, "y")
	v.Put("b", 1, "z")
	if got, _ := v.Get("a", 1); got != "x" || v.Len() != 3 {
		t.Fatalf("Get = %q, Len = %d", got, v.Len())
	}
	*v.Ref("a", 1, false) = "x2"
	if got, _ := v.Get("a", 1); got != "x2" {
		t.Fatalf("Ref update lost: %q", got)
	}
	if v.Ref("c", 1, false) != nil {
		t.Fatal("Ref without create made an entry")
	}
	v.Delete("a", 1)
	v.Delete("a", 1)
	if _, ok := v.Get("a", 1); ok || v.Len() != 2 {
		t.Fatal("Delete")
	}
	// A recycled entry starts from the zero value.
	if p := v.Ref("d", 9, true); *p != "" {
		t.Fatalf("recycled entry not zeroed: %q", *p)
	}
	if b.Entries() != 3 {
		t.Fatalf("Entries = %d", b.Entries())
	}
}

// TestValueNamespaceChurn moves through many namespaces, as windows do, so
// the namespace cache and the recycled maps are exercised.
func TestValueNamespaceChurn(t *testing.T) {
	v := state.NewValue[int, int, int](memstate.New(), "v")
	for ns := range 100 {
		for k := range 20 {
			*v.Ref(k, ns, true) += ns
		}
		if ns >= 3 {
			for k := range 20 {
				if got, _ := v.Get(k, ns-3); got != ns-3 {
					t.Fatalf("ns %d key %d = %d", ns-3, k, got)
				}
				v.Delete(k, ns-3)
			}
		}
	}
	if v.Len() != 60 {
		t.Fatalf("Len = %d, want 60", v.Len())
	}
}

func TestListMapAggregating(t *testing.T) {
	b := memstate.New()
	l := state.NewList[string, int, int](b, "l")
	l.Add("a", 0, 1)
	l.Add("a", 0, 2)
	if got := l.Get("a", 0); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("list %v", got)
	}
	l.Put("a", 0, nil)
	if l.Len() != 0 {
		t.Fatal("empty Put keeps the list")
	}

	m := state.NewMap[string, int, string, int](b, "m")
	m.Put("a", 0, "x", 1)
	m.Put("a", 0, "y", 2)
	n := 0
	m.Range("a", 0, func(string, int) bool { n++; return true })
	if v, ok := m.Get("a", 0, "y"); !ok || v != 2 || n != 2 {
		t.Fatal("map")
	}
	m.Delete("a", 0, "x")
	m.Clear("a", 0)
	if m.Len() != 0 {
		t.Fatal("map Clear")
	}

	ag := state.NewAggregating[string, int, int, int, int](b, "s", sum{})
	ag.Add("a", 1, 3)
	ag.Add("a", 1, 4)
	ag.Add("a", 2, 10)
	ag.MergeNamespaces("a", 3, []int{1, 2})
	if got, _ := ag.Get("a", 3); got != 17 || ag.Len() != 1 {
		t.Fatalf("merged = %d, len %d", got, ag.Len())
	}
}

func TestKeyGroups(t *testing.T) {
	const maxPar = 128
	for _, par := range []int{1, 2, 3, 4, 7, 128} {
		seen := 0
		for i := range par {
			first, last := state.KeyGroupRange(i, maxPar, par)
			for kg := first; kg <= last; kg++ {
				if got := state.SubtaskOf(kg, maxPar, par); got != i {
					t.Fatalf("par %d: key group %d in range of %d but SubtaskOf = %d", par, kg, i, got)
				}
				seen++
			}
		}
		if seen != maxPar {
			t.Fatalf("par %d: ranges cover %d key groups", par, seen)
		}
	}
	h := state.NewHasher[string](nil)
	if h.Hash("order-42") != state.NewHasher[string](nil).Hash("order-42") {
		t.Fatal("hash not stable")
	}
}

// TestKeyedPairMatchesMaps drives NewKeyedPair's two handles with random
// operations on few keys (so slots empty, are reused and share keys) and
// compares every answer with plain maps.
func TestKeyedPairMatchesMaps(t *testing.T) {
	type ek struct{ k, n int }
	rng := rand.New(rand.NewPCG(1, 2))
	b := memstate.New()
	v, h := state.NewKeyedPair[int, int, int, struct{}, string](b, "v")
	want := map[ek]int{}
	heads := map[int]string{}
	for i := range 20000 {
		k, n := rng.IntN(6), rng.IntN(4)
		switch rng.IntN(8) {
		case 0:
			v.Put(k, n, i)
			want[ek{k, n}] = i
		case 1:
			if _, ok := want[ek{k, n}]; !ok {
				*v.Create(k, n) = i
				want[ek{k, n}] = i
			}
		case 2:
			if p := v.Ref(k, n, rng.IntN(2) == 0); p != nil {
				*p += 1
				want[ek{k, n}]++
			}
		case 3:
			v.Delete(k, n)
			delete(want, ek{k, n})
		case 4:
			*h.Ref(k, struct{}{}, true) += "x"
			heads[k] += "x"
		case 5:
			h.Delete(k, struct{}{})
			delete(heads, k)
		case 6:
			got, ok := v.Get(k, n)
			w, wok := want[ek{k, n}]
			if got != w || ok != wok {
				t.Fatalf("op %d: Get(%d, %d) = %d, %v; want %d, %v", i, k, n, got, ok, w, wok)
			}
		case 7:
			got, ok := h.Get(k, struct{}{})
			w, wok := heads[k]
			if got != w || ok != wok {
				t.Fatalf("op %d: head Get(%d) = %q, %v; want %q, %v", i, k, got, ok, w, wok)
			}
		}
		if v.Len() != len(want) || h.Len() != len(heads) || b.Entries() != len(want)+len(heads) {
			t.Fatalf("op %d: Len %d, %d, Entries %d; want %d, %d", i, v.Len(), h.Len(), b.Entries(), len(want), len(heads))
		}
	}
	got := map[ek]int{}
	v.Range(func(k, n int, p *int) bool { got[ek{k, n}] = *p; return true })
	gotHeads := map[int]string{}
	h.Range(func(k int, _ struct{}, p *string) bool { gotHeads[k] = *p; return true })
	if !maps.Equal(got, want) || !maps.Equal(gotHeads, heads) {
		t.Fatalf("Range: %v %v; want %v %v", got, gotHeads, want, heads)
	}
}

// TestHasherStable: a key's hash does not depend on the key hashed before
// it. Equal float keys may encode differently (0 and -0): a Hasher that
// remembered the last key would give -0 the hash of the 0 before it.
func TestHasherStable(t *testing.T) {
	enc := func(dst []byte, k float64) []byte { return strconv.AppendFloat(dst, k, 'g', -1, 64) }
	negZero := math.Copysign(0, -1)
	alone := state.NewHasher(enc).Hash(negZero)
	h := state.NewHasher(enc)
	h.Hash(0)
	if got := h.Hash(negZero); got != alone {
		t.Fatalf("hash of -0 after 0 = %x, alone %x", got, alone)
	}
	type day int64 // a named integer: hashed through its encoding, remembered
	dayEnc := func(dst []byte, k day) []byte { return strconv.AppendInt(dst, int64(k), 10) }
	hd := state.NewHasher(dayEnc)
	if a, b, c := hd.Hash(7), hd.Hash(7), state.NewHasher(dayEnc).Hash(7); a != b || a != c {
		t.Fatalf("hashes of day 7: %x %x %x", a, b, c)
	}
}
