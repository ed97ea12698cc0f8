package record

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/connector/fileio"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/expr"
	"github.com/weirstream/weir/internal/jsonnum"
	"github.com/weirstream/weir/internal/sqlparse"
	"github.com/weirstream/weir/spec"
)

// Record is a decoded record on its way to the window operator.
type Record struct {
	TS   etime.Time
	Key  string // canonical JSON of the key values, separated by KeySep
	vals []val  // one input per aggregate
	Raw  []byte // the record as a JSON object (for the late output)
	No   int64  // line number: arrival order for first/last ties
	Mark uint8  // markNone, MarkWatermark or MarkIdle
	// Filtered: the plan's where drops the record (after its watermark
	// has seen it).
	Filtered bool
	Part     int32 // the Kafka partition (other sources: 0)
	WM       etime.Time
	// Promised is the watermark the bound promises at the record's
	// arrival: its channel's (partition's) newest timestamp before it,
	// minus the bound, minus 1 (MinTime: none yet).
	Promised etime.Time
}

// AppendValues appends the record's values (one per aggregate of the
// plan it was decoded for) as a result's value holds them (Result):
// each as JSON, null when missing, followed by a 0 byte. A stateless
// query's row is its record's values.
func (r Record) AppendValues(b []byte) []byte {
	for _, v := range r.vals {
		if v.kind == vNone {
			b = append(b, "null"...)
		} else {
			b = appendVal(b, v)
		}
		b = append(b, 0)
	}
	return b
}

// The marks of a Record: a data record, or a control line of a replay.
const (
	markNone      uint8 = iota
	MarkWatermark       // $watermark: the channel's watermark
	MarkIdle            // $idle: the channel is idle (or active again)
)

// KeySep separates key values in Record.Key; it cannot occur in compact JSON.
const KeySep = "\x00"

// val is one aggregate input.
type val struct {
	kind  uint8 // vNone, vInt, vFloat, vJSON, vDec or vStr
	scale uint8 // vDec: the dec's scale
	i     int64 // vInt; vDec: the low 64 bits of the dec's mantissa
	hi    int64 // vDec: the high 64 bits of the dec's mantissa
	f     float64
	raw   string // vJSON: canonical JSON text; vStr: the string's text
}

// The kinds are numbered as checkpoints store them.
const (
	vNone uint8 = iota // missing or null: aggregates skip it
	vInt
	vFloat
	vJSON
	vDec // a JSON number with a fraction or beyond int64, exactly
	vStr // a string (min and max of type string), unquoted
)

// dec returns a vDec's decimal (an int's, at scale 0, for vInt).
func (v val) dec() dec {
	if v.kind == vInt {
		return decFromInt(v.i)
	}
	return dec{hi: v.hi, lo: uint64(v.i), scale: v.scale}
}

func decVal(d dec) val { return val{kind: vDec, scale: d.scale, i: int64(d.lo), hi: d.hi} }

// minValidTS is 2000-01-01T00:00:00Z: earlier timestamps are refused when
// checks are on (R2).
const minValidTS etime.Time = 946684800000

// Decoder turns lines into Records; it is shared by the source channels, so
// it keeps no per-record state outside a pooled parser.
type Decoder struct {
	p       *spec.Plan
	clk     clock.Clock
	scratch sync.Pool // *scratch
	// now is a recent reading of the clock: a timestamp below now +
	// max_future passes without reading the clock again (the clock only
	// moves forward, so a stale now can only make the check stricter, and
	// then the clock is read).
	now atomic.Int64
	// futureAt (0: off) is the plan's WarnAhead where its timestamps are
	// checked, read from a source that is not a generator (whose records
	// run ahead of the clock by design); Future counts the timestamps
	// accepted beyond it; OnFuture, when set, is called with a warning
	// for the first (futureTold), on the decoding goroutine.
	futureAt   etime.Duration
	Future     atomic.Int64
	OnFuture   func(warning string)
	futureTold atomic.Bool
	// Nulls counts the NULLs the computed fields and the where gave
	// where Flink fails the job (its own count unless replaced before
	// the first Decode); its OnNull is called on the decoding goroutine.
	Nulls *NullCount
	// needs says, per aggregate, what kind of input it takes.
	needs []need
	// fields are the record fields the job reads (the timestamp, the
	// keys, the aggregates' inputs), each once; tsAt, keyAt and aggAt are
	// the index in fields of the timestamp, each key and each aggregate's
	// input (-1: none). gather reads them all in one pass.
	fields       []string
	tsAt         int
	keyAt, aggAt []int
	// whenAt is, per aggregate, the index in fields of its when (-1:
	// none): a record counts into the aggregate only where it is true.
	whenAt []int
	// whereAt are the indexes in fields of the record fields (not the
	// computed ones) the where reads, with their names.
	whereAt []int
	// ChMax holds, per channel, the largest timestamp of each of its
	// slots: one slot for a file channel, one per partition for a Kafka
	// channel (slot p / channels of channel p % channels: Kafka partitions
	// are spread over channels so). Only the channel's own goroutine
	// touches its slots.
	ChMax [][]etime.Time
	// Splits: the lines come from the splits of their channels (Kafka
	// partitions, connector.Line.Split), which warnings name.
	Splits   bool
	Controls atomic.Int64 // control lines seen (live, for progress)
	warned   atomic.Bool  // a backward jump was warned about
	// Warn (nil: none) hears a backward jump of event time, once.
	Warn func(where string, from, to etime.Time)
	// Note counts a control line (regression false) or a regression of
	// event time (regression true) in the job's output counters (exact
	// across checkpoints); it is called on the channel's goroutine.
	Note func(ch int, regression bool)
	// watch catches a misspelled field name (fieldwatch.go); WarnField
	// (nil: none) hears each field it finds missing, once.
	watch     fieldWatch
	WarnField func(FieldWarning)
	// Rows says the records' values only become rows of a query
	// without a window, written as they come and kept in no window's
	// state: the decoder then cuts their texts from slabs instead of
	// allocating each (a slab lives as long as any value cut from it).
	Rows bool
	// where is the plan's where, compiled (nil: none); Filter (nil:
	// none) counts a record it drops, on the channel's goroutine.
	where    *expr.Pred
	whereSrc sqlparse.Expr // what where was compiled from
	Filter   func(ch int)
	// opts are the options the computed fields and the where were
	// compiled with; typed (nil: none) reads typed records
	// (UseColumns).
	opts  []expr.Option
	typed *typedPlan
	// asText counts the typed records read as their JSON form.
	asText atomic.Int64
	// OnText (nil: none) hears, once, of a CSV cell read as a number
	// whose text the number does not keep (1.10 is the number 1.1, one
	// key with a cell 1.1), where a key or a distinct value reads it; on
	// the decoding goroutine.
	OnText   func(warning string)
	textTold atomic.Bool
	// KeepRaw: a record read from a typed record keeps its JSON form
	// (Record.Raw), for a late output; without it Raw is nil.
	KeepRaw bool
	// computed are the plan's computed fields, in order: each sets its
	// field (index at in fields) from the fields before it. The first
	// nPre end with the last one that the timestamp or the where reads
	// (or one that those read in turn): only they are evaluated for a
	// record the where drops, the rest after it keeps one.
	computed []computed
	nPre     int
	// decimals are the fields read as exact decimals (source.decimals)
	// that the job reads.
	decimals []decimalField
	types    []typedField // source.types
	// exact marks the fields (by index) that hold decimals at a fixed
	// scale: decimals and computed DECIMAL casts. A key or a row keeps
	// their text (1.50), which is canonical for them, where other
	// numbers are written canonically (1.5).
	exact []bool
	// staged holds each channel's largest timestamp as its barrier of a
	// checkpoint passed, for the checkpoint's output part.
	stagedMu sync.Mutex
	staged   map[int64][][]etime.Time
}

// Barrier records channel ch's largest timestamp for checkpoint id; it
// runs on the channel's goroutine, the only one that touches ChMax[ch].
func (d *Decoder) Barrier(ch int, id int64) {
	if ch < 0 || ch >= len(d.ChMax) {
		return
	}
	d.stagedMu.Lock()
	defer d.stagedMu.Unlock()
	if d.staged == nil {
		d.staged = map[int64][][]etime.Time{}
	}
	if d.staged[id] == nil {
		// Every channel passes the barrier before the checkpoint
		// completes and sets its own element; reading the others' here
		// would race with their goroutines.
		d.staged[id] = make([][]etime.Time, len(d.ChMax))
	}
	d.staged[id][ch] = slices.Clone(d.ChMax[ch])
}

// MaxAt returns the channels' slots' largest timestamps as of checkpoint
// id and forgets that checkpoint and older ones.
func (d *Decoder) MaxAt(id int64) [][]etime.Time {
	d.stagedMu.Lock()
	defer d.stagedMu.Unlock()
	out := d.staged[id]
	for i := range d.staged {
		if i <= id {
			delete(d.staged, i)
		}
	}
	return out
}

func (d *Decoder) control(ch int) {
	d.Controls.Add(1)
	if d.Note != nil {
		d.Note(ch, false)
	}
}

// scratch is per-goroutine decoding state, taken from a pool: the parser,
// a buffer, a slab that aggregate inputs are cut from (one allocation per
// slab, not per record), and interned keys.
type scratch struct {
	p    fastjson.Parser
	np   fastjson.Parser   // a number in a string (numberIn)
	got  []*fastjson.Value // the record's fields, by decoder.fields
	buf  []byte
	num  []byte // a number's text (decNumber)
	slab []val
	keys map[string]string
	// arena holds the values of computed fields and decimals, for one
	// record; dnum is a decimal's text.
	arena fastjson.Arena
	dnum  []byte
	// typed are the decoder's expressions over typed records, compiled
	// for this scratch (typedOf).
	typed *typedExprs
	// text is the slab the texts of a Rows decoder's values are cut
	// from: its bytes before len are never written again.
	text []byte
}

// textSlab is the size of scratch.text's slabs.
const textSlab = 32 << 10

// room returns sc.text with room for a value's text: a new slab when
// little is left.
func (sc *scratch) room() []byte {
	if cap(sc.text)-len(sc.text) < textSlab/16 {
		sc.text = make([]byte, 0, textSlab)
	}
	return sc.text
}

// cutBytes is cut's, as bytes.
func (sc *scratch) cutBytes(b []byte) []byte {
	n := len(sc.text)
	sc.text = b
	return b[n:len(b):len(b)]
}

// cut returns the bytes that b, room's slab with a value's text
// appended, holds past the slab's end as a string that shares them, and
// keeps them. (A text that outgrew its slab moved it: b is then a new
// array, the texts cut before staying where they are.)
func (sc *scratch) cut(b []byte) string {
	t := sc.cutBytes(b)
	return unsafe.String(unsafe.SliceData(t), len(t))
}

// clearGot makes sc.got n fields, each nil (missing).
func (sc *scratch) clearGot(n int) {
	if cap(sc.got) < n {
		sc.got = make([]*fastjson.Value, n)
	}
	sc.got = sc.got[:n]
	clear(sc.got)
}

type computed struct {
	at  int
	x   *expr.Expr
	src sqlparse.Expr // what x was compiled from
}

// decimalField is a field of exact decimals at index at of the fields,
// or (path set) a field of the object there, by path.
type decimalField struct {
	at   int
	path []string
	spec.DecimalField
}

// read replaces the field's value in sc.got by its decimal at the
// field's scale (null beyond its precision); a value that is no number
// (nor a string that holds one) is an error.
func (f decimalField) read(sc *scratch) error {
	// A field of a nested object is read, and replaced, in its parent.
	v, parent, ok := locate(sc, f.at, f.path)
	if !ok || v == nil || v.Type() == fastjson.TypeNull {
		return nil
	}
	switch v.Type() {
	case fastjson.TypeNumber:
		sc.num = v.MarshalTo(sc.num[:0])
	case fastjson.TypeString:
		// A number's text as Java's BigDecimal reads it (Flink's JSON
		// format reads a string so): a sign, digits with a point
		// anywhere, an exponent ("+1.5", ".5" and "1." too).
		b, _ := v.StringBytes()
		if len(b) > 0 && b[0] == '+' {
			b = b[1:]
		}
		if !decimalText(b) {
			return bad("value_not_number", "field %q is a DECIMAL(%d, %d), got %s", f.Field, f.Precision, f.Scale, short(v))
		}
		sc.num = append(sc.num[:0], b...)
	default:
		return bad("value_not_number", "field %q is a DECIMAL(%d, %d), got %s", f.Field, f.Precision, f.Scale, short(v))
	}
	d, ok := parseDec(sc.num)
	if ok {
		d, ok = d.round(uint8(f.Scale))
	}
	var n *fastjson.Value
	if !ok || !d.fits(f.Precision) {
		n = sc.arena.NewNull()
	} else {
		sc.dnum = appendDec(sc.dnum[:0], d)
		n = sc.arena.NewNumberString(string(sc.dnum))
	}
	if parent != nil {
		parent.Set(f.path[len(f.path)-1], n)
		return nil
	}
	sc.got[f.at] = n
	return nil
}

// maxInterned bounds the interned keys of one scratch; past it the table
// starts over.
const maxInterned = 1 << 16

// regressionJump is the backward jump of event time within one channel
// that counts as a timestamp regression (R2: counted and warned about,
// not an error).
const regressionJump etime.Duration = 3600_000

type need uint8

const (
	needNothing need = iota // count without a field
	needPresent             // count with a field: present and not null
	needNumber              // sum, min, max, avg (and _distinct): exact decimals
	needFloat               // sum, min, max, avg (and _distinct) of type float: float64
	needString              // min, max of type string: a string's text
	needJSON                // first, last, collect, count_distinct
)

// NewDecoder returns the decoder of plan p's records; clk is the job's
// processing clock (max_future checks, the field watch's second).
func NewDecoder(p *spec.Plan, clk clock.Clock) *Decoder {
	d := &Decoder{p: p, clk: clk, ChMax: make([][]etime.Time, p.Channels)}
	if p.Checks && p.Time == spec.EventTime && p.WarnAhead > 0 && p.WarnAhead < p.MaxFuture && p.Source.Type != "generator" && p.Source.Type != "nexmark" {
		d.futureAt = p.WarnAhead
	}
	for i := range d.ChMax {
		d.ChMax[i] = []etime.Time{etime.MinTime}
	}
	for _, a := range p.Aggregates {
		n := needJSON
		switch a.Fn {
		case "count":
			n = needNothing
			if a.Field != "" {
				n = needPresent
			}
		case "sum", "min", "max", "avg", "sum_distinct", "avg_distinct":
			switch a.Type {
			case "float":
				n = needFloat
			case "string":
				n = needString
			default:
				n = needNumber
			}
		}
		d.needs = append(d.needs, n)
	}
	resolve := func(col sqlparse.Ident) (int, *sqlparse.Error) { return d.fieldAt(col.Name), nil }
	// The decimal fields: source.decimals, and computed fields cast to
	// a DECIMAL (as the SQL compiler casts every decimal it computes).
	scales := map[string]int{}
	for _, f := range p.Decimals {
		scales[f.Field] = f.Scale
	}
	xs := make([]sqlparse.Expr, len(p.Computed))
	for i, f := range p.Computed {
		// spec.Compile checked that each parses and compiles.
		xs[i], _ = sqlparse.ParseExpr(f.Expr)
		if sc, ok := expr.DecimalScale(xs[i]); ok {
			scales[f.Name] = sc
		}
	}
	decimals := expr.Decimals(func(f string) (int, bool) { sc, ok := scales[f]; return sc, ok })
	// The event-time field in seconds, microseconds or nanoseconds
	// compares with a TIMESTAMP literal in that unit.
	unit := map[spec.TimeUnit][2]int64{spec.UnitSeconds: {1000, 1}, spec.UnitMicros: {1, 1000}, spec.UnitNanos: {1, 1_000_000}}[p.TSUnit]
	times := expr.TimeField(p.TSField, unit[0], unit[1])
	d.Nulls = new(NullCount)
	nulls := expr.OnNull(func(_ sqlparse.Pos, what, text string) { d.Nulls.note(what, text) })
	var deps [][]int // each computed field's, by index of d.computed
	for i, f := range p.Computed {
		if xs[i] == nil {
			continue
		}
		var uses []int
		reads := func(col sqlparse.Ident) (int, *sqlparse.Error) {
			at, err := resolve(col)
			uses = append(uses, at)
			return at, err
		}
		if e, err := expr.CompileValue(xs[i], reads, decimals, times, nulls); err == nil {
			d.computed = append(d.computed, computed{at: d.fieldAt(f.Name), x: e, src: xs[i]})
			deps = append(deps, uses)
		}
	}
	d.tsAt = -1
	if p.Time == spec.EventTime && !p.TSFromKafka && !p.TSFromNATS {
		// (With timestamp.source kafka or nats the source sets the
		// timestamp: the record needs no field for it.)
		d.tsAt = d.fieldAt(p.TSField)
	}
	for _, k := range p.Key {
		d.keyAt = append(d.keyAt, d.fieldAt(k))
	}
	for i, a := range p.Aggregates {
		at := -1
		if d.needs[i] != needNothing {
			at = d.fieldAt(a.Field)
		}
		d.aggAt = append(d.aggAt, at)
		when := -1
		if a.When != "" {
			when = d.fieldAt(a.When)
		}
		d.whenAt = append(d.whenAt, when)
	}
	// The fields the watermark and the where read come first: the
	// computed fields they need, and those fields' own, are evaluated
	// before the where, and the rest only for a record it keeps.
	early := map[int]bool{}
	if d.tsAt >= 0 {
		early[d.tsAt] = true
	}
	if p.Where != "" {
		// spec.Compile checked that it compiles.
		if x, err := sqlparse.ParseExpr(p.Where); err == nil {
			reads := func(col sqlparse.Ident) (int, *sqlparse.Error) {
				at, err := resolve(col)
				early[at] = true
				if !slices.ContainsFunc(p.Computed, func(f spec.ComputedField) bool { return f.Name == col.Name }) && !slices.Contains(d.whereAt, at) {
					d.whereAt = append(d.whereAt, at)
				}
				return at, err
			}
			d.where, _ = expr.Compile(x, reads, decimals, times, nulls)
			d.whereSrc = x
		}
	}
	d.opts = []expr.Option{decimals, times, nulls}
	// A computed field that nothing reads (a view's column the query
	// does not select) is not computed, as a SQL engine prunes it.
	live := maps.Clone(early)
	for _, at := range slices.Concat(d.keyAt, d.aggAt, d.whenAt) {
		live[at] = true
	}
	for changed := true; changed; {
		changed = false
		for i, f := range d.computed {
			if !live[f.at] {
				continue
			}
			for _, at := range deps[i] {
				if !live[at] {
					live[at], changed = true, true
				}
			}
		}
	}
	kept := 0
	for i, f := range d.computed {
		if live[f.at] {
			d.computed[kept], deps[kept] = f, deps[i]
			kept++
		}
	}
	d.computed, deps = d.computed[:kept], deps[:kept]
	d.nPre = len(d.computed)
	if d.where != nil {
		d.nPre = 0
		for i := len(d.computed) - 1; i >= 0; i-- {
			if early[d.computed[i].at] {
				d.nPre = max(d.nPre, i+1)
				for _, at := range deps[i] {
					early[at] = true
				}
			}
		}
	}
	d.exact = make([]bool, len(d.fields))
	for name := range scales {
		if i := slices.Index(d.fields, name); i >= 0 {
			d.exact[i] = true
		}
	}
	// The typed fields the job reads.
	for _, f := range p.Types {
		root, rest, nested := strings.Cut(f.Field, ".")
		if !nested {
			if i := slices.Index(d.fields, f.Field); i >= 0 {
				d.types = append(d.types, newTypedField(i, nil, f))
			}
			continue
		}
		if i := slices.Index(d.fields, root); i >= 0 {
			d.types = append(d.types, newTypedField(i, strings.Split(rest, "."), f))
		}
	}
	// The decimals the job reads (not the timestamp's field, read as a
	// time).
	for _, f := range p.Decimals {
		root, rest, nested := strings.Cut(f.Field, ".")
		if !nested {
			if i := slices.Index(d.fields, f.Field); i >= 0 && i != d.tsAt {
				d.decimals = append(d.decimals, decimalField{at: i, DecimalField: f})
			}
			continue
		}
		if i := slices.Index(d.fields, root); i >= 0 && i != d.tsAt {
			d.decimals = append(d.decimals, decimalField{at: i, path: strings.Split(rest, "."), DecimalField: f})
		}
	}
	d.watch.seen = make([]atomic.Bool, len(d.fields))
	for _, f := range d.computed {
		// Always there (a null at worst), also when the where drops a
		// record before they are computed.
		d.watch.seen[f.at].Store(true)
	}
	return d
}

// fieldAt is the index of name in d.fields, added if it is not there.
func (d *Decoder) fieldAt(name string) int {
	if i := slices.Index(d.fields, name); i >= 0 {
		return i
	}
	d.fields = append(d.fields, name)
	return len(d.fields) - 1
}

// gather reads the fields the job needs from o into sc.got in one pass
// over its members; a field that appears twice has its last value, as
// encoding/json reads it, and a missing one is nil.
func (d *Decoder) gather(o *fastjson.Object, sc *scratch) {
	if len(d.fields) == 0 {
		sc.got = sc.got[:0]
		return
	}
	sc.clearGot(len(d.fields))
	o.Visit(func(k []byte, v *fastjson.Value) {
		for i, f := range d.fields {
			if string(k) == f {
				sc.got[i] = v
				return
			}
		}
	})
}

func bad(reason, format string, args ...any) error {
	return &weir.BadInput{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// Decode is the TryMap function of the job's door: control lines become
// markers, bad lines dead letters, and data lines Records.
func (d *Decoder) Decode(l fileio.Line) (Record, error) { return d.DecodeSlot(l, 0) }

// DecodeSlot decodes a line of slot slot of its channel (a Kafka
// partition; files have one slot per channel), whose backward jumps in
// event time are counted apart from the other slots'.
func (d *Decoder) DecodeSlot(l fileio.Line, slot int) (Record, error) {
	switch l.Kind {
	case fileio.Watermark:
		d.control(l.Channel)
		return Record{Mark: MarkWatermark, WM: l.Watermark}, nil
	case fileio.Idle:
		d.control(l.Channel)
		return Record{Mark: MarkIdle}, nil
	case fileio.Bad:
		return Record{}, &weir.BadInput{Reason: l.Reason, Detail: l.Detail}
	}
	sc, _ := d.scratch.Get().(*scratch)
	if sc == nil {
		sc = &scratch{keys: map[string]string{}}
	}
	defer d.scratch.Put(sc)
	cs, where := d.computed, d.where
	var r Record
	if l.Typed != nil {
		if t := d.typedOf(sc); t != nil && t.gather(d, l.Typed, sc) {
			cs, where = t.computed, t.where
			r = Record{No: l.No, Promised: etime.MinTime}
			if d.KeepRaw {
				r.Raw = sc.cutBytes(l.Typed.AppendJSON(sc.room()))
			}
			return d.decoded(l, slot, sc, r, cs, where)
		}
		// Read as its JSON form: a source's typed records the decoder
		// cannot read as they are, or one holding a value the spec's
		// types check (a typed record is read as its JSON form is).
		l.Text, l.Valid = l.Typed.AppendJSON(nil), true
		d.asText.Add(1)
	}
	o, err := d.gatherJSON(l, sc)
	if err != nil {
		return Record{}, err
	}
	r = Record{Raw: l.Text, No: l.No, Promised: etime.MinTime}
	if !d.watch.Done.Load() {
		d.observe(o, sc)
	}
	return d.decoded(l, slot, sc, r, cs, where)
}

// gatherJSON checks and parses a data line's JSON text into sc.got (the
// fields' values, in the spec's types and decimals) and returns its
// object.
func (d *Decoder) gatherJSON(l fileio.Line, sc *scratch) (*fastjson.Object, error) {
	// A file's lines are checked when they are framed; Kafka and NATS
	// records, and ledger entries, are checked here: fastjson takes
	// invalid UTF-8, and canonical text writes every invalid byte as
	// U+FFFD, which would make distinct keys one.
	if l.Unchecked && !l.Valid {
		if i := fileio.InvalidUTF8(l.Text); i >= 0 {
			return nil, bad("utf8_invalid", "invalid UTF-8 at byte offset %d of the record", i)
		}
	}
	if len(l.Text) == 0 {
		// A compacted topic's tombstone (Flink's JSON format skips it):
		// counted, as every record is.
		return nil, bad("json_malformed", "an empty record, no JSON object: a Kafka tombstone (a record without a value, which deletes its key from a compacted topic) or an empty message")
	}
	// fastjson's parser is lenient (NaN, 01, raw control characters);
	// its validator is not.
	if !l.Valid {
		if err := fastjson.ValidateBytes(l.Text); err != nil {
			return nil, bad("json_malformed", "not valid JSON: %s", jsonError(err))
		}
	}
	if !l.Valid {
		if i := LoneSurrogate(l.Text); i >= 0 {
			return nil, bad("utf8_invalid", "a lone UTF-16 surrogate escape (%s) at byte offset %d of the record: no Unicode character, so it has no text that keeps it apart from other strings", l.Text[i:i+6], i)
		}
	}
	v, err := sc.p.ParseBytes(l.Text)
	if err != nil {
		return nil, bad("json_malformed", "not valid JSON: %s", jsonError(err))
	}
	o, err := v.Object()
	if err != nil {
		return nil, bad("json_malformed", "a record must be a JSON object, not %s", v.Type())
	}
	d.gather(o, sc)
	if len(d.computed)+len(d.decimals)+len(d.types) > 0 {
		sc.arena.Reset()
	}
	for _, f := range d.types {
		if err := f.read(sc); err != nil {
			return nil, err
		}
	}
	for _, f := range d.decimals {
		if err := f.read(sc); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// decoded finishes the decoding of record r of line l, whose fields
// sc.got holds: its computed fields (cs) that the timestamp and the
// where read, its timestamp, the where, the other computed fields, its
// key and values.
func (d *Decoder) decoded(l fileio.Line, slot int, sc *scratch, r Record, cs []computed, where *expr.Pred) (Record, error) {
	for _, f := range cs[:d.nPre] {
		sc.got[f.at] = f.x.Value(&sc.arena, sc.got)
	}
	var err error
	if d.tsAt >= 0 {
		if r.TS, err = d.timestamp(sc.got[d.tsAt]); err != nil {
			return Record{}, err
		}
		if ch := l.Channel; ch >= 0 && ch < len(d.ChMax) && slot >= 0 {
			for len(d.ChMax[ch]) <= slot {
				d.ChMax[ch] = append(d.ChMax[ch], etime.MinTime)
			}
			if m := d.ChMax[ch][slot]; m != etime.MinTime {
				r.Promised = m.Add(-d.p.Bound).Add(-1)
			}
			if m := d.ChMax[ch][slot]; r.TS > m {
				d.ChMax[ch][slot] = r.TS
			} else if m != etime.MinTime && r.TS < m.Add(-regressionJump) {
				if d.Note != nil {
					d.Note(ch, true)
				}
				if d.Warn != nil && d.warned.CompareAndSwap(false, true) {
					where := fmt.Sprintf("channel %d", ch)
					if d.Splits {
						where = fmt.Sprintf("partition %d", l.Split)
					}
					d.Warn(where, m, r.TS)
				}
			}
		}
	}
	// The where drops the record before its key and values are read (a
	// row a view filters out need not have the query's key, as in SQL,
	// where WHERE comes before GROUP BY); after its timestamp, which
	// moves the watermark before the record is dropped.
	if where != nil && !where.Keep(sc.got) {
		r.Filtered = true
		if d.Filter != nil {
			d.Filter(l.Channel)
		}
		if d.tsAt >= 0 {
			d.ahead(r.TS)
		}
		return r, nil
	}
	for _, f := range cs[d.nPre:] {
		sc.got[f.at] = f.x.Value(&sc.arena, sc.got)
	}
	if r.Key, err = d.key(sc); err != nil {
		return Record{}, err
	}
	if n := len(d.needs); n > 0 {
		if len(sc.slab)+n > cap(sc.slab) {
			sc.slab = make([]val, 0, max(n*256, 1024))
		}
		r.vals = sc.slab[len(sc.slab) : len(sc.slab)+n : len(sc.slab)+n]
		sc.slab = sc.slab[:len(sc.slab)+n]
	}
	for i, n := range d.needs {
		a := &d.p.Aggregates[i]
		if w := d.whenAt[i]; w >= 0 && (sc.got[w] == nil || sc.got[w].Type() != fastjson.TypeTrue) {
			continue // FILTER (WHERE ...): not this aggregate's record
		}
		if n == needNothing {
			r.vals[i].kind = vJSON // count every record
			continue
		}
		f := sc.got[d.aggAt[i]]
		if f == nil || f.Type() == fastjson.TypeNull {
			if a.Nulls == "respect" {
				r.vals[i] = val{kind: vJSON, raw: "null"} // collected as null
			}
			continue
		}
		switch n {
		case needPresent:
			r.vals[i].kind = vJSON
		case needNumber, needFloat:
			if f.Type() == fastjson.TypeString && d.p.NumbersInStrings {
				f = numberIn(f, sc)
			}
			if f.Type() != fastjson.TypeNumber {
				return Record{}, bad("value_not_number", "field %q of %s needs a number, got %s", a.Field, a.Fn, short(f))
			}
			if n == needNumber {
				r.vals[i] = decNumber(f, sc)
				if v := r.vals[i]; v.kind == vInt && d.exact[d.aggAt[i]] {
					// A DECIMAL(p, 0) is a decimal, not an integer: its
					// avg is exact (DECIMAL(38, 6)), as an integer's is not.
					r.vals[i] = decVal(decFromInt(v.i))
				}
			} else {
				r.vals[i] = number(f)
			}
			if r.vals[i].kind == vFloat && (math.IsInf(r.vals[i].f, 0) || math.IsNaN(r.vals[i].f)) {
				return Record{}, bad("value_out_of_range", "field %q of %s is %s, beyond float64", a.Field, a.Fn, short(f))
			}
			if a.Fn == "sum_distinct" || a.Fn == "avg_distinct" {
				// Which values are distinct is count_distinct's: their
				// canonical JSON (a decimal field's own text).
				if d.exact[d.aggAt[i]] {
					r.vals[i].raw = string(f.MarshalTo(sc.num[:0]))
				} else {
					r.vals[i].raw = canonical(f)
				}
			}
		case needString:
			// As Flink's JSON format reads a STRING column: a string's
			// text, any other value's JSON text.
			if f.Type() == fastjson.TypeString {
				r.vals[i] = val{kind: vStr, raw: string(f.GetStringBytes())}
			} else {
				r.vals[i] = val{kind: vStr, raw: canonical(f)}
			}
		case needJSON:
			if d.exact[d.aggAt[i]] && f.Type() == fastjson.TypeNumber {
				if d.Rows {
					r.vals[i] = val{kind: vJSON, raw: sc.cut(f.MarshalTo(sc.room()))}
					break
				}
				r.vals[i] = val{kind: vJSON, raw: string(f.MarshalTo(sc.num[:0]))}
				break
			}
			if d.Rows {
				r.vals[i] = val{kind: vJSON, raw: sc.cut(AppendCanonical(sc.room(), f))}
				break
			}
			r.vals[i] = val{kind: vJSON, raw: canonical(f)}
			d.noteText(a.Field, f, r.vals[i].raw)
		}
	}
	if d.tsAt >= 0 {
		d.ahead(r.TS)
	}
	return r, nil
}

// LoneSurrogate returns the byte offset in JSON text b of the first \u
// escape of a UTF-16 surrogate that is not half of a pair (\ud800 alone,
// \udc00 before \ud800), or -1. JSON's grammar takes one, but it stands
// for no Unicode character: the JSON parser keeps such an escape as its
// six characters of text, which a string with a real backslash (\\ud800)
// has too, so two different keys would be one.
func LoneSurrogate(b []byte) int {
	i := bytes.IndexByte(b, '\\')
	if i < 0 {
		return -1
	}
	for ; i+1 < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if b[i+1] != 'u' {
			i++ // an escaped character, a backslash too
			continue
		}
		c, ok := hex4(b, i+2)
		switch {
		case !ok:
			i++
		case c >= 0xD800 && c <= 0xDBFF:
			if lo, ok := hex4(b, i+8); i+7 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' && ok && lo >= 0xDC00 && lo <= 0xDFFF {
				i += 11
				continue
			}
			return i
		case c >= 0xDC00 && c <= 0xDFFF:
			return i
		default:
			i += 5
		}
	}
	return -1
}

// hex4 reads the four hex digits of b at i.
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// maxJSONError bounds a json_malformed detail (the record itself is in
// the dead letter's raw).
const maxJSONError = 300

// jsonError is a JSON parser's error as a dead letter's detail: its
// repeated "cannot parse object: cannot parse object value: " (one per
// level of a deeply nested record) said once, and cut to maxJSONError
// bytes, keeping the end, where the cause is.
func jsonError(err error) string {
	msg := err.Error()
	for _, rep := range []string{"cannot parse object: cannot parse object value: ", "cannot parse array: cannot parse array value: "} {
		if n := strings.Count(msg, rep); n > 1 {
			msg = strings.Replace(msg, strings.Repeat(rep, n), rep, 1)
		}
	}
	if len(msg) > maxJSONError {
		cut := len(msg) - maxJSONError
		for cut < len(msg) && !utf8.RuneStart(msg[cut]) {
			cut++
		}
		msg = "..." + msg[cut:]
	}
	return msg
}

// decimalText reports whether b is a decimal number's text: an optional
// minus, digits with at most one point (at least one digit), and an
// optional exponent (e or E, a sign, digits).
func decimalText(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits, point := 0, false
	for ; i < len(b); i++ {
		switch c := b[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && !point:
			point = true
		default:
			goto rest
		}
	}
rest:
	if digits == 0 {
		return false
	}
	if i == len(b) {
		return true
	}
	if b[i] != 'e' && b[i] != 'E' {
		return false
	}
	i++
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		i++
	}
	if i == len(b) {
		return false
	}
	for ; i < len(b); i++ {
		if b[i] < '0' || b[i] > '9' {
			return false
		}
	}
	return true
}

// numberIn is the number a JSON string f holds ("12.50", as JSON writes
// numbers), parsed with the scratch's own parser (sc.p holds the
// record); f itself when the string is no JSON number.
func numberIn(f *fastjson.Value, sc *scratch) *fastjson.Value {
	b, _ := f.StringBytes()
	// JSON's number grammar, which fastjson's parser does not check
	// ("2024-01-05", "nan" and " 3" are no numbers).
	if len(b) == 0 || !(b[0] == '-' || b[0] >= '0' && b[0] <= '9') || b[len(b)-1] < '0' || b[len(b)-1] > '9' || fastjson.ValidateBytes(b) != nil {
		return f
	}
	v, err := sc.np.ParseBytes(b)
	if err != nil || v.Type() != fastjson.TypeNumber {
		return f
	}
	return v
}

// number converts a JSON number: int64 while it is an integer that fits.
func number(f *fastjson.Value) val {
	if i, err := f.Int64(); err == nil {
		return val{kind: vInt, i: i}
	}
	return val{kind: vFloat, f: f.GetFloat64()}
}

// decNumber converts a JSON number for an exact aggregate: int64 while it
// is an integer that fits, else a dec, else (more than 38 digits, or a
// scale above 38) a float64, which the aggregate counts as a
// decimal_overflow.
//
// It reads the number's text once, without fastjson's Int64, whose error
// for a number with a fraction allocates.
func decNumber(f *fastjson.Value, sc *scratch) val {
	t := f.MarshalTo(sc.num[:0]) // a number's text as written
	sc.num = t
	if n := len(t); n > 0 && n <= 18 { // an integer of up to 17 digits: int64 at once
		i, neg := 0, t[0] == '-'
		if neg {
			i = 1
		}
		x, ok := int64(0), i < n
		for ; i < n && ok; i++ {
			c := t[i]
			ok = c >= '0' && c <= '9'
			x = x*10 + int64(c-'0')
		}
		if ok {
			if neg {
				x = -x
			}
			return val{kind: vInt, i: x}
		}
	}
	d, ok := parseDec(t)
	switch {
	case !ok:
		return val{kind: vFloat, f: f.GetFloat64()}
	case d.scale == 0 && d.hi == int64(d.lo)>>63: // fits int64
		return val{kind: vInt, i: int64(d.lo)}
	}
	return decVal(d)
}

// canonical is a value's JSON text in one form, so that two values have
// the same text exactly when they are the same JSON value: numbers as
// jsonnum writes them (1, 1.0 and 1e0 are 1; numbers beyond int64 and
// float64 keep every digit), strings with one escaping, object members
// sorted by name, a repeated member's last value (as field reads a
// record's fields), and arrays and objects without spaces.
func canonical(v *fastjson.Value) string { return string(AppendCanonical(nil, v)) }

// AppendCanonical appends v as canonical JSON: compact, object keys
// sorted, numbers in their exact canonical text (internal/jsonnum), so
// that equal values have one spelling (a key, a count_distinct value).
func AppendCanonical(b []byte, v *fastjson.Value) []byte {
	switch v.Type() {
	case fastjson.TypeNumber:
		if i, err := v.Int64(); err == nil {
			return strconv.AppendInt(b, i, 10)
		}
		// The literal, copied off b: the canonical text may be longer.
		var lit [64]byte
		return jsonnum.AppendCanonical(b, v.MarshalTo(lit[:0]))
	case fastjson.TypeString:
		return weir.AppendJSONString(b, string(v.GetStringBytes()))
	case fastjson.TypeArray:
		b = append(b, '[')
		for i, e := range v.GetArray() {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendCanonical(b, e)
		}
		return append(b, ']')
	case fastjson.TypeObject:
		o, _ := v.Object()
		type member struct {
			name string
			v    *fastjson.Value
		}
		ms := make([]member, 0, o.Len())
		o.Visit(func(k []byte, v *fastjson.Value) { ms = append(ms, member{string(k), v}) })
		// Sorted by name, and among members of one name the last.
		slices.SortStableFunc(ms, func(x, y member) int { return strings.Compare(x.name, y.name) })
		b = append(b, '{')
		first := true
		for i, m := range ms {
			if i+1 < len(ms) && ms[i+1].name == m.name {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = weir.AppendJSONString(b, m.name)
			b = append(b, ':')
			b = AppendCanonical(b, m.v)
		}
		return append(b, '}')
	}
	return v.MarshalTo(b)
}

func short(v *fastjson.Value) string {
	s := string(v.MarshalTo(nil))
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	switch v.Type() {
	case fastjson.TypeTrue, fastjson.TypeFalse:
		return "boolean " + s
	}
	return v.Type().String() + " " + s
}

// noteText warns, once, of a CSV cell of field that is a number whose
// canonical text (the key's, the distinct value's) is not the cell's.
func (d *Decoder) noteText(field string, f *fastjson.Value, canon string) {
	if d.OnText == nil || d.p.Format != spec.FormatCSV || f.Type() != fastjson.TypeNumber || d.textTold.Load() {
		return
	}
	var buf [64]byte
	if t := f.MarshalTo(buf[:0]); string(t) != canon && d.textTold.CompareAndSwap(false, true) {
		d.OnText(fmt.Sprintf("field %q: the CSV cell %s is read as the number %s, so cells that are one number (1.10 and 1.1, 2 and 2.0) are one key or value; declare source.types: [{field: %s, type: string}] to read the column as text (versions, codes, identifiers)", field, t, canon, field))
	}
}

// nullValue is a key field's value when it is missing or null and the
// plan keys such records by null (spec.Plan.NullKeys).
var nullValue = fastjson.MustParse("null")

// key renders the record's key, interned so that a repeated key costs no
// allocation.
func (d *Decoder) key(sc *scratch) (string, error) {
	keys := d.p.Key
	if len(keys) == 0 {
		return "", nil
	}
	b := sc.buf[:0]
	for i, k := range keys {
		f := sc.got[d.keyAt[i]]
		if f == nil || f.Type() == fastjson.TypeNull {
			if !d.p.NullKeys {
				return "", bad("key_missing", "key field %q is missing or null", k)
			}
			f = nullValue
		}
		if i > 0 {
			b = append(b, KeySep...)
		}
		if d.exact[d.keyAt[i]] && f.Type() == fastjson.TypeNumber {
			b = f.MarshalTo(b)
			continue
		}
		n := len(b)
		b = AppendCanonical(b, f)
		d.noteText(k, f, unsafe.String(unsafe.SliceData(b[n:]), len(b)-n))
	}
	sc.buf = b
	if s, ok := sc.keys[string(b)]; ok {
		return s, nil
	}
	if len(sc.keys) >= maxInterned {
		clear(sc.keys)
	}
	s := string(b)
	sc.keys[s] = s
	return s, nil
}

// timestamp parses and checks a record's event time (R2).
func (d *Decoder) timestamp(f *fastjson.Value) (etime.Time, error) {
	p := d.p
	field := p.TSField
	if f == nil || f.Type() == fastjson.TypeNull {
		return 0, bad("timestamp_missing", "field %q is missing or null", field)
	}
	var ts etime.Time
	unit := p.TSUnit
	if unit == spec.UnitSQL {
		if f.Type() == fastjson.TypeString {
			b := f.GetStringBytes()
			t, err := time.Parse(sqlLayout(b), string(b))
			if err == nil && !sqlShaped(b) {
				// Go's layout takes a one-digit hour (0:00:09), which
				// Flink's SQL format, and weir's expressions, do not.
				err = errors.New("not two digits each")
			}
			if err != nil {
				return 0, bad("timestamp_unparsable", "field %q = %q is not a SQL timestamp such as 2026-01-01 00:00:05.000 (two digits each for month, day, hour, minute and second)", field, b)
			}
			ts = etime.FromTime(t)
			goto checks
		}
		unit = spec.UnitMillis
	}
	if unit == spec.UnitRFC3339 {
		if f.Type() != fastjson.TypeString {
			return 0, bad("timestamp_unparsable", "field %q must be an RFC 3339 string with unit rfc3339, got %s", field, short(f))
		}
		s := string(f.GetStringBytes())
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil && len(s) > 10 && strings.ContainsAny(s[10:], "tz ") {
			// RFC 3339 (5.6) allows a lower-case t and z, and a space
			// for the T; Go's layout takes the upper-case forms only.
			b := []byte(s)
			if b[10] == 't' || b[10] == ' ' {
				b[10] = 'T'
			}
			if b[len(b)-1] == 'z' {
				b[len(b)-1] = 'Z'
			}
			s = string(b)
			t, err = time.Parse(time.RFC3339Nano, s)
		}
		if err != nil {
			if _, err2 := time.Parse("2006-01-02T15:04:05.999999999", s); err2 == nil {
				s = string(f.GetStringBytes())
				return 0, bad("timestamp_no_zone", "field %q = %q has no time zone; add Z or an offset such as +08:00", field, s)
			}
			return 0, bad("timestamp_unparsable", "field %q = %q is not an RFC 3339 time", field, s)
		}
		ts = etime.FromTime(t)
	} else {
		if f.Type() != fastjson.TypeNumber {
			fix := "send a number"
			if f.Type() == fastjson.TypeString {
				fix = "send a number, or set unit: rfc3339 for time strings"
			}
			return 0, bad("timestamp_unparsable", "field %q = %s is not a number of %s; %s", field, short(f), p.TSUnit, fix)
		}
		if unit != spec.UnitSeconds {
			if x := f.GetFloat64(); x != math.Trunc(x) {
				return 0, bad("timestamp_unparsable", "field %q = %s has a fraction, and a time in %s is a whole number; send whole %s, or set unit: s for fractional seconds", field, short(f), unitName(unit), unitName(unit))
			}
		}
		var ok bool
		if ts, ok = toMillis(f, unit); !ok {
			return 0, bad("timestamp_out_of_range", "field %q = %s (in %s) is beyond what int64 milliseconds hold", field, short(f), unitName(unit))
		}
	}
checks:
	if ts == etime.MinTime {
		return 0, bad("timestamp_out_of_range", "field %q is the smallest int64, which weir reserves for \"no timestamp\"", field)
	}
	if !p.Checks {
		return ts, nil
	}
	if ts < 0 {
		return 0, bad("timestamp_negative", "field %q = %d ms is before 1970", field, ts)
	}
	if ts < minValidTS {
		if guess, ok := unitGuess(ts, p.TSUnit, true); ok {
			return 0, bad("timestamp_unit", "field %q = %s is before 2000-01-01 as %s; it looks like %s: %s", field, short(f), p.TSUnit, unitName(guess), d.unitFix(guess))
		}
		return 0, bad("timestamp_too_old", "field %q is %s, before 2000-01-01", field, ts.Wall().Format(time.RFC3339))
	}
	now := etime.Time(d.now.Load())
	// The first bound a timestamp passes (the warning's, else max_future)
	// reads the clock again.
	first := p.MaxFuture
	if d.futureAt > 0 {
		first = d.futureAt
	}
	if ts > now.Add(first) {
		now = clock.Millis(d.clk)
		d.now.Store(int64(now))
	}
	if ts > now.Add(p.MaxFuture) {
		if guess, ok := unitGuess(ts, p.TSUnit, false); ok && guess != p.TSUnit {
			return 0, bad("timestamp_unit", "field %q = %s is far in the future as %s; it looks like %s: %s", field, short(f), p.TSUnit, unitName(guess), d.unitFix(guess))
		}
		return 0, bad("timestamp_future", "field %q is %s, more than max_future %v ahead of processing time %s", field, ts.Wall().Format(time.RFC3339), spec.Duration(p.MaxFuture), now.Wall().Format(time.RFC3339))
	}
	return ts, nil
}

// ahead counts, and warns of the first, a record decoded without error
// whose timestamp ts is more than futureAt ahead of the clock (read again
// by timestamp for such a record, so d.now is fresh): it moves the
// watermark ahead, whether the where keeps it or not.
func (d *Decoder) ahead(ts etime.Time) {
	now := etime.Time(d.now.Load())
	if d.futureAt <= 0 || ts <= now.Add(d.futureAt) {
		return
	}
	d.Future.Add(1)
	if d.OnFuture != nil && d.futureTold.CompareAndSwap(false, true) {
		d.OnFuture(fmt.Sprintf("field %q is %s, %v ahead of processing time %s (within max_future %v, so accepted): the watermark runs ahead with it, and the records of the time in between may be late; check the producer's clock (or, for a replay, its --now), or lower source.timestamp.max_future to make such records dead letters (future_dated counts them)",
			d.p.TSField, ts.Wall().Format(time.RFC3339), spec.Duration((ts-now+500)/1000*1000), now.Wall().Format(time.RFC3339), spec.Duration(d.p.MaxFuture)))
	}
}

// NullCounters name NullCount's kinds in a run's summary, in order.
var NullCounters = [2]string{"null_" + expr.NullCast, "null_" + expr.NullDivision}

// NullCount counts the NULLs that compiled expressions gave where Flink
// fails the job (expr.NullNote: a CAST of a value not of its type, a
// division by zero), by kind in NullCounters' order, and warns of the
// first of each kind. Safe for concurrent use; a nil *NullCount counts
// nothing.
type NullCount struct {
	n    [2]atomic.Int64
	told [2]atomic.Bool
	// OnNull, when set before the expressions run, is called with a
	// warning for the first NULL of each kind, on the evaluating
	// goroutine.
	OnNull func(warning string)
}

// Load returns the count of kind i (NullCounters' order); 0 for nil.
func (c *NullCount) Load(i int) int64 {
	if c == nil {
		return 0
	}
	return c.n[i].Load()
}

// note counts a NULL of kind what (of expression text) and warns of the
// first of its kind.
func (c *NullCount) note(what, text string) {
	i, why, flink, fix := 0, "a text that is no value of the type", "Flink fails the job", "TRY_CAST says the NULL is meant"
	if what == expr.NullDivision {
		i, why, flink, fix = 1, "a division by zero", "Flink fails the job (or, dividing a DOUBLE, gives Infinity or NaN)", "a CASE that tests the divisor says the NULL is meant"
	}
	c.n[i].Add(1)
	if c.OnNull != nil && c.told[i].CompareAndSwap(false, true) {
		c.OnNull(fmt.Sprintf("%s gave NULL for %s, where %s; weir goes on with the NULL and counts each (%s; %s)", text, why, flink, NullCounters[i], fix))
	}
}

// unitFix says how to read a timestamp field in unit u: the spec's
// field, or for a SQL job TO_TIMESTAMP_LTZ's precision (seconds and
// milliseconds) or a division into milliseconds.
func (d *Decoder) unitFix(u spec.TimeUnit) string {
	if !d.p.SQL {
		return "set source.timestamp.unit: " + string(u)
	}
	f := d.p.TSField
	switch u {
	case spec.UnitSeconds:
		return fmt.Sprintf("read it as TO_TIMESTAMP_LTZ(%s, 0)", f)
	case spec.UnitMillis:
		return fmt.Sprintf("read it as TO_TIMESTAMP_LTZ(%s, 3)", f)
	case spec.UnitMicros:
		return fmt.Sprintf("read it as TO_TIMESTAMP_LTZ(%s / 1000, 3)", f)
	}
	return fmt.Sprintf("read it as TO_TIMESTAMP_LTZ(%s / 1000000, 3)", f)
}

var unitScale = map[spec.TimeUnit]float64{spec.UnitSeconds: 1e3, spec.UnitMillis: 1, spec.UnitMicros: 1e-3, spec.UnitNanos: 1e-6}

func unitName(u spec.TimeUnit) string {
	return map[spec.TimeUnit]string{spec.UnitSeconds: "seconds", spec.UnitMillis: "milliseconds", spec.UnitMicros: "microseconds", spec.UnitNanos: "nanoseconds"}[u]
}

// sqlShaped reports whether b, a time sqlLayout's layout reads, writes
// its date and time in two digits each (four for the year), as Flink's
// SQL timestamp format (yyyy-MM-dd HH:mm:ss) and weir's expressions read
// it.
func sqlShaped(b []byte) bool {
	if len(b) < 19 {
		return false
	}
	for i, c := range b[:19] {
		switch i {
		case 4, 7:
			if c != '-' {
				return false
			}
		case 10:
		case 13, 16:
			if c != ':' {
				return false
			}
		default:
			if c < '0' || c > '9' {
				return false
			}
		}
	}
	return true
}

// sqlLayout is the layout of a SQL timestamp's text b: a date and a
// time separated by a space or a T, a fraction or none, a Z or none.
func sqlLayout(b []byte) string {
	const space, iso = "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999"
	t := len(b) > 10 && b[10] == 'T'
	z := len(b) > 0 && b[len(b)-1] == 'Z'
	switch {
	case t && z:
		return iso + "Z"
	case t:
		return iso
	case z:
		return space + "Z"
	}
	return space
}

// toMillis converts a JSON number in unit to milliseconds (floor),
// refusing what does not fit.
func toMillis(f *fastjson.Value, unit spec.TimeUnit) (etime.Time, bool) {
	if i, err := f.Int64(); err == nil {
		switch unit {
		case "ms":
			return etime.Time(i), true
		case "s":
			if i > math.MaxInt64/1000 || i < math.MinInt64/1000 {
				return 0, false
			}
			return etime.Time(i * 1000), true
		case "us":
			return etime.Time(floorDiv(i, 1000)), true
		case "ns":
			return etime.Time(floorDiv(i, 1_000_000)), true
		}
	}
	x := math.Floor(f.GetFloat64() * unitScale[unit])
	if math.IsNaN(x) || x >= math.MaxInt64 || x < math.MinInt64 {
		return 0, false
	}
	return etime.Time(x), true
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// unitGuess finds the unit in which a timestamp read as unit would fall
// between 2000 and 2100: tooSmall says the value read as unit was too early.
func unitGuess(ts etime.Time, unit spec.TimeUnit, tooSmall bool) (spec.TimeUnit, bool) {
	const lo, hi = float64(minValidTS), 4102444800000.0 // 2000 .. 2100
	raw := float64(ts) / unitScale[unit]
	for _, u := range []spec.TimeUnit{spec.UnitSeconds, spec.UnitMillis, spec.UnitMicros, spec.UnitNanos} {
		if u == unit {
			continue
		}
		if x := raw * unitScale[u]; x >= lo && x < hi && (x > float64(ts)) == tooSmall {
			return u, true
		}
	}
	return "", false
}
