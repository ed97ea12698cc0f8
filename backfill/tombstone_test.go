package backfill

import (
	"encoding/json"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/spec"
)

// TestLatestResultsTombstones: the results of a Kafka topic keyed by a
// primary key, read back for the complete answer, leave out a session
// its key's tombstone retracted (absorbed by a late record), as a
// compacted topic does; without the tombstone read, the absorbed
// session's row stayed beside the session that absorbed it.
func TestLatestResultsTombstones(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "sess"), kfake.SeedTopics(1, "sess-weir-checkpoints"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	yml := `
name: sessions
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
key: [user]
window: {type: session, gap: 10s}
allowed_lateness: 1m
aggregate: [{name: n, fn: count}]
sinks:
  results:
    type: kafka
    brokers: [` + c.ListenAddrs()[0] + `]
    topic: sess
    columns: [{name: who, from: user}, {name: ws, from: window_start, time: timestamp}, {name: we, from: window_end, time: timestamp}, {name: n}]
    primary_key: [who, ws]
`
	// Session [30s, 40s) fires, then a record at 25 s merges it into
	// [25s, 40s): its key (who, ws = 30 s) is retracted by a tombstone.
	in := `{"user":"a","ts":1767225600000}
{"user":"a","ts":1767225630000}
{"user":"a","ts":1767225660000}
{"user":"a","ts":1767225625000}
`
	dir, _ := runSpec(t, yml, map[string]string{"in.jsonl": in}, job.RunOptions{Deterministic: true})
	p, err := spec.Parse([]byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	got, _, _, err := latestResults(p, dir)
	if err != nil {
		t.Fatal(err)
	}
	a := []string{sqlCanonical(json.RawMessage(`"a"`))}
	n := func(v string) string { return valueCanonical(true, json.RawMessage(v)) }
	want := map[string]string{
		rowIdentity(a, "1767225600000", "1767225610000"): n("1"),
		rowIdentity(a, "1767225625000", "1767225640000"): n("2"),
		rowIdentity(a, "1767225660000", "1767225670000"): n("1"),
	}
	if len(got) != len(want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	for k, v := range want {
		if row, ok := got[k]; !ok || len(row) != 1 || row[0] != v {
			t.Fatalf("row %s: %v, want [%s] (rows %v)", k, row, v, got)
		}
	}
}
