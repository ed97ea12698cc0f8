package connector

import (
	"context"
	"io"
	"log/slog"
	"time"
)

// Message is one output of a job as a message: a result, a late record or
// a dead letter, as a line of JSON text with what a log or a message
// stream files it under. A kind uses the parts it needs (a file the
// Value, a Kafka topic the Key and Headers, a JetStream stream the ID).
type Message struct {
	// Value is the output as one line of JSON text (no newline); nil for
	// a retraction of a results sink with a primary key (its key's
	// tombstone, spec.Sink.PrimaryKey).
	Value []byte
	// Key is what a keyed log partitions and compacts by: a result's key
	// fields and window as a JSON object, or, for a results sink with a
	// primary key, its columns' object (each window's newest revision
	// wins); a late record's or dead letter's entry id.
	Key []byte
	// ID is the message's stable id: the same output written again after
	// a restore has the same ID. A result's is its key, window, run and
	// pane (and "#retract" for a retraction), unique in the sink; a
	// record's is its entry id, unique in the run: a kind that keeps ids
	// across runs qualifies it with the run (MessagesOpen.Run), since a
	// later run may read other input at the same positions.
	ID string
	// Headers say what the message is: a result's weir-firing, weir-run
	// and weir-pane; a record's weir-reason.
	Headers []Header
	// Entry is a late record's or dead letter's parts (nil for a result),
	// for a kind that stores them apart: a table's columns, a ledger's
	// entry.
	Entry *Entry
}

// Entry is a late record or a dead letter in parts.
type Entry struct {
	// ID is the record's entry id: its position in the source
	// ("partition:offset" in Kafka, the stream sequence in NATS, the line
	// number in a file), the same after a replay.
	ID string
	// Reason is why the record is here: window_expired,
	// window_expired_partial, or a dead letter's reason.
	Reason string
	// Record is the record as it was read.
	Record []byte
	// Meta is the message's other fields (Value without id and record),
	// as a JSON object.
	Meta []byte
	// Arrived is when the record arrived (processing time).
	Arrived time.Time
}

// Header is a message header.
type Header struct {
	Key   string
	Value []byte
}

// MessagesOpen is what a job spec's runner gives SinkKind.OpenMessages.
type MessagesOpen struct {
	// Settings are the sink's, at Output (sinks.late, sinks.results[1])
	// in messages.
	Settings Settings
	Output   string
	// Name is the sink's name in checkpoints and summaries: results,
	// results[1], late, late_partial, dead_letter.
	Name string
	// Role is the output the sink takes (one role).
	Role SinkRole
	// Path resolves a path setting (relative paths start at the spec's
	// directory).
	Path func(string) string
	// Job is the job's name.
	Job string
	// Fresh: the job starts its output over (a fresh run that does not
	// append, or a sink added to a resumed job), so the sink starts
	// empty, as Transactional asks, at the latest when it first flushes
	// or pre-commits (a kind whose output is a server's rows waits until
	// then, so that a run that fails before removes nothing). Otherwise
	// the runner calls Recover (a restore) or keeps what the output holds
	// (a run that appends).
	Fresh bool
	// Stdout is the job's standard output, shared by every sink that
	// writes there and owned by the runner: write each line whole, with
	// one Write call; it is flushed (if it has a Flush() error method)
	// by the sink's Flush.
	Stdout io.Writer
	// Open are the sinks the job opened before this one (its results
	// sinks, then late, late_partial, dead_letter), so that a kind may
	// write one role in another sink's transactions (Kafka's late records
	// go in its results' transactions); the kind recognizes its own by
	// type.
	Open []Sink[Message]
	// Run returns the id of the job's run, which its outputs carry: the
	// restored checkpoint's during a restore; at a fresh start it is
	// settled once every sink is open (it goes above what RunKeeper sinks
	// hold), so a sink reads it when it writes, not at open.
	Run func() int64
	// Now is the job's processing-time clock.
	Now func() time.Time
	// Logger receives the sink's warnings; Stopping is done when the job
	// is stopping, so that a sink that waits (for a server) gives up.
	Logger   *slog.Logger
	Stopping context.Context
}
