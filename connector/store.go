package connector

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"time"
)

// ErrNoResults is matched (errors.Is) by an OpenStore or SQLDialect
// error that says the results are not there (a database file or table
// the job never wrote): weir backfill refuses the spec for it.
var ErrNoResults = errors.New("the results are not there")

// ErrTableLayout is matched (errors.Is) by a SQLDialect.CheckTable error
// for a table whose columns are not the ones the kind's sink makes (the
// spec changed, or names another job's table): weir backfill refuses the
// spec for it.
var ErrTableLayout = errors.New("the table has another layout")

// ColumnType is the SQL type of a key or value column of a results
// table: how the table keeps the JSON value written to it. The zero
// ColumnType is JSONB. A kind's sink keeps each value exactly as its type
// says, or refuses it (a string in a numeric column).
type ColumnType uint8

const (
	// JSONB keeps the JSON value (a JSON null is the JSON null, not SQL
	// NULL).
	JSONB ColumnType = iota
	// Text keeps a JSON string as its text and any other value as its
	// compact JSON text (so in a key column the string "7" and the number
	// 7 are one key).
	Text
	// BigInt keeps a JSON integer within int64.
	BigInt
	// Double keeps a JSON number rounded to the nearest float64.
	Double
	// Numeric keeps a JSON number exactly, with its scale.
	Numeric
)

// String is the type as Postgres's format_type names it ("double
// precision").
func (t ColumnType) String() string {
	switch t {
	case JSONB:
		return "jsonb"
	case Text:
		return "text"
	case BigInt:
		return "bigint"
	case Double:
		return "double precision"
	case Numeric:
		return "numeric"
	}
	return "ColumnType(" + strconv.Itoa(int(t)) + ")"
}

// ColumnDef is a key or value column of a results table: its name and
// type.
type ColumnDef struct {
	Name string
	Type ColumnType
}

// TableColumns are the key and value columns of a results table for
// keys and values: keys are Text; count and count_distinct BigInt; sum,
// avg (and their _distinct forms), min and max Numeric, or Double over floats, or min and max Text
// over strings; the accumulators' column (Fn "") Text; the others JSONB.
func TableColumns(keys []string, values []ResultColumn) (k, v []ColumnDef) {
	for _, name := range keys {
		k = append(k, ColumnDef{Name: name, Type: Text})
	}
	for _, c := range values {
		t := JSONB
		switch c.Fn {
		case "":
			t = Text
		case "count", "count_distinct":
			t = BigInt
		case "sum", "avg", "min", "max", "sum_distinct", "avg_distinct":
			switch {
			case c.String:
				t = Text
			case c.Float:
				t = Double
			default:
				t = Numeric
			}
		}
		v = append(v, ColumnDef{Name: c.Name, Type: t})
	}
	return k, v
}

// Revision is how weir backfill revises the results a kind's results
// sink wrote, and how the complete answer reads them back
// (SinkKind.Revise with SinkKind.OpenStore).
type Revision uint8

const (
	// NoRevision: backfill cannot revise the kind's results (the job
	// keeps an archive of its closed windows only for a log kind).
	NoRevision Revision = iota
	// ReviseTable: the results are rows of a SQL table, one per key and
	// window, which backfill revises in place in transactions
	// (*TableStore). It folds late records into the accumulators the rows
	// keep.
	ReviseTable
	// ReviseLog: the results are lines appended to a log (a file, a
	// topic), whose readers keep each window's newest revision by (run,
	// pane). Backfill folds late records into the windows the job's
	// archive keeps and appends the new revisions (LogStore).
	ReviseLog
)

// StoreOpen is what SinkKind.OpenStore gets: a job spec's first results
// sink, as backfill and the complete answer reach it.
type StoreOpen struct {
	// Settings are the sink's, at Output in messages.
	Settings Settings
	Output   string
	// Path resolves a relative path of the settings (the spec's
	// directory is where they start).
	Path func(string) string
	// Job is the job whose results are read and revised (a table's job
	// column).
	Job string
	// Keys and Values are the results' key fields and value columns, as
	// ResultsOpen has them.
	Keys   []string
	Values []ResultColumn
	// Create: the caller will write (backfill, not a dry run), so the
	// store may create what a revision needs (a table of applied ids).
	Create bool
}

// ResultsStore is what SinkKind.OpenStore returns: a *TableStore for a
// ReviseTable kind, a LogStore for a ReviseLog one.
type ResultsStore interface {
	Close() error
}

// TableStore is a results table that backfill revises with SQL through
// database/sql (ReviseTable). Its queries are written with ? placeholders
// and go through Dialect.
type TableStore struct {
	// DB is the table's database, open; Close closes it.
	DB *sql.DB
	// Dialect is how the database's SQL differs.
	Dialect SQLDialect
	// Table is the table's name (unquoted).
	Table string
	// Where names the database in messages (a file's path), "" when its
	// address could hold a secret (a connection string).
	Where string
	// Keys and Values are the table's key and value columns, as the
	// kind's results sink made them for StoreOpen's Keys and Values.
	Keys, Values []ColumnDef
	// Timeout bounds each transaction and RetryFor how long an
	// unavailable server is waited for (0: the caller's defaults).
	Timeout, RetryFor time.Duration
}

// Close closes the database.
func (t *TableStore) Close() error { return t.DB.Close() }

// SQLDialect is what a SQL database does its own way, for the queries
// backfill runs on a TableStore. Its methods are safe for concurrent use.
type SQLDialect interface {
	// Rebind turns q's ? placeholders into the database's ($1, $2, ...),
	// leaving a ? in a quoted name or string alone.
	Rebind(q string) string
	// Param is the placeholder of a value for a column of type t ("?",
	// or "?::numeric" where the text argument needs a cast).
	Param(t ColumnType) string
	// Text is column expression col read as Value takes it back (its
	// text, where the driver would give another type).
	Text(col string) string
	// ForUpdate is the clause that locks the rows a SELECT of a
	// transaction reads ("" where the transaction does).
	ForUpdate() string
	// Arg is the query argument for JSON value v in a column of type t,
	// as the kind's sink stores it (key: a key column).
	Arg(t ColumnType, v []byte, key bool) (any, error)
	// TextIsJSON says what a column of type t read through Text scans
	// to: true, the text of its value as JSON (a number's digits, a JSON
	// document); false, the value as the driver gives it (SQLite's
	// integers, reals, texts and blobs), or for a Text column the text
	// itself.
	TextIsJSON(t ColumnType) bool
	// CheckTable refuses a table whose columns are not the ones the
	// kind's sink makes for keys and values (a table of another job
	// layout), with the fix.
	CheckTable(ctx context.Context, db *sql.DB, table string, keys, values []ColumnDef) error
	// HasTable reports whether table exists; HasColumn whether table has
	// column.
	HasTable(ctx context.Context, db *sql.DB, table string) (bool, error)
	HasColumn(ctx context.Context, db *sql.DB, table, column string) (bool, error)
	// Transient reports whether err is worth trying the transaction
	// again for (the server was briefly away, or a race was lost).
	Transient(err error) bool
}

// LogStore is a log of result lines (ReviseLog): a file, a topic.
type LogStore interface {
	// Scan calls fn with every result line the log holds, the revisions
	// backfill appended included, in the order a reader sees them; it
	// stops at fn's first error and returns it.
	Scan(ctx context.Context, fn func(line []byte) error) error
	// Append adds revisions to the log, durably once it returns nil. A
	// crash may leave some appended and backfill appends them again:
	// readers fold by (run, pane).
	Append(ctx context.Context, revs []Message) error
	// Forget removes the revisions earlier backfills appended where the
	// kind keeps them apart from the results (a file's corrections): a
	// fresh start of the job, which starts its results over, calls it. A
	// log that keeps them with the results (a topic) does nothing.
	Forget(ctx context.Context) error
	Close() error
}

// KeyedLogStore is a LogStore of keyed records (a topic): ScanKeyed is
// Scan with each record's key, and a record without a value (a results
// sink with a primary key retracts a row with its key's tombstone,
// Message.Value nil) is given with a nil line.
type KeyedLogStore interface {
	ScanKeyed(ctx context.Context, fn func(key, line []byte) error) error
}
