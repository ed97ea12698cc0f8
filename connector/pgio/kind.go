package pgio

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/internal/tablerow"
)

// Kinds are the job spec's kinds of this package: the postgres sink.
func Kinds() []connector.Kind {
	return []connector.Kind{{Name: "postgres",
		Doc: "writes results as an upsert by key and window (the newest run and pane wins), late records and dead letters once by their id; waits while the server is away",
		Sink: &connector.SinkKind{Roles: connector.AllRoles, Abilities: connector.AbilityIdempotent | connector.AbilityUpsert, RecordAbilities: connector.AbilityIdempotent | connector.AbilityTransactional, Reasons: true, Check: check, OpenResults: openResults, OpenMessages: openMessages, OpenLedger: openLedger, Fields: []connector.Field{
			{Name: "url", Required: true, Doc: "the connection string, such as postgres://weir@127.0.0.1:5432/weir"},
			{Name: "table", Doc: "the table (default the output's name: results, late, late_partial or dead_letter)"},
			{Name: "timeout", Doc: "the deadline of every connect, statement batch and commit (default 30s)"},
			{Name: "retry_for", Doc: "how long the job waits for an unavailable server (default: until stopped)"},
			{Name: "connect_retry_for", Doc: "how long the first connect is retried (default 2m)"},
			{Name: "batch_rows", Doc: "rows per transaction (default 1000)"},
		}}}}
}

func check(c connector.Checker, output string) {
	if c.String("url") == "" {
		c.Report("url", "missing", "give the connection string, such as postgres://weir@127.0.0.1:5432/weir")
	}
	c.Positive("timeout", "the timeout")
	c.Positive("retry_for", "the retry time")
	c.Positive("connect_retry_for", "the retry time")
	if n := c.Int("batch_rows"); n < 0 {
		c.Report("batch_rows", fmt.Sprint(n, " is negative"), "give the rows per transaction, such as 1000 (the default)")
	}
	tablerow.CheckTable(c, output)
}

// ResultColumns are the key and value columns of a job spec's results
// table, with their SQL types, so that the table answers plain SQL
// (SELECT sum(orders) ... WHERE user_id = 'u1').
//
// Keys are text: a job spec does not type its key fields, and a key is
// looked up as a string (WHERE user_id = 'u1'; a number key 7 is '7').
// An aggregate's column has the type of every value it can have:
//
//   - count and count_distinct: bigint;
//   - sum, avg, min and max in float64 arithmetic: double precision;
//   - sum, avg, min and max of exact decimals (the default): numeric. A
//     decimal sum is an int64 while its inputs are integers and it fits,
//     then an exact decimal of up to 38 digits (beyond, a float64): the
//     spec does not know which, so bigint would fail on the first
//     fraction and double precision would round the decimals; numeric
//     holds each of them exactly, and sum() of it is exact;
//   - first, last and collect: jsonb (any JSON value; collect an array).
//
// The accumulators' column (Fn "") is text.
func ResultColumns(keys []string, values []connector.ResultColumn) (k, v []ColumnDef) {
	k = Defs(Text, keys...)
	for _, c := range values {
		t := JSONB
		switch c.Fn {
		case "":
			t = Text
		case "count", "count_distinct":
			t = BigInt
		case "sum", "avg", "min", "max":
			t = Numeric
			if c.Float {
				t = Double
			}
		}
		v = append(v, ColumnDef{Name: c.Name, Type: t})
	}
	return k, v
}

// openResults opens a job spec's postgres results sink: its table gets
// the columns of ResultColumns.
func openResults(ctx context.Context, o connector.ResultsOpen) (connector.ResultsSink, error) {
	keys, values := ResultColumns(o.Keys, o.Values)
	opts := Options{Logger: o.Logger, Stopping: o.Stopping, Job: o.Job}
	opts.Timeout, _ = o.Settings.Duration("timeout")
	opts.RetryFor, _ = o.Settings.Duration("retry_for")
	opts.ConnectRetryFor, _ = o.Settings.Duration("connect_retry_for")
	url, table := o.Settings.String("url"), o.Settings.String("table")
	s, err := Open(ctx, url, table, keys, values, opts)
	if err != nil {
		return nil, err
	}
	lock, err := lockRows(ctx, url, table, o.Job, opts.Timeout)
	if err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return &lockedResults{Sink: s, lock: lock}, nil
}

// lockedResults is a job spec's results table with the run's lock on
// the job's rows (lockRows), released when it closes.
type lockedResults struct {
	*Sink
	lock *pgx.Conn
}

func (l *lockedResults) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return errors.Join(l.Sink.Close(), l.lock.Close(ctx)) // closing the session releases its lock
}

// ErrRowsLocked is matched (errors.Is) by the refusal of a results sink
// of a job whose rows another live run of the job writes.
var ErrRowsLocked = errors.New("pgio: the job's rows are in use by another run")

// lockRows takes a session advisory lock on job's rows of table, on a
// connection of its own, and returns it: a second live run of the job on
// the table, which would remove (a fresh start) or overwrite the first
// one's rows, is refused at its start. The lock lasts as long as the
// session: a run that ends, or dies, releases it (so does a lost
// connection, which the sink reconnects without).
func lockRows(ctx context.Context, url, table, job string, timeout time.Duration) (*pgx.Conn, error) {
	conn, ok, err := sessionLock(ctx, url, "weir-run-lock", timeout, `SELECT pg_try_advisory_lock(hashtext($1), hashtext($2))`, "weir results "+table, job)
	switch {
	case err != nil:
		return nil, fmt.Errorf("pgio: lock the rows of job %q in table %s: %w", job, table, err)
	case !ok:
		return nil, fmt.Errorf("table %s: %w: another live run of job %q writes them (it holds the advisory lock on them, which pg_locks lists); stop that run first, or give this one another job name", table, ErrRowsLocked, job)
	}
	return conn, nil
}

// sessionLock connects to url as application app (unless the URL names
// one) within timeout (0: DefaultTimeout) and, when query is given, takes
// a session advisory lock with it (query returns whether it got it): the
// connection holds the lock until it closes. ok is false when another
// session holds it (the connection is closed then).
func sessionLock(ctx context.Context, url, app string, timeout time.Duration, query string, args ...any) (conn *pgx.Conn, ok bool, err error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, false, fmt.Errorf("parse the connection string: %w", err)
	}
	if _, set := cfg.RuntimeParams["application_name"]; !set {
		cfg.RuntimeParams["application_name"] = app
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if conn, err = pgx.ConnectConfig(ctx, cfg); err != nil {
		return nil, false, fmt.Errorf("connect: %w", err)
	}
	if query == "" {
		return conn, true, nil
	}
	if err := conn.QueryRow(ctx, query, args...).Scan(&ok); err != nil || !ok {
		_ = conn.Close(context.Background())
		return nil, false, err
	}
	return conn, true, nil
}
