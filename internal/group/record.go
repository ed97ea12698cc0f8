package group

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// groupKey keys the group record in partition 0 of the changelog, as
// groupKey/<run> (a weir before that wrote groupKey alone): the first one
// there says which run the group is and which spec it runs. Each first
// member writes under a key of its own, so that when two wrote at once
// compaction, which keeps the newest record of a key, keeps the first.
const groupKey = "group"

// groupRecord is the group record's value.
type groupRecord struct {
	Job      string `json:"job"`
	SpecHash string `json:"spec_hash"`
	// Run is the group's run id (milliseconds since the epoch when it
	// began), carried by every task's outputs.
	Run int64 `json:"run"`
}

// readGroupRecord returns the first group record of the changelog (nil:
// none), reading partition 0 from its start up to the end it had when
// asked (the record, when there is one, is near the start: the first
// member writes it before any task commits).
func readGroupRecord(ctx context.Context, opts []kgo.Opt, topic string) (*groupRecord, error) {
	cl, err := kgo.NewClient(append(slices.Clone(opts),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()), kgo.KeepControlRecords())...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("changelog %s: %w", topic, err)
	}
	end, ok := ends.Lookup(topic, 0)
	if !ok || end.Offset <= 0 {
		return nil, nil
	}
	for {
		f := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for _, fe := range f.Errors() {
			return nil, fmt.Errorf("changelog %s: %w", topic, fe.Err)
		}
		var found *groupRecord
		var ferr error
		last := int64(-1)
		f.EachRecord(func(r *kgo.Record) {
			last = max(last, r.Offset)
			if found != nil || r.Attrs.IsControl() || (string(r.Key) != groupKey && !strings.HasPrefix(string(r.Key), groupKey+"/")) {
				return
			}
			var g groupRecord
			if err := json.Unmarshal(r.Value, &g); err != nil {
				ferr = fmt.Errorf("changelog %s: the group record at offset %d: %w", topic, r.Offset, err)
				return
			}
			found = &g
		})
		if found != nil || ferr != nil {
			return found, ferr
		}
		if last >= end.Offset-1 {
			return nil, nil // read to the end: no group record
		}
	}
}

// groupRun reads the group's record, writing this member's when there is
// none yet (the first member of a group, or the first after a reset): the
// first record in the partition is the group's, whoever wrote it.
func (m *Member) groupRun(ctx context.Context) (*groupRecord, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	g, err := readGroupRecord(ctx, m.clientOpts(), m.changelog)
	if err != nil || g != nil {
		return g, err
	}
	cl, err := kgo.NewClient(append(m.clientOpts(), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		return nil, err
	}
	mine := groupRecord{Job: jobName(m.o.Plan), SpecHash: m.specHash, Run: time.Now().UnixMilli()}
	v, _ := json.Marshal(mine)
	err = cl.ProduceSync(ctx, &kgo.Record{Topic: m.changelog, Partition: 0, Key: fmt.Appendf(nil, "%s/%d", groupKey, mine.Run), Value: v}).FirstErr()
	cl.Close()
	if err != nil {
		return nil, fmt.Errorf("changelog %s: writing the group record: %w", m.changelog, err)
	}
	g, err = readGroupRecord(ctx, m.clientOpts(), m.changelog)
	if err == nil && g == nil {
		err = fmt.Errorf("changelog %s: the group record written is not there", m.changelog)
	}
	return g, err
}
