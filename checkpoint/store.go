package checkpoint

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Crash points, the names passed to Options.Crash.
const (
	// CrashPartWritten: in WritePart, after the part is durable, before
	// WritePart returns.
	CrashPartWritten = "part-written"
	// CrashBeforeManifest: in Commit, after MANIFEST.tmp is written and
	// fsynced, before it is renamed to MANIFEST. The checkpoint is not
	// complete.
	CrashBeforeManifest = "before-manifest"
	// CrashAfterManifest: in Commit, after the rename and the directory
	// fsync, before pruning. The checkpoint is complete; the store may
	// hold Retain+1 complete checkpoints until the next Commit prunes.
	CrashAfterManifest = "after-manifest"
	// CrashAfterRetain: in Commit, after pruning, just before Commit
	// returns.
	CrashAfterRetain = "after-retain"
)

// DefaultRetain is the number of complete checkpoints kept when
// Options.Retain is zero.
const DefaultRetain = 3

var (
	// ErrCorrupt is wrapped by errors about a checkpoint whose files do
	// not verify: a bad or truncated manifest, a part with the wrong size
	// or CRC.
	ErrCorrupt = errors.New("checkpoint corrupt")
	// ErrClosed is returned by a Dir's methods after Close.
	ErrClosed = errors.New("checkpoint store closed")
)

// Options configure a Dir. The zero value is valid: every field has a
// default.
type Options struct {
	// Retain is the number of complete checkpoints kept; zero means
	// DefaultRetain (3); negative is an error.
	Retain int
	// Meta is stored in the manifest of every checkpoint the Dir commits
	// and comes back in Checkpoint.Meta: what the state depends on (the
	// job runner stores a fingerprint of the spec, and refuses to restore
	// under a spec that differs). Default: none. At most 4 GiB-1 bytes;
	// the Dir does not modify it, and the caller must not either while
	// the Dir is in use.
	Meta []byte
	// Logger receives a line for every checkpoint Latest skips (with the
	// reason), every leftover Open or Begin removes, and every prune
	// failure. Default: discard.
	Logger *slog.Logger
	// Crash, when non-nil, is called at the named points (the Crash*
	// constants) so tests, and an environment variable hook in the
	// caller, can kill the process exactly there. It may be called from
	// several goroutines at once (CrashPartWritten from concurrent
	// WritePart calls). A panic from it unwinds cleanly: no lock stays
	// held and no file stays open.
	Crash func(point string)
}

// Validate reports the first invalid field of o, naming it and what to
// use instead; Open calls it.
func (o Options) Validate() error {
	if o.Retain < 0 {
		return fmt.Errorf("checkpoint: Options.Retain is %d; use a positive number of checkpoints to keep, or 0 for the default %d", o.Retain, DefaultRetain)
	}
	if uint64(len(o.Meta)) > math.MaxUint32 {
		return fmt.Errorf("checkpoint: Options.Meta is %d bytes; the limit is %d", len(o.Meta), uint32(math.MaxUint32))
	}
	return nil
}

// withDefaults returns o with its zero fields set to their defaults.
func (o Options) withDefaults() Options {
	if o.Retain == 0 {
		o.Retain = DefaultRetain
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Dir is a directory of checkpoints, the on-disk Store: give it to
// weir.CheckpointOptions.Store, and restore from what Latest or Resumable
// find. All its methods are safe for concurrent use. Several checkpoints
// may be pending at once (each with its own id); only the one committed
// with the highest id wins, see Begin.
type Dir struct {
	dir    string
	retain int
	meta   []byte // Options.Meta, in every manifest
	log    *slog.Logger
	crash  func(string)
	closed atomic.Bool

	// commitMu serializes the publishing part of Commit and the prune
	// after it, so the newest-id check and the manifest rename are atomic
	// with respect to each other.
	commitMu sync.Mutex
	// fsMu lets Latest, List and ReadPart (readers) exclude pruning (the
	// writer), so a concurrent prune cannot make Latest fall back past a
	// checkpoint it is removing.
	fsMu sync.RWMutex

	mu      sync.Mutex
	newest  int64              // newest complete id not known to be damaged; 0 when none
	pending map[int64]*pending // begun and neither committed nor aborted (nil: Begin in progress)
	damaged map[int64]bool     // ids with a valid manifest whose parts Latest found damaged
}

// Open opens the checkpoint store in dir, creating dir if needed. It
// removes the directories of unfinished checkpoints (those without a
// MANIFEST, left by a crash before a Commit's rename), logging each. It
// never removes a checkpoint that has a MANIFEST, valid or not: corrupted
// ones stay for Latest to report and skip, and for pruning to remove once
// they are older than every retained checkpoint.
func Open(dir string, o Options) (*Dir, error) {
	if dir == "" {
		return nil, errors.New("checkpoint: Open: empty directory name")
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	s := newStore(dir, o)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("checkpoint: Open: %w", err)
	}
	dirs, err := s.scan()
	if err != nil {
		return nil, fmt.Errorf("checkpoint: Open: %w", err)
	}
	for _, d := range dirs {
		switch {
		case d.incomplete:
			s.log.Info("checkpoint: removing unfinished checkpoint", "id", d.id, "dir", d.path)
			if err := removeCheckpointDir(d.path); err != nil {
				return nil, fmt.Errorf("checkpoint: Open: removing unfinished checkpoint %d: %w", d.id, err)
			}
		case d.err == nil:
			s.newest = max(s.newest, d.id)
		}
	}
	return s, nil
}

// OpenReadOnly opens the store in dir to read it beside the process that
// writes it (a backfill reads the live job's newest checkpoint): it
// creates and removes nothing. Begin must not be called on it.
func OpenReadOnly(dir string) (*Dir, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return newStore(dir, Options{}), nil
}

// newStore returns a Dir on dir with the defaults of o filled in,
// without touching the file system.
func newStore(dir string, o Options) *Dir {
	o = o.withDefaults()
	return &Dir{
		dir:     dir,
		retain:  o.Retain,
		meta:    o.Meta,
		log:     o.Logger,
		crash:   o.Crash,
		pending: make(map[int64]*pending),
		damaged: make(map[int64]bool),
	}
}

// Path returns the Dir's directory.
func (s *Dir) Path() string { return s.dir }

// Begin starts checkpoint id. Ids are positive and strictly increase:
// Begin refuses an id not greater than the newest complete checkpoint, and
// an id that is already pending. Checkpoints that Latest skipped as
// damaged do not count as complete here, so after restoring checkpoint K
// from Latest the caller can continue with K+1: a leftover directory with
// the same id that holds no valid manifest (unfinished or garbled), or
// whose parts Latest found damaged, is removed first, with a log line.
//
// The Pending returned keeps the Pending contract and more:
//
//   - WritePart writes the part to its own file and fsyncs it before it
//     returns. Names are unique within a checkpoint and may contain '/';
//     a name must be non-empty valid UTF-8 of at most MaxPartNameLen
//     bytes, without NUL or other control characters, without "..", and
//     without an empty '/'-separated element. It is safe for concurrent
//     use, and fails after Commit or Abort has started; a part whose
//     WritePart failed is not in the checkpoint, and the name may be
//     written again.
//   - Commit fsyncs the checkpoint's directory and the Dir's, writes the
//     manifest (Options.Meta, each part's name, file, size and CRC-32C,
//     and the manifest's own CRC-32C) to MANIFEST.tmp and fsyncs it,
//     renames it to MANIFEST (the commit point) and fsyncs the directory,
//     then prunes the checkpoints older than the newest Retain complete
//     ones (pruning failures are logged, not returned). It fails, leaving
//     the checkpoint incomplete, while a WritePart is in flight, when
//     called twice or after Abort, when a checkpoint with a greater or
//     equal id completed since Begin, or on an I/O error. Commits of
//     different checkpoints are serialized.
//   - Abort stops further WriteParts, waits for those in flight, and
//     removes the checkpoint's directory. It is idempotent and works
//     after a failed Commit and after Close; it fails after a successful
//     Commit (the checkpoint stays) and while a Commit is in progress.
func (s *Dir) Begin(id int64) (Pending, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if id <= 0 {
		return nil, fmt.Errorf("checkpoint: Begin(%d): ids must be positive", id)
	}
	s.mu.Lock()
	if id <= s.newest {
		newest := s.newest
		s.mu.Unlock()
		return nil, fmt.Errorf("checkpoint: Begin(%d): id is not greater than the newest complete checkpoint %d", id, newest)
	}
	if _, ok := s.pending[id]; ok {
		s.mu.Unlock()
		return nil, fmt.Errorf("checkpoint: Begin(%d): checkpoint %d is already pending", id, id)
	}
	s.pending[id] = nil // reserve the id while the directory is made
	s.mu.Unlock()

	p, err := s.begin(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		delete(s.pending, id)
		return nil, err
	}
	s.pending[id] = p
	return p, nil
}

func (s *Dir) begin(id int64) (*pending, error) {
	path := filepath.Join(s.dir, dirName(id))
	err := os.Mkdir(path, 0o755)
	if errors.Is(err, fs.ErrExist) {
		// Not complete as far as this Dir knows (id > newest), so it is
		// a leftover: refuse only if its manifest is valid and Latest has
		// not found its parts damaged.
		var reason string
		_, merr := readManifest(path, id)
		switch {
		case merr == nil && s.isDamaged(id):
			reason = "its parts failed verification"
		case merr == nil:
			return nil, fmt.Errorf("checkpoint: Begin(%d): a complete checkpoint %d already exists in %s", id, id, path)
		case errors.Is(merr, ErrCorrupt) || errors.Is(merr, fs.ErrNotExist):
			reason = describe(merr)
		default:
			return nil, fmt.Errorf("checkpoint: Begin(%d): %w", id, merr)
		}
		s.log.Warn("checkpoint: removing leftover directory of the same id", "id", id, "dir", path, "reason", reason)
		if err := removeCheckpointDir(path); err != nil {
			return nil, fmt.Errorf("checkpoint: Begin(%d): removing leftover %s: %w", id, path, err)
		}
		s.mu.Lock()
		delete(s.damaged, id)
		s.mu.Unlock()
		err = os.Mkdir(path, 0o755)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: Begin(%d): %w", id, err)
	}
	return &pending{s: s, id: id, dir: path, parts: make(map[string]*entry)}, nil
}

// Checkpoint is a complete checkpoint returned by Latest.
type Checkpoint struct {
	ID    int64
	Meta  []byte
	Parts []string // part names, sorted

	entries []entry // the manifest's entries, sorted by name
}

// Latest returns the newest complete checkpoint whose manifest and parts
// all verify (every part is read and its size and CRC-32C checked). It
// skips, logging the id and the reason at level Warn, checkpoints without
// a manifest, with a corrupted manifest, or with a missing, truncated or
// corrupted part, and tries the next older one; ok is false when none
// verifies. Other I/O errors (a permission problem, a failing disk) are
// returned rather than skipped, so that a job never silently restarts
// from an older checkpoint or from scratch because of them. Checkpoints
// pending in this Dir are not considered. The Dir remembers the
// checkpoints whose parts it found damaged: they no longer count for
// Begin's id check nor for retention (see Begin).
func (s *Dir) Latest() (cp *Checkpoint, ok bool, err error) {
	cp, _, err = s.Resumable(math.MaxInt64)
	return cp, cp != nil, err
}

// Skipped is a checkpoint that Latest or Resumable passed over, and why.
type Skipped struct {
	ID     int64
	Reason string // such as `part "window/0": CRC-32C mismatch in file ...`
}

// Resumable is Latest among the checkpoints with an id <= limit (a job
// whose sink commits after the checkpoint, a Kafka transaction, restores
// the newest checkpoint whose output the sink committed), and it returns
// every checkpoint it skipped on the way, newest first, with the reason:
// cp is nil when none verifies, and then skipped says whether there were
// any to verify.
func (s *Dir) Resumable(limit int64) (cp *Checkpoint, skipped []Skipped, err error) {
	if s.closed.Load() {
		return nil, nil, ErrClosed
	}
	s.fsMu.RLock()
	defer s.fsMu.RUnlock()
	dirs, err := s.scan()
	if err != nil {
		return nil, nil, fmt.Errorf("checkpoint: Latest: %w", err)
	}
	var damaged []int64
	defer func() { s.markDamaged(damaged, dirs) }()
	for i := len(dirs) - 1; i >= 0; i-- {
		d := dirs[i]
		if s.isPending(d.id) || d.id > limit {
			continue
		}
		err := d.err
		if d.incomplete {
			err = errors.New("no MANIFEST: the checkpoint was never completed")
		}
		if err == nil {
			err = verifyParts(d.path, d.m)
			if err == nil {
				return newCheckpoint(d.m), skipped, nil
			}
			if errors.Is(err, ErrCorrupt) {
				damaged = append(damaged, d.id)
			}
		}
		if !d.incomplete && !errors.Is(err, ErrCorrupt) {
			return nil, nil, fmt.Errorf("checkpoint: Latest: checkpoint %d: %w", d.id, err)
		}
		s.log.Warn("checkpoint: skipping checkpoint", "id", d.id, "dir", d.path, "reason", describe(err))
		skipped = append(skipped, Skipped{ID: d.id, Reason: describe(err)})
	}
	return nil, skipped, nil
}

// markDamaged records the ids (with valid manifests) whose parts Latest
// found damaged, and lowers newest below them to the newest complete id of
// dirs that is not damaged. A checkpoint committed meanwhile is newer than
// every id in dirs and is kept as newest.
func (s *Dir) markDamaged(ids []int64, dirs []dirInfo) {
	if len(ids) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		s.damaged[id] = true
	}
	if !s.damaged[s.newest] {
		return
	}
	s.newest = 0
	for _, d := range dirs {
		if !d.incomplete && d.err == nil && !s.damaged[d.id] {
			s.newest = max(s.newest, d.id)
		}
	}
}

func (s *Dir) isDamaged(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.damaged[id]
}

// ReadPart returns the named part of cp, verifying its size and CRC-32C
// again (errors about a mismatch wrap ErrCorrupt; an unknown name wraps
// fs.ErrNotExist). cp is normally from Latest; a Checkpoint built by the
// caller with only ID set is read through its manifest. Reading a
// checkpoint that has been pruned meanwhile fails.
func (s *Dir) ReadPart(cp *Checkpoint, name string) ([]byte, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if cp == nil {
		return nil, errors.New("checkpoint: ReadPart: nil checkpoint")
	}
	s.fsMu.RLock()
	defer s.fsMu.RUnlock()
	path := filepath.Join(s.dir, dirName(cp.ID))
	entries := cp.entries
	if entries == nil {
		m, err := readManifest(path, cp.ID)
		if err != nil {
			return nil, fmt.Errorf("checkpoint %d: %w", cp.ID, err)
		}
		entries = m.entries
	}
	i, found := slices.BinarySearchFunc(entries, name, func(e entry, n string) int { return strings.Compare(e.name, n) })
	if !found {
		return nil, fmt.Errorf("checkpoint %d: no part %q: %w", cp.ID, name, fs.ErrNotExist)
	}
	e := entries[i]
	f, err := os.Open(filepath.Join(path, e.file))
	if err != nil {
		return nil, fmt.Errorf("checkpoint %d: part %q: %w", cp.ID, name, err)
	}
	defer f.Close()
	if err := checkSize(f, e); err != nil {
		return nil, fmt.Errorf("checkpoint %d: %w", cp.ID, err)
	}
	b := make([]byte, e.size)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, fmt.Errorf("checkpoint %d: part %q: %w", cp.ID, name, err)
	}
	if got := crc32.Checksum(b, castagnoli); got != e.crc {
		return nil, fmt.Errorf("checkpoint %d: %w", cp.ID, crcError(e, got))
	}
	return b, nil
}

// View reads every part of cp (from Latest or Resumable), verifying each
// as ReadPart does, and returns a View of them held in memory: what a job restoring from cp is
// given (weir.CheckpointOptions.Restore, with NextID cp.ID+1). The View
// is safe for concurrent use and does not touch the Dir again.
func (s *Dir) View(cp *Checkpoint) (View, error) {
	if cp == nil {
		return nil, errors.New("checkpoint: View: nil checkpoint")
	}
	v := make(PartsView, len(cp.Parts))
	for _, name := range cp.Parts {
		b, err := s.ReadPart(cp, name)
		if err != nil {
			return nil, err
		}
		v[name] = b
	}
	return v, nil
}

// List returns the ids of the complete checkpoints, ascending: those with
// a valid manifest (their parts are not read), except the ones an earlier
// Latest of this Dir found damaged. Checkpoints pending in this Dir
// are not listed.
func (s *Dir) List() ([]int64, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	s.fsMu.RLock()
	defer s.fsMu.RUnlock()
	dirs, err := s.scan()
	if err != nil {
		return nil, fmt.Errorf("checkpoint: List: %w", err)
	}
	var ids []int64
	for _, d := range dirs {
		if !d.incomplete && d.err == nil && !s.isPending(d.id) && !s.isDamaged(d.id) {
			ids = append(ids, d.id)
		}
	}
	return ids, nil
}

// Close marks the store closed: later calls of Begin, Latest, ReadPart,
// List, and WritePart and Commit of its pending checkpoints, return
// ErrClosed; Abort still works. Close does not wait for calls in progress,
// and leaves pending checkpoints' files for the next Open to remove (Abort
// them first to remove them now). The Dir holds no open file between
// calls, so Close releases nothing else. Close is idempotent.
func (s *Dir) Close() error {
	s.closed.Store(true)
	return nil
}

func (s *Dir) isPending(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.pending[id]
	return ok
}

func (s *Dir) crashPoint(point string) {
	if s.crash != nil {
		s.crash(point)
	}
}

// prune removes every checkpoint directory older than the oldest of the
// newest Retain complete checkpoints (not counting those Latest found
// damaged): complete ones beyond retention, and damaged, corrupted or
// unfinished leftovers among them. Pending checkpoints are left to their
// owners. Failures are logged, not returned: the checkpoint
// just committed is complete either way, and the next prune retries.
func (s *Dir) prune() {
	s.fsMu.Lock()
	defer s.fsMu.Unlock()
	dirs, err := s.scan()
	if err != nil {
		s.log.Warn("checkpoint: pruning skipped", "reason", err.Error())
		return
	}
	var complete []int64
	for _, d := range dirs {
		if !d.incomplete && d.err == nil && !s.isDamaged(d.id) {
			complete = append(complete, d.id)
		}
	}
	if len(complete) <= s.retain {
		return
	}
	cutoff := complete[len(complete)-s.retain]
	for _, d := range dirs {
		if d.id >= cutoff || s.isPending(d.id) {
			continue
		}
		if err := removeCheckpointDir(d.path); err != nil {
			s.log.Warn("checkpoint: pruning failed", "id", d.id, "dir", d.path, "reason", err.Error())
			continue
		}
		s.mu.Lock()
		delete(s.damaged, d.id)
		s.mu.Unlock()
	}
}

// dirInfo is one checkpoint directory found by scan.
type dirInfo struct {
	id         int64
	path       string
	incomplete bool      // no MANIFEST
	m          *manifest // when the manifest is valid
	err        error     // why the manifest is not valid (wraps ErrCorrupt)
}

// scan returns the checkpoint directories of s.dir, ascending by id, with
// their manifests read and verified (parts are not read). Entries that are
// not checkpoint directories are ignored. An I/O error other than a
// missing MANIFEST is returned.
func (s *Dir) scan() ([]dirInfo, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, err
	}
	var dirs []dirInfo
	for _, de := range ents { // os.ReadDir sorts by name, so by id
		id, ok := parseDirName(de.Name())
		if !ok || !de.IsDir() {
			continue
		}
		d := dirInfo{id: id, path: filepath.Join(s.dir, de.Name())}
		d.m, err = readManifest(d.path, id)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			d.incomplete = true
		case errors.Is(err, ErrCorrupt):
			d.err = err
		case err != nil:
			return nil, fmt.Errorf("checkpoint %d: %w", id, err)
		}
		dirs = append(dirs, d)
	}
	return dirs, nil
}

// readManifest reads and verifies the manifest of the checkpoint in path.
// A missing MANIFEST is an error wrapping fs.ErrNotExist; a bad one wraps
// ErrCorrupt.
func readManifest(path string, id int64) (*manifest, error) {
	b, err := os.ReadFile(filepath.Join(path, manifestName))
	if err != nil {
		return nil, err
	}
	return decodeManifest(b, id)
}

// verifyParts reads every part of m in path and checks its size and
// CRC-32C. A mismatch wraps ErrCorrupt, a missing file fs.ErrNotExist.
func verifyParts(path string, m *manifest) error {
	for _, e := range m.entries {
		if err := verifyPart(filepath.Join(path, e.file), e); err != nil {
			return err
		}
	}
	return nil
}

func verifyPart(file string, e entry) error {
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("part %q: file %s is missing: %w", e.name, filepath.Base(file), ErrCorrupt)
	}
	if err != nil {
		return fmt.Errorf("part %q: %w", e.name, err)
	}
	defer f.Close()
	if err := checkSize(f, e); err != nil {
		return err
	}
	h := crc32.New(castagnoli)
	n, err := io.Copy(h, f)
	if err != nil {
		return fmt.Errorf("part %q: %w", e.name, err)
	}
	if n != e.size {
		return fmt.Errorf("%w: part %q: read %d bytes, manifest says %d", ErrCorrupt, e.name, n, e.size)
	}
	if got := h.Sum32(); got != e.crc {
		return crcError(e, got)
	}
	return nil
}

func checkSize(f *os.File, e entry) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("part %q: %w", e.name, err)
	}
	if fi.Size() != e.size {
		return fmt.Errorf("%w: part %q: file %s is %d bytes, manifest says %d (truncated or overwritten)",
			ErrCorrupt, e.name, e.file, fi.Size(), e.size)
	}
	return nil
}

func crcError(e entry, got uint32) error {
	return fmt.Errorf("%w: part %q: CRC-32C mismatch in file %s (computed %08x, manifest says %08x)",
		ErrCorrupt, e.name, e.file, got, e.crc)
}

// describe is the reason logged for a skipped checkpoint: err without the
// generic ErrCorrupt prefix.
func describe(err error) string {
	return strings.TrimPrefix(err.Error(), ErrCorrupt.Error()+": ")
}

func newCheckpoint(m *manifest) *Checkpoint {
	cp := &Checkpoint{ID: m.id, Meta: m.meta, Parts: make([]string, len(m.entries)), entries: m.entries}
	for i, e := range m.entries {
		cp.Parts[i] = e.name
	}
	return cp
}

// removeCheckpointDir removes a checkpoint directory, its MANIFEST first,
// so that a crash halfway leaves an unfinished checkpoint (removed by the
// next Open without a warning) rather than one whose parts are missing.
func removeCheckpointDir(path string) error {
	if err := os.Remove(filepath.Join(path, manifestName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.RemoveAll(path)
}

// writeFileSync creates (with extra flags, e.g. os.O_EXCL) and writes file,
// and fsyncs it. On error the file is removed.
func writeFileSync(file string, data []byte, flag int) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|flag, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(file)
	}
	return err
}

// syncDir fsyncs a directory, making the entries created or renamed in it
// durable. Windows does not support fsync of a directory, so it is a no-op
// there.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// RemoveAll removes every checkpoint of the store (a fresh start): the
// next Begin may use any positive id. It must not run while a checkpoint
// is pending.
func (s *Dir) RemoveAll() error {
	if s.closed.Load() {
		return ErrClosed
	}
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	s.fsMu.Lock()
	defer s.fsMu.Unlock()
	s.mu.Lock()
	pending := len(s.pending)
	s.mu.Unlock()
	if pending > 0 {
		return errors.New("checkpoint: RemoveAll while a checkpoint is pending")
	}
	dirs, err := s.scan()
	if err != nil {
		return fmt.Errorf("checkpoint: RemoveAll: %w", err)
	}
	for _, d := range dirs {
		if err := os.RemoveAll(d.path); err != nil {
			return fmt.Errorf("checkpoint: RemoveAll: %w", err)
		}
	}
	if err := syncDir(s.dir); err != nil {
		return fmt.Errorf("checkpoint: RemoveAll: %w", err)
	}
	s.mu.Lock()
	s.newest = 0
	clear(s.damaged)
	s.mu.Unlock()
	return nil
}
