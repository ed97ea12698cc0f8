package pgio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/weirstream/weir/connector"
)

// specBatchRows is a job spec's record sink's batch_rows unless it sets
// one: as many rows as a SQLite sink's transactions hold.
const specBatchRows = 1000

// openMessages opens a job spec's Postgres sink of late records or dead
// letters: a RecordSink of the job's rows, whose rows of earlier runs go
// when the job starts its output over.
func openMessages(ctx context.Context, o connector.MessagesOpen) (connector.Sink[connector.Message], error) {
	if o.Role == connector.RoleResults {
		return nil, errors.New("a postgres results table is opened with OpenResults")
	}
	opts := SpecOptions(o.Settings)
	opts.Logger, opts.Stopping = o.Logger, o.Stopping
	url, table := o.Settings.String("url"), o.Settings.String("table")
	url, name, err := InSchema(url, table)
	if err != nil {
		return nil, err
	}
	db, err := OpenRecords(ctx, url, name, opts) // waits for the server as Options say
	if err != nil {
		return nil, err
	}
	// The run's lock on the job's rows of this output (as a results
	// table's): a second live run of the job, in another directory or on
	// another machine, would remove this one's rows at its fresh start;
	// it is refused instead. Outputs of one run sharing a table take
	// locks of their own.
	lk, err := takeRowLock(ctx, url, o.Name, table, o.Job, opts.Timeout, fmt.Sprintf("table %s (%s)", table, o.Name), ", and this run would remove them at its start")
	if err != nil {
		return nil, errors.Join(err, db.Close())
	}
	s := &specRecords{RecordSink: db, lk: lk, log: o.Logger, job: o.Job, run: o.Run, batch: specBatchRows}
	if n := o.Settings.Int("batch_rows"); n > 0 {
		s.batch = n
	}
	if o.Fresh {
		// The job's rows of earlier runs go when the run first commits
		// here, not at open: a fresh run that fails before (an
		// unreachable input) removes nothing.
		s.reset = func(ctx context.Context) error {
			n, err := db.Reset(ctx, o.Job)
			if err != nil {
				return fmt.Errorf("starting the job's rows over for a new run: %w", err)
			}
			if n > 0 && o.Logger != nil {
				o.Logger.Warn("a new run: removed the job's rows of earlier runs (--append keeps them)", "table", db.Table(), "rows", n)
			}
			return nil
		}
	}
	return s, nil
}

// specRecords is a RecordSink as a job spec's sink: its rows are the
// job's and the run's, in epochs of its own that it keeps in the
// checkpoints. PreCommit flushes the rows as the next epoch and returns
// its number; Recover deletes the run's rows of later epochs (what a
// crash flushed after the checkpoint: the replay writes what it judges
// late again); between pre-commits a full batch (batch_rows) is flushed
// as the epoch under way, so that memory and transactions stay bounded.
type specRecords struct {
	*RecordSink
	// lk is the run's lock on the job's rows of this output, closed by
	// Close: once another run took it, no write, cut or reset runs.
	lk    *rowLock
	log   *slog.Logger
	job   string
	run   func() int64
	batch int
	// epoch is the last pre-committed epoch (the restored one's after
	// Recover); rows flushed now are epoch+1.
	epoch int64
	// reset, until the first flush runs it, removes the job's rows of
	// earlier runs (a fresh start).
	reset func(context.Context) error
}

func (s *specRecords) Write(ctx context.Context, batch []connector.Message) error {
	for i := range batch {
		e := batch[i].Entry
		if e == nil {
			return errors.New("pgio: a message without an entry: a record table keeps late records and dead letters")
		}
		if err := s.WriteRecord(e.ID, e.Reason, e.Record, e.Meta); err != nil {
			return err
		}
		if s.Pending() >= s.batch {
			if err := s.flushAs(ctx, s.epoch+1); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *specRecords) flushAs(ctx context.Context, epoch int64) error {
	if err := s.lk.held(); err != nil {
		return err
	}
	if s.reset != nil {
		if err := s.reset(ctx); err != nil {
			return err
		}
		s.reset = nil
	}
	s.SetEpoch(s.job, s.run(), epoch)
	return s.RecordSink.Flush(ctx)
}

// Flush flushes what is buffered as the epoch under way.
func (s *specRecords) Flush(ctx context.Context) error { return s.flushAs(ctx, s.epoch+1) }

// PreCommit flushes the rows as the next epoch and returns its number.
func (s *specRecords) PreCommit(ctx context.Context, _ int64) ([]byte, error) {
	if err := s.flushAs(ctx, s.epoch+1); err != nil {
		return nil, err
	}
	s.epoch++
	return strconv.AppendInt(nil, s.epoch, 10), nil
}

// Recover deletes the run's rows of epochs after the one in state (every
// epoch's, with state nil).
func (s *specRecords) Recover(ctx context.Context, _ int64, state []byte) error {
	s.epoch = 0
	if state != nil {
		n, err := strconv.ParseInt(string(state), 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("pgio: corrupt checkpoint state %q", state)
		}
		s.epoch = n
	}
	if err := s.lk.held(); err != nil {
		return err
	}
	n, err := s.Cut(ctx, s.job, s.run(), s.epoch)
	if err == nil && n > 0 && s.log != nil {
		s.log.Info("restore: removed the rows a later checkpoint would have covered", "table", s.Table(), "rows", n, "epoch", s.epoch)
	}
	return err
}

// MaxRun is the newest run of the job's rows.
func (s *specRecords) MaxRun(ctx context.Context) (int64, error) {
	return s.RecordSink.MaxRun(ctx, s.job)
}

// Close closes the sink, then the lock (rowLock.Close).
func (s *specRecords) Close() error {
	return errors.Join(s.RecordSink.Close(), s.lk.Close())
}
