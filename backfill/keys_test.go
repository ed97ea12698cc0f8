package backfill

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/spec"
)

// distinctKeys are keys that only exact numbers tell apart (integers
// beyond int64, numbers beyond float64's range or precision, a number
// and the string of its digits); key i's record has amount 2^i. Then
// three records whose keys are earlier ones written otherwise.
var distinctKeys = []string{`9223372036854775808`, `9223372036854775809`, `1e400`, `1e500`, `"9223372036854775809"`, `0.1`, `0.1000000000000000001`, `1e20`,
	`9223372036854775809.0`, `10e399`, `100000000000000000000`}

// distinctWant is each key's row: its canonical text, count and total.
var distinctWant = []string{
	"9223372036854775808 n=1 total=1",
	"1e+500 n=1 total=8",
	`"9223372036854775809" n=1 total=16`,
	"0.1 n=1 total=32",
	"0.1000000000000000001 n=1 total=64",
	"9223372036854775809 n=2 total=258",
	"1e+400 n=2 total=516",
	"100000000000000000000 n=2 total=1152",
}

// TestDistinctKeys runs a job with distinctKeys into each kind of table
// or file sink: every distinct key keeps its own row and result (in
// SQLite, as the number's exact type: INTEGER, REAL or a BLOB of its
// canonical text; in Postgres, as its canonical text), and the complete
// answer agrees with the results row for row. Postgres keeps keys as
// text, where the string "9223372036854775809" is the number's text: its
// run leaves that string out.
func TestDistinctKeys(t *testing.T) {
	const ts = 1780272000000
	input := func(sink string) string {
		var in strings.Builder
		for i, k := range distinctKeys {
			if sink == "postgres" && k[0] == '"' {
				continue
			}
			fmt.Fprintf(&in, `{"k":%s,"amount":%d,"ts":%d}`+"\n", k, 1<<i, ts)
		}
		return in.String()
	}
	for _, sink := range []string{"sqlite", "postgres", "jsonl"} {
		t.Run(sink, func(t *testing.T) {
			var yml string
			var rows func(dir string) []string
			switch sink {
			case "sqlite":
				yml = fmt.Sprintf(jobtest.KeyJob, "{type: sqlite, path: results.db}")
				rows = func(dir string) []string {
					db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "results.db"))
					if err != nil {
						t.Fatal(err)
					}
					defer db.Close()
					return queryRows(t, db, `SELECT typeof(k) || ' ' || CAST(k AS TEXT), n, total FROM results ORDER BY total`)
				}
			case "postgres":
				url, conn := jobtest.PgURL(t)
				table := jobtest.PgTable(t, conn, "weir_keys")
				yml = fmt.Sprintf(jobtest.KeyJob, "{type: postgres, url: '"+url+"', table: "+table+"}")
				rows = func(string) []string {
					db, err := sql.Open("pgx", url)
					if err != nil {
						t.Fatal(err)
					}
					defer db.Close()
					return queryRows(t, db, `SELECT k, n::text, total::text FROM `+table+` AS t ORDER BY t.total`)
				}
			case "jsonl":
				yml = fmt.Sprintf(jobtest.KeyJob, "{type: jsonl, path: out.jsonl}")
				rows = func(dir string) []string {
					var out []string
					for _, l := range jobtest.ResultLines(t, filepath.Join(dir, "out.jsonl")) {
						var m map[string]json.RawMessage
						if err := json.Unmarshal([]byte(l), &m); err != nil {
							t.Fatal(err)
						}
						out = append(out, fmt.Sprintf("%s n=%s total=%s", m["k"], m["n"], m["total"]))
					}
					slices.SortFunc(out, func(a, b string) int { return cmpTotal(a) - cmpTotal(b) })
					return out
				}
			}
			dir, _ := runSpec(t, yml, map[string]string{"in.jsonl": input(sink)}, job.RunOptions{Deterministic: true})
			want := distinctWant
			switch sink {
			case "sqlite":
				types := []string{"blob", "blob", "text", "real", "blob", "blob", "blob", "real"}
				want = slices.Clone(want)
				for i, w := range want {
					want[i] = types[i] + " " + strings.ReplaceAll(w, `"`, "")
				}
				want[7] = "real 1.0e+20 n=2 total=1152" // SQLite writes a REAL so
			case "postgres":
				want = slices.Delete(slices.Clone(want), 2, 3) // the string key, left out
			}
			if d := cmp.Diff(want, rows(dir)); d != "" {
				t.Fatalf("rows (-want +got):\n%s", d)
			}
			if n := equalsComplete(t, yml, dir); n != len(want) {
				t.Fatalf("the complete answer has %d windows, want %d", n, len(want))
			}
		})
	}
}

// TestBackfillDistinctKeys backfills too-late records whose keys are
// written otherwise than the on-time records of their windows (and, in a
// Postgres ledger, as jsonb writes them: 1e400 in full, object members
// in its own order): each entry revises its own key's row, no other, and
// the table then equals the complete answer.
func TestBackfillDistinctKeys(t *testing.T) {
	const ts = 1780272000000
	var in strings.Builder
	for _, k := range []string{`9223372036854775808`, `9223372036854775809`, `1e400`, `1e500`, `{"b":2,"aa":1}`} {
		fmt.Fprintf(&in, `{"k":%s,"amount":1,"ts":%d}`+"\n", k, ts)
	}
	fmt.Fprintf(&in, `{"k":"x","amount":1,"ts":%d}`+"\n", ts+20000) // closes the window
	for i, k := range []string{`9223372036854775809.0`, `10e399`, `{"aa":1,"b":2}`} {
		fmt.Fprintf(&in, `{"k":%s,"amount":%d,"ts":%d}`+"\n", k, 10<<i, ts+1000)
	}
	for _, ledger := range []string{"file", "postgres"} {
		t.Run(ledger, func(t *testing.T) {
			late := "{type: ledger, dir: ledger}"
			if ledger == "postgres" {
				url, conn := jobtest.PgURL(t)
				table := jobtest.PgTable(t, conn, "weir_keys_late")
				late = "{type: postgres, url: '" + url + "', table: " + table + "}"
			}
			yml := strings.Replace(fmt.Sprintf(jobtest.KeyJob, "{type: sqlite, path: results.db}"), "watermark: {max_out_of_orderness: 1s}", "watermark: {max_out_of_orderness: 1s, emit: every_record}", 1) +
				"  late: " + late + "\n"
			dir, sum := runSpec(t, yml, map[string]string{"in.jsonl": in.String()}, job.RunOptions{Deterministic: true})
			if sum.Get("late_side_output") != 3 {
				t.Fatalf("%d records too late, want 3", sum.Get("late_side_output"))
			}
			p, err := spec.Parse([]byte(yml))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Backfill(p, BackfillOptions{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Applied != 3 || rep.Windows != 3 {
				t.Fatalf("applied %d entries to %d windows, want 3 and 3: %+v", rep.Applied, rep.Windows, rep)
			}
			db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "results.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			got := queryRows(t, db, `SELECT CAST(k AS TEXT) || ' ' || firing || ' ' || pane, n, total FROM results ORDER BY total, k`)
			want := []string{
				`x on_time 0 n=1 total=1`, // TEXT, then BLOBs by their bytes
				`1e+500 on_time 0 n=1 total=1`,
				`9223372036854775808 on_time 0 n=1 total=1`,
				`9223372036854775809 backfill 1 n=2 total=11`,
				`1e+400 backfill 1 n=2 total=21`,
				`{"aa":1,"b":2} backfill 1 n=2 total=41`,
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("rows (-want +got):\n%s", d)
			}
			equalsComplete(t, yml, dir)
		})
	}
}

// equalsComplete fails the test unless the results of the job (run in
// dir) equal its complete answer; it returns the answer's windows.
func equalsComplete(t *testing.T, yml, dir string) int {
	t.Helper()
	p, err := spec.Parse([]byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	ans, err := Complete(p, dir)
	if err != nil {
		t.Fatal(err)
	}
	diffs, n, err := ans.Compare(p, dir, 10)
	if err != nil || n != 0 {
		t.Fatalf("%d of %d windows differ from the complete answer (%v): %v", n, ans.Windows(), err, diffs)
	}
	return ans.Windows()
}

// queryRows reads rows of three columns (text, count, total) as
// "text n=count total=total".
func queryRows(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var k, n, total string
		if err := rows.Scan(&k, &n, &total); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s n=%s total=%s", k, n, total))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// cmpTotal is the total of a "k n=N total=T" row.
func cmpTotal(row string) int {
	var total int
	fmt.Sscan(row[strings.LastIndex(row, "=")+1:], &total)
	return total
}

// FuzzCanonicalJSON: the canonical text of any JSON value is valid JSON,
// its own canonical text, and a value the SQLite sink stores.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`1`, `-0.0`, `1e400`, `9223372036854775809.0`, `"a\u00e9\n"`, `{"b":1,"a":[1.0,{"d":2,"c":null}],"b":2}`, `[1e6,0.1000000000000000001]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) || !utf8.Valid(b) {
			return // a dead letter before any key is read
		}
		c, err := CanonicalJSON(b)
		if err != nil {
			return // fastjson's own limits (nesting depth)
		}
		if !json.Valid(c) {
			t.Fatalf("canonical %q of %q is not valid JSON", c, b)
		}
		cc, err := CanonicalJSON(c)
		if err != nil || !bytes.Equal(cc, c) {
			t.Fatalf("canonical %q of %q is not its own canonical text: %q, %v", c, b, cc, err)
		}
		if _, err := sqlValue(c); err != nil {
			t.Fatalf("the SQLite sink refuses %q (canonical of %q): %v", c, b, err)
		}
	})
}
