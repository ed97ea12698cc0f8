package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/nexmark"
)

// nexmarkDDL is the Nexmark project's source table and bid view, in
// weir's words: the same columns, computed time attribute, watermark
// and connector options (their ${...} placeholders filled in).
const nexmarkDDL = `
CREATE TABLE datagen (
  event_type INT,
  person ROW<id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR, state VARCHAR, dateTime TIMESTAMP(3), extra VARCHAR>,
  auction ROW<id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT, dateTime TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra VARCHAR>,
  bid ROW<auction BIGINT, bidder BIGINT, price BIGINT, dateTime TIMESTAMP(3), extra VARCHAR>,
  dateTime AS CASE WHEN event_type = 0 THEN person.dateTime WHEN event_type = 1 THEN auction.dateTime ELSE bid.dateTime END,
  WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
) WITH (
  'connector' = 'nexmark',
  'first-event.rate' = '10000', 'next-event.rate' = '10000', 'events.num' = '%d',
  'person.proportion' = '1', 'auction.proportion' = '3', 'bid.proportion' = '46'
);
CREATE VIEW bid AS
SELECT bid.auction, bid.bidder, bid.price, dateTime, bid.extra
FROM datagen WHERE event_type = 2;
`

// TestNexmarkSQL runs Nexmark queries written as the Nexmark project
// writes them (its DDL, view and query; the sink a JSON file instead of
// blackhole) on the nexmark source and compares their rows with the
// hand-written loops over the same events.
func TestNexmarkSQL(t *testing.T) {
	const events = 30000
	for _, c := range []struct {
		name, sink, query string
		row               func(map[string]json.RawMessage) nexmark.Row
	}{
		{"q11", `CREATE TABLE nexmark_q11 (bidder BIGINT, bid_count BIGINT, starttime TIMESTAMP(3), endtime TIMESTAMP(3)) WITH ('connector' = 'filesystem', 'path' = 'out.jsonl');`, `
INSERT INTO nexmark_q11
SELECT B.bidder, count(*) as bid_count,
    SESSION_START(B.dateTime, INTERVAL '10' SECOND) as starttime,
    SESSION_END(B.dateTime, INTERVAL '10' SECOND) as endtime
FROM bid B
GROUP BY B.bidder, SESSION(B.dateTime, INTERVAL '10' SECOND);`,
			func(m map[string]json.RawMessage) nexmark.Row {
				return nexmark.Row{Start: sqlTime(t, m["starttime"]), End: sqlTime(t, m["endtime"]), A: sqlInt(t, m["bidder"]), B: sqlInt(t, m["bid_count"])}
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			job := fmt.Sprintf(nexmarkDDL, events) + c.sink + c.query
			if err := os.WriteFile(filepath.Join(dir, c.name+".sql"), []byte(job), 0o644); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), []string{"run", c.name + ".sql", "--deterministic"}, IO{Dir: dir, Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr})
			if code != ExitOK || !strings.Contains(stderr.String(), "conservation holds") {
				t.Fatalf("exit %d\n%s", code, stderr.String())
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
				got = append(got, c.row(m))
			}
			evs, err := nexmark.Generate(nexmark.DefaultConfig(), events)
			if err != nil {
				t.Fatal(err)
			}
			q, err := nexmark.Lookup(c.name)
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

// sqlTime reads a TIMESTAMP(3) as Flink's JSON writes it.
func sqlTime(t *testing.T, raw json.RawMessage) etime.Time {
	t.Helper()
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	tm, err := time.Parse("2006-01-02 15:04:05.000", s)
	if err != nil {
		t.Fatal(err)
	}
	return etime.Time(tm.UnixMilli())
}

func sqlInt(t *testing.T, raw json.RawMessage) int64 {
	t.Helper()
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil {
		t.Fatal(err)
	}
	return n
}
