package kafkaio

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

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
