package hist

import (
	"math"
	"testing"
)

func TestHist(t *testing.T) {
	var h H
	for _, v := range []float64{0.05, 0.1, 0.3, 2, 2, 7000} {
		h.Observe(v)
	}
	if h.Count() != 6 || math.Abs(h.Sum-7004.45) > 1e-9 {
		t.Fatalf("count %d sum %v", h.Count(), h.Sum)
	}
	c := h.Cumulative()
	if c[0.1] != 2 || c[0.5] != 3 || c[1] != 3 || c[5] != 5 || c[3600] != 5 {
		t.Fatalf("cumulative %v", c)
	}
	var g H
	g.Add(h)
	g.Add(h)
	if g.Count() != 12 || g.Counts[0] != 4 {
		t.Fatalf("added %+v", g)
	}
	// The median (rank 3 of 6) is the third observation's bucket (0.1, 0.5].
	if q := h.Quantile(0.5); q <= 0.1 || q > 0.5 {
		t.Fatalf("median %v", q)
	}
	if q := h.Quantile(1); q != 3600 {
		t.Fatalf("max %v, want the last bound", q)
	}
	var empty H
	if empty.Quantile(0.99) != 0 {
		t.Fatal("empty quantile")
	}
}
