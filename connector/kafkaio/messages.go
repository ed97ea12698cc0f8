package kafkaio

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/weirstream/weir/connector"
)

// Auth are the client options of a connection with TLS (the system's
// roots) and SASL (mechanism plain, scram-sha-256 or scram-sha-512; ""
// for none).
func Auth(useTLS bool, mechanism, user, password string) []kgo.Opt {
	var opts []kgo.Opt
	if useTLS {
		opts = append(opts, kgo.DialTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12}))
	}
	switch mechanism {
	case "plain":
		opts = append(opts, kgo.SASL(plain.Auth{User: user, Pass: password}.AsMechanism()))
	case "scram-sha-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha256Mechanism()))
	case "scram-sha-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha512Mechanism()))
	}
	return opts
}

// AuthFrom are the client options of the TLS and SASL settings of a
// source or sink block (tls, sasl.mechanism, sasl.user, sasl.password),
// under prefix ("kafka." for a source, "" for a sink).
func AuthFrom(s connector.Settings, prefix string) []kgo.Opt {
	return Auth(s.Bool(prefix+"tls"), s.String(prefix+"sasl.mechanism"), s.String(prefix+"sasl.user"), s.String(prefix+"sasl.password"))
}

// ResultsTxnID is the transactional id of a job spec's kafka results
// sink: stable across restarts, unique to the job's name.
func ResultsTxnID(job string) string {
	if job == "" {
		job = "job"
	}
	return "weir-" + job + "-results"
}

// SpecSinkOptions are the SinkOptions of a job spec's kafka results sink
// with settings s, of job.
func SpecSinkOptions(s connector.Settings, job string) SinkOptions {
	return SinkOptions{Brokers: s.Strings("brokers"), TransactionalID: ResultsTxnID(job), MarkerTopic: s.String("marker_topic"),
		ClientOptions: AuthFrom(s, "")}
}

// openMessages opens a kafka sink of a job spec. The results sink is a
// transactional Sink (one transaction per checkpoint, its marker in the
// marker topic); a late or dead-letter sink writes its records, keyed by
// their entry ids, in the results sink's transactions, so it needs one.
func openMessages(_ context.Context, o connector.MessagesOpen) (connector.Sink[connector.Message], error) {
	topic := o.Settings.String("topic")
	if o.Role != connector.RoleResults {
		for _, s := range o.Open {
			if r, ok := s.(*results); ok {
				return &records{s: r.Sink, topic: topic}, nil
			}
		}
		return nil, fmt.Errorf("a kafka sink for %s needs kafka results (one transaction holds both)", o.Name)
	}
	so := SpecSinkOptions(o.Settings, o.Job)
	so.Logger = o.Logger // aborted and redone transactions
	s, err := OpenSink(so)
	if err != nil {
		return nil, err
	}
	return &results{Sink: s, topic: topic}, nil
}

// MessageRecord is m as a Kafka record of topic, with copies of its
// bytes: what a kafka sink of a job spec writes for m.
func MessageRecord(topic string, m *connector.Message) *kgo.Record { return record(topic, m) }

// record is m as a Kafka record of topic; the sink keeps it (Write).
func record(topic string, m *connector.Message) *kgo.Record {
	r := &kgo.Record{Topic: topic, Key: append([]byte(nil), m.Key...), Value: append([]byte(nil), m.Value...)}
	if len(m.Headers) > 0 {
		r.Headers = make([]kgo.RecordHeader, len(m.Headers))
		for i, h := range m.Headers {
			r.Headers[i] = kgo.RecordHeader{Key: h.Key, Value: append([]byte(nil), h.Value...)}
		}
	}
	return r
}

// callTimeout bounds a job spec's kafka results sink's checkpoint calls
// (a transaction's flush and commit, the restore's marker check): a
// broker that does not answer fails the checkpoint, and the job's
// restart policy applies, instead of hanging it.
const callTimeout = time.Minute

// results writes messages to its topic in the Sink's transactions: it is
// Transactional and a CommitReporter (the Sink's, each call bounded by
// callTimeout).
type results struct {
	*Sink
	topic string
	one   [1]*kgo.Record
}

func (r *results) Write(ctx context.Context, batch []connector.Message) error {
	for i := range batch {
		r.one[0] = record(r.topic, &batch[i])
		if err := r.Sink.Write(ctx, r.one[:]); err != nil {
			return err
		}
	}
	return nil
}

// records writes messages into a results sink's transactions: that sink
// flushes, commits and closes them, so Flush and Close do nothing.
type records struct {
	s     *Sink
	topic string
	one   [1]*kgo.Record
}

func (r *records) Write(ctx context.Context, batch []connector.Message) error {
	for i := range batch {
		m := batch[i]
		m.Headers = nil // the reason is in the value; a record keeps its line and key only
		r.one[0] = record(r.topic, &m)
		if err := r.s.Write(ctx, r.one[:]); err != nil {
			return err
		}
	}
	return nil
}

func (r *records) Flush(context.Context) error { return nil }
func (r *records) Close() error                { return nil }

// prepare checks that a job spec's kafka sink's topic exists and, for
// the results sink of a job with checkpoints, creates its marker topic
// when it is missing (Prepare), with the fix in its errors.
func prepare(ctx context.Context, o connector.PrepareOpen) error {
	so := SpecSinkOptions(o.Settings, o.Job)
	topic, results := o.Settings.String("topic"), o.Role == connector.RoleResults
	if !results && o.Results != nil {
		// Late records and dead letters go through the results sink's
		// client: its brokers, TLS and SASL.
		so = SpecSinkOptions(o.Results, o.Job)
	}
	created, err := Prepare(ctx, so, []string{topic}, results && o.Checkpoints && !o.CheckOnly)
	var te *TopicError
	switch {
	case errors.As(err, &te) && te.Marker:
		auth := ""
		if o.Settings.Bool("tls") || o.Settings.Set("sasl") {
			auth = " (with --command-config naming the client's TLS and SASL settings)"
		}
		return fmt.Errorf("%s.marker_topic: the marker topic %q, where the results sink commits its checkpoints, is missing, and weir may not create it: %w; create it once%s with\n  %s\nor give weir's user CREATE on it, or set marker_topic to an existing topic",
			o.Output, te.Topic, te.Err, auth, te.Command())
	case errors.As(err, &te):
		return fmt.Errorf("%s.topic: topic %q does not exist on %v: %w; create it (weir creates only its marker topic), such as with\n  %s",
			o.Output, te.Topic, so.Brokers, te.Err, te.Command())
	case err != nil:
		return fmt.Errorf("%s: %w", o.Output, err)
	}
	if created && o.Info != nil {
		o.Info(fmt.Sprintf("created Kafka topic %s (1 partition, cleanup.policy=compact) for the checkpoint markers of the results in %s", so.MarkerTopic, topic))
	}
	return nil
}

// committed is LastCommitted of a job spec's kafka results sink.
func committed(ctx context.Context, s connector.Settings, job string) (int64, bool, error) {
	return LastCommitted(ctx, SpecSinkOptions(s, job))
}

func (r *results) PreCommit(ctx context.Context, id int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return r.Sink.PreCommit(ctx, id)
}

func (r *results) Commit(ctx context.Context, id int64) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return r.Sink.Commit(ctx, id)
}

func (r *results) Recover(ctx context.Context, epoch int64, state []byte) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return r.Sink.Recover(ctx, epoch, state)
}

func (r *results) Abort(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return r.Sink.Abort(ctx)
}
