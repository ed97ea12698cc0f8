package cli

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/outfmt"
	"github.com/weirstream/weir/internal/sqltest"
)

// TestSQLTwins runs every example's SQL twin (examples/*/job.sql) beside
// its YAML job, deterministically, each on its own copy of the example:
// the summaries are equal, and so is every output, row for row: results
// files with the SQL sink's columns equal to the YAML rows' fields (times
// compared as instants; the SQL rows leave out run and watermark), the
// late, partial and dead-letter files byte for byte, SQLite tables row
// for row.
func TestSQLTwins(t *testing.T) {
	twins, err := filepath.Glob("../examples/*/job.sql")
	if err != nil || len(twins) == 0 {
		t.Fatalf("no SQL twins: %v", err)
	}
	yamls, _ := filepath.Glob("../examples/*/job.yaml")
	if len(twins) != len(yamls) {
		t.Errorf("%d SQL twins of %d examples: every example has one", len(twins), len(yamls))
	}
	for _, twin := range twins {
		src := filepath.Dir(twin)
		t.Run(filepath.Base(src), func(t *testing.T) {
			run := func(job string) string {
				dir := t.TempDir()
				copyDir(t, src, dir)
				code, _, stderr := runIn(dir, strings.Fields("run "+job+" --deterministic --now 2026-06-01T00:00:00Z --summary-json summary.json")...)
				if code != ExitOK || !strings.Contains(stderr, "conservation holds") {
					t.Fatalf("%s: exit %d\n%s", job, code, stderr)
				}
				return dir
			}
			yd, sd := run("job.yaml"), run("job.sql")
			read := func(dir, name string) []byte {
				b, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			if y, s := read(yd, "summary.json"), read(sd, "summary.json"); !bytes.Equal(y, s) {
				t.Errorf("summaries differ:\nyaml %s\nsql  %s", y, s)
			}
			outputs, _ := os.ReadDir(yd)
			compared := 0
			for _, e := range outputs {
				name := e.Name()
				if _, err := os.Stat(filepath.Join(src, name)); err == nil || e.IsDir() || name == "summary.json" {
					continue // an input, or checkpoints
				}
				if strings.HasSuffix(name, ".definition.json") {
					// The job's definition for --append: its spec hash
					// is the same, its fields in each front end's terms.
					if d := func(dir string) string {
						var m map[string]struct{ Spec string }
						json.Unmarshal(read(dir, name), &m)
						var specs []string
						for _, v := range m {
							specs = append(specs, v.Spec)
						}
						slices.Sort(specs)
						return strings.Join(specs, ",")
					}; d(yd) == "" || d(yd) != d(sd) {
						t.Errorf("%s: spec hashes %q (yaml) and %q (sql) differ", name, d(yd), d(sd))
					}
					continue
				}
				compared++
				y, s := read(yd, name), read(sd, name)
				switch {
				case strings.HasSuffix(name, ".db"):
					dump := func(dir string) string {
						db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, name))
						if err != nil {
							t.Fatal(err)
						}
						defer db.Close()
						return sqltest.Dump(t, db, `SELECT * FROM order_stats ORDER BY 1, 2, 3, 4`)
					}
					if y, s := dump(yd), dump(sd); y != s || !strings.Contains(y, "on_time") {
						t.Errorf("%s differs:\nyaml %s\nsql  %s", name, y, s)
					}
				case bytes.Contains(y, []byte(`"firing":`)):
					sameRows(t, name, y, s)
				case bytes.Contains(y, []byte(`"reason":`)):
					// Dead letters: the same records, reasons and
					// details, but for the fix a detail names in its
					// front end's terms (source.timestamp.unit: s, or
					// TO_TIMESTAMP_LTZ(ts, 0)).
					fix := regexp.MustCompile(`it looks like (\w+): [^"]*`)
					if y, s := fix.ReplaceAll(y, []byte("it looks like $1")), fix.ReplaceAll(s, []byte("it looks like $1")); !bytes.Equal(y, s) {
						t.Errorf("%s differs:\nyaml %s\nsql  %s", name, y, s)
					}
				case !bytes.Equal(y, s):
					t.Errorf("%s differs:\nyaml %s\nsql  %s", name, y, s)
				}
			}
			if compared < 2 {
				t.Errorf("%d outputs compared; every twin has results and late rows", compared)
			}
		})
	}
}

// sameRows compares a YAML job's results lines (y) with its SQL twin's
// (s), row for row: each SQL row holds the YAML row's fields but run and
// watermark, with equal values, a time written as Flink's TIMESTAMP(3)
// equal to the YAML row's epoch milliseconds, a retraction's aggregates
// null where the YAML row leaves them out.
func sameRows(t *testing.T, name string, y, s []byte) {
	t.Helper()
	yl, sl := bytes.Split(bytes.TrimSpace(y), []byte("\n")), bytes.Split(bytes.TrimSpace(s), []byte("\n"))
	if len(yl) != len(sl) {
		t.Errorf("%s: %d rows, the YAML job's %d", name, len(sl), len(yl))
		return
	}
	for i := range yl {
		var ym, sm map[string]json.RawMessage
		if err := json.Unmarshal(yl[i], &ym); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(sl[i], &sm); err != nil {
			t.Fatal(err)
		}
		var missing []string
		for k := range ym {
			if _, ok := sm[k]; !ok && k != "run" && k != "watermark" {
				missing = append(missing, k)
			}
		}
		slices.Sort(missing)
		for k, sv := range sm {
			yv := ym[k]
			if ms, ok := outfmt.ParseTime(sv, "timestamp"); ok {
				sv = strconv.AppendInt(nil, ms, 10)
			}
			if yv == nil && string(sv) == "null" && string(sm["firing"]) == `"retract"` {
				continue // a retraction's aggregates: left out, or null
			}
			if !bytes.Equal(yv, sv) && !sameNumber(yv, sv) {
				t.Errorf("%s row %d: %s = %s, the YAML job's %s\nyaml %s\nsql  %s", name, i+1, k, sv, yv, yl[i], sl[i])
				return
			}
		}
		if len(missing) > 0 {
			t.Errorf("%s row %d lacks %v\nyaml %s\nsql  %s", name, i+1, missing, yl[i], sl[i])
			return
		}
	}
}

// sameNumber reports whether a and b are JSON numbers of one value: a
// DOUBLE column's 20.5 (as Flink writes it) and the YAML job's exact
// average 20.500000.
func sameNumber(a, b []byte) bool {
	x, okx := new(big.Rat).SetString(string(a))
	y, oky := new(big.Rat).SetString(string(b))
	return okx && oky && x.Cmp(y) == 0
}

// TestREADMESQL: the README's SQL excerpt is from examples/orders/job.sql
// (which TestSQLTwins runs), line for line, comments aside.
func TestREADMESQL(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```sql\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("the README has no SQL example")
	}
	job, err := os.ReadFile("../examples/orders/job.sql")
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.Lines(block) {
		code, _, _ := strings.Cut(l, "--")
		if code = strings.TrimSpace(code); code != "" && !strings.Contains(string(job), code) {
			t.Errorf("the README's SQL line %q is not in examples/orders/job.sql", code)
		}
	}
}
