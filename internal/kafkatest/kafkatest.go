// Package kafkatest starts an in-process Kafka (franz-go's kfake) for
// tests.
package kafkatest

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Topic starts a one-broker cluster with topic of n partitions and
// returns its address and a client that produces to topic, into the
// partition each record names (kgo.ManualPartitioner). Both close when
// the test ends.
func Topic(t testing.TB, topic string, n int) (broker string, cl *kgo.Client) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(n), topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	broker = c.ListenAddrs()[0]
	cl, err = kgo.NewClient(kgo.SeedBrokers(broker), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return broker, cl
}
