package checkpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The manifest format, byte by byte, is in docs/format/checkpoint.md.
const (
	manifestName    = "MANIFEST"
	manifestTmpName = "MANIFEST.tmp"
	manifestMagic   = "WEIRCKPT"
	manifestVersion = 1

	// headerLen is magic, version, id and the meta length.
	headerLen = len(manifestMagic) + 4 + 8 + 4
	// minManifestLen is an empty manifest: header, part count, trailer.
	minManifestLen = headerLen + 4 + 4
	// minEntryLen is a part entry with one-byte name and file name.
	minEntryLen = 2 + 1 + 2 + 1 + 8 + 4

	dirPrefix = "chk-"
	idDigits  = 20
	// partFilePrefix starts every part file's name.
	partFilePrefix = "part-"
	// slugMax bounds the readable part of a part file's name.
	slugMax = 40
)

// MaxPartNameLen is the longest part name, in bytes.
const MaxPartNameLen = 255

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// entry is one part as the manifest records it.
type entry struct {
	name string // the caller's part name
	file string // the file in the checkpoint directory
	size int64
	crc  uint32 // CRC-32C (Castagnoli) of the file's contents
}

// manifest is a decoded MANIFEST.
type manifest struct {
	id      int64
	meta    []byte
	entries []entry // sorted by name, names unique
}

// checkPartName returns why name cannot name a part, or nil.
func checkPartName(name string) error {
	switch {
	case name == "":
		return errors.New("part name is empty")
	case len(name) > MaxPartNameLen:
		return fmt.Errorf("part name %.40q... is %d bytes long, the limit is %d", name, len(name), MaxPartNameLen)
	case strings.IndexByte(name, 0) >= 0:
		return fmt.Errorf("part name %q contains a NUL byte", name)
	case strings.Contains(name, ".."):
		return fmt.Errorf("part name %q contains \"..\"", name)
	case !utf8.ValidString(name):
		return fmt.Errorf("part name %q is not valid UTF-8", name)
	case strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.Contains(name, "//"):
		return fmt.Errorf("part name %q has an empty '/'-separated element", name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("part name %q contains the control character %U", name, r)
		}
	}
	return nil
}

// partFileName is the file of the seq-th part (from 1) written in a
// checkpoint: a sequence number, which makes it unique whatever the name
// and however the file system folds case, and a readable slug of the name.
func partFileName(seq int, name string) string {
	b := make([]byte, 0, len(partFilePrefix)+8+1+slugMax)
	b = append(b, partFilePrefix...)
	s := strconv.Itoa(seq)
	for i := len(s); i < 6; i++ {
		b = append(b, '0')
	}
	b = append(b, s...)
	b = append(b, '-')
	for i := 0; i < len(name) && i < slugMax; i++ {
		c := name[i]
		if ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') || c == '-' || c == '_' || c == '.' {
			b = append(b, c)
		} else {
			b = append(b, '_')
		}
	}
	return string(b)
}

// checkFileName reports whether a manifest's file name is a plain part file
// in the checkpoint directory (a defence against a manifest that passes its
// checksum but was not written by this package).
func checkFileName(f string) error {
	if len(f) <= len(partFilePrefix) || len(f) > 255 || !strings.HasPrefix(f, partFilePrefix) ||
		strings.ContainsAny(f, "/\\\x00") || strings.Contains(f, "..") {
		return fmt.Errorf("bad part file name %q", f)
	}
	return nil
}

// dirName is the directory of checkpoint id.
func dirName(id int64) string {
	return fmt.Sprintf("%s%0*d", dirPrefix, idDigits, id)
}

// parseDirName returns the id of a checkpoint directory name, or false when
// name is not one (exactly "chk-" and 20 digits of a positive id).
func parseDirName(name string) (int64, bool) {
	if len(name) != len(dirPrefix)+idDigits || !strings.HasPrefix(name, dirPrefix) {
		return 0, false
	}
	digits := name[len(dirPrefix):]
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	id, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || id <= 0 {
		return 0, false
	}
	return id, true
}

// encodeManifest returns the MANIFEST bytes. entries must be sorted by name;
// names, file names and meta must fit their length fields (the caller checks).
func encodeManifest(id int64, meta []byte, entries []entry) []byte {
	n := minManifestLen + len(meta)
	for _, e := range entries {
		n += 2 + len(e.name) + 2 + len(e.file) + 8 + 4
	}
	le := binary.LittleEndian
	b := make([]byte, 0, n)
	b = append(b, manifestMagic...)
	b = le.AppendUint32(b, manifestVersion)
	b = le.AppendUint64(b, uint64(id))
	b = le.AppendUint32(b, uint32(len(meta)))
	b = append(b, meta...)
	b = le.AppendUint32(b, uint32(len(entries)))
	for _, e := range entries {
		b = le.AppendUint16(b, uint16(len(e.name)))
		b = append(b, e.name...)
		b = le.AppendUint16(b, uint16(len(e.file)))
		b = append(b, e.file...)
		b = le.AppendUint64(b, uint64(e.size))
		b = le.AppendUint32(b, e.crc)
	}
	return le.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// decodeManifest parses and verifies MANIFEST bytes of the checkpoint in
// directory id. Every error wraps ErrCorrupt.
func decodeManifest(b []byte, id int64) (*manifest, error) {
	bad := func(format string, args ...any) (*manifest, error) {
		return nil, fmt.Errorf("%w: MANIFEST: %s", ErrCorrupt, fmt.Sprintf(format, args...))
	}
	le := binary.LittleEndian
	if len(b) < minManifestLen {
		return bad("%d bytes, shorter than the smallest manifest (%d bytes): truncated", len(b), minManifestLen)
	}
	if string(b[:len(manifestMagic)]) != manifestMagic {
		return bad("bad magic %q", b[:len(manifestMagic)])
	}
	if v := le.Uint32(b[len(manifestMagic):]); v != manifestVersion {
		return bad("unsupported format version %d (this build reads version %d)", v, manifestVersion)
	}
	body, sum := b[:len(b)-4], le.Uint32(b[len(b)-4:])
	if got := crc32.Checksum(body, castagnoli); got != sum {
		return bad("checksum mismatch (computed %08x, stored %08x): truncated or garbled", got, sum)
	}
	// From here on the bytes are what the writer wrote; the checks below
	// guard against a manifest that was never valid.
	r := reader{b: body, off: len(manifestMagic) + 4}
	m := &manifest{id: int64(r.u64())}
	if m.id != id {
		return bad("records checkpoint id %d, but its directory is for %d", m.id, id)
	}
	metaLen := r.u32()
	m.meta = r.bytes(int(metaLen))
	count := r.u32()
	if r.err != nil {
		return bad("%v", r.err)
	}
	if uint64(count) > uint64(len(body)-r.off)/minEntryLen {
		return bad("%d parts cannot fit in %d bytes", count, len(body)-r.off)
	}
	m.entries = make([]entry, 0, count)
	for i := range int(count) {
		var e entry
		e.name = string(r.bytes(int(r.u16())))
		e.file = string(r.bytes(int(r.u16())))
		size := r.u64()
		e.crc = r.u32()
		if r.err != nil {
			return bad("part %d: %v", i, r.err)
		}
		if size > math.MaxInt64 {
			return bad("part %q: size %d out of range", e.name, size)
		}
		e.size = int64(size)
		if err := checkPartName(e.name); err != nil {
			return bad("%v", err)
		}
		if err := checkFileName(e.file); err != nil {
			return bad("part %q: %v", e.name, err)
		}
		if i > 0 && m.entries[i-1].name >= e.name {
			return bad("part names not strictly ascending at %q", e.name)
		}
		m.entries = append(m.entries, e)
	}
	if r.off != len(body) {
		return bad("%d bytes after the last part", len(body)-r.off)
	}
	files := make(map[string]bool, len(m.entries))
	for _, e := range m.entries {
		if files[e.file] {
			return bad("file %q used by two parts", e.file)
		}
		files[e.file] = true
	}
	return m, nil
}

// reader reads little-endian fields; after the first short read every read
// returns zero and err says where the bytes ran out.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.err = fmt.Errorf("needs %d bytes at offset %d, only %d left", n, r.off, len(r.b)-r.off)
		return nil
	}
	s := r.b[r.off : r.off+n]
	r.off += n
	return s
}

func (r *reader) u16() uint16 {
	if s := r.take(2); s != nil {
		return binary.LittleEndian.Uint16(s)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if s := r.take(4); s != nil {
		return binary.LittleEndian.Uint32(s)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if s := r.take(8); s != nil {
		return binary.LittleEndian.Uint64(s)
	}
	return 0
}

// bytes returns a copy of the next n bytes.
func (r *reader) bytes(n int) []byte {
	s := r.take(n)
	if s == nil {
		return nil
	}
	return append([]byte(nil), s...)
}
