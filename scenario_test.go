package weir_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/weirstream/weir/internal/scenario"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/state/memstate"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestScenarios runs every datadriven scenario under testdata/ on the
// deterministic executor and, where the outcome cannot depend on channel
// interleaving, on the parallel runtime too. Rewrite goldens with
// go test -run TestScenarios -rewrite, and read the diff before committing.
func TestScenarios(t *testing.T) {
	var files []string
	err := filepath.WalkDir("testdata", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".txt") && !strings.HasPrefix(p, filepath.Join("testdata", "cli")) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scenario files under testdata/")
	}
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, "testdata"+string(filepath.Separator)), ".txt")
		t.Run(name, func(t *testing.T) {
			scenario.Run(t, f)
		})
		// The same scenario with window state in a KV behind two-entry
		// caches, so entries are written back and reloaded all the time:
		// the code path of the Pebble backend must give the same panes.
		t.Run(name+"/kv", func(t *testing.T) {
			scenario.RunWithBackend(t, f, func() state.Backend { return memstate.NewKVBackend(2) })
		})
	}
}
