package job

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/fileio"
	"github.com/weirstream/weir/connector/natsio"
	"github.com/weirstream/weir/internal/outfmt"
	"github.com/weirstream/weir/internal/record"
	"github.com/weirstream/weir/spec"
	"github.com/weirstream/weir/window"
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

// natsResults publishes result lines to a subject, each with a message id
// of prefix and its key, window, run and pane, flushed at each checkpoint.
// The first results sink has no prefix; results[i] has "results[i]/", so
// that two sinks whose subjects one stream stores do not drop each
// other's messages as duplicates.
type natsResults struct {
	s       *natsio.Sink
	subject string
	prefix  string
	j       *Job
	line    []byte
}

func openNATSResults(j *Job, name string, k *spec.Sink) (*natsResults, error) {
	s, err := openNATSSink(j, k)
	if err != nil {
		return nil, err
	}
	w := &natsResults{s: s, subject: k.Subject, j: j}
	if name != spec.ResultsName(0) {
		w.prefix = name + "/"
	}
	return w, nil
}

func openNATSSink(j *Job, k *spec.Sink) (*natsio.Sink, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return natsio.OpenSink(ctx, natsio.SinkOptions{URL: k.URL, Subject: k.Subject, Logger: j.env.Options().Logger})
}

// natsRecords publishes late records or dead letters, each with the
// message id prefix + run/entry id (the prefix is the sink's name and /),
// so a replay is dropped as duplicates; it commits and closes as
// natsResults does.
type natsRecords struct {
	natsResults
}

func (w *natsRecords) writeRecord(it *item) error {
	// The run is in the message id: a later run's record at the same
	// position is another message, not a duplicate JetStream drops.
	return w.s.Publish(w.prefix+strconv.FormatInt(w.j.run, 10)+"/"+it.id, w.subject, it.line, map[string]string{"weir-reason": it.reason})
}

func (w *natsResults) write(r window.Result[string, []byte]) error {
	w.line = outfmt.AppendResult(w.line[:0], w.j.plan, w.j.run, r)
	id := outfmt.AppendResultKey([]byte(w.prefix), w.j.plan, r)
	id = strconv.AppendInt(append(id, '#'), w.j.run, 10)
	id = strconv.AppendInt(append(id, '#'), r.Pane, 10)
	if r.Firing == window.Retract {
		id = append(id, "#retract"...)
	}
	return w.s.Publish(string(id), w.subject, w.line, map[string]string{"weir-firing": r.Firing.String(), "weir-run": strconv.FormatInt(w.j.run, 10), "weir-pane": strconv.FormatInt(r.Pane, 10)})
}

func (w *natsResults) commit() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return w.s.Flush(ctx)
}

// close flushes what a run that ended well published last, and closes.
func (w *natsResults) close() error {
	var err error
	if !w.j.execFailed && !w.j.failed.Load() {
		err = w.commit()
	}
	return errors.Join(err, w.s.Close())
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
