package kafkaio

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/weirstream/weir/connector/connectortest"
)

// TestPrepareCreatesMarkerTopic: on brokers where only the results topic
// exists, Prepare creates the marker topic (one partition, compacted, the
// results topic's replication factor) once, and the sink's checkpoints
// then commit and are read back.
func TestPrepareCreatesMarkerTopic(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(3, "out"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o := SinkOptions{Brokers: brokers, TransactionalID: "weir-test-results", MarkerTopic: "out-weir-checkpoints", TransactionTimeout: 10 * time.Second}

	created, err := Prepare(ctx, o, []string{"out"}, true)
	if err != nil || !created {
		t.Fatalf("Prepare: created %v, %v; want created", created, err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	md, err := adm.Metadata(ctx, "out", o.MarkerTopic)
	if err != nil {
		t.Fatal(err)
	}
	out, markers := md.Topics["out"], md.Topics[o.MarkerTopic]
	if markers.Err != nil || len(markers.Partitions) != 1 {
		t.Fatalf("marker topic: %v, %d partitions, want 1", markers.Err, len(markers.Partitions))
	}
	if got, want := len(markers.Partitions[0].Replicas), len(out.Partitions[0].Replicas); got != want || want < 1 {
		t.Fatalf("marker topic replication factor %d, want the results topic's %d", got, want)
	}
	rc, err := adm.DescribeTopicConfigs(ctx, o.MarkerTopic)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := rc.On(o.MarkerTopic, nil)
	if err != nil {
		t.Fatal(err)
	}
	policy := ""
	for _, c := range cfg.Configs {
		if c.Key == "cleanup.policy" {
			policy = c.MaybeValue()
		}
	}
	if policy != "compact" {
		t.Fatalf("marker topic cleanup.policy %q, want compact", policy)
	}
	if created, err := Prepare(ctx, o, []string{"out"}, true); err != nil || created {
		t.Fatalf("second Prepare: created %v, %v; want neither", created, err)
	}

	// The sink commits checkpoints to the topic it created. A fresh start
	// numbers checkpoints from 1 again: the newest marker counts, not the
	// largest.
	for _, id := range []int64{5, 6, 1} {
		s, err := OpenSink(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Write(ctx, []*kgo.Record{&kgo.Record{Topic: "out", Key: []byte("k"), Value: []byte("v")}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.PreCommit(ctx, id); err != nil {
			t.Fatal(err)
		}
		if err := s.Commit(ctx, 0); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if got, ok, err := LastCommitted(ctx, o); err != nil || !ok || got != id {
			t.Fatalf("after checkpoint %d: last committed %d %v %v", id, got, ok, err)
		}
	}
	// Compaction keeps it so.
	c.Compact()
	if got, ok, err := LastCommitted(ctx, o); err != nil || !ok || got != 1 {
		t.Fatalf("after compaction: last committed %d %v %v, want 1", got, ok, err)
	}
}

// TestPrepareRefusals: a missing results topic, and a marker topic the
// broker does not let weir create (no CREATE permission, a creation
// policy), are refused before the run with the command that creates them.
func TestPrepareRefusals(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "out"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o := SinkOptions{Brokers: brokers, TransactionalID: "weir-test-results", MarkerTopic: "out-weir-checkpoints"}

	_, err = Prepare(ctx, o, []string{"out", "late"}, true)
	var te *TopicError
	if !errors.As(err, &te) || te.Topic != "late" || te.Marker || !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("a missing late topic: %v", err)
	}
	if got, want := te.Command(), "kafka-topics.sh --bootstrap-server "+brokers[0]+" --create --topic late"; got != want {
		t.Errorf("command %q, want %q", got, want)
	}
	if md := c.TopicInfo(o.MarkerTopic); md != nil {
		t.Fatalf("the marker topic was created although the run was refused")
	}

	for _, refusal := range []*kerr.Error{kerr.TopicAuthorizationFailed, kerr.PolicyViolation} {
		f := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.CreateTopics}, Topic: o.MarkerTopic, Err: refusal, Count: -1})
		_, err := Prepare(ctx, o, []string{"out"}, true)
		f.Remove()
		if !errors.As(err, &te) || !te.Marker || !errors.Is(err, refusal) {
			t.Fatalf("%s: %v, want a marker TopicError", refusal.Message, err)
		}
		want := "kafka-topics.sh --bootstrap-server " + brokers[0] + " --create --topic out-weir-checkpoints --partitions 1 --replication-factor 1 --config cleanup.policy=compact"
		if got := te.Command(); got != want {
			t.Errorf("%s: command %q, want %q", refusal.Message, got, want)
		}
		if !strings.Contains(err.Error(), refusal.Message) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: message %q names neither the refusal nor the command", refusal.Message, err)
		}
	}
	// Without checkpoints no marker is written: nothing is created.
	if created, err := Prepare(ctx, o, []string{"out"}, false); err != nil || created || c.TopicInfo(o.MarkerTopic) != nil {
		t.Fatalf("Prepare without markers: created %v, %v", created, err)
	}
}

// TestPrepareSilentBroker: brokers that accept a connection and never
// answer are said within AnswerWait, naming the brokers and what to
// check, not after the client's retries.
func TestPrepareSilentBroker(t *testing.T) {
	addr, _ := connectortest.SilentListener(t)
	defer func(w time.Duration) { AnswerWait = w }(AnswerWait)
	AnswerWait = 300 * time.Millisecond
	start := time.Now()
	_, err := Prepare(context.Background(), SinkOptions{Brokers: []string{addr}, TransactionalID: "weir-test-results", MarkerTopic: "m", TransactionTimeout: 10 * time.Second}, []string{"out"}, false)
	if err == nil || !strings.Contains(err.Error(), "did not answer within 300ms") || !strings.Contains(err.Error(), addr) {
		t.Fatalf("got %v, want the brokers that did not answer named", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("said after %v", d)
	}
}
