package kafkaio

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// readCommitted reads every record of topic that read_committed readers
// see, until the last stable offset.
func readCommitted(t *testing.T, brokers []string, topic string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []string
	if err := ReadCommitted(ctx, brokers, []string{topic}, time.Second, func(r *kgo.Record) {
		out = append(out, string(r.Key)+"="+string(r.Value))
	}); err != nil {
		t.Fatalf("reading %s: %v", topic, err)
	}
	return out
}

// TestSinkExactlyOnceAcrossCrash: checkpoint 1 commits; checkpoint 2's
// transaction is flushed but its sink "crashes" before committing. The
// marker says checkpoint 1 is the last complete one; a new sink with the
// same transactional id produces epoch 2 again: read_committed readers see
// every record once.
func TestSinkExactlyOnceAcrossCrash(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "out"), kfake.SeedTopics(1, "markers"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	o := SinkOptions{Brokers: brokers, TransactionalID: "weir-test-results", MarkerTopic: "markers", TransactionTimeout: 10 * time.Second}
	ctx := context.Background()
	epoch := func(s *Sink, n int) {
		for i := range 10 {
			if err := s.Write(ctx, []*kgo.Record{&kgo.Record{Topic: "out", Key: fmt.Appendf(nil, "e%d-%d", n, i), Value: []byte("v")}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, ok, err := LastCommitted(ctx, o); err != nil || ok {
		t.Fatalf("before any checkpoint: ok=%v err=%v", ok, err)
	}
	s, err := OpenSink(o)
	if err != nil {
		t.Fatal(err)
	}
	epoch(s, 1)
	if _, err := s.PreCommit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, 0); err != nil {
		t.Fatal(err)
	}
	epoch(s, 2)
	if _, err := s.PreCommit(ctx, 2); err != nil {
		t.Fatal(err)
	}
	// Crash: the process dies with checkpoint 2's transaction open (the
	// client is closed only at the end of the test, as the broker would
	// eventually time it out).
	t.Cleanup(func() { s.cl.Close() })

	id, ok, err := LastCommitted(ctx, o)
	if err != nil || !ok || id != 1 {
		t.Fatalf("last committed checkpoint: %d %v %v, want 1", id, ok, err)
	}
	s2, err := OpenSink(o)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	epoch(s2, 2) // replayed from checkpoint 1
	if _, err := s2.PreCommit(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := s2.Commit(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if id, ok, err := LastCommitted(ctx, o); err != nil || !ok || id != 2 {
		t.Fatalf("last committed checkpoint: %d %v %v, want 2", id, ok, err)
	}
	// The end of the input is epoch 0: committed without a marker, so the
	// newest checkpoint stays 2 and a restore from it is still accepted.
	epoch(s2, 3)
	if _, err := s2.PreCommit(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := s2.Commit(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if id, ok, err := LastCommitted(ctx, o); err != nil || !ok || id != 2 {
		t.Fatalf("after epoch 0, last committed checkpoint: %d %v %v, want 2", id, ok, err)
	}
	if err := s2.Recover(ctx, 2, nil); err != nil {
		t.Fatalf("Recover(2) after epoch 0: %v", err)
	}
	got := readCommitted(t, brokers, "out")
	seen := map[string]int{}
	for _, r := range got {
		seen[r]++
	}
	if len(got) != 30 || len(seen) != 30 {
		t.Fatalf("read_committed saw %d records (%d distinct), want 30 once each: %v", len(got), len(seen), got)
	}
}
