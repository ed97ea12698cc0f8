package job

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/ledger"
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
	// Ledgers are the ledger sinks' committed positions, by sink name.
	Ledgers map[string]ledger.Pos
	// Epoch is the epoch of the Postgres record tables' rows the
	// checkpoint covers; Run is the run's id and Since the oldest run
	// whose outputs the results hold (earlier runs' ledger entries do
	// not count).
	Epoch, Run, Since int64
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
	if _, err := os.Stat(filepath.Join(cdir, finishedMarker)); err == nil {
		c.Finished = true
	}
	if oc != nil {
		c = Committed{Checkpoint: id, Finished: c.Finished, Watermark: oc.Watermark, Ledgers: oc.Ledgers, Epoch: oc.Epoch, Run: oc.Run, Since: oc.Since}
	}
	return c, true, nil
}

// latestCounters reads the output counters of the newest checkpoint in
// cdir (nil: none yet).
func latestCounters(cdir string) (*outCounters, int64, error) {
	st, err := checkpoint.OpenReadOnly(cdir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer st.Close()
	// The live job may remove the newest checkpoint's predecessor while
	// it is read: try again.
	for try := 0; ; try++ {
		cp, ok, err := st.Latest()
		if err != nil || !ok {
			return nil, 0, err
		}
		view := &lazyView{st: st, cp: cp}
		b, ok := weir.PreCommitPart(view, "output")
		if err := view.err; err != nil || !ok {
			if try < 3 {
				continue
			}
			return nil, 0, cmp.Or(err, fmt.Errorf("checkpoint %d has no output part", cp.ID))
		}
		oc := &outCounters{Watermark: etime.MinTime}
		if err := json.Unmarshal(b, oc); err != nil {
			return nil, 0, fmt.Errorf("checkpoint %d: corrupt output part: %w", cp.ID, err)
		}
		return oc, cp.ID, nil
	}
}

// lazyView is a weir.CheckpointView of a stored checkpoint that reads
// only the parts asked for (a backfill wants the output's counters, not
// the window state); err keeps the first read error.
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
