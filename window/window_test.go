package window

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/weirstream/weir/etime"
)

func TestStartA2(t *testing.T) {
	cases := []struct {
		ts           etime.Time
		offset, size etime.Duration
		want         etime.Time
	}{
		{-1, 0, 1000, -1000}, {-1000, 0, 1000, -1000}, {-1001, 0, 1000, -2000},
		{250, 300, 1000, -700}, {300, 300, 1000, 300}, {0, 0, 1000, 0}, {999, 0, 1000, 0},
		{5, -300, 1000, -300}, {etime.MinTime + 1, 0, 1000, etime.MinTime},
	}
	for _, c := range cases {
		if got := Start(c.ts, c.offset, c.size); got != c.want {
			t.Errorf("Start(%d, %d, %d) = %d, want %d", c.ts, c.offset, c.size, got, c.want)
		}
	}
	// Against the Java formula wherever it cannot overflow.
	for ts := etime.Time(-5000); ts <= 5000; ts += 7 {
		for _, off := range []etime.Duration{-999, -300, 0, 1, 300, 999} {
			r := (int64(ts) - int64(off)) % 1000
			want := ts - etime.Time(r)
			if r < 0 {
				want = ts - etime.Time(r+1000)
			}
			if got := Start(ts, off, 1000); got != want {
				t.Fatalf("Start(%d, %d, 1000) = %d, want %d", ts, off, got, want)
			}
		}
	}
}

func TestSlidingDescending(t *testing.T) {
	a, err := Sliding(3000, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := a.AssignWindows(2500, nil)
	want := []Window{{2000, 5000}, {1000, 4000}, {0, 3000}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

func TestConstructorsRefuse(t *testing.T) {
	if _, err := Tumbling(0, 0); err == nil {
		t.Error("size 0 accepted")
	}
	if _, err := Tumbling(1000, 1000); err == nil {
		t.Error("|offset| >= size accepted")
	}
	if _, err := Tumbling(1000, -1000); err == nil {
		t.Error("|offset| >= size accepted")
	}
	if _, err := Sliding(1000, 0, 0); err == nil {
		t.Error("slide 0 accepted")
	}
	if _, err := Sliding(100_000_000, 1, 0); err == nil {
		t.Error("size/slide > 1e7 accepted")
	}
	if _, err := Session(0); err == nil {
		t.Error("gap 0 accepted")
	}
	if _, err := (tumbling{size: 10}).AssignWindows(etime.MinTime, nil); err != ErrNoTimestamp {
		t.Error("MIN timestamp accepted (A5)")
	}
}

func TestSlidingAtTheEnds(t *testing.T) {
	a, _ := Sliding(3000, 1000, 0)
	got, _ := a.AssignWindows(etime.MinTime+1, nil)
	if len(got) != 3 {
		t.Fatalf("near MIN: %v", got)
	}
	for _, w := range got {
		if w.Start != etime.MinTime || w.End <= etime.MinTime+1 {
			t.Fatalf("near MIN: %v does not hold the record", got)
		}
	}
	got, _ = a.AssignWindows(etime.MaxTime-1, nil)
	if len(got) != 3 || got[0].End != etime.MaxTime {
		t.Fatalf("near MAX: %v", got)
	}
}

// TestFloorModMatchesTheFourDivisionForm checks the two-division floorMod
// against the plain formula over edge and random values.
func TestFloorModMatchesTheFourDivisionForm(t *testing.T) {
	ref := func(ts etime.Time, offset, size etime.Duration) etime.Duration {
		sz := int64(size)
		return etime.Duration(((int64(ts)%sz-int64(offset)%sz)%sz + sz) % sz)
	}
	r := rand.New(rand.NewPCG(1, 2))
	edges := []int64{math.MinInt64, math.MinInt64 + 1, -1, 0, 1, math.MaxInt64 - 1, math.MaxInt64}
	sizes := []int64{1, 2, 3, 7, 1000, 3_600_000, int64(MaxSize) - 1, int64(MaxSize)}
	for range 200_000 {
		size := sizes[r.IntN(len(sizes))]
		if r.IntN(2) == 0 {
			size = 1 + r.Int64N(int64(MaxSize))
		}
		ts := r.Int64()
		if r.IntN(4) == 0 {
			ts = edges[r.IntN(len(edges))]
		}
		offset := int64(0)
		switch r.IntN(4) {
		case 3:
			offset = r.Int64()
		case 1:
			offset = r.Int64N(size)
		case 2:
			offset = -r.Int64N(size)
		}
		got, want := floorMod(etime.Time(ts), etime.Duration(offset), etime.Duration(size)), ref(etime.Time(ts), etime.Duration(offset), etime.Duration(size))
		if got != want {
			t.Fatalf("floorMod(%d, %d, %d) = %d, want %d", ts, offset, size, got, want)
		}
	}
}

// TestCumulate: cumulating windows (W15) share their period's start and
// end one step apart, ascending; a record belongs to those that end past
// it; offsets shift the period; the constructor refuses sizes that are
// not whole steps.
func TestCumulate(t *testing.T) {
	a, err := Cumulate(3000, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ts   etime.Time
		want []Window
	}{
		{0, []Window{{0, 1000}, {0, 2000}, {0, 3000}}},
		{999, []Window{{0, 1000}, {0, 2000}, {0, 3000}}},
		{1000, []Window{{0, 2000}, {0, 3000}}},
		{2999, []Window{{0, 3000}}},
		{3000, []Window{{3000, 4000}, {3000, 5000}, {3000, 6000}}},
		{-1, []Window{{-3000, 0}}},
		{-2001, []Window{{-3000, -2000}, {-3000, -1000}, {-3000, 0}}},
		{-2000, []Window{{-3000, -1000}, {-3000, 0}}},
	} {
		got, err := a.AssignWindows(c.ts, nil)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ts %d: %v %v, want %v", c.ts, got, err, c.want)
		}
	}
	off, _ := Cumulate(3000, 1000, 500)
	if got, _ := off.AssignWindows(-600, nil); !slices.Equal(got, []Window{{-2500, -500}, {-2500, 500}}) {
		t.Errorf("offset 500, ts -600: %v", got)
	}
	if got, _ := a.AssignWindows(etime.MaxTime-1, nil); len(got) == 0 || got[len(got)-1].End != etime.MaxTime {
		t.Errorf("near MAX: %v", got)
	}
	for _, bad := range [][3]etime.Duration{{3000, 0, 0}, {3000, 2000, 0}, {3000, 4000, 0}, {3000, 1000, 3000}, {0, 1000, 0}} {
		if _, err := Cumulate(bad[0], bad[1], bad[2]); err == nil {
			t.Errorf("Cumulate%v accepted", bad)
		}
	}
	if a.Kind() != KindCumulate || a.Merging() || !a.IsEventTime() || a.String() != "cumulate(3000,1000)" {
		t.Errorf("%v: kind %v", a, a.Kind())
	}
}

// TestAttached: a window attached to another's windows (W18) gives the
// result of each of their windows, at its rowtime (end - 1), exactly
// that window, for tumbling, sliding and cumulate windows with offsets
// and negative times; sessions, the global window and processing time
// are refused.
func TestAttached(t *testing.T) {
	tu, _ := Tumbling(3000, 500)
	sl, _ := Sliding(10_000, 2000, 300)
	cu, _ := Cumulate(3000, 1000, 500)
	odd, _ := Sliding(10_000, 3000, 0) // a size that is no whole number of slides
	for _, up := range []Assigner{tu, sl, cu, odd} {
		a, err := Attached(up)
		if err != nil {
			t.Fatal(err)
		}
		for ts := etime.Time(-20_000); ts < 20_000; ts += 137 {
			ws, _ := up.AssignWindows(ts, nil)
			for _, w := range ws {
				got, err := a.AssignWindows(w.MaxTimestamp(), nil)
				if err != nil || !slices.Equal(got, []Window{w}) {
					t.Fatalf("%v: the result of %v (ts %d) is in %v %v", a, w, ts, got, err)
				}
			}
		}
		if a.Kind() != KindAttached || a.Merging() || !a.IsEventTime() || a.ProcessingTime() || a.String() != "attached("+up.String()+")" {
			t.Errorf("%v: kind %v", a, a.Kind())
		}
		if _, err := a.AssignWindows(etime.MinTime, nil); err != ErrNoTimestamp {
			t.Errorf("%v at MIN: %v", a, err)
		}
	}
	se, _ := Session(1000)
	tp, _ := TumblingProcessing(1000, 0)
	for _, up := range []Assigner{se, tp, GlobalWindows()} {
		if _, err := Attached(up); err == nil {
			t.Errorf("Attached(%v) accepted", up)
		}
	}
}
