package connector

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/etime"
)

// StartKind is where a broker source (kafka, nats) starts reading when no
// checkpoint is restored.
type StartKind uint8

const (
	// StartEarliest: the oldest record the broker keeps (the default).
	StartEarliest StartKind = iota
	// StartLatest: records produced after the job started (kafka).
	StartLatest
	// StartCommitted: the consumer group's committed offsets (kafka).
	StartCommitted
	// StartTime: the first record at or after Start.At.
	StartTime
	// StartSequence: stream sequence Start.Seq (nats).
	StartSequence
)

// Start is a broker source's start position, as a job spec compiles it.
type Start struct {
	Kind StartKind
	At   time.Time // StartTime
	Seq  uint64    // StartSequence
}

// SourceOpen is what a job spec's runner gives SourceKind.Open: the
// source block's settings and what the job decides about reading.
type SourceOpen struct {
	// Settings are the source block's, at "source" in messages (a kind's
	// own block is a dotted prefix: kafka.topic).
	Settings Settings
	// Path resolves a path setting (relative paths start at the spec's
	// directory).
	Path func(string) string
	// Stdin is the input of a source that reads standard input.
	Stdin io.Reader
	// Channels is the number of source channels (readers) to open.
	Channels int
	// CSV: the lines are CSV rows under a header (format: csv), not JSON
	// objects.
	CSV bool
	// Strict: the run is deterministic, so a source that reads one input
	// for several channels emits its lines in input order, and one that
	// reads several inputs per channel (Kafka partitions) takes them in
	// an order that does not depend on timing (kafkaio's
	// SourceOptions.Strict).
	Strict bool
	// Unpaced: read as fast as the job reads, whatever the settings say
	// (a generator's pace: wall): a deterministic run's clock stands
	// still, and a second read of the input (a complete answer) has no
	// schedule to keep.
	Unpaced bool
	// Checkpointed: the job takes checkpoints, so a source whose input
	// gains splits it does not read reports it (ErrInputGrew) once one
	// completed, for the job to reopen from it.
	Checkpointed bool
	// Start is where a broker source starts without a checkpoint.
	Start Start
	// Final reports, at the end of the input or at a stop, whether the
	// source sends the final MAX watermark; Stop, polled between reads,
	// whether to end now as at the end of the input (Ctrl-C, a failure).
	Final, Stop func() bool
	// Clock is processing time, which paces a generator and tells start:
	// now.
	Clock clock.Clock
	// MaxFuture is how far ahead of Clock an event time may be: the job
	// makes a record dated further ahead a dead letter (timestamp_future),
	// and a kind that stamps its lines itself (Splits) checks their times
	// against it (0: the job does not check).
	MaxFuture etime.Duration
	// Logger receives the source's log (partition status changes).
	Logger *slog.Logger
	// Splits are how a kind that reads several inputs per channel
	// (SourceKind.Splits) timestamps and watermarks each of them in its
	// reader; nil for other kinds.
	Splits *SplitOptions
	// Reach, if not nil, is where a kind that reads from a server tells
	// whether it reaches it, so that a runner reports an outage (a
	// broker down) rather than a quiet input.
	Reach *Reach
}

// Reach is whether a source reaches its server, per reader (a channel
// of the source, by its number): Fail when a call the reader makes to
// the server fails with an error it retries (the server away), OK when
// one succeeds. A reader whose calls succeed says nothing of another's
// (one broker of several down). The zero value reaches; a nil *Reach
// takes the calls and keeps nothing. Safe for concurrent use.
type Reach struct {
	mu      sync.Mutex
	failing map[int]reachFailure // by reader; none: every reader reaches
}

type reachFailure struct {
	since time.Time
	err   error
}

// Fail notes a failed call of reader ch at now: its first failure since
// its last OK starts its outage.
func (r *Reach) Fail(ch int, now time.Time, err error) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failing == nil {
		r.failing = map[int]reachFailure{}
	}
	f, ok := r.failing[ch]
	if !ok {
		f.since = now
	}
	f.err = err
	r.failing[ch] = f
}

// OK notes a call of reader ch that succeeded: its outage, if any, is
// over.
func (r *Reach) OK(ch int) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.failing, ch)
}

// Failing returns since when a reader of the source has failed to reach
// its server (the longest outage of those under way) and its last
// failure (a zero time: every reader reaches its server).
func (r *Reach) Failing() (since time.Time, err error) {
	if r == nil {
		return time.Time{}, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.failing {
		if since.IsZero() || f.since.Before(since) {
			since, err = f.since, f.err
		}
	}
	return since, err
}

// SplitOptions are a job's watermarking of each split (a Kafka
// partition) of a source that reads several per channel: each has its
// own generator and idleness, and a channel's watermark is the minimum
// over its splits that are not idle (semantics H6, W10).
type SplitOptions struct {
	// Stamp returns a data line's event time, decoding it (the runner
	// keeps what it decoded for the line's emission); an error sends the
	// record to the dead letters (a *weir.BadInput gives the reason).
	// It is called on the reader's goroutine, right before the line is
	// emitted.
	Stamp func(l Line) (etime.Time, error)
	// EventTime: each split's watermarks are bounded out-of-orderness
	// Bound behind its largest timestamp; false: the kind's default.
	EventTime bool
	Bound     etime.Duration
	// Interval is the periodic emission's; IdleTimeout marks a caught-up
	// split idle (negative: never); BacklogEvery emits by record count
	// during a backlog (negative: periodic only); MaxDrift pauses splits
	// ahead of the slowest by more (0: off).
	Interval     time.Duration
	IdleTimeout  time.Duration
	BacklogEvery int
	MaxDrift     etime.Duration
}

// OpenedSource is a source a kind opened: its Lines and its name in
// messages and dead letters (a file's path, kafka:<topic>).
type OpenedSource struct {
	Source Source[Line]
	Name   string
	// Bounded: a source whose kind leaves its end to the engine
	// (SourceKind.OwnEnd false) ends at the end of its input (a broker's
	// stop_at_end), so the final watermark follows; otherwise only a
	// stop ends it.
	Bounded bool
}

// SourceOpener opens a kind as a job spec's source (SourceKind.Open).
type SourceOpener func(ctx context.Context, o SourceOpen) (OpenedSource, error)
