package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/weirstream/weir/backfill"
	"github.com/weirstream/weir/spec"
)

// TestExamples runs every examples/*/job.yaml deterministically on a copy
// of its directory and compares its summary with the example's
// summary.golden.json (regenerate with -rewrite after reading the diff).
func TestExamples(t *testing.T) {
	dirs, err := filepath.Glob("../examples/*/job.yaml")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	rewrite := false
	if f := flag.Lookup("rewrite"); f != nil {
		rewrite = f.Value.String() == "true"
	}
	for _, job := range dirs {
		src := filepath.Dir(job)
		t.Run(filepath.Base(src), func(t *testing.T) {
			dir := t.TempDir()
			entries, err := os.ReadDir(src)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				b, err := os.ReadFile(filepath.Join(src, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), strings.Fields("run job.yaml --deterministic --now 2026-06-01T00:00:00Z --summary-json summary.json"),
				IO{Dir: dir, Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr})
			if code != ExitOK {
				t.Fatalf("exit %d\n%s", code, stderr.String())
			}
			got, err := os.ReadFile(filepath.Join(dir, "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(stderr.String(), "conservation holds") {
				t.Errorf("conservation does not hold:\n%s", stderr.String())
			}
			golden := filepath.Join(src, "summary.golden.json")
			if rewrite {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -rewrite to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("summary changed:\ngot  %s\nwant %s", got, want)
			}
		})
	}
}

// TestDemo runs the demo at a small size: every order is accounted for by
// the three layers, and the results table is readable.
func TestDemo(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"demo", "--orders", "40000"}, IO{Dir: dir, Stdout: &stdout, Stderr: &stderr})
	out := stdout.String()
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr.String())
	}
	for _, want := range []string{"dashboard at http://127.0.0.1:", "conservation holds", "allowed lateness:", "too late:", "dead letters:", "first windows in the results table", "sqlite3 weir-demo/results.db"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	// The three layers as shares of the input, about 95/4/1 by design.
	m := regexp.MustCompile(`the three layers, as shares of the 40000 orders:\n  1\. the out-of-orderness bound: ([\d.]+)% on time\n  2\. the allowed lateness: ([\d.]+)% late.*\n  3\. the side output: ([\d.]+)% too late`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no shares of the three layers:\n%s", out)
	}
	on, _ := strconv.ParseFloat(m[1], 64)
	late, _ := strconv.ParseFloat(m[2], 64)
	tooLate, _ := strconv.ParseFloat(m[3], 64)
	if on < 90 || late < 2 || late > 6 || tooLate < 0.3 || tooLate > 2 {
		t.Errorf("shares %v%% / %v%% / %v%%, want about 95 / 4 / 1", on, late, tooLate)
	}
	for _, f := range []string{"results.db", "ledger/orders-demo", "dead_letter.jsonl"} {
		if _, err := os.Stat(filepath.Join(dir, "weir-demo", f)); err != nil {
			t.Error(err)
		}
	}
	s, err := spec.Load(DemoSpec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := spec.Compile(s); err != nil {
		t.Fatal(err)
	}
	// The command the demo prints next folds the too-late orders into
	// their windows, and the table then equals the complete answer; a
	// second run changes nothing.
	if !strings.Contains(out, "weir backfill weir-demo/demo.yaml --verify") {
		t.Fatalf("the demo does not point to the backfill:\n%s", out)
	}
	for i, want := range []string{"windows revised", "backfill applied 0 entries, 0 windows revised"} {
		stdout.Reset()
		code = Main(context.Background(), []string{"backfill", "weir-demo/demo.yaml", "--verify", "--report", "report.json"}, IO{Dir: dir, Stdout: &stdout, Stderr: &stderr})
		out = stdout.String()
		if code != ExitOK || !strings.Contains(out, want) || !strings.Contains(out, "results now equal the complete answer") || i == 0 && strings.Contains(out, "applied 0 entries") {
			t.Fatalf("backfill %d: exit %d\n%s\n%s", i+1, code, out, stderr.String())
		}
		var rep backfill.BackfillReport
		b, err := os.ReadFile(filepath.Join(dir, "report.json"))
		if err == nil {
			err = json.Unmarshal(b, &rep)
		}
		if err != nil || rep.Entries == 0 || (i == 0) != (rep.Applied == rep.Entries) || !strings.Contains(string(b), `"already_applied"`) {
			t.Fatalf("backfill %d: report %s (%v)", i+1, b, err)
		}
	}
}
