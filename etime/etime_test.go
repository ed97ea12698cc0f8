package etime

import (
	"math"
	"testing"
	"time"
)

func TestAddSaturates(t *testing.T) {
	cases := []struct {
		t    Time
		d    Duration
		want Time
	}{
		{0, 5, 5},
		{MaxTime - 1, 1, MaxTime},
		{MaxTime - 1, 10, MaxTime},
		{999, Duration(math.MaxInt64), MaxTime},
		{MinTime + 1, -1, MinTime},
		{MinTime + 1, -10, MinTime},
		{-5, Duration(math.MinInt64), MinTime},
		{MaxTime, -1, MaxTime - 1},
	}
	for _, c := range cases {
		if got := c.t.Add(c.d); got != c.want {
			t.Errorf("%v.Add(%d) = %v, want %v", c.t, c.d, got, c.want)
		}
	}
}

func TestSubSaturates(t *testing.T) {
	if got := MaxTime.Sub(MinTime); got != Duration(math.MaxInt64) {
		t.Errorf("MaxTime-MinTime = %d", got)
	}
	if got := MinTime.Sub(MaxTime); got != Duration(math.MinInt64) {
		t.Errorf("MinTime-MaxTime = %d", got)
	}
	if got := Time(10).Sub(3); got != 7 {
		t.Errorf("10-3 = %d", got)
	}
}

func TestStringAndConversions(t *testing.T) {
	if MinTime.String() != "-inf" || MaxTime.String() != "+inf" || Time(-3).String() != "-3" {
		t.Fatal("String")
	}
	if FromDuration(1500*time.Microsecond) != 1 || Duration(2).Std() != 2*time.Millisecond {
		t.Fatal("durations")
	}
	if Duration(math.MaxInt64).Std() != time.Duration(math.MaxInt64) {
		t.Fatal("Std saturates")
	}
	w := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if FromTime(w).Wall() != w {
		t.Fatal("wall round trip")
	}
}
