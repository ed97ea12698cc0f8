package job

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/weirstream/weir/internal/testenv"
)

// TestNATSJob runs a spec from a JetStream stream to another on an
// embedded nats-server: the results are a plain group-by of what was
// published (the publish time as event time), each published once to each
// of two results sinks whose subjects one stream stores (their message
// ids differ), and every record is accounted for.
func TestNATSJob(t *testing.T) {
	url, js := testenv.EmbeddedJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for name, subj := range map[string]string{"ORDERS": "orders.>", "RESULTS": "results.>", "LATE": "late.>"} {
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subj}}); err != nil {
			t.Fatal(err)
		}
	}
	const n = 2000
	want := map[string]int{}
	for i := range n {
		ts := int64(1767225600000 + i*10)
		if _, err := js.Publish(ctx, "orders.new", fmt.Appendf(nil, `{"user_id":"u%d","amount":%d,"ts":%d}`, i%3, i%10, ts)); err != nil {
			t.Fatal(err)
		}
		want[fmt.Sprintf("u%d@%d", i%3, ts/5000*5000)]++
	}
	if _, err := js.Publish(ctx, "orders.new", []byte(`not json`)); err != nil {
		t.Fatal(err)
	}
	// Too late: its window ended long before.
	if _, err := js.Publish(ctx, "orders.new", []byte(`{"user_id":"u0","amount":1,"ts":1767225600000}`)); err != nil {
		t.Fatal(err)
	}
	job := fmt.Sprintf(`name: nats
source:
  type: nats
  nats: {url: '%s', stream: ORDERS, stop_at_end: true}
watermark: {max_out_of_orderness: 1s, emit: every_record}
key: [user_id]
window: {type: tumbling, size: 5s}
aggregate:
  - {name: orders, fn: count}
sinks:
  results:
    - {type: nats, url: '%[2]s', subject: results.orders}
    - {type: nats, url: '%[2]s', subject: results.copy}
  late: {type: nats, url: '%[2]s', subject: late.records}
  dead_letter: {type: nats, url: '%[2]s', subject: late.bad}
`, url, url)
	// Twice: the second run is a new run, whose message ids carry its run
	// (JetStream would drop the same ids within its duplicate window as
	// replays), so each stream holds each run's messages once and readers
	// fold them by (run, pane). (A replay within one run publishes the
	// same ids: connector/natsio's tests.)
	for range 2 {
		_, sum := runSpec(t, job, nil, RunOptions{})
		if !sum.Conserved() || sum.Get("records_in") != n+2 || sum.Get("dead_letter") != 1 || sum.Get("late_side_output") != 1 {
			t.Fatalf("summary %s", sum.JSON())
		}
	}
	lateStream, err := js.Stream(ctx, "LATE")
	if err != nil {
		t.Fatal(err)
	}
	for subj, want := range map[string]string{"late.records": `"id":"2002","record":{"user_id":"u0"`, "late.bad": `"source":"nats:ORDERS","line":2001,"raw":"not json"`} {
		m, err := lateStream.GetLastMsgForSubject(ctx, subj)
		if err != nil {
			t.Fatalf("%s: %v", subj, err)
		}
		if !strings.Contains(string(m.Data), want) || m.Sequence <= 2 {
			t.Fatalf("%s: seq %d %s, want the second run's to hold %s", subj, m.Sequence, m.Data, want)
		}
		// The message id: the sink's name, the run, the entry id.
		if id, name := m.Header.Get("Nats-Msg-Id"), map[string]string{"late.records": "late/", "late.bad": "dead_letter/"}[subj]; !strings.HasPrefix(id, name) || strings.Count(id, "/") != 2 {
			t.Fatalf("%s: message id %q, want %s<run>/<entry id>", subj, id, name)
		}
	}
	if info, err := lateStream.Info(ctx); err != nil || info.State.Msgs != 4 {
		t.Fatalf("LATE stream: %v, %+v; want 4 messages (2 per run)", err, info)
	}
	stream, err := js.Stream(ctx, "RESULTS")
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if int(info.State.Msgs) != 2*2*len(want) {
		t.Fatalf("%d results published, want %d (each run's %d to each sink)", info.State.Msgs, 2*2*len(want), len(want))
	}
	perRun := map[string]int{}
	for seq := uint64(1); seq <= info.State.LastSeq; seq++ {
		m, err := stream.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			User   string `json:"user_id"`
			Start  int64  `json:"window_start"`
			Run    int64  `json:"run"`
			Orders int    `json:"orders"`
		}
		if err := json.Unmarshal(m.Data, &r); err != nil {
			t.Fatal(err)
		}
		if k := fmt.Sprintf("%s@%d", r.User, r.Start); want[k] != r.Orders {
			t.Fatalf("%s: %d orders, want %d", k, r.Orders, want[k])
		}
		if h := m.Header.Get("weir-run"); h != strconv.FormatInt(r.Run, 10) {
			t.Fatalf("message %d: header weir-run %q, line's run %d", seq, h, r.Run)
		}
		perRun[fmt.Sprint(m.Subject, " run ", r.Run)]++
	}
	if len(perRun) != 4 {
		t.Fatalf("results of runs %v, want 2 runs of %d each on each subject", perRun, len(want))
	}
	for run, n := range perRun {
		if n != len(want) {
			t.Fatalf("%s: %d results, want %d", run, n, len(want))
		}
	}
}
