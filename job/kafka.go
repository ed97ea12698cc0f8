package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/fileio"
	"github.com/weirstream/weir/connector/kafkaio"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/outfmt"
	"github.com/weirstream/weir/internal/record"
	"github.com/weirstream/weir/spec"
	"github.com/weirstream/weir/watermark"
)

// kafkaRecords is the stream of a kafka source: records decoded, with
// their timestamps and per-partition watermarks, in the reader.
func (j *Job) kafkaRecords(env *weir.Env) (weir.Stream[record.Record], error) {
	p, wm := j.plan, j.path.Watermark
	k := p.Source.Kafka
	decode := func(r *kafkaio.Record) (record.Record, etime.Time, error) {
		// Backward jumps are counted per partition: partition p is read
		// by channel p % channels, as its slot p / channels.
		ch := int(r.Partition) % p.Channels
		v, err := j.dec.DecodeSlot(fileio.Line{Kind: fileio.Data, Channel: ch, No: r.Offset + 1, Text: r.Value, Unchecked: true}, int(r.Partition)/p.Channels)
		if err != nil {
			return record.Record{}, 0, err
		}
		if p.TSFromKafka {
			// The decoder's promised watermark followed the record's own
			// field, not the Kafka timestamp the window uses: such records
			// are not judged as trailing.
			v.TS, v.Promised = r.Timestamp, etime.MinTime
		}
		v.Part = r.Partition
		return v, v.TS, nil
	}
	o := kafkaio.SourceOptions[record.Record]{Brokers: k.Brokers, Topic: k.Topic, Group: k.Group, Start: kafkaStart(p.Start), Decode: decode,
		WatermarkInterval: wm.Interval.Std(), IdleTimeout: zeroIsOff(wm.IdleTimeout.Std()), BacklogEvery: zeroIsOff(wm.BacklogEvery), MaxDrift: p.MaxDrift, StopAtEnd: k.StopAtEnd,
		Clock: j.env.Options().Clock, ClientOptions: outfmt.KafkaOpts(k.TLS, k.SASL), Logger: j.env.Options().Logger}
	if p.TSFromKafka && p.Checks {
		o.MaxFuture = p.MaxFuture
	}
	if wm.Time == spec.EventTime {
		bound := wm.Bound
		o.Watermarks = func() watermark.Generator[record.Record] {
			return watermark.BoundedOutOfOrderness[record.Record](bound)
		}
	}
	src, err := kafkaio.NewSource(o)
	if err != nil {
		return weir.Stream[record.Record]{}, err
	}
	j.srcName = "kafka:" + k.Topic
	return weir.FromSource(env, sourceStage, src, j.unboundedOptions(k.StopAtEnd)), nil
}

// committed is told that checkpoint id is complete.
func (j *Job) committed(id int64) error { return j.out.committed(id) }

// prepareKafka readies the brokers of a kafka results sink before the run
// (kafkaio.Prepare), so that a missing topic stops the run at start with
// the fix rather than at its first checkpoint: the topics of the results,
// late records and dead letters (the user's) must exist, and with
// checkpoints the marker topic (weir's) is created if it is missing; o.Info
// is told when it is.
func prepareKafka(p *spec.Plan, o RunOptions, checkpoints bool) error {
	var r *spec.Sink
	at := "" // the sink's spec path
	for i, k := range p.Sinks.Results {
		if k.Type == "kafka" {
			r, at = k, "sinks."+spec.ResultsPath(i, len(p.Sinks.Results))
			break
		}
	}
	if r == nil {
		return nil
	}
	// The records of kafka late and dead-letter sinks go into the results
	// sink's transactions, through its brokers.
	topics, paths := []string{r.Topic}, map[string]string{r.Topic: at + ".topic"}
	for _, k := range []struct {
		name string
		s    *spec.Sink
	}{{"late", p.Sinks.Late}, {"late_partial", p.Sinks.LatePartial}, {"dead_letter", p.Sinks.DeadLetter}} {
		if k.s != nil && k.s.Type == "kafka" {
			if _, ok := paths[k.s.Topic]; !ok {
				topics, paths[k.s.Topic] = append(topics, k.s.Topic), "sinks."+k.name+".topic"
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	created, err := kafkaio.Prepare(ctx, kafkaSinkOptions(p, r), topics, checkpoints)
	var te *kafkaio.TopicError
	switch {
	case errors.As(err, &te) && te.Marker:
		auth := ""
		if r.TLS || r.SASL != nil {
			auth = " (with --command-config naming the client's TLS and SASL settings)"
		}
		return fmt.Errorf("%s.marker_topic: the marker topic %q, where the results sink commits its checkpoints, is missing, and weir may not create it: %w; create it once%s with\n  %s\nor give weir's user CREATE on it, or set marker_topic to an existing topic",
			at, te.Topic, te.Err, auth, te.Command())
	case errors.As(err, &te):
		return fmt.Errorf("%s: topic %q does not exist on %v: %w; create it (weir creates only its marker topic), such as with\n  %s",
			paths[te.Topic], te.Topic, r.Brokers, te.Err, te.Command())
	case err != nil:
		return fmt.Errorf("%s: %w", at, err)
	}
	if created && o.Info != nil {
		o.Info(fmt.Sprintf("created Kafka topic %s (1 partition, cleanup.policy=compact) for the checkpoint markers of the results in %s", r.MarkerTopic, r.Topic))
	}
	return nil
}

// kafkaSinkOptions are the options of p's kafka results sink k.
func kafkaSinkOptions(p *spec.Plan, k *spec.Sink) kafkaio.SinkOptions {
	return kafkaio.SpecSinkOptions(spec.SinkSettings(k), p.Name)
}

// kafkaStart is the plan's start position as the Kafka source's.
func kafkaStart(s spec.Start) kafkaio.Start {
	switch s.Kind {
	case spec.StartLatest:
		return kafkaio.Start{Kind: kafkaio.StartLatest}
	case spec.StartCommitted:
		return kafkaio.Start{Kind: kafkaio.StartCommitted}
	case spec.StartTime:
		return kafkaio.Start{Kind: kafkaio.StartTime, Time: etime.FromTime(s.At)}
	}
	return kafkaio.Start{Kind: kafkaio.StartEarliest}
}
