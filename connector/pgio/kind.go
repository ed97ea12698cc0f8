package pgio

import "github.com/weirstream/weir/connector"

// Kinds are the job spec's kinds of this package: the postgres sink.
func Kinds() []connector.Kind {
	return []connector.Kind{{Name: "postgres", Package: "github.com/weirstream/weir/connector/pgio",
		Doc: "writes results as an upsert by key and window (the newest run and pane wins), late records and dead letters once by their id; waits while the server is away",
		Sink: &connector.SinkKind{Roles: connector.AllRoles, Abilities: connector.AbilityIdempotent | connector.AbilityUpsert, RecordAbilities: connector.AbilityIdempotent | connector.AbilityTransactional, Fields: []connector.Field{
			{Name: "url", Required: true, Doc: "the connection string, such as postgres://weir@127.0.0.1:5432/weir"},
			{Name: "table", Doc: "the table (default the output's name: results, late, late_partial or dead_letter)"},
			{Name: "timeout", Doc: "the deadline of every connect, statement batch and commit (default 30s)"},
			{Name: "retry_for", Doc: "how long the job waits for an unavailable server (default: until stopped)"},
			{Name: "connect_retry_for", Doc: "how long the first connect is retried (default 2m)"},
			{Name: "batch_rows", Doc: "rows per transaction (default 1000)"},
		}}}}
}
