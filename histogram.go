package weir

import "github.com/weirstream/weir/internal/hist"

// Histogram is a distribution of durations in seconds (a record's
// lateness, a window's firing delay, a checkpoint's duration), for
// metrics: counts per bucket of HistogramBounds and their sum. It is a
// plain value, a copy taken by the call that returned it; the zero value
// is empty.
type Histogram struct {
	// Counts[i] counts the observations above HistogramBounds[i-1] and
	// at or below HistogramBounds[i]; the last one counts those above
	// every bound.
	Counts [13]uint64
	// Sum is the sum of the observations, in seconds.
	Sum float64
}

// HistogramBounds are the upper bounds in seconds of a Histogram's
// buckets, from a tenth of a second to an hour: 0.1, 0.5, 1, 5, 15, 30,
// 60, 120, 300, 600, 1800, 3600.
func HistogramBounds() [12]float64 { return hist.Bounds }

// Count is the number of observations.
func (h *Histogram) Count() uint64 { return (*hist.H)(h).Count() }

// Add adds o's observations to h.
func (h *Histogram) Add(o Histogram) { (*hist.H)(h).Add(hist.H(o)) }

// Sub takes o's observations out of h, where h is a later copy of the
// same histogram: what was observed in between. A count that would go
// below zero (h is not a later copy of o) becomes zero.
func (h *Histogram) Sub(o Histogram) { (*hist.H)(h).Sub(hist.H(o)) }

// Cumulative returns the count at or below each bound, as Prometheus
// histograms have them.
func (h *Histogram) Cumulative() map[float64]uint64 { return (*hist.H)(h).Cumulative() }

// Quantile estimates the q-quantile (0 < q <= 1) by linear interpolation
// within its bucket; it is 0 without observations, and the last bound
// when the quantile falls above every bound.
func (h *Histogram) Quantile(q float64) float64 { return (*hist.H)(h).Quantile(q) }
