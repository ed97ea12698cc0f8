package weir

import (
	"time"

	"github.com/weirstream/weir/checkpoint"
)

// Resume returns the CheckpointOptions of a job that takes a checkpoint
// into d every interval and, when d holds one, restores from the newest
// complete checkpoint (a fresh start otherwise): what a program that may
// be killed and started again passes as Options.Checkpoint. A job whose
// sink is a connector.CommitReporter (Kafka) restores from the checkpoint
// the sink names instead: use d.Resumable with it.
func Resume(d *checkpoint.Dir, interval time.Duration) (CheckpointOptions, error) {
	o := CheckpointOptions{Interval: interval, Store: d}
	cp, ok, err := d.Latest()
	if err != nil || !ok {
		return o, err
	}
	v, err := d.View(cp)
	if err != nil {
		return o, err
	}
	o.Restore, o.NextID = v, cp.ID+1
	return o, nil
}
