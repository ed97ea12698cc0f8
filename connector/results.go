package connector

import (
	"context"
	"log/slog"
	"time"

	"github.com/weirstream/weir/etime"
)

// Column is one named value of a Row; Value is the value's JSON text. How
// a table stores it is the sink's.
type Column struct {
	Name  string
	Value []byte
}

// Row is one revision of a window's result, as a results table holds it:
// one row per (key, window), the revision of the highest (Run, Pane)
// winning.
type Row struct {
	Keys       []Column   // the key fields, in the order the sink was opened with
	Start, End etime.Time // the window; the global window is (etime.MinTime, etime.MaxTime)
	Firing     string     // "early", "on_time", "late" or "retract"
	Run        int64      // the run of the job that wrote it (ordered: a later run's is higher)
	Pane       int64
	Watermark  etime.Time
	Values     []Column // the value columns, in the order the sink was opened with (none for retract)
}

// ResultColumn is a value column of a job spec's results: the column an
// aggregate fills, or the one that keeps the accumulators a backfill
// folds late records into.
type ResultColumn struct {
	Name string
	// Fn is the aggregate (count, sum, min, max, avg, first, last,
	// collect, count_distinct); "" for the accumulators' column (text).
	Fn string
	// Float: sum, avg, min and max compute in float64 (else exact
	// decimals, up to 38 digits).
	Float bool
	// String: min and max of strings (a text column).
	String bool
}

// Settings is a source's or sink's settings in a job spec, read by their
// Field names (a dotted name reads a nested block: sasl.user). An unset
// setting reads as its zero value. The job spec has filled in the
// defaults its kind's Check gave.
type Settings interface {
	String(field string) string
	Strings(field string) []string
	Int(field string) int
	Float(field string) float64
	Bool(field string) bool
	// List is a list of blocks, each read by its own Settings (a
	// generator's disorder bands); nil when unset.
	List(field string) []Settings
	// Duration is a duration setting; ok is false when it is unset.
	Duration(field string) (d time.Duration, ok bool)
	// Set reports whether the spec gives the setting.
	Set(field string) bool
}

// ResultsOpen is what a job spec's runner gives SinkKind.OpenResults.
type ResultsOpen struct {
	// Settings are the sink's, at Output (sinks.results, or
	// sinks.results[i] in a list) in messages.
	Settings Settings
	Output   string
	// Path resolves a path setting (relative paths start at the spec's
	// directory).
	Path func(string) string
	// Job is the job's name, the rows' job column.
	Job string
	// Keys are the key columns, Values the value columns, in row order.
	Keys   []string
	Values []ResultColumn
	// Layout, if not nil, is the table's own layout, which a kind that
	// takes one (postgres) writes instead of weir's (spec.Sink.Layout).
	Layout *TableLayout
	// Logger receives the sink's warnings (retries, say); Stopping is
	// done when the job is stopping, so that a sink that waits (for a
	// server) gives up.
	Logger   *slog.Logger
	Stopping context.Context
}

// TableLayout is a results table of its own declared columns, as Flink's
// JDBC sink writes a table made for a Flink job, instead of weir's layout
// (the job column, the keys, window_start, window_end, firing, run, pane,
// watermark and the values).
type TableLayout struct {
	// Columns are the table's columns, in order.
	Columns []LayoutColumn
	// PrimaryKey names the columns the rows are upserted by: those
	// holding the key fields and the window's bounds.
	PrimaryKey []string
}

// LayoutColumn is one column of a TableLayout.
type LayoutColumn struct {
	// Name is the column's name; From what it holds: a key field, an
	// aggregate (a value column), window_start, window_end, window_time
	// or the firing's firing, run, pane or watermark (default Name).
	Name, From string
	// Time is how a time is written: "" or ms (epoch milliseconds),
	// timestamp, timestamp_ltz or date.
	Time string
	// Type is the column's SQL type, which a missing table is created
	// with (default: one that holds what it holds).
	Type string
}

// RunlessTable is a ResultsSink whose table may keep no run (a table of
// its own layout without a run column): when Runless is true, MaxRun
// cannot tell whether the table holds a run's rows, so a resume does not
// check it (a removed table is not noticed).
type RunlessTable interface {
	Runless() bool
}

// ResultsSink is a job spec's sink of results opened through the
// registry: an Idempotent sink of rows, each upserted by (job, keys,
// window) unless the table holds a revision of a higher (run, pane), a
// retraction deleting an older one. A fresh start removes the job's rows
// (Reset); a run that keeps them goes above the newest run they hold
// (MaxRun). The runner calls Write at checkpoints (or as it goes without
// them), Flush when they must be durable, and Close at the end; calls
// are serialized.
type ResultsSink interface {
	Sink[Row]
	Idempotent
	Reset(ctx context.Context) (int64, error)
	MaxRun(ctx context.Context) (int64, error)
}

// UnavailableReporter is a sink that can tell that it is failing to reach
// its server and waiting for it (a Postgres table), so that a runner
// reports the job as waiting for the sink. Unavailable is safe to call
// from any goroutine while another one writes.
type UnavailableReporter interface {
	Unavailable() bool
}
