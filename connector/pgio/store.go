package pgio

import (
	"cmp"
	"context"
	"database/sql"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/weirstream/weir/connector"
)

// openStore opens a job spec's postgres results table for weir backfill
// and the complete answer (connector.SinkKind.OpenStore).
func openStore(_ context.Context, o connector.StoreOpen) (connector.ResultsStore, error) {
	keys, values := ResultColumns(o.Keys, o.Values)
	timeout, _ := o.Settings.Duration("timeout")
	url, table, err := InSchema(o.Settings.String("url"), cmp.Or(o.Settings.String("table"), "results"))
	if err != nil {
		return nil, err
	}
	st, err := OpenTableStore(url, table, keys, values, timeout)
	if err != nil {
		return nil, err
	}
	if st.RetryFor, _ = o.Settings.Duration("retry_for"); st.RetryFor == 0 {
		st.RetryFor, _ = o.Settings.Duration("connect_retry_for")
	}
	return st, nil
}

// OpenTableStore opens table of the server at url, with the key and
// value columns a Sink was opened with, as a store that weir backfill
// revises (backfill.IntoTable): timeout (0: DefaultTimeout) bounds each
// of its transactions.
func OpenTableStore(url, table string, keys, values []ColumnDef, timeout time.Duration) (*connector.TableStore, error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, err
	}
	timeout = cmp.Or(timeout, DefaultTimeout)
	return &connector.TableStore{DB: db, Dialect: dialect{url: url, timeout: timeout}, Table: table, Keys: keys, Values: values, Timeout: timeout}, nil
}

// dialect is Postgres's SQL (connector.SQLDialect); url is the table's
// server, which CheckTable reaches as the sink does.
type dialect struct {
	url     string
	timeout time.Duration
}

// Rebind numbers the ? placeholders of q as Postgres wants them ($1, $2,
// ...), leaving alone a ? inside a quoted name ("vip?") or string.
func (dialect) Rebind(q string) string {
	var b strings.Builder
	n := 0
	var quote rune
	for _, c := range q {
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '?':
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Param casts the argument's text to the column's type, as the sink
// binds it.
func (dialect) Param(t connector.ColumnType) string { return "?::" + t.String() }

// Text reads a column as its text: jsonb's JSON, a number's digits.
func (dialect) Text(col string) string { return col + "::text" }

func (dialect) ForUpdate() string { return " FOR UPDATE" }

// Arg is Arg, with an absent value as JSON null.
func (dialect) Arg(t connector.ColumnType, v []byte, key bool) (any, error) {
	if len(v) == 0 {
		v = []byte("null")
	}
	return Arg(t, v, key)
}

// TextIsJSON: a text column's text is the value; another column's text
// is its JSON.
func (dialect) TextIsJSON(t connector.ColumnType) bool { return t != Text }

func (d dialect) CheckTable(ctx context.Context, _ *sql.DB, table string, keys, values []connector.ColumnDef) error {
	return CheckTable(ctx, d.url, table, keys, values, Options{Timeout: d.timeout})
}

func (dialect) HasTable(ctx context.Context, db *sql.DB, table string) (bool, error) {
	var n int
	err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_tables WHERE tablename = $1 AND schemaname = ANY (current_schemas(false))`, table).Scan(&n)
	return n > 0, err
}

func (dialect) HasColumn(ctx context.Context, db *sql.DB, table, column string) (bool, error) {
	var n int
	err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = $2 AND NOT attisdropped`, quoteIdent(table), column).Scan(&n)
	return n > 0, err
}

func (dialect) Transient(err error) bool { return transient(err) }
