package fileio

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/weirstream/weir/connector"
)

// FileSink writes lines to a file, exactly once with checkpoints: it is a
// connector.Sink of lines and connector.Transactional, whose PreCommit
// fsyncs the file and records its length, and whose Recover cuts the file
// back to the length a checkpoint recorded. Readers of the file may see
// lines that a later Recover removes (what a crash left after the
// checkpoint), never a torn one after Recover.
//
// A FileSink is not safe for concurrent use; the engine serializes its
// calls.
type FileSink struct {
	path string
	f    *os.File
	// stream: the path is a device, a pipe or the process's standard
	// output or error (Stream): written in order, never cut or
	// truncated, not fsynced; its lines are at least once.
	stream bool
	w      *bufio.Writer
	// base is the length the file had at open once its torn tail was
	// cut (0 when opened fresh): what a Recover without a checkpoint
	// state keeps. committed is the length at the last PreCommit.
	base, committed int64
}

// FileSinkOptions configures OpenFileSink.
type FileSinkOptions struct {
	// Fresh truncates the file at open (a run that starts over);
	// otherwise the sink appends after the file's last whole line (a
	// torn line a crash left is cut), and Recover may cut it back further.
	Fresh bool
}

// OpenFileSink opens (creating if needed) the file at path for a
// FileSink.
func OpenFileSink(path string, o FileSinkOptions) (*FileSink, error) {
	if Stream(path) {
		// O_RDWR: a FIFO opened so does not wait for a reader.
		f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
		if err != nil {
			return nil, err
		}
		return &FileSink{path: path, f: f, w: bufio.NewWriterSize(f, 256<<10), stream: true}, nil
	}
	flags := os.O_RDWR | os.O_CREATE
	if o.Fresh {
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return nil, err
	}
	end, err := wholeLines(f)
	if err == nil {
		err = cutTail(f, end)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &FileSink{path: path, f: f, w: bufio.NewWriterSize(f, 256<<10), base: end, committed: end}, nil
}

// Stream reports whether path is written as a stream
// (connector.StreamPath).
func Stream(path string) bool { return connector.StreamPath(path) }

// wholeLines is the length of f up to the end of its last whole line.
func wholeLines(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	end := fi.Size()
	buf := make([]byte, 64<<10)
	for pos := end; pos > 0; {
		n := min(pos, int64(len(buf)))
		pos -= n
		if _, err := f.ReadAt(buf[:n], pos); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return pos + int64(i) + 1, nil
		}
	}
	return 0, nil
}

// cutTail cuts f back to n bytes when it is longer (a torn last line) and
// places the write offset at n; a file of n bytes is not truncated, nor an
// empty one sought, so that a device such as /dev/full or a FIFO can be a
// sink.
func cutTail(f *os.File, n int64) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	switch {
	case fi.Size() > n:
		return cut(f, n)
	case n > 0:
		_, err = f.Seek(n, io.SeekStart)
	}
	return err
}

// cut truncates f to n bytes and places the write offset there.
func cut(f *os.File, n int64) error {
	if err := f.Truncate(n); err != nil {
		return err
	}
	_, err := f.Seek(n, io.SeekStart)
	return err
}

// Path returns the file's path.
func (s *FileSink) Path() string { return s.path }

// Write appends each line and a newline (lines hold no newline of their
// own). It copies the lines into its buffer.
func (s *FileSink) Write(_ context.Context, lines [][]byte) error {
	for _, l := range lines {
		s.w.Write(l)
		if err := s.w.WriteByte('\n'); err != nil {
			return fmt.Errorf("%s: %w", s.path, err)
		}
	}
	return nil
}

// WriteOut writes the buffer to the file without an fsync, so that
// readers of the file (tail -f) see the lines written so far.
func (s *FileSink) WriteOut() error {
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("%s: %w", s.path, err)
	}
	return nil
}

// Flush writes the buffer to the file and fsyncs it.
func (s *FileSink) Flush(context.Context) error {
	_, err := s.sync()
	return err
}

// sync flushes and fsyncs the file and returns its length.
func (s *FileSink) sync() (int64, error) {
	if err := s.w.Flush(); err != nil {
		return 0, fmt.Errorf("%s: %w", s.path, err)
	}
	if s.stream {
		return 0, nil // a device or a pipe has nothing to fsync, nor a length
	}
	if err := s.f.Sync(); err != nil {
		return 0, fmt.Errorf("%s: %w", s.path, err)
	}
	return s.f.Seek(0, io.SeekCurrent)
}

// PreCommit makes the file durable and returns its length, which Recover
// cuts back to.
func (s *FileSink) PreCommit(_ context.Context, _ int64) ([]byte, error) {
	n, err := s.sync()
	if err != nil {
		return nil, err
	}
	s.committed = n
	return strconv.AppendInt(nil, n, 10), nil
}

// Commit does nothing: the lines PreCommit made durable are in the file.
func (s *FileSink) Commit(context.Context, int64) error { return nil }

// Abort drops the lines written since the last PreCommit.
func (s *FileSink) Abort(context.Context) error {
	s.w.Reset(s.f)
	if s.stream {
		return nil // what a stream was given stays given
	}
	if err := cut(s.f, s.committed); err != nil {
		return fmt.Errorf("%s: %w", s.path, err)
	}
	return nil
}

// Recover cuts the file back to the length PreCommit recorded in state
// (with state nil, to its length at open). A file shorter than the state
// says was changed outside the job, and Recover refuses it.
func (s *FileSink) Recover(_ context.Context, _ int64, state []byte) error {
	n := s.base
	if state != nil {
		v, err := strconv.ParseInt(string(state), 10, 64)
		if err != nil || v < 0 {
			return fmt.Errorf("%s: corrupt checkpoint state %q", s.path, state)
		}
		n = v
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("%s: %w", s.path, err)
	}
	if s.stream {
		return nil // a stream cannot be cut back: its lines are at least once
	}
	fi, err := s.f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() < n {
		return fmt.Errorf("%s is shorter than the checkpoint says (%d bytes, it has %d); it was changed outside weir: start over with a fresh run", s.path, n, fi.Size())
	}
	if err := cut(s.f, n); err != nil {
		return fmt.Errorf("%s: %w", s.path, err)
	}
	s.committed = n
	return nil
}

// Close flushes the buffer and closes the file (without an fsync).
func (s *FileSink) Close() error {
	err := s.w.Flush()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	return err
}
