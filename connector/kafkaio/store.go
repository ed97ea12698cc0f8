package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
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
	return t.ScanKeyed(ctx, func(_, line []byte) error { return fn(line) })
}

// ScanKeyed implements connector.KeyedLogStore: a tombstone (a record
// without a value) is given with a nil line.
func (t *resultsTopic) ScanKeyed(ctx context.Context, fn func(key, line []byte) error) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := t.exists(ctx); err != nil {
		return err
	}
	var ferr error
	err := ReadCommitted(ctx, t.brokers, []string{t.topic}, time.Second, func(rec *kgo.Record) {
		if ferr == nil {
			if ferr = fn(rec.Key, rec.Value); ferr != nil {
				cancel() // stop at fn's first error
			}
		}
	}, t.auth...)
	if ferr != nil {
		return ferr
	}
	if err != nil {
		return t.failed("read", err)
	}
	return nil
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
	if err := t.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return t.failed("produce the revisions to", err)
	}
	return nil
}

// exists refuses a topic that is not there (connector.ErrNoResults):
// reading it would find no results, which is no answer.
func (t *resultsTopic) exists(ctx context.Context) error {
	cl, err := kgo.NewClient(append(append([]kgo.Opt(nil), t.auth...), kgo.SeedBrokers(t.brokers...))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	topics, err := kadm.NewClient(cl).ListTopics(ctx, t.topic)
	if err != nil {
		return t.failed("look up", err)
	}
	if d, ok := topics[t.topic]; !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("topic %s at %s does not exist (is sinks.results.topic the job's results topic?): %w", t.topic, strings.Join(t.brokers, ","), connector.ErrNoResults)
	}
	return nil
}

// failed is err of doing what to the topic, naming the topic and the
// brokers, with the fix of a topic that is not there.
func (t *resultsTopic) failed(what string, err error) error {
	err = fmt.Errorf("%s topic %s at %s: %w", what, t.topic, strings.Join(t.brokers, ","), err)
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		err = fmt.Errorf("%w (is sinks.results.topic the job's results topic?)", err)
	}
	return err
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
