// Package etime is weir's event-time axis: signed 64-bit milliseconds with
// saturating arithmetic.
//
// Engine code never uses a bare int64 for a point in event time. MinTime means
// "no timestamp assigned" (and is the initial watermark), MaxTime is the final
// watermark that flushes every window at end of input. Arithmetic saturates at
// both ends instead of wrapping, so a lateness of MaxInt64 ms is legal and
// means "never clean up" (semantics B3).
package etime

import (
	"math"
	"strconv"
	"time"
)

// Time is a point in event or processing time, in milliseconds since the Unix
// epoch. The zero value is the epoch.
type Time int64

// Duration is a span on the event-time axis in milliseconds.
type Duration int64

const (
	// MinTime is the smallest time: "no timestamp" and the initial watermark.
	MinTime Time = math.MinInt64
	// MaxTime is the largest time: the final watermark at end of input.
	MaxTime Time = math.MaxInt64
)

// Add returns t+d, saturating to MinTime or MaxTime instead of overflowing.
func (t Time) Add(d Duration) Time {
	s := t + Time(d)
	if d > 0 && s < t {
		return MaxTime
	}
	if d < 0 && s > t {
		return MinTime
	}
	return s
}

// Sub returns t-u as a Duration, saturating at the int64 range.
func (t Time) Sub(u Time) Duration {
	d := Duration(t - u)
	if u < 0 && Time(d) < t {
		return Duration(math.MaxInt64)
	}
	if u > 0 && Time(d) > t {
		return Duration(math.MinInt64)
	}
	return d
}

// String prints the time as an integer, with -inf and +inf for the extremes.
func (t Time) String() string {
	switch t {
	case MinTime:
		return "-inf"
	case MaxTime:
		return "+inf"
	}
	return strconv.FormatInt(int64(t), 10)
}

// FromTime converts a wall-clock time to milliseconds since the epoch.
func FromTime(wall time.Time) Time { return Time(wall.UnixMilli()) }

// Wall converts t back to a wall-clock time in UTC.
func (t Time) Wall() time.Time { return time.UnixMilli(int64(t)).UTC() }

// FromDuration converts a time.Duration to a millisecond Duration,
// truncating sub-millisecond parts.
func FromDuration(d time.Duration) Duration { return Duration(d / time.Millisecond) }

// Std converts d to a time.Duration, saturating.
func (d Duration) Std() time.Duration {
	if d > Duration(math.MaxInt64/int64(time.Millisecond)) {
		return time.Duration(math.MaxInt64)
	}
	if d < Duration(math.MinInt64/int64(time.Millisecond)) {
		return time.Duration(math.MinInt64)
	}
	return time.Duration(d) * time.Millisecond
}

// Min returns the smaller of a and b.
func Min(a, b Time) Time {
	if a < b {
		return a
	}
	return b
}

// Max returns the larger of a and b.
func Max(a, b Time) Time {
	if a > b {
		return a
	}
	return b
}
