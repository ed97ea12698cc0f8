package job

import (
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
