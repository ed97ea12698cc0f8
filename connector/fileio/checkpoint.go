package fileio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc64"
	"hash/fnv"
	"io"
	"os"

	"github.com/weirstream/weir/connector"
)

var (
	_ connector.CheckpointedReader = (*Reader)(nil)
	_ connector.BacklogReporter    = (*Reader)(nil)
)

// A position is where a reader resumes: a byte offset in the file at the
// start of a line, the number of the line before it, and for CSV a
// checksum of the header (a resumed reader takes the header from the
// file, read by New).
//
// Encoded, it is posMagic, posVersion, the format, the mode, the offset
// and the line number as uvarints, for CSV the header checksum (8 bytes,
// big endian), and (version 2) the CRC-64 of the file's first off bytes (8
// bytes, big endian), so that a resume onto a file rewritten in place,
// even with lines of equal lengths, is refused (positions of version 1
// have no sum and are checked as before).
type position struct {
	format    Format
	shared    bool // taken by a strict source's shared cursor
	off, line int64
	header    uint64 // CSV: headerSum of the header
	sum       uint64 // the CRC-64 of bytes [0, off)
	hasSum    bool   // false for positions of version 1
}

const (
	posMagic   = "wfio"
	posVersion = 2

	modeOwn    = 'o' // a channel reading the file itself
	modeShared = 's' // the shared cursor of a strict source
)

func (p position) encode() []byte {
	b := make([]byte, 0, 32)
	b = append(b, posMagic...)
	v := byte(1)
	if p.hasSum {
		v = posVersion
	}
	b = append(b, v, byte(p.format))
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
	if p.hasSum {
		b = binary.BigEndian.AppendUint64(b, p.sum)
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
	if b[0] != posVersion && b[0] != 1 {
		return p, fmt.Errorf("fileio: %s: the checkpoint's position has version %d; this weir reads versions 1 and %d", name, b[0], posVersion)
	}
	p.hasSum = b[0] >= 2
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
	if p.hasSum {
		if len(b) < 8 {
			return p, fmt.Errorf("fileio: %s: corrupt checkpoint position: truncated", name)
		}
		p.sum = binary.BigEndian.Uint64(b)
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

// position returns the position of this source at off and line, with
// the sum of the bytes before off that ps (read through f) keeps.
func (s *source) position(shared bool, off, line int64, ps *prefixSum, f *os.File) (position, error) {
	sum, err := ps.upTo(f, off)
	if err != nil {
		return position{}, fmt.Errorf("fileio: %s: %w", s.o.Name, err)
	}
	return position{format: s.o.Format, shared: shared, off: off, line: line, header: s.headerSum, sum: sum, hasSum: true}, nil
}

// crcTable is the CRC-64 table of input identity sums.
var crcTable = crc64.MakeTable(crc64.ECMA)

// prefixSum is the running CRC-64 of a file's first off bytes, the input
// identity a checkpoint position carries. It advances by reading the new
// bytes again at each snapshot (from the page cache, with ReadAt, which
// leaves the reading handle's offset alone), so the hot path never hashes
// and a run reads its input twice at most. Its owner serializes calls.
type prefixSum struct {
	off int64
	crc uint64
	buf []byte
}

// upTo returns the sum of bytes [0, to) of f, advancing from the last
// call; a to behind the last one (never the case for a reader's
// positions) starts over.
func (ps *prefixSum) upTo(f *os.File, to int64) (uint64, error) {
	if to < ps.off {
		ps.off, ps.crc = 0, 0
	}
	if ps.buf == nil && to > ps.off {
		ps.buf = make([]byte, 256<<10)
	}
	for ps.off < to {
		n := int(min(int64(len(ps.buf)), to-ps.off))
		m, err := f.ReadAt(ps.buf[:n], ps.off)
		ps.crc = crc64.Update(ps.crc, crcTable, ps.buf[:m])
		ps.off += int64(m)
		if err != nil && !(err == io.EOF && ps.off == to) {
			if err == io.EOF {
				// Truncated since its size was read: refused, not retried.
				return 0, changed("the input file is shorter (%d bytes) than its position (byte %d): it changed; start over with --fresh", ps.off, to)
			}
			return 0, err
		}
	}
	return ps.crc, nil
}

// ErrInputChanged is returned by a restore onto an input file that is not
// the one the checkpoint read (shorter, rewritten, another CSV header):
// resuming would mix two inputs, and retrying cannot help.
var ErrInputChanged = connector.InputChanged("fileio: the input file changed since the checkpoint")

// inputChanged is an ErrInputChanged with its own message.
type inputChanged struct{ msg string }

func (e *inputChanged) Error() string        { return e.msg }
func (e *inputChanged) Is(target error) bool { return errors.Is(ErrInputChanged, target) }

func changed(format string, args ...any) error {
	return &inputChanged{fmt.Sprintf(format, args...)}
}

// errOnce is the error of checkpointing an input that is read once.
func (s *source) errOnce() error {
	return fmt.Errorf("fileio: %s cannot be checkpointed: it is read once (stdin or a pipe) and a restore could not re-read it; use a file source", s.o.Name)
}

// check verifies that the file f still fits position p: the position is
// within the file at the end of a line, a CSV header is the same, and the
// bytes before it have the checkpoint's sum. It returns the prefix sum at
// p, for the restored reader's next positions. Every refusal wraps
// ErrInputChanged.
func (s *source) check(f *os.File, p position) (prefixSum, error) {
	var ps prefixSum
	fi, err := f.Stat()
	if err != nil {
		return ps, fmt.Errorf("fileio: %s: %w", s.o.Name, err)
	}
	size := fi.Size()
	if p.off > size {
		return ps, changed("fileio: %s: the input file is shorter (%d bytes) than the checkpoint's position (byte %d): it changed; start over with --fresh", s.o.Name, size, p.off)
	}
	if p.off == 0 {
		return ps, nil // from the start: nothing was read
	}
	if p.off < size {
		var b [1]byte
		if _, err := f.ReadAt(b[:], p.off-1); err != nil {
			return ps, fmt.Errorf("fileio: read %s: %w", s.o.Name, err)
		}
		if b[0] != '\n' {
			return ps, changed("fileio: %s: the checkpoint's position (byte %d, line %d) is not at the end of a line: the input file changed; start over with --fresh", s.o.Name, p.off, p.line)
		}
	}
	if s.o.Format == CSV && (p.header != s.headerSum || p.off < s.headerEnd) {
		return ps, changed("fileio: %s: the CSV header is not the one of the checkpoint: the input file changed; start over with --fresh", s.o.Name)
	}
	if p.hasSum {
		sum, err := ps.upTo(f, p.off)
		if err != nil {
			return ps, fmt.Errorf("fileio: %s: %w", s.o.Name, err)
		}
		if sum != p.sum {
			return ps, changed("fileio: %s: the first %d bytes of the input file are not the ones the checkpoint read: it was rewritten; start over with --fresh, or put the file back", s.o.Name, p.off)
		}
	}
	return ps, nil
}

// resume returns a parser of f (keeping the lines of channel only, or all
// for -1) that resumes at p, and positions f for it.
func (s *source) resume(f *os.File, p position, only int) (*parser, prefixSum, error) {
	ps, err := s.check(f, p)
	if err != nil {
		return nil, ps, err
	}
	if _, err := f.Seek(p.off, io.SeekStart); err != nil {
		return nil, ps, fmt.Errorf("fileio: %s: %w", s.o.Name, err)
	}
	np := s.newParser(f, only)
	if p.off > 0 {
		np.f.off, np.f.no = p.off, p.line
		if s.o.Format == CSV {
			np.headerDone, np.keys = true, s.keys
		}
	}
	return np, ps, nil
}

// SnapshotPosition implements connector.CheckpointedReader. It is called
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
		off, line := c.off, c.line
		c.mu.Unlock()
		// The sum reads the file again: not under c.mu, which the other
		// channels' reads take. ReadAt leaves the cursor's offset alone.
		c.sumMu.Lock()
		defer c.sumMu.Unlock()
		p, err := s.position(true, off, line, &c.sum, c.file)
		return p.encode(), err
	}
	r.mu.Lock()
	off, line := r.scanOff, r.scanLine
	r.mu.Unlock()
	f := r.file
	if f == nil && off > r.sum.off {
		// The reader is closed (Close drops its file) and has read past
		// its last snapshot's sum: open the file again to take it
		// (TestSnapshotAfterClose). A channel that never had a file of its
		// own (no lines of its own) has position 0 and does not get here.
		var err error
		if f, err = s.open(); err != nil {
			return nil, err
		}
		defer f.Close()
	}
	p, err := s.position(false, off, line, &r.sum, f)
	return p.encode(), err
}

// RestorePosition implements connector.CheckpointedReader: the reader, opened
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
		ps, err := s.check(f, p)
		r.sum = ps
		return err
	}
	np, ps, err := s.resume(r.file, p, r.ch)
	if err != nil {
		return err
	}
	r.p, r.sum = np, ps
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
	np, ps, err := c.s.resume(c.file, p, -1)
	if err != nil {
		return err
	}
	c.p, c.sum = np, ps
	c.off, c.line = p.off, p.line
	c.restored = true
	return nil
}
