package weir_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDependencyRules enforces the import rules of docs/DESIGN.md: the leaf
// packages import only the leaves before them, the runtime knows nothing of
// windows, and the root package imports no concrete connector and no state
// backend other than the default in-memory one.
func TestDependencyRules(t *testing.T) {
	const mod = "github.com/weirstream/weir"
	allowed := map[string][]string{
		"etime":               {},
		"clock":               {"etime"},
		"window":              {"etime"},
		"trigger":             {"etime", "window"},
		"watermark":           {"etime", "clock"},
		"state":               {},
		"internal/timers":     {"etime", "window", "state"},
		"internal/runtime":    {"etime", "clock", "watermark", "internal/hist"},
		"internal/hist":       {},
		"internal/checkpoint": {},
		"internal/flock":      {},
		"internal/jsonnum":    {},
		"internal/ledger":     {"internal/flock"},
		"internal/archive":    {"etime", "state/pebblestate", "internal/flock"},
		"internal/procmem":    {},
		".":                   {"etime", "clock", "window", "trigger", "watermark", "state", "state/memstate", "internal/runtime", "internal/winop", "internal/procmem"},
		// Connectors build on the public API only.
		"connector/fileio":            {".", "etime"},
		"connector/genio":             {".", "etime", "clock", "connector/fileio"},
		"connector/sqliteio":          {"etime", "connector/internal/tablerow", "internal/jsonnum"},
		"connector/internal/tablerow": {"etime"},
		"connector/connectortest":     {".", "etime"},
		"connector/kafkaio":           {".", "etime", "clock", "watermark"},
		"connector/natsio":            {".", "etime", "clock"},
		"connector/pgio":              {"etime", "connector/internal/tablerow"},
		// The job spec is a user of the public API, like any Go program.
		"spec": {".", "etime", "clock", "window", "trigger", "watermark", "state", "state/pebblestate", "internal/checkpoint", "internal/flock", "internal/ledger", "internal/archive", "internal/jsonnum", "connector/fileio", "connector/genio", "connector/sqliteio", "connector/kafkaio", "connector/pgio", "connector/natsio"},
		// The Nexmark benchmark is a user of the public API too.
		"nexmark": {".", "etime", "window"},
		// Metrics read a job through the public API; the admin server
		// only serves what it is given.
		"metrics":          {".", "etime", "internal/hist"},
		"internal/admin":   {"internal/monitor", "internal/doctor"},
		"internal/doctor":  {"internal/monitor"},
		"internal/monitor": {".", "etime", "metrics", "internal/hist"},
		"cli":              {".", "spec", "etime", "nexmark", "internal/benchutil", "connector/fileio", "connector/genio", "connector/kafkaio", "metrics", "internal/admin", "internal/monitor", "internal/doctor", "internal/ledger"},
	}
	for dir, ok := range allowed {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Errorf("%s: no Go files (a rule for a package that moved?)", dir)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				p := strings.Trim(imp.Path.Value, `"`)
				if !strings.HasPrefix(p, mod+"/") {
					continue
				}
				rel := strings.TrimPrefix(p, mod+"/")
				found := false
				for _, a := range ok {
					found = found || a == rel
				}
				if !found {
					t.Errorf("%s imports %s, which docs/DESIGN.md does not allow", f, rel)
				}
			}
		}
	}
}
