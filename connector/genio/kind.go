package genio

import "github.com/weirstream/weir/connector"

// Kinds are the job spec's kinds of this package: the generator source.
func Kinds() []connector.Kind {
	return []connector.Kind{{Name: "generator",
		Doc: "generates orders ({order_id, user_id, amount, ts}) with a chosen rate, disorder and share of bad records, reproducibly from a seed",
		Source: &connector.SourceKind{Abilities: connector.AbilityPositions, Fields: []connector.Field{
			{Name: "generator.records", Doc: "records to generate (default: rate × duration)"},
			{Name: "generator.rate", Doc: "records per second of event time (default 1000); with pace: wall, of the clock too"},
			{Name: "generator.keys", Doc: "distinct user_id values (default 100)"},
			{Name: "generator.duration", Doc: "the event time the records span (default 1h)"},
			{Name: "generator.start", Doc: "the first record's event time, RFC 3339 or now (default 2026-01-01T00:00:00Z)"},
			{Name: "generator.pace", Doc: "none (default: as fast as the job reads) or wall (rate records per second of the clock)"},
			{Name: "generator.disorder", Doc: "delay bands {share, min, max}: how late records are"},
			{Name: "generator.bad", Doc: "the share of malformed records, for dead letters"},
			{Name: "generator.seed", Doc: "the random seed (default 1)"},
			{Name: "channels", Doc: "parallel source channels (default 1)"},
		}}}}
}
