package job

import (
	"context"
	"fmt"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/record"
	"github.com/weirstream/weir/spec"
)

// SourceHooks are how a job's source ends and watermarks, beside the
// plan: see connector.SourceOpen.
type SourceHooks struct {
	// Clock is the job's processing time.
	Clock clock.Clock
	// Final and Stop are SourceOpen's (kinds that end themselves).
	Final, Stop func() bool
	// Splits are SourceOpen's, for a kind that watermarks its splits.
	Splits *connector.SplitOptions
	// Unpaced is SourceOpen's (a deterministic run reads unpaced too).
	Unpaced bool
	// Reach is SourceOpen's (nil: not watched).
	Reach *connector.Reach
	// Checkpointed is SourceOpen's.
	Checkpointed bool
}

// OpenSource opens the plan's source through its kind in the plan's
// registry (connector.SourceKind.Open), with the options the plan and o
// give it. It returns the kind with the source.
func OpenSource(ctx context.Context, p *spec.Plan, o RunOptions, h SourceHooks) (connector.OpenedSource, *connector.SourceKind, error) {
	typ := p.Source.Type
	k, ok := p.Kinds().Lookup(typ)
	if !ok || k.Source == nil || k.Source.Open == nil {
		return connector.OpenedSource{}, nil, fmt.Errorf("source.type: %q is no source kind this weir can open", typ)
	}
	so := connector.SourceOpen{Settings: spec.SourceSettings(p), Path: o.Path, Stdin: o.Stdin, Channels: p.Channels, CSV: p.Format == spec.FormatCSV,
		Strict: o.Deterministic, Unpaced: o.Deterministic || h.Unpaced, Start: p.Start, Final: h.Final, Stop: h.Stop, Clock: h.Clock, Logger: o.Logger, Reach: h.Reach, Checkpointed: h.Checkpointed}
	if p.Checks && p.Time == spec.EventTime {
		so.MaxFuture = p.MaxFuture
	}
	if k.Source.Splits {
		so.Splits = h.Splits
	}
	src, err := k.Source.Open(ctx, so)
	if err != nil {
		return connector.OpenedSource{}, nil, err
	}
	return src, k.Source, nil
}

// sourceRecords opens read r's source and returns its records: lines
// decoded (dead letters for what cannot be), with the timestamps and
// watermarks of their splits when the kind watermarks them in its reader.
func (j *Job) sourceRecords(env *weir.Env, o RunOptions, r *read) (weir.Stream[record.Record], error) {
	p, wm := r.plan, r.Watermark
	failedOrStopped := func() bool { return j.failed.Load() || j.stopped() }
	h := SourceHooks{Clock: env.Options().Clock, Stop: failedOrStopped, Reach: &r.reach, Checkpointed: j.ck != nil,
		Final: func() bool {
			if failedOrStopped() {
				return o.Drain && !j.failed.Load()
			}
			return p.Final
		}}
	// Per channel, the record a split's Stamp decoded, which decode then
	// takes instead of decoding the line again: a reader stamps a line
	// right before it emits it, on its channel's goroutine, where decode
	// runs chained.
	stamped := make([]stampedRecord, p.Channels)
	h.Splits = SplitOptions(p, wm, func(l connector.Line) (etime.Time, error) {
		rec, err := r.decode(l)
		if err != nil {
			return 0, err
		}
		if ch := l.Channel; ch >= 0 && ch < len(stamped) {
			stamped[ch] = stampedRecord{split: l.Split, no: l.No, rec: rec, ok: true}
		}
		return rec.TS, nil
	})
	src, kind, err := OpenSource(context.Background(), p, o, h)
	if err != nil {
		return weir.Stream[record.Record]{}, err
	}
	r.srcName, r.splits = src.Name, kind.Splits
	r.dec.Splits = kind.Splits
	r.dec.UseColumns(kind.Columns)
	so := weir.SourceOptions{Channels: p.Channels, NoFinalWatermark: true}
	if !kind.OwnEnd {
		so = weir.SourceOptions{Channels: p.Channels, Stop: failedOrStopped,
			Final: func() bool {
				if j.failed.Load() {
					return false
				}
				if j.stopped() {
					return j.drain
				}
				return src.Bounded && p.Final
			}}
	}
	lines := weir.FromSource(env, r.stage, src.Source, so)
	return weir.TryMap(lines, func(l connector.Line) (record.Record, error) {
		if ch := l.Channel; ch >= 0 && ch < len(stamped) {
			if s := &stamped[ch]; s.ok && s.split == l.Split && s.no == l.No {
				s.ok = false
				return s.rec, nil
			}
		}
		return r.decode(l)
	}), nil
}

// SplitOptions are how a kind that reads several splits per channel (a
// Kafka partition) watermarks each of them for plan p, whose read has
// watermarks wm: stamp gives a data line's event time (an error makes it
// a dead letter).
func SplitOptions(p *spec.Plan, wm *spec.WatermarkOp, stamp func(connector.Line) (etime.Time, error)) *connector.SplitOptions {
	return &connector.SplitOptions{EventTime: wm.Time == spec.EventTime, Bound: wm.Bound,
		Interval: wm.Interval.Std(), IdleTimeout: zeroIsOff(wm.IdleTimeout.Std()), BacklogEvery: zeroIsOff(wm.BacklogEvery), MaxDrift: p.MaxDrift,
		Stamp: stamp}
}

// stampedRecord is a record decoded when its line was stamped.
type stampedRecord struct {
	split int32
	no    int64
	rec   record.Record
	ok    bool
}

// decode decodes a line of the read's source: its split's slot counts
// backward jumps apart, and with timestamp.source kafka or nats the
// broker's time is the event time.
func (r *read) decode(l connector.Line) (record.Record, error) {
	p := r.plan
	v, err := r.dec.DecodeSlot(l, int(l.Split)/max(p.Channels, 1))
	if err != nil || l.Kind != connector.Data {
		return v, err
	}
	if p.TSFromSource() {
		// The decoder's promised watermark followed the record's own
		// field, not the broker's time the window uses: such records are
		// not judged as trailing.
		v.TS, v.Promised = l.Time, etime.MinTime
	}
	v.Part = l.Split
	return v, nil
}
