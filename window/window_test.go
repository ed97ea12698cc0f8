package window

import (
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
