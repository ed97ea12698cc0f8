package statetest

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/weirstream/weir/state"
)

// BenchKeys is the number of distinct keys Bench works over.
const BenchKeys = 1 << 20

// BenchKey returns the 16-byte key of index i in [0, BenchKeys): a key
// group of 128, then 14 bytes spread over the key space (a scrambled
// index), so consecutive indexes are far apart in key order.
func BenchKey(dst []byte, i int) []byte {
	h := uint64(i)*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	dst = state.AppendKeyGroup(dst, state.KeyGroup(h%state.DefaultMaxParallelism))
	dst = binary.BigEndian.AppendUint64(dst, h)
	dst = binary.BigEndian.AppendUint32(dst, uint32(i))
	return binary.BigEndian.AppendUint16(dst, uint16(i>>5))
}

// benchValue is a 32-byte value.
var benchValue = []byte("0123456789abcdef0123456789ABCDEF")

// Bench runs the KV benchmarks with 16-byte keys and 32-byte values over
// BenchKeys keys:
//
//   - set: Set of keys in scrambled order into an initially empty KV (past
//     BenchKeys operations the keys repeat: overwrites);
//   - get: Get of random existing keys of a KV holding BenchKeys keys;
//   - scan: Scan of 100 entries from a random existing key of that KV (the
//     ns/key metric is per entry).
//
// open returns a new, empty KV; Bench closes it.
func Bench(b *testing.B, open func(b *testing.B) state.KV) {
	b.Run("set", func(b *testing.B) {
		kv := open(b)
		defer closeKV(b, kv)
		key := make([]byte, 0, 16)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			key = BenchKey(key[:0], i%BenchKeys)
			if err := kv.Set(key, benchValue); err != nil {
				b.Fatal(err)
			}
		}
	})
	var full state.KV
	loaded := func(b *testing.B) state.KV {
		if full == nil {
			full = open(b)
			key := make([]byte, 0, 16)
			for i := range BenchKeys {
				key = BenchKey(key[:0], i)
				if err := full.Set(key, benchValue); err != nil {
					b.Fatal(err)
				}
			}
		}
		return full
	}
	defer func() {
		if full != nil {
			closeKV(b, full)
		}
	}()
	b.Run("get", func(b *testing.B) {
		kv := loaded(b)
		rng := rand.New(rand.NewPCG(1, 2))
		key := make([]byte, 0, 16)
		b.ReportAllocs()
		for b.Loop() {
			key = BenchKey(key[:0], rng.IntN(BenchKeys))
			if _, ok, err := kv.Get(key); err != nil || !ok {
				b.Fatalf("Get(%x) = %v, %v", key, ok, err)
			}
		}
	})
	b.Run("scan", func(b *testing.B) {
		kv := loaded(b)
		rng := rand.New(rand.NewPCG(3, 4))
		key := make([]byte, 0, 16)
		var n int64
		b.ReportAllocs()
		for b.Loop() {
			key = BenchKey(key[:0], rng.IntN(BenchKeys))
			seen := 0
			if err := kv.Scan(key, nil, func(k, v []byte) bool {
				seen++
				return seen < 100
			}); err != nil {
				b.Fatal(err)
			}
			n += int64(seen)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/key")
	})
}

func closeKV(b *testing.B, kv state.KV) {
	if err := kv.Close(); err != nil {
		b.Fatal(err)
	}
}
