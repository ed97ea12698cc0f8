package admin

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"strings"
	"testing"
)

// TestVendoredFiles: the embedded uPlot files are the ones npm served
// (static/vendor/SHA256SUMS), and the page loads only files that exist.
func TestVendoredFiles(t *testing.T) {
	sums, err := fs.ReadFile(static, "static/vendor/SHA256SUMS")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	sc := bufio.NewScanner(strings.NewReader(string(sums)))
	for sc.Scan() {
		want, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("bad line %q", sc.Text())
		}
		b, err := fs.ReadFile(static, "static/vendor/"+name)
		if err != nil {
			t.Fatal(err)
		}
		got := sha256.Sum256(b)
		if hex.EncodeToString(got[:]) != want {
			t.Errorf("%s changed: sha256 %x, want %s", name, got, want)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("%d vendored files checked, want 2", n)
	}
	page, err := fs.ReadFile(static, "static/index.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"vendor/uPlot.min.css", "app.css", "vendor/uPlot.iife.min.js", "app.js"} {
		if !strings.Contains(string(page), `"`+ref+`"`) {
			t.Errorf("index.html does not load %s", ref)
		}
		if _, err := fs.Stat(static, "static/"+ref); err != nil {
			t.Error(err)
		}
	}
}
