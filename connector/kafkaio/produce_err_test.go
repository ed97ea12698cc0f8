package kafkaio

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestProduceErrorSurfaces: a record the broker refuses fails the
// pre-commit with its cause, so the checkpoint does not complete (before,
// the error was dropped and only the commit failed, naming no cause).
func TestProduceErrorSurfaces(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "markers"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := OpenSink(SinkOptions{Brokers: c.ListenAddrs(), TransactionalID: "produce-err", MarkerTopic: "markers",
		ClientOptions: []kgo.Opt{kgo.UnknownTopicRetries(0)}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Write(ctx, []*kgo.Record{{Topic: "no-such-topic", Value: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	_, err = s.PreCommit(ctx, 1)
	if err == nil || !strings.Contains(err.Error(), "UNKNOWN_TOPIC_OR_PARTITION") {
		t.Fatalf("PreCommit after a refused record: %v, want the broker's UNKNOWN_TOPIC_OR_PARTITION", err)
	}
}
