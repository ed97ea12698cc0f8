package checkpoint

import (
	"cmp"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// pendingState is where a Pending is in its life.
type pendingState int

const (
	stateOpen       pendingState = iota // accepting parts
	stateCommitting                     // Commit in progress
	stateCommitted                      // Commit returned nil
	stateFailed                         // Commit returned an error; Abort is the way out
	stateAborted                        // Abort called
)

func (st pendingState) String() string {
	return [...]string{"open", "committing", "committed", "failed", "aborted"}[st]
}

// pending is a checkpoint being written, the Pending Dir.Begin returns.
//
// WritePart is safe for concurrent use by many goroutines. Commit and Abort
// are safe to call concurrently with each other and with WritePart, but
// the caller is expected to call Commit only after every WritePart of the
// checkpoint has returned successfully: Commit fails if a WritePart is
// still in flight, and only parts whose WritePart returned nil are in the
// checkpoint.
type pending struct {
	s   *Dir
	id  int64
	dir string

	mu       sync.Mutex
	state    pendingState
	parts    map[string]*entry // reserved (in flight) or written, by name
	seq      int               // parts begun so far; numbers the files
	inflight int               // WritePart calls between reservation and result
	writes   sync.WaitGroup    // the same calls, for Abort to wait on
}

// ID returns the checkpoint id given to Begin.
func (p *pending) ID() int64 { return p.id }

// WritePart writes one named part of the checkpoint and fsyncs it before
// returning. Names are unique within a checkpoint and may contain '/'
// (e.g. "window/3", "source/0"); a name must be non-empty valid UTF-8 of at
// most MaxPartNameLen bytes, without NUL or other control characters,
// without "..", and without an empty '/'-separated element. WritePart is
// safe for concurrent use by many goroutines. It fails after Commit or
// Abort has started. If it fails, the part is not in the checkpoint and
// the name may be written again.
func (p *pending) WritePart(name string, data []byte) error {
	if err := checkPartName(name); err != nil {
		return fmt.Errorf("checkpoint %d: WritePart: %w", p.id, err)
	}
	if p.s.closed.Load() {
		return ErrClosed
	}
	p.mu.Lock()
	if p.state != stateOpen {
		st := p.state
		p.mu.Unlock()
		return fmt.Errorf("checkpoint %d: WritePart(%q) on a checkpoint that is %s", p.id, name, st)
	}
	if _, dup := p.parts[name]; dup {
		p.mu.Unlock()
		return fmt.Errorf("checkpoint %d: WritePart: duplicate part name %q", p.id, name)
	}
	p.seq++
	e := &entry{name: name, file: partFileName(p.seq, name)}
	p.parts[name] = e
	p.inflight++
	p.writes.Add(1)
	p.mu.Unlock()

	// O_EXCL: the file name is unique by construction, so an existing file
	// means something else writes into this directory.
	err := writeFileSync(filepath.Join(p.dir, e.file), data, os.O_EXCL)

	p.mu.Lock()
	p.inflight--
	if err != nil {
		delete(p.parts, name)
	} else {
		e.size = int64(len(data))
		e.crc = crc32.Checksum(data, castagnoli)
	}
	p.mu.Unlock()
	p.writes.Done()
	if err != nil {
		return fmt.Errorf("checkpoint %d: WritePart(%q): %w", p.id, name, err)
	}
	p.s.crashPoint(CrashPartWritten)
	return nil
}

// Commit completes the checkpoint. In order, it:
//
//  1. fsyncs the checkpoint directory and the store directory, so that
//     every part file and the checkpoint directory itself are durable;
//  2. writes the manifest (the meta bytes, each part's name, file, size
//     and CRC-32C, and the manifest's own CRC-32C) to MANIFEST.tmp and
//     fsyncs it;
//  3. renames it to MANIFEST (the commit point) and fsyncs the checkpoint
//     directory;
//  4. prunes the checkpoints older than the newest Retain complete ones.
//
// Only after Commit returns nil is the checkpoint complete; pruning
// failures are logged, not returned. Commit fails, leaving the checkpoint
// incomplete, if a WritePart is still in flight, if it was already called
// or Abort was, if a checkpoint with a greater or equal id completed since
// Begin, or on an I/O error; after a failure call Abort to remove the
// files. The manifest holds the Dir's Options.Meta. Commit is safe for
// concurrent use; commits of different checkpoints are serialized.
func (p *pending) Commit() error { return p.commit(p.s.meta) }

// commit is Commit with the meta bytes to store (Options.Meta; tests give
// each checkpoint its own). meta may be nil; it is stored as is, at most
// 4 GiB-1 bytes.
func (p *pending) commit(meta []byte) (err error) {
	s := p.s
	p.mu.Lock()
	if p.state != stateOpen {
		st := p.state
		p.mu.Unlock()
		return fmt.Errorf("checkpoint %d: Commit on a checkpoint that is %s", p.id, st)
	}
	if p.inflight > 0 {
		n := p.inflight
		p.mu.Unlock()
		return fmt.Errorf("checkpoint %d: Commit while %d WritePart calls are in flight", p.id, n)
	}
	p.state = stateCommitting
	entries := make([]entry, 0, len(p.parts))
	for _, e := range p.parts {
		entries = append(entries, *e)
	}
	p.mu.Unlock()
	defer func() {
		if err != nil {
			p.mu.Lock()
			p.state = stateFailed
			p.mu.Unlock()
		}
	}()
	if s.closed.Load() {
		return ErrClosed
	}
	if uint64(len(meta)) > math.MaxUint32 {
		return fmt.Errorf("checkpoint %d: Commit: meta is %d bytes, the limit is %d", p.id, len(meta), uint32(math.MaxUint32))
	}
	slices.SortFunc(entries, func(a, b entry) int { return cmp.Compare(a.name, b.name) })

	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	s.mu.Lock()
	newest := s.newest
	s.mu.Unlock()
	if p.id <= newest {
		return fmt.Errorf("checkpoint %d: Commit: checkpoint %d, a newer one, completed meanwhile", p.id, newest)
	}

	// 1. Everything the manifest will name is durable before it exists.
	if err := syncDir(p.dir); err != nil {
		return fmt.Errorf("checkpoint %d: Commit: fsync %s: %w", p.id, p.dir, err)
	}
	if err := syncDir(s.dir); err != nil {
		return fmt.Errorf("checkpoint %d: Commit: fsync %s: %w", p.id, s.dir, err)
	}
	// 2. The manifest, complete and durable under a temporary name.
	tmp := filepath.Join(p.dir, manifestTmpName)
	if err := writeFileSync(tmp, encodeManifest(p.id, meta, entries), os.O_TRUNC); err != nil {
		return fmt.Errorf("checkpoint %d: Commit: writing the manifest: %w", p.id, err)
	}
	s.crashPoint(CrashBeforeManifest)
	// 3. The commit point.
	if err := os.Rename(tmp, filepath.Join(p.dir, manifestName)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("checkpoint %d: Commit: %w", p.id, err)
	}
	if err := syncDir(p.dir); err != nil {
		return fmt.Errorf("checkpoint %d: Commit: fsync %s after the rename: %w", p.id, p.dir, err)
	}
	s.mu.Lock()
	s.newest = p.id
	delete(s.pending, p.id)
	s.mu.Unlock()
	p.mu.Lock()
	p.state = stateCommitted
	p.mu.Unlock()
	s.crashPoint(CrashAfterManifest)
	// 4. Only now may older checkpoints go.
	s.prune()
	s.crashPoint(CrashAfterRetain)
	return nil
}

// Abort removes the pending checkpoint's files. It stops further WritePart
// calls, waits for those in flight, then removes the directory. Abort is
// idempotent and works after a failed Commit (and after Dir.Close); it
// fails after a successful Commit (the checkpoint is complete and stays)
// and while a Commit is in progress.
func (p *pending) Abort() error {
	p.mu.Lock()
	switch p.state {
	case stateAborted:
		p.mu.Unlock()
		return nil
	case stateCommitted, stateCommitting:
		st := p.state
		p.mu.Unlock()
		return fmt.Errorf("checkpoint %d: Abort on a checkpoint that is %s", p.id, st)
	}
	p.state = stateAborted
	p.mu.Unlock()
	p.writes.Wait()

	err := removeCheckpointDir(p.dir)
	p.s.mu.Lock()
	delete(p.s.pending, p.id)
	p.s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("checkpoint %d: Abort: %w", p.id, err)
	}
	return nil
}
