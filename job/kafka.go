package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/fileio"
	"github.com/weirstream/weir/connector/kafkaio"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/outfmt"
	"github.com/weirstream/weir/internal/record"
	"github.com/weirstream/weir/spec"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
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

// txnSink is a results sink that commits a checkpoint's output in a
// transaction after the checkpoint: preCommit makes the epoch's output
// durable but invisible, committed makes it visible.
type txnSink interface {
	preCommit(id int64) error
	committed() error
}

// committed is told that checkpoint id is complete.
func (j *Job) committed(int64) error {
	for _, r := range j.results {
		if t, ok := r.resultSink.(txnSink); ok {
			if err := t.committed(); err != nil {
				return err
			}
		}
	}
	return nil
}

// txnID is the transactional id of the job's kafka results sink: stable
// across restarts, unique to the job's name.
func txnID(p *spec.Plan) string {
	name := p.Name
	if name == "" {
		name = "job"
	}
	return "weir-" + name + "-results"
}

func (j *Job) txnID() string { return txnID(j.plan) }

// kafkaResults writes results to a Kafka topic, keyed by their key fields
// and window, with the firing kind, run and pane in headers; one transaction
// per checkpoint (kafkaio.Sink).
type kafkaResults struct {
	s     *kafkaio.Sink
	topic string
	j     *Job
	line  []byte
	one   [1]*kgo.Record // the record being written
}

func openKafkaResults(j *Job, k *spec.Sink) (*kafkaResults, error) {
	o := kafkaSinkOptions(k, j.txnID())
	o.Logger = j.env.Options().Logger // aborted and redone transactions
	s, err := kafkaio.OpenSink(o)
	if err != nil {
		return nil, err
	}
	return &kafkaResults{s: s, topic: k.Topic, j: j}, nil
}

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
	created, err := kafkaio.Prepare(ctx, kafkaSinkOptions(r, txnID(p)), topics, checkpoints)
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

func kafkaSinkOptions(k *spec.Sink, txnID string) kafkaio.SinkOptions {
	return kafkaio.SinkOptions{Brokers: k.Brokers, TransactionalID: txnID, MarkerTopic: k.MarkerTopic, ClientOptions: outfmt.KafkaOpts(k.TLS, k.SASL)}
}

func (w *kafkaResults) write(r window.Result[string, []byte]) error {
	w.line = outfmt.AppendResult(w.line[:0], w.j.plan, w.j.run, r)
	key := outfmt.AppendResultKey(nil, w.j.plan, r)
	w.one[0] = &kgo.Record{Topic: w.topic, Key: key, Value: append([]byte(nil), w.line...), Headers: outfmt.ResultHeaders(r.Firing, w.j.run, r.Pane)}
	return w.s.Write(context.Background(), w.one[:])
}

// commit is a no-op: the checkpoint's transaction is flushed by
// preCommit and committed once the checkpoint is (committed).
func (w *kafkaResults) commit() error { return nil }

func (w *kafkaResults) preCommit(id int64) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := w.s.PreCommit(ctx, id)
	return err
}

func (w *kafkaResults) committed() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return w.s.Commit(ctx, 0)
}

// close commits what the end of a run that ended well produced (no
// checkpoint covers it), or aborts it after a failure (a restart produces
// it again), and closes the producer.
func (w *kafkaResults) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	if w.j.execFailed || w.j.failed.Load() {
		err = w.s.Abort(ctx)
	} else {
		err = w.s.Finish(ctx)
	}
	if cerr := w.s.Close(); err == nil {
		err = cerr
	}
	return err
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
