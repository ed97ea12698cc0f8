package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/weirstream/weir/connector"
)

// openLedger opens a job spec's ledger directory as the job's late-data
// ledger (connector.SinkKind.OpenLedger): its entries up to a
// checkpoint's position (the sink's state is the Pos it committed), with
// the single-writer lock of backfills when o.Lock says so.
func openLedger(_ context.Context, o connector.LedgerOpen) (connector.LedgerReader, error) {
	dir := JobDir(o.Path(o.Settings.String("dir")), o.Job)
	// A run of the job makes the directory when it opens its sink: one
	// that is not there was never written (another directory, or a job
	// that has not run here), and a lock would make it.
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		// (Named as the spec gives it, relative to the spec's directory.)
		return nil, noLedger(fmt.Sprintf("%s: ledger %s is not there: has the job run here?", o.Output, JobDir(o.Settings.String("dir"), o.Job)))
	}
	return OpenReader(dir, o.Lock)
}

// noLedger is an error that matches connector.ErrNoLedger.
type noLedger string

func (e noLedger) Error() string      { return string(e) }
func (noLedger) Is(target error) bool { return target == connector.ErrNoLedger }

// OpenReader opens the ledger in dir for reading back as a
// connector.LedgerReader (a cut's state is the Pos a checkpoint
// committed), with the single-writer lock of backfills when lock says so
// (Lock; Close releases it).
func OpenReader(dir string, lock bool) (connector.LedgerReader, error) {
	r := &dirReader{dir: dir}
	if lock {
		unlock, err := Lock(dir)
		if err != nil {
			return nil, err
		}
		r.unlock = unlock
	}
	return r, nil
}

// dirReader reads a ledger directory.
type dirReader struct {
	dir    string
	unlock func() error
}

// pos is the position cut's state names: the zero Pos (nothing) for a
// checkpoint without one; nil for no cut (all of it).
func (r *dirReader) pos(cut *connector.LedgerCut) (*Pos, error) {
	if cut == nil {
		return nil, nil
	}
	var p Pos
	if cut.State != nil {
		if err := json.Unmarshal(cut.State, &p); err != nil {
			return nil, fmt.Errorf("ledger %s: the checkpoint's position %q is corrupt: %w", r.dir, cut.State, err)
		}
	}
	return &p, nil
}

func (r *dirReader) Scan(_ context.Context, cut *connector.LedgerCut, fn func(line []byte) error) ([]string, error) {
	pos, err := r.pos(cut)
	if err != nil {
		return nil, err
	}
	corrupt, err := ScanTo(r.dir, pos, func(e Entry) error {
		line, err := json.Marshal(e)
		if err != nil {
			return err
		}
		return fn(line)
	})
	bad := make([]string, len(corrupt))
	for i, c := range corrupt {
		bad[i] = fmt.Sprintf("%s line %d: %s", filepath.Join(r.dir, c.Segment), c.Line, c.Reason)
	}
	return bad, err
}

func (r *dirReader) Describe(cut *connector.LedgerCut) string {
	pos, err := r.pos(cut)
	switch {
	case err != nil, pos == nil:
		return ""
	case pos.Segment == "":
		return "ledger empty"
	}
	return fmt.Sprintf("ledger %s up to byte %d", pos.Segment, pos.Length)
}

func (r *dirReader) Where() string { return r.dir }

func (r *dirReader) Close() error {
	if r.unlock != nil {
		return r.unlock()
	}
	return nil
}
