package spec

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/window"
)

// TestJoinRangeWindows: the windows a record at t meets (W19) are
// exactly those of the assigner whose bound plus the range holds t, for
// tumbling and sliding windows (sizes that are and are not whole numbers
// of slides), offsets, negative times and each bound; found by brute
// force over the windows the assigner gives the times around t.
func TestJoinRangeWindows(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for range 5000 {
		var a window.Assigner
		var err error
		slide := etime.Duration(1 + rng.IntN(7))
		size := slide * etime.Duration(1+rng.IntN(3))
		if rng.IntN(2) == 0 {
			size += etime.Duration(rng.IntN(int(slide))) // not a whole number of slides
		}
		off := etime.Duration(rng.IntN(int(slide)))
		if rng.IntN(2) == 0 {
			a, err = window.Tumbling(size, off%size)
		} else {
			a, err = window.Sliding(size, slide, off)
		}
		if err != nil {
			t.Fatal(err)
		}
		r := &JoinRange{Bound: []string{ColWindowStart, ColWindowEnd, ColWindowTime}[rng.IntN(3)]}
		r.Lo = etime.Duration(rng.IntN(30) - 20)
		r.Hi = r.Lo + etime.Duration(rng.IntN(25))
		ts := etime.Time(rng.IntN(200) - 100)
		var got []window.Window
		r.Windows(a, ts, func(w window.Window) { got = append(got, w) })
		var want []window.Window
		for u := ts - 200; u <= ts+200; u++ {
			ws, _ := a.AssignWindows(u, nil)
			for _, w := range ws {
				b := map[string]etime.Time{ColWindowStart: w.Start, ColWindowEnd: w.End, ColWindowTime: w.MaxTimestamp()}[r.Bound]
				if b.Add(r.Lo) <= ts && ts <= b.Add(r.Hi) && !slices.Contains(want, w) {
					want = append(want, w)
				}
			}
		}
		slices.SortFunc(want, func(x, y window.Window) int { return int(x.Start - y.Start) })
		if !slices.Equal(got, want) {
			t.Fatalf("%v, %s %+v, t=%d: got %v, want %v", a, r.Bound, r, ts, got, want)
		}
	}
}
