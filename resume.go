package weir

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
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

// LatestPreCommitPart reads the part name that OnPreCommit wrote
// (PreCommitPart) into the newest complete checkpoint in the checkpoint
// directory dir, reading that part only and writing nothing, so that a
// tool may read a live job's checkpoints (a backfill fixing its cut). id
// is the checkpoint's; ok is false when dir holds no checkpoint (or does
// not exist). A newest checkpoint without the part is an error.
func LatestPreCommitPart(dir, name string) (b []byte, id int64, ok bool, err error) {
	st, err := checkpoint.OpenReadOnly(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, err
	}
	defer st.Close()
	// The live job may remove the newest checkpoint's predecessor while
	// it is read: try again.
	for try := 0; ; try++ {
		cp, ok, err := st.Latest()
		if err != nil || !ok {
			return nil, 0, false, err
		}
		view := &lazyView{st: st, cp: cp}
		b, ok := PreCommitPart(view, name)
		if err := view.err; err != nil || !ok {
			if try < 3 {
				continue
			}
			return nil, 0, false, cmp.Or(err, fmt.Errorf("checkpoint %d has no part %s", cp.ID, name))
		}
		return b, cp.ID, true, nil
	}
}

// SinkPartName is the name under which a checkpoint keeps what the
// Transactional sink of ToSink named name (SinkOptions.Name)
// pre-committed: read it with PreCommitPart or LatestPreCommitPart, and
// decode it with SinkPreCommit.
func SinkPartName(name string) string { return "sink/" + name }

// SinkPreCommit decodes a sink's checkpoint part (SinkPartName): the
// checkpoint's epoch and the state its PreCommit returned (a ledger's
// ledger.Pos, a file's length).
func SinkPreCommit(part []byte) (epoch int64, state []byte, err error) {
	var p sinkPart
	if err := json.Unmarshal(part, &p); err != nil {
		return 0, nil, fmt.Errorf("weir: corrupt sink checkpoint part: %w", err)
	}
	return p.Epoch, p.State, nil
}

// lazyView is a CheckpointView of a stored checkpoint that reads only
// the parts asked for; err keeps the first read error.
type lazyView struct {
	st  *checkpoint.Dir
	cp  *checkpoint.Checkpoint
	err error
}

func (v *lazyView) Parts(stage, name string) map[int][]byte {
	out := map[int][]byte{}
	for _, p := range v.cp.Parts {
		i, ok := checkpoint.PartIndex(p, stage, name)
		if !ok {
			continue
		}
		b, err := v.st.ReadPart(v.cp, p)
		if err != nil {
			v.err = cmp.Or(v.err, err)
			continue
		}
		out[i] = b
	}
	return out
}
