package kafkaio

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ReadCommitted calls fn for every record of topics that read_committed
// readers see, from the start, in partition order, and returns once a
// poll brings nothing for quiet (records of open transactions are
// invisible, so they are not waited for). It is for tools, demos and
// tests that look at a job's output topics.
func ReadCommitted(ctx context.Context, brokers, topics []string, quiet time.Duration, fn func(r *kgo.Record), opts ...kgo.Opt) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topics...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100 * time.Millisecond)}, opts...)...)
	if err != nil {
		return fmt.Errorf("kafkaio: %w", err)
	}
	defer cl.Close()
	for {
		pctx, cancel := context.WithTimeout(ctx, quiet)
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
		f.EachRecord(fn)
	}
}
