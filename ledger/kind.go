package ledger

import "github.com/weirstream/weir/connector"

// Kinds are the job spec's kinds of this package: the ledger sink.
func Kinds() []connector.Kind {
	return []connector.Kind{{Name: "ledger",
		Doc: "keeps every too-late record, checksummed, in day segments committed with the checkpoints, for weir backfill",
		Sink: &connector.SinkKind{Roles: connector.RoleLate, RecordAbilities: connector.AbilityTransactional, Reasons: true, Check: check, OpenMessages: openMessages, OpenLedger: openLedger, Fields: []connector.Field{
			{Name: "dir", Required: true, Doc: "the ledger's directory (entries under <dir>/<job>/day=YYYY-MM-DD/)"},
			{Name: "retention", Doc: "day directories older than this are removed (default: kept)"},
		}}}}
}

func check(c connector.Checker, _ string) {
	if c.String("dir") == "" {
		c.Report("dir", "missing", "a ledger needs a directory, such as ledger")
	}
	c.Positive("retention", "the retention")
}
