// Package hist is a fixed-bucket histogram of durations in seconds for
// metrics: a plain value its owner goroutine observes into without
// locks or allocation, published by copy and added up by readers.
package hist

// Bounds are the buckets' upper bounds in seconds: from a tenth of a
// second to an hour, covering out-of-orderness bounds of seconds up to
// allowed lateness of an hour.
var Bounds = [...]float64{0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600}

// H counts observations per bucket (the last one is above every bound)
// and their sum. The zero value is empty.
type H struct {
	Counts [len(Bounds) + 1]uint64
	Sum    float64
}

// Observe adds one observation of sec seconds.
func (h *H) Observe(sec float64) {
	i := 0
	for i < len(Bounds) && sec > Bounds[i] {
		i++
	}
	h.Counts[i]++
	h.Sum += sec
}

// Add adds o's observations to h.
func (h *H) Add(o H) {
	for i, c := range o.Counts {
		h.Counts[i] += c
	}
	h.Sum += o.Sum
}

// Sub takes o's observations out of h, where h has them all (h is a
// later copy of o's histogram): what was observed in between. A count
// that would go below zero (h is not a later copy) becomes zero.
func (h *H) Sub(o H) {
	for i, c := range o.Counts {
		h.Counts[i] -= min(c, h.Counts[i])
	}
	h.Sum = max(h.Sum-o.Sum, 0)
}

// Count is the number of observations.
func (h *H) Count() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// Cumulative returns the count at or below each bound, as Prometheus
// histograms have them.
func (h *H) Cumulative() map[float64]uint64 {
	m := make(map[float64]uint64, len(Bounds))
	var n uint64
	for i, b := range Bounds {
		n += h.Counts[i]
		m[b] = n
	}
	return m
}

// Quantile estimates the q-quantile (0 < q <= 1) by linear interpolation
// within its bucket; it is 0 without observations, and the last bound
// when the quantile falls above every bound.
func (h *H) Quantile(q float64) float64 {
	total := h.Count()
	if total == 0 {
		return 0
	}
	rank := q * float64(total)
	var seen float64
	lo := 0.0
	for i, b := range Bounds {
		c := float64(h.Counts[i])
		if seen+c >= rank && c > 0 {
			return lo + (b-lo)*(rank-seen)/c
		}
		seen += c
		lo = b
	}
	return Bounds[len(Bounds)-1]
}
