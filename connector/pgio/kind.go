package pgio

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/internal/tablerow"
)

// Kinds are the job spec's kinds of this package: the postgres sink.
func Kinds() []connector.Kind {
	return []connector.Kind{{Name: "postgres",
		Doc: "writes results as an upsert by key and window (the newest run and pane wins), late records and dead letters once by their id; waits while the server is away",
		Sink: &connector.SinkKind{Roles: connector.AllRoles, Abilities: connector.AbilityIdempotent | connector.AbilityUpsert, RecordAbilities: connector.AbilityIdempotent | connector.AbilityTransactional, Reasons: true, Check: check, OpenResults: openResults, OpenMessages: openMessages, OpenLedger: openLedger, Revise: connector.ReviseTable, OpenStore: openStore, Fields: []connector.Field{
			{Name: "url", Required: true, Doc: "the connection string, such as postgres://weir@127.0.0.1:5432/weir"},
			{Name: "table", Doc: "the table (default the output's name: results, late, late_partial or dead_letter)"},
			{Name: "timeout", Doc: "the deadline of every connect, statement batch and commit (default 30s)"},
			{Name: "retry_for", Doc: "how long the job waits for an unavailable server (default: until stopped)"},
			{Name: "connect_retry_for", Doc: "how long the first connect is retried (default 2m)"},
			{Name: "batch_rows", Doc: "rows per transaction (default 1000)"},
			{Name: "layout", Doc: "results only: weir (the default: weir's own columns, which weir backfill revises) or declared (the table's own columns, as Flink's JDBC sink writes them)"},
			{Name: "columns", Doc: "a declared table's columns, in order, each {name, from, time, type}: from a key field, window_start, window_end, window_time, an aggregate, or firing, run, pane, watermark; times as ms, timestamp, timestamp_ltz or date; type its SQL type for a missing table"},
			{Name: "primary_key", Doc: "the columns a declared table's rows are upserted by (default the columns of the key fields, window_start and window_end)"},
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
	tablerow.CheckTable(c, output, true)
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
	return connector.TableColumns(keys, values)
}

// openResults opens a job spec's postgres results sink: its table gets
// the columns of ResultColumns.
// SpecOptions are the Options a job spec's postgres sink sets (timeout,
// retry_for, connect_retry_for); the caller sets the rest.
func SpecOptions(s connector.Settings) Options {
	var o Options
	o.Timeout, _ = s.Duration("timeout")
	o.RetryFor, _ = s.Duration("retry_for")
	o.ConnectRetryFor, _ = s.Duration("connect_retry_for")
	return o
}

func openResults(ctx context.Context, o connector.ResultsOpen) (connector.ResultsSink, error) {
	keys, values := ResultColumns(o.Keys, o.Values)
	opts := SpecOptions(o.Settings)
	opts.Logger, opts.Stopping, opts.Job, opts.Declared = o.Logger, o.Stopping, o.Job, o.Layout
	url, table := o.Settings.String("url"), o.Settings.String("table")
	conn, name, err := InSchema(url, table)
	if err != nil {
		return nil, err
	}
	s, err := Open(ctx, conn, name, keys, values, opts)
	if err != nil {
		return nil, err
	}
	lk, err := takeRowLock(ctx, conn, "results", table, o.Job, opts.Timeout, "table "+table, "")
	if err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return &lockedResults{Sink: s, lk: lk}, nil
}

// lockedResults is a job spec's results table with the run's lock on
// the job's rows (rowLock), released when it closes: a write after
// another run took the lock fails.
type lockedResults struct {
	*Sink
	lk *rowLock
}

// Flush writes the buffered rows unless another run took the lock.
func (l *lockedResults) Flush(ctx context.Context) error {
	if err := l.lk.held(); err != nil {
		return err
	}
	return l.Sink.Flush(ctx)
}

// Reset removes the job's earlier rows unless another run took the lock.
func (l *lockedResults) Reset(ctx context.Context) (int64, error) {
	if err := l.lk.held(); err != nil {
		return 0, err
	}
	return l.Sink.Reset(ctx)
}

// Close closes the sink, then the lock (rowLock.Close).
func (l *lockedResults) Close() error {
	return errors.Join(l.Sink.Close(), l.lk.Close())
}

// rowLock is a run's session advisory lock on its job's rows of one
// output in a table (lockJobRows): a second live run of the job, which
// would remove (a fresh start) or overwrite the first one's rows, is
// refused at its start. The lock lasts as long as its session: a run
// that ends, or dies, releases it. So does a lost connection: a
// goroutine of its own (watch, from takeRowLock to Close) makes sure the
// run still holds it, every LockCheckInterval, off the write path (a
// server that stalls stalls only the check), and takes it again after a
// drop; when another run took it meanwhile, held fails from then on.
type rowLock struct {
	url, output, table, job, where, why string
	timeout                             time.Duration
	// lost is the error held returns once another run holds the lock
	// (nil while this run holds it, or may take it again).
	lost atomic.Pointer[error]
	// mu guards conn (watch's, and check's when a test calls it).
	mu   sync.Mutex
	conn *pgx.Conn // nil: lost, not taken again yet
	// ctx ends with Close: the check's ping and connect give up then.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

// LockCheckInterval is how often a postgres sink of a job spec makes
// sure its run still holds the lock on its job's rows.
var LockCheckInterval = 5 * time.Second

// takeRowLock takes the lock on job's rows of output in table (where
// and why as lockJobRows takes them) and starts its watch.
func takeRowLock(ctx context.Context, url, output, table, job string, timeout time.Duration, where, why string) (*rowLock, error) {
	conn, err := lockJobRows(ctx, url, output, table, job, timeout, where, why)
	if err != nil {
		return nil, err
	}
	l := &rowLock{url: url, output: output, table: table, job: job, where: where, why: why, timeout: timeout, conn: conn, done: make(chan struct{})}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	go l.watch(LockCheckInterval)
	return l, nil
}

// watch checks the lock every interval until Close.
func (l *rowLock) watch(interval time.Duration) {
	defer close(l.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for l.lost.Load() == nil {
		select {
		case <-l.ctx.Done():
			return
		case <-t.C:
		}
		l.check()
	}
}

// check makes sure the run still holds its lock. A lock whose connection
// dropped (a restart of the server, a network cut) was released with it:
// check takes it again, and when another run took it meanwhile it sets
// lost, so that this run's next write fails instead of overwriting or
// removing that run's rows. While the server cannot be reached it tries
// again at the next check (the sink waits for the server meanwhile).
func (l *rowLock) check() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		ctx, cancel := context.WithTimeout(l.ctx, cmp.Or(l.timeout, DefaultTimeout))
		err := l.conn.Ping(ctx)
		cancel()
		if err == nil || l.ctx.Err() != nil {
			return
		}
		_ = l.conn.Close(context.Background())
		l.conn = nil
	}
	conn, err := lockJobRows(l.ctx, l.url, l.output, l.table, l.job, l.timeout, l.where, l.why)
	switch {
	case errors.Is(err, ErrRowsLocked):
		err = fmt.Errorf("%w (this run's lock was released when its connection to the server dropped, and another run took it)", err)
		l.lost.Store(&err)
	case err == nil:
		l.conn = conn
	}
}

// held is nil while the run holds its rows, or may take them again.
func (l *rowLock) held() error {
	if p := l.lost.Load(); p != nil {
		return *p
	}
	return nil
}

// Close ends the watch and closes the lock's session, which releases
// the lock.
func (l *rowLock) Close() error {
	l.cancel()
	<-l.done
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		err := l.conn.Close(ctx) // closing the session releases its lock
		l.conn = nil
		return err
	}
	return nil
}

// ErrRowsLocked is matched (errors.Is) by the refusal of a results sink
// of a job whose rows another live run of the job writes.
var ErrRowsLocked = errors.New("pgio: the job's rows are in use by another run")

// lockJobRows takes the session advisory lock on job's rows of output in
// table, on a connection of its own, and returns it (rowLock); where
// names the table in the refusal, and why, if not empty, says what the
// second run would do to them. The session asks the server for TCP
// keepalives (30s idle, then 3 probes 10s apart), so that the lock of a
// run whose machine died is released within about a minute, not the
// system's default of hours.
func lockJobRows(ctx context.Context, url, output, table, job string, timeout time.Duration, where, why string) (*pgx.Conn, error) {
	conn, ok, err := sessionLock(ctx, url, "weir-run-lock", timeout, `SELECT pg_try_advisory_lock(hashtext($1), hashtext($2))`, "weir "+output+" "+table, job)
	switch {
	case err != nil:
		return nil, fmt.Errorf("pgio: lock the rows of job %q in table %s: %w", job, table, err)
	case !ok:
		return nil, fmt.Errorf("%s: %w: another live run of job %q writes them (it holds the advisory lock on them, which pg_locks lists)%s; stop that run first (the lock of a run that died with its machine is released within about a minute), or give this one another job name", where, ErrRowsLocked, job, why)
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
	// The server notices a dead peer within about a minute, and releases
	// its session's locks (the system's default is hours).
	for k, v := range map[string]string{"tcp_keepalives_idle": "30", "tcp_keepalives_interval": "10", "tcp_keepalives_count": "3"} {
		if _, set := cfg.RuntimeParams[k]; !set {
			cfg.RuntimeParams[k] = v
		}
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
