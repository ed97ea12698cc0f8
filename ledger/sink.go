package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Sink is the ledger as a sink of too-late records: a connector.Sink of
// entries and connector.Transactional, so that with checkpoints it holds
// exactly the entries a run that never crashed would have written.
// PreCommit makes the appended entries durable and returns the position;
// Recover cuts the ledger back to a checkpoint's position. Entries are
// visible to Scan once appended, and a Recover may remove those a crash
// left after the checkpoint.
//
// A Sink is not safe for concurrent use; the engine serializes its calls.
type Sink struct {
	dir string
	o   SinkOptions
	w   *Writer
}

// SinkOptions configures OpenSink.
type SinkOptions struct {
	// Retention removes day directories older than it at open and at
	// Recover; 0 keeps everything.
	Retention time.Duration
	// Now is the processing-time clock of retention; default time.Now.
	Now func() time.Time
	// Fresh empties the ledger at open: a job that starts without a
	// checkpoint to restore (see connector.Transactional).
	Fresh bool
}

// OpenSink opens the ledger in dir (created if needed) for appending; it
// keeps what is there (unless Fresh) until a Recover cuts it back.
func OpenSink(dir string, o SinkOptions) (*Sink, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	var cut *Pos
	if o.Fresh {
		cut = &Pos{} // the zero Pos: an empty ledger
	}
	w, err := Open(dir, cut, o.Retention, o.Now())
	if err != nil {
		return nil, err
	}
	return &Sink{dir: dir, o: o, w: w}, nil
}

// Dir returns the ledger's directory.
func (s *Sink) Dir() string { return s.dir }

// Write appends the entries. An entry's Kind defaults to "late"; its
// Segment and Line are ignored; ArrivedAt (Unix ms) picks its day.
func (s *Sink) Write(_ context.Context, entries []Entry) error {
	for i := range entries {
		e := entries[i]
		if e.ID == "" {
			return fmt.Errorf("ledger: an entry without an id (reason %q): give each too-late record its source position as id", e.Reason)
		}
		if e.Kind == "" {
			e.Kind = "late"
		}
		if len(e.Record) == 0 {
			e.Record = json.RawMessage("null")
		}
		b, err := json.Marshal(&e)
		if err != nil {
			return fmt.Errorf("ledger: entry %s: %w", e.ID, err)
		}
		if err := s.w.Append(b, time.UnixMilli(e.ArrivedAt)); err != nil {
			return err
		}
	}
	return nil
}

// Flush makes the appended entries durable.
func (s *Sink) Flush(context.Context) error {
	_, err := s.w.Commit()
	return err
}

// PreCommit makes the appended entries durable and returns the position,
// which Recover cuts back to.
func (s *Sink) PreCommit(context.Context, int64) ([]byte, error) {
	p, err := s.w.Commit()
	if err != nil {
		return nil, err
	}
	return json.Marshal(p)
}

// Commit does nothing: PreCommit's entries are in the ledger.
func (s *Sink) Commit(context.Context, int64) error { return nil }

// Abort does nothing: what a failed run appended since the last PreCommit
// stays until the next Recover cuts it back.
func (s *Sink) Abort(context.Context) error { return nil }

// Recover cuts the ledger back to the position in state (with state nil,
// the ledger as it was when OpenSink opened it is kept: a checkpoint
// taken before the sink existed).
func (s *Sink) Recover(_ context.Context, _ int64, state []byte) error {
	if state == nil {
		return nil
	}
	var p Pos
	if err := json.Unmarshal(state, &p); err != nil {
		return fmt.Errorf("ledger: corrupt checkpoint state %q: %w", state, err)
	}
	if err := s.w.Close(); err != nil {
		return err
	}
	w, err := Open(s.dir, &p, s.o.Retention, s.o.Now())
	if err != nil {
		return err
	}
	s.w = w
	return nil
}

// Close commits and closes the open segment.
func (s *Sink) Close() error { return s.w.Close() }
