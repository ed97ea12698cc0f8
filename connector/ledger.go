package connector

import (
	"context"
	"errors"
)

// ErrNoLedger is matched (errors.Is) by an OpenLedger error that says
// the ledger is not there (a directory no run of the job made): weir
// backfill and weir ledger refuse the spec for it, and create nothing.
var ErrNoLedger = errors.New("the ledger is not there")

// LedgerOpen is what a runner gives SinkKind.OpenLedger: a job spec's
// sink of too-late records, to be read back as the job's late-data
// ledger (weir backfill, weir ledger).
type LedgerOpen struct {
	// Settings are the sink's, at Output in messages (sinks.late).
	Settings Settings
	Output   string
	// Name is the sink's name in checkpoints (late, late_partial), and
	// Reason the reason of its entries (window_expired, or
	// window_expired_partial for late_partial's own sink), for a kind
	// whose stored records do not say it.
	Name, Reason string
	// Job is the job's name.
	Job string
	// Path resolves a path setting (relative paths start at the spec's
	// directory).
	Path func(string) string
	// Lock: take the kind's single-writer lock of backfills over the
	// ledger (a dry run or a listing reads without it), released by
	// Close.
	Lock bool
	// Results are the settings of the job's first results sink of the
	// same kind (nil: none), for a kind whose late records go through its
	// results sink (Kafka's transactions: its brokers, TLS and SASL).
	Results Settings
}

// LedgerCut is how much of a ledger a checkpoint of the live job covers:
// the sink's state in that checkpoint (what its pre-commit returned; nil
// when it had none: nothing committed yet) and the checkpoint's run. A
// nil *LedgerCut reads all of the ledger.
type LedgerCut struct {
	State []byte
	Run   int64
}

// LedgerReader reads back the too-late records a sink of its kind wrote.
type LedgerReader interface {
	// Scan calls fn with each entry up to cut (nil: all), in the order
	// the sink keeps them, as a ledger entry's JSON line (the ledger
	// package's Entry); it returns the entries it could not read, each
	// said where it is and why. An error of fn ends the scan.
	Scan(ctx context.Context, cut *LedgerCut, fn func(line []byte) error) (bad []string, err error)
	// Describe says what Scan reads up to cut, for a report (a ledger
	// directory's position, a table's epoch, a topic's committed
	// records).
	Describe(cut *LedgerCut) string
	// Where names what the reader reads, for messages: a directory, a
	// table, topics.
	Where() string
	Close() error
}

// LedgerKinds are the names of the kinds in r whose late sinks can be
// read back as a ledger (SinkKind.OpenLedger).
func LedgerKinds(r *Registry) []string {
	var names []string
	for _, k := range r.Kinds() {
		if k.Sink != nil && k.Sink.OpenLedger != nil {
			names = append(names, k.Name)
		}
	}
	return names
}
