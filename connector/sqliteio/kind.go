package sqliteio

import (
	"context"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/internal/tablerow"
)

// Kinds are the job spec's kinds of this package: the sqlite sink.
func Kinds() []connector.Kind {
	return []connector.Kind{{Name: "sqlite",
		Doc: "writes results to a SQLite table as an upsert by key and window (the newest run and pane wins)",
		Sink: &connector.SinkKind{Roles: connector.RoleResults, Abilities: connector.AbilityIdempotent | connector.AbilityUpsert, Check: check, OpenResults: openResults, Fields: []connector.Field{
			{Name: "path", Required: true, Doc: "the database file (relative to the spec's directory)"},
			{Name: "table", Doc: "the table (default results)"},
		}}}}
}

func check(c connector.Checker, output string) {
	if c.String("path") == "" {
		c.Report("path", "missing", "a sqlite sink needs a file path, such as "+output+".db")
	}
	tablerow.CheckTable(c, output)
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
