package group

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/connector/kafkaio"
	"github.com/weirstream/weir/spec"
)

// CheckSingle refuses to run Kafka job p in one process (weir run
// without --instance) when it runs, or ran, as a group: its changelog
// topic exists. One process would start the job's outputs over (a new
// run deletes the earlier runs' rows from its tables) and compete with
// the group's members for nothing they share. Kafka not answering within
// a few seconds is no refusal: the run's own source reports it.
func CheckSingle(ctx context.Context, p *spec.Plan) error {
	if Ran(ctx, p) {
		return fmt.Errorf("job %s runs as a group (its changelog topic %s exists): start its members with --instance NAME --state-dir DIR; to run it in one process instead, stop every member and delete the group's state with weir reset (one process would start the job's outputs over)", jobName(p), ChangelogTopic(p))
	}
	return nil
}

// Ran reports whether Kafka job p runs, or ran, as a group: its changelog
// topic exists (false too when Kafka does not answer within a few
// seconds).
func Ran(ctx context.Context, p *spec.Plan) bool {
	ran, _ := RanErr(ctx, p, 3*time.Second)
	return ran
}

// RanErr is Ran that says when it cannot tell: Kafka did not answer
// within wait.
func RanErr(ctx context.Context, p *spec.Plan, wait time.Duration) (bool, error) {
	if p.Source.Type != "kafka" {
		return false, nil
	}
	adm, err := sourceAdmin(p)
	if err != nil {
		return false, err
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	topic := ChangelogTopic(p)
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		brokers := strings.Join(spec.SourceSettings(p).Strings("kafka.brokers"), ",")
		if ctx.Err() != nil {
			return false, fmt.Errorf("the source's Kafka at %s did not answer within %v (%w)", brokers, wait, err)
		}
		return false, fmt.Errorf("the source's Kafka at %s cannot be reached (%w)", brokers, err)
	}
	t, ok := td[topic]
	return ok && t.Err == nil, nil
}

// RunOf is the run of plan p's group: its group record's (the group
// must have run).
func RunOf(ctx context.Context, p *spec.Plan) (int64, error) {
	s := spec.SourceSettings(p)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	g, err := readGroupRecord(ctx, append([]kgo.Opt{kgo.SeedBrokers(s.Strings("kafka.brokers")...)}, kafkaio.AuthFrom(s, "kafka.")...), ChangelogTopic(p))
	if err == nil && g == nil {
		err = fmt.Errorf("the group %s has not run (its changelog %s holds no group record): run the job first", Name(p), ChangelogTopic(p))
	}
	if err != nil {
		return 0, err
	}
	return g.Run, nil
}

// sourceAdmin is an admin client of plan p's source brokers.
func sourceAdmin(p *spec.Plan) (*kadm.Client, error) {
	s := spec.SourceSettings(p)
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(s.Strings("kafka.brokers")...)}, kafkaio.AuthFrom(s, "kafka.")...)...)
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}

// Reset deletes what a job's group keeps, as Kafka Streams' reset tool
// does: the group's committed offsets (its positions and the names of
// its tasks' checkpoints), its changelog topic (the tasks' state and the
// group record), repartition topic and archive topic, and the job's rows in its
// Postgres tables (so that a backfill never folds into two runs). The
// next member to start begins a new run from source.kafka.start. Records
// in Kafka topics stay: a new run writes its own, under its own run id.
// It is refused while the group has members. It returns what it
// deleted, one line each.
func Reset(ctx context.Context, p *spec.Plan) ([]string, error) {
	if p.Source.Type != "kafka" {
		return nil, fmt.Errorf("source.type: %q: weir reset resets the Kafka group of a job in group mode", p.Source.Type)
	}
	adm, err := sourceAdmin(p)
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	group := Name(p)
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("describing group %s: %w", group, err)
	}
	if g, ok := described[group]; ok && g.Err == nil && len(g.Members) > 0 {
		var names []string
		for _, m := range g.Members {
			if m.InstanceID != nil {
				names = append(names, *m.InstanceID)
			} else {
				names = append(names, m.MemberID)
			}
		}
		return nil, refused(fmt.Errorf("group %s has members %v: stop every member (or wait for the session timeout after a kill), then reset", group, names))
	}
	var did []string
	resp, err := adm.DeleteGroup(ctx, group)
	if err == nil {
		err = resp.Err
	}
	switch {
	case errors.Is(err, kerr.GroupIDNotFound):
	case err != nil:
		return nil, fmt.Errorf("deleting group %s: %w", group, err)
	default:
		did = append(did, "deleted consumer group "+group+" (its committed offsets)")
	}
	for _, t := range []struct{ topic, what string }{{ChangelogTopic(p), "the tasks' state"}, {RepartitionTopic(p), "the records routed by key"}, {ArchiveTopic(p), "the archive of its windows"}} {
		tresp, err := adm.DeleteTopic(ctx, t.topic)
		if err == nil {
			err = tresp.Err
		}
		switch {
		case errors.Is(err, kerr.UnknownTopicOrPartition):
		case err != nil:
			return nil, fmt.Errorf("deleting topic %s: %w", t.topic, err)
		default:
			did = append(did, "deleted topic "+t.topic+" ("+t.what+")")
		}
	}
	// The job's own rows in its Postgres tables: the next run's results
	// are its own, as a fresh single-process run's are (a backfill would
	// otherwise fold the ledger into windows two runs share).
	rows, err := resetPG(ctx, p)
	return append(did, rows...), err
}
