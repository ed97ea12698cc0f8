package backfill

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/pgio"
	"github.com/weirstream/weir/connector/sqliteio"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/record"
	"github.com/weirstream/weir/ledger"
)

// Table is the results table that a Go program's pgio or sqliteio sink
// writes (through pgio.ResultRows or sqliteio.ResultRows, or rows of the
// same layout), as the program opened it: what IntoTable revises.
type Table struct {
	// Postgres is the connection string of a pgio table, SQLite the
	// path of a sqliteio one: set one.
	Postgres, SQLite string
	// Name is the table's name; default "results".
	Name string
	// Job is the sink's Options.Job: the job whose rows are revised.
	Job string
	// Keys are the key columns and Values the value columns, as the sink
	// was opened with them (pgio.Open's keys and values; for SQLite,
	// sqliteio.Open's names with the types of the values written, which
	// say how a stored value reads back: see Fold.Seed). A key column is
	// named as the key member of the ledger's entries
	// (ledger.LateEntries' key).
	Keys, Values []pgio.ColumnDef
}

// Fold is how IntoTable folds too-late records of type T into a window's
// stored result, through an accumulator of type A. Its functions are
// called from one goroutine.
type Fold[T, A any] struct {
	// Seed returns the accumulator of a window whose row holds values:
	// its value columns (Table.Values) as JSON. A text column reads as a
	// JSON string; a number column as the number's text (exact: numeric
	// keeps its digits); a jsonb column as its JSON (in SQLite, a text
	// value that is a JSON array or object as that JSON, any other as a
	// JSON string); NULL as null. With values nil the window never fired:
	// Seed returns the empty accumulator.
	Seed func(values []json.RawMessage) (A, error)
	// Add folds one record into the accumulator.
	Add func(A, T) A
	// Values returns the revised row's value columns as JSON, in the
	// order of Table.Values, each a value its column's type takes (as
	// Postgres would: an integer for bigint, a number for double and
	// numeric, any JSON for jsonb; null for none), whichever the
	// database.
	Values func(A) ([]json.RawMessage, error)
	// Decode decodes a ledger entry's record (ledger.Entry.Record);
	// default: encoding/json into a T, as ledger.LateEntries encoded it.
	Decode func(json.RawMessage) (T, error)
}

// Aggregate returns the Fold of an aggregate whose result is its
// accumulator (weir.Sum, a count, a minimum or a maximum), stored in one
// value column with encoding/json (as pgio.ResultRows and
// sqliteio.ResultRows store it): the stored value is the accumulator, and
// the revision is the accumulator with the late records added.
func Aggregate[T, A any](agg weir.AggregateFunc[T, A, A]) Fold[T, A] {
	return Fold[T, A]{
		Seed: func(values []json.RawMessage) (A, error) {
			acc := agg.CreateAccumulator()
			if values == nil {
				return acc, nil
			}
			if len(values) != 1 {
				return acc, fmt.Errorf("backfill.Aggregate folds into one value column; the table has %d", len(values))
			}
			var stored A
			if err := json.Unmarshal(values[0], &stored); err != nil {
				return acc, fmt.Errorf("stored value %s: %w", values[0], err)
			}
			return agg.Merge(acc, stored), nil
		},
		Add: agg.Add,
		Values: func(acc A) ([]json.RawMessage, error) {
			b, err := json.Marshal(agg.Result(acc))
			return []json.RawMessage{b}, err
		},
	}
}

// TableOptions configures IntoTable.
type TableOptions struct {
	// Ledger is the ledger's directory (ledger.OpenSink's dir).
	Ledger string
	// LedgerSink is the name the ledger's sink has in the job
	// (weir.SinkOptions.Name); default "late".
	LedgerSink string
	// Checkpoints is the live job's checkpoint directory
	// (checkpoint.Open's): the backfill reads the ledger only as far as
	// the newest checkpoint there committed it (nothing while there is
	// none), so that it may run beside the live job. "": all of the
	// ledger, for a job that has ended or takes no checkpoints.
	Checkpoints string
	// AllowedLateness is the window operator's: an entry whose window
	// had not been cleaned up when it arrived (a ledger written by
	// another job) is left alone and counted as WindowOpen.
	AllowedLateness time.Duration
	// DryRun reports what would change and writes nothing.
	DryRun bool
	// Out, when set, is told about each window changed.
	Out io.Writer
	// Filter, when set, chooses the entries to apply.
	Filter func(ledger.Entry) bool
	// WindowsPerTx is how many windows one transaction revises (0:
	// DefaultWindowsPerTx).
	WindowsPerTx int
	// Timeout bounds each Postgres transaction (default
	// pgio.DefaultTimeout); a batch that fails because Postgres is
	// unavailable is tried again for RetryFor (default
	// pgio.DefaultConnectRetryFor), each retry told to Warn.
	Timeout, RetryFor time.Duration
	Warn              func(msg string)
	// Crash, when set, is called at the named points of each
	// transaction (crash tests): backfill-begun, backfill-written,
	// backfill-committed.
	Crash func(point string)
}

// IntoTable is the backfill of a Go program's job (Backfill is a job
// spec's): it folds the too-late records of the ledger in o.Ledger into
// the windows of table t that they missed, with f, as a job spec's
// backfill does. Per window, in one transaction, it loads the row, skips
// the entries already applied, folds the others and writes the next
// revision (pane + 1, firing "backfill", the newest watermark at which
// one of the folded entries arrived) together with the ids of the
// entries it applied (in a table beside t, named after it,
// <table>_backfill_applied, each id qualified by the row's run), so that
// running it again changes nothing and a run killed half way and run
// again ends in the same state. A window that never fired gets its first
// row, pane 0. Session windows are not revised: do not run it on their
// ledger. A table that holds no rows of t.Job is refused (a wrong job
// would give each window a new row of its late records only), and so are
// a SQLite file or ledger directory that is not there.
//
// The report's Watermark is etime.MaxTime: IntoTable knows no live
// watermark. The ledger is locked against other backfills while it runs (not
// against the live job, which appends). ctx stops it between windows, in
// a retry's wait and in a Postgres transaction (which is then rolled
// back).
func IntoTable[T, A any](ctx context.Context, t Table, f Fold[T, A], o TableOptions) (BackfillReport, error) {
	if (t.Postgres == "") == (t.SQLite == "") {
		return BackfillReport{}, errors.New("backfill: Table: set Postgres (a connection string) or SQLite (a path), one of them")
	}
	if f.Seed == nil || f.Add == nil || f.Values == nil {
		return BackfillReport{}, errors.New("backfill: Fold: Seed, Add and Values are required (backfill.Aggregate makes them for weir.Sum and the like)")
	}
	if o.Ledger == "" {
		return BackfillReport{}, errors.New("backfill: TableOptions.Ledger: the ledger's directory is required")
	}
	if t.SQLite != "" {
		// Opening a path that is not there would create a database.
		if fi, err := os.Stat(t.SQLite); err != nil || !fi.Mode().IsRegular() {
			return BackfillReport{}, fmt.Errorf("backfill: Table.SQLite: %s is not a SQLite file (%v): give the results sink's database", t.SQLite, cmp.Or(err, errors.New("not a regular file")))
		}
	}
	// Locking a directory that is not there would create it.
	if fi, err := os.Stat(o.Ledger); err != nil || !fi.IsDir() {
		return BackfillReport{}, fmt.Errorf("backfill: TableOptions.Ledger: %s is not a directory (%v): give ledger.OpenSink's dir", o.Ledger, cmp.Or(err, errors.New("a file")))
	}
	if strings.HasPrefix(filepath.Base(o.Ledger), "day=") {
		return BackfillReport{}, fmt.Errorf("backfill: TableOptions.Ledger: %s is one day of a ledger; give the ledger's directory, %s", o.Ledger, filepath.Dir(o.Ledger))
	}
	var store *connector.TableStore
	var err error
	if t.Postgres != "" {
		store, err = pgio.OpenTableStore(t.Postgres, cmp.Or(t.Name, "results"), t.Keys, t.Values, o.Timeout)
	} else {
		store, err = sqliteio.OpenTableStore(t.SQLite, cmp.Or(t.Name, "results"), t.Keys, t.Values)
	}
	if err != nil {
		return BackfillReport{}, err
	}
	tb := table{TableStore: store, job: t.Job,
		columnsFix: "give backfill.Table's Keys and Values as the results sink was opened with them",
		missingFix: "give backfill.Table's Name as the results sink was opened with it (Options.Table)",
		noRows:     "Table.Job must be the results sink's Options.Job"}
	opened := false
	defer func() {
		if !opened {
			tb.Close()
		}
	}()
	name := cmp.Or(o.LedgerSink, "late")
	// A dry run takes the lock too: beside a backfill half applied, its
	// comparison would show differences that are not there.
	r, err := ledger.OpenReader(o.Ledger, true)
	if err != nil {
		return BackfillReport{}, err
	}
	src := ledgerSource{{name, r}}
	defer src.close()
	bo := BackfillOptions{DryRun: o.DryRun, Out: o.Out, Filter: o.Filter, WindowsPerTx: o.WindowsPerTx, Warn: o.Warn, Crash: o.Crash}
	ps := pass{ctx: ctx, o: &bo, src: src, wm: etime.MaxTime, entryWM: true, runScoped: true, desc: "all of it (no checkpoints given)",
		lateness: etime.FromDuration(o.AllowedLateness), fold: &goFolder[T, A]{f: f, types: t.Values},
		retryFor: cmp.Or(o.RetryFor, pgio.DefaultConnectRetryFor)}
	ps.open = func() (windowStore, error) {
		opened = true // openSQLStore closes it
		return openSQLStore(ctx, &bo, tb)
	}
	if o.Checkpoints != "" {
		if fi, err := os.Stat(o.Checkpoints); err != nil || !fi.IsDir() {
			return BackfillReport{}, fmt.Errorf("backfill: TableOptions.Checkpoints: %s is not a directory (%v): give the live job's checkpoint directory, or leave it empty to read all of the ledger", o.Checkpoints, cmp.Or(err, errors.New("a file")))
		}
		part, id, ok, err := weir.LatestPreCommitPart(o.Checkpoints, weir.SinkPartName(name))
		if err != nil {
			return BackfillReport{}, fmt.Errorf("backfill: the ledger's cut (sink %q) in %s: %w; set TableOptions.LedgerSink to the ledger sink's weir.SinkOptions.Name", name, o.Checkpoints, err)
		}
		ps.cut = &ledgerCut{states: map[string][]byte{}}
		if ok {
			_, state, err := weir.SinkPreCommit(part)
			if err == nil {
				err = json.Unmarshal(state, new(ledger.Pos))
			}
			if err != nil {
				return BackfillReport{}, fmt.Errorf("backfill: checkpoint %d, sink %q: %w", id, name, err)
			}
			ps.cut.states[name] = state
			ps.desc = fmt.Sprintf("checkpoint %d: %s", id, src.describe(ps.cut))
		} else {
			ps.desc = "nothing yet; the job has not completed a checkpoint"
		}
	}
	return ps.run()
}

// goFolder is a Go program's Fold as a folder.
type goFolder[T, A any] struct {
	f     Fold[T, A]
	types []pgio.ColumnDef
}

func (g *goFolder[T, A]) decode(e ledger.Entry) (any, error) {
	if g.f.Decode != nil {
		return g.f.Decode(e.Record)
	}
	var v T
	err := json.Unmarshal(e.Record, &v)
	return v, err
}

func (g *goFolder[T, A]) seed(vals []any) (any, error) {
	if vals == nil {
		return g.f.Seed(nil)
	}
	js := make([]json.RawMessage, len(vals))
	for i, v := range vals {
		j, err := storedJSON(g.types[i].Type, v)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", g.types[i].Name, err)
		}
		js[i] = j
	}
	return g.f.Seed(js)
}

func (g *goFolder[T, A]) add(acc, rec any) any { return g.f.Add(acc.(A), rec.(T)) }

func (g *goFolder[T, A]) result(acc any, _ *BackfillReport) (values, shown []string, err error) {
	js, err := g.f.Values(acc.(A))
	if err != nil {
		return nil, nil, err
	}
	if len(js) != len(g.types) {
		return nil, nil, fmt.Errorf("Fold.Values gave %d values for %d value columns", len(js), len(g.types))
	}
	values = make([]string, len(js))
	for i, j := range js {
		// As a Postgres column of its type takes it, whichever the
		// database: SQLite would store 1.5 in a bigint column.
		if len(j) == 0 || !json.Valid(j) {
			return nil, nil, fmt.Errorf("Fold.Values[%d] (column %s) is %q, not a JSON value (null for none)", i, g.types[i].Name, j)
		}
		if _, err := pgio.Arg(g.types[i].Type, j, false); err != nil {
			return nil, nil, fmt.Errorf("Fold.Values[%d] (column %s, %s): %w", i, g.types[i].Name, g.types[i].Type, err)
		}
		values[i] = string(j)
	}
	return values, values, nil
}

// storedJSON is a value windowStore.load read from a column of type t,
// as JSON (see Fold.Seed).
func storedJSON(t pgio.Type, v any) (json.RawMessage, error) {
	switch x := v.(type) {
	case nil:
		return json.RawMessage("null"), nil
	case int64:
		return strconv.AppendInt(nil, x, 10), nil
	case float64:
		return json.Marshal(x)
	case record.NumText:
		return json.RawMessage(x), nil
	case []byte: // SQLite's text of a number beyond int64 and float64
		return json.RawMessage(x), nil
	case json.RawMessage:
		return x, nil
	case string:
		if t == pgio.JSONB && json.Valid([]byte(x)) && x != "" && (x[0] == '[' || x[0] == '{') {
			return json.RawMessage(x), nil
		}
		if t != pgio.Text && t != pgio.JSONB && isNumberText(x) {
			return json.RawMessage(x), nil
		}
		return json.Marshal(x)
	}
	return nil, fmt.Errorf("unexpected %T", v)
}
