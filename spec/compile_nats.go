package spec

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// natsSource checks source.nats.
func (c *compiler) natsSource(typ string) {
	s, p := &c.s.Source, c.p
	n := s.NATS
	if !c.sourceBlock(typ, "nats", n != nil, "a nats source needs a stream: nats: {url: nats://127.0.0.1:4222, stream: ORDERS}") {
		return
	}
	switch st := strings.TrimSpace(n.Start); {
	case st == "" || st == "earliest":
	default:
		if seq, err := strconv.ParseUint(st, 10, 64); err == nil && seq > 0 {
			p.Start = Start{Kind: StartSequence, Seq: seq}
		} else if t, err := time.Parse(time.RFC3339, st); err == nil {
			p.Start = Start{Kind: StartTime, At: t}
		} else {
			c.add("source.nats.start", fmt.Sprintf("%q is not earliest, a stream sequence or an RFC 3339 time", st), "such as earliest, 1000 or 2026-11-30T00:00:00Z")
		}
	}
	if s.Format != "" && s.Format != "jsonl" {
		c.add("source.format", "nats message data are JSON objects", "remove format")
	}
	if s.FinalWatermark != nil && *s.FinalWatermark && !n.StopAtEnd {
		c.add("source.final_watermark", "a nats source that runs until stopped has no end of input", "remove final_watermark, or set nats.stop_at_end")
	}
}
