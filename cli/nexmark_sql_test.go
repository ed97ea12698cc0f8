package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/nexmark"
)

// TestNexmarkSQL runs the Nexmark queries weir runs as the Nexmark
// project writes them (nexmark.SQL: its DDL, bid view and query; the sink
// a JSON file instead of blackhole) on the nexmark source, and compares
// their rows with the hand-written loops over the same events.
func TestNexmarkSQL(t *testing.T) {
	const events = 30000
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range nexmark.SQL {
			if !yield(n) {
				return
			}
		}
	}) {
		sq := nexmark.SQL[name]
		t.Run(name, func(t *testing.T) {
			dir := filesIn(t, map[string]string{name + ".sql": sq.Text(events, 10_000)})
			code, _, stderr := runIn(dir, "run", name+".sql", "--deterministic")
			// Every event is accepted or filtered by the view: a person or
			// auction, which has no bidder, is no dead letter.
			if code != ExitOK || !strings.Contains(stderr, "conservation holds") || !strings.Contains(stderr, "dead letters: 0\n") ||
				!regexp.MustCompile(`\+ [1-9][0-9]* filtered`).MatchString(stderr) || strings.Contains(stderr, " + 0 filtered") {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			b, err := os.ReadFile(filepath.Join(dir, "out.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			var got []nexmark.Row
			for l := range strings.Lines(string(b)) {
				var m map[string]json.RawMessage
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatal(err)
				}
				r, err := sq.Row(m)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, r)
			}
			evs, err := nexmark.Generate(nexmark.DefaultConfig(), events)
			if err != nil {
				t.Fatal(err)
			}
			q, err := nexmark.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			var want []nexmark.Row
			q.Hand(evs, func(r *nexmark.Row) { want = append(want, *r) })
			nexmark.SortRows(got)
			nexmark.SortRows(want)
			if len(want) < 100 || !slices.Equal(got, want) {
				t.Errorf("%d rows, the loop's %d; first differing:\n%s", len(got), len(want), firstRowDiff(got, want))
			}
		})
	}
}

func firstRowDiff(got, want []nexmark.Row) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("got  %+v\nwant %+v", got[i], want[i])
		}
	}
	return "(one is a prefix of the other)"
}
