package sqliteio

import (
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/internal/tablerow"
)

// Kinds are the job spec's kinds of this package: the sqlite sink.
func Kinds() []connector.Kind {
	return []connector.Kind{{Name: "sqlite",
		Doc: "writes results to a SQLite table as an upsert by key and window (the newest run and pane wins)",
		Sink: &connector.SinkKind{Roles: connector.RoleResults, Abilities: connector.AbilityIdempotent | connector.AbilityUpsert, Check: check, Fields: []connector.Field{
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
