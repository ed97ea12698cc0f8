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
)

// ReadCommitted calls fn for every record of topics that read_committed
// readers see, from the start, in partition order, and returns once a
// poll brings nothing for quiet (records of open transactions are
// invisible, so they are not waited for). While the topics' committed
// end offsets say there is something to read and nothing came yet, it
// waits up to firstWait instead of quiet: a busy broker or machine may
// take longer than quiet to answer the first fetch. It is for tools,
// demos and tests that look at a job's output topics.
func ReadCommitted(ctx context.Context, brokers, topics []string, quiet time.Duration, fn func(r *kgo.Record), opts ...kgo.Opt) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topics...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100 * time.Millisecond)}, opts...)...)
	if err != nil {
		return fmt.Errorf("kafkaio: %w", err)
	}
	defer cl.Close()
	wait := quiet
	// The topics' ends, which also tells unreachable brokers and a topic
	// that is not there from one that holds nothing: both would read as
	// no records.
	lctx, cancel := context.WithTimeout(ctx, listWait)
	ends, err := kadm.NewClient(cl).ListCommittedOffsets(lctx, topics...)
	cancel()
	if err != nil {
		return fmt.Errorf("kafkaio: reading %s at %s: %w", strings.Join(topics, ", "), strings.Join(brokers, ","), err)
	}
	for _, t := range topics {
		ps, ok := ends[t]
		if ok {
			for _, o := range ps {
				if errors.Is(o.Err, kerr.UnknownTopicOrPartition) {
					ok = false
				}
			}
		}
		if !ok || len(ps) == 0 {
			return fmt.Errorf("kafkaio: topic %s at %s does not exist: %w", t, strings.Join(brokers, ","), ErrNoTopic)
		}
	}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil && o.Offset > 0 {
			wait = max(quiet, firstWait)
		}
	})
	for {
		pctx, cancel := context.WithTimeout(ctx, wait)
		f := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fetchError(f); err != nil {
			return err
		}
		if f.NumRecords() == 0 {
			return nil
		}
		wait = quiet
		f.EachRecord(fn)
	}
}

// firstWait bounds ReadCommitted's wait for the first records of topics
// that have some.
const firstWait = 30 * time.Second

// listWait bounds ReadCommitted's look up of the topics' ends.
const listWait = 30 * time.Second

// ErrNoTopic is matched (errors.Is) by ReadCommitted's error for a topic
// that does not exist.
var ErrNoTopic = errors.New("no such topic")
