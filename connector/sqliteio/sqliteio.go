// Package sqliteio is an idempotent upsert sink that keeps the newest
// revision of every windowed result in a SQLite table.
//
// A window may fire several times (early, on time, then late), each time with
// its full updated result and the next pane index 0, 1, 2, ...; a session
// window absorbed by a merge is retracted; a later run of the job starts
// again at pane 0. The sink stores, per (job, key, window), the revision
// with the highest (run, pane) and deletes retracted windows:
//
//   - a result is an INSERT ... ON CONFLICT DO UPDATE that only replaces the
//     stored row when the incoming (run, pane) is not older than the stored
//     one, so a replayed older pane never overwrites a newer one, and a
//     later run's pane 0 replaces an earlier run's pane 5;
//   - a retraction is a DELETE of the row whose (run, pane) is not newer
//     than the retraction's, so a retraction never deletes a newer revision.
//
// Replaying the same stream of rows any number of times, in any batch size,
// leaves the same table. A retraction is a delete, not a tombstone: a revision
// older than a retraction that arrives after it is inserted again. Replay
// re-sends the retraction after it (the engine emits a window's results in
// pane order), so the final table is the same.
//
// The table has the job column (Options.Job: jobs may share a table), the
// key columns, then window_start, window_end, firing, run, pane and
// watermark, then the value columns, with PRIMARY KEY (job, keys...,
// window_start, window_end). A sink writes and removes (Reset) the rows of
// its job only. Keys and values arrive as JSON text and are
// stored as SQLite values (see Column). The global window is stored as
// (etime.MinTime, etime.MaxTime), the int64 extremes.
package sqliteio

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/internal/tablerow"
	"github.com/weirstream/weir/internal/jsonnum"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// BusyTimeoutMillis is how long a statement waits for a lock held by another
// connection to the database (PRAGMA busy_timeout) before failing with
// SQLITE_BUSY.
const BusyTimeoutMillis = 5000

// The firing kinds of Row.Firing.
const (
	FiringEarly   = tablerow.FiringEarly
	FiringOnTime  = tablerow.FiringOnTime
	FiringLate    = tablerow.FiringLate
	FiringRetract = tablerow.FiringRetract
)

// The fixed columns between the key and the value columns.
var fixedColumns = tablerow.FixedColumns

// The firing strings boxed once, so binding them does not allocate.
var (
	boxedEarly  any = FiringEarly
	boxedOnTime any = FiringOnTime
	boxedLate   any = FiringLate
)

// Column is one named value; Value is the value's JSON text (a JSON number,
// string, true/false, null, array or object).
//
// The value is stored as: an integer number (no fraction, no exponent) that
// fits in an int64 as INTEGER; any other number that a float64 holds exactly
// (its digits are a float64's shortest text, as strconv writes it) as REAL;
// any other number (an integer beyond int64, a number beyond float64's
// precision or range) as a BLOB holding its canonical JSON text (see
// internal/jsonnum: 9223372036854775809.0 is 9223372036854775809, 10e399 is
// 1e+400); a string as TEXT holding the decoded string; true/false as
// INTEGER 1/0; null as NULL; an array or object as TEXT holding its compact
// JSON (object members keep their order, so {"a":1,"b":2} and {"b":2,"a":1}
// are different keys: weir's spec writes keys canonically, members sorted).
// Whitespace around the value is ignored. Invalid JSON, including an empty
// Value, makes Write fail.
//
// Keys compare by SQLite value, and no two numbers share one: the string "1"
// and the number 1 are different keys, the numbers 1 and 1.0 the same key,
// 9223372036854775808 (REAL) and 9223372036854775809 (BLOB) different keys,
// as are 1e400 and 1e500, and the BLOB number 9223372036854775809 and the
// TEXT string "9223372036854775809". A key must not be null: SQLite treats
// NULLs in a primary key as distinct, so a null key could not be upserted
// idempotently.
type Column = tablerow.Column

// Row is one result revision: the key columns (Keys, in the order given
// to Open), the window [Start, End) (the global window is (etime.MinTime,
// etime.MaxTime)), Firing ("early", "on_time", "late" or "retract"), the
// job's Run and the window's Pane (the table keeps a window's highest
// (Run, Pane)), the Watermark at firing and the value columns (Values, in
// the order given to Open; none for a retraction). ResultRows builds one
// from a window result.
type Row = tablerow.Row

// Options configures a Sink. The zero value is usable.
type Options struct {
	Table     string // default "results"
	BatchRows int    // rows per transaction, default 1000
	// Job is the job whose rows the sink writes (the job column);
	// default "".
	Job string
}

// DefaultTable and DefaultBatchRows are the defaults of Options.
const (
	DefaultTable     = "results"
	DefaultBatchRows = 1000
)

// Sink writes rows to a SQLite table.
//
// A Sink is not safe for concurrent use: the caller serializes Write, Flush
// and Close. While a batch is open the sink holds the database's write lock,
// so other writers to the same file wait (up to BusyTimeoutMillis) until the
// batch commits; readers in other connections see the table as of the last
// commit.
type Sink struct {
	path      string
	table     string
	job       string
	keyNames  []string
	valNames  []string
	batchRows int

	db     *sql.DB
	upsert *sql.Stmt // prepared at Open on the only connection
	del    *sql.Stmt

	tx    *sql.Tx
	txUp  *sql.Stmt
	txDel *sql.Stmt
	n     int // rows in the open transaction

	args   []any
	buf    bytes.Buffer // compact JSON of arrays and objects
	closed bool
}

// Open opens (creating if needed) the SQLite database at path and the table
// o.Table in it, whose key columns are keyNames and value columns valueNames.
//
// Names are quoted, so any name is allowed except an empty one, one holding a
// NUL byte, a duplicate (SQLite compares names case-insensitively, ASCII
// only), or one of the fixed columns job, window_start, window_end, firing,
// run, pane and watermark. keyNames may be empty (a non-keyed stream); then a table row
// is identified by its window alone.
//
// If the table already exists it must have exactly the expected columns and
// primary key; otherwise Open fails with an error listing both. Open sets
// journal_mode=WAL, synchronous=FULL and busy_timeout, and uses a single
// connection.
func Open(path string, keyNames, valueNames []string, o Options) (*Sink, error) {
	table := o.Table
	if table == "" {
		table = DefaultTable
	}
	if strings.IndexByte(table, 0) >= 0 {
		return nil, fmt.Errorf("sqliteio: table name %q contains a NUL byte; choose another table name", table)
	}
	if dir := filepath.Dir(path); path != "" && !strings.HasPrefix(path, "file:") {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("sqliteio: the directory %s of %s does not exist; create it first", dir, path)
		}
	}
	batch := o.BatchRows
	if batch < 0 {
		return nil, fmt.Errorf("sqliteio: Options.BatchRows is %d; use a positive number of rows per transaction, or 0 for the default %d", batch, DefaultBatchRows)
	}
	if batch == 0 {
		batch = DefaultBatchRows
	}
	if err := checkNames(keyNames, valueNames); err != nil {
		return nil, err
	}

	db, err := sql.Open("sqlite", DSN(path))
	if err != nil {
		return nil, fmt.Errorf("sqliteio: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)

	s := &Sink{
		path:      path,
		table:     table,
		job:       o.Job,
		keyNames:  append([]string(nil), keyNames...),
		valNames:  append([]string(nil), valueNames...),
		batchRows: batch,
		db:        db,
		args:      make([]any, 0, 1+len(keyNames)+len(fixedColumns)+len(valueNames)),
	}
	if err := s.setup(); err != nil {
		s.closeDB()
		return nil, err
	}
	return s, nil
}

// DSN is the modernc.org/sqlite data source name the Sink opens path
// with: a file: URI (so a '?' or '#' in the path is escaped, not taken
// for the query), a busy timeout, synchronous=FULL and
// immediate transactions (a writer takes the lock when it begins, so
// two writers wait for each other instead of failing at their first
// write). Programs that write beside a Sink (a backfill) open the file
// with it too.
func DSN(path string) string {
	p := filepath.ToSlash(path)
	var b strings.Builder
	b.WriteString("file:")
	switch {
	case filepath.VolumeName(path) != "":
		b.WriteString("///") // file:///C:/dir/x.db
	case strings.HasPrefix(p, "/"):
		b.WriteString("//") // an empty authority, so "//x" is not a host
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '%', '?', '#':
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.Itoa(BusyTimeoutMillis)+")")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_txlock", "immediate")
	b.WriteByte('?')
	b.WriteString(q.Encode())
	return b.String()
}

func (s *Sink) setup() error {
	var mode string
	if err := s.db.QueryRow("PRAGMA journal_mode=WAL").Scan(&mode); err != nil {
		return fmt.Errorf("sqliteio: open %s: set journal_mode=WAL: %w", s.path, err)
	}
	if mode = strings.ToLower(mode); mode != "wal" && mode != "memory" {
		return fmt.Errorf("sqliteio: open %s: journal_mode is %q after setting WAL; the file system may not support WAL", s.path, mode)
	}

	t := quote(s.table)
	cols := s.columns()
	qcols := make([]string, len(cols))
	marks := make([]string, len(cols))
	for i, c := range cols {
		qcols[i] = quote(c)
		marks[i] = "?"
	}
	pk := qcols[:1+len(s.keyNames)+2] // the job, the keys, window_start and window_end

	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS ")
	b.WriteString(t)
	b.WriteString(` ("job" TEXT NOT NULL, `)
	for _, k := range s.keyNames {
		b.WriteString(quote(k))
		b.WriteString(", ")
	}
	b.WriteString(`"window_start" INTEGER NOT NULL, "window_end" INTEGER NOT NULL, "firing" TEXT NOT NULL, "run" INTEGER NOT NULL, "pane" INTEGER NOT NULL, "watermark" INTEGER NOT NULL`)
	for _, v := range s.valNames {
		b.WriteString(", ")
		b.WriteString(quote(v))
	}
	b.WriteString(", PRIMARY KEY (")
	b.WriteString(strings.Join(pk, ", "))
	b.WriteString("))")
	if _, err := s.db.Exec(b.String()); err != nil {
		return fmt.Errorf("sqliteio: create table %s in %s: %w", t, s.path, err)
	}
	if err := checkSchema(s.db, s.path, s.table, cols, 1+len(s.keyNames)); err != nil {
		return err
	}

	// INSERT INTO t (cols) VALUES (?...) ON CONFLICT (pk) DO UPDATE SET
	// firing=excluded.firing, ... WHERE (excluded.run, excluded.pane) >=
	// (t.run, t.pane)
	b.Reset()
	fmt.Fprintf(&b, "INSERT INTO %s (%s) VALUES (%s) ON CONFLICT (%s) DO UPDATE SET ",
		t, strings.Join(qcols, ", "), strings.Join(marks, ", "), strings.Join(pk, ", "))
	for i, c := range qcols[len(pk):] {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s = excluded.%s", c, c)
	}
	fmt.Fprintf(&b, ` WHERE excluded."run" > %[1]s."run" OR excluded."run" = %[1]s."run" AND excluded."pane" >= %[1]s."pane"`, t)
	up, err := s.db.Prepare(b.String())
	if err != nil {
		return fmt.Errorf("sqliteio: prepare upsert into %s: %w", t, err)
	}
	s.upsert = up

	// DELETE FROM t WHERE job = ? AND k1 = ? AND ... AND window_start = ?
	// AND window_end = ? AND (run < ? OR run = ? AND pane <= ?)
	b.Reset()
	fmt.Fprintf(&b, "DELETE FROM %s WHERE ", t)
	for _, c := range pk {
		fmt.Fprintf(&b, "%s = ? AND ", c)
	}
	b.WriteString(`("run" < ? OR "run" = ? AND "pane" <= ?)`)
	del, err := s.db.Prepare(b.String())
	if err != nil {
		return fmt.Errorf("sqliteio: prepare delete from %s: %w", t, err)
	}
	s.del = del
	return nil
}

// columns lists the table's columns in order.
func (s *Sink) columns() []string {
	c := make([]string, 0, 1+len(s.keyNames)+len(fixedColumns)+len(s.valNames))
	c = append(c, tablerow.JobColumn)
	c = append(c, s.keyNames...)
	c = append(c, fixedColumns[:]...)
	return append(c, s.valNames...)
}

// CheckTable checks, without changing anything, that the result table
// named table (default DefaultTable) in db, the database at path (named
// in messages), either does not exist or has the layout Open requires
// for keyNames and valueNames; it returns the error Open would fail with
// otherwise. Programs that read or write the table beside a Sink (a
// backfill) call it first, so that a table of another layout is refused
// as Open refuses it: SQLite would read a double-quoted name that is no
// column as a string.
func CheckTable(db *sql.DB, path, table string, keyNames, valueNames []string) error {
	want := append(append(append([]string{tablerow.JobColumn}, keyNames...), fixedColumns[:]...), valueNames...)
	return checkSchema(db, path, cmp.Or(table, DefaultTable), want, 1+len(keyNames))
}

// checkSchema compares the columns and primary key of table in db (the
// database at path) with want, whose first nk are the job and the keys;
// a table that is not there is no error.
func checkSchema(db *sql.DB, path, table string, want []string, nk int) error {
	rows, err := db.Query("SELECT name, pk FROM pragma_table_info(?) ORDER BY cid", table)
	if err != nil {
		return fmt.Errorf("sqliteio: read the columns of table %s: %w", quote(table), err)
	}
	defer rows.Close()
	var found []string
	var foundPK []int
	for rows.Next() {
		var name string
		var pk int
		if err := rows.Scan(&name, &pk); err != nil {
			return fmt.Errorf("sqliteio: read the columns of table %s: %w", quote(table), err)
		}
		found = append(found, name)
		foundPK = append(foundPK, pk)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqliteio: read the columns of table %s: %w", quote(table), err)
	}
	if len(found) == 0 {
		return nil
	}
	same := len(found) == len(want)
	for i := 0; same && i < len(want); i++ {
		pk := 0
		if i < nk+2 {
			pk = i + 1
		}
		same = foldEqual(found[i], want[i]) && foundPK[i] == pk
	}
	if same {
		return nil
	}
	gotPK := make([]string, 0, nk+2)
	for p := 1; p <= len(found); p++ {
		for i, x := range foundPK {
			if x == p {
				gotPK = append(gotPK, found[i])
			}
		}
	}
	return layoutError{fmt.Errorf("sqliteio: table %s in %s exists with other columns:\n"+
		"  expected columns (%s), primary key (%s)\n"+
		"  found    columns (%s), primary key (%s)\n"+
		"name another table (a job spec's sinks.results.table; Options.Table in Go), or, if its rows are no longer needed, drop it%s",
		quote(table), path,
		strings.Join(want, ", "), strings.Join(want[:nk+2], ", "),
		strings.Join(found, ", "), strings.Join(gotPK, ", "), oldLayout(found))}
}

// layoutError is a table whose columns are not the ones the sink makes
// (connector.ErrTableLayout).
type layoutError struct{ err error }

func (e layoutError) Error() string        { return e.err.Error() }
func (e layoutError) Unwrap() error        { return e.err }
func (e layoutError) Is(target error) bool { return target == connector.ErrTableLayout }

// oldLayout explains a table without the job and run columns.
func oldLayout(found []string) string {
	for _, c := range found {
		if foldEqual(c, "run") {
			return ""
		}
	}
	return " (a table of weir before runs lacks job and run)"
}

// checkNames validates the user-supplied column names.
func checkNames(keyNames, valueNames []string) error {
	return tablerow.CheckNames("sqliteio", keyNames, valueNames, tablerow.Reserved, foldASCII, func(field, name string) error {
		if name == "" {
			return fmt.Errorf("sqliteio: %s has an empty name; give every key and value column a name", field)
		}
		if strings.IndexByte(name, 0) >= 0 {
			return fmt.Errorf("sqliteio: %s (%q) contains a NUL byte; remove it from the name", field, name)
		}
		return nil
	})
}

// quote quotes a SQL identifier.
func quote(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// foldASCII lower-cases ASCII letters, as SQLite does when it compares
// identifiers.
func foldASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; 'A' <= c && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

func foldEqual(a, b string) bool { return foldASCII(a) == foldASCII(b) }

// Reset removes the rows of the sink's job (a fresh start of the job
// that does not keep earlier runs) and returns how many; other jobs' rows
// stay. It commits an open transaction first.
func (s *Sink) Reset() (int64, error) {
	if err := s.flush(); err != nil {
		return 0, err
	}
	// In one transaction with the backfill's record of what it applied
	// to the job's rows, which names revisions that are gone (an applied
	// table of weir before runs has no job column: left).
	tx, err := s.db.Begin()
	if err != nil {
		return 0, fmt.Errorf("sqliteio: remove the rows of job %q from %s: %w", s.job, quote(s.table), err)
	}
	defer tx.Rollback()
	res, err := tx.Exec(fmt.Sprintf(`DELETE FROM %s WHERE "job" = ?`, quote(s.table)), s.job)
	if err != nil {
		return 0, fmt.Errorf("sqliteio: remove the rows of job %q from %s: %w", s.job, quote(s.table), err)
	}
	applied := tablerow.AppliedTable(s.table)
	var hasJob int
	if err := tx.QueryRow(`SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = 'job'`, applied).Scan(&hasJob); err != nil {
		return 0, fmt.Errorf("sqliteio: look for %s: %w", quote(applied), err)
	}
	if hasJob > 0 {
		if _, err := tx.Exec(fmt.Sprintf(`DELETE FROM %s WHERE job = ?`, quote(applied)), s.job); err != nil {
			return 0, fmt.Errorf("sqliteio: remove the backfill records of job %q from %s: %w", s.job, quote(applied), err)
		}
	}
	n, _ := res.RowsAffected()
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("sqliteio: remove the rows of job %q from %s: %w", s.job, quote(s.table), err)
	}
	return n, nil
}

// MaxRun is the highest run among the rows of the sink's job (0: none).
// It commits an open transaction first (the sink has one connection).
func (s *Sink) MaxRun() (int64, error) {
	if err := s.flush(); err != nil {
		return 0, err
	}
	var n int64
	err := s.db.QueryRow(fmt.Sprintf(`SELECT COALESCE(MAX("run"), 0) FROM %s WHERE "job" = ?`, quote(s.table)), s.job).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("sqliteio: read the runs of job %q in %s: %w", s.job, quote(s.table), err)
	}
	return n, nil
}

// Path returns the database path given to Open.
func (s *Sink) Path() string { return s.path }

// ErrClosed is returned by Write and Flush after Close.
var ErrClosed = errors.New("sqliteio: sink is closed")

// Write applies rows in order in the open transaction, beginning one if
// needed, and commits the transaction whenever it holds Options.BatchRows
// rows. A result
// (early, on_time, late) upserts the row unless the table holds a newer
// (run, pane) of the window; a retraction deletes the window's row unless
// it holds a newer (run, pane).
//
// An invalid row (wrong number or names of keys or values, unknown firing,
// invalid JSON, a null key) returns an error and changes nothing. If SQLite
// fails, the open transaction is rolled back: every row written since the
// last successful commit is lost and must be written again (writing is
// idempotent, so replaying from an earlier point is safe). Rows before the
// invalid one are applied.
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
	if s.closed {
		return ErrClosed
	}
	f, _, err := tablerow.Check("sqliteio", r, s.keyNames, s.valNames)
	if err != nil {
		return err
	}
	var firing any // nil for a retraction
	switch f {
	case FiringEarly:
		firing = boxedEarly
	case FiringOnTime:
		firing = boxedOnTime
	case FiringLate:
		firing = boxedLate
	}

	args := append(s.args[:0], s.job)
	for i, c := range r.Keys {
		if c.Name != s.keyNames[i] {
			return fmt.Errorf("sqliteio: row key %d is %q, want %q (keys come in the order given to Open)", i+1, c.Name, s.keyNames[i])
		}
		v, err := s.value(c.Value)
		if err != nil {
			return fmt.Errorf("sqliteio: key %q: %w", c.Name, err)
		}
		if v == nil {
			return fmt.Errorf("sqliteio: key %q is null; SQLite treats NULLs in a primary key as distinct, so a null key cannot be upserted idempotently: map null to a non-null value before the sink", c.Name)
		}
		args = append(args, v)
	}
	args = append(args, int64(r.Start), int64(r.End))
	if firing == nil { // retract
		args = append(args, r.Run, r.Run, r.Pane)
	} else {
		args = append(args, firing, r.Run, r.Pane, int64(r.Watermark))
		for i, c := range r.Values {
			if c.Name != s.valNames[i] {
				return fmt.Errorf("sqliteio: row value %d is %q, want %q (values come in the order given to Open)", i+1, c.Name, s.valNames[i])
			}
			v, err := s.value(c.Value)
			if err != nil {
				return fmt.Errorf("sqliteio: value %q: %w", c.Name, err)
			}
			args = append(args, v)
		}
	}
	s.args = args

	if s.tx == nil {
		if err := s.begin(); err != nil {
			return err
		}
	}
	stmt := s.txUp
	if firing == nil {
		stmt = s.txDel
	}
	_, err = stmt.Exec(args...)
	clear(args) // drop references to the row's strings
	if err != nil {
		s.rollback()
		return fmt.Errorf("sqliteio: write to %s (the uncommitted batch was rolled back): %w", quote(s.table), err)
	}
	s.n++
	if s.n >= s.batchRows {
		return s.commit()
	}
	return nil
}

func (s *Sink) begin() error {
	tx, err := s.db.Begin()
	if err != nil {
		return fmt.Errorf("sqliteio: begin a transaction on %s: %w", s.path, err)
	}
	s.tx = tx
	s.txUp = tx.Stmt(s.upsert) // reuses the statement prepared on the connection
	s.txDel = tx.Stmt(s.del)
	s.n = 0
	return nil
}

func (s *Sink) commit() error {
	tx := s.tx
	s.tx, s.txUp, s.txDel, s.n = nil, nil, nil, 0
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqliteio: commit to %s (the batch was rolled back): %w", s.path, err)
	}
	return nil
}

func (s *Sink) rollback() {
	if s.tx != nil {
		_ = s.tx.Rollback()
		s.tx, s.txUp, s.txDel, s.n = nil, nil, nil, 0
	}
}

// Flush commits the open transaction, if any. When it returns nil every row
// written so far is durable (synchronous=FULL).
func (s *Sink) Flush(context.Context) error { return s.flush() }

func (s *Sink) flush() error {
	if s.closed {
		return ErrClosed
	}
	if s.tx == nil {
		return nil
	}
	return s.commit()
}

// Close flushes and closes the database. It is idempotent: later calls
// return nil.
func (s *Sink) Close() error {
	if s.closed {
		return nil
	}
	err := s.flush() // it commits or, failing, rolls back any transaction
	s.closed = true
	if cerr := s.closeDB(); err == nil {
		err = cerr
	}
	return err
}

func (s *Sink) closeDB() error {
	if s.upsert != nil {
		_ = s.upsert.Close()
	}
	if s.del != nil {
		_ = s.del.Close()
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("sqliteio: close %s: %w", s.path, err)
	}
	return nil
}

// value converts JSON text to the SQLite value bound for it (see Column).
func (s *Sink) value(b []byte) (any, error) { return jsonValue(b, &s.buf) }

// Value converts a JSON value to the SQLite value a Sink stores for it:
// null as NULL, booleans as 1 and 0, numbers as INTEGER, REAL or (beyond
// both) a BLOB of their canonical text, strings as TEXT, arrays and
// objects as their compact JSON text (see Column). Readers that
// look rows up or write them beside a Sink (a backfill) use it, so that
// they compare and store exactly as the sink does.
func Value(b []byte) (any, error) {
	var buf bytes.Buffer
	return jsonValue(b, &buf)
}

func jsonValue(b []byte, buf *bytes.Buffer) (any, error) {
	b = trimSpace(b)
	if len(b) == 0 {
		return nil, errors.New("invalid JSON: empty value")
	}
	switch c := b[0]; {
	case c == 'n':
		if string(b) == "null" {
			return nil, nil
		}
	case c == 't':
		if string(b) == "true" {
			return int64(1), nil
		}
	case c == 'f':
		if string(b) == "false" {
			return int64(0), nil
		}
	case c == '"':
		if str, ok := simpleString(b); ok {
			return str, nil
		}
		var str string
		if err := json.Unmarshal(b, &str); err != nil {
			return nil, invalid(b, err)
		}
		return str, nil
	case c == '[' || c == '{':
		buf.Reset()
		if err := json.Compact(buf, b); err != nil {
			return nil, invalid(b, err)
		}
		return buf.String(), nil
	case c == '-' || '0' <= c && c <= '9':
		integer, ok := numberSyntax(b)
		if !ok {
			break
		}
		if integer {
			if n, ok := parseInt(b); ok {
				return n, nil
			}
		}
		f, err := strconv.ParseFloat(string(b), 64)
		if err == nil && shortestFloat(b, f) {
			return f, nil
		}
		var lit [64]byte
		c := jsonnum.AppendCanonical(lit[:0], b)
		if err == nil && exactFloat(c, f) {
			return f, nil
		}
		return bytes.Clone(c), nil // a BLOB: beyond int64 and float64
	}
	return nil, invalid(b, nil)
}

// shortestFloat reports whether b is f's shortest text as
// strconv.AppendFloat(f, 'g', -1) writes it, the text weir writes floats
// in: then b is exactly f, with no need to canonicalize it (exactFloat of
// its canonical text holds).
func shortestFloat(b []byte, f float64) bool {
	var short [32]byte
	return bytes.Equal(strconv.AppendFloat(short[:0], f, 'g', -1, 64), b)
}

// exactFloat reports whether f is the number whose canonical text is c:
// whether c is a float64's shortest text, written canonically.
func exactFloat(c []byte, f float64) bool {
	var short, fc [64]byte
	return bytes.Equal(jsonnum.AppendCanonical(fc[:0], strconv.AppendFloat(short[:0], f, 'g', -1, 64)), c)
}

func invalid(b []byte, err error) error {
	const max = 64
	t := string(b)
	if len(t) > max {
		t = t[:max] + "..."
	}
	if err != nil {
		return fmt.Errorf("invalid JSON %q: %w", t, err)
	}
	return fmt.Errorf("invalid JSON %q", t)
}

func trimSpace(b []byte) []byte {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// simpleString decodes a JSON string without escapes that is valid UTF-8.
func simpleString(b []byte) (string, bool) {
	if len(b) < 2 || b[len(b)-1] != '"' {
		return "", false
	}
	in := b[1 : len(b)-1]
	for _, c := range in {
		if c < 0x20 || c == '"' || c == '\\' {
			return "", false
		}
	}
	if !utf8.Valid(in) {
		return "", false
	}
	return string(in), true
}

// numberSyntax reports whether b is a JSON number and whether it is written
// as an integer (no fraction, no exponent).
func numberSyntax(b []byte) (integer, ok bool) {
	i := 0
	if b[i] == '-' {
		i++
	}
	digits := func() int {
		j := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i - j
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return false, false
	}
	integer = true
	if i < len(b) && b[i] == '.' {
		integer = false
		i++
		if digits() == 0 {
			return false, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		integer = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false, false
		}
	}
	return integer, i == len(b)
}

// parseInt parses a JSON integer, reporting false if it does not fit in an
// int64.
func parseInt(b []byte) (int64, bool) {
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	var u uint64
	for _, c := range b {
		d := uint64(c - '0')
		if u > (math.MaxUint64-d)/10 {
			return 0, false
		}
		u = u*10 + d
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true // -(1<<63) wraps to itself
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}
