package nexmark

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/weirstream/weir/state/pebblestate"
)

var (
	benchOnce   sync.Once
	benchEvents []Event
)

// benchInput is WEIR_BENCH_EVENTS (default 1,000,000) pre-generated
// events, as weir bench nexmark makes them.
func benchInput(b *testing.B) Input {
	benchOnce.Do(func() {
		n := 1_000_000
		if s := os.Getenv("WEIR_BENCH_EVENTS"); s != "" {
			n, _ = strconv.Atoi(s)
		}
		c := DefaultConfig()
		c.OutOfOrderGroupSize = 1000
		c.NoExtra = true
		benchEvents, _ = Generate(c, n)
	})
	return Input{Events: benchEvents}
}

// BenchmarkNexmark runs each query on weir and as the hand loop; ns/op is
// per event:
//
//	go test -run x -bench Nexmark -benchtime 3x ./nexmark/
func BenchmarkNexmark(b *testing.B) {
	for _, name := range QueryNames() {
		q := Queries[name]
		if q.Linger {
			continue // waits for processing time
		}
		b.Run(name+"/weir", func(b *testing.B) {
			in := benchInput(b)
			b.ReportAllocs()
			for range b.N {
				if _, err := RunWeir(context.Background(), q, in, 1, false); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(in.Events)), "ns/event")
		})
		b.Run(name+"/hand", func(b *testing.B) {
			in := benchInput(b)
			for range b.N {
				RunHand(q, in, false)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(in.Events)), "ns/event")
		})
	}
}

// BenchmarkNexmarkPebble runs the stateful queries on weir with their
// keyed state in Pebble (weir bench nexmark --state pebble); ns/op is per
// event:
//
//	go test -run x -bench NexmarkPebble -benchtime 1x ./nexmark/
func BenchmarkNexmarkPebble(b *testing.B) {
	for _, name := range []string{"q5", "q11"} {
		b.Run(name, func(b *testing.B) {
			in := benchInput(b)
			for range b.N {
				in.NewBackend = pebblestate.Backends(b.TempDir(), 100_000)
				if _, err := RunWeir(context.Background(), Queries[name], in, 1, false); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(in.Events)), "ns/event")
		})
	}
}
