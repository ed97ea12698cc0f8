package cli

import (
	"context"
	"testing"

	"github.com/weirstream/weir/internal/benchutil"
)

// BenchmarkSkew times weir bench skew's job (2,000,000 events, a third on
// one key, parallelism 2) with and without two-phase aggregation.
func BenchmarkSkew(b *testing.B) {
	evs := benchutil.SkewedEvents(2_000_000, 1.0/3)
	for _, c := range []struct {
		name     string
		twoPhase bool
	}{{"one-phase", false}, {"two-phase", true}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, _, err := runSkew(context.Background(), evs, 2, c.twoPhase); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(evs))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
