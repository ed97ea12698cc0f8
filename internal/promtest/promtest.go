// Package promtest reads metrics back from a registry, for tests.
package promtest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Value is the value of the first series of metric name (a counter's or
// a gauge's) that g gathers, and false when g has none.
func Value(t testing.TB, g prometheus.Gatherer, name string) (float64, bool) {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name || len(mf.GetMetric()) == 0 {
			continue
		}
		m := mf.GetMetric()[0]
		if c := m.GetCounter(); c != nil {
			return c.GetValue(), true
		}
		return m.GetGauge().GetValue(), true
	}
	return 0, false
}
