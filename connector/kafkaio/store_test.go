package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
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

// TestReadCommittedTellsNothingFromNoAnswer: reading a topic that is not
// there, or brokers that cannot be reached, is an error naming them, not
// an empty read (weir ledger and weir backfill read a Kafka late topic so
// and reported 0 entries when the broker was down); an empty topic reads
// as empty.
func TestReadCommittedTellsNothingFromNoAnswer(t *testing.T) {
	brokers := cluster(t, "empty", 1)
	ctx := context.Background()
	n := 0
	count := func(*kgo.Record) { n++ }
	if err := ReadCommitted(ctx, brokers, []string{"empty"}, 100*time.Millisecond, count); err != nil || n != 0 {
		t.Fatalf("an empty topic: %d records, %v", n, err)
	}
	err := ReadCommitted(ctx, brokers, []string{"nosuch"}, 100*time.Millisecond, count)
	if !errors.Is(err, ErrNoTopic) || !strings.Contains(err.Error(), "topic nosuch at "+brokers[0]) {
		t.Errorf("a topic that is not there: %v", err)
	}
	lt := &ledgerTopic{brokers: brokers, topic: "nosuch", reason: "window_expired"}
	if _, err := lt.Scan(ctx, nil, func([]byte) error { return nil }); !errors.Is(err, ErrNoTopic) || !strings.Contains(err.Error(), "sinks.late.topic") {
		t.Errorf("a late topic that is not there: %v", err)
	}
	down := []string{"127.0.0.1:1"}
	start := time.Now()
	err = ReadCommitted(ctx, down, []string{"empty"}, 100*time.Millisecond, count)
	if err == nil || errors.Is(err, ErrNoTopic) || !strings.Contains(err.Error(), "at 127.0.0.1:1") {
		t.Errorf("brokers that cannot be reached: %v", err)
	}
	if d := time.Since(start); d > listWait+5*time.Second {
		t.Errorf("the unreachable brokers took %v to tell", d)
	}
}

// TestReadCommittedReadsToTheEnd: a reader reads every committed record
// up to the topics' committed ends, past an aborted transaction at a
// partition's tail, however short quiet is and however small each fetch:
// it used to stop at the first poll that brought nothing within quiet,
// which on a busy machine left out the tail of a late topic (weir
// backfill's ledger) or of a test's output.
func TestReadCommittedReadsToTheEnd(t *testing.T) {
	brokers := cluster(t, "tail", 3)
	ctx := context.Background()
	const per = 3000
	var want []string
	for p := range int32(3) {
		var recs []*kgo.Record
		for i := range per {
			v := fmt.Sprintf("%d-%05d", p, i)
			recs = append(recs, &kgo.Record{Partition: p, Value: []byte(v)})
			want = append(want, v)
		}
		produce(t, brokers, "tail", recs...)
	}
	// A committed transaction, then an aborted one at the tail of
	// partition 0: its records are invisible, its marker is the end.
	for _, commit := range []bool{true, false} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("tail"), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID("t"))
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		v := fmt.Sprintf("tx-%v", commit)
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if commit {
			want = append(want, v)
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
		cl.Close()
	}
	var got []string
	if err := ReadCommitted(ctx, brokers, []string{"tail"}, time.Nanosecond, func(r *kgo.Record) { got = append(got, string(r.Value)) },
		kgo.FetchMaxBytes(2000), kgo.FetchMaxPartitionBytes(1000)); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("read %d records, want %d", len(got), len(want))
	}
}

// TestReadCommittedAbortedTail: an aborted transaction whose abort
// marker lies beyond the committed end (another producer's transaction
// is still open) at a partition's readable tail: the reader returns what
// was committed after a gap, without an error (the marker is never seen,
// so the end is not reached by a record).
func TestReadCommittedAbortedTail(t *testing.T) {
	brokers := cluster(t, "il", 1)
	ctx := context.Background()
	produce(t, brokers, "il", &kgo.Record{Partition: 0, Value: []byte("plain")})
	mk := func(id string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("il"), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID(id))
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	a, b := mk("a"), mk("b")
	defer a.Close()
	defer b.Close()
	if err := a.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := a.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("a-aborted")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := b.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := b.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("b-open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := a.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var got []string
	err := ReadCommitted(ctx, brokers, []string{"il"}, time.Second, func(r *kgo.Record) { got = append(got, string(r.Value)) })
	if err != nil || len(got) != 1 || got[0] != "plain" {
		t.Errorf("after %v: got %q, err %v; want the committed record", time.Since(start), got, err)
	}
}
