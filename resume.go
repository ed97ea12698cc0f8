package weir

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/connector"
)

// Resume returns the CheckpointOptions of a job that takes a checkpoint
// into d every interval and, when d holds one, restores from the newest
// complete checkpoint (a fresh start otherwise): what a program that may
// be killed and started again passes as Options.Checkpoint. Give it the
// job's sinks that are connector.CommitReporters (Kafka): it then
// restores from the newest checkpoint whose output all of them committed.
// The job's checkpoint ids continue above every checkpoint in d.
//
// A job that starts fresh (Restore nil) should open its sinks empty (the
// connectors' Fresh options, a table's Reset): see
// connector.Transactional. Resume does not know whether the run that
// wrote the newest checkpoint finished its input: a program that starts
// over after a finished run removes the checkpoints (or keeps a marker
// of its own, as the weir command does with FINISHED).
func Resume(ctx context.Context, d *checkpoint.Dir, interval time.Duration, sinks ...connector.CommitReporter) (CheckpointOptions, error) {
	o := CheckpointOptions{Interval: interval, Store: d}
	ids, err := d.List()
	if err != nil {
		return o, err
	}
	if len(ids) > 0 {
		o.NextID = slices.Max(ids) + 1
	}
	limit := int64(1<<63 - 1)
	for _, s := range sinks {
		id, ok, err := s.Committed(ctx)
		if err != nil {
			return o, fmt.Errorf("weir: Resume: %w", err)
		}
		if !ok {
			return o, nil // a sink committed no checkpoint: start over
		}
		limit = min(limit, id)
	}
	cp, _, err := d.Resumable(limit)
	if err != nil || cp == nil {
		return o, err
	}
	v, err := d.View(cp)
	if err != nil {
		return o, err
	}
	o.Restore = v
	o.NextID = max(o.NextID, cp.ID+1)
	return o, nil
}
