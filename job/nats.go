package job

import (
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/fileio"
	"github.com/weirstream/weir/connector/natsio"
	"github.com/weirstream/weir/internal/record"
	"github.com/weirstream/weir/spec"
)

// natsRecords is the stream of a nats source, decoded.
func (j *Job) natsRecords(env *weir.Env) weir.Stream[record.Record] {
	p := j.plan
	n := p.Source.NATS
	src := natsio.NewSource(natsio.SourceOptions{URL: n.URL, Stream: n.Stream, Subjects: n.Subjects, Start: natsStart(p.Start),
		StopAtEnd: n.StopAtEnd, Logger: j.env.Options().Logger})
	j.srcName = "nats:" + n.Stream
	msgs := weir.FromSource(env, sourceStage, src, j.unboundedOptions(n.StopAtEnd))
	return weir.TryMap(msgs, func(m natsio.Message) (record.Record, error) {
		v, err := j.dec.Decode(fileio.Line{Kind: fileio.Data, No: int64(m.Sequence), Text: m.Data, Unchecked: true})
		if err == nil && p.TSFromNATS {
			v.TS = m.Published
		}
		return v, err
	})
}

// natsStart is the plan's start position as the NATS source's.
func natsStart(s spec.Start) natsio.Start {
	switch s.Kind {
	case spec.StartSequence:
		return natsio.StartAtSequence(s.Seq)
	case spec.StartTime:
		return natsio.StartAtTime(s.At)
	}
	return natsio.Start{}
}
