// Package archive keeps, in Pebble, the newest published revision of each
// window of a job whose results go to a file or a Kafka topic (sinks that
// cannot be read back as a table), so that a backfill can fold too-late
// records into a window the live job has closed. It is the SQL results
// row of those sinks: per (key, window) the pane and the result bytes,
// which hold the aggregates and the accumulators of those that are not
// their own. Windows that ended more than a horizon before the watermark
// are removed.
//
// Beside the rows it holds what backfill needs to be idempotent and to
// survive a crash: the ledger entry ids applied to each window, written in
// the batch that writes the window's new revision, and an outbox of
// revisions committed but not yet published, which the next backfill
// publishes first.
//
// A job run as a group keeps the same rows in a compacted Kafka topic
// instead (kafka.go: the record formats; internal/group reads and writes
// the topic).
//
// One process at a time has an archive open: a backfill for its whole
// run, the live job for each commit (so a backfill can run beside it;
// a live commit that finds the archive busy waits for the next one).
package archive

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/flock"
	"github.com/weirstream/weir/state/pebblestate"
)

// Key prefixes: a window's row, an applied entry id, an outbox revision,
// the horizon, the live mark, the newest run and the format.
const (
	prefixRow     = 'r'
	prefixApplied = 'a'
	prefixOutbox  = 'o'
	keyHorizon    = "h"
	keyLive       = "l"
	keyRun        = "n"
	keyFormat     = "v"
)

// format is the layout of rows and outbox entries: 2 since they carry the
// run of their revision. An archive of an earlier layout is refused (a
// fresh start of the job resets it: Reset).
const format = "2"

// ErrFormat is returned by Open for an archive of an earlier layout.
var ErrFormat = errors.New("archive: written by an earlier weir without runs; start the job over with --fresh, which resets it")

// ErrBusy is returned by Open while another process has the archive open.
var ErrBusy = errors.New("archive: another process has it open")

// Archive is an open archive. It is not safe for concurrent use.
type Archive struct {
	db     *pebble.DB
	unlock func() error
	batch  *pebble.Batch // the live job's writes since the last Commit
	buf    []byte
}

// OpenWait is Open, trying again every poll while another process has
// the archive open, for up to wait (0: once); then it returns ErrBusy.
func OpenWait(dir string, wait, poll time.Duration) (*Archive, error) {
	var a *Archive
	err := whileBusy(wait, poll, func() (err error) { a, err = Open(dir); return err })
	return a, err
}

// ResetWait is Reset, trying again every poll while another process has
// the archive open, for up to wait; then it returns ErrBusy.
func ResetWait(dir string, wait, poll time.Duration) error {
	return whileBusy(wait, poll, func() error { return Reset(dir) })
}

// whileBusy calls try until it returns anything but ErrBusy, every poll
// for up to wait.
func whileBusy(wait, poll time.Duration, try func() error) error {
	deadline := time.Now().Add(wait)
	for {
		err := try()
		if !errors.Is(err, ErrBusy) || !time.Now().Before(deadline) {
			return err
		}
		time.Sleep(poll)
	}
}

// Open opens (creating) the archive in dir; ErrBusy while another process
// has it open.
func Open(dir string) (*Archive, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	unlock, err := flock.TryLock(filepath.Join(dir, "WEIR-LOCK"))
	if errors.Is(err, flock.ErrBusy) {
		return nil, fmt.Errorf("%w: %s", ErrBusy, dir)
	}
	if err != nil {
		return nil, err
	}
	db, err := pebble.Open(dir, &pebble.Options{Logger: pebblestate.QuietLogger{}, FormatMajorVersion: pebble.FormatNewest})
	if err != nil {
		unlock()
		return nil, fmt.Errorf("archive %s: %w", dir, err)
	}
	a := &Archive{db: db, unlock: unlock}
	v, ok, err := get(db, []byte(keyFormat))
	switch {
	case err != nil:
	case ok && string(v) != format:
		err = fmt.Errorf("%w (%s, format %q)", ErrFormat, dir, v)
	case !ok:
		var empty bool
		if empty, err = a.empty(); err == nil && !empty {
			err = fmt.Errorf("%w (%s)", ErrFormat, dir)
		} else if err == nil {
			err = db.Set([]byte(keyFormat), []byte(format), pebble.Sync)
		}
	}
	if err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// empty says whether the archive holds nothing.
func (a *Archive) empty() (bool, error) {
	it, err := a.db.NewIter(nil)
	if err != nil {
		return false, err
	}
	ok := it.First()
	return !ok, errors.Join(it.Error(), it.Close())
}

// Reset empties the archive in dir, as a job's fresh start does with
// all its outputs (whatever the layout of what is there), keeping files
// whose names begin with a dot (the caller's locks); ErrBusy while
// another process has it open.
func Reset(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	unlock, err := flock.TryLock(filepath.Join(dir, "WEIR-LOCK"))
	switch {
	case errors.Is(err, flock.ErrBusy):
		return fmt.Errorf("%w: %s", ErrBusy, dir)
	case err != nil:
		return err
	}
	defer unlock()
	names, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		if n.Name() == "WEIR-LOCK" || strings.HasPrefix(n.Name(), ".") {
			continue // the locks, the caller's too (a run lock)
		}
		if err := os.RemoveAll(filepath.Join(dir, n.Name())); err != nil {
			return err
		}
	}
	return nil
}

// Close closes the archive, dropping writes not committed.
func (a *Archive) Close() error {
	if a.batch != nil {
		a.batch.Close()
		a.batch = nil
	}
	return errors.Join(a.db.Close(), a.unlock())
}

// ordered maps a time to an unsigned integer of the same order.
func ordered(t etime.Time) uint64 { return uint64(t) ^ 1<<63 }

// windowKey is prefix, end, start, then (for rows and applied ids) the
// key's length and the key: ordered by window end, so that the horizon is
// a range deletion.
func windowKey(dst []byte, prefix byte, key string, start, end etime.Time) []byte {
	dst = append(dst, prefix)
	dst = binary.BigEndian.AppendUint64(dst, ordered(end))
	dst = binary.BigEndian.AppendUint64(dst, ordered(start))
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	return append(dst, key...)
}

// Put records a published revision of a window (buffered until Commit).
// A revision whose (run, pane) is not above the stored one's is ignored,
// as an upsert sink's guard does: a replay after a restore rewrites what
// is there, a live run never lowers a backfilled revision, and a later
// run's revision (kept beside earlier runs) replaces an earlier run's.
func (a *Archive) Put(key string, start, end etime.Time, run, pane int64, value []byte) error {
	if a.batch == nil {
		a.batch = a.db.NewIndexedBatch()
	}
	a.buf = windowKey(a.buf[:0], prefixRow, key, start, end)
	old, ok, err := get(a.batch, a.buf)
	if err != nil {
		return err
	}
	if ok {
		if r, p, _, err := decodeRow(old); err == nil && (r > run || r == run && p >= pane) {
			return nil
		}
	}
	return a.batch.Set(a.buf, encodeRow(run, pane, value), nil)
}

// encodeRow is a row's value: the pane, the run, then the result bytes.
func encodeRow(run, pane int64, value []byte) []byte {
	v := binary.AppendUvarint(make([]byte, 0, len(value)+12), uint64(pane))
	v = binary.AppendUvarint(v, uint64(run))
	return append(v, value...)
}

func decodeRow(v []byte) (run, pane int64, value []byte, err error) {
	p, n := binary.Uvarint(v)
	if n <= 0 || p > math.MaxInt64 {
		return 0, 0, nil, errors.New("corrupt row")
	}
	r, m := binary.Uvarint(v[n:])
	if m <= 0 || r > math.MaxInt64 {
		return 0, 0, nil, errors.New("corrupt row")
	}
	return int64(r), int64(p), v[n+m:], nil
}

// Run is the newest run whose revisions the archive holds (0: none).
func (a *Archive) Run() (int64, error) {
	v, ok, err := get(a.db, []byte(keyRun))
	if err != nil || !ok || len(v) != 8 {
		return 0, err
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

// Commit makes the live job's writes since the last Commit durable, with
// the job's watermark as the archive's live mark (Live) and its run as
// the newest (Run) unless a later one is there, first removing
// the windows (and their applied ids) that ended before the horizon cut:
// watermark - horizon (horizon <= 0: keep every window).
func (a *Archive) Commit(watermark etime.Time, horizon etime.Duration, run int64) error {
	b := a.batch
	if b == nil {
		b = a.db.NewIndexedBatch()
	}
	a.batch = nil
	defer b.Close()
	if err := b.Set([]byte(keyLive), binary.BigEndian.AppendUint64(nil, ordered(watermark)), nil); err != nil {
		return err
	}
	if old, err := a.Run(); err != nil || run > old {
		if err == nil {
			err = b.Set([]byte(keyRun), binary.BigEndian.AppendUint64(nil, uint64(run)), nil)
		}
		if err != nil {
			return err
		}
	}
	if horizon > 0 && watermark > etime.MinTime && watermark < etime.MaxTime {
		cut := watermark.Add(-horizon)
		old, err := a.Horizon()
		if err != nil {
			return err
		}
		if cut > old {
			for _, p := range []byte{prefixRow, prefixApplied} {
				lo := binary.BigEndian.AppendUint64([]byte{p}, ordered(etime.MinTime))
				hi := binary.BigEndian.AppendUint64([]byte{p}, ordered(cut))
				if err := b.DeleteRange(lo, hi, nil); err != nil {
					return err
				}
			}
			if err := b.Set([]byte(keyHorizon), binary.BigEndian.AppendUint64(nil, ordered(cut)), nil); err != nil {
				return err
			}
		}
	}
	return b.Commit(pebble.Sync)
}

// Live is the watermark of the live job's last Commit (etime.MinTime:
// none): every result the job wrote before it reached that watermark is
// in the archive.
func (a *Archive) Live() (etime.Time, error) { return a.readTime(keyLive) }

// Horizon is the window end below which the archive has removed windows
// (etime.MinTime: none removed).
func (a *Archive) Horizon() (etime.Time, error) { return a.readTime(keyHorizon) }

// readTime reads the time stored under key (etime.MinTime: none).
func (a *Archive) readTime(key string) (etime.Time, error) {
	v, ok, err := get(a.db, []byte(key))
	if err != nil || !ok || len(v) != 8 {
		return etime.MinTime, err
	}
	return etime.Time(binary.BigEndian.Uint64(v) ^ 1<<63), nil
}

// Row returns a window's newest revision: its run, pane and result bytes.
func (a *Archive) Row(key string, start, end etime.Time) (run, pane int64, value []byte, ok bool, err error) {
	v, ok, err := get(a.db, windowKey(nil, prefixRow, key, start, end))
	if err != nil || !ok {
		return 0, 0, nil, false, err
	}
	run, pane, value, err = decodeRow(v)
	if err != nil {
		return 0, 0, nil, false, fmt.Errorf("archive: corrupt row of %q [%d,%d)", key, start, end)
	}
	return run, pane, value, true, nil
}

// Applied returns the ledger entry ids applied to a window.
func (a *Archive) Applied(key string, start, end etime.Time) (map[string]bool, error) {
	prefix := windowKey(nil, prefixApplied, key, start, end)
	it, err := a.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: append(prefix[:len(prefix):len(prefix)], 0xff)})
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if len(k) > len(prefix) && string(k[:len(prefix)]) == string(prefix) {
			out[string(k[len(prefix):])] = true
		}
	}
	return out, errors.Join(it.Error(), it.Close())
}

// Revision is a backfill's write of one window: its new revision, the
// entry ids it applied, and the record to publish, RecordKey (a Kafka
// record's key) and Line (in the outbox until Published).
type Revision struct {
	Key        string
	Start, End etime.Time
	Run, Pane  int64
	Value      []byte
	IDs        []string
	RecordKey  []byte
	Line       []byte
}

// Outboxed is a revision committed and not yet published.
type Outboxed struct {
	Seq       uint64
	Run, Pane int64
	RecordKey []byte
	Line      []byte
}

// Apply writes revisions in one durable batch: each window's row, its
// applied ids and its line in the outbox.
func (a *Archive) Apply(revs []Revision) error {
	b := a.db.NewBatch()
	defer b.Close()
	seq, err := a.nextSeq()
	if err != nil {
		return err
	}
	for _, r := range revs {
		if err := b.Set(windowKey(nil, prefixRow, r.Key, r.Start, r.End), encodeRow(r.Run, r.Pane, r.Value), nil); err != nil {
			return err
		}
		prefix := windowKey(nil, prefixApplied, r.Key, r.Start, r.End)
		for _, id := range r.IDs {
			if err := b.Set(append(prefix[:len(prefix):len(prefix)], id...), nil, nil); err != nil {
				return err
			}
		}
		rec := binary.AppendUvarint(nil, uint64(r.Pane))
		rec = binary.AppendUvarint(rec, uint64(r.Run))
		rec = binary.AppendUvarint(rec, uint64(len(r.RecordKey)))
		rec = append(append(rec, r.RecordKey...), r.Line...)
		if err := b.Set(binary.BigEndian.AppendUint64([]byte{prefixOutbox}, seq), rec, nil); err != nil {
			return err
		}
		seq++
	}
	return b.Commit(pebble.Sync)
}

// nextSeq is the sequence number after the outbox's last.
func (a *Archive) nextSeq() (uint64, error) {
	it, err := a.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixOutbox}, UpperBound: []byte{prefixOutbox + 1}})
	if err != nil {
		return 0, err
	}
	var seq uint64
	if it.Last() && len(it.Key()) == 9 {
		seq = binary.BigEndian.Uint64(it.Key()[1:]) + 1
	}
	return seq, errors.Join(it.Error(), it.Close())
}

// Outbox returns the revisions committed and not yet published, in order.
func (a *Archive) Outbox() ([]Outboxed, error) {
	it, err := a.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixOutbox}, UpperBound: []byte{prefixOutbox + 1}})
	if err != nil {
		return nil, err
	}
	var out []Outboxed
	for ok := it.First(); ok; ok = it.Next() {
		if len(it.Key()) != 9 {
			continue
		}
		v := it.Value()
		var fields [3]uint64 // pane, run, key length
		off, ok := 0, true
		for i := range fields {
			x, n := binary.Uvarint(v[off:])
			if n <= 0 {
				ok = false
				break
			}
			fields[i], off = x, off+n
		}
		if !ok || fields[2] > uint64(len(v)-off) {
			it.Close()
			return nil, fmt.Errorf("archive: corrupt outbox entry %d", binary.BigEndian.Uint64(it.Key()[1:]))
		}
		v = append([]byte(nil), v[off:]...)
		n := fields[2]
		out = append(out, Outboxed{Seq: binary.BigEndian.Uint64(it.Key()[1:]), Pane: int64(fields[0]), Run: int64(fields[1]), RecordKey: v[:n], Line: v[n:]})
	}
	return out, errors.Join(it.Error(), it.Close())
}

// Published removes published revisions from the outbox.
func (a *Archive) Published(seqs []uint64) error {
	if len(seqs) == 0 {
		return nil
	}
	b := a.db.NewBatch()
	defer b.Close()
	for _, s := range seqs {
		if err := b.Delete(binary.BigEndian.AppendUint64([]byte{prefixOutbox}, s), nil); err != nil {
			return err
		}
	}
	return b.Commit(pebble.Sync)
}

// get reads key from the database or an indexed batch, copying the value.
func get(r pebble.Reader, key []byte) ([]byte, bool, error) {
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := append([]byte(nil), v...)
	return out, true, closer.Close()
}
