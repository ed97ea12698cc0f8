package record

import (
	"slices"
	"sync"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/internal/expr"
	"github.com/weirstream/weir/internal/sqlparse"
	"github.com/weirstream/weir/spec"
)

// Having is a window's having (spec.WindowOp.Having) as a test of its
// results: their key fields and aggregates, parsed from the result's
// key and value, are the fields the condition reads. Keep is safe for
// concurrent use (each call takes a scratch from a pool).
type Having struct {
	pred   *expr.Pred
	nk, na int
	pool   sync.Pool
}

type havingScratch struct {
	p   fastjson.Parser
	buf []byte
	got []*fastjson.Value
}

// NewHaving compiles window op's having (nil when it has none). The
// plan checked it (spec.Compile), so it compiles.
func NewHaving(op *spec.WindowOp) *Having {
	if op.Having == "" {
		return nil
	}
	names := slices.Clone(op.Key)
	for _, a := range op.Aggregates {
		names = append(names, a.Name)
	}
	x, err := sqlparse.ParseExpr(op.Having)
	if err != nil {
		return nil
	}
	pred, err := expr.Compile(x, func(id sqlparse.Ident) (int, *sqlparse.Error) {
		return max(slices.Index(names, id.Name), 0), nil
	})
	if err != nil {
		return nil
	}
	h := &Having{pred: pred, nk: len(op.Key), na: len(op.Aggregates)}
	h.pool.New = func() any { return &havingScratch{got: make([]*fastjson.Value, h.nk+h.na)} }
	return h
}

// Keep reports whether the result of key (its values separated by
// KeySep) and value (Aggregator.Result's: each aggregate followed by a 0
// byte) passes the having.
func (h *Having) Keep(key string, value []byte) bool {
	sc := h.pool.Get().(*havingScratch)
	defer h.pool.Put(sc)
	// The key's values and the first na values, as one JSON array.
	b := append(sc.buf[:0], '[')
	n := 0
	if h.nk > 0 {
		for i := 0; i < len(key); i++ {
			if key[i] == KeySep[0] {
				b = append(b, ',')
				continue
			}
			b = append(b, key[i])
		}
		n = h.nk
	}
	v := value
	for range h.na {
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
	b = append(b, ']')
	sc.buf = b
	arr, err := sc.p.ParseBytes(b)
	if err != nil {
		return true // not reached: keys and values are JSON
	}
	vals := arr.GetArray()
	if len(vals) != len(sc.got) {
		return true // not reached
	}
	copy(sc.got, vals)
	return h.pred.Keep(sc.got)
}
