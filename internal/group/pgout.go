package group

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/pgio"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/outfmt"
	"github.com/weirstream/weir/spec"
	"github.com/weirstream/weir/state"
)

// Postgres outputs in group mode go through an outbox. A task's Postgres
// sinks write their rows and records into the task (pgSink, encoded);
// the member commits them as part pgPart of the task's snapshot, in the
// transaction with the task's Kafka outputs, changelog and offsets, and
// once it committed writes them to the tables (Member.applyPG). A
// restore writes the restored snapshot's again, and so does the end of a
// stop_at_end group, for every task's last (finishGroup). Both writes are
// idempotent: a result row is an upsert guarded by (run, pane), a record
// an insert that keeps the first row of its (job, run, id). So every
// committed output reaches its table once, even when its member died
// between the commit and the write, and nothing uncommitted does (an
// aborted transaction's rows are never written: the task replays them).
//
// Rows and records reach a table after the commit that holds them, so a
// table trails the Kafka outputs by a commit; while Postgres is down the
// member waits (the write retries as a single process's does), holding
// its fetches back.

// pgPart is the name of a snapshot's part of Postgres outputs.
const pgPart = "postgres"

// pgApplyHook, when set (tests), is called before a member writes a
// snapshot's Postgres outputs; an error fails the member there, as a
// crash between its commit and the write would.
var pgApplyHook func() error

// pgSink is a task's Postgres sink of results (a connector.ResultsSink)
// or of late records or dead letters: it encodes what the task's job
// writes into the task's pg buffer (task.pgWrite), named by the sink's
// output path.
type pgSink struct {
	t    *task
	path string
}

// Write encodes result rows.
func (s *pgSink) Write(_ context.Context, rows []connector.Row) error {
	for i := range rows {
		s.t.pgWrite(func(w *state.Writer) { encodePGRow(w, s.path, &rows[i]) })
	}
	return nil
}

func (s *pgSink) Flush(context.Context) error { return nil }
func (s *pgSink) Close() error                { return nil }
func (s *pgSink) Idempotent()                 {}

// Reset and MaxRun: a group never starts a table's rows over (no member
// resets shared outputs) and is one run, the group's.
func (s *pgSink) Reset(context.Context) (int64, error)  { return 0, nil }
func (s *pgSink) MaxRun(context.Context) (int64, error) { return 0, nil }

var _ connector.ResultsSink = (*pgSink)(nil)

// pgRecords is a task's Postgres sink of late records or dead letters.
// It is transactional so that its records are handed over per
// checkpoint (at its pre-commit), as the Kafka sinks' are.
type pgRecords struct{ pgSink }

// Write encodes entries.
func (s *pgRecords) Write(_ context.Context, batch []connector.Message) error {
	for i := range batch {
		e := batch[i].Entry
		if e == nil {
			return errors.New("group: a message without an entry: a record table keeps late records and dead letters")
		}
		s.t.pgWrite(func(w *state.Writer) {
			w.Uint(pgRecord)
			w.Bytes([]byte(s.path))
			w.Bytes([]byte(e.ID))
			w.Bytes([]byte(e.Reason))
			w.Bytes(e.Record)
			w.Bytes(e.Meta)
		})
	}
	return nil
}

func (s *pgRecords) PreCommit(context.Context, int64) ([]byte, error) { return nil, nil }
func (s *pgRecords) Commit(context.Context, int64) error              { return nil }
func (s *pgRecords) Abort(context.Context) error                      { return nil }
func (s *pgRecords) Recover(context.Context, int64, []byte) error     { return nil }

var _ connector.Transactional = (*pgRecords)(nil)

// The kinds of an encoded Postgres output.
const (
	pgRow = iota + 1
	pgRecord
)

func encodePGRow(w *state.Writer, path string, r *connector.Row) {
	w.Uint(pgRow)
	w.Bytes([]byte(path))
	cols := func(cs []connector.Column) {
		w.Uint(uint64(len(cs)))
		for _, c := range cs {
			w.Bytes([]byte(c.Name))
			w.Bytes(c.Value)
		}
	}
	cols(r.Keys)
	w.Int(int64(r.Start))
	w.Int(int64(r.End))
	w.Bytes([]byte(r.Firing))
	w.Int(r.Run)
	w.Int(r.Pane)
	w.Int(int64(r.Watermark))
	cols(r.Values)
}

// pgWrite appends one encoded output to the task's pg buffer.
func (t *task) pgWrite(enc func(w *state.Writer)) {
	t.mu.Lock()
	w := state.Writer{Buf: t.pg}
	enc(&w)
	t.pg = w.Buf
	t.mu.Unlock()
}

// takePG returns the Postgres outputs written since the last take.
func (t *task) takePG() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.pg
	t.pg = nil
	return b
}

// withPG is parts with the Postgres outputs b (none: parts).
func withPG(parts map[string][]byte, b []byte) map[string][]byte {
	if len(b) > 0 {
		parts[pgPart] = b
	}
	return parts
}

// pgTables are a member's Postgres sinks, by output path, opened once
// (openPG): what its tasks commit is written through them. mu serializes
// writes (the loop's after a commit, an assignment's at a restore).
type pgTables struct {
	mu      sync.Mutex
	results map[string]*pgio.Sink
	records map[string]*pgio.RecordSink
}

// openPG opens the plan's Postgres sinks (none: nil).
func (m *Member) openPG(ctx context.Context) (*pgTables, error) {
	return openPGTables(ctx, m.o.Plan, m.o.Logger)
}

// openPGTables opens plan p's Postgres sinks (none: nil), each
// retrying while the server is unavailable until ctx is done.
func openPGTables(ctx context.Context, p *spec.Plan, log *slog.Logger) (*pgTables, error) {
	path, err := p.Graph.Path()
	if err != nil {
		return nil, err
	}
	pg := &pgTables{results: map[string]*pgio.Sink{}, records: map[string]*pgio.RecordSink{}}
	for _, op := range path.Sinks() {
		if op.Config == nil || op.Config.Type != "postgres" {
			continue
		}
		s := spec.SinkSettings(op.Config)
		opts := pgio.SpecOptions(s)
		opts.Logger, opts.Stopping, opts.Job, opts.ReplaysExpected = log.With("sink", op.Name), ctx, jobName(p), true
		url, table, err := pgio.InSchema(s.String("url"), s.String("table"))
		if err != nil {
			return nil, errors.Join(fmt.Errorf("%s: %w", op.Path, err), pg.close())
		}
		if op.Role == connector.RoleResults {
			keys, values := pgio.ResultColumns(p.Key, outfmt.ResultColumns(p))
			r, err := pgio.Open(ctx, url, table, keys, values, opts)
			if err != nil {
				return nil, errors.Join(fmt.Errorf("%s: %w", op.Path, err), pg.close())
			}
			pg.results[op.Path] = r
			continue
		}
		r, err := pgio.OpenRecords(ctx, url, table, opts)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("%s: %w", op.Path, err), pg.close())
		}
		pg.records[op.Path] = r
	}
	if len(pg.results)+len(pg.records) == 0 {
		return nil, nil
	}
	return pg, nil
}

func (pg *pgTables) close() error {
	var errs []error
	for _, s := range pg.results {
		errs = append(errs, s.Close())
	}
	for _, s := range pg.records {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// applyPG writes the Postgres outputs of task p's committed snapshot
// snap to their tables and flushes them (retrying while Postgres is
// unavailable, until the member stops). When it fails (the member stops,
// a rebalance cancels a restore), the outputs not flushed are discarded:
// they are committed, and whoever restores the task writes them again.
func (m *Member) applyPG(ctx context.Context, p int32, snap *snapshot) (err error) {
	b := snap.Parts[pgPart]
	if m.pg == nil || len(b) == 0 {
		return nil
	}
	if pgApplyHook != nil {
		if err := pgApplyHook(); err != nil {
			return err
		}
	}
	pg := m.pg
	pg.mu.Lock()
	defer pg.mu.Unlock()
	job := jobName(m.o.Plan)
	touched := map[string]bool{}
	defer func() {
		if err == nil {
			return
		}
		for path := range touched {
			if s := pg.results[path]; s != nil {
				s.Discard()
			} else if s := pg.records[path]; s != nil {
				_ = s.Abort(ctx)
			}
		}
		m.o.Logger.Debug("writing a commit's Postgres outputs stopped; whoever restores the task writes them again", "task", p, "checkpoint", snap.ID, "err", err)
	}()
	r := state.Reader{Buf: b}
	var row [1]connector.Row
	for len(r.Buf) > 0 && r.Err == nil {
		kind := r.Uint()
		path := string(r.Bytes())
		touched[path] = true
		switch kind {
		case pgRow:
			s := pg.results[path]
			if s == nil {
				return taskError(p, fmt.Errorf("a committed result row of %s, which the job has no Postgres results sink for", path))
			}
			decodePGRow(&r, &row[0])
			if r.Err == nil {
				if err := s.Write(ctx, row[:]); err != nil {
					return taskError(p, fmt.Errorf("%s: %w", path, err))
				}
			}
		case pgRecord:
			s := pg.records[path]
			if s == nil {
				return taskError(p, fmt.Errorf("a committed record of %s, which the job has no Postgres sink for", path))
			}
			id, reason, rec, meta := string(r.Bytes()), string(r.Bytes()), r.Bytes(), r.Bytes()
			if r.Err == nil {
				s.SetEpoch(job, m.run, snap.ID)
				if err := s.WriteRecord(id, reason, rec, meta); err != nil {
					return taskError(p, fmt.Errorf("%s: %w", path, err))
				}
			}
		default:
			r.Err = fmt.Errorf("unknown output kind %d", kind)
		}
	}
	if r.Err != nil {
		return taskError(p, fmt.Errorf("checkpoint %d: corrupt part %s: %w", snap.ID, pgPart, r.Err))
	}
	for path := range touched {
		var err error
		if s := pg.results[path]; s != nil {
			err = s.Flush(ctx)
		} else {
			err = pg.records[path].Flush(ctx)
		}
		if err != nil {
			return taskError(p, fmt.Errorf("%s: writing checkpoint %d's outputs: %w", path, snap.ID, err))
		}
	}
	return nil
}

func decodePGRow(r *state.Reader, row *connector.Row) {
	cols := func(cs []connector.Column) []connector.Column {
		n := r.Uint()
		cs = cs[:0]
		for i := uint64(0); i < n && r.Err == nil; i++ {
			cs = append(cs, connector.Column{Name: string(r.Bytes()), Value: r.Bytes()})
		}
		return cs
	}
	row.Keys = cols(row.Keys)
	row.Start, row.End = etime.Time(r.Int()), etime.Time(r.Int())
	row.Firing = string(r.Bytes())
	row.Run, row.Pane = r.Int(), r.Int()
	row.Watermark = etime.Time(r.Int())
	row.Values = cols(row.Values)
}

// resetPG deletes the job's rows from its Postgres tables (weir reset:
// the next run's are its own), saying what it deleted.
func resetPG(ctx context.Context, p *spec.Plan) ([]string, error) {
	pg, err := openPGTables(ctx, p, slog.New(slog.DiscardHandler))
	if err != nil || pg == nil {
		return nil, err
	}
	defer pg.close()
	job := jobName(p)
	var did []string
	note := func(path, table string, n int64, err error) error {
		if err != nil {
			return fmt.Errorf("%s: deleting job %s's rows: %w", path, job, err)
		}
		did = append(did, fmt.Sprintf("deleted %d rows of job %s from table %s (%s)", n, job, table, path))
		return nil
	}
	for _, path := range slices.Sorted(maps.Keys(pg.results)) {
		s := pg.results[path]
		n, err := s.Reset(ctx)
		if err := note(path+"; and its rows in "+pgio.AppliedTable(s.Table())+", the late records a backfill applied", s.Table(), n, err); err != nil {
			return did, err
		}
	}
	for _, path := range slices.Sorted(maps.Keys(pg.records)) {
		s := pg.records[path]
		n, err := s.Reset(ctx, job)
		if err := note(path, s.Table(), n, err); err != nil {
			return did, err
		}
	}
	return did, nil
}
