package pgio

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// RecordSink stores late records and dead letters in a Postgres table
// (id TEXT PRIMARY KEY, reason TEXT, record JSONB, meta JSONB, arrived_at
// TIMESTAMPTZ DEFAULT now(), epoch BIGINT) over one connection.
//
// Each record has a stable id chosen by the caller (weir uses its source
// position, such as a Kafka partition and offset). Records are buffered by
// WriteRecord and committed by Flush in one transaction, with the retries
// of Sink, as INSERT ... ON CONFLICT (id) DO NOTHING: a replay after a
// failure writes the same ids again and changes nothing, so the table holds
// every record exactly once, with the arrived_at of its first write.
//
// Each flush stamps its rows with the epoch set by SetEpoch, so a caller
// that commits a flush with its checkpoints can undo what a checkpoint
// never covered: after a crash between a flush and its checkpoint, Cut
// removes the rows of later epochs before the replay writes them again
// (the replay may judge a record differently: on time after all).
//
// A RecordSink is not safe for concurrent use.
type RecordSink struct {
	c      *client
	insert string
	recs   []record
	epoch  any // int64, or nil (SQL NULL) before SetEpoch
	closed bool
}

type record struct {
	id     string
	reason string
	record any // string (JSON text) or nil (SQL NULL)
	meta   any
}

// The record table's columns and primary key.
var recordColumns = [][2]string{
	{"id", "text"},
	{"reason", "text"},
	{"record", "jsonb"},
	{"meta", "jsonb"},
	{"arrived_at", "timestamp with time zone"},
	{"epoch", "bigint"},
}

// OpenRecords connects to the database of connString and opens, creating it
// if needed, the record table named table. ctx, connString, table and o are
// as for Open; an existing table must have the columns of a record table
// (in any order) with primary key (id); a table of the older layout (a
// bigint id) is refused, and one without the epoch column gets it.
func OpenRecords(ctx context.Context, connString, table string, o Options) (*RecordSink, error) {
	c, err := newClient(ctx, connString, table, o)
	if err != nil {
		return nil, err
	}
	s := &RecordSink{
		c:      c,
		insert: fmt.Sprintf(`INSERT INTO %s ("id", "reason", "record", "meta", "epoch") VALUES ($1::text, $2::text, $3::jsonb, $4::jsonb, $5::bigint) ON CONFLICT ("id") DO NOTHING`, c.qt),
	}
	if err := c.run(ctx, "open record table "+c.qt, s.setup); err != nil {
		c.closeConn()
		return nil, err
	}
	return s, nil
}

func (s *RecordSink) setup(ctx context.Context, conn *pgx.Conn) error {
	wantPK := []string{"id"}
	got, gotPK, exists, err := tableColumns(ctx, conn, s.c.qt)
	if err != nil {
		return fmt.Errorf("pgio: read the columns of table %s: %w", s.c.qt, err)
	}
	if !exists {
		create := fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s ("id" TEXT PRIMARY KEY, "reason" TEXT NOT NULL, "record" JSONB, "meta" JSONB, "arrived_at" TIMESTAMPTZ NOT NULL DEFAULT now(), "epoch" BIGINT)`, s.c.qt)
		if _, err := conn.Exec(ctx, create); err != nil {
			return fmt.Errorf("pgio: create table %s: %w\n  statement: %s", s.c.qt, createRace(err), create)
		}
		if got, gotPK, _, err = tableColumns(ctx, conn, s.c.qt); err != nil {
			return fmt.Errorf("pgio: read the columns of table %s: %w", s.c.qt, err)
		}
	} else if len(got) == len(recordColumns)-1 && !slices.ContainsFunc(got, func(c [2]string) bool { return c[0] == "epoch" }) {
		// A record table of weir before epochs: its rows keep a NULL
		// epoch, which no Cut removes.
		alter := fmt.Sprintf(`ALTER TABLE %s ADD COLUMN IF NOT EXISTS "epoch" BIGINT`, s.c.qt)
		if _, err := conn.Exec(ctx, alter); err != nil {
			return fmt.Errorf("pgio: add the epoch column to table %s: %w\n  statement: %s", s.c.qt, err, alter)
		}
		if got, gotPK, _, err = tableColumns(ctx, conn, s.c.qt); err != nil {
			return fmt.Errorf("pgio: read the columns of table %s: %w", s.c.qt, err)
		}
	}
	return compareSchema(s.c.qt, recordColumns, wantPK, got, gotPK)
}

// Table returns the table name given to OpenRecords.
func (s *RecordSink) Table() string { return s.c.table }

// Pending returns the number of records written since the last successful
// Flush.
func (s *RecordSink) Pending() int { return len(s.recs) }

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
	if s.closed {
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

// SetEpoch sets the epoch of the rows of the next flushes (until the next
// SetEpoch); before it they have none (NULL).
func (s *RecordSink) SetEpoch(epoch int64) { s.epoch = epoch }

// Cut deletes the rows of epochs after epoch (those of no epoch stay) and
// returns how many it deleted. Records written and not yet flushed are
// kept.
func (s *RecordSink) Cut(ctx context.Context, epoch int64) (int64, error) {
	if s.closed {
		return 0, ErrClosed
	}
	ctx, cancel := s.c.merge(ctx)
	defer cancel()
	var n int64
	err := s.c.run(ctx, "cut "+s.c.qt+" back to epoch "+strconv.FormatInt(epoch, 10), func(ctx context.Context, conn *pgx.Conn) error {
		tag, err := conn.Exec(ctx, `DELETE FROM `+s.c.qt+` WHERE "epoch" > $1`, epoch)
		n = tag.RowsAffected()
		return err
	})
	return n, err
}

// MaxEpoch returns the highest epoch of the table's rows (0 if none has
// one).
func (s *RecordSink) MaxEpoch(ctx context.Context) (int64, error) {
	if s.closed {
		return 0, ErrClosed
	}
	ctx, cancel := s.c.merge(ctx)
	defer cancel()
	var n int64
	err := s.c.run(ctx, "read the epochs of "+s.c.qt, func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, `SELECT coalesce(max("epoch"), 0) FROM `+s.c.qt).Scan(&n)
	})
	return n, err
}

// Flush commits every record written since the last successful Flush in one
// transaction, with the guarantees and retries of Sink.Flush.
func (s *RecordSink) Flush() error {
	return s.FlushContext(context.Background())
}

// FlushContext is Flush, also stopping when ctx is done, like
// Sink.FlushContext.
func (s *RecordSink) FlushContext(ctx context.Context) error {
	if s.closed {
		return ErrClosed
	}
	if len(s.recs) == 0 {
		return nil
	}
	ctx, cancel := s.c.merge(ctx)
	defer cancel()
	what := fmt.Sprintf("flush %d records to %s", len(s.recs), s.c.qt)
	if err := s.c.run(ctx, what, s.send); err != nil {
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
		b.Queue(s.insert, r.id, r.reason, r.record, r.meta, s.epoch)
	}
	return sendBatch(ctx, conn, b, len(s.recs), fmt.Sprintf("flush %d records to %s", len(s.recs), s.c.qt), func(i int) (string, string) {
		r := s.recs[i]
		desc := "id " + clipString(r.id) + ", reason " + clipString(r.reason)
		if r.record != nil {
			desc += ", record " + clipString(r.record.(string))
		}
		return desc, s.insert
	})
}

// Close drops the records written since the last successful Flush and
// closes the connection. It is idempotent and returns nil.
func (s *RecordSink) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if n := len(s.recs); n > 0 && s.c.opts.Logger != nil {
		s.c.opts.Logger.Warn("pgio: closing with unflushed records; they are dropped", "table", s.c.table, "records", n)
	}
	s.recs = nil
	s.c.closeConn()
	return nil
}
