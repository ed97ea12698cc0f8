package job

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/archive"
)

// archiveWriter is the live job's side of the archive (jsonl and Kafka
// results with an archive block). It keeps the revisions written since
// the last commit and, at each commit (a checkpoint's, and the run's
// end), opens the archive, applies them with the job's watermark as the
// live mark, commits and closes it: between commits a backfill may have
// the archive. A checkpoint's commit that finds it busy keeps the
// revisions for the next one (a backfill then refuses to start until the
// live mark reaches its cut); the run's last commit waits for it. A job
// without checkpoints commits every uncheckedBatch windows (due).
//
// In a group's task (TaskCheckpoints.Archive), commit hands the
// revisions to task instead: the member writes them to the group's
// archive topic in its transaction.
type archiveWriter struct {
	dir  string
	task func(key string, start, end etime.Time, run, pane int64, value []byte)
	run  int64 // the run whose revisions these are (Job.run)
	// pending is each window's newest revision since the last commit
	// (the archive keeps only the newest anyway).
	pending map[archiveWindow]*archivePut
	log     *slog.Logger
	busy    bool // the last commit found the archive busy
}

type archiveWindow struct {
	key        string
	start, end etime.Time
}

// compare orders windows by end, start, then key.
func (a archiveWindow) compare(b archiveWindow) int {
	return cmp.Or(cmp.Compare(a.end, b.end), cmp.Compare(a.start, b.start), strings.Compare(a.key, b.key))
}

type archivePut struct {
	pane  int64
	value []byte
}

// newArchiveWriter prepares the archive in dir for the live job. At a
// fresh start (fresh) it empties the archive unless keep (--append), and
// returns the newest run it holds then (0: none), which the new run's id
// must exceed.
func newArchiveWriter(dir string, log *slog.Logger, fresh, keep bool) (*archiveWriter, int64, error) {
	if fresh && !keep {
		// A backfill may have it open for a moment: wait for it, as a
		// commit does.
		if err := archive.ResetWait(dir, ArchiveOpenWait, archivePoll); err != nil {
			return nil, 0, fmt.Errorf("archive: starting it over for a new run: %w", err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, 0, fmt.Errorf("archive: %w", err)
	}
	var last int64
	if fresh && keep {
		a, err := archive.OpenWait(dir, ArchiveOpenWait, archivePoll)
		if err != nil {
			return nil, 0, fmt.Errorf("archive: %w", err)
		}
		last, err = a.Run()
		if err = errors.Join(err, a.Close()); err != nil {
			return nil, 0, fmt.Errorf("archive: %w", err)
		}
	}
	return &archiveWriter{dir: dir, log: log, pending: map[archiveWindow]*archivePut{}}, last, nil
}

// put records a published revision for the next commit, unless one of a
// higher pane of its window is there already.
func (w *archiveWriter) put(key string, start, end etime.Time, pane int64, value []byte) {
	k := archiveWindow{key, start, end}
	p := w.pending[k]
	if p == nil {
		p = &archivePut{pane: -1}
		w.pending[k] = p
	}
	if pane > p.pane {
		p.pane, p.value = pane, append(p.value[:0], value...)
	}
}

// due says whether a job without checkpoints commits now: it holds
// uncheckedBatch windows.
func (w *archiveWriter) due() bool { return len(w.pending) >= uncheckedBatch }

// archivePoll is how often the live job tries a busy archive again.
const archivePoll = 100 * time.Millisecond

// archiveWait bounds how long the run's last commit waits for a backfill
// to release the archive.
const archiveWait = 10 * time.Minute

// commit writes the pending revisions; wait > 0 waits that long for a
// busy archive (then fails), wait 0 keeps them for the next commit.
func (w *archiveWriter) commit(wm etime.Time, horizon etime.Duration, wait time.Duration) error {
	if w.task != nil {
		for _, k := range slices.SortedFunc(maps.Keys(w.pending), archiveWindow.compare) {
			p := w.pending[k]
			w.task(k.key, k.start, k.end, w.run, p.pane, p.value)
		}
		clear(w.pending)
		return nil
	}
	a, err := archive.OpenWait(w.dir, wait, archivePoll)
	switch {
	case errors.Is(err, archive.ErrBusy) && wait == 0:
		if !w.busy && w.log != nil {
			w.log.Info("archive busy (a backfill has it open): its revisions wait for the next checkpoint", "dir", w.dir, "pending", len(w.pending))
		}
		w.busy = true
		return nil
	case errors.Is(err, archive.ErrBusy):
		return fmt.Errorf("archive %s: a backfill has had it open for %v; %d revisions of this run are not archived (end the backfill and resume the run)", w.dir, wait, len(w.pending))
	case err != nil:
		return err
	}
	w.busy = false
	for k, p := range w.pending {
		if err = a.Put(k.key, k.start, k.end, w.run, p.pane, p.value); err != nil {
			break
		}
	}
	if err == nil {
		err = a.Commit(wm, horizon, w.run)
	}
	if err = errors.Join(err, a.Close()); err == nil {
		clear(w.pending)
	}
	return err
}

// ArchiveOpenWait bounds a backfill's wait for the archive.
const ArchiveOpenWait = 30 * time.Second
