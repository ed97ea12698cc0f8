// Package checkpoint holds the contract between a weir job and the store
// of its consistent checkpoints (Store, Pending, View), and Dir, the
// on-disk store.
//
// A checkpoint is a set of named parts (opaque byte blobs: source
// positions, operator state, watermark state, sink commit information)
// written by the subtasks of a job, plus meta bytes. The life of one
// checkpoint, as the job drives it (see Store and Pending for who calls
// what from which goroutine):
//
//	p, err := store.Begin(id)        // ids strictly increase
//	err = p.WritePart("source/0", b) // from any number of goroutines
//	err = p.WritePart("window/3", b)
//	err = p.Commit()                 // complete once this returns nil
//	// or p.Abort()
//
// and of a restore from a Dir:
//
//	cp, ok, err := dir.Latest()       // newest checkpoint that verifies
//	b, err := dir.ReadPart(cp, "window/3")
//	v, err := dir.View(cp)            // every part, for the job
//
// A job restores through a View of the checkpoint's parts
// (weir.CheckpointOptions.Restore, with NextID cp.ID+1): the parts of one
// subtask are named as PartName names them.
//
// Crash safety of a Dir: parts are fsynced before WritePart returns;
// Commit makes the parts' directory entries durable, then writes the
// manifest (every part's name, size and CRC-32C, and a CRC-32C of the
// manifest itself) to a temporary file, fsyncs it, renames it to MANIFEST
// and fsyncs the directory. That rename is the commit point. Old
// checkpoints are pruned only after it is durable. A kill at any instant
// therefore leaves either the new checkpoint or the previous complete one
// for Latest, and Latest detects a checkpoint damaged later (a flipped
// byte, a truncated or missing file) by the checksums and falls back to
// the previous one, logging which checkpoint it skipped and why.
//
// The directory layout and the manifest format, byte by byte, are in
// docs/format/checkpoint.md.
//
// A directory must be used by one Dir (in one process) at a time, except
// for readers opened with OpenReadOnly; the package takes no file lock
// (weir run takes one, see package spec). The package starts no
// goroutines and imports only the standard library.
package checkpoint
