package job

import (
	"fmt"
	"hash/fnv"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/outfmt"
	"github.com/weirstream/weir/internal/record"
	"github.com/weirstream/weir/spec"
	"github.com/weirstream/weir/window"
)

// cascade turns the results of a window into the records of a window
// they feed (semantics W12): each result becomes the row
// outfmt.AppendRow renders (key fields, window bounds, window_time,
// aggregates), read by a decoder of the downstream window's key and
// aggregates whose event time is window_time. Reading the row as JSON
// gives the downstream window the same number handling as records read
// from a source (exact decimals, float aggregates), at the cost of a
// render and a parse per result: results are far fewer than records.
type cascade struct {
	from string     // the feeding window's name, for messages
	up   *spec.Plan // the feeding window's plan view: its key and aggregates
	dec  *record.Decoder
}

func newCascade(from string, up, down *spec.Plan, clk clock.Clock) *cascade {
	q := *down
	q.Format, q.Time, q.TSField, q.TSUnit = spec.FormatJSONL, spec.EventTime, spec.ColWindowTime, spec.UnitMillis
	q.TSFromKafka, q.TSFromNATS, q.NumbersInStrings, q.Checks, q.Channels = false, false, false, false, 0
	q.Decimals = nil
	q.Where, q.Computed = "", nil // the source's: not over the feeding window's rows
	return &cascade{from: from, up: up, dec: record.NewDecoder(&q, clk)}
}

// record is result r as a record of the downstream window. It fails
// only if spec's checks (checkCascade) missed a field the row lacks or
// a number it does not hold.
func (c *cascade) record(r window.Result[string, []byte]) (record.Record, error) {
	row := outfmt.AppendRow(nil, c.up, r)
	// No orders records of equal timestamps for first, last and collect:
	// a hash of the upstream key, the same at any parallelism, where an
	// arrival order would not be.
	h := fnv.New64a()
	h.Write([]byte(r.Key))
	no := int64(h.Sum64() >> 1)
	rec, err := c.dec.Decode(connector.Line{Kind: connector.Data, Channel: -1, No: no, Text: row})
	if err != nil {
		return record.Record{}, fmt.Errorf("job: a result of window %s cannot be read by the window it feeds (semantics W12): %v: %s", c.from, err, row)
	}
	return rec, nil
}

// cascadeRecords are branch b's records: the results of the window that
// feeds it, fired (a feeding window fires each window once: it has no
// retractions), as records. A row that cannot be read fails the job.
func (j *Job) cascadeRecords(b *branch, up weir.Stream[window.Result[string, []byte]]) weir.Stream[record.Record] {
	return weir.FlatMap(up, func(r window.Result[string, []byte], emit func(record.Record)) {
		if r.Firing == window.Retract {
			return
		}
		rec, err := b.cascade.record(r)
		if err != nil {
			j.check(err)
			return
		}
		emit(rec)
	})
}
