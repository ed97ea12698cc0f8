package record

import (
	"slices"
	"strconv"
	"sync"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/expr"
	"github.com/weirstream/weir/internal/sqlparse"
	"github.com/weirstream/weir/spec"
)

// resultFields reads a window's results as the fields of an expression:
// its key fields, then its aggregates, parsed from the result's key and
// value. with is safe for concurrent use (each call takes a scratch
// from a pool).
type resultFields struct {
	names  []string
	nk, na int
	pool   sync.Pool
}

type resultScratch struct {
	p     fastjson.Parser
	arena fastjson.Arena
	buf   []byte
	got   []*fastjson.Value
}

func newResultFields(key []string, aggs []spec.Aggregate) *resultFields {
	names := slices.Clone(key)
	for _, a := range aggs {
		names = append(names, a.Name)
	}
	return newFields(names, len(key), 0)
}

// newFields reads fields names: the first nk from a result's key, the
// last nm from withMore's more, the others from its value.
func newFields(names []string, nk, nm int) *resultFields {
	f := &resultFields{names: names, nk: nk, na: len(names) - nk - nm}
	f.pool.New = func() any { return &resultScratch{got: make([]*fastjson.Value, len(names))} }
	return f
}

// compile compiles expression src over the fields (by name).
func (f *resultFields) compile(src string) (sqlparse.Expr, func(sqlparse.Ident) (int, *sqlparse.Error), error) {
	x, err := sqlparse.ParseExpr(src)
	return x, func(id sqlparse.Ident) (int, *sqlparse.Error) { return max(slices.Index(f.names, id.Name), 0), nil }, err
}

// with calls use with the fields of the result of key (its values
// separated by KeySep) and value (Aggregator.Result's: each aggregate
// followed by a 0 byte), and an arena for values; false when they do not
// parse (not reached: keys and values are JSON).
func (f *resultFields) with(key string, value []byte, use func(got []*fastjson.Value, a *fastjson.Arena)) bool {
	return f.withMore(key, value, nil, use)
}

// withMore is with, the fields after the aggregates being more (JSON
// texts: a result expression's window bounds).
func (f *resultFields) withMore(key string, value []byte, more [][]byte, use func(got []*fastjson.Value, a *fastjson.Arena)) bool {
	sc := f.pool.Get().(*resultScratch)
	defer f.pool.Put(sc)
	b := append(sc.buf[:0], '[')
	n := 0
	if f.nk > 0 {
		for i := 0; i < len(key); i++ {
			if key[i] == KeySep[0] {
				b = append(b, ',')
				continue
			}
			b = append(b, key[i])
		}
		n = f.nk
	}
	v := value
	for range f.na {
		if n > 0 {
			b = append(b, ',')
		}
		end := slices.Index(v, 0)
		if end < 0 {
			end = len(v)
		}
		b = append(b, v[:end]...)
		v = v[min(end+1, len(v)):]
		n++
	}
	for _, m := range more {
		if n > 0 {
			b = append(b, ',')
		}
		b = append(b, m...)
		n++
	}
	b = append(b, ']')
	sc.buf = b
	arr, err := sc.p.ParseBytes(b)
	if err != nil {
		return false
	}
	vals := arr.GetArray()
	if len(vals) != len(sc.got) {
		return false
	}
	copy(sc.got, vals)
	sc.arena.Reset()
	use(sc.got, &sc.arena)
	return true
}

// Having is a window's having (spec.WindowOp.Having) as a test of its
// results. Keep is safe for concurrent use.
type Having struct {
	f    *resultFields
	pred *expr.Pred
}

// NewHaving compiles window op's having (nil when it has none). The
// plan checked it (spec.Compile), so it compiles.
func NewHaving(op *spec.WindowOp) *Having {
	if op.Having == "" {
		return nil
	}
	f := newResultFields(op.Key, op.Aggregates)
	x, field, err := f.compile(op.Having)
	if err != nil {
		return nil
	}
	pred, err := expr.Compile(x, field)
	if err != nil {
		return nil
	}
	return &Having{f: f, pred: pred}
}

// Keep reports whether the result of key and value passes the having.
func (h *Having) Keep(key string, value []byte) bool {
	keep := true
	h.f.with(key, value, func(got []*fastjson.Value, _ *fastjson.Arena) { keep = h.pred.Keep(got) })
	return keep
}

// Cond is a join's further condition (spec.JoinOp.Cond) over the texts
// of its columns. Keep is safe for concurrent use.
type Cond struct{ h Having }

// NewCond compiles condition src over the columns names; the plan
// checked it (spec.Compile).
func NewCond(src string, names []string) (*Cond, error) {
	f := newFields(slices.Clone(names), 0, 0)
	x, field, err := f.compile(src)
	if err != nil {
		return nil, err
	}
	pred, err := expr.Compile(x, field)
	if err != nil {
		return nil, err
	}
	return &Cond{h: Having{f: f, pred: pred}}, nil
}

// Keep reports whether the condition is true of vals: the columns' JSON
// texts in their order, each followed by a 0 byte (a NULL or an unknown
// is not true).
func (c *Cond) Keep(vals []byte) bool { return c.h.Keep("", vals) }

// ResultExpr is an expression over a window's results (a results
// column's, spec.Column.Expr). Append is safe for concurrent use.
type ResultExpr struct {
	f *resultFields
	x *expr.Expr
}

// NewResultExpr compiles src over the results of windows keyed by key
// with aggregates aggs, and their window bounds (window_start,
// window_end, window_time: epoch milliseconds); the plan checked it
// (spec.Compile).
func NewResultExpr(src string, key []string, aggs []spec.Aggregate) (*ResultExpr, error) {
	names := slices.Clone(key)
	for _, a := range aggs {
		names = append(names, a.Name)
	}
	f := newFields(append(names, spec.ColWindowStart, spec.ColWindowEnd, spec.ColWindowTime), len(key), 3)
	x, field, err := f.compile(src)
	if err != nil {
		return nil, err
	}
	e, err := expr.CompileValue(x, field)
	if err != nil {
		return nil, err
	}
	return &ResultExpr{f: f, x: e}, nil
}

// Append appends the expression's value for the result of key and value
// whose window has bounds (window_start, window_end, window_time; nil:
// the global window's, null) as JSON (null when it cannot be read).
func (e *ResultExpr) Append(b []byte, key string, value []byte, bounds []etime.Time) []byte {
	var texts [3][]byte
	var buf [64]byte
	t := buf[:0]
	for i := range texts {
		if len(bounds) != len(texts) {
			texts[i] = []byte("null")
			continue
		}
		n := len(t)
		t = strconv.AppendInt(t, int64(bounds[i]), 10)
		texts[i] = t[n:]
	}
	if !e.f.withMore(key, value, texts[:], func(got []*fastjson.Value, a *fastjson.Arena) { b = e.x.Value(a, got).MarshalTo(b) }) {
		b = append(b, "null"...)
	}
	return b
}
