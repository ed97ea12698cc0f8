package spec

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/weirstream/weir/connector"
)

// StartKind is where a broker source starts without a checkpoint
// (connector.StartKind).
type StartKind = connector.StartKind

// The start positions (see connector.StartKind).
const (
	StartEarliest  = connector.StartEarliest
	StartLatest    = connector.StartLatest
	StartCommitted = connector.StartCommitted
	StartTime      = connector.StartTime
	StartSequence  = connector.StartSequence
)

// Start is a broker source's compiled start position.
type Start = connector.Start

// kafkaSource checks source.kafka: the kind checks its settings, the spec
// compiles the start position and checks what spans the job.
func (c *compiler) kafkaSource(typ string) {
	s, p := &c.s.Source, c.p
	k := s.Kafka
	if !c.sourceBlock(typ, "kafka", k != nil, "a kafka source needs brokers and a topic: kafka: {brokers: [127.0.0.1:9092], topic: orders}") {
		return
	}
	switch st := strings.TrimSpace(k.Start); st {
	case "", "earliest":
		p.Start = Start{Kind: StartEarliest}
	case "latest":
		p.Start = Start{Kind: StartLatest}
	case "committed":
		p.Start = Start{Kind: StartCommitted}
		if k.Group == "" {
			c.add("source.kafka.group", "missing", "start: committed reads the offsets of a consumer group: name it")
		}
	default:
		t, err := time.Parse(time.RFC3339, st)
		if err != nil {
			c.add("source.kafka.start", fmt.Sprintf("%q is not earliest, latest, committed or an RFC 3339 time", st), "such as earliest or 2026-11-30T00:00:00Z")
		}
		p.Start = Start{Kind: StartTime, At: t}
	}
	if s.Format != "" && s.Format != "jsonl" {
		c.add("source.format", "kafka record values are JSON objects", "remove format")
	}
	if p.Time == IngestionTime {
		c.add("time", "a kafka source has event time (a field, or the Kafka timestamp) or processing time", "use time: event or time: processing")
	}
	if s.FinalWatermark != nil && *s.FinalWatermark && !k.StopAtEnd {
		c.add("source.final_watermark", "a kafka source that runs until stopped has no end of input", "remove final_watermark, or set kafka.stop_at_end")
	}
}

// sourceBlock checks the source's settings block of kind name (kafka:,
// nats:): set only for a source of that type, and given for one (missing
// says how). When it is there to check, the kind checks its settings and
// sourceBlock returns true.
func (c *compiler) sourceBlock(typ, name string, set bool, missing string) bool {
	switch {
	case typ != name:
		if set {
			c.add("source."+name, "only a "+name+" source takes "+name+" settings", "use type: "+name+", or remove "+name)
		}
		return false
	case !set:
		c.add("source."+name, "missing", missing)
		return false
	}
	if k, ok := c.reg.Lookup(typ); ok && k.Source != nil && k.Source.Check != nil {
		k.Source.Check(checker{c: c, path: "source", v: reflect.ValueOf(&c.s.Source).Elem()})
	}
	return true
}
