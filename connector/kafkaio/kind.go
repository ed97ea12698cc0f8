package kafkaio

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/watermark"
)

// Kinds are the job spec's kinds of this package: kafka, a source and a
// sink.
func Kinds() []connector.Kind {
	return []connector.Kind{{Name: "kafka",
		Doc: "reads a topic with a watermark per partition, offsets in the checkpoints; writes results, late records and dead letters in a transaction per checkpoint",
		Source: &connector.SourceKind{Abilities: connector.AbilityPositions, IdleTimeout: DefaultIdleTimeout, Check: checkSource, Open: openSource, Splits: true, Fields: []connector.Field{
			{Name: "kafka.brokers", Required: true, Doc: "the seed brokers, host:port"},
			{Name: "kafka.topic", Required: true, Doc: "the topic to read; its values are JSON records"},
			{Name: "kafka.group", Doc: "the consumer group whose committed offsets start: committed reads"},
			{Name: "kafka.start", Doc: "earliest (default), latest, committed or an RFC 3339 time, for a run without a checkpoint"},
			{Name: "kafka.stop_at_end", Doc: "end the job at the ends the partitions had at start (a bounded replay)"},
			{Name: "kafka.partitioned_by_key", Doc: "the topic is partitioned by the job's key with Kafka's default partitioner (murmur2): group mode (--instance) runs each partition as a task, and checks it"},
			{Name: "kafka.tls", Doc: "connect with TLS (the system's roots)"},
			{Name: "kafka.sasl", Doc: "authentication: {mechanism: plain|scram-sha-256|scram-sha-512, user, password}"},
			{Name: "channels", Doc: "parallel source channels (default 1); partition p is read by channel p mod channels"},
		}},
		Sink: &connector.SinkKind{Roles: connector.AllRoles, Abilities: connector.AbilityTransactional | connector.AbilityUpsert, RecordAbilities: connector.AbilityTransactional, Check: checkSink, OpenMessages: openMessages, OpenLedger: openLedger, Revise: connector.ReviseLog, OpenStore: openStore, Prepare: prepare, Committed: committed, Fields: []connector.Field{
			{Name: "brokers", Required: true, Doc: "the seed brokers, host:port (late and dead_letter sinks write in the results sink's transactions, through its brokers)"},
			{Name: "topic", Required: true, Doc: "the topic written (it must exist); results are keyed by key and window, so a compacted topic keeps the newest firing (upsert)"},
			{Name: "marker_topic", Doc: "the topic of checkpoint markers (default <topic>-weir-checkpoints, created when missing)"},
			{Name: "tls", Doc: "connect with TLS (the system's roots)"},
			{Name: "sasl", Doc: "authentication: {mechanism: plain|scram-sha-256|scram-sha-512, user, password}"},
			connector.ColumnsField,
			{Name: "primary_key", Doc: "results of columns only: the columns whose JSON object keys each message (the key fields' and window bounds'), as Flink's upsert-kafka keys a message by its table's primary key; a retraction is then the key's tombstone (a message without a value) (default: weir's own key, the key fields and the window's bounds in epoch ms)"},
		}}}}
}

// Line is r as the connector.Line a job spec's kafka source emits for it
// (connector.Liner: how a runner reports it as a dead letter).
func (r *Record) Line() connector.Line {
	return connector.Line{Kind: connector.Data, No: r.Offset + 1, Split: r.Partition, Time: r.Timestamp, Text: r.Value, Unchecked: true}
}

// openSource opens a kafka source of a job spec: its records as Lines,
// each partition watermarked in the reader as so.Splits says.
func openSource(ctx context.Context, so connector.SourceOpen) (connector.OpenedSource, error) {
	o, err := specSourceOptions(so)
	if err != nil {
		return connector.OpenedSource{}, err
	}
	src, err := NewSource(o)
	if err != nil {
		return connector.OpenedSource{}, err
	}
	// A topic that is not there is a missing input, refused before the
	// job runs (as a missing file is), not a failure to restart from.
	if err := topicExists(ctx, o); err != nil {
		return connector.OpenedSource{}, err
	}
	return connector.OpenedSource{Source: src, Name: "kafka:" + o.Topic, Bounded: o.StopAtEnd}, nil
}

// topicExists looks o.Topic up, within openTimeout: an error says that
// it does not exist (with the command that creates it) or that the
// brokers did not answer.
func topicExists[T any](ctx context.Context, o SourceOptions[T]) error {
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	adm, err := newAdmin(o.Brokers, o.ClientOptions)
	if err != nil {
		return err
	}
	defer adm.Close()
	switch _, _, err := topicPartitions(ctx, adm, o.Topic); {
	case errors.Is(err, ErrNoTopic):
		te := &TopicError{Topic: o.Topic, Brokers: o.Brokers, ReplicationFactor: -1, Err: kerr.UnknownTopicOrPartition}
		return fmt.Errorf("source.kafka.topic: topic %q does not exist on %v; create it, or name the topic to read, such as with\n  %s", o.Topic, o.Brokers, te.Command())
	case err != nil:
		return fmt.Errorf("source.kafka.brokers %v: %w", o.Brokers, err)
	}
	return nil
}

// OpenTaskSource opens a job spec's kafka source as the source of a
// group member's task: it reads partition p only, from f (the member's
// consumer), starting at from where no position is restored.
func OpenTaskSource(_ context.Context, so connector.SourceOpen, f Fetcher, p int32, from int64) (connector.OpenedSource, error) {
	o, err := specSourceOptions(so)
	if err != nil {
		return connector.OpenedSource{}, err
	}
	o.Partitions, o.Fetcher, o.From = []int32{p}, f, map[int32]int64{p: from}
	src, err := NewSource(o)
	return connector.OpenedSource{Source: src, Name: "kafka:" + o.Topic, Bounded: o.StopAtEnd}, err
}

// specSourceOptions are the SourceOptions of a job spec's kafka source.
func specSourceOptions(so connector.SourceOpen) (SourceOptions[connector.Line], error) {
	s, w := so.Settings, so.Splits
	if w == nil {
		return SourceOptions[connector.Line]{}, errors.New("kafkaio: a kafka source watermarks its partitions: SourceOpen.Splits is unset")
	}
	channels := max(so.Channels, 1)
	o := SourceOptions[connector.Line]{Brokers: s.Strings("kafka.brokers"), Topic: s.String("kafka.topic"), Group: s.String("kafka.group"),
		Start: Start{Kind: StartEarliest}, WatermarkInterval: w.Interval, IdleTimeout: w.IdleTimeout, BacklogEvery: w.BacklogEvery,
		MaxDrift: w.MaxDrift, MaxFuture: so.MaxFuture, StopAtEnd: s.Bool("kafka.stop_at_end"), Strict: so.Strict, Clock: so.Clock, Logger: so.Logger, Reach: so.Reach, Checkpointed: so.Checkpointed,
		ClientOptions: AuthFrom(s, "kafka."),
		Decode: func(r *Record) (connector.Line, etime.Time, error) {
			l := r.Line()
			l.Channel = int(r.Partition) % channels
			ts, err := w.Stamp(l)
			return l, ts, err
		}}
	switch so.Start.Kind {
	case connector.StartLatest:
		o.Start.Kind = StartLatest
	case connector.StartCommitted:
		o.Start.Kind = StartCommitted
	case connector.StartTime:
		o.Start = Start{Kind: StartTime, Time: etime.FromTime(so.Start.At)}
	}
	if w.EventTime {
		bound := w.Bound
		o.Watermarks = func() watermark.Generator[connector.Line] {
			return watermark.ForBound[connector.Line](bound)
		}
	}
	return o, nil
}
