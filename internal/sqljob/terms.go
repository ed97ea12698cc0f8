package sqljob

import (
	"errors"
	"strings"

	"github.com/weirstream/weir/internal/sqlparse"
	"github.com/weirstream/weir/spec"
)

// sqlTerms are what the job spec's fields are in a SQL job, by field
// path prefix (the longest that matches wins).
var sqlTerms = []struct{ path, sql string }{
	{"allowed_lateness", "SET 'table.exec.emit.allow-lateness'"},
	{"late_firing_interval", "SET 'table.exec.emit.late-fire.delay'"},
	{"trigger.interval", "SET 'table.exec.emit.early-fire.delay'"},
	{"trigger", "the early-fire SET keys"},
	{"window.size", "the window's size (its INTERVAL)"},
	{"window.slide", "HOP's slide"},
	{"window.gap", "SESSION's gap"},
	{"window.offset", "the window's offset"},
	{"window", "the window function"},
	{"key", "GROUP BY"},
	{"aggregate", "the sink table's columns (the aggregates take their names)"},
	{"where", "WHERE"},
	{"having", "HAVING"},
	{"window.step", "CUMULATE's step"},
	{"computed", "the computed columns and views"},
	{"checkpoint.interval", "SET 'execution.checkpointing.interval'"},
	{"checkpoint.dir", "SET 'state.checkpoints.dir'"},
	{"watermark.idle_timeout", "SET 'table.exec.source.idle-timeout'"},
	{"watermark.interval", "SET 'pipeline.auto-watermark-interval'"},
	{"watermark", "the source table's WATERMARK"},
	{"source.timestamp", "the source table's time attribute"},
	{"source", "the source table's options"},
	{"sinks.late_partial", "the table of SET 'weir.late-partial.sink'"},
	{"sinks.late", "the table of SET 'weir.late.sink'"},
	{"sinks.dead_letter", "the table of SET 'weir.dead-letter.sink'"},
	{"sinks.results", "the sink table"},
	{"archive", "SET 'weir.archive.dir'"},
	{"name", "SET 'pipeline.name'"},
}

// InSQLTerms is a message about a job spec (a refusal of weir backfill,
// say) with the spec's spellings of its fixes as a SQL job's.
func InSQLTerms(msg string) string { return fixTerms.Replace(msg) }

// fixTerms rewrite the job spec's spellings in a fix as SQL's.
var fixTerms = strings.NewReplacer(
	"sinks.results.layout: declared", "'weir.layout' = 'declared'",
	"write the results in weir's layout (remove layout)", "write the results in weir's layout (remove 'weir.layout')",
	"add archive: {dir: archive}", "SET 'weir.archive.dir' = 'archive'",
	"set archive: {dir: archive}", "SET 'weir.archive.dir' = 'archive'",
	"set allowed_lateness (such as 2m)", "SET 'table.exec.emit.allow-lateness' (such as '2 min')",
	"remove late_firing_interval", "remove the late-fire delay",
	"allowed_lateness", "table.exec.emit.allow-lateness",
	"late_firing_interval", "table.exec.emit.late-fire.delay",
)

// places finds where in the SQL source a spec field came from (Job.places).
type places func(path string) (sqlparse.Pos, bool)

// inSQLTerms says the spec's errors of a compiled SQL job in SQL's terms:
// each field path with what it is in SQL, the fix with SQL's spellings,
// and the line it came from when at knows it (at may be nil).
func inSQLTerms(err error, at places) error {
	var es spec.Errors
	if !errors.As(err, &es) {
		return err
	}
	out := make(spec.Errors, len(es))
	for i, e := range es {
		out[i] = fieldInSQLTerms(e, at)
	}
	return out
}

// fieldInSQLTerms is a spec error or warning in SQL's terms, at its line
// when at knows it (at may be nil).
func fieldInSQLTerms(e spec.FieldError, at places) spec.FieldError {
	line := 0
	if at != nil {
		if pos, ok := at(e.Path); ok {
			line = pos.Line
		}
	}
	// The longest prefix of the spec's path, matched on the path as the
	// spec gave it.
	var best *struct{ path, sql string }
	for j, t := range sqlTerms {
		if (e.Path == t.path || strings.HasPrefix(e.Path, t.path+".") || strings.HasPrefix(e.Path, t.path+"[")) && (best == nil || len(t.path) > len(best.path)) {
			best = &sqlTerms[j]
		}
	}
	if best != nil {
		e.Path = best.sql + " (" + e.Path + ")"
	}
	e.Line = line
	e.Fix = fixTerms.Replace(e.Fix)
	return e
}
