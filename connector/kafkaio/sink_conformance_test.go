package kafkaio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/connectortest"
)

// TestSinkConformance runs the sink suite on a one-partition topic, read
// as read_committed readers see it.
func TestSinkConformance(t *testing.T) {
	brokers := confCluster(t)
	var n atomic.Int64
	connectortest.RunSink(t, connectortest.Sink[*kgo.Record]{
		Kind: connectortest.Append,
		New: func(t testing.TB) (func(testing.TB) connector.Sink[*kgo.Record], func(testing.TB) []connectortest.Rec) {
			id := n.Add(1)
			topic, markers := confTopics(t, brokers, id)
			o := SinkOptions{Brokers: brokers, TransactionalID: fmt.Sprintf("weir-conformance-%d", id), MarkerTopic: markers, TransactionTimeout: 10 * time.Second}
			open := func(t testing.TB) connector.Sink[*kgo.Record] {
				s, err := OpenSink(o)
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			return open, readTopic(brokers, topic)
		},
		Make: func(r connectortest.Rec) *kgo.Record {
			b, _ := json.Marshal(r)
			return &kgo.Record{Topic: fmt.Sprintf("out-%d", n.Load()), Key: []byte(r.ID), Value: b}
		},
		Break: func(_ testing.TB, s connector.Sink[*kgo.Record]) { s.(*Sink).cl.Close() },
	})
}

// confTopics creates the results and marker topics of conformance test
// id and waits until they are listed.
func confTopics(t testing.TB, brokers []string, id int64) (topic, markers string) {
	topic, markers = fmt.Sprintf("out-%d", id), fmt.Sprintf("markers-%d", id)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopics(ctx, 1, 1, nil, topic, markers)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	// The topics are there before the sink produces to them.
	for {
		td, err := adm.ListTopics(ctx, topic, markers)
		if err == nil && td.Has(topic) && td.Has(markers) && td.Error() == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("topics %s, %s not listed: %v", topic, markers, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return topic, markers
}

// readTopic reads the Recs in topic as read_committed readers see them.
func readTopic(brokers []string, topic string) func(t testing.TB) []connectortest.Rec {
	return func(t testing.TB) []connectortest.Rec {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var out []connectortest.Rec
		var bad error
		if err := ReadCommitted(ctx, brokers, []string{topic}, time.Second, func(r *kgo.Record) {
			var rec connectortest.Rec
			if err := json.Unmarshal(r.Value, &rec); err != nil && bad == nil {
				bad = err
			}
			out = append(out, rec)
		}); err != nil || bad != nil {
			t.Fatalf("reading %s: %v %v", topic, err, bad)
		}
		return out
	}
}

// TestMessagesConformance runs the sink suite on the kafka kind as a job
// spec's runner opens it for results (OpenMessages): a transactional sink
// whose records carry the messages' keys and headers.
func TestMessagesConformance(t *testing.T) {
	brokers := confCluster(t)
	var n atomic.Int64
	connectortest.RunMessages(t, connectortest.Messages{Kind: connectortest.Append, Role: connector.RoleResults, Open: openMessages,
		New: func(t testing.TB) (connector.Settings, func(testing.TB) []connectortest.Rec) {
			topic, markers := confTopics(t, brokers, 1000+n.Add(1))
			return connectortest.MapSettings{"brokers": brokers, "topic": topic, "marker_topic": markers}, readTopic(brokers, topic)
		},
		Break: func(_ testing.TB, s connector.Sink[connector.Message]) { s.(*results).cl.Close() }})
}

// confCluster starts a one-broker kfake cluster for the test and returns
// its address.
func confCluster(t *testing.T) []string {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// TestLateMessagesConformance runs the sink suite on the kafka kind's
// sink of late records as the runner opens it: after the results sink,
// whose transactions carry its records (keyed by their entry ids). The
// pair is committed through the results sink, as the runner does.
func TestLateMessagesConformance(t *testing.T) {
	brokers := confCluster(t)
	var n atomic.Int64
	open := func(ctx context.Context, o connector.MessagesOpen) (connector.Sink[connector.Message], error) {
		ro := o
		ro.Role, ro.Name, ro.Output = connector.RoleResults, "results", "sinks.results"
		ro.Settings = connectortest.MapSettings{"brokers": brokers, "topic": o.Settings.String("results_topic"), "marker_topic": o.Settings.String("results_markers")}
		r, err := openMessages(ctx, ro)
		if err != nil {
			return nil, err
		}
		o.Open = []connector.Sink[connector.Message]{r}
		l, err := openMessages(ctx, o)
		if err != nil {
			r.Close()
			return nil, err
		}
		return &lateInResults{Sink: l, res: r.(*results)}, nil
	}
	connectortest.RunMessages(t, connectortest.Messages{Kind: connectortest.Append, Role: connector.RoleLate, Open: open,
		New: func(t testing.TB) (connector.Settings, func(testing.TB) []connectortest.Rec) {
			resultsTopic, markers := confTopics(t, brokers, 2000+n.Add(1))
			late, _ := confTopics(t, brokers, 2000+n.Add(1))
			read := readTopic(brokers, late)
			return connectortest.MapSettings{"brokers": brokers, "topic": late, "results_topic": resultsTopic, "results_markers": markers},
				func(t testing.TB) []connectortest.Rec {
					recs := read(t)
					for _, r := range recs {
						if r.ID == "" {
							t.Fatalf("a late record without its id: %v", r)
						}
					}
					return recs
				}
		},
		Break: func(_ testing.TB, s connector.Sink[connector.Message]) { s.(*lateInResults).res.cl.Close() }})
}

// lateInResults is a kafka late sink with the results sink whose
// transactions carry its records: Transactional and a CommitReporter
// through the results sink, whose Close closes the producer.
type lateInResults struct {
	connector.Sink[connector.Message]
	res *results
}

func (l *lateInResults) PreCommit(ctx context.Context, e int64) ([]byte, error) {
	return l.res.PreCommit(ctx, e)
}
func (l *lateInResults) Commit(ctx context.Context, e int64) error { return l.res.Commit(ctx, e) }
func (l *lateInResults) Abort(ctx context.Context) error           { return l.res.Abort(ctx) }
func (l *lateInResults) Recover(ctx context.Context, e int64, st []byte) error {
	return l.res.Recover(ctx, e, st)
}
func (l *lateInResults) Committed(ctx context.Context) (int64, bool, error) {
	return l.res.Committed(ctx)
}
func (l *lateInResults) Close() error { return errors.Join(l.Sink.Close(), l.res.Close()) }
