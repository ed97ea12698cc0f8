package fileio

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/weirstream/weir/connector"
)

var lineFields = []connector.Field{
	{Name: "format", Doc: "jsonl (default: a JSON object per line) or csv (a header row names the fields)"},
	{Name: "channels", Doc: "parallel source channels (default 1); replay lines say which channel a line belongs to"},
}

// Kinds are the job spec's kinds of this package: file and stdin
// sources, jsonl and stdout sinks.
func Kinds() []connector.Kind {
	return []connector.Kind{
		{Name: "file", Doc: "reads records from a file, one per line; its line numbers are the checkpoint positions",
			Source: &connector.SourceKind{Abilities: connector.AbilityPositions, Open: openLines(false), OwnEnd: true,
				Fields: append([]connector.Field{{Name: "path", Required: true, Doc: "the input file (relative to the spec's directory)"}}, lineFields...),
				Replay: func(s connector.Settings, path func(string) string) error {
					if _, err := os.Stat(path(s.String("path"))); err != nil {
						return fmt.Errorf("the complete answer reads the input again, and the source file cannot be read: %w", err)
					}
					return nil
				}}},
		{Name: "stdin", Doc: "reads records from standard input, one per line (no checkpoints: a restore could not read it again)",
			Source: &connector.SourceKind{Fields: lineFields, Open: openLines(true), OwnEnd: true}},
		{Name: "jsonl", Doc: "writes a JSON object per line to a file, cut back to the checkpoint on a restore",
			Sink: &connector.SinkKind{Roles: connector.AllRoles, Abilities: connector.AbilityTransactional, RecordAbilities: connector.AbilityTransactional,
				OpenMessages: openJSONL, Revise: connector.ReviseLog, OpenStore: openStore,
				Check: func(c connector.Checker, output string) {
					if c.String("path") == "" {
						c.Report("path", "missing", "a jsonl sink needs a file path, such as "+output+".jsonl")
					}
				},
				Fields: []connector.Field{{Name: "path", Required: true, Doc: "the output file (relative to the spec's directory)"}, connector.ColumnsField}}},
		{Name: "stdout", Doc: "writes a JSON object per line to standard output (a replay after a restore writes again)",
			Sink: &connector.SinkKind{Roles: connector.AllRoles, OpenMessages: openStdout, Fields: []connector.Field{connector.ColumnsField}}},
		{Name: "blackhole", Doc: "discards what it is given, as Flink's blackhole connector: for benchmarks (the summary still counts every row and record)",
			Sink: &connector.SinkKind{Roles: connector.AllRoles, OpenMessages: openBlackhole, Fields: []connector.Field{connector.ColumnsField}}},
	}
}

// openLines opens a file source (or, stdin, the stdin source) as a job
// spec's source.
func openLines(stdin bool) connector.SourceOpener {
	return func(_ context.Context, so connector.SourceOpen) (connector.OpenedSource, error) {
		o := Options{Format: JSONL, Channels: so.Channels, Strict: so.Strict, Final: so.Final, Stop: so.Stop}
		if so.CSV {
			o.Format, o.Columns = CSV, so.Settings.Strings("csv_columns")
		}
		if stdin {
			o.Input, o.Name = so.Stdin, "stdin"
			if o.Input == nil {
				o.Input = strings.NewReader("")
			}
		} else {
			path := so.Settings.String("path")
			o.Path, o.Name = so.Path(path), path
		}
		src, err := New(o)
		return connector.OpenedSource{Source: src, Name: o.Name}, err
	}
}
