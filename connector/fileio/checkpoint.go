package fileio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"

	"github.com/weirstream/weir"
)

var _ weir.CheckpointedReader = (*Reader)(nil)

// A position is where a reader resumes: a byte offset in the file at the
// start of a line, the number of the line before it, and for CSV a
// checksum of the header (a resumed reader takes the header from the
// file, read by New).
//
// Encoded, it is posMagic, posVersion, the format, the mode, the offset
// and the line number as uvarints, and for CSV the header checksum (8
// bytes, big endian).
type position struct {
	format    Format
	shared    bool // taken by a strict source's shared cursor
	off, line int64
	header    uint64 // CSV: headerSum of the header
}

const (
	posMagic   = "wfio"
	posVersion = 1

	modeOwn    = 'o' // a channel reading the file itself
	modeShared = 's' // the shared cursor of a strict source
)

func (p position) encode() []byte {
	b := make([]byte, 0, 32)
	b = append(b, posMagic...)
	b = append(b, posVersion, byte(p.format))
	if p.shared {
		b = append(b, modeShared)
	} else {
		b = append(b, modeOwn)
	}
	b = binary.AppendUvarint(b, uint64(p.off))
	b = binary.AppendUvarint(b, uint64(p.line))
	if p.format == CSV {
		b = binary.BigEndian.AppendUint64(b, p.header)
	}
	return b
}

// decode reads a position encoded for this source's format.
func (s *source) decode(b []byte) (position, error) {
	var p position
	name := s.o.Name
	if !bytes.HasPrefix(b, []byte(posMagic)) || len(b) < len(posMagic)+3 {
		return p, fmt.Errorf("fileio: %s: the checkpoint's position (%d bytes) is not one of a file source", name, len(b))
	}
	b = b[len(posMagic):]
	if b[0] != posVersion {
		return p, fmt.Errorf("fileio: %s: the checkpoint's position has version %d; this weir reads version %d", name, b[0], posVersion)
	}
	p.format = Format(b[1])
	if p.format != JSONL && p.format != CSV {
		return p, fmt.Errorf("fileio: %s: corrupt checkpoint position: unknown format %d", name, b[1])
	}
	if p.format != s.o.Format {
		return p, fmt.Errorf("fileio: %s: the checkpoint's position is one of a %s source; this source reads %s", name, p.format, s.o.Format)
	}
	switch b[2] {
	case modeOwn:
	case modeShared:
		p.shared = true
	default:
		return p, fmt.Errorf("fileio: %s: corrupt checkpoint position: unknown mode %q", name, b[2])
	}
	b = b[3:]
	var vals [2]int64
	for i := range vals {
		v, n := binary.Uvarint(b)
		if n <= 0 || v > 1<<62 {
			return p, fmt.Errorf("fileio: %s: corrupt checkpoint position: bad number", name)
		}
		vals[i] = int64(v)
		b = b[n:]
	}
	p.off, p.line = vals[0], vals[1]
	if p.format == CSV {
		if len(b) < 8 {
			return p, fmt.Errorf("fileio: %s: corrupt checkpoint position: truncated", name)
		}
		p.header = binary.BigEndian.Uint64(b)
		b = b[8:]
	}
	if len(b) > 0 {
		return p, fmt.Errorf("fileio: %s: corrupt checkpoint position: %d bytes too many", name, len(b))
	}
	// Every line consumed has at least one byte.
	if (p.off == 0) != (p.line == 0) || p.line > p.off {
		return p, fmt.Errorf("fileio: %s: corrupt checkpoint position: line %d at byte %d", name, p.line, p.off)
	}
	return p, nil
}

// headerSum is the checksum of a CSV header's keys.
func headerSum(keys [][]byte) uint64 {
	h := fnv.New64a()
	for _, k := range keys {
		h.Write(k)
	}
	return h.Sum64()
}

// position returns the position of this source at off and line.
func (s *source) position(shared bool, off, line int64) position {
	return position{format: s.o.Format, shared: shared, off: off, line: line, header: s.headerSum}
}

// errOnce is the error of checkpointing an input that is read once.
func (s *source) errOnce() error {
	return fmt.Errorf("fileio: %s cannot be checkpointed: it is read once (stdin or a pipe) and a restore could not re-read it; use a file source", s.o.Name)
}

// check verifies that the file f still fits position p: the position is
// within the file at the end of a line, and a CSV header is the same.
func (s *source) check(f *os.File, p position) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("fileio: %s: %w", s.o.Name, err)
	}
	size := fi.Size()
	if p.off > size {
		return fmt.Errorf("fileio: %s: the input file is shorter (%d bytes) than the checkpoint's position (byte %d): it changed; start over with --fresh", s.o.Name, size, p.off)
	}
	if p.off == 0 {
		return nil // from the start: nothing was read
	}
	if p.off < size {
		var b [1]byte
		if _, err := f.ReadAt(b[:], p.off-1); err != nil {
			return fmt.Errorf("fileio: read %s: %w", s.o.Name, err)
		}
		if b[0] != '\n' {
			return fmt.Errorf("fileio: %s: the checkpoint's position (byte %d, line %d) is not at the end of a line: the input file changed; start over with --fresh", s.o.Name, p.off, p.line)
		}
	}
	if s.o.Format == CSV && (p.header != s.headerSum || p.off < s.headerEnd) {
		return fmt.Errorf("fileio: %s: the CSV header is not the one of the checkpoint: the input file changed; start over with --fresh", s.o.Name)
	}
	return nil
}

// resume returns a parser of f (keeping the lines of channel only, or all
// for -1) that resumes at p, and positions f for it.
func (s *source) resume(f *os.File, p position, only int) (*parser, error) {
	if err := s.check(f, p); err != nil {
		return nil, err
	}
	if _, err := f.Seek(p.off, io.SeekStart); err != nil {
		return nil, fmt.Errorf("fileio: %s: %w", s.o.Name, err)
	}
	np := s.newParser(f, only)
	if p.off > 0 {
		np.f.off, np.f.no = p.off, p.line
		if s.o.Format == CSV {
			np.headerDone, np.keys = true, s.keys
		}
	}
	return np, nil
}

// SnapshotPosition implements weir.CheckpointedReader. It is called
// between two Read calls of the channel.
//
// A non-strict file reader's position is the byte offset and line number
// after the last line it has read, which is either its own and emitted or
// another channel's. A strict source's readers share one position: after
// the last line taken by any channel (a line read but left for another
// channel is not included); all channels return it. An Options.Input, or a
// path that is not a regular file, cannot be checkpointed: the error says
// so.
func (r *Reader) SnapshotPosition() ([]byte, error) {
	s := r.s
	if s.once {
		return nil, s.errOnce()
	}
	if r.cur != nil {
		c := r.cur
		c.mu.Lock()
		defer c.mu.Unlock()
		return s.position(true, c.off, c.line).encode(), nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return s.position(false, r.scanOff, r.scanLine).encode(), nil
}

// RestorePosition implements weir.CheckpointedReader: the reader, opened
// and not yet read, resumes at pos. It refuses a position that is not one
// of a file source of this format, and one that does not fit the file (it
// is beyond its end or not at the end of a line, or a CSV header differs):
// the file changed.
//
// In strict mode every channel restores the same position, the one of the
// shared cursor: the first call sets it, later calls must agree. A strict
// source with several channels cannot resume at a position of a non-strict
// one (each channel has its own).
func (r *Reader) RestorePosition(pos []byte) error {
	s := r.s
	if s.once {
		return s.errOnce()
	}
	p, err := s.decode(pos)
	if err != nil {
		return err
	}
	if r.read || r.done {
		return fmt.Errorf("fileio: %s: channel %d: cannot restore a position after reading", s.o.Name, r.ch)
	}
	if r.cur != nil {
		if err := r.cur.restore(p); err != nil {
			return err
		}
		r.mu.Lock()
		r.off, r.line = p.off, p.line
		r.mu.Unlock()
		return nil
	}
	if r.empty {
		// The channel has no lines: only check the position.
		f, err := s.open()
		if err != nil {
			return err
		}
		defer f.Close()
		return s.check(f, p)
	}
	np, err := s.resume(r.file, p, r.ch)
	if err != nil {
		return err
	}
	r.p = np
	r.mu.Lock()
	r.off, r.line = p.off, p.line
	r.scanOff, r.scanLine = p.off, p.line
	r.mu.Unlock()
	return nil
}

// restore sets the position of a strict file's cursor, before it started.
func (c *cursor) restore(p position) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	name := c.s.o.Name
	if c.restored {
		if p.off != c.off || p.line != c.line || p.header != c.s.headerSum {
			return fmt.Errorf("fileio: %s: the channels of a strict source resume at different positions (byte %d, line %d and byte %d, line %d)", name, c.off, c.line, p.off, p.line)
		}
		return nil
	}
	switch {
	case c.closed:
		return errors.New("fileio: " + name + ": cannot restore a position: the input is closed")
	case c.started:
		return errors.New("fileio: " + name + ": cannot restore a position after reading")
	case !p.shared && c.s.o.Channels > 1:
		return fmt.Errorf("fileio: %s: the checkpoint was taken by a non-strict run, whose channels have positions of their own; a strict run with %d channels cannot resume from it", name, c.s.o.Channels)
	}
	np, err := c.s.resume(c.file, p, -1)
	if err != nil {
		return err
	}
	c.p = np
	c.off, c.line = p.off, p.line
	c.restored = true
	return nil
}
