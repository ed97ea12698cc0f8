package nexmark

import (
	"cmp"
	"slices"

	"github.com/weirstream/weir/etime"
)

// Row is one output row of a query. Which fields a query uses is in its
// description (Queries); unused fields are zero.
type Row struct {
	Start, End etime.Time // the window, for windowed queries
	A, B, C    int64
	S          string
}

func compareRows(x, y Row) int {
	return cmp.Or(cmp.Compare(x.Start, y.Start), cmp.Compare(x.End, y.End), cmp.Compare(x.A, y.A),
		cmp.Compare(x.B, y.B), cmp.Compare(x.C, y.C), cmp.Compare(x.S, y.S))
}

// SortRows sorts rows into a canonical order, for comparing row sets.
func SortRows(rows []Row) { slices.SortFunc(rows, compareRows) }

// Digest is an order-independent fingerprint of a multiset of rows: their
// number and two sums of a 64-bit hash of each, so that the rows of a
// parallel run compare with a sequential run's without being kept.
type Digest struct {
	N        int64
	Sum, Mix uint64
}

// Add adds a row.
func (d *Digest) Add(r *Row) {
	h := mix64(uint64(r.Start)) ^ mix64(uint64(r.End)+0x9e3779b97f4a7c15)
	h = mix64(h ^ uint64(r.A))
	h = mix64(h ^ uint64(r.B))
	h = mix64(h ^ uint64(r.C))
	for i := 0; i < len(r.S); i++ { // FNV-1a: the same in every process
		h = (h ^ uint64(r.S[i])) * 0x100000001b3
	}
	h = mix64(h)
	d.N++
	d.Sum += h
	d.Mix += mix64(h + 0x632be59bd9b4e019)
}

// Merge adds the rows of o.
func (d *Digest) Merge(o Digest) {
	d.N += o.N
	d.Sum += o.Sum
	d.Mix += o.Mix
}

// mix64 is the finalizer of SplitMix64.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
