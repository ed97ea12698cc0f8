// Package outfmt is the format of a job spec's durable outputs, which
// the runner (package job) writes and backfill and the complete answer
// read back: a result's JSON line and its key, the Kafka headers and
// client options of results topics, the Postgres columns of a results
// table and the text of their keys, and the spec hash that ledger entries
// carry.
package outfmt

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/jsonnum"
	"github.com/weirstream/weir/internal/record"
	"github.com/weirstream/weir/spec"
	"github.com/weirstream/weir/window"
)

// ResultColumns are the value columns of the job's results tables: one
// per aggregate, then the accumulators' (spec.AccColumn) when the job
// keeps them (record.KeepsAccs).
func ResultColumns(p *spec.Plan) []connector.ResultColumn {
	var cols []connector.ResultColumn
	for _, a := range p.Aggregates {
		cols = append(cols, connector.ResultColumn{Name: a.Name, Fn: a.Fn, Float: a.Type == "float", String: a.Type == "string"})
	}
	if record.KeepsAccs(p) {
		cols = append(cols, connector.ResultColumn{Name: spec.AccColumn})
	}
	return cols
}

// Casts are the DECIMAL casts (spec.Column.Decimal) that columns cols
// give plan p's aggregates, by index of p.Aggregates: nil where none
// casts, and nil when no column does.
func Casts(p *spec.Plan, cols []spec.Column) []*spec.ColumnDecimal {
	var casts []*spec.ColumnDecimal
	for i, a := range p.Aggregates {
		if c := ColumnOf(cols, a.Name); c != nil && c.Decimal != nil {
			if casts == nil {
				casts = make([]*spec.ColumnDecimal, len(p.Aggregates))
			}
			casts[i] = c.Decimal
		}
	}
	return casts
}

// AppendCast appends aggregate i's value v as casts (Casts) write it.
func AppendCast(b []byte, casts []*spec.ColumnDecimal, i int, v []byte) []byte {
	if i < len(casts) && casts[i] != nil {
		return record.AppendDecimalCast(b, v, casts[i].Precision, casts[i].Scale)
	}
	return append(b, v...)
}

// ResultHeaders are the headers of a result record in Kafka: its firing
// kind, run and pane, by which readers fold revisions: the highest (run,
// pane) of a window wins, so a new run's pane 0 replaces an earlier
// run's pane 5 (a topic cannot be started over as a file can).
func ResultHeaders(firing window.Firing, run, pane int64) []connector.Header {
	return []connector.Header{
		{Key: "weir-firing", Value: []byte(firing.String())},
		{Key: "weir-run", Value: strconv.AppendInt(nil, run, 10)},
		{Key: "weir-pane", Value: strconv.AppendInt(nil, pane, 10)},
	}
}

// AppendResult renders a result as a JSON object: key fields, window,
// firing, run, pane, watermark, then the aggregates; or, when cols are
// given (spec.Sink.Columns, as Compile completed them), those columns,
// counting the NULLs of their expressions into nulls (nil: uncounted).
func AppendResult(b []byte, plan *spec.Plan, cols []spec.Column, nulls *record.NullCount, run int64, r window.Result[string, []byte]) []byte {
	if len(cols) > 0 {
		return appendColumns(b, plan, cols, nulls, run, r)
	}
	start := len(b)
	b = AppendResultKey(b, plan, r)
	if len(b)-start == 2 { // {}: no key fields, the global window
		b = b[:len(b)-1]
	} else {
		b[len(b)-1] = ','
	}
	b = append(b, `"firing":"`...)
	b = append(b, r.Firing.String()...)
	b = append(b, `","run":`...)
	b = strconv.AppendInt(b, run, 10)
	b = append(b, `,"pane":`...)
	b = strconv.AppendInt(b, r.Pane, 10)
	b = append(b, `,"watermark":`...)
	b = strconv.AppendInt(b, int64(r.Watermark), 10)
	if r.Firing != window.Retract {
		b = appendAggregates(b, plan, r.Value)
	}
	return append(b, '}')
}

// appendAggregates renders a result's value, its aggregates' JSON texts
// separated by NUL bytes, as members of a JSON object, each after a
// comma.
func appendAggregates(b []byte, plan *spec.Plan, value []byte) []byte {
	for _, a := range plan.Aggregates {
		b = append(b, ',')
		b = weir.AppendJSONString(b, a.Name)
		b = append(b, ':')
		n := slices.Index(value, 0)
		b = append(b, value[:n]...)
		value = value[n+1:]
	}
	return b
}

// AppendRow renders a result of a window that feeds another as the
// record the other window reads (semantics W12): the key fields,
// window_start, window_end and window_time (window_end - 1, the record's
// event time), then the aggregates. r is no retraction and not of the
// global window (spec refuses both upstream of a window).
func AppendRow(b []byte, plan *spec.Plan, r window.Result[string, []byte]) []byte {
	// window_start and window_end as the rows of the job's time zone
	// show them, which the other window's expressions and columns read.
	wt := r.Window.MaxTimestamp() // the instant: the record's event time
	r.Window.Start, r.Window.End = plan.ShownBounds(r.Window)
	b = AppendResultKey(b, plan, r)
	b[len(b)-1] = ',' // for the key's closing brace, after window_end
	b = append(b, `"`+spec.ColWindowTime+`":`...)
	b = strconv.AppendInt(b, int64(wt), 10)
	b = appendAggregates(b, plan, r.Value)
	return append(b, '}')
}

// AppendResultKey renders what identifies a result's row, its key fields
// and window, as a JSON object (a Kafka record key).
func AppendResultKey(b []byte, plan *spec.Plan, r window.Result[string, []byte]) []byte {
	b = append(b, '{')
	keys := plan.Key
	vals := SplitKey(r.Key, len(keys))
	for i, k := range keys {
		b = weir.AppendJSONString(b, k)
		b = append(b, ':')
		b = append(b, vals[i]...)
		b = append(b, ',')
	}
	if r.Window != window.Global {
		b = append(b, `"window_start":`...)
		b = strconv.AppendInt(b, int64(r.Window.Start), 10)
		b = append(b, `,"window_end":`...)
		b = strconv.AppendInt(b, int64(r.Window.End), 10)
		b = append(b, ',')
	}
	if b[len(b)-1] == ',' {
		b[len(b)-1] = '}'
	} else {
		b = append(b, '}')
	}
	return b
}

// SplitKey splits a record key (record.KeySep between its n values) into
// the canonical JSON of each value.
func SplitKey(k string, n int) []string {
	if n == 0 {
		return nil
	}
	return strings.SplitN(k, record.KeySep, n)
}

// SpecHash identifies what a ledger entry means to a backfill: the key,
// the window, the aggregates, how timestamps are read, and what the
// aggregates read of a record (the computed fields, the where, the
// decimal fields). A backfill refuses entries written under another
// (their windows or accumulators would not match: a sum of a changed
// computed field would add the new formula's values to the old one's),
// unless told to accept that hash. The last four (and the time zone)
// count only when set, so that a job without them keeps the hash it had
// before they did.
func SpecHash(p *spec.Plan) string {
	m := specHashed(p)
	if len(p.Computed) > 0 {
		m["computed"] = p.Computed
	}
	if p.Where != "" {
		m["where"] = p.Where
	}
	if len(p.Decimals) > 0 {
		m["decimals"] = p.Decimals
	}
	if p.Zone != 0 {
		m["time_zone"] = p.Zone // the windows' alignment
	}
	return hashOf(m)
}

// LegacySpecHash is SpecHash as weir computed it before it counted the
// computed fields, the where and the decimal fields: what a group's
// record and ledger entries written then hold for p. A group whose
// record holds it runs p (a rolling upgrade of weir keeps the group),
// and a backfill accepts entries with it (written by p, or by a p whose
// computed fields differed, which that hash could not tell).
func LegacySpecHash(p *spec.Plan) string {
	if p.Zone != 0 {
		return SpecHash(p) // no weir before time zones wrote p's entries
	}
	return hashOf(specHashed(p))
}

// specHashed is what every SpecHash counts.
func specHashed(p *spec.Plan) map[string]any {
	return map[string]any{"time": p.Time, "ts_field": p.TSField, "ts_unit": p.TSUnit,
		"key": p.Key, "window": json.RawMessage(p.Definition.Window), "aggregate": p.Aggregates}
}

// hashOf is the first 4 bytes of the SHA-256 of m's JSON, in hex.
func hashOf(m map[string]any) string {
	b, _ := json.Marshal(m)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:4])
}

// exprs caches the compiled expressions of results columns
// (spec.Column.Expr), by the plan (as a branch's sink reads it: its key
// and aggregates), the expression and the count of its NULLs. A job's
// plans live as long as it, so the cache holds a few entries per job.
var exprs sync.Map // exprKey → *record.ResultExpr

type exprKey struct {
	plan  *spec.Plan
	src   string
	nulls *record.NullCount
}

// resultExpr is the compiled expression src over plan's results,
// counting its NULLs into nulls; the plan checked it, so it compiles
// (else it renders null).
func resultExpr(plan *spec.Plan, src string, nulls *record.NullCount) *record.ResultExpr {
	k := exprKey{plan, src, nulls}
	if e, ok := exprs.Load(k); ok {
		return e.(*record.ResultExpr)
	}
	e, err := record.NewResultExpr(src, plan.Key, plan.Aggregates, nulls)
	if err != nil {
		e, _ = record.NewResultExpr("NULL", nil, nil, nil)
	}
	v, _ := exprs.LoadOrStore(k, e)
	return v.(*record.ResultExpr)
}

// appendColumns renders a result as the JSON object of columns cols. A
// retraction's aggregates, and the global window's bounds, are null.
func appendColumns(b []byte, plan *spec.Plan, cols []spec.Column, nulls *record.NullCount, run int64, r window.Result[string, []byte]) []byte {
	b = append(b, '{')
	for i, c := range cols {
		if i > 0 {
			b = append(b, ',')
		}
		b = weir.AppendJSONString(b, c.Name)
		b = append(b, ':')
		start := len(b)
		b = appendColumn(b, plan, &c, nulls, run, r)
		if c.Float != "" {
			b = javaFloat(b, start, c.Float)
		}
	}
	return append(b, '}')
}

// appendColumn appends column c of result r, counting the NULLs of its
// expression into nulls.
func appendColumn(b []byte, plan *spec.Plan, c *spec.Column, nulls *record.NullCount, run int64, r window.Result[string, []byte]) []byte {
	global := r.Window == window.Global
	if c.Expr != "" {
		if r.Firing == window.Retract {
			return append(b, "null"...)
		}
		bounds := plan.BoundValues(r.Window) // the global window's: null
		if c.Time == "" || c.Time == "ms" {
			return resultExpr(plan, c.Expr, nulls).Append(b, r.Key, r.Value, bounds)
		}
		var buf [32]byte
		return appendFieldTime(b, c.Time, resultExpr(plan, c.Expr, nulls).Append(buf[:0], r.Key, r.Value, bounds))
	}
	switch c.From {
	case spec.ColWindowStart, spec.ColWindowEnd:
		// As text, a bound is the job's time zone's wall time (so is
		// window_time's, below); epoch milliseconds and a TIMESTAMP_LTZ
		// are the instant.
		w := r.Window
		if c.Time == "timestamp" || c.Time == "date" {
			w.Start, w.End = plan.ShownBounds(r.Window)
		}
		t := w.Start
		if c.From == spec.ColWindowEnd {
			t = w.End
		}
		return appendTime(b, c.Time, t, global)
	case spec.ColWindowTime:
		t := r.Window.MaxTimestamp()
		if (c.Time == "timestamp" || c.Time == "date") && !global {
			t = t.Add(plan.Zone) // an instant as a wall time in the zone
		}
		return appendTime(b, c.Time, t, global)
	case "watermark":
		return appendTime(b, c.Time, r.Watermark, r.Watermark == etime.MaxTime || r.Watermark == etime.MinTime)
	case "firing":
		return append(append(append(b, '"'), r.Firing.String()...), '"')
	case "run":
		return strconv.AppendInt(b, run, 10)
	case "pane":
		return strconv.AppendInt(b, r.Pane, 10)
	}
	if k := slices.Index(plan.Key, c.From); k >= 0 {
		return appendFieldTime(b, c.Time, nth(r.Key, k))
	}
	a := slices.IndexFunc(plan.Aggregates, func(a spec.Aggregate) bool { return a.Name == c.From })
	if a < 0 || r.Firing == window.Retract {
		return append(b, "null"...)
	}
	if d := c.Decimal; d != nil {
		return record.AppendDecimalCast(b, nth(r.Value, a), d.Precision, d.Scale)
	}
	return appendFieldTime(b, c.Time, nth(r.Value, a))
}

// javaFloat rewrites the number that b holds from start as Flink's JSON
// format writes a DOUBLE (kind "double") or a FLOAT ("float"):
// jsonnum.AppendJava. Anything else (null, a string) stays as it is.
func javaFloat(b []byte, start int, kind string) []byte {
	bits := 64
	if kind == "float" {
		bits = 32
	}
	f, err := strconv.ParseFloat(string(b[start:]), bits)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return b
	}
	return jsonnum.AppendJava(b[:start], f, bits)
}

// nth is the i-th of s's parts separated by NUL bytes (record.KeySep
// between a key's values, and between a result value's aggregates).
func nth[S ~string | ~[]byte](s S, i int) S {
	start := 0
	for j := 0; j < len(s); j++ {
		if s[j] != 0 {
			continue
		}
		if i == 0 {
			return s[start:j]
		}
		i, start = i-1, j+1
	}
	if i > 0 {
		return s[:0]
	}
	return s[start:]
}

// TimeLayout is how Flink's JSON format writes a TIMESTAMP(3) (its SQL
// timestamp format); a TIMESTAMP_LTZ(3) adds a Z.
const TimeLayout = "2006-01-02 15:04:05.000"

// appendTime renders t in format (spec.Column.Time); null when inf.
func appendTime(b []byte, format string, t etime.Time, inf bool) []byte {
	switch {
	case inf:
		return append(b, "null"...)
	case format == "timestamp" || format == "timestamp_ltz":
		b = append(b, '"')
		b = time.UnixMilli(int64(t)).UTC().AppendFormat(b, TimeLayout)
		if format == "timestamp_ltz" {
			b = append(b, 'Z')
		}
		return append(b, '"')
	case format == "date":
		b = append(b, '"')
		b = time.UnixMilli(int64(t)).UTC().AppendFormat(b, DateLayout)
		return append(b, '"')
	}
	return strconv.AppendInt(b, int64(t), 10)
}

// DateLayout is how a row writes a DATE (format "date"), as Flink's JSON
// format does.
const DateLayout = "2006-01-02"

// appendFieldTime appends a key field's or an aggregate's JSON value v,
// as a time in format (spec.Column.Time) when it is an integer (epoch
// milliseconds), else as it is.
func appendFieldTime[S ~string | ~[]byte](b []byte, format string, v S) []byte {
	if format == "timestamp" || format == "timestamp_ltz" || format == "date" {
		if ms, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return appendTime(b, format, etime.Time(ms), false)
		}
	}
	return append(b, v...)
}

// ParseColumnTime reads column c's time, raw as a row of plan wrote it,
// back as the epoch milliseconds it was written from: a window bound
// written as text in the job's time zone less the zone's offset. ok
// false when raw is no time.
func ParseColumnTime(plan *spec.Plan, c *spec.Column, raw []byte) (ms int64, ok bool) {
	ms, ok = ParseTime(raw, c.Time)
	if ok && c.Expr == "" && (c.From == spec.ColWindowStart || c.From == spec.ColWindowEnd) && (c.Time == "timestamp" || c.Time == "date") {
		ms -= int64(plan.Zone)
	}
	return ms, ok
}

// ParseTime reads a time written by appendTime in format as epoch
// milliseconds; ok false when it is not one.
func ParseTime(raw []byte, format string) (ms int64, ok bool) {
	switch format {
	case "timestamp", "timestamp_ltz", "date":
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0, false
		}
		layout := TimeLayout
		if format == "date" {
			layout = DateLayout
		}
		t, err := time.Parse(layout, strings.TrimSuffix(s, "Z"))
		return t.UnixMilli(), err == nil
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return n, err == nil
}

// ColumnOf is the column of cols holding from (spec.Column.From), or
// nil; with no cols, weir's own row, where each field is its own column.
func ColumnOf(cols []spec.Column, from string) *spec.Column {
	if len(cols) == 0 {
		return &spec.Column{Name: from, From: from}
	}
	for i := range cols {
		if cols[i].From == from {
			return &cols[i]
		}
	}
	return nil
}

// Columns are the columns of the plan's primary results sink (the one
// weir backfill revises and the complete answer is compared with).
func Columns(p *spec.Plan) []spec.Column {
	if k := p.Sinks.Primary(); k != nil {
		return k.Columns
	}
	return nil
}

// KeyColumns are the columns, of cols, that primary key pk names: the
// columns of a Kafka results message's key (Sink.PrimaryKey); nil
// without pk.
func KeyColumns(cols []spec.Column, pk []string) []spec.Column {
	var out []spec.Column
	for _, name := range pk {
		if i := slices.IndexFunc(cols, func(c spec.Column) bool { return c.Name == name }); i >= 0 {
			out = append(out, cols[i])
		}
	}
	return out
}

// AppendMessageKey appends the key of result r's message: the JSON
// object of key columns keyCols (KeyColumns, as Flink's upsert-kafka
// keys a message by its table's primary key), or weir's own
// (AppendResultKey) without them.
func AppendMessageKey(b []byte, plan *spec.Plan, keyCols []spec.Column, run int64, r window.Result[string, []byte]) []byte {
	if len(keyCols) > 0 {
		return appendColumns(b, plan, keyCols, nil, run, r)
	}
	return AppendResultKey(b, plan, r)
}

// Bytes formats n bytes with an SI unit: 812 B, 3.4 kB, 1.2 MB.
func Bytes(n int64) string {
	const units = "kMGT"
	if n < 1000 {
		return fmt.Sprintf("%d B", n)
	}
	f, i := float64(n)/1000, 0
	for f >= 1000 && i < len(units)-1 {
		f /= 1000
		i++
	}
	return fmt.Sprintf("%.1f %cB", f, units[i])
}
