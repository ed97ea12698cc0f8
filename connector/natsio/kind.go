package natsio

import (
	"context"
	"time"

	"github.com/weirstream/weir/connector"
)

// Kinds are the job spec's kinds of this package: nats, a source and a
// sink.
func Kinds() []connector.Kind {
	return []connector.Kind{{Name: "nats",
		Doc: "reads a JetStream stream in stream order, its sequence in the checkpoints; publishes with a message id per record, which JetStream stores once",
		Source: &connector.SourceKind{Abilities: connector.AbilityPositions, IdleTimeout: time.Minute, Check: checkSource, Open: openSource, Fields: []connector.Field{
			{Name: "nats.url", Doc: "the server (default nats://127.0.0.1:4222)"},
			{Name: "nats.stream", Required: true, Doc: "the JetStream stream; its message data are JSON records"},
			{Name: "nats.subjects", Doc: "keep only messages of these subjects (wildcards allowed)"},
			{Name: "nats.start", Doc: "earliest (default), a stream sequence or an RFC 3339 time, for a run without a checkpoint"},
			{Name: "nats.stop_at_end", Doc: "end the job at the stream's last message at start"},
			{Name: "channels", Doc: "source channels (default 1); one reads the stream, the others stay idle"},
		}},
		Sink: &connector.SinkKind{Roles: connector.AllRoles, Abilities: connector.AbilityIdempotent, RecordAbilities: connector.AbilityIdempotent, Check: checkSink, OpenMessages: openMessages, Fields: []connector.Field{
			{Name: "url", Doc: "the server (default nats://127.0.0.1:4222)"},
			{Name: "subject", Required: true, Doc: "the subject published to; a JetStream stream must store it"},
			connector.ColumnsField,
		}}}}
}

// openSource opens a nats source of a job spec: its messages as Lines.
func openSource(_ context.Context, so connector.SourceOpen) (connector.OpenedSource, error) {
	s := so.Settings
	o := SourceOptions{URL: s.String("nats.url"), Stream: s.String("nats.stream"), Subjects: s.Strings("nats.subjects"),
		StopAtEnd: s.Bool("nats.stop_at_end"), Logger: so.Logger, Reach: so.Reach}
	switch so.Start.Kind {
	case connector.StartSequence:
		o.Start = StartAtSequence(so.Start.Seq)
	case connector.StartTime:
		o.Start = StartAtTime(so.Start.At)
	}
	return connector.OpenedSource{Source: NewLineSource(o), Name: "nats:" + o.Stream, Bounded: o.StopAtEnd}, nil
}
