package nexmark

import (
	"context"
	"testing"
)

func BenchmarkTmpQ12(b *testing.B) {
	q := Queries["q12"]
	in := benchInput(b)
	b.ResetTimer()
	b.ReportAllocs()
	for range b.N {
		if _, err := RunWeir(context.Background(), q, in, 1, false); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(in.Events)), "ns/event")
}
