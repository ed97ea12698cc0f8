// Package ledger stores too-late records durably, as the late-data ledger
// of a job: JSON lines in segments under one directory per arrival day,
// each line checksummed, appended only, committed with the job's
// checkpoints and cut back to the checkpoint's position on restore, with
// a retention in days.
//
// Layout, under the ledger directory of one job:
//
//	day=2026-11-30/seg-000001.jsonl
//	day=2026-11-30/seg-000002.jsonl   (after 64 MiB, or a restart)
//	day=2026-12-01/seg-000001.jsonl
//
// A line is a JSON object whose last field is "crc": the CRC-32C
// (Castagnoli) of the line's bytes before `,"crc":`, in hex, so jq and
// other JSON-lines tools still read it and Scan finds bit rot line by
// line.
package ledger

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// SegmentBytes is the size after which a segment is sealed and the next
// one started.
const SegmentBytes = 64 << 20

// Pos is a committed position: the segment being written (relative to the
// ledger directory) and its committed length. The zero Pos is an empty
// ledger.
type Pos struct {
	Segment string `json:"segment"`
	Length  int64  `json:"length"`
}

// Writer appends entries. It is not safe for concurrent use.
type Writer struct {
	dir string
	// day is the newest segment's day ("" in an empty ledger); seg is
	// the segment, relative to dir, that Commit reports: the open one,
	// or before the first Append the newest one there is, whole.
	day  string
	seg  string
	f    *os.File // the open segment, nil before the first Append
	w    *bufio.Writer
	size int64 // seg's length, written or buffered
	buf  []byte
	// err is the first write error: every later Commit returns it, so no
	// checkpoint records a length the file never reached.
	err error
}

// Open opens the ledger in dir for appending. With a restored position,
// it cuts the ledger back to it: the position's segment is truncated to
// its length and every later segment is removed, so the ledger holds
// exactly what the checkpoint covered. Without one (a fresh run) it
// keeps what is there and appends to new segments. Day directories older
// than retention (0: keep all) are removed; a restored position in a day
// retention had removed cuts every later segment all the same.
func Open(dir string, restored *Pos, retention time.Duration, now time.Time) (*Writer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	segs, err := Segments(dir)
	if err != nil {
		return nil, err
	}
	if restored != nil {
		// Check before changing anything: a refused restore leaves the
		// ledger as it was.
		present := false
		if restored.Segment != "" {
			p := filepath.Join(dir, restored.Segment)
			fi, err := os.Stat(p)
			switch {
			case err == nil && fi.Size() >= restored.Length:
				present = true
			case os.IsNotExist(err) && retention > 0 && restored.Segment < retentionCut(now, retention):
				// Retention removed its day after the checkpoint; later
				// segments are still cut.
			default:
				return nil, fmt.Errorf("ledger segment %s is shorter than the checkpoint says (%d bytes); it was changed outside weir: start over with --fresh", p, restored.Length)
			}
		}
		for _, s := range segs {
			if restored.Segment == "" || s > restored.Segment {
				if err := os.Remove(filepath.Join(dir, s)); err != nil {
					return nil, err
				}
			}
		}
		if present {
			if err := os.Truncate(filepath.Join(dir, restored.Segment), restored.Length); err != nil {
				return nil, err
			}
		}
	}
	if retention > 0 {
		cut := retentionCut(now, retention)
		days, _ := filepath.Glob(filepath.Join(dir, "day=*"))
		for _, d := range days {
			if filepath.Base(d) < cut {
				if err := os.RemoveAll(d); err != nil {
					return nil, err
				}
			}
		}
	}
	// A checkpoint before the first append records the ledger as it now
	// stands (its last segment, whole), never the zero Pos, which a
	// restore reads as "an empty ledger" and would remove every entry.
	w := &Writer{dir: dir}
	if segs, err = Segments(dir); err != nil {
		return nil, err
	}
	if len(segs) > 0 {
		last := segs[len(segs)-1]
		fi, err := os.Stat(filepath.Join(dir, last))
		if err != nil {
			return nil, err
		}
		w.seg, w.size = last, fi.Size()
		w.day = strings.TrimPrefix(filepath.Dir(last), "day=")
	}
	return w, nil
}

// retentionCut is the name of the oldest day directory retention keeps.
func retentionCut(now time.Time, retention time.Duration) string {
	return "day=" + now.UTC().Add(-retention).Format(time.DateOnly)
}

// Segments returns the ledger's segments, relative to dir, in order.
func Segments(dir string) ([]string, error) {
	m, err := filepath.Glob(filepath.Join(dir, "day=*", "seg-*.jsonl"))
	if err != nil {
		return nil, err
	}
	out := make([]string, len(m))
	for i, p := range m {
		out[i], _ = filepath.Rel(dir, p)
	}
	slices.Sort(out)
	return out, nil
}

// Append appends one entry: entry is a JSON object (without the crc
// field); arrived is its arrival time, which decides its day. A clock
// that went back to an earlier day than the newest segment's keeps to
// that segment's day: segments stay in order, so a restore's cut removes
// only what came after the checkpoint.
func (w *Writer) Append(entry []byte, arrived time.Time) error {
	if len(entry) < 2 || entry[len(entry)-1] != '}' {
		return errors.New("ledger: an entry must be a JSON object")
	}
	if w.err != nil {
		return w.err
	}
	day := max(arrived.UTC().Format(time.DateOnly), w.day)
	if w.f == nil || day != w.day || w.size >= SegmentBytes {
		if err := w.roll(day); err != nil {
			w.err = err
			return err
		}
	}
	b := append(w.buf[:0], entry[:len(entry)-1]...)
	sum := crc32.Checksum(b, castagnoli)
	b = append(b, `,"crc":"`...)
	b = fmt.Appendf(b, "%08x", sum)
	b = append(b, "\"}\n"...)
	w.buf = b
	n, err := w.w.Write(b)
	w.size += int64(n)
	if err != nil {
		w.err = err
	}
	return err
}

// roll seals the open segment and starts the next one of day.
func (w *Writer) roll(day string) error {
	if err := w.seal(); err != nil {
		return err
	}
	dir := filepath.Join(w.dir, "day="+day)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "seg-*.jsonl"))
	next := 1
	for _, s := range segs {
		if n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(s), "seg-"), ".jsonl")); err == nil && n >= next {
			next = n + 1
		}
	}
	rel := filepath.Join("day="+day, fmt.Sprintf("seg-%06d.jsonl", next))
	f, err := os.OpenFile(filepath.Join(w.dir, rel), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	w.f, w.w, w.day, w.seg, w.size = f, bufio.NewWriterSize(f, 64<<10), day, rel, 0
	return syncDir(dir)
}

func (w *Writer) seal() error {
	if w.f == nil {
		return w.err
	}
	err := errors.Join(w.w.Flush(), w.f.Sync(), w.f.Close())
	w.f = nil
	if err != nil && w.err == nil {
		w.err = err
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// Commit makes every appended entry durable and returns the position a
// checkpoint records. Before the first Append that is the newest segment
// there is, whole (the zero Pos in an empty ledger). After a write error
// it returns that error.
func (w *Writer) Commit() (Pos, error) {
	if w.err != nil {
		return Pos{}, w.err
	}
	if w.f == nil {
		return Pos{Segment: w.seg, Length: w.size}, nil
	}
	if err := w.w.Flush(); err != nil {
		w.err = err
		return Pos{}, err
	}
	if err := w.f.Sync(); err != nil {
		w.err = err
		return Pos{}, err
	}
	return Pos{Segment: w.seg, Length: w.size}, nil
}

// Close commits and closes the open segment.
func (w *Writer) Close() error { return w.seal() }

// Entry is a ledger line, decoded.
type Entry struct {
	ID     string `json:"id"`
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
	// Key is the key's fields and values as a JSON object.
	Key json.RawMessage `json:"key"`
	// TS is the record's event time, Windows the windows it missed as
	// [start, end) in ms, Watermark the operator's watermark when it
	// arrived and LatenessMS how far behind it was.
	TS         int64      `json:"ts"`
	Windows    [][2]int64 `json:"windows"`
	Watermark  int64      `json:"watermark"`
	LatenessMS int64      `json:"lateness_ms"`
	// ArrivedAt is the processing time of its arrival (Unix ms).
	ArrivedAt int64 `json:"arrived_at"`
	// Spec is a hash of the job's definitions that give the entry its
	// meaning (key, window, aggregates, timestamps); "" in entries
	// written before weir recorded it (a backfill accepts those).
	Spec string `json:"spec,omitempty"`
	// Run is the id of the job's run that wrote the entry (0 in entries
	// written before weir recorded runs): an entry is identified by its
	// run and ID, since a later run may read other input at the same
	// positions.
	Run int64 `json:"run,omitempty"`
	// Job is the name of the job that wrote the entry ("" in entries
	// written before weir recorded it): a ledger topic that several jobs
	// share holds each one's.
	Job string `json:"job,omitempty"`
	// Record is the original record.
	Record json.RawMessage `json:"record"`
	// Segment and Line say where the entry is.
	Segment string `json:"-"`
	Line    int    `json:"-"`
}

// Corrupt is a line whose checksum or syntax is wrong.
type Corrupt struct {
	Segment string
	Line    int
	Reason  string
}

// Scan calls fn for every entry of the ledger in dir, in order, and
// returns the lines it could not read (bit rot, a torn last line of a
// crashed writer beyond the committed length is removed at restore and
// never seen here).
func Scan(dir string, fn func(e Entry) error) ([]Corrupt, error) {
	return ScanTo(dir, nil, fn)
}

// ScanTo is Scan up to a cut: with a position (a checkpoint's), only
// what it covers, the segments before its segment and that segment up to
// its length; what was written after the checkpoint (and a restore may
// still cut away) is left out.
func ScanTo(dir string, cut *Pos, fn func(e Entry) error) ([]Corrupt, error) {
	segs, err := Segments(dir)
	if err != nil {
		return nil, err
	}
	if cut != nil && cut.Segment != "" {
		// The segment a checkpoint committed up to is the newest the
		// cut reads, never removed by retention: one that is gone or
		// shorter lost entries the job wrote (changed outside weir),
		// which a scan would otherwise pass over without a word.
		fi, err := os.Stat(filepath.Join(dir, cut.Segment))
		switch {
		case err != nil:
			return nil, fmt.Errorf("ledger %s: segment %s, which the checkpoint committed %d bytes of, is not there: entries the job wrote are gone (the ledger was changed outside weir)", dir, cut.Segment, cut.Length)
		case fi.Size() < cut.Length:
			return nil, fmt.Errorf("ledger %s: segment %s is %d bytes, shorter than the %d the checkpoint committed: entries the job wrote are gone (the ledger was changed outside weir)", dir, cut.Segment, fi.Size(), cut.Length)
		}
	}
	var bad []Corrupt
	for _, s := range segs {
		if cut != nil && (cut.Segment == "" || s > cut.Segment) {
			break
		}
		f, err := os.Open(filepath.Join(dir, s))
		if err != nil {
			return bad, err
		}
		var in io.Reader = f
		if cut != nil && s == cut.Segment {
			in = io.LimitReader(f, cut.Length)
		}
		r := bufio.NewReaderSize(in, 64<<10)
		for line := 1; ; line++ {
			b, err := r.ReadBytes('\n')
			if len(b) > 0 {
				e, why := parse(b)
				if why != "" {
					bad = append(bad, Corrupt{Segment: s, Line: line, Reason: why})
				} else {
					e.Segment, e.Line = s, line
					if ferr := fn(e); ferr != nil {
						f.Close()
						return bad, ferr
					}
				}
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				f.Close()
				return bad, err
			}
		}
		f.Close()
	}
	return bad, nil
}

// Last returns the ledger's newest readable entry (false: none), reading
// the newest segments only, each backwards from its end.
func Last(dir string) (Entry, bool, error) {
	segs, err := Segments(dir)
	if err != nil {
		return Entry{}, false, err
	}
	for i := len(segs) - 1; i >= 0; i-- {
		e, ok, err := lastIn(filepath.Join(dir, segs[i]))
		if err != nil {
			return Entry{}, false, err
		}
		if ok {
			e.Segment = segs[i]
			return e, true, nil
		}
	}
	return Entry{}, false, nil
}

// lastChunk is how much lastIn reads at a time, at first.
var lastChunk = 64 << 10

// lastIn returns the last readable entry of the segment at path, reading
// it backwards in chunks from its end: only as far as its last readable
// line (a torn or rotten line is skipped, as Scan skips it). A line longer
// than the chunk doubles the next read, so even a segment-long line costs
// linear time.
func lastIn(path string) (Entry, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return Entry{}, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Entry{}, false, err
	}
	// buf holds the file's bytes [off, off+len(buf)), not yet looked at.
	off := fi.Size()
	var buf []byte
	for {
		buf = bytes.TrimRight(buf, "\n")
		j := bytes.LastIndexByte(buf, '\n')
		if j < 0 && off > 0 {
			// The line may begin in an earlier chunk.
			n := int64(max(lastChunk, len(buf)))
			n = min(n, off)
			off -= n
			nb := make([]byte, int(n)+len(buf))
			if _, err := f.ReadAt(nb[:n], off); err != nil {
				return Entry{}, false, err
			}
			copy(nb[n:], buf)
			buf = nb
			continue
		}
		if len(buf) == 0 {
			return Entry{}, false, nil
		}
		if e, why := parse(buf[j+1:]); why == "" {
			return e, true, nil
		}
		buf = buf[:max(j, 0)]
	}
}

// parse checks a line's checksum and decodes it.
func parse(b []byte) (Entry, string) {
	b = bytes.TrimRight(b, "\n")
	i := bytes.LastIndex(b, []byte(`,"crc":"`))
	if i < 0 || !bytes.HasSuffix(b, []byte(`"}`)) || len(b)-i != len(`,"crc":"`)+8+2 {
		return Entry{}, "no checksum (a torn or foreign line)"
	}
	want, err := strconv.ParseUint(string(b[i+len(`,"crc":"`):len(b)-2]), 16, 32)
	if err != nil || uint32(want) != crc32.Checksum(b[:i], castagnoli) {
		return Entry{}, "checksum mismatch"
	}
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return Entry{}, "not JSON: " + err.Error()
	}
	return e, ""
}
