package pgio

import (
	"fmt"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/internal/tablerow"
)

// Kinds are the job spec's kinds of this package: the postgres sink.
func Kinds() []connector.Kind {
	return []connector.Kind{{Name: "postgres",
		Doc: "writes results as an upsert by key and window (the newest run and pane wins), late records and dead letters once by their id; waits while the server is away",
		Sink: &connector.SinkKind{Roles: connector.AllRoles, Abilities: connector.AbilityIdempotent | connector.AbilityUpsert, RecordAbilities: connector.AbilityIdempotent | connector.AbilityTransactional, Check: check, Fields: []connector.Field{
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
