package fileio

import "github.com/weirstream/weir/connector"

var lineFields = []connector.Field{
	{Name: "format", Doc: "jsonl (default: a JSON object per line) or csv (a header row names the fields)"},
	{Name: "channels", Doc: "parallel source channels (default 1); replay lines say which channel a line belongs to"},
}

// Kinds are the job spec's kinds of this package: file and stdin
// sources, jsonl and stdout sinks.
func Kinds() []connector.Kind {
	return []connector.Kind{
		{Name: "file", Doc: "reads records from a file, one per line; its line numbers are the checkpoint positions",
			Source: &connector.SourceKind{Abilities: connector.AbilityPositions,
				Fields: append([]connector.Field{{Name: "path", Required: true, Doc: "the input file (relative to the spec's directory)"}}, lineFields...)}},
		{Name: "stdin", Doc: "reads records from standard input, one per line (no checkpoints: a restore could not read it again)",
			Source: &connector.SourceKind{Fields: lineFields}},
		{Name: "jsonl", Doc: "writes a JSON object per line to a file, cut back to the checkpoint on a restore",
			Sink: &connector.SinkKind{Roles: connector.AllRoles, Abilities: connector.AbilityTransactional, RecordAbilities: connector.AbilityTransactional,
				OpenMessages: openJSONL,
				Check: func(c connector.Checker, output string) {
					if c.String("path") == "" {
						c.Report("path", "missing", "a jsonl sink needs a file path, such as "+output+".jsonl")
					}
				},
				Fields: []connector.Field{{Name: "path", Required: true, Doc: "the output file (relative to the spec's directory)"}}}},
		{Name: "stdout", Doc: "writes a JSON object per line to standard output (a replay after a restore writes again)",
			Sink: &connector.SinkKind{Roles: connector.AllRoles, OpenMessages: openStdout}},
	}
}
