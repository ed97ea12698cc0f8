package connector

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/weirstream/weir/etime"
)

// ReadStatus is what one Reader.Read call did.
type ReadStatus uint8

// The read results.
const (
	// Emitted: Read emitted something; it will be called again at once.
	Emitted ReadStatus = iota
	// Waiting: nothing is available now; Read will be called again later.
	Waiting
	// Done: the reader is exhausted; Read is not called again.
	Done
)

// String names the status.
func (s ReadStatus) String() string {
	switch s {
	case Emitted:
		return "Emitted"
	case Waiting:
		return "Waiting"
	case Done:
		return "Done"
	}
	return "ReadStatus(" + strconv.Itoa(int(s)) + ")"
}

// Source is a connector's source: it opens one reader per source channel.
type Source[T any] interface {
	// Open returns the reader of channel ch of n. The engine calls it once
	// per channel when the job starts, before any Read; the channels of a
	// source may be opened from several goroutines at once. ctx is the
	// job's: it is cancelled when the job is cancelled (the context given
	// to Execute), fails or ends, and Open must give up then (return
	// ctx's error, wrapped or not) rather than wait out a timeout of its
	// own. A reader must not keep ctx for later use: each Read is given
	// the context to honour.
	Open(ctx context.Context, ch, n int) (Reader[T], error)
}

// Reader reads one source channel. Read and Close are called from the
// channel's own goroutine, never concurrently.
type Reader[T any] interface {
	// Read emits what is available (a bounded amount) into out, which is
	// valid only during the call. It may block waiting for data, briefly
	// (a poll of some milliseconds), and must return once ctx is done:
	// ctx is cancelled when the job is cancelled, fails or ends, after
	// which Read is not called again. A Read cut short by ctx returns
	// Waiting, or ctx's error; either ends the channel, and the job
	// reports the cancellation, not the reader's error.
	Read(ctx context.Context, out Output[T]) (ReadStatus, error)
	// Close releases the reader; it is called once, after the last Read,
	// also when the job was cancelled or failed.
	Close() error
}

// Output receives a reader's records and source-level watermarks; the
// engine's is also a DeadLetterOutput.
type Output[T any] interface {
	// Emit sends a record with its timestamp (etime.MinTime: none yet).
	Emit(ts etime.Time, v T)
	// EmitWatermark sends a watermark; only strictly increasing ones pass
	// (semantics H2).
	EmitWatermark(wm etime.Time)
	// MarkIdle and MarkActive change the channel's status (H3, H4).
	MarkIdle()
	MarkActive()
}

// DeadLetterOutput is implemented by the Output the engine gives readers:
// a reader sends a record it cannot use (undecodable, a bad timestamp) to
// the dead-letter output with a stable reason code instead of emitting
// it. The record counts as read and as a dead letter (W4), so
// conservation holds. It is called during Read, on the reader's
// goroutine.
type DeadLetterOutput interface {
	DeadLetter(reason, detail string, record any)
}

// LossOutput is implemented by the Output the engine gives readers: a
// reader whose records were removed before it read them (a Kafka topic's
// or a NATS stream's retention passed a restored position) says how many,
// so that the job's summary counts them beside conservation's terms
// (they were never read, so no term of conservation holds them). It is
// called during Read, on the reader's goroutine.
type LossOutput interface {
	Lost(n int64, detail string)
}

// ReportLost tells out, when it is a LossOutput, that n records were lost
// before they were read (detail: where and why, for a person).
func ReportLost(out any, n int64, detail string) {
	if l, ok := out.(LossOutput); ok && n > 0 {
		l.Lost(n, detail)
	}
}

// CheckpointedReader is a Reader that can be checkpointed: it says where
// it is, and a fresh reader resumes there. A job with checkpoints refuses
// sources whose readers are not CheckpointedReaders. Both methods are
// called on the reader's goroutine, between reads.
type CheckpointedReader interface {
	// SnapshotPosition returns the reader's position after everything it
	// emitted so far.
	SnapshotPosition() ([]byte, error)
	// RestorePosition makes a freshly opened reader resume at pos; it is
	// called after Open and before the first Read.
	RestorePosition(pos []byte) error
}

// CheckpointListener is implemented by readers that act on checkpoints
// beyond their position, such as committing offsets to a consumer group
// so that lag tools see them. CheckpointTaken is called on the reader's
// goroutine right after SnapshotPosition, with the checkpoint's id;
// CheckpointComplete is called from another goroutine once checkpoint id
// has committed (an aborted checkpoint is never completed, and a later
// one completes the earlier ones).
type CheckpointListener interface {
	CheckpointTaken(id int64)
	CheckpointComplete(id int64)
}

// InputReporter is an optional Reader ability: a reader of several inputs
// (a Kafka reader's partitions) reports their state for metrics and the
// dashboard. Inputs is called from other goroutines while the job runs,
// so a reader publishes a copy (at its watermark ticks, say) and Inputs
// returns the newest one; the caller does not modify it.
type InputReporter interface {
	Inputs() []InputStatus
}

// InputStatus is the state of one input of a source reader.
type InputStatus struct {
	// Name identifies the input within its source, such as "partition 3".
	Name string
	// Watermark is the input's own watermark (etime.MinTime: none yet).
	Watermark etime.Time
	// Idle: marked idle (no record for the idle timeout and caught up).
	Idle bool
	// Paused: held back by watermark alignment; PausedFor is the total
	// pause time so far.
	Paused    bool
	PausedFor time.Duration
	// IdleFor is the total time it was marked idle.
	IdleFor time.Duration
	// Backlog is how many records are there to read (the broker's last
	// stable offset minus the position), -1 when unknown.
	Backlog int64
	// LastRecord is the processing time of the input's last record (zero:
	// none yet); MaxEventTime its largest event time (MinTime: none).
	LastRecord   time.Time
	MaxEventTime etime.Time
}

// BacklogReporter is an optional Reader ability: Backlog reports, after a
// Read, whether more records are there to be read at once, which makes
// the channel's watermarks come by record count (W10). Without it, a read
// that returned Emitted counts as reading a backlog; a reader that waits
// for data and returns Emitted for a live trickle (a NATS consumer,
// stdin) should say better. It is called on the reader's goroutine.
type BacklogReporter interface {
	Backlog() bool
}

// WaitReporter is an optional Reader ability: Waited returns how long its
// last Read blocked waiting for data (a Kafka poll), so that metrics count
// the wait as idle time, not busy time. It is called on the reader's
// goroutine, after a Read.
type WaitReporter interface {
	Waited() time.Duration
}

// ErrInputChanged matches the errors of a restore onto an input that is
// not the one the checkpoint read (a rewritten file, a topic created
// again): resuming would mix two inputs, and retrying cannot help, so a
// runner does not restart on it. A connector makes its own with
// InputChanged.
var ErrInputChanged = errors.New("connector: the input changed since the checkpoint")

// ErrInputGrew matches the error of a reader whose input gained splits
// while it ran (partitions added to a Kafka topic) that it does not read:
// a runner reopens the job from its newest checkpoint, whose restore reads
// them from their start, rather than leave them unread.
var ErrInputGrew error = inputGrew{}

// inputGrew is ErrInputGrew's type: its Reopen says to a runner (which
// matches the method, not this package) that the error ends an attempt
// without failing it.
type inputGrew struct{}

func (inputGrew) Error() string { return "connector: the input gained splits while the job ran" }
func (inputGrew) Reopen() bool  { return true }

// InputChanged returns an error with text msg that matches
// ErrInputChanged.
func InputChanged(msg string) error { return inputChangedError(msg) }

type inputChangedError string

func (e inputChangedError) Error() string   { return string(e) }
func (e inputChangedError) Is(t error) bool { return t == ErrInputChanged }
