package kafkaio

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/connectortest"
)

// TestResultsTopicStore: the results topic as backfill reads it back and
// appends revisions to it (connector.LogStore): a topic that is not there
// is connector.ErrNoResults, naming it; revisions appended are read back
// with the lines already there.
func TestResultsTopicStore(t *testing.T) {
	brokers := cluster(t, "results", 2)
	ctx := context.Background()
	open := func(topic string) connector.LogStore {
		t.Helper()
		st, err := openStore(ctx, connector.StoreOpen{Settings: connectortest.MapSettings{"brokers": brokers, "topic": topic}, Output: "sinks.results"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st.(connector.LogStore)
	}
	err := open("nosuch").Scan(ctx, func([]byte) error { return nil })
	if !errors.Is(err, connector.ErrNoResults) || !strings.Contains(err.Error(), "topic nosuch at ") {
		t.Fatalf("Scan of a topic that is not there: %v", err)
	}
	l := open("results")
	if err := l.Append(ctx, []connector.Message{{Key: []byte("k1"), Value: []byte(`{"n":1}`)}, {Key: []byte("k2"), Value: []byte(`{"n":2}`)}}); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := l.Scan(ctx, func(line []byte) error { got = append(got, string(line)); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("read back %q, want the two revisions", got)
	}
	if err := l.Forget(ctx); err != nil {
		t.Fatal(err)
	}
}
