package pgio

import (
	"context"
	"fmt"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/internal/tablerow"
)

// Kinds are the job spec's kinds of this package: the postgres sink.
func Kinds() []connector.Kind {
	return []connector.Kind{{Name: "postgres",
		Doc: "writes results as an upsert by key and window (the newest run and pane wins), late records and dead letters once by their id; waits while the server is away",
		Sink: &connector.SinkKind{Roles: connector.AllRoles, Abilities: connector.AbilityIdempotent | connector.AbilityUpsert, RecordAbilities: connector.AbilityIdempotent | connector.AbilityTransactional, Reasons: true, Check: check, OpenResults: openResults, OpenMessages: openMessages, Fields: []connector.Field{
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
	return Open(ctx, o.Settings.String("url"), o.Settings.String("table"), keys, values, opts)
}
