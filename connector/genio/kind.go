package genio

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/etime"
)

// Kinds are the job spec's kinds of this package: the generator source.
func Kinds() []connector.Kind {
	return []connector.Kind{{Name: "generator",
		Doc: "generates orders ({order_id, user_id, amount, ts}) with a chosen rate, disorder and share of bad records, reproducibly from a seed",
		Source: &connector.SourceKind{Abilities: connector.AbilityPositions, Open: open, OwnEnd: true, Replay: replay, Fields: []connector.Field{
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

// replay: a generator gives the same records again unless it starts now.
func replay(s connector.Settings, _ func(string) string) error {
	if s.String("generator.start") == "now" {
		return errors.New("the complete answer reads the input again, and a generator with start: now gives other timestamps each time it runs; verify with a copy of the spec whose generator starts at a time, or leave out --verify")
	}
	return nil
}

// OptionsFrom reads a generator source's options from its settings, as a
// job spec compiles them (records and rate resolved, start given); the
// end hooks, the clock and the batch are left to the caller.
func OptionsFrom(s connector.Settings) (Options, error) {
	const g = "generator."
	o := Options{Records: int64(s.Int(g + "records")), Rate: s.Float(g + "rate"), Keys: s.Int(g + "keys"), Hot: s.Float(g + "hot"),
		Bad: s.Float(g + "bad"), Seed: uint64(s.Int(g + "seed"))}
	for _, b := range s.List(g + "disorder") {
		lo, _ := b.Duration("min")
		hi, _ := b.Duration("max")
		o.Disorder = append(o.Disorder, Band{Share: b.Float("share"), Min: etime.FromDuration(lo), Max: etime.FromDuration(hi)})
	}
	switch start := s.String(g + "start"); start {
	case "now":
		o.StartNow = true
	default:
		t, err := time.Parse(time.RFC3339Nano, start)
		if err != nil {
			return o, fmt.Errorf("genio: generator.start %q is not an RFC 3339 time", start)
		}
		o.Start = etime.FromTime(t)
	}
	if s.String(g+"pace") == "wall" {
		o.Pace = Wall
	}
	return o, nil
}

// open opens the generator as a job spec's source: paced by the job's
// clock when pace is wall, unpaced when so says.
func open(_ context.Context, so connector.SourceOpen) (connector.OpenedSource, error) {
	o, err := OptionsFrom(so.Settings)
	if err != nil {
		return connector.OpenedSource{}, err
	}
	o.Final, o.Stop, o.Clock = so.Final, so.Stop, so.Clock
	if so.Unpaced {
		o.Pace = Unpaced
		// Records that start now come faster than the clock runs: the
		// last are the span of event time they cover ahead of it.
		if span := etime.FromDuration(time.Duration(float64(o.Records) / o.Rate * float64(time.Second))); o.StartNow && so.MaxFuture > 0 && o.Rate > 0 && span > so.MaxFuture {
			return connector.OpenedSource{}, fmt.Errorf("source.generator: read unpaced (a --deterministic run's clock stands still), start: now puts the last records up to %v ahead of the clock, beyond source.timestamp.max_future (%v): they would be dead letters (timestamp_future); pace the generator by a running clock, or shorten duration, or raise max_future", span.Std(), so.MaxFuture.Std())
		}
	}
	src, err := New(o)
	return connector.OpenedSource{Source: src, Name: "generator"}, err
}
