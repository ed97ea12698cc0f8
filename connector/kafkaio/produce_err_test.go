package kafkaio

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
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

// TestRedoTransaction: a transaction the broker fails with an error of
// its sequence (as kfake does under load, and a broker may after a
// partition moved) is aborted and produced again in a new one, once:
// read_committed readers see every record of it once, and the marker
// names its checkpoint. A second such error fails the pre-commit.
func TestRedoTransaction(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "out", "markers"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var armed atomic.Int64 // produce requests to fail
	c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.ProduceRequest)
		if armed.Load() == 0 {
			return nil, nil, false
		}
		armed.Add(-1)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.OutOfOrderSequenceNumber.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	brokers := c.ListenAddrs()
	var logs strings.Builder
	o := SinkOptions{Brokers: brokers, TransactionalID: "redo", MarkerTopic: "markers", Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	s, err := OpenSink(o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	epoch := func(id int64, values ...string) error {
		var recs []*kgo.Record
		for _, v := range values {
			recs = append(recs, &kgo.Record{Topic: "out", Value: []byte(v)})
		}
		if err := s.Write(ctx, recs); err != nil {
			return err
		}
		if _, err := s.PreCommit(ctx, id); err != nil {
			return err
		}
		return s.Commit(ctx, id)
	}
	if err := epoch(1, "a", "b"); err != nil {
		t.Fatal(err)
	}
	armed.Store(1)
	if err := epoch(2, "c", "d"); err != nil {
		t.Fatalf("epoch 2, whose first produce failed with OUT_OF_ORDER_SEQUENCE_NUMBER: %v", err)
	}
	if !strings.Contains(logs.String(), "kafka transaction produced again in a new one") {
		t.Errorf("the redo was not logged:\n%s", logs.String())
	}
	armed.Store(2) // the transaction and its redo
	err = epoch(3, "e")
	if err == nil || !strings.Contains(err.Error(), "OUT_OF_ORDER_SEQUENCE_NUMBER") || !strings.Contains(err.Error(), "and again in a new transaction") {
		t.Fatalf("epoch 3, failed twice: %v", err)
	}
	armed.Store(0)
	if err := epoch(4, "f"); err != nil {
		t.Fatalf("epoch 4, after a failed one: %v", err)
	}
	var got []string
	if err := ReadCommitted(ctx, brokers, []string{"out"}, time.Second, func(r *kgo.Record) { got = append(got, string(r.Value)) }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "c", "d", "f"}; !slices.Equal(got, want) {
		t.Errorf("read_committed readers see %q, want %q", got, want)
	}
	if id, ok, err := LastCommitted(ctx, o); err != nil || !ok || id != 4 {
		t.Errorf("LastCommitted = %d, %v, %v; want 4", id, ok, err)
	}
}
