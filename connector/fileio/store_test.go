package fileio

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCutTornTail(t *testing.T) {
	for _, c := range []struct{ in, want string }{{"a\nb\n", "a\nb\n"}, {"a\nb\npart", "a\nb\n"}, {"part", ""}, {"", ""}} {
		path := filepath.Join(t.TempDir(), "f")
		if err := os.WriteFile(path, []byte(c.in), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := cutTornTail(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if b, _ := os.ReadFile(path); string(b) != c.want {
			t.Errorf("%q: %q, want %q", c.in, b, c.want)
		}
	}
}
