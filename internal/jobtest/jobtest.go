// Package jobtest holds what the tests of the job runner and of backfill
// share: fixed clocks, job specs, Postgres tables and Kafka topics read
// as their readers see them. It does not import the runner, so the
// runner's own tests can use it.
package jobtest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/connector/kafkaio"
	"github.com/weirstream/weir/internal/pgproxy"
	"github.com/weirstream/weir/internal/testenv"
	"github.com/weirstream/weir/spec"
)

// TestNow is the processing time of the tests' deterministic runs.
var TestNow = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

// OrderJob counts and sums 30,000 generated orders per user in 1-minute
// windows with 3 minutes of allowed lateness and early firings, late
// records to late.jsonl; its %s are the results sink's type and path.
const OrderJob = `
name: orders
source:
  type: generator
  generator:
    records: 30000
    keys: 50
    duration: 30m
    disorder:
      - {share: 0.9, max: 20s}
      - {share: 0.08, min: 20s, max: 5m}
      - {share: 0.02, min: 5m, max: 30m}
    bad: 0.002
    seed: 3
watermark: {max_out_of_orderness: 20s}
key: [user_id]
window: {type: tumbling, size: 1m}
allowed_lateness: 3m
trigger: {type: continuous, interval: 20s}
aggregate:
  - {name: orders, fn: count}
  - {name: total, fn: sum, field: amount}
  - {name: users, fn: count_distinct, field: user_id}
sinks:
  results: {type: %s, path: %s}
  late: {type: jsonl, path: late.jsonl}
  dead_letter: {type: jsonl, path: bad.jsonl}
`

// EveryRead is a checkpoint clock (RunOptions.CheckpointClock) that has
// passed any interval up to an hour at every look: a deterministic run
// takes a checkpoint before every read of its source.
func EveryRead() clock.Clock { return clock.NewStepping(TestNow, time.Hour) }

// PgURL returns the test Postgres and a connection to it, closed at
// cleanup; testenv.Postgres skips the test when it is not reachable
// (failing it when WEIR_REQUIRE_SERVICES=1).
func PgURL(t *testing.T) (string, *pgx.Conn) {
	t.Helper()
	u := testenv.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return u, conn
}

// BackfillJob runs every aggregate over 20,000 generated orders, results
// to SQLite and too-late records to the ledger, for a backfill to fold;
// its %s are the bound and the window.
const BackfillJob = `
name: bf
source:
  type: generator
  generator:
    records: 20000
    keys: 20
    duration: 30m
    disorder:
      - {share: 0.95, max: 10s}
      - {share: 0.04, min: 10s, max: 2m}
      - {share: 0.01, min: 2m30s, max: 20m}
    seed: 9
watermark: {max_out_of_orderness: %s}
key: [user_id]
window: %s
allowed_lateness: 2m
aggregate:
  - {name: orders, fn: count}
  - {name: total, fn: sum, field: amount}
  - {name: biggest, fn: max, field: amount}
  - {name: smallest, fn: min, field: amount}
  - {name: mean, fn: avg, field: amount}
  - {name: first_order, fn: first, field: order_id}
  - {name: last_order, fn: last, field: order_id}
  - {name: amounts, fn: count_distinct, field: amount}
  - {name: order_ids, fn: collect, field: order_id}
sinks:
  results: {type: sqlite, path: results.db}
  late: {type: ledger, dir: ledger}
`

// PgTable names a fresh Postgres table (prefix and a random number) that
// the test drops at its end, with the applied table a backfill makes
// beside a results table.
func PgTable(t *testing.T, conn *pgx.Conn, prefix string) string {
	table := fmt.Sprintf("%s_%d", prefix, rand.Uint32())
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), `DROP TABLE IF EXISTS `+table)
		_, _ = conn.Exec(context.Background(), `DROP TABLE IF EXISTS `+table+`_backfill_applied`)
	})
	return table
}

// DumpPG reads a Postgres results table and its applied table whole, in
// order, as text.
func DumpPG(t *testing.T, conn *pgx.Conn, table string) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{`SELECT * FROM ` + table + ` ORDER BY 1, 2, 3, 4`, `SELECT * FROM ` + table + `_backfill_applied ORDER BY 1, 2, 3, 4, 5`} {
		rows, err := conn.Query(context.Background(), q)
		if err != nil {
			if strings.Contains(err.Error(), "does not exist") {
				continue
			}
			t.Fatal(err)
		}
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(&b, vals...)
		}
		rows.Close()
		if err := rows.Err(); err != nil && !strings.Contains(err.Error(), "does not exist") {
			t.Fatal(err)
		}
	}
	return b.String()
}

// Committed reads topic as read_committed readers see it, sorted, with
// the run ids of its results (header weir-run, field run) as R; every
// record must carry one run.
func Committed(t *testing.T, broker, topic string) []string {
	t.Helper()
	runsSeen := map[string]map[string]bool{}
	defer func() {
		if topic == "out" && len(runsSeen[topic]) != 1 {
			t.Errorf("results of %d runs %v, want one run's", len(runsSeen[topic]), runsSeen[topic])
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out []string
	err := kafkaio.ReadCommitted(ctx, []string{broker}, []string{topic}, time.Second, func(r *kgo.Record) {
		var hdr []string
		if topic == "out" && !slices.ContainsFunc(r.Headers, func(h kgo.RecordHeader) bool { return h.Key == "weir-run" }) {
			t.Errorf("result %s carries no weir-run header", r.Value)
		}
		for _, h := range r.Headers {
			if h.Key == "weir-run" {
				// A run's id is when it began: the same in every record
				// of one run (however often it resumed), another in a
				// reference run.
				if runs := runsSeen[topic]; runs == nil {
					runsSeen[topic] = map[string]bool{}
				}
				runsSeen[topic][string(h.Value)] = true
				h.Value = []byte("R")
			}
			hdr = append(hdr, h.Key+"="+string(h.Value))
		}
		out = append(out, string(r.Key)+" "+stableJSON(t, r.Value)+" "+strings.Join(hdr, ","))
	})
	if err != nil {
		t.Fatalf("reading %s: %v", topic, err)
	}
	slices.Sort(out)
	return out
}

// stableJSON is a result or dead-letter line without the fields that
// depend on when it was written (the watermark at firing, a dead letter's
// detail, which may name the wall clock), its run and job name as R and J
// (a reference run is another run, often of a job of another name).
func stableJSON(t testing.TB, line []byte) string {
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	delete(m, "watermark")
	delete(m, "detail")
	if _, ok := m["run"]; ok {
		m["run"] = "R"
	}
	if _, ok := m["job"]; ok {
		m["job"] = "J"
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// StartPGProxy starts a proxy in front of the Postgres of url, closed
// when the test ends, and returns it with url through it.
func StartPGProxy(t *testing.T, url string) (*pgproxy.Proxy, string) {
	t.Helper()
	p, err := pgproxy.Start(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	purl, err := p.ConnString(url)
	if err != nil {
		t.Fatal(err)
	}
	return p, purl
}

// KeyJob sums amount by k in 10 s windows; %s is the results sink.
const KeyJob = `
name: keys
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
key: [k]
window: {type: tumbling, size: 10s}
aggregate:
  - {name: n, fn: count}
  - {name: total, fn: sum, field: amount}
sinks:
  results: %s
  dead_letter: {type: jsonl, path: dead.jsonl}
`

// ResultLines returns a jsonl results file's lines, sorted.
func ResultLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	slices.Sort(lines)
	return lines
}

// LiveJob counts generated orders per user and second; %s is the
// generator's settings.
const LiveJob = `
name: live
source:
  type: generator
  generator: %s
  timestamp: {max_future: 500ms}
watermark: {max_out_of_orderness: 100ms}
key: [user_id]
window: {type: tumbling, size: 1s}
aggregate: [{name: orders, fn: count}]
sinks:
  results: {type: jsonl, path: out.jsonl}
  dead_letter: {type: jsonl, path: bad.jsonl}
`

// Prepare writes files into dir (a new temporary directory when empty)
// and compiles the YAML spec, failing the test on an error; it returns
// the directory and the plan, for the caller to run.
func Prepare(t testing.TB, yaml string, files map[string]string, dir string) (string, *spec.Plan) {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := spec.Load([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	p, err := spec.Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	return dir, p
}

// DecimalJob aggregates amount every way a number is aggregated.
const DecimalJob = `
name: dec
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
key: [k]
window: {type: tumbling, size: 1m}
aggregate:
  - {name: total, fn: sum, field: amount}
  - {name: mean, fn: avg, field: amount}
  - {name: smallest, fn: min, field: amount}
  - {name: biggest, fn: max, field: amount}
`

// CaughtUp waits (up to d) until group committed every partition of
// topics to its end offset, and fails the test otherwise.
func CaughtUp(t testing.TB, broker, group string, d time.Duration, topics ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for deadline := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("group %s did not commit %v to their ends within %v", group, topics, d)
		}
		offs, err1 := adm.FetchOffsets(context.Background(), group)
		ends, err2 := adm.ListEndOffsets(context.Background(), topics...)
		if err1 != nil || err2 != nil || len(ends) < len(topics) {
			continue
		}
		behind := false
		ends.Each(func(l kadm.ListedOffset) {
			if c, ok := offs.Lookup(l.Topic, l.Partition); !ok || c.At < l.Offset {
				behind = true
			}
		})
		if !behind {
			return
		}
	}
}

// Diff lists up to five lines of a missing from b ("- ") and up to five
// of b missing from a ("+ "), for a test's failure message.
func Diff(a, b []string) string {
	var out strings.Builder
	for _, side := range []struct {
		sign     string
		from, in []string
	}{{"- ", a, b}, {"+ ", b, a}} {
		in := make(map[string]bool, len(side.in))
		for _, x := range side.in {
			in[x] = true
		}
		n := 0
		for _, x := range side.from {
			if n < 5 && !in[x] {
				out.WriteString(side.sign + x + "\n")
				n++
			}
		}
	}
	return out.String()
}
