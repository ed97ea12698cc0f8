package group

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/kafkaio"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/archive"
	"github.com/weirstream/weir/spec"
)

// Archive is a group's archive as weir backfill reads and revises it
// (backfill.GroupArchive): the topic ArchiveTopic, which the group's
// window tasks write each window's newest revision to in their
// transactions (Member.startTask). A backfill writes its revisions, and
// their records in the results topic, in one transaction of its own
// (transactional id <group>-backfill, so that a second backfill fences
// the first). Its methods are called from one goroutine.
type Archive struct {
	p       *spec.Plan
	opts    []kgo.Opt
	topic   string
	results string
	// windows is the topic whose committed offsets hold the window
	// tasks' watermarks: the input's, or the repartition topic's.
	windows string
	run     int64
	nparts  int         // the archive topic's partitions
	cl      *kgo.Client // the transactional producer (made by Fence or the first Commit)
	adm     *kadm.Client
}

// OpenArchive opens the archive of plan p's group, which must have run
// (its changelog holds the group record). run is the group's run when
// the caller has read it (RunOf), else 0: the group record is read here.
func OpenArchive(ctx context.Context, p *spec.Plan, run int64) (*Archive, error) {
	if p.Archive == nil {
		return nil, errors.New("the job keeps no archive (no archive block)")
	}
	s := spec.SourceSettings(p)
	opts := append([]kgo.Opt{kgo.SeedBrokers(s.Strings("kafka.brokers")...)}, kafkaio.AuthFrom(s, "kafka.")...)
	a := &Archive{p: p, opts: opts, topic: ArchiveTopic(p), windows: s.String("kafka.topic")}
	if repartitioned(p) {
		a.windows = RepartitionTopic(p)
	}
	if r := p.Sinks.Primary(); r != nil && r.Type == "kafka" {
		a.results = spec.SinkSettings(r).String("topic")
	}
	if a.results == "" {
		return nil, fmt.Errorf("sinks.results: a group's archive serves Kafka results, and the job's are %s", p.Sinks.Primary().Type)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	a.adm = kadm.NewClient(cl)
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	a.run = run
	if run == 0 {
		if a.run, err = RunOf(rctx, p); err != nil {
			a.Close()
			return nil, err
		}
	}
	td, err := a.adm.ListTopics(rctx, a.topic)
	if t, ok := td[a.topic]; err == nil && (!ok || t.Err != nil) {
		err = fmt.Errorf("the group's archive topic %s is not there: the group's members create it when the job has an archive block (a group that ran without one archived nothing); if it was deleted, the windows it held are lost: reset the group (weir reset) and run the job again", a.topic)
	}
	if err != nil {
		a.Close()
		return nil, err
	}
	a.nparts = len(td[a.topic].Partitions)
	return a, nil
}

// Run is the group's run id.
func (a *Archive) Run() int64 { return a.run }

// Live is the group's archiving watermark (groupLive): the smallest
// watermark its window tasks committed (MinTime while one that has
// records to read has none yet; a task whose partition holds no record is
// left out). Every window that ended before it less the archive's
// horizon is final; it may go back when such a task commits its first
// watermark, so a reader that scans after reading it reads it again.
func (a *Archive) Live(ctx context.Context) (etime.Time, error) {
	return groupLive(ctx, a.adm, Name(a.p), a.windows)
}

// groupLive is group's archiving watermark: the smallest watermark its
// window tasks (the partitions of topic windows) committed, an idle
// one's too (a window task fires by its own watermark, so an idle one's
// windows may still be revised); MinTime while one that has records to
// read has no watermark yet, MaxTime once every one read its input to
// the end. A partition without records to read (none, or the task's
// committed offset at its end: a group that started at latest) whose
// task committed no watermark has no windows to revise: it is left out,
// or an empty partition would hold the archive's trim for ever. The mark never goes
// back but for such a partition's first records (its task then starts
// at its own watermark: its windows are new ones, none of them trimmed,
// and none of them in any ledger entry, which only a task past its
// windows writes).
func groupLive(ctx context.Context, adm *kadm.Client, group, windows string) (etime.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	committed, err := adm.FetchOffsets(kadm.RequireStable(ctx), group)
	if err == nil {
		err = committed.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("the group's committed offsets: %w", err)
	}
	td, err := adm.ListTopics(ctx, windows)
	if err == nil {
		err = td.Error()
	}
	if err != nil {
		return 0, err
	}
	var starts, ends kadm.ListedOffsets // listed when a partition needs them
	empty := func(part int32, at int64) (bool, error) {
		if ends == nil {
			var err error
			if starts, err = listedOffsets(adm.ListStartOffsets(ctx, windows)); err == nil {
				ends, err = listedOffsets(adm.ListEndOffsets(ctx, windows))
			}
			if err != nil {
				return false, fmt.Errorf("the offsets of topic %s: %w", windows, err)
			}
		}
		s, okS := starts.Lookup(windows, part)
		e, okE := ends.Lookup(windows, part)
		return okS && okE && (s.Offset == e.Offset || at >= e.Offset), nil
	}
	live := etime.MaxTime
	for _, part := range td[windows].Partitions.Numbers() {
		c, ok := committed.Lookup(windows, part)
		tm, parsed := parseMeta(c.Metadata)
		if !ok || !parsed || tm.Watermark == etime.MinTime {
			at := int64(-1)
			if ok {
				at = c.At
			}
			if none, err := empty(part, at); err == nil && none {
				continue
			}
			// Records to read, or their offsets unknown: no mark yet.
			return etime.MinTime, nil
		}
		live = min(live, tm.Watermark)
	}
	return live, nil
}

// listedOffsets is a listing of offsets, or the error of the request or
// of a partition.
func listedOffsets(l kadm.ListedOffsets, err error) (kadm.ListedOffsets, error) {
	if err == nil {
		err = l.Error()
	}
	return l, err
}

// Scan calls fn with every record of the archive that is committed when
// it is called (it waits for the transactions open then to end), in
// partition then offset order: its partition, key and value (nil: a
// tombstone). Records written after the call are left out.
func (a *Archive) Scan(ctx context.Context, fn func(partition int32, key, value []byte) error) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := scanCommitted(ctx, a.opts, a.adm, a.topic, nil, fn); err != nil {
		return fmt.Errorf("archive %s: %w", a.topic, err)
	}
	return nil
}

// scanCommitted calls fn with every record of topic's partitions parts
// (nil: all) that is committed when it is called (it waits for the
// transactions open then to end: read_committed stops at the last stable
// offset), in partition then offset order: its partition, key and value
// (nil: a tombstone). Records written after the call are left out.
func scanCommitted(ctx context.Context, opts []kgo.Opt, adm *kadm.Client, topic string, parts []int32, fn func(partition int32, key, value []byte) error) error {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return err
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return err
	}
	from := map[int32]kgo.Offset{}
	target := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if parts != nil && !slices.Contains(parts, o.Partition) {
			return
		}
		if s, ok := starts.Lookup(topic, o.Partition); ok && s.Offset < o.Offset {
			from[o.Partition] = kgo.NewOffset().AtStart()
			target[o.Partition] = o.Offset
		}
	})
	if len(from) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(append(slices.Clone(opts), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())...)
	if err != nil {
		return err
	}
	defer cl.Close()
	var ferr error
	for len(target) > 0 && ferr == nil {
		f := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("reading it to the offsets it had when the read began (%v): %w", target, err)
		}
		for _, fe := range f.Errors() {
			return fe.Err
		}
		f.EachRecord(func(r *kgo.Record) {
			end, ok := target[r.Partition]
			if !ok || ferr != nil {
				return
			}
			if r.Offset >= end-1 {
				// The last offset, or past it (the end's records were of
				// a transaction that aborted: its marker comes after).
				delete(target, r.Partition)
			}
			if r.Offset < end && !r.Attrs.IsControl() {
				ferr = fn(r.Partition, r.Key, r.Value)
			}
		})
	}
	return ferr
}

// Fence makes the archive's transactional producer and takes its id,
// which aborts the open transaction of an earlier backfill that died
// (Kafka fences its producer): called before Scan, so that the scan
// does not wait for that transaction to time out.
func (a *Archive) Fence(ctx context.Context) error {
	if err := a.producer(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, _, err := a.cl.ProducerID(ctx); err != nil {
		return fmt.Errorf("archive %s: taking the backfill's transactional id %s: %w", a.topic, Name(a.p)+"-backfill", err)
	}
	return nil
}

// producer makes the transactional producer unless it is made.
func (a *Archive) producer() error {
	if a.cl != nil {
		return nil
	}
	cl, err := kgo.NewClient(append(slices.Clone(a.opts), kgo.TransactionalID(Name(a.p)+"-backfill"),
		kgo.RecordPartitioner(partitioner{manual: map[string]bool{a.topic: true}, key: kgo.StickyKeyPartitioner(nil)}))...)
	if err != nil {
		return err
	}
	a.cl = cl
	return nil
}

// Commit writes, in one transaction, the archive's records (each to its
// Partition; a nil Value is a tombstone) and the results' messages
// (placed by key, as the group's tasks place them).
func (a *Archive) Commit(ctx context.Context, recs []archive.KafkaRecord, results []connector.Message) error {
	if len(recs)+len(results) == 0 {
		return nil
	}
	if err := a.producer(); err != nil {
		return err
	}
	if err := a.cl.BeginTransaction(); err != nil {
		return err
	}
	all := make([]*kgo.Record, 0, len(recs)+len(results))
	for _, r := range recs {
		all = append(all, &kgo.Record{Topic: a.topic, Partition: r.Partition, Key: r.Key, Value: r.Value})
	}
	for i := range results {
		all = append(all, kafkaio.MessageRecord(a.results, &results[i]))
	}
	perr := a.cl.ProduceSync(ctx, all...).FirstErr()
	commit := kgo.TryCommit
	if perr != nil {
		commit = kgo.TryAbort
	}
	if err := a.cl.EndTransaction(ctx, commit); err != nil || perr != nil {
		err = errors.Join(perr, err)
		if errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) || errors.Is(err, kerr.InvalidTxnState) {
			return fmt.Errorf("another weir backfill of the group took its transactional id %s and goes on: this one stops, and nothing of its open transaction is kept (%w)", Name(a.p)+"-backfill", err)
		}
		return fmt.Errorf("the backfill's transaction writing the results topic %s and the archive %s (nothing of it is kept): %w", a.results, a.topic, err)
	}
	return nil
}

// Partitions is the archive topic's partition count, as OpenArchive
// found it.
func (a *Archive) Partitions(context.Context) (int, error) { return a.nparts, nil }

// Close closes the archive's clients.
func (a *Archive) Close() error {
	if a.cl != nil {
		a.cl.Close()
	}
	a.adm.Close()
	return nil
}
