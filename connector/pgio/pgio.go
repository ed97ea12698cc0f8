// Package pgio is an idempotent upsert sink that keeps the newest revision of
// every windowed result in a Postgres table, and an append-only sink of late
// or rejected records (dead letters) into another.
//
// # Results
//
// A window may fire several times (early, on time, then late), each time with
// its full updated result and the next pane index 0, 1, 2, ...; a session
// window absorbed by a merge is retracted. Sink stores, per (key, window), the
// revision with the highest pane and deletes retracted windows:
//
//   - a result (firing early, on_time or late) is
//     INSERT ... ON CONFLICT (job, keys..., window_start, window_end) DO
//     UPDATE ... WHERE (t.run, t.pane) <= (excluded.run, excluded.pane): the
//     stored row is only replaced by a revision whose (run, pane) is not
//     older (the pane guard), so a replayed older pane never overwrites a
//     newer one, the same pane again rewrites the same values, and a later
//     run's pane 0 replaces an earlier run's pane 5;
//   - a retraction is DELETE ... WHERE job, keys and window match AND
//     (run, pane) <= the retraction's, so a retraction never deletes a
//     newer revision.
//
// Replaying the same rows any number of times, flushed in any batch sizes,
// leaves the same table: each statement is idempotent and the statements of
// a (key, window) are applied in the order written. A retraction is a
// delete, not a tombstone: a revision older than a retraction that arrives
// after it is inserted again. A replay re-sends the retraction after it (the
// engine emits a window's revisions in pane order), so the final table is
// the same.
//
// The table has the job column (Options.Job: jobs may share a table; a
// sink writes and removes, Reset, its job's rows only), the key columns,
// then window_start, window_end, firing, run, pane and watermark, then the
// value columns, with PRIMARY KEY (job, keys..., window_start,
// window_end). Open creates it if it is missing; if it exists
// it must have the same columns with the same types (see Open). Keys and
// values arrive as JSON text and are stored in their column's Type
// (text, bigint, double precision, numeric or jsonb), so that the table
// answers plain SQL: SELECT sum(orders) ... WHERE user_id = 'user-001';
// window bounds, run, pane and watermark are bigint (etime.Time
// milliseconds; the global window is (etime.MinTime, etime.MaxTime), the
// int64 extremes) and firing and job are text.
//
// # Flush
//
// Write only validates and buffers a row in memory; the buffer grows until
// the next successful Flush. Flush sends every buffered row in one
// transaction (a pipelined pgx.Batch: one round trip for the rows, one for
// the commit). When Flush returns nil, every row written before it is
// committed. When it returns an error, the transaction was rolled back (or,
// if the connection failed during COMMIT, it is unknown whether it
// committed, which is harmless since writing is idempotent) and the rows
// stay buffered: calling Flush again sends them again. Close discards the
// buffer; the engine calls Flush at each checkpoint's pre-commit and replays
// from the last checkpoint after a failure.
//
// # Retries
//
// When Postgres is unavailable (connection refused or reset, the server
// shutting down or starting up, too many connections, no answer within
// Options.Timeout) or a transaction loses a race (serialization failure,
// deadlock, lock not available), Flush — and Open — reconnect and retry
// the whole batch, waiting Options.MinBackoff, then twice as long each time
// up to Options.MaxBackoff, logging each retry to Options.Logger with the
// table, the server's address and the operation. Every attempt (connect,
// statements, commit) has the deadline Options.Timeout (default 30s), so a
// stalled connection is noticed, logged as a stall, and replaced.
//
// Until a connection has succeeded once (a wrong port, a server not
// started), Open gives up after Options.ConnectRetryFor (default 2m) with
// an error naming the address. After that, by default they retry until the
// context given to Open (or to Flush) is cancelled or
// Options.Stopping is done: the job waits for the database, it does not
// fail; the caller blocks meanwhile, which is what holds a job's sources
// back. Options.RetryFor bounds the total time instead. Any other error (a
// syntax error, a constraint or type violation, a permission error) fails
// at once and names the statement and the row.
//
// # Records
//
// RecordSink stores late records and dead letters, with a reason and
// metadata, in a table keyed by (job, run, id), each once by the id its
// caller gives (see RecordSink). Its writes are buffered and committed by
// Flush like results, with the same retries; a replay after a failure
// writes the same ids again and changes nothing.
//
// The database should use the UTF8 encoding: text columns and jsonb
// strings are text in the database's encoding.
package pgio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/weirstream/weir/connector/internal/tablerow"
)

// The firing kinds of Row.Firing.
const (
	FiringEarly   = tablerow.FiringEarly
	FiringOnTime  = tablerow.FiringOnTime
	FiringLate    = tablerow.FiringLate
	FiringRetract = tablerow.FiringRetract
)

// MaxIdentifierLen is the longest table or column name, in bytes, that Open
// accepts: Postgres silently truncates longer identifiers (NAMEDATALEN-1).
const MaxIdentifierLen = tablerow.MaxIdentifierLen

// AppliedTable is the name of the table beside results table table in
// which a backfill (package backfill) records the ledger entries it
// applied to each window. Reset removes the job's rows there too.
func AppliedTable(table string) string { return tablerow.AppliedTable(table) }

// The defaults of Options.
const (
	DefaultMinBackoff      = 100 * time.Millisecond
	DefaultMaxBackoff      = 5 * time.Second
	DefaultTimeout         = 30 * time.Second
	DefaultConnectRetryFor = 2 * time.Minute
)

// The fixed columns between the key and the value columns.
var fixedColumns = tablerow.FixedColumns

// Column is one named value; Value is the value's JSON text (a JSON number,
// string, true/false, null, array or object).
//
// A value is stored as its column's Type says (see Type): keys compare as
// the column's values, so in a Text key column the string "1" and the
// number 1 are one key, in a JSONB one they differ.
//
// Write refuses a Value that is not valid JSON (including an empty one), that
// is not valid UTF-8, that Postgres text cannot hold (a \u0000 escape, an
// unpaired surrogate escape), a number beyond the range of Postgres
// numeric, or one its column's Type does not hold.
type Column = tablerow.Column

// Row is one result revision: the key columns (Keys, in the order given
// to Open), the window [Start, End) (the global window is (etime.MinTime,
// etime.MaxTime)), Firing ("early", "on_time", "late" or "retract"), the
// job's Run and the window's Pane (the table keeps a window's highest
// (Run, Pane)), the Watermark at firing and the value columns (Values, in
// the order given to Open; none for a retraction). ResultRows builds one
// from a window result.
type Row = tablerow.Row

// Options configures a Sink or a RecordSink. The zero value is usable.
type Options struct {
	// MinBackoff is the wait before the first retry; default
	// DefaultMinBackoff. Each further wait is twice as long, up to
	// MaxBackoff.
	MinBackoff time.Duration
	// MaxBackoff is the longest wait between two retries; default
	// DefaultMaxBackoff.
	MaxBackoff time.Duration
	// RetryFor bounds the time a Flush (or Open) spends retrying; after it
	// it returns the last error. 0 (the default) retries until the context
	// is cancelled or Stopping is done.
	RetryFor time.Duration
	// ConnectRetryFor bounds the time spent retrying until a connection
	// has succeeded once (a wrong host or port, a server not started): the
	// error then names the address. Default DefaultConnectRetryFor; a
	// smaller RetryFor bounds it too.
	ConnectRetryFor time.Duration
	// Timeout is the deadline of each attempt: connecting, each flush's
	// statements and its commit. An attempt without an answer in time (a
	// stalled connection: TCP open, no bytes) is logged as a stall and
	// retried on a new connection. Default DefaultTimeout.
	Timeout time.Duration
	// Stopping, if not nil, is done when the caller is stopping (Ctrl-C):
	// a Flush that is retrying gives up at once, ending its backoff wait
	// and cancelling an attempt made after a failure, and returns an
	// error. A Flush whose first attempt is under way (the server was not
	// known to be failing) lets it finish within Timeout, so a stop
	// while Postgres is healthy still commits.
	Stopping context.Context
	// Logger, if not nil, receives a warning for each retry and a message
	// when Postgres is available again.
	Logger *slog.Logger
	// Job is the job whose result rows a Sink writes (the job column);
	// default "". A RecordSink takes its job from SetEpoch.
	Job string
	// Declared, if not nil, gives a results Sink the table's own layout
	// (see Declared) instead of weir's.
	Declared *Declared
	// ReplaysExpected: the caller writes records again on purpose (a
	// group member writes a restored checkpoint's outputs again), so a
	// RecordSink does not warn of records it found stored (Skipped still
	// counts them).
	ReplaysExpected bool
}

// ErrClosed is returned by Write, WriteRecord and Flush after Close.
var ErrClosed = errors.New("pgio: sink is closed")

// Sink writes result rows to a Postgres table over one connection.
//
// A Sink is not safe for concurrent use: the caller serializes Write, Flush
// and Close. To stop a Flush that is waiting for the server, cancel its
// context (or the one given to Open).
type Sink struct {
	c        *client
	job      string // Options.Job
	keys     []ColumnDef
	vals     []ColumnDef
	keyNames []string
	valNames []string
	upsert   string // INSERT ... ON CONFLICT ... DO UPDATE ... WHERE pane guard
	del      string // DELETE ... WHERE key, window, pane guard

	ops  []op
	cols []string // the column texts of ops, nk or nk+nv per op; nullText is NULL
	buf  []byte   // a row's column texts while Write converts them
	lens []int    // their lengths (-1: NULL)
	// kinds has, per key column of type Text, bit 1 once it got a string
	// and bit 2 once it got another value; mixed is set once warned.
	kinds []uint8
	mixed bool
	// decl is the table's own layout (Options.Declared); nil: weir's.
	decl *declared
}

// op is one buffered row.
type op struct {
	firing                    string // "" for a retraction
	start, end, run, pane, wm int64
	col                       int // index of the row's first column in Sink.cols
}

// Open connects to the database of connString (a URL or keyword/value
// string, as pgx.ParseConfig reads it) and opens, creating it if needed, the
// result table named table, whose key columns are keys and value columns
// values, each of its Type.
//
// ctx bounds Open and, for the life of the sink, every Flush: cancel it to
// stop a Flush that is waiting for the server. While the server is
// unavailable Open retries like Flush (see Options).
//
// Every name is quoted, so any name is allowed except: an empty one, one
// longer than MaxIdentifierLen bytes, one that is not valid UTF-8 or holds a
// NUL byte, and, for key and value columns, one of the fixed columns
// job, window_start, window_end, firing, run, pane and watermark or two names that are
// equal ignoring case (Postgres itself tells "A" and "a" apart, but the
// tools that fold unquoted names to lower case would not). keyNames may be
// empty (a non-keyed stream); then a row is identified by its window alone.
// The table name is a single identifier resolved through the connection's
// search_path (set search_path in the connection string to choose a
// schema).
//
// If the table exists it must have the same columns (in any order) with the
// same types, and a primary key on the job, the keys, window_start and
// window_end; otherwise Open fails with an error listing every difference
// (a table of weir before runs lacks job and run: use another table or
// drop it).
//
// Open never alters an existing table. A table of weir before typed
// columns, whose keys and values are all jsonb, is refused with an error
// naming each column, its type and the type expected, and the fix: drop or
// rename the table and run the job again. Converting it in place (ALTER
// COLUMN ... TYPE ... USING) was not chosen: jsonb keeps numbers and
// objects in its own spelling (1e400 in full, members reordered), so the
// converted keys would not be the texts the job writes, and the same
// window would get a second row; the conversion also rewrites the whole
// table under an exclusive lock at a job's start, and other jobs sharing
// the table, of an older weir, would fail on it. A job's fresh start
// removes its rows anyway, and its results are written again from its
// input.
func Open(ctx context.Context, connString, table string, keys, values []ColumnDef, o Options) (*Sink, error) {
	s, err := newSink(ctx, connString, table, keys, values, o)
	if err != nil {
		return nil, err
	}
	setup := s.setup
	if s.decl != nil {
		setup = s.setupDeclared
	} else {
		s.buildSQL()
	}
	if err := s.c.run(ctx, "open table "+s.c.qt, setup); err != nil {
		s.c.closeConn()
		return nil, err
	}
	return s, nil
}

// CheckTable checks, without changing anything, that the result table
// named table either does not exist or has the layout Open requires for
// keys and values; it returns the error Open would fail with otherwise.
// Programs that read or write the table beside a Sink (a backfill) call
// it first, so that a table of another layout is refused as Open refuses
// it, not by the first statement that meets a column of another type. It
// connects once for the check, retrying as Open does (see Options).
func CheckTable(ctx context.Context, connString, table string, keys, values []ColumnDef, o Options) error {
	s, err := newSink(ctx, connString, table, keys, values, o)
	if err != nil {
		return err
	}
	defer s.c.close()
	return s.c.run(ctx, "check table "+s.c.qt, func(ctx context.Context, conn *pgx.Conn) error {
		got, gotPK, exists, err := tableColumns(ctx, conn, s.c.qt)
		if err != nil {
			return fmt.Errorf("pgio: read the columns of table %s: %w", s.c.qt, err)
		}
		if !exists {
			return nil
		}
		return s.compare(got, gotPK)
	})
}

// newSink validates Open's arguments and makes the sink, not connected.
func newSink(ctx context.Context, connString, table string, keys, values []ColumnDef, o Options) (*Sink, error) {
	c, err := newClient(ctx, connString, table, o)
	if err != nil {
		return nil, err
	}
	keyNames, valueNames := Names(keys), Names(values)
	if err := checkNames(keyNames, valueNames); err != nil {
		return nil, err
	}
	for _, d := range append(slices.Clone(keys), values...) {
		if d.Type > Numeric {
			return nil, fmt.Errorf("pgio: column %q has the unknown type %v; use one of the Type constants", d.Name, d.Type)
		}
	}
	s := &Sink{
		c:        c,
		job:      o.Job,
		keys:     slices.Clone(keys),
		vals:     slices.Clone(values),
		keyNames: keyNames,
		valNames: valueNames,
		kinds:    make([]uint8, len(keys)),
	}
	if o.Declared != nil {
		if s.decl, err = newDeclared(o.Declared, keys, values); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Names are the names of defs, in order.
func Names(defs []ColumnDef) []string {
	n := make([]string, len(defs))
	for i, d := range defs {
		n[i] = d.Name
	}
	return n
}

// checkNames validates the key and value column names.
func checkNames(keyNames, valueNames []string) error {
	return tablerow.CheckNames("pgio", keyNames, valueNames, tablerow.Reserved, strings.ToLower,
		func(field, name string) error { return checkIdent(field+" name", name) })
}

// columns lists the table's columns, with their types, in order.
func (s *Sink) columns() [][2]string {
	c := make([][2]string, 0, 1+len(s.keyNames)+len(fixedColumns)+len(s.valNames))
	c = append(c, [2]string{tablerow.JobColumn, "text"})
	for _, k := range s.keys {
		c = append(c, [2]string{k.Name, k.Type.String()})
	}
	c = append(c,
		[2]string{"window_start", "bigint"},
		[2]string{"window_end", "bigint"},
		[2]string{"firing", "text"},
		[2]string{"run", "bigint"},
		[2]string{"pane", "bigint"},
		[2]string{"watermark", "bigint"})
	for _, v := range s.vals {
		c = append(c, [2]string{v.Name, v.Type.String()})
	}
	return c
}

// primaryKey lists the primary key columns.
func (s *Sink) primaryKey() []string {
	return append(append([]string{tablerow.JobColumn}, s.keyNames...), "window_start", "window_end")
}

func (s *Sink) buildSQL() {
	t := s.c.qt
	cols := s.columns()
	nk := 1 + len(s.keyNames) // the job and the keys
	qcols := make([]string, len(cols))
	params := make([]string, len(cols))
	for i, c := range cols {
		qcols[i] = quoteIdent(c[0])
		params[i] = fmt.Sprintf("$%d::%s", i+1, c[1])
	}
	pk := strings.Join(qcols[:nk+2], ", ")

	// INSERT INTO t AS t (cols) VALUES ($1::text, $2::bigint, ...) ON CONFLICT (pk) DO
	// UPDATE SET firing = excluded.firing, ... WHERE t.pane <= excluded.pane
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT INTO %s AS t (%s) VALUES (%s) ON CONFLICT (%s) DO UPDATE SET ",
		t, strings.Join(qcols, ", "), strings.Join(params, ", "), pk)
	for i, c := range qcols[nk+2:] {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s = excluded.%s", c, c)
	}
	b.WriteString(` WHERE (t."run", t."pane") <= (excluded."run", excluded."pane")`)
	s.upsert = b.String()

	// DELETE FROM t AS t WHERE t.job = $1::text AND t.k1 = $2::text AND ... AND
	// t.window_start = $n::bigint AND t.window_end = $n+1::bigint AND
	// (t.run, t.pane) <= ($n+2::bigint, $n+3::bigint)
	b.Reset()
	fmt.Fprintf(&b, "DELETE FROM %s AS t WHERE ", t)
	for i, c := range qcols[:nk+2] {
		fmt.Fprintf(&b, "t.%s = %s AND ", c, params[i])
	}
	fmt.Fprintf(&b, `(t."run", t."pane") <= ($%d::bigint, $%d::bigint)`, nk+3, nk+4)
	s.del = b.String()
}

// setup creates the table if it is missing and checks its columns.
func (s *Sink) setup(ctx context.Context, conn *pgx.Conn) error {
	want, wantPK := s.columns(), s.primaryKey()
	got, gotPK, exists, err := tableColumns(ctx, conn, s.c.qt)
	if err != nil {
		return fmt.Errorf("pgio: read the columns of table %s: %w", s.c.qt, err)
	}
	if !exists {
		q := make([]string, len(want))
		for i, c := range want {
			q[i] = quoteIdent(c[0]) + " " + c[1] + " NOT NULL"
			if i >= 1+len(s.keyNames)+len(fixedColumns) {
				q[i] = quoteIdent(c[0]) + " " + c[1] // a null aggregate is SQL NULL in a typed column
			}
		}
		create := fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (%s, PRIMARY KEY (%s))", s.c.qt, strings.Join(q, ", "), joinIdents(wantPK))
		if _, err := conn.Exec(ctx, create); err != nil {
			return fmt.Errorf("pgio: create table %s: %w\n  statement: %s", s.c.qt, createRace(err), create)
		}
		if got, gotPK, _, err = tableColumns(ctx, conn, s.c.qt); err != nil {
			return fmt.Errorf("pgio: read the columns of table %s: %w", s.c.qt, err)
		}
	}
	return s.compare(got, gotPK)
}

// compare checks the columns and primary key of the existing table
// against the sink's.
func (s *Sink) compare(got [][2]string, gotPK []string) error {
	want := s.columns()
	if err := jsonbLayout(s.c.table, s.c.qt, want, got); err != nil {
		return err
	}
	err := compareSchema(s.c.qt, want, s.primaryKey(), got, gotPK)
	if err != nil && !slices.ContainsFunc(got, func(c [2]string) bool { return c[0] == tablerow.JobColumn }) {
		// A table of its own (made for a Flink job, say).
		return schemaError{fmt.Errorf("%w; or, to write the table's own columns as Flink's JDBC sink does (upserted by its primary key; weir backfill does not revise such a table), "+
			"set layout: declared with its columns (in SQL, 'weir.layout' = 'declared' in the table's WITH options)", err)}
	}
	return err
}

// jsonbLayout refuses a table of weir before typed columns: one with the
// columns expected, of the types expected except key and value columns
// that are jsonb where another type is expected (see Open for why it is
// not converted). It names each such column, its type and the type
// expected, and the fix. For any other table it returns nil
// (compareSchema describes it).
func jsonbLayout(table, qt string, want, got [][2]string) error {
	if len(got) != len(want) {
		return nil
	}
	gotType := make(map[string]string, len(got))
	for _, c := range got {
		gotType[c[0]] = c[1]
	}
	var diffs []string
	for i, c := range want {
		t, ok := gotType[c[0]]
		switch {
		case !ok:
			return nil
		case t == c[1]:
		case t != "jsonb" || i == 0 || slices.Contains(fixedColumns[:], c[0]):
			return nil
		default:
			diffs = append(diffs, fmt.Sprintf("column %s is jsonb, expected %s", quoteIdent(c[0]), c[1]))
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	return schemaError{fmt.Errorf("pgio: table %s has the layout of weir before typed result columns (keys and aggregates as jsonb):\n  - %s\n"+
		"weir does not convert it: drop it (DROP TABLE %s) or rename it (ALTER TABLE %s RENAME TO %s), or use another table name; "+
		"the job then creates the table with typed columns and writes its results into it again",
		qt, strings.Join(diffs, "\n  - "), qt, qt, quoteIdent(table+"_jsonb"))}
}

// Table returns the table name given to Open.
func (s *Sink) Table() string { return s.c.table }

// Reset removes the rows of the sink's job (a fresh start of the job that
// does not keep earlier runs), with the retries of Flush, and returns how
// many; other jobs' rows stay. Rows written and not flushed are dropped.
func (s *Sink) Reset(ctx context.Context) (int64, error) {
	if s.c.closed {
		return 0, ErrClosed
	}
	clear(s.cols)
	s.ops, s.cols = s.ops[:0], s.cols[:0]
	if s.decl != nil {
		return 0, nil // a declared table does not tell the job's rows
	}
	return s.c.deleteJob(ctx, s.job)
}

// MaxRun is the highest run among the rows of the sink's job (0: none);
// in a declared table, the highest in its run column (0: none, or no run
// column: see Runless).
func (s *Sink) MaxRun(ctx context.Context) (int64, error) {
	if s.decl != nil {
		run := s.decl.find(srcRun)
		if run < 0 {
			return 0, nil
		}
		var n int64
		col := quoteIdent(s.decl.cols[run].name)
		err := s.c.do(ctx, "read the runs in "+s.c.qt, func(ctx context.Context, conn *pgx.Conn) error {
			return conn.QueryRow(ctx, `SELECT coalesce(max(`+col+`), 0) FROM `+s.c.qt).Scan(&n)
		})
		return n, err
	}
	return s.c.maxRun(ctx, s.job)
}

// Runless reports whether the table keeps no run (a declared table
// without a run column), so that MaxRun cannot tell whether it holds a
// run's rows (connector.RunlessTable).
func (s *Sink) Runless() bool { return s.decl != nil && s.decl.find(srcRun) < 0 }

// Pending returns the number of rows written since the last successful
// Flush.
func (s *Sink) Pending() int { return len(s.ops) }

// Unavailable reports whether the sink's last attempt to reach Postgres
// failed with an error it retries, with no success since (the server is
// away, refusing or stalled). Unlike the other methods it is safe to call
// from any goroutine while another one flushes.
func (s *Sink) Unavailable() bool { return s.c.failing.Load() }

// Write validates r and buffers it for the next Flush. It does not touch the
// database. A result (early, on_time, late) will upsert the row unless the
// table holds a newer pane of the window; a retraction will delete the
// window's row unless it holds a newer pane. Write copies what it keeps of
// r, so the caller may reuse r's slices.
//
// An invalid row (wrong number or names of keys or values, unknown firing,
// a Value its column cannot hold, see Column and Type) returns an error and
// is not buffered; the rows before it are.
func (s *Sink) Write(_ context.Context, rows []Row) error {
	for i := range rows {
		if err := s.write(&rows[i]); err != nil {
			return err
		}
	}
	return nil
}

// Idempotent marks the sink as connector.Idempotent: a replay of the same
// rows leaves the same table.
func (s *Sink) Idempotent() {}

func (s *Sink) write(r *Row) error {
	if s.c.closed {
		return ErrClosed
	}
	firing, _, err := tablerow.Check("pgio", r, s.keyNames, s.valNames)
	if err != nil {
		return err
	}
	if firing == FiringRetract {
		firing = ""
	}
	// The row's column texts are converted into s.buf, then copied into
	// one string, whose substrings the columns are; lens holds each
	// column's length (-1: NULL).
	buf, lens := s.buf[:0], s.lens[:0]
	for i, c := range r.Keys {
		if c.Name != s.keyNames[i] {
			return fmt.Errorf("pgio: row key %d is %q, want %q (keys come in the order given to Open)", i+1, c.Name, s.keyNames[i])
		}
		n := len(buf)
		b, null, err := appendValue(buf, s.keys[i].Type, c.Value, true)
		if err != nil {
			return fmt.Errorf("pgio: key %q: %w", c.Name, err)
		}
		buf, lens = b, append(lens, colLen(len(b)-n, null))
	}
	if firing != "" {
		for i, c := range r.Values {
			if c.Name != s.valNames[i] {
				return fmt.Errorf("pgio: row value %d is %q, want %q (values come in the order given to Open)", i+1, c.Name, s.valNames[i])
			}
			n := len(buf)
			b, null, err := appendValue(buf, s.vals[i].Type, c.Value, false)
			if err != nil {
				return fmt.Errorf("pgio: value %q: %w", c.Name, err)
			}
			buf, lens = b, append(lens, colLen(len(b)-n, null))
		}
	}
	s.buf, s.lens = buf, lens
	s.noteKinds(r.Keys)

	text := string(buf)
	o := op{firing: firing, start: int64(r.Start), end: int64(r.End), run: r.Run, pane: r.Pane, wm: int64(r.Watermark), col: len(s.cols)}
	at := 0
	for _, n := range lens {
		if n < 0 {
			s.cols = append(s.cols, nullText)
			continue
		}
		s.cols = append(s.cols, text[at:at+n])
		at += n
	}
	s.ops = append(s.ops, o)
	return nil
}

// colLen is a converted column's entry in Sink.lens.
func colLen(n int, null bool) int {
	if null {
		return -1
	}
	return n
}

// noteKinds warns, once per sink, when a Text key column has got both a
// JSON string and another value: the two kinds share the column's texts,
// so "7" and 7 are one key there though the engine keeps them apart.
func (s *Sink) noteKinds(keys []Column) {
	if s.mixed {
		return
	}
	for i, c := range keys {
		if s.keys[i].Type != Text {
			continue
		}
		bit := uint8(2)
		if v := trimSpace(c.Value); v[0] == '"' {
			bit = 1
		}
		if s.kinds[i] |= bit; s.kinds[i] == 3 {
			s.mixed = true
			if s.c.opts.Logger == nil {
				return
			}
			s.c.opts.Logger.Warn("pgio: a text key column holds both strings and other JSON values; a string and a number of the same text (\"7\" and 7) are one key in it, and their windows share a row",
				"table", s.c.table, "column", c.Name, "value", string(c.Value))
			return
		}
	}
}

// Flush commits every row written since the last successful Flush in one
// transaction, retrying while the server is unavailable until the context
// given to Open is cancelled (or Options.RetryFor has passed). When it
// returns nil every row written before it is committed. When it returns an
// error the rows stay buffered, and the next Flush sends them again. With
// no buffered row it returns nil at once, without contacting the server.
// It also stops when ctx is done: then it returns an error that wraps
// ctx's error (context.Canceled or context.DeadlineExceeded, or the
// cause).
func (s *Sink) Flush(ctx context.Context) error {
	if s.c.closed {
		return ErrClosed
	}
	if len(s.ops) == 0 {
		return nil
	}
	what := fmt.Sprintf("flush %d rows to %s", len(s.ops), s.c.qt)
	if err := s.c.do(ctx, what, s.send); err != nil {
		return err
	}
	clear(s.cols) // drop the references to the texts
	s.ops, s.cols = s.ops[:0], s.cols[:0]
	return nil
}

// send applies the buffered rows in one transaction.
func (s *Sink) send(ctx context.Context, conn *pgx.Conn) error {
	nk, nv := len(s.keyNames), len(s.valNames)
	b := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(s.ops)+1)}
	b.BeginTx(pgx.TxOptions{})
	for _, o := range s.ops {
		if s.decl != nil {
			stmt := s.upsert
			if o.firing == "" {
				stmt = s.del
			}
			b.Queue(stmt, s.declaredArgs(o)...)
			continue
		}
		if o.firing == "" {
			args := make([]any, 0, nk+5)
			args = append(args, s.job)
			args = appendArgs(args, s.cols[o.col:o.col+nk])
			b.Queue(s.del, append(args, o.start, o.end, o.run, o.pane)...)
			continue
		}
		args := make([]any, 0, 1+nk+len(fixedColumns)+nv)
		args = append(args, s.job)
		args = appendArgs(args, s.cols[o.col:o.col+nk])
		args = append(args, o.start, o.end, o.firing, o.run, o.pane, o.wm)
		args = appendArgs(args, s.cols[o.col+nk:o.col+nk+nv])
		b.Queue(s.upsert, args...)
	}
	return sendBatch(ctx, conn, b, len(s.ops), fmt.Sprintf("flush %d rows to %s", len(s.ops), s.c.qt), func(i int) (string, string) {
		o := s.ops[i]
		stmt := s.upsert
		if o.firing == "" {
			stmt = s.del
		}
		return s.describe(o), stmt
	}, nil)
}

// appendArgs appends the arguments of column texts: nil (SQL NULL) for
// nullText.
func appendArgs(args []any, cols []string) []any {
	for _, c := range cols {
		if c == nullText {
			args = append(args, nil)
			continue
		}
		args = append(args, c)
	}
	return args
}

// sendBatch sends b, begun with BeginTx and holding n statements after the
// BEGIN, and commits. what prefixes errors; describe returns the row and the
// SQL of statement i, for the error of a statement the server refuses;
// affected, if not nil, is told how many rows each statement changed.
func sendBatch(ctx context.Context, conn *pgx.Conn, b *pgx.Batch, n int, what string, describe func(i int) (row, stmt string), affected func(i int, rows int64)) error {
	br := conn.SendBatch(ctx, b)
	tx := br.Tx()
	fail := func(err error) error {
		_ = br.Close()
		_ = tx.Rollback(ctx) // if it fails, the connection is not idle and is closed
		return err
	}
	if _, err := br.Exec(); err != nil {
		// The BEGIN, or preparing the batch's statements, failed.
		var prep pgx.ErrPreprocessingBatch
		if !transient(err) && errors.As(err, &prep) && prep.SQL() != "" {
			return fail(fmt.Errorf("pgio: %s: %w\n  statement: %s", what, err, prep.SQL()))
		}
		return fail(fmt.Errorf("pgio: %s: %w", what, err))
	}
	for i := range n {
		tag, err := br.Exec()
		if err == nil && affected != nil {
			affected(i, tag.RowsAffected())
		}
		if err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && !transient(err) {
				row, stmt := describe(i)
				return fail(fmt.Errorf("pgio: %s: the server refused row %d of the batch (%s): %w\n  statement: %s",
					what, i+1, row, err, stmt))
			}
			return fail(fmt.Errorf("pgio: %s: %w", what, err))
		}
	}
	if err := br.Close(); err != nil {
		return fail(fmt.Errorf("pgio: %s: %w", what, err))
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgio: %s: commit: %w", what, err)
	}
	return nil
}

// describe renders a buffered row for an error message.
func (s *Sink) describe(o op) string {
	var b strings.Builder
	b.WriteString("keys (")
	for i, k := range s.keyNames {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(clipString(s.cols[o.col+i]))
	}
	fmt.Fprintf(&b, "), window [%d, %d), ", o.start, o.end)
	if o.firing == "" {
		fmt.Fprintf(&b, "retract run %d pane %d", o.run, o.pane)
		return b.String()
	}
	fmt.Fprintf(&b, "firing %s, run %d, pane %d, watermark %d, values (", o.firing, o.run, o.pane, o.wm)
	for i, v := range s.valNames {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(v)
		b.WriteByte('=')
		b.WriteString(clipString(s.cols[o.col+len(s.keyNames)+i]))
	}
	b.WriteByte(')')
	return b.String()
}

// clipString is a column text for a message, cut to 64 bytes; NULL for
// nullText.
func clipString(s string) string {
	if s == nullText {
		return "NULL"
	}
	const max = 64
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}

// Discard drops the rows written since the last successful Flush, for a
// writer that will write them again (an interrupted replay of committed
// rows): Close then has nothing to warn about.
func (s *Sink) Discard() {
	clear(s.ops)
	s.ops = s.ops[:0]
}

// Close drops the rows written since the last successful Flush (the engine
// flushes before it closes; a failed job replays from its last checkpoint)
// and closes the connection. It is idempotent and returns nil.
func (s *Sink) Close() error {
	if s.c.closed {
		return nil
	}
	if n := len(s.ops); n > 0 && s.c.opts.Logger != nil {
		s.c.opts.Logger.Warn("pgio: closing with rows no checkpoint covers yet; not written now: a resume from the last checkpoint writes them again", "table", s.c.table, "rows", n)
	}
	s.ops, s.cols = nil, nil
	s.c.close()
	return nil
}
