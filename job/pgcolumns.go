package job

import (
	"github.com/weirstream/weir/connector/pgio"
	"github.com/weirstream/weir/internal/record"
	"github.com/weirstream/weir/spec"
)

// pgColumns are the key and value columns of the job's Postgres results
// table, with their SQL types, so that the table answers plain SQL
// (SELECT sum(orders) ... WHERE user_id = 'u1'). The sink, the backfill
// and the complete answer all take the layout from here.
//
// Keys are text: the spec does not type its key fields, and a key is
// looked up as a string (WHERE user_id = 'u1'; a number key 7 is '7',
// pgio.Text). Aggregates take pgAggType; the accumulators' column
// (accColumn) is text, holding the accumulator text.
func pgColumns(p *spec.Plan) (keys, values []pgio.ColumnDef) {
	keys = pgio.Defs(pgio.Text, p.Spec.Key...)
	for _, a := range p.Spec.Aggregate {
		values = append(values, pgio.ColumnDef{Name: a.Name, Type: pgAggType(a)})
	}
	if record.KeepsAccs(p) {
		values = append(values, pgio.ColumnDef{Name: spec.AccColumn, Type: pgio.Text})
	}
	return keys, values
}

// pgAggType is the SQL type of an aggregate's column, the type of every
// value it can have:
//
//   - count and count_distinct: bigint;
//   - sum, avg, min and max of type float: double precision (float64
//     arithmetic);
//   - sum, avg, min and max of type decimal (the default): numeric. A
//     decimal sum is an int64 while its inputs are integers and it fits,
//     then an exact decimal of up to 38 digits (beyond, a float64): the
//     spec does not know which, so bigint would fail on the first
//     fraction and double precision would round the decimals; numeric
//     holds each of them exactly, and sum() of it is exact;
//   - first, last and collect: jsonb (any JSON value; collect an array).
func pgAggType(a spec.Aggregate) pgio.Type {
	switch a.Fn {
	case "count", "count_distinct":
		return pgio.BigInt
	case "sum", "avg", "min", "max":
		if a.Type == "float" {
			return pgio.Double
		}
		return pgio.Numeric
	}
	return pgio.JSONB
}

// pgKeyText is a key value (its canonical JSON) as a Postgres results
// table holds it: the text of its text column (pgio.Text).
func pgKeyText(v []byte) (string, error) {
	x, err := pgio.Arg(pgio.Text, v, true)
	if err != nil {
		return "", err
	}
	return x.(string), nil
}
