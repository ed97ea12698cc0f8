package kafkaio

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/connector"
)

// openStore opens a job spec's Kafka results topic for weir backfill and
// the complete answer (connector.SinkKind.OpenStore): revisions are
// produced to the topic itself, keyed like the live job's results, and
// read back as read_committed readers see the topic.
func openStore(_ context.Context, o connector.StoreOpen) (connector.ResultsStore, error) {
	l := &resultsTopic{brokers: o.Settings.Strings("brokers"), topic: o.Settings.String("topic"), auth: AuthFrom(o.Settings, "")}
	return l, nil
}

// resultsTopic is a results topic (connector.LogStore). Its producer is
// made at the first Append.
type resultsTopic struct {
	brokers []string
	topic   string
	auth    []kgo.Opt
	cl      *kgo.Client
}

func (t *resultsTopic) Scan(ctx context.Context, fn func(line []byte) error) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var ferr error
	err := ReadCommitted(ctx, t.brokers, []string{t.topic}, time.Second, func(rec *kgo.Record) {
		if ferr == nil {
			ferr = fn(rec.Value)
		}
	}, t.auth...)
	if ferr != nil {
		return ferr
	}
	return err
}

// Append produces revs and waits for every in-sync replica. It is not
// transactional: a crash before backfill notes them published produces
// the same records again, which readers fold by pane.
func (t *resultsTopic) Append(ctx context.Context, revs []connector.Message) error {
	if t.cl == nil {
		cl, err := kgo.NewClient(append(append([]kgo.Opt(nil), t.auth...), kgo.SeedBrokers(t.brokers...), kgo.DefaultProduceTopic(t.topic),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))...)
		if err != nil {
			return err
		}
		t.cl = cl
	}
	recs := make([]*kgo.Record, len(revs))
	for i := range revs {
		recs[i] = record(t.topic, &revs[i])
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return t.cl.ProduceSync(ctx, recs...).FirstErr()
}

// Forget does nothing: a topic keeps every run's revisions, and readers
// take the newest run's.
func (t *resultsTopic) Forget(context.Context) error { return nil }

func (t *resultsTopic) Close() error {
	if t.cl != nil {
		t.cl.Close()
	}
	return nil
}
