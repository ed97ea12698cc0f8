package kafkaio

import "github.com/weirstream/weir/connector"

// Kinds are the job spec's kinds of this package: kafka, a source and a
// sink.
func Kinds() []connector.Kind {
	return []connector.Kind{{Name: "kafka",
		Doc: "reads a topic with a watermark per partition, offsets in the checkpoints; writes results, late records and dead letters in a transaction per checkpoint",
		Source: &connector.SourceKind{Abilities: connector.AbilityPositions, IdleTimeout: DefaultIdleTimeout, Check: checkSource, Fields: []connector.Field{
			{Name: "kafka.brokers", Required: true, Doc: "the seed brokers, host:port"},
			{Name: "kafka.topic", Required: true, Doc: "the topic to read; its values are JSON records"},
			{Name: "kafka.group", Doc: "the consumer group whose committed offsets start: committed reads"},
			{Name: "kafka.start", Doc: "earliest (default), latest, committed or an RFC 3339 time, for a run without a checkpoint"},
			{Name: "kafka.stop_at_end", Doc: "end the job at the ends the partitions had at start (a bounded replay)"},
			{Name: "kafka.tls", Doc: "connect with TLS (the system's roots)"},
			{Name: "kafka.sasl", Doc: "authentication: {mechanism: plain|scram-sha-256|scram-sha-512, user, password}"},
			{Name: "channels", Doc: "parallel source channels (default 1); partition p is read by channel p mod channels"},
		}},
		Sink: &connector.SinkKind{Roles: connector.AllRoles, Abilities: connector.AbilityTransactional | connector.AbilityUpsert, RecordAbilities: connector.AbilityTransactional, Check: checkSink, OpenMessages: openMessages, Prepare: prepare, Committed: committed, Fields: []connector.Field{
			{Name: "brokers", Required: true, Doc: "the seed brokers, host:port (late and dead_letter sinks write in the results sink's transactions, through its brokers)"},
			{Name: "topic", Required: true, Doc: "the topic written (it must exist); results are keyed by key and window, so a compacted topic keeps the newest firing (upsert)"},
			{Name: "marker_topic", Doc: "the topic of checkpoint markers (default <topic>-weir-checkpoints, created when missing)"},
			{Name: "tls", Doc: "connect with TLS (the system's roots)"},
			{Name: "sasl", Doc: "authentication: {mechanism: plain|scram-sha-256|scram-sha-512, user, password}"},
		}}}}
}
