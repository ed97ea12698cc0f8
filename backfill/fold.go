package backfill

import (
	"encoding/json"
	"fmt"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/record"
	"github.com/weirstream/weir/ledger"
)

// folder folds the records of ledger entries into a window's stored
// result: a job spec's aggregates (specFolder) or a Go program's Fold
// (goFolder). A backfill calls it from one goroutine.
type folder interface {
	// decode decodes an entry's record (once, however many windows it
	// missed).
	decode(e ledger.Entry) (any, error)
	// seed returns the accumulator of a window from its stored values
	// (windowStore.load's), or with vals nil the empty one.
	seed(vals []any) (any, error)
	add(acc, rec any) any
	// result returns the revision's values as JSON texts, in the store's
	// column order, and those to show (o.Out); it counts overflows in rep.
	result(acc any, rep *BackfillReport) (values, shown []string, err error)
}

// specFolder folds with a job spec's own aggregate code.
type specFolder struct {
	agg record.Aggregator
	dec *record.Decoder
}

func (f *specFolder) decode(e ledger.Entry) (any, error) {
	r, err := f.dec.Decode(connector.Line{Kind: connector.Data, No: entryNo(e.ID), Text: e.Record, Unchecked: true})
	if err != nil {
		return nil, err
	}
	r.TS = etime.Time(e.TS)
	return r, nil
}

func (f *specFolder) seed(vals []any) (any, error) {
	if vals == nil {
		return f.agg.CreateAccumulator(), nil
	}
	for i, v := range vals {
		switch x := v.(type) {
		case json.RawMessage: // a Postgres jsonb column
			y, err := sqlValue(x)
			if err != nil {
				return nil, fmt.Errorf("column %d: %w", i+1, err)
			}
			vals[i] = y
		case []byte: // SQLite's text of a number beyond int64 and float64
			vals[i] = record.NumText(x)
		}
	}
	return f.agg.Seed(vals)
}

func (f *specFolder) add(acc, rec any) any { return f.agg.Add(acc.(*record.Acc), rec.(record.Record)) }

func (f *specFolder) result(acc any, rep *BackfillReport) (values, shown []string, err error) {
	ac := acc.(*record.Acc)
	f.agg.CollectInInputOrder(ac)
	n := f.agg.Width()
	value := f.agg.Result(ac)
	for _, c := range record.ResultOverflows(value, n) {
		switch c {
		case record.OverDecimal:
			rep.DecimalOverflow++
		case record.OverInfinite:
			rep.FloatOverflow++
		}
	}
	values = record.SplitResult(value, n)
	return values, values[:len(f.agg.Fns)], nil
}
