package record

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/expr"
	"github.com/weirstream/weir/internal/sqlparse"
	"github.com/weirstream/weir/spec"
)

// resultFields reads a window's results as the fields of an expression:
// its key fields, then its aggregates, parsed from the result's key and
// value; only the fields the expression names are parsed. with is safe
// for concurrent use (each call takes a scratch from a pool).
type resultFields struct {
	names  []string
	nk, na int
	used   []bool // by index of names: the expression reads it
	pool   sync.Pool
}

type resultScratch struct {
	ps    []fastjson.Parser // one per field: a parse lasts until the next
	arena fastjson.Arena
	got   []*fastjson.Value
}

// newFields reads fields names: the first nk from a result's key, the
// last nm from withMore's more, the others from its value.
func newFields(names []string, nk, nm int) *resultFields {
	f := &resultFields{names: names, nk: nk, na: len(names) - nk - nm, used: make([]bool, len(names))}
	f.pool.New = func() any {
		return &resultScratch{got: make([]*fastjson.Value, len(names)), ps: make([]fastjson.Parser, len(names))}
	}
	return f
}

// compile compiles expression src over the fields (by name), noting
// those it reads.
func (f *resultFields) compile(src string) (sqlparse.Expr, func(sqlparse.Ident) (int, *sqlparse.Error), error) {
	x, err := sqlparse.ParseExpr(src)
	return x, func(id sqlparse.Ident) (int, *sqlparse.Error) {
		i := max(slices.Index(f.names, id.Name), 0)
		f.used[i] = true
		return i, nil
	}, err
}

// with calls use with the fields of the result of key (its values
// separated by KeySep) and value (Aggregator.Result's: each aggregate
// followed by a 0 byte), and an arena for values; false when they do not
// parse (not reached: keys and values are JSON).
func (f *resultFields) with(key string, value []byte, use func(got []*fastjson.Value, a *fastjson.Arena)) bool {
	return f.withMore(key, value, nil, use)
}

// withMore is with, the fields after the aggregates being more (JSON
// texts: a result expression's window bounds). A field the expression
// does not read is nil.
func (f *resultFields) withMore(key string, value []byte, more [][]byte, use func(got []*fastjson.Value, a *fastjson.Arena)) bool {
	sc := f.pool.Get().(*resultScratch)
	defer f.pool.Put(sc)
	clear(sc.got)
	i := 0
	read := func(text []byte) bool {
		if i >= len(sc.got) {
			return false
		}
		if f.used[i] {
			v, err := sc.ps[i].ParseBytes(text)
			if err != nil {
				return false
			}
			sc.got[i] = v
		}
		i++
		return true
	}
	if f.nk > 0 {
		k := key
		for {
			part, rest, more := strings.Cut(k, KeySep)
			if !read(unsafe.Slice(unsafe.StringData(part), len(part))) {
				return false
			}
			if !more {
				break
			}
			k = rest
		}
	}
	v := value
	for range f.na {
		end := bytes.IndexByte(v, 0)
		if end < 0 {
			end = len(v)
		}
		if !read(v[:end]) {
			return false
		}
		v = v[min(end+1, len(v)):]
	}
	for _, m := range more {
		if !read(m) {
			return false
		}
	}
	if i != len(sc.got) {
		return false
	}
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

// NewHaving compiles window op's having (nil when it has none), counting
// its NULLs into nulls (nil: uncounted). The plan checked it
// (spec.Compile), so it compiles.
func NewHaving(op *spec.WindowOp, nulls *NullCount) *Having {
	if op.Having == "" {
		return nil
	}
	f := newBoundFields(op.Key, op.Aggregates)
	x, field, err := f.compile(op.Having)
	if err != nil {
		return nil
	}
	pred, err := expr.Compile(x, field, boundTimes, nulls.overResults(op.Aggregates))
	if err != nil {
		return nil
	}
	return &Having{f: f, pred: pred}
}

// Keep reports whether the result of key and value, whose window has
// bounds (window_start, window_end, window_time; nil: the global
// window's, null), passes the having.
func (h *Having) Keep(key string, value []byte, bounds []etime.Time) bool {
	keep := true
	var buf [64]byte
	texts := boundTexts(buf[:0], bounds)
	h.f.withMore(key, value, texts[:], func(got []*fastjson.Value, _ *fastjson.Arena) { keep = h.pred.Keep(got) })
	return keep
}

// KeepWindow reports whether a window of bounds passes a having that
// reads its bounds only (spec.BoundsOnly), whatever its results.
func (h *Having) KeepWindow(bounds []etime.Time) bool {
	return h.Keep(strings.Repeat(KeySep, max(h.f.nk-1, 0)), nil, bounds)
}

// boundTimes makes a string literal compared with a window bound a time.
var boundTimes = expr.TimeNames(spec.ColWindowStart, spec.ColWindowEnd, spec.ColWindowTime)

// newBoundFields reads the fields of a window's results: its key fields,
// its aggregates, and its bounds (window_start, window_end, window_time).
func newBoundFields(key []string, aggs []spec.Aggregate) *resultFields {
	names := slices.Clone(key)
	for _, a := range aggs {
		names = append(names, a.Name)
	}
	return newFields(append(names, spec.ColWindowStart, spec.ColWindowEnd, spec.ColWindowTime), len(key), 3)
}

// boundTexts is bounds (window_start, window_end, window_time: epoch
// milliseconds; nil: the global window's, null) as JSON texts, appended
// to buf.
func boundTexts(buf []byte, bounds []etime.Time) [3][]byte {
	var texts [3][]byte
	for i := range texts {
		if len(bounds) != len(texts) {
			texts[i] = []byte("null")
			continue
		}
		n := len(buf)
		buf = strconv.AppendInt(buf, int64(bounds[i]), 10)
		texts[i] = buf[n:]
	}
	return texts
}

// Cond is a join's further condition (spec.JoinOp.Cond) over the texts
// of its columns. Keep is safe for concurrent use.
type Cond struct{ h Having }

// NewCond compiles condition src over the columns names, counting its
// NULLs into nulls (nil: uncounted); the plan checked it (spec.Compile).
func NewCond(src string, names []string, nulls *NullCount) (*Cond, error) {
	f := newFields(slices.Clone(names), 0, 0)
	x, field, err := f.compile(src)
	if err != nil {
		return nil, err
	}
	pred, err := expr.Compile(x, field, nulls.overResults(nil))
	if err != nil {
		return nil, err
	}
	return &Cond{h: Having{f: f, pred: pred}}, nil
}

// Keep reports whether the condition is true of vals: the columns' JSON
// texts in their order, each followed by a 0 byte (a NULL or an unknown
// is not true).
func (c *Cond) Keep(vals []byte) bool {
	keep := true
	c.h.f.with("", vals, func(got []*fastjson.Value, _ *fastjson.Arena) { keep = c.h.pred.Keep(got) })
	return keep
}

// ResultExpr is an expression over a window's results (a results
// column's, spec.Column.Expr). Append is safe for concurrent use.
type ResultExpr struct {
	f *resultFields
	x *expr.Expr
}

// NewResultExpr compiles src over the results of windows keyed by key
// with aggregates aggs, and their window bounds (window_start,
// window_end, window_time: epoch milliseconds), counting its NULLs into
// nulls (nil: uncounted); the plan checked it (spec.Compile).
func NewResultExpr(src string, key []string, aggs []spec.Aggregate, nulls *NullCount) (*ResultExpr, error) {
	f := newBoundFields(key, aggs)
	x, field, err := f.compile(src)
	if err != nil {
		return nil, err
	}
	e, err := expr.CompileValue(x, field, boundTimes, nulls.overResults(aggs))
	if err != nil {
		return nil, err
	}
	return &ResultExpr{f: f, x: e}, nil
}

// Append appends the expression's value for the result of key and value
// whose window has bounds (window_start, window_end, window_time; nil:
// the global window's, null) as JSON (null when it cannot be read).
func (e *ResultExpr) Append(b []byte, key string, value []byte, bounds []etime.Time) []byte {
	var buf [64]byte
	texts := boundTexts(buf[:0], bounds)
	if !e.f.withMore(key, value, texts[:], func(got []*fastjson.Value, a *fastjson.Arena) { b = e.x.Value(a, got).MarshalTo(b) }) {
		b = append(b, "null"...)
	}
	return b
}

// overResults is the expression option that counts NULLs into c (none
// for a nil c) for an expression over the results of aggregates aggs,
// whose warning shows each aggregate a SQL job named for itself
// (_weir_agg_N) as its call: SUM(amount), COUNT(*).
func (c *NullCount) overResults(aggs []spec.Aggregate) expr.Option {
	if c == nil {
		return expr.OnNull(nil)
	}
	var shown []string // old, new pairs
	for _, a := range aggs {
		if !strings.HasPrefix(a.Name, "_weir_") {
			continue
		}
		arg := a.Field
		switch {
		case arg == "":
			arg = "*"
		case strings.HasPrefix(arg, "_weir_"):
			arg = "..." // an expression of the record's
		}
		call := strings.ToUpper(a.Fn) + "(" + arg + ")"
		if a.Fn == "count_distinct" {
			call = "COUNT(DISTINCT " + arg + ")"
		}
		shown = append(shown, a.Name, call)
	}
	// Longest first: _weir_agg_10 before _weir_agg_1.
	for i := 0; i < len(shown); i += 2 {
		for k := i + 2; k < len(shown); k += 2 {
			if len(shown[k]) > len(shown[i]) {
				shown[i], shown[i+1], shown[k], shown[k+1] = shown[k], shown[k+1], shown[i], shown[i+1]
			}
		}
	}
	r := strings.NewReplacer(shown...)
	return expr.OnNull(func(_ sqlparse.Pos, what, text string) { c.note(what, r.Replace(text)) })
}
