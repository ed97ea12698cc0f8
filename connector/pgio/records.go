package pgio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// RecordSink stores late records and dead letters in a Postgres table
// (id TEXT, reason TEXT, record JSONB, meta JSONB, arrived_at TIMESTAMPTZ
// DEFAULT now(), job TEXT (empty by default), epoch BIGINT, run BIGINT,
// PRIMARY KEY (job, run, id)) over one connection.
//
// Each record has a stable id chosen by the caller (weir uses its source
// position, such as a Kafka partition and offset), unique within its job's
// run (a later run may read other input at the same positions).
// Records are buffered by WriteRecord and committed by Flush in one
// transaction, with the retries of Sink, as INSERT ... ON CONFLICT (job,
// run, id) DO NOTHING: a replay after a failure writes the same ids again and
// changes nothing, so the table holds every record exactly once, with the
// arrived_at of its first write. Records a flush did not store because
// their id was there are counted (Skipped) and logged as a warning: they
// may be other input under the same ids.
//
// Each flush stamps its rows with the job, run and epoch set by SetEpoch,
// so a caller that commits a flush with its checkpoints can undo what a
// checkpoint never covered: after a crash between a flush and its
// checkpoint, Cut removes that run's rows of later epochs before the
// replay writes them again (the replay may judge a record differently: on
// time after all); a fresh start of the job removes its rows (Reset).
// Rows of other jobs sharing the table are never cut.
//
// A RecordSink is not safe for concurrent use.
type RecordSink struct {
	c      *client
	insert string
	recs   []record
	job    string // "" before SetEpoch
	runID  int64  // 0 before SetEpoch
	epoch  any    // int64, or nil (SQL NULL) before SetEpoch
	// skipped counts records not stored because their id was there.
	skipped int64
}

type record struct {
	id     string
	reason string
	record any // string (JSON text) or nil (SQL NULL)
	meta   any
}

// The record table's columns. Its primary key is (job, run, id); tables
// made by weir before jobs were recorded keep (id).
var recordColumns = [][2]string{
	{"id", "text"},
	{"reason", "text"},
	{"record", "jsonb"},
	{"meta", "jsonb"},
	{"arrived_at", "timestamp with time zone"},
	{"job", "text"},
	{"epoch", "bigint"},
	{"run", "bigint"},
}

// recordBaseColumns are the columns of record tables before job and epoch,
// and oldRecordPK their primary key, which such tables keep.
var (
	recordBaseColumns = recordColumns[:5]
	oldRecordPK       = []string{"id"}
)

// OpenRecords connects to the database of connString and opens, creating it
// if needed, the record table named table. ctx, connString, table and o are
// as for Open; an existing table must have the columns of a record table
// (in any order) with primary key (job, run, id); a table of the older
// layout (a bigint id) is refused, one of the layout before runs gets the
// run column and the primary key (job, run, id), and one of the layout
// before job and epoch gets those columns and keeps its primary key (id),
// so ids stay unique across jobs and runs there (both need the ALTER
// privilege on the table, once).
func OpenRecords(ctx context.Context, connString, table string, o Options) (*RecordSink, error) {
	c, err := newClient(ctx, connString, table, o)
	if err != nil {
		return nil, err
	}
	s := &RecordSink{c: c, job: o.Job}
	if err := c.run(ctx, "open record table "+c.qt, s.setup); err != nil {
		c.closeConn()
		return nil, err
	}
	return s, nil
}

func (s *RecordSink) setup(ctx context.Context, conn *pgx.Conn) error {
	err := s.setupOnce(ctx, conn)
	if errors.As(err, new(schemaError)) {
		// Another opener may have been migrating the table between our
		// reads of its columns and of its key, or between those reads and
		// our migration: look again once. Other errors (a failed ALTER, no
		// privilege) would only fail again.
		if again := s.setupOnce(ctx, conn); again == nil || transient(again) {
			return again // nil, or for client.run to retry
		}
	}
	return err
}

func (s *RecordSink) setupOnce(ctx context.Context, conn *pgx.Conn) error {
	got, gotPK, exists, err := tableColumns(ctx, conn, s.c.qt)
	if err != nil {
		return fmt.Errorf("pgio: read the columns of table %s: %w", s.c.qt, err)
	}
	beforeRuns := recordColumns[:len(recordColumns)-1]
	switch {
	case !exists:
		create := fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s ("id" TEXT NOT NULL, "reason" TEXT NOT NULL, "record" JSONB, "meta" JSONB, "arrived_at" TIMESTAMPTZ NOT NULL DEFAULT now(), "job" TEXT NOT NULL DEFAULT '', "epoch" BIGINT, "run" BIGINT NOT NULL DEFAULT 0, PRIMARY KEY ("job", "run", "id"))`, s.c.qt)
		if _, err := conn.Exec(ctx, create); err != nil {
			return fmt.Errorf("pgio: create table %s: %w\n  statement: %s", s.c.qt, createRace(err), create)
		}
	case len(got) == len(recordBaseColumns) && compareSchema(s.c.qt, recordBaseColumns, oldRecordPK, got, gotPK) == nil:
		// A record table of weir before jobs and epochs: its rows keep
		// NULL in both, which no Cut removes.
		alter := fmt.Sprintf(`ALTER TABLE %s ADD COLUMN IF NOT EXISTS "job" TEXT, ADD COLUMN IF NOT EXISTS "epoch" BIGINT, ADD COLUMN IF NOT EXISTS "run" BIGINT NOT NULL DEFAULT 0`, s.c.qt)
		if _, err := conn.Exec(ctx, alter); err != nil {
			return fmt.Errorf("pgio: table %s has the record columns of an older weir; adding job and epoch failed (grant ALTER on it once, or run the statement yourself): %w\n  statement: %s", s.c.qt, err, alter)
		}
	case len(got) == len(beforeRuns) && compareSchema(s.c.qt, beforeRuns, []string{"job", "id"}, got, gotPK) == nil:
		// A record table of weir before runs: its rows are run 0.
		var pkName string
		if err := conn.QueryRow(ctx, `SELECT conname FROM pg_constraint WHERE conrelid = to_regclass($1) AND contype = 'p'`, s.c.qt).Scan(&pkName); err != nil {
			return fmt.Errorf("pgio: read the primary key of table %s: %w", s.c.qt, err)
		}
		alter := fmt.Sprintf(`ALTER TABLE %s ADD COLUMN IF NOT EXISTS "run" BIGINT NOT NULL DEFAULT 0, DROP CONSTRAINT %s, ADD PRIMARY KEY ("job", "run", "id")`, s.c.qt, quoteIdent(pkName))
		if _, err := conn.Exec(ctx, alter); err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "42704" { // undefined_object
				// The key just read is gone: another opener migrated
				// the table meanwhile.
				err = schemaError{err}
			}
			return fmt.Errorf("pgio: table %s has the record columns of weir before runs; adding run failed (grant ALTER on it once, or run the statement yourself): %w\n  statement: %s", s.c.qt, err, alter)
		}
	case len(got) == len(beforeRuns) && compareSchema(s.c.qt, beforeRuns, oldRecordPK, got, gotPK) == nil:
		// A record table of weir before runs and before jobs, that an
		// earlier weir gave job and epoch: it keeps its key (id).
		alter := fmt.Sprintf(`ALTER TABLE %s ADD COLUMN IF NOT EXISTS "run" BIGINT NOT NULL DEFAULT 0`, s.c.qt)
		if _, err := conn.Exec(ctx, alter); err != nil {
			return fmt.Errorf("pgio: adding the run column to table %s failed (grant ALTER on it once, or run the statement yourself): %w\n  statement: %s", s.c.qt, err, alter)
		}
	default:
		return s.checkSchema(got, gotPK)
	}
	// Cut and MaxEpoch look rows up by job and epoch.
	index := fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %s ON %s ("job", "epoch")`, quoteIdent(indexName(s.c.table, "_job_epoch")), s.c.qt)
	if _, err := conn.Exec(ctx, index); err != nil {
		return fmt.Errorf("pgio: index table %s: %w\n  statement: %s", s.c.qt, createRace(err), index)
	}
	if got, gotPK, _, err = tableColumns(ctx, conn, s.c.qt); err != nil {
		return fmt.Errorf("pgio: read the columns of table %s: %w", s.c.qt, err)
	}
	return s.checkSchema(got, gotPK)
}

// checkSchema compares a table with a record table, whose primary key is
// (job, run, id), or (id) in a table of older weir, and makes the insert
// statement for the key it has.
func (s *RecordSink) checkSchema(got [][2]string, gotPK []string) error {
	pk := []string{"job", "run", "id"}
	if slices.Equal(gotPK, oldRecordPK) {
		pk = oldRecordPK
	}
	if err := compareSchema(s.c.qt, recordColumns, pk, got, gotPK); err != nil {
		return err
	}
	s.insert = fmt.Sprintf(`INSERT INTO %s ("id", "reason", "record", "meta", "job", "epoch", "run") VALUES ($1::text, $2::text, $3::jsonb, $4::jsonb, $5::text, $6::bigint, $7::bigint) ON CONFLICT (%s) DO NOTHING`, s.c.qt, joinIdents(pk))
	return nil
}

// indexName is table's name with suffix, cut so that it fits an
// identifier.
func indexName(table, suffix string) string {
	b := []byte(table)
	for len(b)+len(suffix) > MaxIdentifierLen || !utf8.Valid(b) {
		b = b[:len(b)-1]
	}
	return string(b) + suffix
}

// Table returns the table name given to OpenRecords.
func (s *RecordSink) Table() string { return s.c.table }

// Pending returns the number of records written since the last successful
// Flush.
func (s *RecordSink) Pending() int { return len(s.recs) }

// Unavailable is Sink.Unavailable: safe to call from any goroutine.
func (s *RecordSink) Unavailable() bool { return s.c.failing.Load() }

// Record is a late record or dead letter for a RecordSink.
type Record struct {
	// ID identifies the record (its source position): a record whose id
	// the table holds already is not written again. It must not be empty.
	ID string
	// Reason says why the record is here (window_expired, a parse
	// error, ...).
	Reason string
	// Raw is the record as received; Meta is JSON metadata (the source,
	// offset, event time, watermark...).
	Raw, Meta []byte
}

// Write buffers records for the next Flush, as WriteRecord; the records
// before an invalid one are buffered.
func (s *RecordSink) Write(_ context.Context, recs []Record) error {
	for i := range recs {
		r := &recs[i]
		if err := s.WriteRecord(r.ID, r.Reason, r.Raw, r.Meta); err != nil {
			return err
		}
	}
	return nil
}

// Idempotent marks the sink as connector.Idempotent: it stores each id
// once.
func (s *RecordSink) Idempotent() {}

// The RecordSink is also connector.Transactional, with the epochs of its
// rows (Options.Job's rows, of run 0 unless SetEpoch says otherwise):
// PreCommit(n) flushes the records as epoch n, and later flushes are
// epoch n+1 until the next PreCommit; Recover(n) deletes the rows of
// epochs after n (Cut), so that a replay whose records differ (a late
// record classified otherwise) leaves no stale row. Epoch 0 (the end of
// the input) flushes as the epoch under way.

// PreCommit flushes the records written since the last flush as epoch
// (epoch 0: the epoch under way) and returns no state.
func (s *RecordSink) PreCommit(ctx context.Context, epoch int64) ([]byte, error) {
	if epoch > 0 {
		s.epoch = epoch
	}
	if err := s.Flush(ctx); err != nil {
		return nil, err
	}
	if epoch > 0 {
		s.epoch = epoch + 1
	}
	return nil, nil
}

// Commit does nothing: PreCommit committed the rows.
func (s *RecordSink) Commit(context.Context, int64) error { return nil }

// Abort drops the records not flushed yet.
func (s *RecordSink) Abort(context.Context) error {
	clear(s.recs)
	s.recs = s.recs[:0]
	return nil
}

// Recover deletes the job's rows of epochs after epoch (Cut); the next
// flushes are epoch+1.
func (s *RecordSink) Recover(ctx context.Context, epoch int64, _ []byte) error {
	if _, err := s.Cut(ctx, s.job, s.runID, epoch); err != nil {
		return err
	}
	s.epoch = epoch + 1
	return nil
}

// WriteRecord buffers one record for the next Flush; it copies what it
// keeps, so the caller may reuse the slices.
//
// id identifies the record: a record whose id the table holds already is
// not written again (it must not be empty). reason says why the record is here ("late", a parse error, ...); invalid
// UTF-8 and NUL bytes in it are replaced by U+FFFD. rec is the record as
// received: if it is JSON that jsonb can hold (see Column) it is stored as
// is; otherwise (a dead letter may well not be JSON) it is stored as a JSON
// string of its text, with invalid UTF-8 and NUL replaced by U+FFFD. meta is
// JSON metadata (the source, offset, event time, watermark...); it must be
// valid, or WriteRecord fails. An empty record or meta is stored as SQL
// NULL.
func (s *RecordSink) WriteRecord(id, reason string, rec, meta []byte) error {
	if s.c.closed {
		return ErrClosed
	}
	if id == "" {
		return fmt.Errorf("pgio: record without an id (reason %q)", reason)
	}
	r := struct{ rec, meta any }{}
	if len(meta) > 0 {
		if err := checkJSON(meta); err != nil {
			return fmt.Errorf("pgio: record meta: %w", err)
		}
		r.meta = string(meta)
	}
	if len(rec) > 0 {
		if checkJSON(rec) == nil {
			r.rec = string(rec)
		} else {
			b, err := json.Marshal(sanitizeText(string(rec)))
			if err != nil {
				return fmt.Errorf("pgio: record: %w", err) // unreachable: a string always marshals
			}
			r.rec = string(b)
		}
	}
	s.recs = append(s.recs, record{id: sanitizeText(id), reason: sanitizeText(reason), record: r.rec, meta: r.meta})
	return nil
}

// sanitizeText replaces invalid UTF-8 and NUL bytes, which Postgres text
// cannot hold, by U+FFFD.
func sanitizeText(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// SetEpoch sets the job, run and epoch of the rows of the next flushes
// (until the next SetEpoch); before it they have job "", run 0 and no
// epoch (NULL).
func (s *RecordSink) SetEpoch(job string, run, epoch int64) {
	s.job, s.runID, s.epoch = job, run, epoch
}

// Cut deletes the rows of job's run of epochs after epoch (rows of no
// epoch, of other runs and of other jobs stay) and returns how many it
// deleted. Records written and not yet flushed are kept.
func (s *RecordSink) Cut(ctx context.Context, job string, run, epoch int64) (int64, error) {
	var n int64
	err := s.c.do(ctx, "cut "+s.c.qt+" back to epoch "+strconv.FormatInt(epoch, 10), func(ctx context.Context, conn *pgx.Conn) error {
		tag, err := conn.Exec(ctx, `DELETE FROM `+s.c.qt+` WHERE "job" = $1 AND "run" = $2 AND "epoch" > $3`, job, run, epoch)
		n = tag.RowsAffected()
		return err
	})
	return n, err
}

// Reset deletes every row of job (a fresh start of the job that does not
// keep earlier runs) and returns how many; other jobs' rows stay.
func (s *RecordSink) Reset(ctx context.Context, job string) (int64, error) {
	return s.c.deleteJob(ctx, job)
}

// MaxEpoch returns the highest epoch of the rows of job's run (0 if none
// has one).
func (s *RecordSink) MaxEpoch(ctx context.Context, job string, run int64) (int64, error) {
	var n int64
	err := s.c.do(ctx, "read the epochs of "+s.c.qt, func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, `SELECT coalesce(max("epoch"), 0) FROM `+s.c.qt+` WHERE "job" = $1 AND "run" = $2`, job, run).Scan(&n)
	})
	return n, err
}

// MaxRun returns the highest run of job's rows (0 if none).
func (s *RecordSink) MaxRun(ctx context.Context, job string) (int64, error) {
	return s.c.maxRun(ctx, job)
}

// Flush commits every record written since the last successful Flush in one
// transaction, with the guarantees and retries of Sink.Flush, and stops
// when ctx is done like it.
func (s *RecordSink) Flush(ctx context.Context) error {
	if len(s.recs) == 0 && !s.c.closed {
		return nil
	}
	if err := s.c.do(ctx, fmt.Sprintf("flush %d records to %s", len(s.recs), s.c.qt), s.send); err != nil {
		return err
	}
	clear(s.recs)
	s.recs = s.recs[:0]
	return nil
}

func (s *RecordSink) send(ctx context.Context, conn *pgx.Conn) error {
	b := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(s.recs)+1)}
	b.BeginTx(pgx.TxOptions{})
	for _, r := range s.recs {
		b.Queue(s.insert, r.id, r.reason, r.record, r.meta, s.job, s.epoch, s.runID)
	}
	var skipped []string
	err := sendBatch(ctx, conn, b, len(s.recs), fmt.Sprintf("flush %d records to %s", len(s.recs), s.c.qt), func(i int) (string, string) {
		r := s.recs[i]
		desc := "id " + clipString(r.id) + ", reason " + clipString(r.reason)
		if r.record != nil {
			desc += ", record " + clipString(r.record.(string))
		}
		return desc, s.insert
	}, func(i int, rows int64) {
		if rows == 0 {
			skipped = append(skipped, s.recs[i].id)
		}
	})
	if err == nil && len(skipped) > 0 {
		// Committed: count them once, whatever attempts came before.
		s.skipped += int64(len(skipped))
		if s.c.opts.Logger != nil && !s.c.opts.ReplaysExpected {
			s.c.opts.Logger.Warn("pgio: records not stored: their ids are in the table already (a replay of what it holds, or other input under the same ids)",
				"table", s.c.table, "job", s.job, "records", len(skipped), "first_id", skipped[0])
		}
	}
	return err
}

// Skipped returns how many records flushes did not store because the
// table held their id (for the job) already.
func (s *RecordSink) Skipped() int64 { return s.skipped }

// Close drops the records written since the last successful Flush and
// closes the connection. It is idempotent and returns nil.
func (s *RecordSink) Close() error {
	if s.c.closed {
		return nil
	}
	if n := len(s.recs); n > 0 && s.c.opts.Logger != nil {
		s.c.opts.Logger.Warn("pgio: closing with records no checkpoint covers yet; not written now: a resume from the last checkpoint writes them again", "table", s.c.table, "records", n)
	}
	s.recs = nil
	s.c.close()
	return nil
}
