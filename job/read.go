package job

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/record"
	"github.com/weirstream/weir/spec"
)

// read is one source of the job's path with its decoder: a YAML job has
// one; a plan whose graph reads several sources (a join of two topics)
// has one per source, each with its own stage, watermarks and dead
// letters.
type read struct {
	*spec.Read
	i int
	// plan is the plan as the read's decoder reads: the read's source
	// settings (the plan's own for the first read; the SourceOp's
	// Settings for the others) with the keys and aggregates of the
	// windows it feeds (record.Union of them when they are several).
	plan *spec.Plan
	dec  *record.Decoder
	// stage is its source stage: "source" for the first (as metrics and
	// the dashboard name it), the source node's name for the others.
	stage   string
	srcName string
	// reach is whether its source reaches its server (a Kafka broker),
	// which SinkCalls reports while it does not.
	reach connector.Reach
	// splits: the source's kind reads several splits per channel and
	// watermarks each (connector.SourceKind.Splits); a record's entry id
	// is split:position.
	splits bool
	// dead is its dead-letter sink (nil: none).
	dead recordSink
	// echo: an earlier read reads the same source (a SQL table that two
	// queries filter differently, sourceIdentity): this read's records
	// are that one's again, left out of the job's records in (each
	// window still counts what its read read; dead letters are each
	// read's, which may refuse different records).
	echo bool
}

// newReads returns the reads of path, each with its decoder, and the
// windows' branches (whose projections cut a read's records down to
// theirs).
func newReads(plan *spec.Plan, path *spec.Path, nulls *record.NullCount, clk clock.Clock) ([]*read, []*branch, error) {
	reads := make([]*read, len(path.Reads))
	decodes := make([]*spec.Plan, len(path.Reads))
	for i := range path.Reads {
		r := &read{Read: &path.Reads[i], i: i, stage: sourceStage}
		base := plan
		if i > 0 {
			if base = r.Source.Settings; base == nil {
				return nil, nil, fmt.Errorf("job: the plan's source %s has no settings (spec.SourceOp.Settings): a source other than the plan's own needs the plan its front end compiled for it", r.Name)
			}
			r.stage = r.Name
		}
		reads[i], decodes[i] = r, base
	}
	branches, err := newBranches(plan, path, decodes, nulls, clk)
	if err != nil {
		return nil, nil, err
	}
	sources := map[string]bool{}
	for i, r := range reads {
		r.plan = decodes[i]
		if id, ok := sourceIdentity(r.plan.Source); ok {
			r.echo = sources[id]
			sources[id] = true
		}
		r.dec = record.NewDecoder(r.plan, clk)
		// A record of a typed source keeps its JSON form where a late
		// output writes it.
		r.dec.KeepRaw = slices.ContainsFunc(path.Windows, func(b spec.Branch) bool { return b.Late != nil || b.LatePartial != nil })
		// A read that only feeds queries without a window, which write
		// its records' values as rows and keep none: its decoder cuts
		// them from slabs.
		r.dec.Rows = true
		for _, b := range branches {
			if b.From < 0 && b.Read == i && b.Select == nil {
				r.dec.Rows = false
			}
		}
	}
	return reads, branches, nil
}

// readOf is the read whose source stage is stage (nil: none).
func (j *Job) readOf(stage string) *read {
	i := slices.IndexFunc(j.reads, func(r *read) bool { return r.stage == stage })
	if i < 0 {
		return nil
	}
	return j.reads[i]
}

// position returns where r, a record of this read, was read: whether from
// Kafka (r.Part is the partition) and the offset, stream sequence or line
// number.
func (r *read) position(rec record.Record) (kafka bool, pos int64) {
	if r.splits {
		return true, rec.No - 1 // no is the offset + 1
	}
	return false, rec.No
}

// deadRead is the read a dead letter of stage came from: the read of a
// source stage, or of the window that refused it; the first read for
// any other.
func (j *Job) deadRead(stage string) *read {
	if r := j.readOf(stage); r != nil {
		return r
	}
	for _, b := range j.branches {
		if b.stage == stage {
			return j.reads[b.Read]
		}
	}
	return j.reads[0]
}

// controls are the control lines the reads' decoders have seen.
func (j *Job) controls() int64 {
	var n int64
	for _, r := range j.reads {
		n += r.dec.Controls.Load()
	}
	return n
}

// sourceIdentity names where source s reads (its kind and location:
// path, generator, topic or stream), leaving out how its records are
// read (format checks, types, decimals, the timestamp), which two tables
// over one file may declare differently; ok is false when it cannot be
// told.
func sourceIdentity(s spec.Source) (string, bool) {
	s.Format, s.Timestamp, s.NumbersInStrings, s.Decimals, s.Types, s.FinalWatermark, s.ExtraAt = "", spec.Timestamp{}, false, nil, nil, nil, nil
	b, err := json.Marshal(s)
	return string(b), err == nil
}
