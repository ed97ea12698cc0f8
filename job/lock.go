package job

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/flock"
	"github.com/weirstream/weir/spec"
)

// ErrLocked is matched (errors.Is) by the error of a run refused because
// another run holds its checkpoint directory or one of its file outputs;
// the error is a *LockedError.
var ErrLocked = errors.New("job: in use by another run")

// LockedError says which of a run's directories or files another run
// holds, and by which lock file.
type LockedError struct {
	// What names it ("checkpoint directory", "sinks.results",
	// "sinks.late ledger", "archive"), Path is the file or directory.
	What, Path string
	// Lock is the lock file; PID the holder's process id as it recorded
	// it (0: not known).
	Lock string
	PID  int
}

func (e *LockedError) Error() string {
	holder := "another weir run"
	if e.PID > 0 {
		holder = fmt.Sprintf("another weir run (pid %d)", e.PID)
	}
	return fmt.Sprintf("%s %s is in use by %s, which holds %s: stop that run first, or give this one its own checkpoint directory and outputs", e.What, e.Path, holder, e.Lock)
}

// Is makes errors.Is(err, ErrLocked) match.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// lockName is the lock file of a run's file output, beside it.
func lockName(file string) string {
	return filepath.Join(filepath.Dir(file), "."+filepath.Base(file)+".run.lock")
}

// dirLock is the lock file of a run's directory, in it.
const dirLock = ".run.lock"

// runLocks are the locks a run holds on its checkpoint directory and its
// file outputs (results and record files, a SQLite file, ledger and
// archive directories), so that a second run on any of them is refused
// before it changes anything. They are flock locks: a run that exits, or
// is killed, releases them; the empty lock files stay.
type runLocks struct {
	unlock []func() error
	// files are the file outputs whose file was not there to lock when
	// the run began (lockFiles locks them once the sinks made them).
	files []lockTarget
	// locked are the files lockFiles locked, and whose (lockedBy): two
	// outputs of a run that are one file by two names are refused.
	locked   []os.FileInfo
	lockedBy []string
}

// lockRun takes the locks of plan's run, or none and an error (a
// *LockedError when another run holds one).
func lockRun(p *spec.Plan, o RunOptions) (*runLocks, error) {
	ts := runTargets(p, o)
	l := &runLocks{}
	var taken, takenBy []string // lock files, and whose
	for _, t := range ts {
		if t.path == "" {
			continue
		}
		var lock string
		if t.dir {
			if err := os.MkdirAll(t.path, 0o755); err != nil {
				return nil, errors.Join(fmt.Errorf("%s: %w", t.what, err), l.release())
			}
			lock = t.lock()
		} else if _, err := os.Stat(filepath.Dir(t.path)); err != nil {
			continue // opening the file fails, saying why
		} else if fi, err := os.Stat(t.path); err == nil && !fi.Mode().IsRegular() {
			continue // /dev/null, a pipe: nothing two runs could spoil
		} else {
			lock = t.lock()
		}
		if i := slices.Index(taken, lock); i >= 0 {
			if takenBy[i] == t.what {
				continue // one sink that several windows or reads share
			}
			// Two outputs of this run in one file, by two names (a
			// symbolic link: the same path is refused by the spec):
			// their lines would interleave and tear.
			return nil, errors.Join(fmt.Errorf("%s %s is the file of %s too (%s): give each output a file of its own", t.what, t.path, takenBy[i], lock), l.release())
		}
		unlock, err := flock.TryLock(lock)
		if errors.Is(err, flock.ErrBusy) {
			err = &LockedError{What: t.what, Path: t.path, Lock: lock, PID: flock.Holder(lock)}
		} else if err != nil {
			err = fmt.Errorf("%s %s: taking the run's lock: %w", t.what, t.path, err)
		}
		if err != nil {
			return nil, errors.Join(err, l.release())
		}
		l.unlock = append(l.unlock, unlock)
		taken, takenBy = append(taken, lock), append(takenBy, t.what)
		if !t.dir && !t.database {
			l.files = append(l.files, t)
		}
	}
	if err := l.lockFiles(); err != nil {
		return nil, errors.Join(err, l.release())
	}
	return l, nil
}

// lockFiles takes the lock of each file output's file itself (of its
// inode, flock.TryLockFile) where the file is there, so that a run that
// reaches it by another name, a hard link that no path resolution sees,
// is refused too; the files not there yet stay for a later call (after
// the sinks opened). It is called when the run begins and after its
// sinks opened, on the goroutine that opens the job.
func (l *runLocks) lockFiles() error {
	if l == nil {
		return nil
	}
	var later []lockTarget
	for _, t := range l.files {
		file := t.file()
		fi, err := os.Stat(file)
		if err != nil || !fi.Mode().IsRegular() {
			later = append(later, t)
			continue
		}
		if i := slices.IndexFunc(l.locked, func(o os.FileInfo) bool { return os.SameFile(o, fi) }); i >= 0 {
			return fmt.Errorf("%s %s is the file of %s too (a hard link): give each output a file of its own", t.what, t.path, l.lockedBy[i])
		}
		unlock, err := flock.TryLockFile(file)
		switch {
		case errors.Is(err, flock.ErrBusy):
			return &LockedError{What: t.what, Path: t.path, Lock: "the file itself under another name (a hard link)"}
		case errors.Is(err, fs.ErrNotExist):
			later = append(later, t)
		case err != nil:
			return fmt.Errorf("%s %s: taking the run's lock: %w", t.what, t.path, err)
		default:
			l.unlock = append(l.unlock, unlock)
			l.locked, l.lockedBy = append(l.locked, fi), append(l.lockedBy, t.what)
		}
	}
	l.files = later
	return nil
}

// Running returns a *LockedError naming a run of plan that holds one of
// its run's locks (a live job, whose outputs are not final), or nil. It
// makes nothing: a lock file that is not there is no run.
func Running(p *spec.Plan, o RunOptions) *LockedError {
	for _, t := range runTargets(p, o) {
		if t.path == "" {
			continue
		}
		lock := t.lock()
		if _, err := os.Stat(lock); err != nil {
			continue
		}
		unlock, err := flock.TryLock(lock)
		if errors.Is(err, flock.ErrBusy) {
			return &LockedError{What: t.what, Path: t.path, Lock: lock, PID: flock.Holder(lock)}
		}
		if err == nil {
			unlock()
		}
	}
	return nil
}

// lockTarget is a directory or file output a run locks.
type lockTarget struct {
	what, path string
	dir        bool
	// database: a SQLite file, whose inode is not locked (lockFiles):
	// closing another descriptor of the file would release the POSIX
	// locks SQLite holds on it in this process.
	database bool
}

// lock is the target's lock file: in a directory, or beside a file
// (the file a link there names: a link to another run's output is that
// output).
func (t lockTarget) lock() string {
	if t.dir {
		return realPath(filepath.Join(t.path, dirLock))
	}
	return realPath(lockName(t.file()))
}

// file is a file target's path with its symbolic links resolved: the
// file itself.
func (t lockTarget) file() string {
	if target, err := filepath.EvalSymlinks(t.path); err == nil {
		return target
	}
	return t.path
}

// runTargets are the directories and files plan's run locks.
func runTargets(p *spec.Plan, o RunOptions) []lockTarget {
	type target = lockTarget
	var ts []target
	if dir := checkpointDir(p, o); dir != "" {
		ts = append(ts, target{"checkpoint directory", dir, true, false})
	}
	// A sink that writes a file (a path setting: jsonl, sqlite) or a
	// directory (a dir setting: the ledger's, under the job's name) is
	// locked; servers keep their own (a table's rows by job, a topic's
	// transactional id). The sinks are the plan graph's (every window's
	// and every source's), else the spec's.
	ops := []*spec.SinkOp(nil)
	if path, err := p.Graph.Path(); err == nil {
		ops = path.Sinks()
	}
	for _, op := range ops {
		k := op.Config
		switch {
		case k == nil:
		case k.Dir != "" && op.Role != connector.RoleResults:
			ts = append(ts, target{"sinks." + op.Name + " " + k.Type, LedgerDir(p, o.Dir, k), true, false})
		default:
			ts = append(ts, target{"sinks." + op.Name, o.Path(k.Path), false, k.Type == "sqlite"})
		}
	}
	if a := p.Archive; a != nil && (o.Task == nil || o.Task.Archive == nil) {
		ts = append(ts, target{"archive", o.Path(a.Dir), true, false})
	}
	return ts
}

// realPath is path with its directory's symbolic links resolved, so that
// two runs reaching one file by different paths take one lock.
func realPath(path string) string {
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return path
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return filepath.Join(dir, filepath.Base(path))
}

// release releases the locks; it is idempotent (nil releases nothing).
func (l *runLocks) release() error {
	if l == nil {
		return nil
	}
	var errs []error
	for _, u := range l.unlock {
		errs = append(errs, u())
	}
	l.unlock = nil
	return errors.Join(errs...)
}
