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
// readers see, from the start, in partition order, up to the committed
// end offsets (last stable offsets) that the topics have when it starts
// (records of open transactions are invisible, so they are not waited
// for). It reads until every partition's position reaches that end,
// counting the transactions' commit and abort markers, which fn does not
// see, or until nothing comes for max(quiet, gapWait) once records came
// (firstWait before): a reader that stopped when a poll brought nothing
// for a second missed the tail of a topic on a busy machine. It is for
// tools, demos, tests and weir backfill's ledger, which look at a job's
// output topics.
func ReadCommitted(ctx context.Context, brokers, topics []string, quiet time.Duration, fn func(r *kgo.Record), opts ...kgo.Opt) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topics...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.KeepControlRecords(), kgo.FetchMaxWait(100 * time.Millisecond)}, opts...)...)
	if err != nil {
		return fmt.Errorf("kafkaio: %w", err)
	}
	defer cl.Close()
	// The topics' ends, which also tells unreachable brokers and a topic
	// that is not there from one that holds nothing: both would read as
	// no records.
	lctx, cancel := context.WithTimeout(ctx, listWait)
	adm := kadm.NewClient(cl)
	ends, err := adm.ListCommittedOffsets(lctx, topics...)
	var starts kadm.ListedOffsets
	if err == nil {
		starts, err = adm.ListStartOffsets(lctx, topics...)
	}
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
	type tp struct {
		topic string
		part  int32
	}
	left := map[tp]int64{} // the partitions short of their end: the end
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			return // not waited for (a leader moving): read as it comes
		}
		if s, ok := starts.Lookup(o.Topic, o.Partition); ok && s.Err == nil && s.Offset >= o.Offset {
			return // nothing to read (none written, or all deleted)
		}
		if o.Offset > 0 {
			left[tp{o.Topic, o.Partition}] = o.Offset
		}
	})
	// Until the first records, a busy broker may take long to answer;
	// after them, a gap of gapWait with nothing ends the read: a
	// partition whose readable tail is an aborted transaction (its abort
	// marker beyond the committed end, another producer's transaction
	// open) never shows a record at its end.
	wait := max(quiet, firstWait)
	for len(left) > 0 {
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
		wait = max(quiet, gapWait)
		f.EachRecord(func(r *kgo.Record) {
			k := tp{r.Topic, r.Partition}
			if end, ok := left[k]; ok && r.Offset+1 >= end {
				delete(left, k)
			}
			if !r.Attrs.IsControl() {
				fn(r)
			}
		})
	}
	return nil
}

// gapWait is how long ReadCommitted waits for more records once some
// came, before it takes a partition's tail to be an aborted
// transaction's: long enough for a busy machine's next fetch.
const gapWait = 5 * time.Second

// firstWait bounds ReadCommitted's wait for the first records of topics
// that have some.
const firstWait = 30 * time.Second

// listWait bounds ReadCommitted's look up of the topics' ends.
const listWait = 30 * time.Second

// ErrNoTopic is matched (errors.Is) by ReadCommitted's error for a topic
// that does not exist.
var ErrNoTopic = errors.New("no such topic")
