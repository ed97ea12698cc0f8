// Package checkpoint is the on-disk store of weir's consistent checkpoints.
//
// A checkpoint is a set of named parts (opaque byte blobs: source
// positions, operator state, watermark state, sink commit information)
// written by the subtasks of a job, plus the job's meta bytes. The life of
// one checkpoint:
//
//	p, err := store.Begin(id)        // ids strictly increase
//	err = p.WritePart("source/0", b) // from any number of goroutines
//	err = p.WritePart("window/3", b)
//	err = p.Commit(meta)             // complete once this returns nil
//	// or p.Abort()
//
// and of a restore:
//
//	cp, ok, err := store.Latest()     // newest checkpoint that verifies
//	b, err := store.ReadPart(cp, "window/3")
//
// Crash safety: parts are fsynced before WritePart returns; Commit makes
// the parts' directory entries durable, then writes the manifest (every
// part's name, size and CRC-32C, and a CRC-32C of the manifest itself) to a
// temporary file, fsyncs it, renames it to MANIFEST and fsyncs the
// directory. That rename is the commit point. Old checkpoints are pruned
// only after it is durable. A kill at any instant therefore leaves either
// the new checkpoint or the previous complete one for Latest, and Latest
// detects a checkpoint damaged later (a flipped byte, a truncated or
// missing file) by the checksums and falls back to the previous one,
// logging which checkpoint it skipped and why.
//
// The directory layout and the manifest format, byte by byte, are in
// docs/format/checkpoint.md.
//
// A directory must be used by one Store (in one process) at a time; the
// package takes no file lock (weir run takes one, see package spec). The
// package starts no goroutines.
package checkpoint
