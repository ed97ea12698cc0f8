package genio

import (
	"fmt"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/connectortest"
	"github.com/weirstream/weir/connector/fileio"
)

// TestConformance runs the source conformance suite on 5000 generated
// orders.
func TestConformance(t *testing.T) {
	connectortest.Run(t, connectortest.Source[fileio.Line]{
		New: func(t testing.TB) weir.Source[fileio.Line] {
			src, err := New(Options{Records: 5000, Rate: 1000, Keys: 10, Start: 1767225600000, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			return src
		},
		Records: 5000,
		ID:      func(l fileio.Line) string { return fmt.Sprint(l.No, string(l.Text)) },
	})
}
