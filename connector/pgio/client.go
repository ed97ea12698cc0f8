package pgio

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/weirstream/weir/connector"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/weirstream/weir/connector/internal/tablerow"
)

// client is the connection, retry policy and table shared by Sink and
// RecordSink.
type client struct {
	ctx   context.Context // the ctx given to Open: bounds the sink's life
	cfg   *pgx.ConnConfig
	conn  *pgx.Conn // nil or closed: reconnect on next use
	opts  Options
	table string // as given
	qt    string // quoted
	addr  string // host:port (or the socket directory), for messages
	// connected: a connection succeeded once (Open's bound,
	// Options.ConnectRetryFor, applies until then).
	connected bool
	// failing: the last attempt failed with a transient error, and no
	// attempt has succeeded since. Read by any goroutine (Unavailable).
	failing atomic.Bool
	// closed: the sink is closed (do returns ErrClosed).
	closed bool
}

// newClient validates o and the connection string; it does not connect.
func newClient(ctx context.Context, connString, table string, o Options) (*client, error) {
	if ctx == nil {
		return nil, errors.New("pgio: Open with a nil context; pass the job's context (context.Background() for no limit)")
	}
	if err := checkIdent("table name", table); err != nil {
		return nil, err
	}
	switch {
	case o.MinBackoff < 0:
		return nil, fmt.Errorf("pgio: Options.MinBackoff is %v; use a positive duration, or 0 for the default %v", o.MinBackoff, DefaultMinBackoff)
	case o.MaxBackoff < 0:
		return nil, fmt.Errorf("pgio: Options.MaxBackoff is %v; use a positive duration, or 0 for the default %v", o.MaxBackoff, DefaultMaxBackoff)
	case o.RetryFor < 0:
		return nil, fmt.Errorf("pgio: Options.RetryFor is %v; use a positive duration, or 0 to retry until the context is cancelled", o.RetryFor)
	case o.Timeout < 0:
		return nil, fmt.Errorf("pgio: Options.Timeout is %v; use a positive duration, or 0 for the default %v", o.Timeout, DefaultTimeout)
	case o.ConnectRetryFor < 0:
		return nil, fmt.Errorf("pgio: Options.ConnectRetryFor is %v; use a positive duration, or 0 for the default %v", o.ConnectRetryFor, DefaultConnectRetryFor)
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.ConnectRetryFor == 0 {
		o.ConnectRetryFor = DefaultConnectRetryFor
	}
	if o.MinBackoff == 0 {
		o.MinBackoff = DefaultMinBackoff
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.MinBackoff > o.MaxBackoff {
		o.MinBackoff = o.MaxBackoff
	}
	cfg, err := pgx.ParseConfig(connString)
	if err != nil {
		// pgx redacts the password in its parse errors.
		return nil, fmt.Errorf("pgio: parse the connection string: %w", err)
	}
	if _, ok := cfg.RuntimeParams["application_name"]; !ok {
		cfg.RuntimeParams["application_name"] = "weir-pgio"
	}
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
	if strings.HasPrefix(cfg.Host, "/") {
		addr = fmt.Sprintf("%s/.s.PGSQL.%d", cfg.Host, cfg.Port)
	}
	return &client{
		ctx:   ctx,
		cfg:   cfg,
		opts:  o,
		table: table,
		qt:    pgx.Identifier{table}.Sanitize(),
		addr:  addr,
	}, nil
}

// merge returns a context done when ctx or the Open context is done, whose
// cause is the cause of the first one done.
func (c *client) merge(ctx context.Context) (context.Context, context.CancelFunc) {
	m, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(c.ctx, func() { cancel(context.Cause(c.ctx)) })
	return m, func() {
		stop()
		cancel(context.Canceled)
	}
}

// do is run while the sink is open (ErrClosed after close), also stopping
// when the Open context is done.
func (c *client) do(ctx context.Context, what string, attempt func(ctx context.Context, conn *pgx.Conn) error) error {
	if c.closed {
		return ErrClosed
	}
	ctx, cancel := c.merge(ctx)
	defer cancel()
	return c.run(ctx, what, attempt)
}

// deleteJob deletes every row of job from the table, with the retries of
// do, and returns how many.
func (c *client) deleteJob(ctx context.Context, job string) (int64, error) {
	var n int64
	err := c.do(ctx, "remove the rows of job "+strconv.Quote(job)+" from "+c.qt, func(ctx context.Context, conn *pgx.Conn) error {
		// In one transaction with the backfill's record of what it
		// applied to the job's rows, which names revisions that are gone
		// (an applied table of weir before runs has no job column: left).
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		tag, err := tx.Exec(ctx, `DELETE FROM `+c.qt+` WHERE "job" = $1`, job)
		if err != nil {
			return err
		}
		at := quoteIdent(tablerow.AppliedTable(c.table))
		var hasJob bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'job' AND NOT attisdropped)`, at).Scan(&hasJob); err != nil {
			return err
		}
		if hasJob {
			if _, err := tx.Exec(ctx, `DELETE FROM `+at+` WHERE job = $1`, job); err != nil {
				return err
			}
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}
		n = tag.RowsAffected()
		return nil
	})
	return n, err
}

// maxRun returns the highest run among job's rows (0 if none), with the
// retries of do.
func (c *client) maxRun(ctx context.Context, job string) (int64, error) {
	var n int64
	err := c.do(ctx, "read the runs of job "+strconv.Quote(job)+" in "+c.qt, func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, `SELECT coalesce(max("run"), 0) FROM `+c.qt+` WHERE "job" = $1`, job).Scan(&n)
	})
	return n, err
}

// close marks the sink closed and closes the connection.
func (c *client) close() {
	c.closed = true
	c.closeConn()
}

// run calls attempt on a live connection until it succeeds, fails with an
// error that is not transient, ctx is done, Options.Stopping is done, or
// the retry bound has passed (Options.ConnectRetryFor until a connection
// has succeeded once, then Options.RetryFor), waiting between attempts
// with exponential backoff. Each attempt, connecting included, has
// Options.Timeout: an attempt that gets no answer in time (a stalled
// connection) is logged and retried on a new connection. what names the
// operation in errors and log records. It runs on the caller's goroutine
// (the one that serializes the sink's calls).
func (c *client) run(ctx context.Context, what string, attempt func(ctx context.Context, conn *pgx.Conn) error) error {
	start := time.Now()
	backoff := c.opts.MinBackoff
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	var stopping <-chan struct{}
	if c.opts.Stopping != nil {
		stopping = c.opts.Stopping.Done()
	}
	stopped := func(n int, err error) error {
		return fmt.Errorf("pgio: %s: stopped waiting for Postgres at %s after %d attempts in %v: the job is stopping (last error: %w)",
			what, c.addr, n, time.Since(start).Round(time.Millisecond), err)
	}
	for n := 1; ; n++ {
		err := c.try(ctx, n > 1 || c.failing.Load(), attempt)
		if err == nil {
			c.failing.Store(false)
			if n > 1 && c.opts.Logger != nil {
				c.opts.Logger.Info("pgio: Postgres is available again", "table", c.table, "op", what, "attempts", n, "waited", time.Since(start).Round(time.Millisecond))
			}
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("pgio: %s: stopped waiting for Postgres after %d attempts in %v: %w (last error: %w)",
				what, n, time.Since(start).Round(time.Millisecond), context.Cause(ctx), err)
		}
		if !transient(err) {
			return err
		}
		c.failing.Store(true)
		if c.opts.Stopping != nil && c.opts.Stopping.Err() != nil {
			return stopped(n, err)
		}
		// Named as a job spec's sink names them, and as Options does.
		limit, option := c.opts.RetryFor, "retry_for (Options.RetryFor)"
		if !c.connected && (c.opts.RetryFor == 0 || c.opts.ConnectRetryFor < c.opts.RetryFor) {
			limit, option = c.opts.ConnectRetryFor, "connect_retry_for (Options.ConnectRetryFor)"
		}
		if limit > 0 && time.Since(start) >= limit {
			if !c.connected {
				return fmt.Errorf("pgio: %s: cannot reach Postgres at %s: gave up after %d attempts in %v (%s is %v): %w",
					what, c.addr, n, time.Since(start).Round(time.Millisecond), option, limit, err)
			}
			return fmt.Errorf("pgio: %s: gave up after %d attempts in %v (%s is %v): %w",
				what, n, time.Since(start).Round(time.Millisecond), option, limit, err)
		}
		if c.opts.Logger != nil {
			msg, level := "pgio: Postgres unavailable, retrying", slog.LevelWarn
			switch {
			case errors.As(err, new(stallError)):
				msg = "pgio: Postgres stalled (no answer within the timeout), reconnecting and retrying"
			case isCreateRace(err):
				// Another session created the table at the same moment
				// (two group members starting together): not an outage.
				msg, level = "pgio: another session created the table at the same moment; retrying", slog.LevelInfo
			}
			c.opts.Logger.Log(context.Background(), level, msg, "table", c.table, "address", c.addr, "op", what, "attempt", n, "retry_in", backoff, "error", err)
		}
		wait := backoff
		if limit > 0 {
			// The last attempt is at the bound, not a backoff before it.
			wait = max(min(wait, limit-time.Since(start)), 0)
		}
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case <-timer.C:
		case <-stopping:
			return stopped(n, err)
		case <-ctx.Done():
			return fmt.Errorf("pgio: %s: stopped waiting for Postgres after %d attempts in %v: %w (last error: %w)",
				what, n, time.Since(start).Round(time.Millisecond), context.Cause(ctx), err)
		}
		backoff = min(2*backoff, c.opts.MaxBackoff)
	}
}

// stallError is an attempt that got no answer within Options.Timeout.
type stallError struct {
	err error
}

func (e stallError) Error() string { return e.err.Error() }
func (e stallError) Unwrap() error { return e.err }

// try connects if needed and calls attempt once, within Options.Timeout;
// retrying (a retry, or the sink is failing) lets Options.Stopping cancel
// the attempt too. A connection that is left in a transaction or broken
// is closed, so the next try starts afresh.
func (c *client) try(ctx context.Context, retrying bool, attempt func(ctx context.Context, conn *pgx.Conn) error) error {
	actx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	if retrying && c.opts.Stopping != nil {
		stop := context.AfterFunc(c.opts.Stopping, cancel)
		defer stop()
	}
	// stalled marks an error of an attempt whose deadline passed.
	stalled := func(err error) error {
		if ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
			return stallError{fmt.Errorf("no answer from %s within %v (Options.Timeout): %w", c.addr, c.opts.Timeout, err)}
		}
		return err
	}
	if c.conn != nil && c.conn.IsClosed() {
		c.conn = nil
	}
	if c.conn == nil {
		conn, err := pgx.ConnectConfig(actx, c.cfg)
		if err != nil {
			return stalled(fmt.Errorf("pgio: connect to %s: %w", c.addr, err))
		}
		c.conn = conn
		c.connected = true
	}
	err := attempt(actx, c.conn)
	if err != nil {
		err = stalled(err)
		if !c.conn.IsClosed() && (c.conn.PgConn().TxStatus() != 'I' || errors.As(err, new(stallError))) {
			c.closeConn()
		}
	}
	return err
}

func (c *client) closeConn() {
	if c.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	_ = c.conn.Close(ctx) // sends Terminate; the socket is closed even if that fails
	cancel()
	c.conn = nil
}

// retryable marks an error as transient.
type retryable struct{ err error }

func (r retryable) Error() string { return r.err.Error() }
func (r retryable) Unwrap() error { return r.err }

// Transient reports whether err, from pgx or database/sql over pgx, is
// worth retrying: the server or the network is (probably briefly)
// unavailable, or the transaction lost a race with another one. A
// context error counts (an internal timeout): the caller checks its own
// context first.
func Transient(err error) bool { return transient(err) }

// transient reports whether err is worth retrying: the server or the network
// is (probably briefly) unavailable, or the transaction lost a race with
// another one.
func transient(err error) bool {
	if errors.As(err, new(retryable)) || errors.As(err, new(stallError)) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch c := pgErr.Code; {
		case strings.HasPrefix(c, "08"): // connection exception
			return true
		case c == "40001", // serialization_failure
			c == "40P01", // deadlock_detected
			c == "55P03", // lock_not_available
			c == "53300", // too_many_connections
			c == "57P01", // admin_shutdown
			c == "57P02", // crash_shutdown
			c == "57P03": // cannot_connect_now (starting up, recovery)
			return true
		}
		return false
	}
	// The caller checks its own context before asking, so a context error
	// here is an internal timeout such as connect_timeout: retried below.
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return !dnsErr.IsNotFound // a misspelled host name does not get better
	}
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	if errors.As(err, &certErr) || errors.As(err, &unknownAuth) || errors.As(err, &hostErr) {
		return false
	}
	var netErr net.Error
	switch {
	case errors.As(err, &netErr),
		pgconn.Timeout(err),
		errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH),
		errors.Is(err, syscall.ETIMEDOUT):
		return true
	}
	var connectErr *pgconn.ConnectError
	return errors.As(err, &connectErr) // a failed dial not classified above
}

// checkIdent validates a Postgres identifier; field names it in the error
// ("table name", "key column 2").
func checkIdent(field, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("pgio: %s is empty; give it a name", field)
	case !utf8.ValidString(name):
		return fmt.Errorf("pgio: %s %q is not valid UTF-8", field, name)
	case strings.IndexByte(name, 0) >= 0:
		return fmt.Errorf("pgio: %s %q contains a NUL byte; remove it", field, name)
	case len(name) > MaxIdentifierLen:
		return fmt.Errorf("pgio: %s %q is %d bytes long; Postgres identifiers are at most %d bytes (longer ones are silently truncated), so shorten it", field, name, len(name), MaxIdentifierLen)
	}
	return nil
}

// tableColumns reads the columns (name and type as format_type prints it) and
// primary key columns of the table named qt (quoted) as the connection's
// search_path resolves it. exists is false if there is no such table.
func tableColumns(ctx context.Context, conn *pgx.Conn, qt string) (cols [][2]string, pk []string, exists bool, err error) {
	var oid *uint32
	if err := conn.QueryRow(ctx, "SELECT to_regclass($1)::oid", qt).Scan(&oid); err != nil {
		return nil, nil, false, err
	}
	if oid == nil {
		return nil, nil, false, nil
	}
	rows, err := conn.Query(ctx, `SELECT attname, format_type(atttypid, atttypmod) FROM pg_catalog.pg_attribute
		WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped ORDER BY attnum`, *oid)
	if err != nil {
		return nil, nil, false, err
	}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			rows.Close()
			return nil, nil, false, err
		}
		cols = append(cols, [2]string{name, typ})
	}
	if err := rows.Err(); err != nil {
		return nil, nil, false, err
	}
	rows, err = conn.Query(ctx, `SELECT a.attname FROM pg_catalog.pg_index i
		CROSS JOIN unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
		JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
		WHERE i.indrelid = $1 AND i.indisprimary ORDER BY k.ord`, *oid)
	if err != nil {
		return nil, nil, false, err
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return nil, nil, false, err
		}
		pk = append(pk, name)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, false, err
	}
	return cols, pk, true, nil
}

// compareSchema compares a table's columns and primary key with the wanted
// ones and describes every difference; it returns nil if there is none.
// Column order does not matter, primary key order does not either (ON
// CONFLICT only needs a unique index on the same set of columns).
func compareSchema(qt string, want [][2]string, wantPK []string, got [][2]string, gotPK []string) error {
	gotType := make(map[string]string, len(got))
	for _, c := range got {
		gotType[c[0]] = c[1]
	}
	wantType := make(map[string]string, len(want))
	var diffs []string
	for _, c := range want {
		wantType[c[0]] = c[1]
		switch t, ok := gotType[c[0]]; {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("column %s (%s) is missing", quoteIdent(c[0]), c[1]))
		case t != c[1]:
			diffs = append(diffs, fmt.Sprintf("column %s has type %s, expected %s", quoteIdent(c[0]), t, c[1]))
		}
	}
	for _, c := range got {
		if _, ok := wantType[c[0]]; !ok {
			diffs = append(diffs, fmt.Sprintf("column %s (%s) is not expected", quoteIdent(c[0]), c[1]))
		}
	}
	samePK := len(gotPK) == len(wantPK)
	if samePK {
		in := make(map[string]bool, len(gotPK))
		for _, k := range gotPK {
			in[k] = true
		}
		for _, k := range wantPK {
			samePK = samePK && in[k]
		}
	}
	if !samePK {
		diffs = append(diffs, fmt.Sprintf("the primary key is (%s), expected (%s)", joinIdents(gotPK), joinIdents(wantPK)))
	}
	if len(diffs) == 0 {
		return nil
	}
	wantCols := make([]string, len(want))
	for i, c := range want {
		wantCols[i] = quoteIdent(c[0]) + " " + c[1]
	}
	gotCols := make([]string, len(got))
	for i, c := range got {
		gotCols[i] = quoteIdent(c[0]) + " " + c[1]
	}
	return schemaError{fmt.Errorf("pgio: table %s exists with other columns than this sink needs:\n  - %s\n"+
		"  expected columns (%s), primary key (%s)\n"+
		"  found    columns (%s), primary key (%s)\n"+
		"use another table name, or drop or alter the table",
		qt, strings.Join(diffs, "\n  - "),
		strings.Join(wantCols, ", "), joinIdents(wantPK),
		strings.Join(gotCols, ", "), joinIdents(gotPK))}
}

// schemaError is a table whose columns or primary key are not the ones
// expected (compareSchema), or not the ones just read (a statement made
// for them failed because they had changed). Besides a table that is
// simply not the sink's, another session migrating the table at the same
// time can cause one: an opener that migrates tables looks again once
// (RecordSink.setup).
type schemaError struct{ err error }

func (e schemaError) Error() string { return e.err.Error() }
func (e schemaError) Unwrap() error { return e.err }

// Is makes a schemaError connector.ErrTableLayout.
func (e schemaError) Is(target error) bool { return target == connector.ErrTableLayout }

func quoteIdent(name string) string { return pgx.Identifier{name}.Sanitize() }

func joinIdents(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quoteIdent(n)
	}
	return strings.Join(q, ", ")
}

// createRace marks the errors two sessions creating the same table at once
// may get from CREATE TABLE IF NOT EXISTS as retryable.
func createRace(err error) error {
	if isCreateRace(err) {
		return retryable{err}
	}
	return err
}

// isCreateRace reports whether err is one createRace marks.
func isCreateRace(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "23505" || pgErr.Code == "42P07")
}
