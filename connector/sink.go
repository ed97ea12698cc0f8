package connector

import (
	"context"
	"os"
	"path/filepath"
)

// Sink receives a job's output in batches: results, late records or dead
// letters, as values of T (a connector's row, message or line type).
//
// The engine calls a sink's methods one at a time, never concurrently,
// from whichever goroutine holds the sink's turn (a subtask's, or the
// checkpoint coordinator's at a pre-commit), so a sink needs no lock of
// its own. The batch belongs to the engine and is reused once Write
// returns: a sink copies what it keeps.
//
// An error from any method fails the job with that error as its cause
// (the job's restart policy, if any, then applies); a sink never needs to
// panic. After an error the engine calls Close (and Abort first, for a
// Transactional sink) and nothing else.
type Sink[T any] interface {
	// Write hands the sink a batch in order. It may buffer it; what it
	// writes is durable or visible only after Flush (or, for a
	// Transactional sink, Commit).
	Write(ctx context.Context, batch []T) error
	// Flush makes everything written so far durable and, unless the sink
	// is Transactional, visible to its readers.
	Flush(ctx context.Context) error
	// Close releases the sink; it is called once, last. The engine
	// flushes before it at a clean end, and nothing relies on Close
	// flushing: what was written since the last Flush (or PreCommit) may
	// be lost, which checkpoints make safe.
	Close() error
}

// Discarder is implemented by a sink that keeps nothing it is given (a
// blackhole): Discards reporting true lets the runner skip making the
// messages, when making them has no effect of its own (no count of a
// column's NULLs).
type Discarder interface {
	Discards() bool
}

// Transactional is the two-phase commit ability of a Sink, which makes its
// output exactly once with checkpoints (Flink's TwoPhaseCommitSinkFunction,
// a Kafka transaction per checkpoint, a file cut back on restore).
//
// For checkpoint n the engine writes the output that n covers (what every
// subtask emitted before n's barrier and after n-1's), then calls
// PreCommit(n); the state it returns is stored in checkpoint n. Once n is
// durable the engine calls Commit(n). A job restored from checkpoint n
// calls Recover(n, state) before any Write, with the state PreCommit(n)
// returned; the sink then holds exactly the output of epochs up to n,
// committed, and nothing after.
//
// Epoch 0 is one that no checkpoint records: the output at the end of the
// input, after the last checkpoint, and each flush of a job without
// checkpoints are pre-committed and committed as epoch 0 at once (a
// Kafka sink writes no checkpoint marker for it).
//
// A sink opened for a job that starts without a checkpoint to restore
// should start empty (a file truncated, a ledger emptied: see the
// connectors' Fresh options): what an earlier attempt that crashed
// before its first checkpoint wrote is not covered by any checkpoint, and
// nothing else removes it.
type Transactional interface {
	// PreCommit makes the epoch's output durable but not yet visible (a
	// flushed open transaction, an fsynced file) and returns what Recover
	// needs to finish or undo it (a transaction id, a file length). It
	// must not keep state of its own beyond the epoch: the checkpoint may
	// still fail, and then the next epoch's PreCommit covers both.
	PreCommit(ctx context.Context, epoch int64) (state []byte, err error)
	// Commit makes the output of epoch, and of every earlier epoch
	// pre-committed, visible. It is called after checkpoint epoch is
	// durable; a crash before it returns leaves the job to Recover, which
	// must then commit.
	Commit(ctx context.Context, epoch int64) error
	// Abort drops what was written since the last PreCommit (the job
	// failed or was cancelled), or leaves it for the next Recover to cut;
	// pre-committed epochs stay for Recover.
	Abort(ctx context.Context) error
	// Recover brings the sink, after a restore from checkpoint epoch, to
	// exactly the output that checkpoint covers: it commits epoch's
	// pre-committed output if it is not committed yet and discards
	// anything written after it (a newer transaction, file bytes past the
	// recorded length). state is what PreCommit(epoch) returned; a
	// checkpoint taken before the sink existed restores with state nil
	// and epoch 0: the sink then keeps what its output held when it was
	// opened and discards what it was written since.
	Recover(ctx context.Context, epoch int64, state []byte) error
}

// CommitReporter is the ability of a Transactional sink that cannot
// finish, after a crash, an epoch it pre-committed (a Kafka transaction:
// franz-go cannot resume one, so the crashed producer's transaction is
// aborted). A job using it must restore from the checkpoint Committed
// names, not from a newer one whose commit never happened: the sink's
// Recover refuses another.
type CommitReporter interface {
	// Committed returns the newest epoch whose Commit took effect (ok
	// false: none).
	Committed(ctx context.Context) (epoch int64, ok bool, err error)
}

// Idempotent is the ability of a Sink that stores each record once however
// often it is written: records carry a stable id (a late record's source
// position, a result's key, window and revision) and a replay of the same
// records after a restore leaves the same output. Upsert tables that keep
// the newest revision and message streams with deduplication by id are
// idempotent. With checkpoints the engine writes an epoch's output and
// flushes it at the checkpoint's pre-commit; a crash after the flush and
// before the checkpoint is durable replays that epoch, and the sink keeps
// one copy of it.
type Idempotent interface {
	// Idempotent is a marker; it does nothing.
	Idempotent()
}

// Drainer is the ability of a Sink that buffers output in memory to hand
// it to its readers without making it durable (a file's buffer written
// out without an fsync). A job without checkpoints drains its sinks every
// second, so that a live job's output can be read as it comes (tail -f)
// rather than when a buffer fills or the run ends.
type Drainer interface {
	Drain() error
}

// RunKeeper is the ability of a sink whose output keeps what earlier runs
// of the job wrote when a run is told to append (a table, a ledger):
// MaxRun is the newest run it holds (0: none), which the new run's id
// goes above, so that readers can tell the runs apart.
type RunKeeper interface {
	MaxRun(ctx context.Context) (int64, error)
}

// StreamPath reports whether path is written as a stream, in order and never
// cut or truncated: a device (/dev/null) or a pipe, or the process's
// standard output or error by name (/dev/stdout, /dev/fd/1,
// /proc/self/fd/2...), which may be a file the shell appends to
// (weir run job.yaml >> log) that a fresh run must not empty.
func StreamPath(path string) bool {
	switch filepath.Clean(path) {
	case "/dev/stdout", "/dev/stderr", "/dev/fd/1", "/dev/fd/2", "/proc/self/fd/1", "/proc/self/fd/2":
		return true
	}
	fi, err := os.Stat(path)
	return err == nil && !fi.Mode().IsRegular() && !fi.IsDir()
}
