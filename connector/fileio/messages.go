package fileio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
)

// openJSONL opens a jsonl sink: a FileSink of the messages' lines,
// truncated when the job starts its output over.
func openJSONL(_ context.Context, o connector.MessagesOpen) (connector.Sink[connector.Message], error) {
	f, err := OpenFileSink(o.Path(o.Settings.String("path")), FileSinkOptions{Fresh: o.Fresh})
	if err != nil {
		return nil, err
	}
	return &fileMessages{FileSink: f}, nil
}

// fileMessages is a FileSink of messages: it writes each one's Value as
// a line. It is Transactional (the FileSink's PreCommit, Commit, Abort
// and Recover) and a Drainer.
type fileMessages struct {
	*FileSink
	lines [][]byte
}

func (s *fileMessages) Write(ctx context.Context, batch []connector.Message) error {
	s.lines = s.lines[:0]
	for i := range batch {
		s.lines = append(s.lines, batch[i].Value)
	}
	err := s.FileSink.Write(ctx, s.lines)
	clear(s.lines)
	return err
}

// Abort keeps what was written, flushed, and leaves it for the next
// Recover to cut back (Transactional allows either): the file of a failed
// run shows what it wrote, and a restore cuts it to its checkpoint.
func (s *fileMessages) Abort(ctx context.Context) error { return s.FileSink.Flush(ctx) }

// Drain writes the buffered lines out without an fsync.
func (s *fileMessages) Drain() error { return s.WriteOut() }

// stdoutMessages writes each message's Value as a line to the job's
// standard output (connector.MessagesOpen.Stdout), which the job's stdout
// sinks share: a line goes in one Write call, so lines stay whole.
type stdoutMessages struct {
	w    io.Writer
	line []byte
	// failed: a write failed (its error was returned); nothing more is
	// written or flushed.
	failed bool
}

func openStdout(_ context.Context, o connector.MessagesOpen) (connector.Sink[connector.Message], error) {
	if o.Stdout == nil {
		return nil, errors.New("the job has no standard output")
	}
	return &stdoutMessages{w: o.Stdout}, nil
}

func (s *stdoutMessages) Write(_ context.Context, batch []connector.Message) error {
	if s.failed {
		return errStdoutFailed
	}
	for i := range batch {
		s.line = append(append(s.line[:0], batch[i].Value...), '\n')
		if _, err := s.w.Write(s.line); err != nil {
			return s.fail(err)
		}
	}
	return nil
}

// errStdoutFailed is a write after a failed one.
var errStdoutFailed = weir.Permanent(errors.New("standard output failed before"))

// fail is the error of a failed write to standard output: a closed
// pipe (the reader went away: weir run ... | head) says so, and a
// restart would meet it again.
func (s *stdoutMessages) fail(err error) error {
	s.failed = true
	if errors.Is(err, syscall.EPIPE) {
		return weir.Permanent(fmt.Errorf("standard output was closed by its reader (%w): the job stops, and the results after the last line it took are not written", err))
	}
	return fmt.Errorf("standard output: %w", err)
}

// Flush flushes the shared output, when it buffers.
func (s *stdoutMessages) Flush(context.Context) error {
	if f, ok := s.w.(interface{ Flush() error }); ok && !s.failed {
		if err := f.Flush(); err != nil {
			return s.fail(err)
		}
	}
	return nil
}

// Close flushes too: what a failed run printed is shown, not kept back
// (standard output cannot take it back anyway).
func (s *stdoutMessages) Close() error { return s.Flush(context.Background()) }

// blackhole discards every message (the blackhole sink kind). It
// keeps nothing of a batch, so the runner may reuse its buffers at once.
type blackhole struct{}

func openBlackhole(context.Context, connector.MessagesOpen) (connector.Sink[connector.Message], error) {
	return blackhole{}, nil
}

func (blackhole) Write(context.Context, []connector.Message) error { return nil }
func (blackhole) Discards() bool                                   { return true }
func (blackhole) Flush(context.Context) error                      { return nil }
func (blackhole) Close() error                                     { return nil }
