package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestStdoutPathAppends: a results sink at path /dev/stdout, with the
// shell appending weir's output to a file (weir run job.yaml >> keep.txt),
// adds its lines after what the file held: a fresh run starts regular
// files over, never the process's own output; /dev/null takes results
// too.
func TestStdoutPathAppends(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "in.jsonl"), []byte(`{"k":"a","ts":1767225600000}`+"\n"+`{"k":"b","ts":1767225601000}`+"\n"), 0o644)
	for _, path := range []string{"/dev/stdout", "/dev/null"} {
		os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(`name: keep
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
key: [k]
window: {type: tumbling, size: 10s}
aggregate: [{name: n, fn: count}]
sinks:
  results: {type: jsonl, path: `+path+`}
`), 0o644)
		keep := filepath.Join(dir, "keep.txt")
		os.WriteFile(keep, []byte("earlier\n"), 0o644)
		f, err := os.OpenFile(keep, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		var errs strings.Builder
		cmd := exec.Command(weirBinary(t), "run", "job.yaml")
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, f, &errs
		err = cmd.Run()
		out := errs.String()
		f.Close()
		if err != nil {
			t.Fatalf("%s: weir run: %v\n%s", path, err, out)
		}
		b, _ := os.ReadFile(keep)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		want := 3
		if path == "/dev/null" {
			want = 1
		}
		if lines[0] != "earlier" || len(lines) != want {
			t.Errorf("%s: keep.txt holds %q, want the earlier line and %d results", path, lines, want-1)
		}
	}
}
