package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
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

// TestStdoutClosed: a reader of the results on standard output that goes
// away (weir run job.yaml | head -1) makes the job stop with exit 1 and
// say why, with its summary; the file sinks keep what the summary counts
// (the process died of SIGPIPE at once, silently, its late records and
// dead letters unwritten).
func TestStdoutClosed(t *testing.T) {
	dir := t.TempDir()
	var in strings.Builder
	for i := range 50000 {
		ts := 1767225600000 + int64(i)*10
		if i%100 == 7 {
			ts -= 600_000 // too late
		}
		if i%1000 == 3 {
			in.WriteString("not json\n")
			continue
		}
		fmt.Fprintf(&in, `{"k":"u%d","ts":%d}`+"\n", i%50, ts)
	}
	os.WriteFile(filepath.Join(dir, "in.jsonl"), []byte(in.String()), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(`name: pipe
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
key: [k]
window: {type: tumbling, size: 1s}
aggregate: [{name: n, fn: count}]
sinks:
  results: {type: stdout}
  late: {type: jsonl, path: late.jsonl}
  dead_letter: {type: jsonl, path: dead.jsonl}
`), 0o644)
	cmd := exec.Command(weirBinary(t), "run", "job.yaml", "--summary-json", "sum.json")
	var errs strings.Builder
	cmd.Dir, cmd.Stderr = dir, &errs
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	out.Close() // head -1
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("weir run: %v, want exit 1\n%s", err, errs.String())
	}
	for _, want := range []string{"standard output was closed by its reader", "conservation holds"} {
		if !strings.Contains(errs.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs.String())
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "sum.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum map[string]int64
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	for file, counter := range map[string]string{"late.jsonl": "late_side_output", "dead.jsonl": "dead_letter"} {
		b, _ := os.ReadFile(filepath.Join(dir, file))
		if n := int64(strings.Count(string(b), "\n")); n != sum[counter] || n == 0 {
			t.Errorf("%s holds %d lines, the summary counts %d %s", file, n, sum[counter], counter)
		}
	}
}
