// Package pebblestate is the on-disk state backend: a state.KV on Pebble
// (github.com/cockroachdb/pebble/v2), for keyed state larger than memory.
//
// The database directory is private scratch space of one operator instance.
// Durability comes from checkpoints (KV.Snapshot), never from the database
// itself: the write-ahead log is off and nothing is synced on writes, so a
// crashed instance's directory is garbage and a new instance starts from an
// empty directory and restores its checkpoint.
package pebblestate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"

	"github.com/weirstream/weir/state"
)

// Default sizes.
const (
	DefaultCacheSize    = 128 << 20
	DefaultMemTableSize = 32 << 20
)

// restoreBatchBytes is the size at which Restore commits its batch.
const restoreBatchBytes = 4 << 20

// pointDeleteMax is the largest number of keys DeleteRange removes with
// point deletions; larger ranges get one range tombstone. Operators delete
// small ranges often (the contents of one window of one key), and many small
// range tombstones slow reads down until compactions drop them.
const pointDeleteMax = 32

// Options configure a KV. The zero value gives the defaults.
type Options struct {
	// CacheSize is the block cache size in bytes (default 128 MiB).
	CacheSize int64
	// MemTableSize is the size of one memtable in bytes (default 32 MiB).
	// Up to two memtables (one being flushed) are in memory at a time.
	MemTableSize uint64
	// RemoveOnClose removes the directory when the KV is closed.
	RemoveOnClose bool
	// Logger receives Pebble's messages; by default its informational
	// messages are dropped and errors go to the standard library's log.
	Logger pebble.Logger
	// ExactStats makes Stats exact: Set and Delete then look up the key
	// they replace or remove, which makes random writes several times
	// slower (a lookup costs about as much as a Get). Meant for tests and
	// debugging; see KV.Stats for the default estimate.
	ExactStats bool
}

// KV is a state.KV on Pebble. See Stats for how exact its statistics are.
type KV struct {
	db     *pebble.DB
	dir    string
	opts   Options
	buf    []byte // Get's value buffer
	keys   int64
	bytes  int64
	closed bool
}

var _ state.KV = (*KV)(nil)

// Backends returns a factory of state backends, one per operator
// instance: each a Pebble database in a directory of its own under base
// (removed when the backend closes), behind a cache of cache live
// entries (state.NewKVBackend). A database that cannot be opened panics
// with the cause: a factory is called while a job is built, which
// reports the panic as the build's failure.
func Backends(base string, cache int) func() state.Backend {
	return WrappedBackends(base, cache, nil)
}

// WrappedBackends is Backends with each database seen through wrap (nil:
// as it is), e.g. to count its writes.
func WrappedBackends(base string, cache int, wrap func(state.KV) state.KV) func() state.Backend {
	var n atomic.Int64
	return func() state.Backend {
		dir := filepath.Join(base, fmt.Sprintf("op-%d-%d", os.Getpid(), n.Add(1)))
		kv, err := Open(dir, Options{RemoveOnClose: true})
		if err != nil {
			panic(err)
		}
		if wrap == nil {
			return state.NewKVBackend(kv, cache)
		}
		return state.NewKVBackend(wrap(kv), cache)
	}
}

// Open creates a KV in dir, which must be empty or not exist (it is created).
func Open(dir string, o Options) (*KV, error) {
	if o.CacheSize <= 0 {
		o.CacheSize = DefaultCacheSize
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = DefaultMemTableSize
	}
	if o.Logger == nil {
		o.Logger = QuietLogger{}
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("pebblestate: directory %s is not empty (a state directory is private scratch space; use a fresh one)", dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("pebblestate: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("pebblestate: %w", err)
	}
	po := &pebble.Options{
		CacheSize:          o.CacheSize,
		MemTableSize:       o.MemTableSize,
		DisableWAL:         true,
		ErrorIfExists:      true,
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             o.Logger,
	}
	for i := range po.Levels {
		// Bloom filters make the lookups of absent keys (Set's accounting
		// of new keys, Get of missing state) skip the tables.
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		// Uncompressed blocks: state is read back at random, block by
		// block, and the directory is scratch space.
		po.Levels[i].Compression = func() *sstable.CompressionProfile { return sstable.NoCompression }
	}
	db, err := pebble.Open(dir, po)
	if err != nil {
		if o.RemoveOnClose {
			_ = os.RemoveAll(dir)
		}
		return nil, fmt.Errorf("pebblestate: open %s: %w", dir, err)
	}
	return &KV{db: db, dir: dir, opts: o}, nil
}

// Dir returns the database directory.
func (k *KV) Dir() string { return k.dir }

// Get returns the value of key, valid until the next call on k.
func (k *KV) Get(key []byte) ([]byte, bool, error) {
	if k.closed {
		return nil, false, state.ErrClosed
	}
	v, closer, err := k.db.Get(key)
	if err != nil {
		if errors.Is(err, pebble.ErrNotFound) {
			return nil, false, nil
		}
		return nil, false, err
	}
	k.buf = append(k.buf[:0], v...)
	if err := closer.Close(); err != nil {
		return nil, false, err
	}
	if cap(k.buf) > 1<<20 && len(k.buf) < cap(k.buf)/4 {
		// Do not pin a huge buffer after one large value.
		k.buf = append([]byte(nil), k.buf...)
	}
	return k.buf, true, nil
}

// valueLen returns the length of key's value, or -1 if key is absent.
func (k *KV) valueLen(key []byte) (int, error) {
	v, closer, err := k.db.Get(key)
	if err != nil {
		if errors.Is(err, pebble.ErrNotFound) {
			return -1, nil
		}
		return 0, err
	}
	n := len(v)
	return n, closer.Close()
}

// Set stores value under key.
func (k *KV) Set(key, value []byte) error {
	if k.closed {
		return state.ErrClosed
	}
	if err := state.CheckKey(key); err != nil {
		return err
	}
	old := -1 // unknown without ExactStats: counted as a new key
	if k.opts.ExactStats {
		var err error
		if old, err = k.valueLen(key); err != nil {
			return err
		}
	}
	if err := k.db.Set(key, value, pebble.NoSync); err != nil {
		return err
	}
	if old < 0 {
		k.keys++
		k.bytes += int64(len(key))
	} else {
		k.bytes -= int64(old)
	}
	k.bytes += int64(len(value))
	return nil
}

// Delete removes key.
func (k *KV) Delete(key []byte) error {
	if k.closed {
		return state.ErrClosed
	}
	old := 0 // unknown without ExactStats: counted as present, value empty
	if k.opts.ExactStats {
		var err error
		if old, err = k.valueLen(key); err != nil || old < 0 {
			return err
		}
	}
	if err := k.db.Delete(key, pebble.NoSync); err != nil {
		return err
	}
	k.keys--
	k.bytes -= int64(len(key) + old)
	return nil
}

// DeleteRange deletes the keys in [start, end). It reads the keys first, to
// keep Stats exact and to delete small ranges (up to 32 keys) with point
// deletions rather than a range tombstone.
func (k *KV) DeleteRange(start, end []byte) error {
	if k.closed {
		return state.ErrClosed
	}
	if len(end) > 0 && bytes.Compare(start, end) >= 0 {
		return nil
	}
	if len(start) == 0 {
		start = nil
	}
	// Count what goes, keeping the first keys for point deletion.
	var (
		n, nbytes int64
		points    [][]byte
		last      []byte
	)
	err := k.scan(start, end, func(key, v []byte) bool {
		n++
		nbytes += int64(len(key) + len(v))
		if n <= pointDeleteMax {
			points = append(points, append([]byte(nil), key...))
		}
		if len(end) == 0 {
			last = append(last[:0], key...)
		}
		return true
	})
	if err != nil || n == 0 {
		return err
	}
	if n <= pointDeleteMax {
		b := k.db.NewBatch()
		for _, p := range points {
			if err := b.Delete(p, nil); err != nil {
				_ = b.Close()
				return err
			}
		}
		if err := b.Commit(pebble.NoSync); err != nil {
			_ = b.Close()
			return err
		}
		if err := b.Close(); err != nil {
			return err
		}
	} else {
		if len(end) == 0 {
			// Unbounded: end just past the last key.
			end = append(last, 0)
		}
		if err := k.db.DeleteRange(start, end, pebble.NoSync); err != nil {
			return err
		}
	}
	k.keys -= n
	k.bytes -= nbytes
	return nil
}

// Scan calls fn for the keys in [start, end) in ascending order until fn
// returns false.
func (k *KV) Scan(start, end []byte, fn func(k, v []byte) bool) error {
	if k.closed {
		return state.ErrClosed
	}
	if len(start) > 0 || len(end) > 0 {
		return k.scan(start, end, fn)
	}
	// A scan of everything recounts the stats if it runs to the end.
	var n, nbytes int64
	complete := true
	err := k.scan(nil, nil, func(key, v []byte) bool {
		n++
		nbytes += int64(len(key) + len(v))
		if !fn(key, v) {
			complete = false
			return false
		}
		return true
	})
	if err == nil && complete {
		k.keys, k.bytes = n, nbytes
	}
	return err
}

func (k *KV) scan(start, end []byte, fn func(k, v []byte) bool) (err error) {
	if len(end) > 0 && bytes.Compare(start, end) >= 0 {
		return nil
	}
	// Empty bounds are nil: no bound (Pebble's invariant checks, on in
	// race builds, index the first byte of a non-nil seek key).
	iterOpts := &pebble.IterOptions{}
	if len(start) > 0 {
		iterOpts.LowerBound = start
	}
	if len(end) > 0 {
		iterOpts.UpperBound = end
	}
	it, err := k.db.NewIter(iterOpts)
	if err != nil {
		return err
	}
	// Closed by a defer so that a panic in fn does not leak the iterator
	// (Pebble's Close would then fail).
	defer func() { err = errors.Join(err, it.Close()) }()
	for valid := it.First(); valid; valid = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		if !fn(it.Key(), v) {
			break
		}
	}
	return nil
}

// Snapshot writes the entries of key groups [first, last] to w in the
// state snapshot format.
func (k *KV) Snapshot(first, last state.KeyGroup, w io.Writer) error {
	if k.closed {
		return state.ErrClosed
	}
	start, end := state.KeyGroupBounds(first, last)
	var n, nbytes int64
	err := state.WriteSnapshot(w, func(fn func(k, v []byte) bool) error {
		if first > last {
			return nil
		}
		return k.scan(start, end, func(key, v []byte) bool {
			n++
			nbytes += int64(len(key) + len(v))
			return fn(key, v)
		})
	})
	if err != nil || first > last {
		return err
	}
	// The snapshot has seen every key if there are none outside its
	// range: then its counts are the KV's stats.
	outside := false
	for _, r := range [][2][]byte{{nil, start}, {end, nil}} {
		if r[0] == nil && r[1] == nil {
			continue // end is unbounded: nothing after the range
		}
		if err := k.scan(r[0], r[1], func(_, _ []byte) bool {
			outside = true
			return false
		}); err != nil {
			return err
		}
	}
	if !outside {
		k.keys, k.bytes = n, nbytes
	}
	return nil
}

// Restore adds the entries of key groups [first, last] of the snapshot r.
// It reads the snapshot twice, first to verify it (a damaged snapshot
// changes nothing), then to apply it in batches of about 4 MiB: an
// io.ReadSeeker is read twice in place, any other reader is copied to a
// temporary file in the database directory as it is verified.
func (k *KV) Restore(r io.Reader, first, last state.KeyGroup) error {
	if k.closed {
		return state.ErrClosed
	}
	src, cleanup, err := k.verify(r)
	if err != nil {
		return err
	}
	defer cleanup()
	return k.apply(src, first, last)
}

// verify checks the snapshot r and returns a reader of the same snapshot,
// to be read again.
func (k *KV) verify(r io.Reader) (io.Reader, func(), error) {
	noop := func(_, _ []byte) error { return nil }
	if rs, ok := r.(io.ReadSeeker); ok {
		pos, err := rs.Seek(0, io.SeekCurrent)
		if err == nil {
			if err := state.ReadSnapshot(rs, noop); err != nil {
				return nil, nil, err
			}
			if _, err := rs.Seek(pos, io.SeekStart); err != nil {
				return nil, nil, err
			}
			return rs, func() {}, nil
		}
	}
	f, err := os.CreateTemp(k.dir, "restore-*.snapshot")
	if err != nil {
		return nil, nil, fmt.Errorf("pebblestate: restore: %w", err)
	}
	cleanup := func() {
		_ = f.Close()
		_ = os.Remove(f.Name())
	}
	w := bufio.NewWriterSize(f, 256<<10)
	br, ok := r.(io.ByteReader)
	if !ok {
		// ReadSnapshot would buffer r anyway; buffer it here so that
		// the tee below sees the bytes ReadSnapshot reads.
		b := bufio.NewReaderSize(r, 64<<10)
		r, br = b, b
	}
	if err := state.ReadSnapshot(teeReader{r: r, br: br, w: w}, noop); err != nil {
		cleanup()
		return nil, nil, err
	}
	err = w.Flush()
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("pebblestate: restore: %w", err)
	}
	return bufio.NewReaderSize(f, 256<<10), cleanup, nil
}

// teeReader copies what is read from r to w. It reads exactly what its
// caller asks for (it is an io.ByteReader), so a snapshot read from a
// stream of several is consumed exactly.
type teeReader struct {
	r  io.Reader
	br io.ByteReader
	w  *bufio.Writer
}

func (t teeReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		if _, werr := t.w.Write(p[:n]); werr != nil {
			return n, werr
		}
	}
	return n, err
}

func (t teeReader) ReadByte() (byte, error) {
	c, err := t.br.ReadByte()
	if err != nil {
		return c, err
	}
	return c, t.w.WriteByte(c)
}

// apply adds the entries of a verified snapshot.
func (k *KV) apply(r io.Reader, first, last state.KeyGroup) error {
	// A snapshot's keys are unique, so only keys already in the database
	// can be replaced; into an empty KV (the usual case) nothing is looked
	// up.
	lookup := k.opts.ExactStats && k.keys > 0
	b := k.db.NewBatch()
	var n, nbytes int64
	commit := func() error {
		if b.Empty() {
			return nil
		}
		if err := b.Commit(pebble.NoSync); err != nil {
			return err
		}
		k.keys += n
		k.bytes += nbytes
		n, nbytes = 0, 0
		b.Reset()
		return nil
	}
	err := state.ReadSnapshot(r, func(key, v []byte) error {
		if kg := state.KeyGroupOfKey(key); kg < first || kg > last {
			return nil
		}
		if lookup {
			old, err := k.valueLen(key)
			if err != nil {
				return err
			}
			if old >= 0 {
				n--
				nbytes -= int64(len(key) + old)
			}
		}
		if err := b.Set(key, v, nil); err != nil {
			return err
		}
		n++
		nbytes += int64(len(key) + len(v))
		if b.Len() >= restoreBatchBytes {
			return commit()
		}
		return nil
	})
	if err == nil {
		err = commit()
	}
	return errors.Join(err, b.Close())
}

// Stats returns the number of keys and of key and value bytes.
//
// With Options.ExactStats they are exact. By default they are an estimate
// kept without lookups: Set counts every key as new (an overwrite counts
// twice) and Delete every key as present (with its value's bytes not
// subtracted), Restore counts its entries as new, and DeleteRange is exact.
// The estimate becomes exact again whenever the KV happens to see all its
// keys: a Snapshot whose key-group range holds every key (as a checkpoint
// of the subtask's key groups does), and a Scan of everything that runs to
// the end.
func (k *KV) Stats() state.KVStats {
	if k.closed {
		return state.KVStats{}
	}
	return state.KVStats{Keys: max(k.keys, 0), Bytes: max(k.bytes, 0)}
}

// DiskUsage returns Pebble's estimate of the bytes the database occupies on
// disk (tables, memtables excluded).
func (k *KV) DiskUsage() (uint64, error) {
	if k.closed {
		return 0, state.ErrClosed
	}
	return k.db.Metrics().DiskSpaceUsage(), nil
}

// Close closes the database, and removes its directory when
// Options.RemoveOnClose is set. It is idempotent.
func (k *KV) Close() error {
	if k.closed {
		return nil
	}
	k.closed = true
	err := k.db.Close()
	k.db = nil
	k.buf = nil
	if k.opts.RemoveOnClose {
		err = errors.Join(err, os.RemoveAll(k.dir))
	}
	return err
}

// QuietLogger drops Pebble's informational messages and passes errors on
// (weir's other Pebble stores use it too).
type QuietLogger struct{}

func (QuietLogger) Infof(string, ...any) {}
func (QuietLogger) Errorf(format string, args ...any) {
	pebble.DefaultLogger.Errorf(format, args...)
}
func (QuietLogger) Fatalf(format string, args ...any) {
	pebble.DefaultLogger.Fatalf(format, args...)
}
