package state

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
)

// KV is the ordered byte-level state store of one operator instance. Every
// key starts with its key group as 2 bytes big-endian (build keys with
// AppendKeyGroup), so that state can be snapshotted and restored by key-group
// range. Keys are ordered by bytes.Compare. Not safe for concurrent use (one
// operator instance owns it).
//
// Range bounds: Scan and DeleteRange take [start, end); an empty end (nil or
// zero length) means no upper bound, and an empty start means from the first
// key.
//
// Implementations: memstate.NewKV (in memory) and pebblestate.Open (on disk);
// statetest.Run is the conformance suite both pass.
type KV interface {
	// Get returns the value of key; the slice is valid only until the next
	// call on the KV and must not be modified.
	Get(key []byte) (value []byte, ok bool, err error)
	// Set stores value under key; the KV copies key and value. A key shorter
	// than KeyGroupLen bytes is an error (ErrShortKey).
	Set(key, value []byte) error
	// Delete removes key; deleting an absent key is not an error.
	Delete(key []byte) error
	// DeleteRange deletes keys in [start, end).
	DeleteRange(start, end []byte) error
	// Scan calls fn for each key in [start, end) in ascending byte order
	// until fn returns false; k and v are valid only during the call and
	// must not be modified; fn must not modify the KV.
	Scan(start, end []byte, fn func(k, v []byte) bool) error
	// Snapshot writes every entry of key groups [first, last] to w, in key
	// order, in the snapshot format (see WriteSnapshot): the same logical
	// content gives the same bytes on every backend.
	Snapshot(first, last KeyGroup, w io.Writer) error
	// Restore reads a snapshot (possibly written by another backend,
	// possibly covering more key groups) and adds the entries whose key
	// group is in [first, last], replacing existing keys. A truncated or
	// corrupted snapshot is an error wrapping ErrBadSnapshot and changes
	// nothing: backends verify the whole snapshot before applying any of
	// it. (An I/O error while applying a verified snapshot may leave part
	// of it applied; the KV stays usable and its Stats consistent.)
	Restore(r io.Reader, first, last KeyGroup) error
	// Stats reports the number of live keys and the bytes of their keys and
	// values; backends document whether they are exact or estimates.
	Stats() KVStats
	// Close releases the KV; calls after Close return ErrClosed. Close is
	// idempotent.
	Close() error
}

// KVStats is the size of a KV.
type KVStats struct {
	// Keys is the number of live keys.
	Keys int64
	// Bytes is the total length of live keys and values.
	Bytes int64
}

// KeyGroupLen is the length of the key-group prefix of every KV key.
const KeyGroupLen = 2

var (
	// ErrClosed is returned by calls on a closed KV.
	ErrClosed = errors.New("weir: state KV is closed")
	// ErrShortKey is returned by Set for a key without a key-group prefix.
	ErrShortKey = errors.New("weir: state KV key is shorter than its 2-byte key-group prefix")
	// ErrBadSnapshot is wrapped by the errors of ReadSnapshot (and so of
	// KV.Restore) for a snapshot that is not well-formed: bad header,
	// truncation, corruption, checksum mismatch.
	ErrBadSnapshot = errors.New("weir: bad state snapshot")
)

// AppendKeyGroup appends the 2-byte big-endian key-group prefix to dst.
func AppendKeyGroup(dst []byte, kg KeyGroup) []byte {
	return append(dst, byte(kg>>8), byte(kg))
}

// KeyGroupOfKey returns the key group of a KV key (its first two bytes). It
// panics if key is shorter than KeyGroupLen.
func KeyGroupOfKey(key []byte) KeyGroup {
	return KeyGroup(binary.BigEndian.Uint16(key))
}

// CheckKey returns ErrShortKey when key has no key-group prefix.
func CheckKey(key []byte) error {
	if len(key) < KeyGroupLen {
		return ErrShortKey
	}
	return nil
}

// KeyGroupBounds returns the key range [start, end) holding exactly the keys
// of key groups [first, last]. end is nil (no upper bound) when last is the
// largest key group.
func KeyGroupBounds(first, last KeyGroup) (start, end []byte) {
	start = AppendKeyGroup(make([]byte, 0, KeyGroupLen), first)
	if last != ^KeyGroup(0) {
		end = AppendKeyGroup(make([]byte, 0, KeyGroupLen), last+1)
	}
	return start, end
}

// The snapshot format, shared by every KV backend (version 1):
//
//	header:  "WKVS" (4 bytes) | version (uint16 big-endian, 1)
//	entries: uvarint len(key) | key | uvarint len(value) | value
//	         keys strictly ascending (bytes.Compare), each at least
//	         KeyGroupLen bytes long
//	end:     0x00 (a zero key length, which no entry has)
//	         | entry count (uint64 big-endian)
//	         | CRC-32C (Castagnoli) of every byte before it (uint32 big-endian)
//
// The content fully determines the bytes: equal content gives equal
// snapshots whichever backend wrote them. A reader detects truncation (a
// missing end marker), corruption (the CRC, the count, unordered or short
// keys) and foreign data (the magic and version).
const (
	snapshotMagic   = "WKVS"
	snapshotVersion = 1
	snapshotHeader  = len(snapshotMagic) + 2
	// snapshotChunk bounds the buffer growth per read, so a corrupted length
	// cannot make the reader allocate much more than the input holds.
	snapshotChunk = 1 << 20
	// maxSnapshotField bounds one key or value (a sanity limit).
	maxSnapshotField = 1 << 32
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WriteSnapshot writes a snapshot of the entries iterate yields to w.
// iterate calls fn for each entry in strictly ascending key order until fn
// returns false, and returns the iteration's error; k and v need only be
// valid during the call. WriteSnapshot fails (without writing the end
// marker) if the keys are not strictly ascending or a key is shorter than
// KeyGroupLen.
func WriteSnapshot(w io.Writer, iterate func(fn func(k, v []byte) bool) error) error {
	crc := crc32.New(castagnoli)
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 64<<10)
	var hdr [snapshotHeader]byte
	copy(hdr[:], snapshotMagic)
	binary.BigEndian.PutUint16(hdr[len(snapshotMagic):], snapshotVersion)
	if _, err := bw.Write(hdr[:]); err != nil {
		return err
	}
	var (
		count   uint64
		prev    []byte
		werr    error
		scratch [binary.MaxVarintLen64]byte
	)
	err := iterate(func(k, v []byte) bool {
		if len(k) < KeyGroupLen {
			werr = ErrShortKey
			return false
		}
		if count > 0 && bytes.Compare(prev, k) >= 0 {
			werr = fmt.Errorf("weir: snapshot keys out of order: %x after %x", k, prev)
			return false
		}
		prev = append(prev[:0], k...)
		n := binary.PutUvarint(scratch[:], uint64(len(k)))
		if _, werr = bw.Write(scratch[:n]); werr != nil {
			return false
		}
		if _, werr = bw.Write(k); werr != nil {
			return false
		}
		n = binary.PutUvarint(scratch[:], uint64(len(v)))
		if _, werr = bw.Write(scratch[:n]); werr != nil {
			return false
		}
		if _, werr = bw.Write(v); werr != nil {
			return false
		}
		count++
		return true
	})
	if err != nil {
		return err
	}
	if werr != nil {
		return werr
	}
	var end [1 + 8]byte
	binary.BigEndian.PutUint64(end[1:], count)
	if _, err := bw.Write(end[:]); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], crc.Sum32())
	_, err = w.Write(sum[:])
	return err
}

// ReadSnapshot reads a snapshot from r and calls fn for each entry in key
// order; k and v are valid only during the call. It stops at the first error
// of fn and returns it. Errors about the snapshot itself wrap ErrBadSnapshot;
// since the checksum covers the whole snapshot, it is verified only at the
// end, after fn has seen every entry.
//
// If r is an io.ByteReader (such as a *bufio.Reader) ReadSnapshot reads
// exactly the snapshot's bytes, so snapshots can be concatenated in one
// stream; otherwise it may read past the snapshot's end.
func ReadSnapshot(r io.Reader, fn func(k, v []byte) error) error {
	br, ok := r.(snapshotByteReader)
	if !ok {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	sr := &snapshotReader{r: br}
	var hdr [snapshotHeader]byte
	if err := sr.full(hdr[:]); err != nil {
		return sr.bad("header", err)
	}
	if string(hdr[:len(snapshotMagic)]) != snapshotMagic {
		return fmt.Errorf("%w: not a state snapshot (magic %q)", ErrBadSnapshot, hdr[:len(snapshotMagic)])
	}
	if v := binary.BigEndian.Uint16(hdr[len(snapshotMagic):]); v != snapshotVersion {
		return fmt.Errorf("%w: unsupported version %d (want %d)", ErrBadSnapshot, v, snapshotVersion)
	}
	var (
		count      uint64
		key, value []byte
		prev       []byte
	)
	for {
		kl, err := sr.uvarint()
		if err != nil {
			return sr.bad(fmt.Sprintf("key length of entry %d", count), err)
		}
		if kl == 0 {
			break
		}
		if kl < KeyGroupLen || kl > maxSnapshotField {
			return fmt.Errorf("%w: entry %d has key length %d", ErrBadSnapshot, count, kl)
		}
		if key, err = sr.field(key, int(kl)); err != nil {
			return sr.bad(fmt.Sprintf("key of entry %d", count), err)
		}
		vl, err := sr.uvarint()
		if err != nil {
			return sr.bad(fmt.Sprintf("value length of entry %d", count), err)
		}
		if vl > maxSnapshotField {
			return fmt.Errorf("%w: entry %d has value length %d", ErrBadSnapshot, count, vl)
		}
		if value, err = sr.field(value, int(vl)); err != nil {
			return sr.bad(fmt.Sprintf("value of entry %d", count), err)
		}
		if count > 0 && bytes.Compare(prev, key) >= 0 {
			return fmt.Errorf("%w: entry %d: key %x is not after %x", ErrBadSnapshot, count, key, prev)
		}
		if err := fn(key, value); err != nil {
			return err
		}
		// Swap instead of copying: the next key is read into the old
		// previous key's buffer.
		prev, key = key, prev
		count++
	}
	var cnt [8]byte
	if err := sr.full(cnt[:]); err != nil {
		return sr.bad("end marker", err)
	}
	want := sr.crc
	var sum [4]byte
	if _, err := io.ReadFull(sr.r, sum[:]); err != nil {
		return sr.bad("checksum", err)
	}
	if got := binary.BigEndian.Uint32(sum[:]); got != want {
		return fmt.Errorf("%w: checksum mismatch (stored %08x, computed %08x)", ErrBadSnapshot, got, want)
	}
	if n := binary.BigEndian.Uint64(cnt[:]); n != count {
		return fmt.Errorf("%w: end marker says %d entries, read %d", ErrBadSnapshot, n, count)
	}
	return nil
}

type snapshotByteReader interface {
	io.Reader
	io.ByteReader
}

type snapshotReader struct {
	r   snapshotByteReader
	crc uint32
	b   [1]byte
}

func (s *snapshotReader) bad(what string, err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("%w: truncated in the %s", ErrBadSnapshot, what)
	}
	return fmt.Errorf("%w: reading the %s: %w", ErrBadSnapshot, what, err)
}

func (s *snapshotReader) full(p []byte) error {
	if _, err := io.ReadFull(s.r, p); err != nil {
		return err
	}
	s.crc = crc32.Update(s.crc, castagnoli, p)
	return nil
}

func (s *snapshotReader) ReadByte() (byte, error) {
	c, err := s.r.ReadByte()
	if err != nil {
		return 0, err
	}
	s.b[0] = c
	s.crc = crc32.Update(s.crc, castagnoli, s.b[:])
	return c, nil
}

func (s *snapshotReader) uvarint() (uint64, error) {
	v, err := binary.ReadUvarint(s)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return v, err
}

// field reads n bytes into buf (reused), growing it at most snapshotChunk at
// a time so that a corrupted length fails on the data, not on allocation.
func (s *snapshotReader) field(buf []byte, n int) ([]byte, error) {
	buf = buf[:0]
	for len(buf) < n {
		step := min(n-len(buf), snapshotChunk)
		buf = slices.Grow(buf, step)
		chunk := buf[len(buf) : len(buf)+step]
		if err := s.full(chunk); err != nil {
			return buf, err
		}
		buf = buf[:len(buf)+step]
	}
	return buf, nil
}
