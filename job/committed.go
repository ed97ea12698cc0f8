package job

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/spec"
)

// Committed is what the newest checkpoint of a job spec's run committed
// of its outputs: what a backfill may read while the job runs (a restore
// of the live job can cut away nothing before it).
type Committed struct {
	// Checkpoint is the checkpoint's id (0: none completed yet).
	Checkpoint int64
	// Finished: the run read all its input; its outputs are final.
	Finished bool
	// Watermark is the output's watermark at the checkpoint.
	Watermark etime.Time
	// SinkStates are the late sinks' states in the checkpoint, by sink
	// name (late, late_partial): what their pre-commit returned, which
	// their kind reads back as the cut of the ledger they hold
	// (connector.LedgerCut: a ledger directory's position, a Postgres
	// late table's epoch). A sink without a state is absent.
	SinkStates map[string][]byte
	// Entries are how many records the run (Run) wrote to the late sinks
	// up to the checkpoint, by sink name: a ledger read up to the cut
	// holds that many of the run's entries, unless some were lost.
	Entries map[string]int64
	// Run is the run's id and Since the oldest run whose outputs the
	// results hold (earlier runs' ledger entries do not count).
	Run, Since int64
}

// LastCommitted reads what the newest checkpoint in the checkpoint
// directory of a run of p with o committed (o.CheckpointDir, else the
// plan's checkpoint.dir relative to o.Dir: where the run keeps them). ok
// is false when the run takes no checkpoints. It only reads: the live job
// may go on writing.
func LastCommitted(p *spec.Plan, o RunOptions) (c Committed, ok bool, err error) {
	cdir := checkpointDir(p, o)
	if cdir == "" {
		return Committed{}, false, nil
	}
	oc, id, err := latestCounters(cdir)
	if err != nil {
		return Committed{}, true, err
	}
	if err := sameJob(p, cdir); err != nil {
		return Committed{}, true, err
	}
	if _, err := os.Stat(filepath.Join(cdir, finishedMarker)); err == nil {
		c.Finished = true
	}
	if oc != nil {
		c = Committed{Checkpoint: id, Finished: c.Finished, Watermark: oc.Watermark, SinkStates: map[string][]byte{}, Entries: map[string]int64{}, Run: oc.Run, Since: oc.Since}
		for _, k := range []struct {
			name    string
			s       *spec.Sink
			entries int64
		}{{"late", p.Sinks.Late, oc.Late}, {"late_partial", p.Sinks.LatePartial, oc.Partial}} {
			if k.s == nil {
				continue
			}
			if st := oc.sinkState(k.name); st != nil {
				c.SinkStates[k.name] = st
			}
			c.Entries[k.name] = k.entries
		}
	}
	return c, true, nil
}

// latestCounters reads the output counters of the newest checkpoint in
// cdir (nil: none yet).
func latestCounters(cdir string) (*outCounters, int64, error) {
	b, id, ok, err := weir.LatestPreCommitPart(cdir, "output")
	if err != nil || !ok {
		return nil, 0, err
	}
	oc := &outCounters{Watermark: etime.MinTime}
	if err := json.Unmarshal(b, oc); err != nil {
		return nil, 0, fmt.Errorf("checkpoint %d: corrupt output part: %w", id, err)
	}
	return oc, id, nil
}

// sameJob refuses the checkpoint directory cdir when its newest
// checkpoint was written by another job than p, or by a job whose
// state-relevant fields differ from p's (another window, key or
// aggregate): its cut and watermark would cut p's ledger at a position of
// another ledger, or revise results of another shape. A directory without
// checkpoints, or whose newest checkpoint's meta is of format 1, passes.
func sameJob(p *spec.Plan, cdir string) error {
	st, err := checkpoint.OpenReadOnly(cdir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer st.Close()
	cp, ok, err := st.Latest()
	if err != nil || !ok {
		return err
	}
	name, ok := metaJob(cp.Meta)
	if !ok {
		return nil
	}
	if name != p.Name {
		return fmt.Errorf("checkpoint directory %s holds checkpoints of job %q, not of %q: give this job's checkpoint directory", cdir, name, p.Name)
	}
	_, _, err = resumeAcross(p, cp.Meta)
	var changed *changedError
	switch {
	case errors.As(err, &changed) && len(changed.refused) == 0:
		// Only sinks removed since: what is left is the same job's.
		return nil
	case changed != nil:
		sections, verb, details := changed.what(false)
		return fmt.Errorf("checkpoint %d in %s was written by a job whose %s %s from this spec's (%s): a backfill reads that job's ledger up to that job's cut and revises that job's results, so give the spec that wrote them (a job changed this way started over with --fresh, and so did its ledger)", cp.ID, cdir, sections, verb, details)
	case err != nil:
		return fmt.Errorf("checkpoint %d in %s: %w", cp.ID, cdir, err)
	}
	return nil
}
