package monitor

import (
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/hist"
)

// TestPointFiringDelayPerInterval: a history point's firing-delay
// quantiles are over the firings since the previous point, so the
// minutes-late firings of a job's start do not weigh on later points;
// an interval without firings has 0.
func TestPointFiringDelayPerInterval(t *testing.T) {
	snap := func(now int64, delays ...float64) *Snapshot {
		var h hist.H
		for _, d := range delays {
			h.Observe(d)
		}
		return &Snapshot{Now: now, Operators: []Operator{{Name: "window", Window: &WindowOut{firingDelay: weir.Histogram(h)}}}}
	}
	start := []float64{300, 300, 300, 300}
	s0 := snap(0, start...)
	s1 := snap(10_000, append(start, 0.3, 0.3, 0.4)...)
	s2 := snap(20_000, append(start, 0.3, 0.3, 0.4)...)
	if p := point(s0, nil, 0); p.Ops["window"].FiringDelayP99S < 120 {
		t.Fatalf("the first point: p99 %v, want the start's minutes", p.Ops["window"].FiringDelayP99S)
	}
	if p := point(s1, s0, 10*time.Second); p.Ops["window"].FiringDelayP99S > 0.5 {
		t.Fatalf("the second point: p99 %v, want its own interval's 0.5s at most", p.Ops["window"].FiringDelayP99S)
	}
	if p := point(s2, s1, 10*time.Second); p.Ops["window"].FiringDelayP99S != 0 {
		t.Fatalf("an interval without firings: p99 %v, want 0", p.Ops["window"].FiringDelayP99S)
	}
}
