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
			// q5 and q7 give a row or two per window: a slower rate
			// gives them more windows.
			cfg, least := nexmark.DefaultConfig(), 100
			switch name {
			case "q5":
				cfg.Rate, least = 1000, 20
			case "q7": // a row or so per window of 10 s
				cfg.Rate, least = 100, 20
			}
			dir := filesIn(t, map[string]string{name + ".sql": sq.Text(events, cfg.Rate)})
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
			evs, err := nexmark.Generate(cfg, events)
			if err != nil {
				t.Fatal(err)
			}
			q, err := nexmark.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			var want []nexmark.Row
			hand := q.Hand
			if sq.Hand != nil {
				hand = sq.Hand
			}
			hand(evs, func(r *nexmark.Row) { want = append(want, sq.Want(*r)) })
			nexmark.SortRows(got)
			nexmark.SortRows(want)
			if len(want) < least || !slices.Equal(got, want) {
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

// TestNexmarkSQLq12 compiles Nexmark q12 as the project writes it (a view
// over the bid view with PROCTIME(), a tumbling window on it, the
// blackhole sink): a processing-time window per bidder. Its rows depend on
// the wall clock and a bounded run fires none at its end (semantics J2);
// TestNexmarkSQLq12Totals compares its totals with the loop's, lingering.
func TestNexmarkSQLq12(t *testing.T) {
	q12 := fmt.Sprintf(nexmark.SQLDDL, 1000, 10_000) + `
CREATE TABLE discard_sink (bidder BIGINT, bid_count BIGINT, starttime TIMESTAMP(3), endtime TIMESTAMP(3)) WITH ('connector' = 'blackhole');
CREATE VIEW B AS SELECT *, PROCTIME() as p_time FROM bid;
INSERT INTO discard_sink
SELECT bidder, count(*) as bid_count, window_start AS starttime, window_end AS endtime
FROM TABLE(TUMBLE(TABLE B, DESCRIPTOR(p_time), INTERVAL '10' SECOND))
GROUP BY bidder, window_start, window_end;
`
	dir := filesIn(t, map[string]string{"q12.sql": q12})
	code, stdout, stderr := runIn(dir, "explain", "q12.sql")
	if code != ExitOK || !strings.Contains(stdout, `job "q12": processing time`) || !strings.Contains(stdout, "tumbling 10s by [bidder]; bid_count = count()") ||
		!strings.Contains(stdout, "_weir_view_B = event_type = 2") || !strings.Contains(stdout, ": blackhole") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	code, _, stderr = runIn(dir, "run", "q12.sql", "--deterministic")
	if code != ExitOK || !strings.Contains(stderr, "conservation holds") || !strings.Contains(stderr, "dead letters: 0\n") {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
}

// TestNexmarkSQLq12Totals runs q12 as the project writes it, with the
// nexmark table lingering (weir.linger) after its last event until the
// processing-time window open at the end has fired: its per-bidder
// totals equal the loop's, as the typed q12's are compared (processing
// time differs from run to run; the totals do not). It waits out one
// 10 s window of the wall clock.
func TestNexmarkSQLq12Totals(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a 10 s processing-time window")
	}
	const events = 3000
	ddl := strings.Replace(fmt.Sprintf(nexmark.SQLDDL, events, 10_000), "'bid.proportion' = '46'", "'bid.proportion' = '46', 'weir.linger' = '11 s'", 1)
	q12 := ddl + `
CREATE TABLE out_sink (bidder BIGINT, bid_count BIGINT, starttime TIMESTAMP(3), endtime TIMESTAMP(3)) WITH ('connector' = 'filesystem', 'path' = 'out.jsonl');
CREATE VIEW B AS SELECT *, PROCTIME() as p_time FROM bid;
INSERT INTO out_sink
SELECT bidder, count(*) as bid_count, window_start AS starttime, window_end AS endtime
FROM TABLE(TUMBLE(TABLE B, DESCRIPTOR(p_time), INTERVAL '10' SECOND))
GROUP BY bidder, window_start, window_end;
`
	if !strings.Contains(q12, "'weir.linger' = '11 s'") {
		t.Fatal("the DDL was not rewritten")
	}
	dir := filesIn(t, map[string]string{"q12.sql": q12})
	code, _, stderr := runIn(dir, "run", "q12.sql")
	if code != ExitOK || !strings.Contains(stderr, "conservation holds") {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "out.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var got []nexmark.Row
	for l := range strings.Lines(string(b)) {
		var r struct {
			Bidder   int64 `json:"bidder"`
			BidCount int64 `json:"bid_count"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.BidCount == 0 {
			t.Fatalf("row %s: %v", l, err)
		}
		got = append(got, nexmark.Row{A: r.Bidder, B: r.BidCount})
	}
	evs, err := nexmark.Generate(nexmark.DefaultConfig(), events)
	if err != nil {
		t.Fatal(err)
	}
	q, err := nexmark.Lookup("q12")
	if err != nil {
		t.Fatal(err)
	}
	var want []nexmark.Row
	q.Hand(evs, func(r *nexmark.Row) { want = append(want, *r) })
	got, want = q.Totals(got), q.Totals(want)
	if len(want) < 10 || !slices.Equal(got, want) {
		t.Errorf("%d bidders' totals, the loop's %d; first differing:\n%s", len(got), len(want), firstRowDiff(got, want))
	}
}
