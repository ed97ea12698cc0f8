package sqliteio

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/internal/tablerow"
)

// Kinds are the job spec's kinds of this package: the sqlite sink.
func Kinds() []connector.Kind {
	return []connector.Kind{{Name: "sqlite",
		Doc: "writes results to a SQLite table as an upsert by key and window (the newest run and pane wins)",
		Sink: &connector.SinkKind{Roles: connector.RoleResults, Abilities: connector.AbilityIdempotent | connector.AbilityUpsert, Check: check, OpenResults: openResults, Revise: connector.ReviseTable, OpenStore: openStore, Fields: []connector.Field{
			{Name: "path", Required: true, Doc: "the database file (relative to the spec's directory)"},
			{Name: "table", Doc: "the table (default results)"},
		}}}}
}

func check(c connector.Checker, output string) {
	if c.String("path") == "" {
		c.Report("path", "missing", "a sqlite sink needs a file path, such as "+output+".db")
	}
	tablerow.CheckTable(c, output, false)
}

// openResults opens a job spec's sqlite results sink.
func openResults(_ context.Context, o connector.ResultsOpen) (connector.ResultsSink, error) {
	names := make([]string, len(o.Values))
	for i, c := range o.Values {
		names[i] = c.Name
	}
	s, err := Open(o.Path(o.Settings.String("path")), o.Keys, names, Options{Table: o.Settings.String("table"), Job: o.Job})
	if err != nil {
		return nil, err
	}
	return results{s}, nil
}

// results is a Sink as a connector.ResultsSink.
type results struct{ *Sink }

func (r results) Reset(context.Context) (int64, error)  { return r.Sink.Reset() }
func (r results) MaxRun(context.Context) (int64, error) { return r.Sink.MaxRun() }

// openStore opens a job spec's sqlite results table for weir backfill and
// the complete answer (connector.SinkKind.OpenStore).
func openStore(_ context.Context, o connector.StoreOpen) (connector.ResultsStore, error) {
	keys, values := connector.TableColumns(o.Keys, o.Values)
	return OpenTableStore(o.Path(o.Settings.String("path")), o.Settings.String("table"), keys, values)
}

// OpenTableStore opens table (default DefaultTable) of the database file
// at path, with the key and value columns a Sink was opened with (their
// types say how a value reads back), as a store that weir backfill
// revises (backfill.IntoTable).
func OpenTableStore(path, table string, keys, values []connector.ColumnDef) (*connector.TableStore, error) {
	// Opening a file that is not there would create a database.
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a SQLite file (%v): %w", path, cmp.Or(err, errors.New("not a regular file")), connector.ErrNoResults)
	}
	db, err := sql.Open("sqlite", DSN(path))
	if err != nil {
		return nil, err
	}
	return &connector.TableStore{DB: db, Dialect: dialect{path: path}, Table: cmp.Or(table, DefaultTable), Where: path, Keys: keys, Values: values}, nil
}

// dialect is SQLite's SQL (connector.SQLDialect); path is the database
// file, for messages.
type dialect struct{ path string }

func (dialect) Rebind(q string) string                                    { return q }
func (dialect) Param(connector.ColumnType) string                         { return "?" }
func (dialect) Text(col string) string                                    { return col }
func (dialect) ForUpdate() string                                         { return "" }
func (dialect) TextIsJSON(connector.ColumnType) bool                      { return false }
func (dialect) Transient(error) bool                                      { return false }
func (dialect) Arg(_ connector.ColumnType, v []byte, _ bool) (any, error) { return Value(v) }

func (d dialect) CheckTable(_ context.Context, db *sql.DB, table string, keys, values []connector.ColumnDef) error {
	return CheckTable(db, d.path, table, names(keys), names(values))
}

func (dialect) HasTable(ctx context.Context, db *sql.DB, table string) (bool, error) {
	var n int
	err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&n)
	return n > 0, err
}

func (dialect) HasColumn(ctx context.Context, db *sql.DB, table, column string) (bool, error) {
	var n int
	err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = ?`, table, column).Scan(&n)
	return n > 0, err
}

func names(defs []connector.ColumnDef) []string {
	n := make([]string, len(defs))
	for i, d := range defs {
		n[i] = d.Name
	}
	return n
}
