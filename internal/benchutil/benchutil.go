// Package benchutil holds what weir's benchmarks share: the benchmark
// event stream and the hand-written loops that compute the same windowed
// sums without the engine (the practical limit on the machine).
package benchutil

import (
	"math/rand/v2"
	"slices"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/window"
)

// Keys is the number of distinct keys in the stream.
const Keys = 10_000

// Bound is the out-of-orderness bound of the benchmark watermarks, and
// WatermarkEvery is how many events pass between two watermarks in the
// operator benchmark and the hand loop.
const (
	Bound          = 500
	WatermarkEvery = 1000
)

// Event is one benchmark event.
type Event struct {
	Key uint64
	TS  etime.Time
	V   int64
}

// Events returns n events over Keys keys, ten per millisecond of event time
// (each key about once a second), with up to 200 ms of disorder. The stream
// is the same for every call.
func Events(n int) []Event {
	r := rand.New(rand.NewPCG(1, 2))
	ev := make([]Event, n)
	for i := range ev {
		ev[i] = Event{Key: r.Uint64N(Keys), TS: etime.Time(i/10 - r.IntN(200)), V: 1}
	}
	return ev
}

// HandWindows sums V per key in tumbling (slide == size) or sliding
// windows with a map of window start to a map of key to sum, firing the
// windows the watermark (max timestamp - Bound - 1, every WatermarkEvery
// events) has passed, and the rest at the end. It returns the number of
// results.
func HandWindows(events []Event, size, slide etime.Duration) int {
	wins := map[etime.Time]map[uint64]int64{}
	var starts []etime.Time
	results := 0
	maxTs := etime.MinTime
	for i, e := range events {
		for s := window.Start(e.TS, 0, slide); s > e.TS-etime.Time(size); s -= etime.Time(slide) {
			m := wins[s]
			if m == nil {
				m = make(map[uint64]int64)
				wins[s] = m
				starts = append(starts, s)
			}
			m[e.Key] += e.V
		}
		maxTs = max(maxTs, e.TS)
		if i%WatermarkEvery == WatermarkEvery-1 {
			wm := maxTs - Bound - 1
			slices.Sort(starts)
			k := 0
			for _, s := range starts {
				if s+etime.Time(size)-1 > wm {
					break
				}
				results += len(wins[s])
				delete(wins, s)
				k++
			}
			starts = starts[k:]
		}
	}
	for _, m := range wins {
		results += len(m)
	}
	return results
}

// HandSessions sums V per key in session windows of gap, merging each
// event's proto-window with the key's open sessions; it returns the number
// of sessions.
func HandSessions(events []Event, gap etime.Duration) int {
	type sess struct {
		start, end etime.Time
		sum        int64
	}
	open := map[uint64][]sess{}
	for _, e := range events {
		w := sess{e.TS, e.TS.Add(gap), e.V}
		ss := open[e.Key][:0:0]
		for _, s := range open[e.Key] {
			if s.start <= w.end && s.end >= w.start {
				w = sess{min(w.start, s.start), max(w.end, s.end), w.sum + s.sum}
			} else {
				ss = append(ss, s)
			}
		}
		open[e.Key] = append(ss, w)
	}
	n := 0
	for _, ss := range open {
		n += len(ss)
	}
	return n
}

// Sum is the benchmark aggregate, the sum of V, for the window operator's
// own benchmark (which cannot import the root package's weir.Sum).
type Sum struct{}

// CreateAccumulator implements the aggregate function.
func (Sum) CreateAccumulator() int64 { return 0 }

// Add implements the aggregate function.
func (Sum) Add(a int64, e Event) int64 { return a + e.V }

// Merge implements the aggregate function.
func (Sum) Merge(a, b int64) int64 { return a + b }

// Result implements the aggregate function.
func (Sum) Result(a int64) int64 { return a }

// SkewedEvents is Events with a hot key: each event is key 0's with
// probability hot, and the others spread evenly over Keys keys (key 0
// among them). The stream is the same for every call.
func SkewedEvents(n int, hot float64) []Event {
	ev := Events(n)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range ev {
		if r.Float64() < hot {
			ev[i].Key = 0
		}
	}
	return ev
}
