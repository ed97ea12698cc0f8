package weir_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestDependencyRules enforces the import rules of docs/DESIGN.md on every
// package go list finds (one without a rule fails): the leaf packages
// import only the leaves before them, the runtime knows nothing of
// windows, the root package imports no concrete connector and no state
// backend other than the default in-memory one, the job spec compiles
// without the engine or any connector (TestSpecDeps checks its whole
// closure), and only cli, backfill and cmd/weir import the job runner.
func TestDependencyRules(t *testing.T) {
	const mod = "github.com/weirstream/weir"
	allowed := map[string][]string{
		"etime":             {},
		"clock":             {"etime"},
		"window":            {"etime"},
		"trigger":           {"etime", "window"},
		"watermark":         {"etime", "clock"},
		"state":             {},
		"internal/timers":   {"etime", "window", "state"},
		"checkpoint":        {},
		"internal/runtime":  {"etime", "clock", "watermark", "checkpoint", "internal/hist"},
		"internal/hist":     {},
		"internal/flock":    {},
		"internal/jsonnum":  {},
		"internal/suggest":  {},
		"internal/sqlparse": {"internal/suggest"},
		"internal/expr":     {"internal/sqlparse", "internal/suggest", "internal/jsonnum"},
		"internal/sqljob":   {"internal/sqlparse", "internal/suggest", "internal/expr", "spec", "etime"},
		"ledger":            {"connector", "window", "internal/flock"},
		"internal/epochs":   {},
		"internal/archive":  {"etime", "state/pebblestate", "internal/flock"},
		"internal/procmem":  {},
		".":                 {"etime", "clock", "window", "trigger", "watermark", "state", "state/memstate", "checkpoint", "connector", "internal/runtime", "internal/winop", "internal/hist", "internal/epochs", "internal/procmem"},
		// Connectors build on the public API only.
		"connector":                   {"etime", "clock"},
		"connector/fileio":            {".", "connector", "etime"},
		"connector/genio":             {"connector", "etime", "clock", "connector/fileio"},
		"connector/nexmarkio":         {".", "connector", "connector/fileio", "etime", "nexmark"},
		"connector/sqliteio":          {"connector", "etime", "window", "connector/internal/tablerow", "internal/jsonnum"},
		"connector/internal/tablerow": {"connector", "etime", "window"},
		"connector/connectortest":     {".", "connector", "etime", "connector/internal/tablerow"},
		"connector/kafkaio":           {".", "connector", "etime", "clock", "watermark", "ledger"},
		"connector/natsio":            {"connector", "etime", "clock"},
		"connector/pgio":              {"connector", "etime", "window", "connector/internal/tablerow", "ledger"},
		// The built-in kinds, registered in connector.Default.
		"connector/all": {"connector", "connector/fileio", "connector/genio", "connector/kafkaio", "connector/natsio", "connector/nexmarkio", "connector/pgio", "connector/sqliteio", "ledger"},
		// The job spec compiles: it does no I/O, imports no connector, and
		// resolves type: through the connector registry.
		"spec": {"connector", "etime", "window", "trigger", "internal/suggest", "internal/sqlparse", "internal/expr"},
		// Record decoding and the declarative aggregates of a plan.
		"internal/record": {".", "spec", "etime", "clock", "state", "connector", "connector/fileio", "internal/jsonnum", "internal/suggest", "internal/sqlparse", "internal/expr"},
		// The format of a job spec's outputs, shared by the runner and backfill.
		"internal/outfmt": {".", "spec", "window", "etime", "internal/record", "connector", "internal/jsonnum"},
		// Backfill and the complete answer read what the runner wrote.
		"backfill": {".", "spec", "job", "connector", "internal/record", "internal/outfmt", "etime", "clock", "window", "checkpoint", "ledger", "internal/archive", "internal/jsonnum", "connector/pgio", "connector/sqliteio"},
		// The job runner is a user of the public API, like any Go program.
		"job": {".", "spec", "internal/record", "internal/outfmt", "connector", "connector/all", "etime", "clock", "window", "trigger", "watermark", "state", "state/pebblestate", "checkpoint", "internal/epochs", "internal/flock", "ledger", "internal/archive", "internal/jsonnum"},
		// The Nexmark benchmark is a user of the public API too.
		"nexmark": {".", "etime", "window", "state"},
		// Metrics read a job through the public API; the admin server
		// only serves what it is given.
		"metrics":          {".", "etime"},
		"internal/admin":   {"internal/monitor", "internal/doctor"},
		"internal/doctor":  {"internal/monitor"},
		"internal/monitor": {".", "etime", "metrics"},
		"cli":              {".", "spec", "job", "backfill", "connector", "connector/all", "etime", "nexmark", "internal/benchutil", "connector/fileio", "connector/genio", "connector/kafkaio", "metrics", "internal/admin", "internal/monitor", "internal/doctor", "ledger", "window", "internal/suggest", "internal/sqljob", "internal/sqlparse", "internal/group", "state", "state/pebblestate", "internal/outfmt"},
		// main only wires the process.
		"cmd/weir": {"cli"},
		// The engine's window operator and the state backends.
		"internal/winop":    {"etime", "window", "trigger", "state", "internal/timers", "internal/hist"},
		"state/memstate":    {"state"},
		"state/pebblestate": {"state"},
		// Test support: conformance suites, fixtures and local servers.
		"state/statetest":    {"state"},
		"internal/scenario":  {".", "etime", "clock", "window", "trigger", "state"},
		"internal/benchutil": {"etime", "window"},
		"internal/kafkatest": {},
		"internal/group":     {"spec", "etime", "job", "connector", "connector/kafkaio", "connector/pgio", "checkpoint", "state", "internal/flock", "internal/outfmt", "internal/monitor", "internal/record", "internal/archive", "internal/winop", "clock", "."},
		"internal/pgproxy":   {},
		"internal/sqltest":   {},
		"internal/testenv":   {},
		"internal/promtest":  {},
		"internal/jobtest":   {"spec", "clock", "connector/kafkaio", "internal/pgproxy", "internal/testenv"},
	}
	// The packages are go list's (every build tag of this platform, test
	// files left out): each must have a rule, and each rule a package.
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}|{{join .Imports " "}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, imports, _ := strings.Cut(line, "|")
		pkg := rel(mod, path)
		listed[pkg] = true
		ok, ruled := allowed[pkg]
		if !ruled {
			t.Errorf("package %s has no dependency rule: add one here and to the layering of docs/DESIGN.md", pkg)
			continue
		}
		for _, imp := range strings.Fields(imports) {
			if imp != mod && !strings.HasPrefix(imp, mod+"/") {
				continue
			}
			if r := rel(mod, imp); !slices.Contains(ok, r) {
				t.Errorf("%s imports %s, which docs/DESIGN.md does not allow", pkg, r)
			}
		}
	}
	for pkg := range allowed {
		if !listed[pkg] {
			t.Errorf("a rule for %s, which go list does not know (a package that moved?)", pkg)
		}
	}
}

// rel is a package path relative to the module ("." for the root).
func rel(mod, path string) string {
	if path == mod {
		return "."
	}
	return strings.TrimPrefix(path, mod+"/")
}

// TestSpecDeps: the job spec compiles without I/O: none of the packages
// it depends on, directly or not, is the engine, a connector, a state
// backend or a store.
func TestSpecDeps(t *testing.T) {
	const mod = "github.com/weirstream/weir"
	out, err := exec.Command("go", "list", "-deps", "./spec").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := []string{"spec", "connector", "etime", "clock", "window", "trigger", "internal/suggest", "internal/sqlparse", "internal/expr", "internal/jsonnum"}
	for _, p := range strings.Fields(string(out)) {
		if p != mod && !strings.HasPrefix(p, mod+"/") {
			continue
		}
		if r := rel(mod, p); !slices.Contains(allowed, r) {
			t.Errorf("spec depends on %s", r)
		}
	}
}
