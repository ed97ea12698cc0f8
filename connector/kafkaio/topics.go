package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// markerTopicConfigs are the settings of a marker topic Prepare creates:
// compacted, so that the newest marker of every sink is kept however long
// the job is stopped (a time-based retention that removed it would leave
// the checkpoints without a committed one), and older markers, which
// LastCommitted does not need, go.
var markerTopicConfigs = map[string]string{"cleanup.policy": "compact"}

// MarkerTopicConfigs returns a copy of the settings of a marker topic the
// sink creates (cleanup.policy=compact).
func MarkerTopicConfigs() map[string]string { return maps.Clone(markerTopicConfigs) }

// TopicError is a topic a sink needs that is missing: one its records go
// to (the user's, which weir does not create), or the marker topic, which
// the broker would not let weir create. Its fields are the settings the
// topic would be created with, for the person who creates it.
type TopicError struct {
	// Topic is the missing topic.
	Topic string
	// Marker: it is the sink's marker topic, which Prepare tried to
	// create; otherwise records go to it and it is left to the user.
	Marker bool
	// Partitions (0: the broker's default) and ReplicationFactor (-1:
	// the broker's default) and Configs are the settings to create it
	// with.
	Partitions        int32
	ReplicationFactor int16
	Configs           map[string]string
	// Brokers are the seed brokers, for the command line.
	Brokers []string
	// Err is why it is missing: kerr.UnknownTopicOrPartition, or the
	// broker's refusal to create it (kerr.TopicAuthorizationFailed,
	// kerr.ClusterAuthorizationFailed, kerr.PolicyViolation, ...).
	Err error
}

func (e *TopicError) Error() string {
	if e.Marker {
		return fmt.Sprintf("kafkaio: the marker topic %q is missing and the broker did not let weir create it (%v); create it with: %s", e.Topic, e.Err, e.Command())
	}
	return fmt.Sprintf("kafkaio: topic %q does not exist (brokers %v); weir creates only its marker topic: create it, such as with: %s", e.Topic, e.Brokers, e.Command())
}

// Unwrap returns Err.
func (e *TopicError) Unwrap() error { return e.Err }

// Command is a kafka-topics.sh command line that creates the topic with
// e's settings (a client with TLS or SASL adds --command-config).
func (e *TopicError) Command() string {
	var b strings.Builder
	b.WriteString("kafka-topics.sh --bootstrap-server ")
	b.WriteString(strings.Join(e.Brokers, ","))
	b.WriteString(" --create --topic ")
	b.WriteString(shellQuote(e.Topic))
	if e.Partitions > 0 {
		b.WriteString(" --partitions ")
		b.WriteString(strconv.Itoa(int(e.Partitions)))
	}
	if e.ReplicationFactor > 0 {
		b.WriteString(" --replication-factor ")
		b.WriteString(strconv.Itoa(int(e.ReplicationFactor)))
	}
	for _, k := range slices.Sorted(maps.Keys(e.Configs)) {
		b.WriteString(" --config ")
		b.WriteString(shellQuote(k + "=" + e.Configs[k]))
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell when it holds anything but the
// characters of topic names and settings.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-=,:/", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// AnswerWait bounds Prepare's wait for the brokers' first answer: a
// broker that accepts connections and never answers is said at start,
// not after the client's retries (a minute and more).
var AnswerWait = 15 * time.Second

// Prepare readies the brokers for a sink before its run, so that a
// missing topic is found at start rather than at the first checkpoint:
// every topic of topics (the ones its records go to: results, late
// records, dead letters; the user's, never created here) must exist, and
// when markers is set (the sink runs with checkpoints, so PreCommit writes
// markers) the marker topic is created if it is missing, with one
// partition (markers are keyed by TransactionalID and few), the
// replication factor of topics[0] (as durable as the results; the
// broker's default without topics) and MarkerTopicConfigs. created says
// whether it created the marker topic; it returns once the topic's
// partition has a leader.
//
// A missing topic, or a marker topic the broker refuses to create (an
// ACL without CREATE, a creation policy), is a *TopicError.
func Prepare(ctx context.Context, o SinkOptions, topics []string, markers bool) (created bool, err error) {
	if err := o.Validate(); err != nil {
		return false, err
	}
	// Metadata is asked for again while the created topic reaches the
	// brokers: not from a cache kept for the default 5s.
	adm, err := newAdmin(o.Brokers, append([]kgo.Opt{kgo.MetadataMinAge(10 * time.Millisecond)}, o.ClientOptions...))
	if err != nil {
		return false, err
	}
	defer adm.Close()
	names := slices.Clone(topics)
	if markers {
		names = append(names, o.MarkerTopic)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) == 0 {
		return false, nil
	}
	mctx, cancel := context.WithTimeout(ctx, AnswerWait)
	md, err := adm.Metadata(mctx, names...)
	cancel()
	if err != nil {
		if ctx.Err() == nil && mctx.Err() != nil {
			return false, fmt.Errorf("kafkaio: the brokers %v did not answer within %v (a metadata request for topics %v: %w): if they accept connections, check that the address is a Kafka listener (the broker's advertised one) and that the broker is up", o.Brokers, AnswerWait, names, err)
		}
		return false, fmt.Errorf("kafkaio: metadata of topics %v: %w", names, err)
	}
	rf := int16(-1)
	for i, t := range topics {
		td, ok := md.Topics[t]
		switch {
		case !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition):
			return false, &TopicError{Topic: t, ReplicationFactor: -1, Brokers: o.Brokers, Err: kerr.UnknownTopicOrPartition}
		case td.Err != nil:
			return false, fmt.Errorf("kafkaio: topic %q: %w", t, td.Err)
		}
		if i == 0 {
			for _, p := range td.Partitions {
				rf = max(rf, int16(len(p.Replicas)))
			}
		}
	}
	if !markers {
		return false, nil
	}
	td, ok := md.Topics[o.MarkerTopic]
	if ok && td.Err == nil && len(td.Partitions) > 0 {
		return false, nil
	}
	if ok && td.Err != nil && !errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return false, fmt.Errorf("kafkaio: marker topic %q: %w", o.MarkerTopic, td.Err)
	}
	configs := map[string]*string{}
	for k, v := range markerTopicConfigs {
		configs[k] = &v
	}
	resp, err := adm.CreateTopic(ctx, 1, rf, configs, o.MarkerTopic)
	if err == nil {
		err = resp.Err
	}
	switch {
	case errors.Is(err, kerr.TopicAlreadyExists):
		// Created meanwhile (another job's sink writing the same topic).
	case err != nil:
		var ke *kerr.Error
		if ctx.Err() != nil || !errors.As(err, &ke) {
			// Not the broker's answer: the brokers could not be asked.
			return false, fmt.Errorf("kafkaio: creating marker topic %q: %w", o.MarkerTopic, err)
		}
		if resp.ErrMessage != "" {
			err = fmt.Errorf("%w: %s", err, resp.ErrMessage)
		}
		return false, &TopicError{Topic: o.MarkerTopic, Marker: true, Partitions: 1, ReplicationFactor: rf, Configs: MarkerTopicConfigs(), Brokers: o.Brokers, Err: err}
	default:
		created = true
	}
	return created, waitLeader(ctx, adm, o.MarkerTopic)
}

// waitLeader waits until topic's partitions have leaders: a topic just
// created takes a moment to reach every broker's metadata.
func waitLeader(ctx context.Context, adm *kadm.Client, topic string) error {
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			td, ok := md.Topics[topic]
			ready := ok && td.Err == nil && len(td.Partitions) > 0
			for _, p := range td.Partitions {
				ready = ready && p.Err == nil && p.Leader >= 0
			}
			if ready {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafkaio: waiting for topic %q to have a leader: %w", topic, context.Cause(ctx))
		case <-time.After(50 * time.Millisecond):
		}
	}
}
