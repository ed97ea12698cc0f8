package fileio

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/connectortest"
)

// TestConformance runs the source conformance suite on a file of 5000
// JSON lines.
func TestConformance(t *testing.T) {
	var b strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&b, `{"i":%d,"ts":%d}`+"\n", i, 1767225600000+i)
	}
	path := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	connectortest.Run(t, connectortest.Source[Line]{
		New: func(t testing.TB) weir.Source[Line] {
			src, err := New(Options{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			return src
		},
		Records: 5000,
		ID:      func(l Line) string { return fmt.Sprint(l.No) },
	})
}
