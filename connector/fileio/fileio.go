// Package fileio is the line source of weir's declarative jobs: it reads
// JSON lines or CSV from a file or from an io.Reader (stdin) and emits
// [Line] values as a connector.Source with one or more source channels.
//
// The source does framing and the replay control lines only. Decoding the
// fields of a record and validating its timestamp is the job of a later
// operator, which also turns Bad lines into dead letters and Watermark and
// Idle lines into per-channel watermarks and idleness.
//
// # Framing
//
// Lines end with "\n"; one trailing "\r" is removed, and so is a UTF-8
// byte order mark at the start of the input. Blank lines (only
// white space, as bytes.TrimSpace sees it) are skipped and not emitted; a
// last line without "\n" counts. A line longer than Options.MaxLine bytes
// becomes a Bad line "line_too_long" holding its first MaxLine bytes; the
// rest of the line is read through without being buffered (such a line is
// Bad even when it is all white space). A line that is not valid UTF-8 is
// a Bad line "utf8_invalid".
//
// # JSON lines
//
// A line is a Data line whose Text is the line without surrounding white
// space. Only a line containing the bytes `"$` is parsed here, for its
// control keys (keys are compared after JSON unescaping, but a line whose
// only "$" is escaped, as in "\u0024idle", is not parsed at all and stays
// data):
//
//   - {"$channel": 2, ...}: the line belongs to source channel 2; the
//     "$" keys are removed from a Data line's Text, the other keys keep
//     their order and the raw text of their values (a string key that was
//     written with escapes is re-escaped canonically);
//   - {"$watermark": 1767225600000}: a Watermark line;
//   - {"$idle": true}: an Idle line.
//
// Errors in control keys make Bad lines: "channel_invalid" and
// "control_invalid". A line that is not valid JSON is left as Data for the
// decoder to report.
//
// # CSV
//
// CSV follows encoding/csv (comma separator, RFC 4180 quoting, a quoted
// field may span lines; the No of such a row is the line where it starts),
// except that white-space-only lines between rows are skipped and a line
// break inside a quoted field is kept as written ("\r\n" stays "\r\n",
// as RFC 4180 and Flink's CSV format keep it). The first
// non-blank row is the header: it names the fields and is not emitted. Each
// later row becomes a Data line whose Text is a JSON object with the
// fields in header order: a cell that is a JSON number (and that
// strconv.ParseFloat accepts) is a number, an unquoted empty cell is null
// (a quoted one, "", is the empty string), any
// other cell a string. A row that cannot be parsed or has the wrong number
// of fields is a Bad line "csv_malformed" with the raw row as Text. The
// limit MaxLine applies to a whole row. CSV rows all belong to channel 0.
//
// # Channels
//
// A line without "$channel", and every Bad line, belongs to channel 0. Each
// line is emitted by exactly one channel. A file read by a non-strict
// source is opened by every channel, each emitting only its own lines. In
// strict mode, and for an Options.Input, the channels share one cursor; in
// strict mode a channel emits only while the next line of the input is its
// own, so a round-robin poll of the channels (the deterministic executor)
// reproduces the input order exactly.
//
// # Checkpoints
//
// A *Reader is a connector.CheckpointedReader when it reads a regular file.
// A non-strict channel's position is the byte offset and line number after
// the last line it read (its own, emitted, or another channel's); a strict
// source's channels share one position, after the last line any channel
// took. A restored reader seeks there and goes on numbering lines; a CSV
// reader takes the header from the file as New read it. A position is
// refused when the file no longer fits it (it is shorter, the position is
// not at the end of a line, or the CSV header differs). An Options.Input,
// or a path that is not a regular file, cannot be checkpointed.
package fileio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/etime"
)

// Kind is the kind of a Line.
type Kind = connector.LineKind

// The kinds of lines (see connector.LineKind).
const (
	Data      = connector.Data
	Watermark = connector.Watermark
	Idle      = connector.Idle
	Bad       = connector.Bad
)

// Line is one line (or CSV row) of the input: a connector.Line, whose
// Text the Line owns (a copy, never shared with the reader or with
// another Line), so a Line may be kept and sent to other goroutines.
type Line = connector.Line

// Format is the input format.
type Format uint8

// The formats.
const (
	// JSONL is one JSON object per line.
	JSONL Format = iota
	// CSV is comma-separated values with a header row.
	CSV
)

// String returns the format's name.
func (f Format) String() string {
	switch f {
	case JSONL:
		return "jsonl"
	case CSV:
		return "csv"
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// Options configures a source. The functions Final and Stop are called
// from the goroutines that call Read, possibly several at once.
type Options struct {
	// Path is the file to read; it is ignored when Input is set. A path
	// that is not a regular file (a named pipe, /dev/stdin, a process
	// substitution) is opened once by New and read like Input.
	Path string
	// Input is read instead of a file (stdin). It is read once, by one
	// background goroutine started at the first Read, and shared by all
	// channels; Read takes what that goroutine has parsed and never waits
	// for input. Without Strict, a channel that meets another channel's
	// line queues it for that channel; these queues are unbounded.
	//
	// The goroutine ends at the end of input, at a read error, or when the
	// last reader is closed. If it is blocked inside Input.Read then (a
	// terminal or a pipe with no writer activity), it ends only when that
	// Read returns: the source does not close Input, so for a real stdin
	// the goroutine may stay blocked until the process exits.
	Input io.Reader
	// Name names the input in error messages, those of opening Path
	// included (default: Path, or "stdin").
	Name string
	// Format is the input format.
	Format Format
	// Columns, for CSV, name the columns in order, as Flink's CSV format
	// maps them by position: the first row is a header only when it
	// names these columns (compared without case), and the first data row
	// otherwise. Nil: the first row is the header.
	Columns []string
	// Channels is the number of source channels (default 1).
	Channels int
	// Strict is deterministic replay: the channels emit the lines strictly
	// in input order, one channel after another.
	Strict bool
	// MaxLine is the longest line in bytes (default 1 MiB). For CSV it
	// bounds a whole row.
	MaxLine int
	// Batch is the most lines a Read call emits (default 256).
	Batch int
	// Final says, when a channel reaches the end of input (or stops),
	// whether it emits the final MAX watermark before returning Done. It is
	// called once per channel at that moment. nil: always emit.
	Final func() bool
	// Stop, when non-nil and returning true, ends every channel as if the
	// input had ended (Ctrl-C). It is checked at every Read.
	Stop func() bool
}

// Validate refuses options New cannot use, naming the field: a negative
// Channels, MaxLine or Batch (0 is the default), or an unknown Format.
func (o Options) Validate() error {
	switch {
	case o.Channels < 0:
		return fmt.Errorf("fileio: Options.Channels is %d: use 1 or more (0: 1)", o.Channels)
	case o.MaxLine < 0:
		return fmt.Errorf("fileio: Options.MaxLine is %d: give the longest line in bytes (0: %d)", o.MaxLine, DefaultMaxLine)
	case o.Batch < 0:
		return fmt.Errorf("fileio: Options.Batch is %d: give the most lines a Read emits (0: %d)", o.Batch, DefaultBatch)
	case o.Format != JSONL && o.Format != CSV:
		return fmt.Errorf("fileio: Options.Format %d is unknown: use fileio.JSONL or fileio.CSV", o.Format)
	}
	return nil
}

// Default option values.
const (
	DefaultMaxLine = 1 << 20
	DefaultBatch   = 256
)

// New returns the source described by o. A file that cannot be opened is
// an error here (for example "open orders.jsonl: no such file or
// directory"); so is, for a CSV file, a header with an empty or duplicate
// name. For an Input, header errors are reported by the first Read that
// reaches them.
//
// The source's Open may be called from several goroutines at once; each
// channel is opened once.
func New(o Options) (connector.Source[Line], error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Channels == 0 {
		o.Channels = 1
	}
	if o.MaxLine == 0 {
		o.MaxLine = DefaultMaxLine
	}
	if o.Batch == 0 {
		o.Batch = DefaultBatch
	}
	s := &source{o: o}
	if o.Input != nil {
		if s.o.Name == "" {
			s.o.Name = "stdin"
		}
		s.cur = newCursor(s, o.Input, nil)
		s.once = true
		return s, nil
	}
	if o.Path == "" {
		return nil, errors.New("fileio: no input: neither a path nor a reader")
	}
	if s.o.Name == "" {
		s.o.Name = o.Path
	}
	f, err := s.open()
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	switch {
	case fi.IsDir():
		f.Close()
		return nil, fmt.Errorf("open %s: is a directory: weir reads one file of JSON lines or CSV (Flink's filesystem source reads a directory's files; give one file, or concatenate them: cat %s/* > input.jsonl)", s.o.Name, s.o.Name)
	case !fi.Mode().IsRegular():
		// A pipe or a device can be read once only: share it as an Input.
		s.cur = newCursor(s, f, f)
		s.once = true
		return s, nil
	}
	if o.Format == CSV {
		p := s.newParser(f, 0)
		err := p.readHeader()
		f.Close()
		if err != nil {
			return nil, err
		}
		// Kept for a restore, which resumes after the header (none when
		// the first row is data: Columns).
		s.keys, s.headerEnd, s.headerSum = p.keys, p.f.off, headerSum(p.keys)
		if p.held {
			s.headerEnd = 0
		}
	} else {
		f.Close()
	}
	if o.Strict {
		s.cur = newCursor(s, nil, nil)
	}
	return s, nil
}

// source is the connector.Source. Its options are read-only after New.
type source struct {
	o   Options
	cur *cursor // the shared cursor; nil when each channel reads the file itself
	// once: the input is read once (an Input, or a path that is not a
	// regular file) and cannot be checkpointed.
	once bool

	// The CSV header of a file as New read it, for a restore: its JSON
	// keys (shared read-only by the parsers of restored readers), the byte
	// offset after it and its checksum.
	keys      [][]byte
	headerEnd int64
	headerSum uint64
}

// open opens the file; an error names it by Options.Name.
func (s *source) open() (*os.File, error) {
	f, err := os.Open(s.o.Path)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		pe.Path = s.o.Name
	}
	return f, err
}

func (s *source) newParser(r io.Reader, only int) *parser {
	return newParser(newFramer(r, s.o.Name, s.o.MaxLine), s.o.Format, s.o.Channels, only, s.o.Columns)
}

// Open returns the reader of channel ch of n; n must be Options.Channels.
// The reader is a *Reader.
func (s *source) Open(_ context.Context, ch, n int) (connector.Reader[Line], error) {
	if n != s.o.Channels {
		return nil, fmt.Errorf("fileio: %s: opened with %d channels, configured for %d", s.o.Name, n, s.o.Channels)
	}
	if ch < 0 || ch >= n {
		return nil, fmt.Errorf("fileio: %s: channel %d out of range 0..%d", s.o.Name, ch, n-1)
	}
	r := &Reader{s: s, ch: ch}
	switch {
	case s.o.Format == CSV && ch > 0:
		// CSV rows all belong to channel 0.
		r.empty = true
		if s.cur != nil {
			if err := s.cur.open(); err != nil {
				return nil, err
			}
			r.cur = s.cur
		}
	case s.cur != nil:
		if err := s.cur.open(); err != nil {
			return nil, err
		}
		r.cur = s.cur
	default:
		f, err := s.open()
		if err != nil {
			return nil, err
		}
		r.file = f
		r.p = s.newParser(f, ch)
	}
	return r, nil
}

// item is a parsed line with the position after it.
type item struct {
	line Line
	off  int64 // byte offset after the line
	last int64 // number of the last input line the item consumed
}

// Reader reads one channel; Open returns it. Read and Close must be called
// from one goroutine at a time (the channel's own); Position may be called
// from any goroutine. Lines passed to Emit are owned by the receiver.
type Reader struct {
	s     *source
	ch    int
	empty bool     // no line can belong to this channel
	cur   *cursor  // shared cursor, or nil
	file  *os.File // own file (non-strict file mode)
	p     *parser  // own parser (non-strict file mode)
	done  bool
	buf   []item
	read  bool // Read was called (a restore must come before)

	mu        sync.Mutex
	off, line int64 // after the last emitted line (Position)
	// after the last line the own parser consumed, emitted or skipped as
	// another channel's (the checkpoint position in non-strict file mode)
	scanOff, scanLine int64
	// sum is the input identity of the checkpoint position (prefixSum),
	// used on the channel's goroutine only.
	sum prefixSum
}

// scanFactor bounds the lines a non-strict file reader parses in one Read
// to scanFactor*Batch, so that a channel owning few lines still returns
// regularly.
const scanFactor = 16

// Read emits up to Options.Batch lines of the channel with
// out.Emit(etime.MinTime, line), control lines included. At the end of
// input, or when Options.Stop says so, it emits the final MAX watermark
// (unless Options.Final says not to) and returns connector.Done. A read error
// fails the job: Read returns it, naming the input.
//
// Read returns connector.Emitted also when it emitted nothing but made
// progress that another channel will emit (a shared cursor moved lines to
// another channel's queue, or a channel's own file reader skipped many
// lines of other channels); connector.Waiting when nothing is available now.
func (r *Reader) Read(_ context.Context, out connector.Output[Line]) (connector.ReadStatus, error) {
	r.read = true
	if r.done {
		return connector.Done, nil
	}
	if r.s.o.Stop != nil && r.s.o.Stop() {
		return r.finish(out), nil
	}
	if r.empty {
		return r.finish(out), nil
	}
	if r.cur != nil {
		items, status, err := r.cur.read(r.ch, r.buf[:0])
		r.buf = items
		r.emit(out, items)
		clear(items)
		if err != nil {
			return 0, err
		}
		if status == connector.Done {
			return r.finish(out), nil
		}
		return status, nil
	}
	batch := r.s.o.Batch
	n := 0
	for range scanFactor * batch {
		it, ok, err := r.p.next()
		if err == io.EOF {
			r.scanned()
			return r.finish(out), nil
		}
		if err != nil {
			return 0, err
		}
		if !ok {
			continue // another channel's line
		}
		r.emit(out, []item{it})
		if n++; n == batch {
			break
		}
	}
	r.scanned()
	return connector.Emitted, nil
}

// Backlog implements connector.BacklogReporter (W10): a regular file is a
// backlog until its end; stdin or a pipe only while lines it read ahead
// wait to be taken, so a live trickle gets periodic watermarks.
func (r *Reader) Backlog() bool {
	if r.cur != nil {
		return r.cur.backlog(r.ch)
	}
	return true
}

// scanned records how far the own parser has read: every line before is
// emitted or another channel's.
func (r *Reader) scanned() {
	r.mu.Lock()
	r.scanOff, r.scanLine = r.p.f.off, r.p.f.no
	r.mu.Unlock()
}

func (r *Reader) emit(out connector.Output[Line], items []item) {
	if len(items) == 0 {
		return
	}
	for i := range items {
		out.Emit(etime.MinTime, items[i].line)
	}
	last := &items[len(items)-1]
	r.mu.Lock()
	r.off, r.line = last.off, last.last
	r.mu.Unlock()
}

// finish ends the channel: the final watermark unless Final says not.
func (r *Reader) finish(out connector.Output[Line]) connector.ReadStatus {
	r.done = true
	if r.s.o.Final == nil || r.s.o.Final() {
		out.EmitWatermark(etime.MaxTime)
	}
	return connector.Done
}

// Position returns the channel's position: the byte offset in the input
// just after the last line the channel emitted, and the number of the last
// input line that line consumed (for a CSV row spanning lines, its last
// line). Before the first emitted line, both are 0, or after
// RestorePosition the restored position. Lines of other channels, and
// blank lines, after that offset are not accounted for: a reader resuming
// at offset numbers the next line line+1 and must again skip the lines
// that are not its own. Position is safe for concurrent
// use with Read.
func (r *Reader) Position() (offset, line int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.off, r.line
}

// Close releases the reader. Closing the last reader of a shared input
// stops its background goroutine (see Options.Input).
func (r *Reader) Close() error {
	r.done = true
	if r.cur != nil {
		c := r.cur
		r.cur = nil
		return c.release()
	}
	if r.file != nil {
		err := r.file.Close()
		r.file = nil
		return err
	}
	return nil
}
