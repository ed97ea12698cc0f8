package record

import (
	"math"
	"slices"
	"strings"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/expr"
	"github.com/weirstream/weir/internal/sqlparse"
)

// typedPlan is how a Decoder reads a source's typed records
// (connector.Line.Typed) without their JSON text: the columns its
// computed fields and where read, by slot, and the fields it reads as
// they are. A record reads as its JSON form would (UseColumns decides
// where that holds); one holding a value the spec's types would change
// or refuse is read as its JSON form (DecodeSlot).
type typedPlan struct {
	// index is the source kind's columns by name.
	index map[string]int
	// cols are the source kind's columns the expressions read, by slot;
	// kinds their kinds.
	cols  []int
	kinds []connector.ValueKind
	// direct are the fields the decoder reads as they are (the
	// timestamp, keys, aggregates' inputs), each a column.
	direct []directField
	// checks are the columns the spec types (source.types): a value of
	// another kind than the column's, or beyond the type's range, is
	// read as its JSON form, whose typing reads or refuses it.
	checks []typeCheck
}

type directField struct{ at, col int }

type typeCheck struct {
	col    int
	kind   connector.ValueKind
	lo, hi int64 // an integer type's range
}

// typedExprs are a typedPlan's expressions compiled over one scratch's
// column values: each scratch (a goroutine at a time) has its own.
type typedExprs struct {
	cols     *expr.Columns
	computed []computed
	where    *expr.Pred
}

// UseColumns tells the decoder that its lines may come as typed records
// of these columns (connector.SourceKind.Columns), and reports whether it
// reads them as they are; where it does not (a field or expression that
// reads what no column is, a decimal field, a type that converts a
// column's values or a whole object), it reads their JSON form. Call it
// before the first Decode.
func (d *Decoder) UseColumns(cols []connector.TypedColumn) bool {
	d.typed = nil
	if len(cols) == 0 || len(d.decimals) > 0 {
		return false
	}
	index := map[string]int{}
	roots := map[string]bool{}
	for i, c := range cols {
		index[c.Name] = i
		root, _, _ := strings.Cut(c.Name, ".")
		roots[root] = true
	}
	isComputed := make([]bool, len(d.fields))
	for _, f := range d.computed {
		isComputed[f.at] = true
	}
	p := &typedPlan{index: index}
	// The fields read as they are: a top-level column each (a field of
	// no column, or a dotted name, reads as its JSON form does, with the
	// watch's warning when it is never there).
	direct := append(append(append([]int{d.tsAt}, d.keyAt...), d.aggAt...), d.whenAt...)
	for _, at := range direct {
		if at < 0 || isComputed[at] || slices.ContainsFunc(p.direct, func(f directField) bool { return f.at == at }) {
			continue
		}
		c, ok := index[d.fields[at]]
		if !ok || strings.Contains(d.fields[at], ".") {
			return false
		}
		p.direct = append(p.direct, directField{at: at, col: c})
	}
	for _, f := range d.types {
		name := d.fields[f.at]
		if len(f.path) > 0 {
			name += "." + strings.Join(f.path, ".")
		}
		c, ok := index[name]
		if !ok {
			if roots[name] {
				return false // a type of a whole object, which the JSON form converts
			}
			continue // no such member: nothing to type, in the JSON form too
		}
		chk := typeCheck{col: c, kind: cols[c].Kind, lo: math.MinInt64, hi: math.MaxInt64}
		switch {
		case cols[c].Kind == connector.ValueInt && f.kind == kindInteger:
			chk.lo, chk.hi = f.lo, f.hi
		case cols[c].Kind == connector.ValueInt && f.kind == kindFloat:
		case cols[c].Kind == connector.ValueString && f.kind == kindString:
		default:
			return false // the type converts the column's values
		}
		p.checks = append(p.checks, chk)
	}
	column := func(name string) (int, bool) {
		c, ok := index[name]
		if !ok {
			return 0, false
		}
		if s := slices.Index(p.cols, c); s >= 0 {
			return s, true
		}
		p.cols = append(p.cols, c)
		p.kinds = append(p.kinds, cols[c].Kind)
		return len(p.cols) - 1, true
	}
	// Compiled once here, which gives the columns their slots.
	if _, ok := d.compileTyped(expr.NewColumns(0), column); !ok {
		return false
	}
	d.typed = p
	return true
}

// compileTyped compiles the decoder's computed fields and where over
// cols, whose slots column gives; false when one reads what is no column
// (nor a computed field).
//
// A name reads as it does in the record's JSON form, where a computed
// field replaces the record's field of its name once it is computed
// (a view's column auction, bid.auction, computed after the time
// attribute that reads the record's auction.dateTime): the computed
// field, once it is, else the column.
func (d *Decoder) compileTyped(cols *expr.Columns, column func(string) (int, bool)) (*typedExprs, bool) {
	// field resolves, for an expression evaluated once the first n
	// computed fields are, a name that is one of them (its value is in
	// sc.got); any other name that no column is would read the record's
	// member of that name (an object, a field of no column), which only
	// the JSON form has.
	field := func(n int) func(col sqlparse.Ident) (int, *sqlparse.Error) {
		return func(col sqlparse.Ident) (int, *sqlparse.Error) {
			if i := slices.Index(d.fields, col.Name); i >= 0 && slices.ContainsFunc(d.computed[:n], func(f computed) bool { return f.at == i }) {
				return i, nil
			}
			return 0, &sqlparse.Error{Pos: col.Pos, Text: col.Name, Msg: "no typed column"}
		}
	}
	// over are the options of an expression evaluated once the first n
	// computed fields are.
	over := func(n int) []expr.Option {
		done := func(name string) bool {
			root, _, _ := strings.Cut(name, ".")
			return slices.ContainsFunc(d.computed[:n], func(f computed) bool { return d.fields[f.at] == root })
		}
		return append(slices.Clip(d.opts), expr.Typed(cols, func(name string) (int, bool) {
			if done(name) {
				return 0, false
			}
			return column(name)
		}))
	}
	t := &typedExprs{cols: cols}
	for i, f := range d.computed {
		x, err := expr.CompileValue(f.src, field(i), over(i)...)
		if err != nil {
			return nil, false
		}
		t.computed = append(t.computed, computed{at: f.at, x: x, src: f.src})
	}
	if d.where != nil {
		w, err := expr.Compile(d.whereSrc, field(d.nPre), over(d.nPre)...)
		if err != nil {
			return nil, false
		}
		t.where = w
	}
	return t, true
}

// typedOf returns sc's compiled typed expressions, compiling them on its
// first typed record; nil when the decoder reads no typed records.
func (d *Decoder) typedOf(sc *scratch) *typedExprs {
	p := d.typed
	if p == nil {
		return nil
	}
	if sc.typed == nil {
		column := func(name string) (int, bool) {
			c, ok := p.index[name]
			s := slices.Index(p.cols, c)
			return s, ok && s >= 0
		}
		sc.typed, _ = d.compileTyped(expr.NewColumns(len(p.cols)), column)
	}
	return sc.typed
}

// gather sets the columns of typed record rec, and the fields read as
// they are in sc.got; false when rec holds a value its JSON form reads
// otherwise (another kind than its column's, beyond its type's range).
func (t *typedExprs) gather(d *Decoder, rec connector.TypedRecord, sc *scratch) bool {
	p := d.typed
	for _, chk := range p.checks {
		v := rec.Column(chk.col)
		if v.Kind != connector.ValueNull && (v.Kind != chk.kind || v.Kind == connector.ValueInt && (v.Int < chk.lo || v.Int > chk.hi)) {
			return false
		}
	}
	for s, c := range p.cols {
		switch v := rec.Column(c); {
		case v.Kind == connector.ValueNull:
			t.cols.SetNull(s)
		case v.Kind != p.kinds[s]:
			return false
		case v.Kind == connector.ValueInt:
			t.cols.SetInt(s, v.Int)
		default:
			t.cols.SetString(s, v.Str)
		}
	}
	sc.arena.Reset()
	sc.clearGot(len(d.fields))
	for _, f := range p.direct {
		switch v := rec.Column(f.col); v.Kind {
		case connector.ValueNull:
			sc.got[f.at] = sc.arena.NewNull()
		case connector.ValueInt:
			sc.got[f.at] = sc.arena.NewNumberInt(int(v.Int))
		default:
			if !expr.ArenaSafe(v.Str) {
				return false // a text the arena would escape as no JSON does
			}
			sc.got[f.at] = sc.arena.NewString(v.Str)
		}
	}
	return true
}
