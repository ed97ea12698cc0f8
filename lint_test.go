package weir_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/testenv"
)

// tool finds a lint tool on PATH or in Go's bin directory; without it the
// test skips (a fresh machine has only Go), or fails under
// WEIR_REQUIRE_SERVICES=1, which .ci/run sets after installing them.
func tool(t *testing.T, name, pkg string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	testenv.Unavailable(t, name+" is not installed: go install "+pkg)
	return ""
}

// TestStaticcheck: staticcheck finds nothing in the module.
func TestStaticcheck(t *testing.T) {
	if testing.Short() {
		t.Skip("staticcheck builds the module: not in -short")
	}
	sc := tool(t, "staticcheck", "honnef.co/go/tools/cmd/staticcheck@v0.8.2")
	out, err := exec.Command(sc, "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("staticcheck ./...: %v\n%s", err, out)
	}
}

// TestGoimports: every Go file is formatted, its imports grouped as
// goimports writes them.
func TestGoimports(t *testing.T) {
	gi := tool(t, "goimports", "golang.org/x/tools/cmd/goimports@v0.52.0")
	out, err := exec.Command(gi, "-l", ".").CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Fatalf("goimports -l . (run goimports -w on these): %v\n%s", err, out)
	}
}
