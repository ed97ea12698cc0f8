package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/weirstream/weir/internal/testenv"
)

// TestSQLNats runs a SQL job from a NATS JetStream stream (weir's nats
// connector in SQL, stop-at-end) to a JetStream subject, on an embedded
// nats-server: the rows are the per-user counts of what was published,
// and the dead letter and the too-late record go to their own subjects.
func TestSQLNats(t *testing.T) {
	url, js := testenv.EmbeddedJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for name, subj := range map[string]string{"ORDERS": "orders.>", "OUT": "out.>"} {
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subj}}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]int{}
	for i := range 300 {
		ts := int64(1767225600000 + i*100)
		if _, err := js.Publish(ctx, "orders.new", fmt.Appendf(nil, `{"user":"u%d","amount":%d,"ts":%d}`, i%3, i%10, ts)); err != nil {
			t.Fatal(err)
		}
		want[fmt.Sprintf("u%d@%d", i%3, ts/10000*10000)]++
	}
	for _, m := range []string{`not json`, `{"user":"u0","amount":1,"ts":1767225600000}`} {
		if _, err := js.Publish(ctx, "orders.new", []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	job := fmt.Sprintf(`SET 'weir.late.sink' = 'late';
SET 'weir.dead-letter.sink' = 'bad';
CREATE TABLE orders (`+"`user`"+` STRING, amount BIGINT, ts BIGINT, t AS TO_TIMESTAMP_LTZ(ts, 3), WATERMARK FOR t AS t - INTERVAL '1' SECOND)
  WITH ('connector' = 'nats', 'url' = '%[1]s', 'stream' = 'ORDERS', 'subjects' = 'orders.>', 'stop-at-end' = 'true',
        'scan.watermark.emit.strategy' = 'on-event');
CREATE TABLE counts (who STRING, minute TIMESTAMP(3), n BIGINT) WITH ('connector' = 'nats', 'url' = '%[1]s', 'subject' = 'out.counts');
CREATE TABLE late (x STRING) WITH ('connector' = 'nats', 'url' = '%[1]s', 'subject' = 'out.late');
CREATE TABLE bad (x STRING) WITH ('connector' = 'nats', 'url' = '%[1]s', 'subject' = 'out.bad');
INSERT INTO counts SELECT `+"`user`"+`, window_start, COUNT(*)
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(t), INTERVAL '10' SECOND)) GROUP BY `+"`user`"+`, window_start, window_end;
`, url)
	dir := filesIn(t, map[string]string{"nats.sql": job})
	code, _, stderr := runIn(dir, "run", "nats.sql")
	if code != ExitOK || !strings.Contains(stderr, "conservation holds: 302 in = 300 accepted (on time or late) + 1 side output + 0 dropped + 1 dead letters") {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	out, err := js.Stream(ctx, "OUT")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	var subjects []string
	cons, err := out.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	info, err := out.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range info.State.Msgs {
		m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		subjects = append(subjects, m.Subject())
		if m.Subject() != "out.counts" {
			continue
		}
		var r struct {
			Who    string `json:"who"`
			Minute string `json:"minute"`
			N      int    `json:"n"`
		}
		if err := json.Unmarshal(m.Data(), &r); err != nil {
			t.Fatal(err)
		}
		at, err := time.Parse("2006-01-02 15:04:05.000", r.Minute)
		if err != nil {
			t.Fatal(err)
		}
		got[fmt.Sprintf("%s@%d", r.Who, at.UnixMilli())] = r.N
	}
	if len(got) != len(want) || !slices.Contains(subjects, "out.late") || !slices.Contains(subjects, "out.bad") {
		t.Fatalf("%d rows, want %d; subjects %v", len(got), len(want), subjects)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: %d, want %d", k, got[k], n)
		}
	}
}
