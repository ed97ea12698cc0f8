package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// tookLine is the one summary line that depends on the machine; rss
// the resident memory in the state budget's warnings.
var (
	tookLine = regexp.MustCompile(`(?m)^took .*\n`)
	rss      = regexp.MustCompile(`rss=\d+`)
)

// TestCommands runs the golden command scenarios in testdata/cli. Each
// file is a sequence of:
//
//	file name=job.yaml      write the input to a file in the scenario's directory
//	weir [stdin=FILE]       run the command line given as input; prints the
//	                        exit code, stdout and stderr
//	cat FILE                print a file the command wrote
//
// Regenerate with -rewrite after reading the diff.
func TestCommands(t *testing.T) {
	datadriven.Walk(t, "../testdata/cli", func(t *testing.T, path string) {
		dir := t.TempDir()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "file":
				var name string
				d.ScanArgs(t, "name", &name)
				if err := os.WriteFile(filepath.Join(dir, name), []byte(d.Input), 0o644); err != nil {
					t.Fatal(err)
				}
				return ""
			case "weir":
				return runWeir(t, dir, d)
			case "cat":
				b, err := os.ReadFile(filepath.Join(dir, d.CmdArgs[0].Key))
				if err != nil {
					return err.Error()
				}
				return string(b)
			}
			t.Fatalf("unknown command %q", d.Cmd)
			return ""
		})
	})
}

func runWeir(t *testing.T, dir string, d *datadriven.TestData) string {
	o := IO{Dir: dir, Stdin: strings.NewReader("")}
	for _, a := range d.CmdArgs {
		if a.Key == "stdin" {
			b, err := os.ReadFile(filepath.Join(dir, a.Vals[0]))
			if err != nil {
				t.Fatal(err)
			}
			o.Stdin = bytes.NewReader(b)
		}
	}
	var stdout, stderr bytes.Buffer
	o.Stdout, o.Stderr = &stdout, &stderr
	code := Main(context.Background(), strings.Fields(d.Input), o)
	var b strings.Builder
	fmt.Fprintf(&b, "exit %d\n", code)
	if stdout.Len() > 0 {
		fmt.Fprintf(&b, "stdout:\n%s", stdout.String())
	}
	if stderr.Len() > 0 {
		fmt.Fprintf(&b, "stderr:\n%s", rss.ReplaceAllString(tookLine.ReplaceAllString(stderr.String(), ""), "rss=N"))
	}
	return b.String()
}
