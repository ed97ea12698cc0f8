package spec

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/expr"
	"github.com/weirstream/weir/internal/sqlparse"
	"github.com/weirstream/weir/internal/suggest"
	"github.com/weirstream/weir/trigger"
	"github.com/weirstream/weir/window"
)

// Plan is a validated spec with every default filled in and the window
// assigner and trigger built.
type Plan struct {
	// SQL: the job is a SQL job's (internal/sqljob), whose messages name
	// SQL's spelling of a fix rather than a YAML field.
	SQL bool
	// Definition is the job's definition as its front end wrote it (a
	// YAML spec's fields, with Compile's defaults), classified for the
	// checkpoint meta: what records the definition reads it (the meta,
	// the ledger's spec hash); everything else reads the typed fields
	// below.
	Definition Definition
	// Graph is the job as typed operators and sinks. The runner takes
	// its shape from it (Graph.Path: it refuses any other), builds the
	// watermarks and the window from its operators and opens the sinks
	// its SinkOps name. The fields below hold the same values by name:
	// decoding, the aggregates and backfill still read them.
	Graph Graph
	// Registry holds the connector kinds the plan was compiled with: a
	// runner opens the sinks of kinds that have an open function through
	// it (connector.SinkKind.OpenResults).
	Registry *connector.Registry
	// Warnings are the spec's (Spec.Warnings) and what compiling found
	// questionable but not wrong: a ledger without the archive that
	// weir backfill needs, say. A job with warnings runs.
	Warnings Errors

	// Name is the job's name (in logs, summaries, table rows and ledger
	// entries); Key the fields that key the windows (none: one key);
	// Aggregates the per-window aggregates, in output order.
	Name       string
	Key        []string
	Aggregates []Aggregate
	// NullKeys: a missing or null key field keys by null (Spec.NullKeys).
	NullKeys bool
	// Source and Sinks are the connectors' settings, with Compile's
	// defaults (the graph's SourceOp and SinkOps point into them);
	// Checkpoint, State, Archive and Doctor the spec's blocks of those
	// names (nil when absent).
	Source     Source
	Sinks      Sinks
	Checkpoint *CheckpointSpec
	Group      *GroupSpec
	State      *StateSpec
	Archive    *ArchiveSpec
	Doctor     *DoctorSpec

	Time      TimeMode
	Format    Format
	Channels  int
	TSField   string
	TSUnit    TimeUnit
	Checks    bool
	MaxFuture etime.Duration
	// WarnAhead (0: never) is how far ahead of processing time a
	// timestamp that max_future accepts is counted as future-dated and
	// warned of (the doctor's rule D8): WarnAhead, or a front end's
	// (Timestamp.WarnAhead); nothing to warn of when max_future is not
	// beyond it.
	WarnAhead etime.Duration
	Final     bool
	// NumbersInStrings: source.numbers_in_strings.
	NumbersInStrings bool
	// Decimals: source.decimals (checked).
	Decimals []DecimalField
	// Types: source.types (checked).
	Types []TypedField
	// Where is the spec's where (checked: it compiles), "" for none;
	// Computed its computed fields (checked).
	Where    string
	Computed []ComputedField
	// Having is the spec's having (checked), "" for none.
	Having string

	WMType      WatermarkType
	Bound       etime.Duration
	IdleTimeout etime.Duration
	EveryRecord bool
	Interval    etime.Duration
	Heartbeat   etime.Duration
	// BacklogEvery: records between watermarks while a channel or
	// partition reads a backlog (W10); 0: periodic emission only.
	BacklogEvery int

	// WindowKind is the assigner's kind, WindowSpan its size (a
	// session's gap; 0 for the global window).
	WindowKind WindowKind
	WindowSpan etime.Duration
	Assigner   window.Assigner
	// Zone is the offset of the spec's time_zone from UTC (0: none):
	// windows are cut by its wall clock, and ShownBounds shows their
	// bounds in it.
	Zone     etime.Duration
	Trigger  trigger.Trigger // nil: the assigner's default
	Lateness etime.Duration
	// LateFiringInterval throttles late firings (W11); 0: none.
	LateFiringInterval etime.Duration
	// TwoPhase pre-aggregates before the keyed exchange (Spec.TwoPhase).
	TwoPhase bool
	// SkipUnchanged skips unchanged early and late results
	// (Spec.SkipUnchanged).
	SkipUnchanged bool
	// LateRatioWarn and LateRatioCrit are the alert levels of the share
	// of too-late records (alerts).
	LateRatioWarn, LateRatioCrit float64
	// ArchiveHorizon is archive.horizon (with an archive).
	ArchiveHorizon etime.Duration

	Generator Generator
	GenStart  etime.Time
	// GenStartNow: the generator's start is now (GenStart is unset).
	GenStartNow bool

	// Start is where a kafka or nats source starts without a checkpoint.
	Start Start
	// Kafka sources: the Kafka timestamp as event time, and watermark
	// alignment.
	TSFromKafka bool
	MaxDrift    etime.Duration
	// NATS sources: the publish time as event time.
	TSFromNATS bool

	Backend Backend
	// StateBudget is state.budget in bytes (0: none).
	StateBudget int64
}

// ResultColumns are the fixed fields of a result line.
var ResultColumns = []string{"window_start", "window_end", "firing", "run", "pane", "watermark"}

// AccColumn is the results column of SQL sinks that keeps the
// accumulators of the aggregates whose value is not their own
// accumulator (avg, first, last, collect, count_distinct), so that a
// backfill can fold late records into a published window. Jobs whose
// aggregates are all count, sum, min and max have no such column.
const AccColumn = "weir_acc"

var aggFns = []string{"count", "sum", "min", "max", "avg", "first", "last", "first_value", "last_value", "collect", "count_distinct", "sum_distinct", "avg_distinct"}

// BaseFn is the aggregate fn computes over its distinct values
// (sum_distinct is sum's, avg_distinct avg's); another fn itself.
func BaseFn(fn string) string {
	switch fn {
	case "sum_distinct", "avg_distinct":
		return strings.TrimSuffix(fn, "_distinct")
	}
	return fn
}

// Parse loads and compiles a spec. When the document has structural
// errors it still compiles what could be read, so that every problem is
// reported at once; a semantic error on a field that already has a
// structural one is left out.
func Parse(data []byte) (*Plan, error) { return parse(data, "", connector.Default) }

// ParseWith is Parse with the connector kinds of reg (CompileWith).
func ParseWith(data []byte, reg *connector.Registry) (*Plan, error) { return parse(data, "", reg) }

// ParseFile is Parse for the spec in file path: a spec without a name is
// named after the file (jobs/orders.yaml: orders), as the weir command
// names it.
func ParseFile(path string, data []byte) (*Plan, error) {
	return parse(data, strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), connector.Default)
}

// unexpanded warns of the first ${NAME} in a spec's text: weir expands
// no variables, so it is taken as it is written (a path named ${IN}).
func unexpanded(data []byte) []FieldError {
	i := bytes.Index(data, []byte("${"))
	if i < 0 {
		return nil
	}
	line := 1 + bytes.Count(data[:i], []byte("\n"))
	end := bytes.IndexByte(data[i:], '}')
	if end < 0 {
		end = min(len(data)-i, 20)
	} else {
		end++
	}
	return []FieldError{{Path: fmt.Sprintf("line %d", line), Msg: fmt.Sprintf("%s is taken as it is written: weir expands no variables in a spec", data[i:i+end]),
		Fix: "write the value itself, or expand the variables before weir reads the spec (envsubst < job.tmpl.yaml > job.yaml)"}}
}

func parse(data []byte, name string, reg *connector.Registry) (*Plan, error) {
	s, err := Load(data)
	if s != nil && s.Name == "" {
		s.Name = name
	}
	if err == nil {
		p, err := CompileWith(s, reg)
		if p != nil {
			p.Warnings = append(p.Warnings, unexpanded(data)...)
		}
		return p, err
	}
	var les Errors
	if s == nil || !errors.As(err, &les) {
		return nil, err
	}
	_, cerr := CompileWith(s, reg)
	var ces Errors
	if errors.As(cerr, &ces) {
		loaded := len(les)
	next:
		for _, c := range ces {
			if c.Line > 0 {
				// A sink's unknown field (compiler.extra), which Load
				// leaves to Compile: among Load's errors, in document
				// order, as Load would have reported it.
				i := slices.IndexFunc(les[:loaded], func(l FieldError) bool { return byPlace(l, c) > 0 })
				if i < 0 {
					i = loaded
				}
				les = slices.Insert(les, i, c)
				loaded++
				continue
			}
			for _, l := range les[:loaded] {
				if c.Path == l.Path || strings.HasPrefix(c.Path, l.Path+".") || strings.HasPrefix(l.Path, c.Path+".") {
					continue next
				}
			}
			les = append(les, c)
		}
	}
	return nil, les
}

// byPlace orders errors by where in the document they are.
func byPlace(a, b FieldError) int {
	return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
}

// Compile validates s and returns its plan, or every problem as Errors. It
// resolves the source's and the sinks' type: through connector.Default,
// which importing github.com/weirstream/weir/connector/all fills.
func Compile(s *Spec) (*Plan, error) { return CompileWith(s, connector.Default) }

// CompileWith is Compile with the connector kinds of reg. It leaves s as
// it was: the plan holds a copy, with the defaults filled in.
func CompileWith(s *Spec, reg *connector.Registry) (*Plan, error) {
	c := &compiler{s: clone(s), p: &Plan{Warnings: slices.Clone(s.Warnings), Registry: reg}, reg: reg}
	c.compile()
	if len(c.unknown) > 0 {
		slices.SortFunc(c.unknown, byPlace)
		c.errs = append(c.unknown, c.errs...)
	}
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	c.graph()
	c.p.Definition = c.definition()
	if err := c.p.Graph.Validate(); err != nil {
		return nil, err // not reached: graph builds a well-formed path
	}
	return c.p, nil
}

type compiler struct {
	// s is the spec being compiled: a copy, which compiling fills with
	// its defaults; the plan keeps none of it but typed values and its
	// Definition.
	s    *Spec
	p    *Plan
	errs Errors
	// unknown are the unknown fields of sinks (extra): reported before
	// errs, in document order.
	unknown Errors
	reg     *connector.Registry
}

// kind checks a type: field against the registry's kinds for its place
// (allowed, in registration order).
// revision is how weir backfill revises the results of sink kind typ
// (connector.SinkKind.Revise; NoRevision for an unknown kind).
func (c *compiler) kind(path, typ string, allowed []string) {
	switch {
	case len(allowed) == 0:
		c.add(path, fmt.Sprintf("no connector kind is registered, so %q is unknown", typ), "import github.com/weirstream/weir/connector/all in the program that compiles the spec (the weir command does)")
	case typ != "" && !slices.Contains(allowed, typ):
		c.add(path, fmt.Sprintf("unknown value %q", typ), hint(typ, allowed, "use one of "+strings.Join(allowed, ", ")))
	default:
		c.oneOf(path, typ, "", allowed...)
	}
}

// settings reports each field set in sink k (by its yaml names, type
// aside) that its kind does not take, naming the kinds that do. The
// source's settings are checked by the rules of source().
func (c *compiler) settings(path string, k *Sink, kind connector.Kind) {
	v := reflect.ValueOf(k).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		name := yamlName(f)
		if name == "" || name == "-" || name == "type" || v.Field(i).IsZero() || kind.Takes(false, name) {
			continue
		}
		var takes, others []string
		for _, f := range kind.Fields(false) {
			takes = append(takes, f.Name)
		}
		for _, o := range c.reg.Kinds() {
			if o.Takes(false, name) {
				others = append(others, o.Name)
			}
		}
		fix := "remove it; a " + kind.Name + " sink takes no settings"
		if len(takes) > 0 {
			fix = "remove it; a " + kind.Name + " sink takes " + strings.Join(takes, ", ")
		}
		if len(others) > 0 {
			fix += " (" + name + " is a setting of " + strings.Join(others, ", ") + " sinks)"
		}
		c.add(path+"."+name, name+" is not a setting of a "+kind.Name+" sink", fix)
	}
}

// extra refuses the settings of the source or a sink (source) at path
// that no spec field holds (x) and its kind (known: a kind of the role
// was found) does not take, as Load refuses other unknown fields: at
// their line, with a did-you-mean among the settings the block may have.
// A kind takes a block of its own settings (mykind.url) when it takes
// a setting in it. They go to c.unknown, which Compile reports first, in
// document order, where Load would have.
func (c *compiler) extra(path string, x extras, source bool, kind connector.Kind, known bool) {
	if len(*x.m) == 0 {
		return
	}
	// The suggestions: the kind's settings when it is known (a setting of
	// another kind would be refused next), else every block's; a source
	// has the fields of every source beside its kind's (timestamp).
	names := slices.Clone(x.fields)
	if known {
		if !source {
			names = []string{"type"}
		}
		for _, f := range kind.Fields(source) {
			name := f.Name
			if source {
				name, _, _ = strings.Cut(name, ".") // a block is a field of the source
			}
			names = append(names, name)
		}
		slices.Sort(names)
		names = slices.Compact(names)
	}
	takes := func(name string) bool {
		return known && slices.ContainsFunc(kind.Fields(source), func(f connector.Field) bool {
			return f.Name == name || strings.HasPrefix(f.Name, name+".")
		})
	}
	for name := range *x.m {
		if takes(name) {
			continue
		}
		at := (*x.at)[name]
		c.unknown = append(c.unknown, FieldError{Path: path + "." + name, Line: at[0], Column: at[1], Msg: fmt.Sprintf("unknown field %q", name), Fix: fieldFix(name, names)})
	}
}

func (c *compiler) add(path, msg, fix string) {
	c.errs = append(c.errs, FieldError{Path: path, Msg: msg, Fix: fix})
}

// required reports each required field of a kind (connector.Field) that
// the settings at ck (of a source, or a sink) lack, unless the kind's
// Check reported it already.
func (c *compiler) required(ck checker, typ string, source bool, fields []connector.Field) {
	role := "sink"
	if source {
		role = "source"
	}
	for _, f := range fields {
		at := ck.at(f.Name)
		if !f.Required || ck.Set(f.Name) || slices.ContainsFunc(c.errs, func(e FieldError) bool { return e.Path == at }) {
			continue
		}
		c.add(at, "missing", fmt.Sprintf("a %s %s needs %s: %s", typ, role, f.Name, f.Doc))
	}
}

// warn adds a warning to the plan.
func (c *compiler) warn(path, msg, fix string) {
	c.p.Warnings = append(c.p.Warnings, FieldError{Path: path, Msg: msg, Fix: fix})
}

// oneOf checks an enum field, defaulting an empty value to def (when def
// is not empty).
func (c *compiler) oneOf(path, v, def string, allowed ...string) string {
	if v == "" && def != "" {
		return def
	}
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	if v == "" {
		c.add(path, "missing", "use one of "+strings.Join(allowed, ", "))
	} else {
		c.add(path, fmt.Sprintf("unknown value %q", v), hint(v, allowed, "use one of "+strings.Join(allowed, ", ")))
	}
	return v
}

// WarnAhead is Plan.WarnAhead's default: 5 minutes, the doctor's D8.
const WarnAhead etime.Duration = 5 * 60 * 1000

// DurOr is d in event-time milliseconds, or def when d is unset.
func DurOr(d *Duration, def etime.Duration) etime.Duration {
	if d == nil {
		return def
	}
	return etime.Duration(*d)
}

func (c *compiler) nonNegative(path string, d *Duration) {
	if d != nil && *d < 0 {
		c.add(path, fmt.Sprintf("%v is negative", *d), "use 0 or a positive duration")
	}
}

func (c *compiler) positive(path string, d *Duration, what string) {
	if d != nil && *d <= 0 {
		c.add(path, fmt.Sprintf("%v is not positive", *d), what+" must be positive, such as 1m")
	}
}

func (c *compiler) compile() {
	s, p := c.s, c.p
	p.Time = enum(c, "time", s.Time, EventTime, EventTime, ProcessingTime, IngestionTime)
	c.source()
	c.watermark()
	c.window()
	c.trigger()
	c.aggregates()
	c.twoPhase()
	c.skipUnchanged()
	c.where()
	c.having()
	c.sinks()
	p.LateRatioWarn, p.LateRatioCrit = 0.001, 0.01
	if a := s.Alerts; a != nil {
		for _, f := range []struct {
			path string
			v    float64
			dst  *float64
		}{{"alerts.late_ratio", a.LateRatio, &p.LateRatioWarn}, {"alerts.late_ratio_critical", a.LateRatioCritical, &p.LateRatioCrit}} {
			switch {
			case f.v < 0 || f.v > 1:
				c.add(f.path, fmt.Sprintf("%v is not a share of the input", f.v), "use a share between 0 and 1, such as 0.001 for 0.1%")
			case f.v > 0:
				*f.dst = f.v
			}
		}
		if p.LateRatioWarn > p.LateRatioCrit {
			c.add("alerts.late_ratio", fmt.Sprintf("%v is above late_ratio_critical %v", p.LateRatioWarn, p.LateRatioCrit), "make the warning level the lower one")
		}
	}
	if lp := s.Sinks.LatePartial; lp != nil && keepsForBackfill(s.Sinks.Late) && !keepsForBackfill(lp) && s.Window.Type != "session" {
		c.warn("sinks.late_partial", fmt.Sprintf("sinks.late (%s) keeps the too-late records for weir backfill, which will refuse while sinks.late_partial is %s: it cannot read those records back, and the windows they missed would stay short", s.Sinks.Late.Type, lp.Type),
			"leave late_partial out (the ledger then holds those records too), or make it a "+s.Sinks.Late.Type+" sink")
	}
	if s.Window.Type == "session" && keepsForBackfill(s.Sinks.Late) {
		c.warn("window", fmt.Sprintf("sinks.late (%s) keeps the too-late records, which weir backfill will not merge: a late record can merge sessions, whose published rows would have to be retracted, so weir does not revise session windows; the records stay counted in the ledger", s.Sinks.Late.Type),
			"keep the ledger for the record of what was too late, and raise allowed_lateness if sessions must take such records in")
	} else if t := c.p.Trigger; !c.p.CompleteRows() && keepsForBackfill(s.Sinks.Late) {
		c.warn("trigger", fmt.Sprintf("sinks.late (%s) keeps the too-late records, which weir backfill will not merge: trigger %v publishes rows that are not the windows' whole state", s.Sinks.Late.Type, t),
			"use the default trigger, continuous or final, if the too-late records are to be merged back")
	} else if s.Having != "" && !BoundsOnly(s.Having) && keepsForBackfill(s.Sinks.Late) {
		c.warn("having", fmt.Sprintf("sinks.late (%s) keeps the too-late records, which weir backfill will not merge: a window the having dropped was never written, so its revision would be its late records alone, and a revision could pass the having its window failed", s.Sinks.Late.Type),
			"keep the having out of the job and filter where the results are read, if the too-late records are to be merged back")
	} else if r := s.Sinks.Primary(); r != nil && r.Layout == LayoutDeclared && keepsForBackfill(s.Sinks.Late) {
		c.warn("sinks.results.layout", fmt.Sprintf("sinks.late (%s) keeps the too-late records for weir backfill, which does not revise a declared table (it keeps no run and pane to revise by)", s.Sinks.Late.Type),
			"write the results in weir's layout (remove layout) if the too-late records are to be merged back; the ledger keeps them counted either way")
	} else if r, l := s.Sinks.Primary(), s.Sinks.Late; s.Archive == nil && r != nil && c.reg.Revise(r.Type) == connector.ReviseLog && keepsForBackfill(l) && s.Window.Type != "session" {
		c.warn("archive", fmt.Sprintf("sinks.late (%s) keeps the too-late records for weir backfill, which cannot merge them into %s results without an archive of the closed windows", l.Type, r.Type),
			"add archive: {dir: archive} (or a sqlite or postgres results table, which keeps the windows in its rows)")
	}
	if l := s.Sinks.Late; keepsForBackfill(l) && s.Sinks.LatePartial == nil && s.Window.Type == "sliding" {
		if k, ok := c.reg.Lookup(l.Type); ok && k.Sink != nil && !k.Sink.Reasons {
			c.warn("sinks.late_partial", fmt.Sprintf("a record late for only some of its sliding windows (a partial miss) is counted, not kept: sinks.late (%s) keeps records too late for all of them, so weir backfill cannot complete the windows partial misses left out", l.Type),
				"add sinks.late_partial (such as a second topic or table of the same kind) to keep them for backfill")
		}
	}
	if a := s.Archive; a != nil {
		c.positive("archive.horizon", a.Horizon, "the horizon")
		p.ArchiveHorizon = etime.FromDuration(7 * 24 * time.Hour)
		if a.Horizon != nil && *a.Horizon > 0 {
			p.ArchiveHorizon = etime.Duration(*a.Horizon)
		}
		switch r := s.Sinks.Primary(); {
		case p.ArchiveHorizon < p.Lateness:
			c.add("archive.horizon", fmt.Sprintf("%v is shorter than allowed_lateness %v: late firings would be removed as they are archived", time.Duration(p.ArchiveHorizon)*time.Millisecond, time.Duration(p.Lateness)*time.Millisecond), "keep windows at least as long as the allowed lateness (and as long as backfills may come, such as 7d)")
		case a.Dir == "":
			c.add("archive.dir", "missing", "name the archive's directory, such as archive")
		case r != nil && c.reg.Revise(r.Type) == connector.ReviseTable:
			c.add("archive", fmt.Sprintf("a %s results table keeps each window's accumulators in its rows", r.Type), "remove the archive block (it serves jsonl and kafka results)")
		case r != nil && c.reg.Revise(r.Type) != connector.ReviseLog:
			c.add("archive", fmt.Sprintf("weir backfill cannot revise %s results", r.Type), "remove the archive block (it serves results that backfill appends revisions to, such as jsonl and kafka)")
		case s.Window.Type != "tumbling" && s.Window.Type != "sliding":
			c.add("archive", fmt.Sprintf("backfill revises tumbling and sliding windows, not %s windows", s.Window.Type), "remove the archive block")
		}
	}
	if d := s.Doctor; d != nil {
		c.positive("doctor.lag_high", d.LagHigh, "the threshold")
		c.positive("doctor.future", d.Future, "the threshold")
		c.positive("doctor.hold", d.Hold, "the threshold")
		c.positive("doctor.checkpoint_delay", d.CheckpointDelay, "the threshold")
		c.positive("doctor.no_watermark", d.NoWatermark, "the threshold")
		for _, f := range []struct {
			path   string
			v, max float64
			fix    string
		}{{"doctor.late_rise", d.LateRise, math.Inf(1), "a factor above 1, such as 3"}, {"doctor.late_min_share", d.LateMinShare, 1, "a share of the input, such as 0.001"},
			{"doctor.busy_high", d.BusyHigh, 1, "a fraction of time, such as 0.9"}, {"doctor.skew_high", d.SkewHigh, 1, "a ratio up to 1, such as 0.5"}} {
			if f.v < 0 || f.v > f.max {
				c.add(f.path, fmt.Sprintf("%v is out of range", f.v), f.fix)
			}
		}
		if d.IdleFlips < 0 {
			c.add("doctor.idle_flips", fmt.Sprintf("%d is negative", d.IdleFlips), "a count of changes in 10 minutes, such as 3")
		}
	}
	if st := s.State; st != nil {
		p.Backend = enum(c, "state.backend", st.Backend, MemoryBackend, MemoryBackend, PebbleBackend)
		if st.Cache < 0 {
			c.add("state.cache", fmt.Sprint(st.Cache, " is negative"), "use the number of live windows to keep in memory, such as 100000")
		}
		if p.Backend == MemoryBackend && (st.Dir != "" || st.Cache != 0) {
			c.add("state", "dir and cache are settings of the pebble backend", "remove them, or use backend: pebble")
		}
		if st.Budget != nil {
			if *st.Budget <= 0 {
				c.add("state.budget", "must be positive", byteSizeFix)
			}
			p.StateBudget = int64(*st.Budget)
		}
	}
	if g := s.Group; g != nil {
		c.positive("group.commit_interval", g.CommitInterval, "the interval")
		c.positive("group.session_timeout", g.SessionTimeout, "the timeout")
		c.positive("group.transaction_timeout", g.TransactionTimeout, "the timeout")
		if s.Source.Type != "kafka" {
			c.add("group", "group mode shares a Kafka source's partitions among processes", "remove it, or read from Kafka")
		}
	}
	if k := s.Checkpoint; k != nil {
		if k.Dir == "" {
			c.add("checkpoint.dir", "missing", "name the directory for checkpoints, such as checkpoints")
		}
		c.positive("checkpoint.interval", k.Interval, "the interval")
		c.nonNegative("checkpoint.min_pause", k.MinPause)
		if k.Retain != nil && *k.Retain < 1 {
			c.add("checkpoint.retain", fmt.Sprint(*k.Retain, " keeps no checkpoint"), "keep 1 or more checkpoints (default 3)")
		}
		if k.MaxBuffered < 0 {
			c.add("checkpoint.max_buffered", fmt.Sprint(k.MaxBuffered, " is negative"), fmt.Sprintf("give the most output items held for a checkpoint, such as %d (the default)", DefaultMaxBuffered))
		}
		if s.Source.Type == "stdin" {
			c.add("checkpoint", "a stdin source cannot be checkpointed: a restore could not read it again", "read from a file, or remove checkpoint")
		}
	}
}

// blockKinds are the source kinds whose settings the spec holds in a
// block of its fields (source.kafka, source.nats).
var blockKinds = []string{"kafka", "nats"}

func (c *compiler) source() {
	s, p := &c.s.Source, c.p
	typ := s.Type
	c.kind("source.type", typ, c.reg.Sources())
	kind, known := c.reg.Lookup(typ)
	known = known && kind.Source != nil
	c.extra("source", extras{&s.Extra, &s.ExtraAt, sourceFields}, true, kind, known)
	c.kafkaSource(typ)
	c.natsSource(typ)
	switch typ {
	case "file":
		if s.Path == "" {
			c.add("source.path", "missing", "a file source needs the path of its input, such as orders.jsonl")
		}
	case "stdin", "generator", "kafka", "nats", "nexmark":
		if s.Path != "" {
			c.add("source.path", "a "+typ+" source reads no file", "remove path, or use type: file")
		}
	}
	if typ != "generator" && s.Generator != nil {
		c.add("source.generator", "only a generator source takes generator settings", "use type: generator, or remove generator")
	}
	switch n := s.Nexmark; {
	case typ != "nexmark" && n != nil:
		c.add("source.nexmark", "only a nexmark source takes nexmark settings", "use type: nexmark, or remove nexmark")
	case typ == "nexmark" && (n == nil || n.Events <= 0):
		c.add("source.nexmark.events", "missing", "give the number of events to generate, such as events: 1000000")
	case typ == "nexmark" && (n.Rate < 0 || n.Rate > 1_000_000):
		c.add("source.nexmark.rate", fmt.Sprintf("%d is out of range", n.Rate), "use 1..1000000 events per second of event time, or leave it out for 10000")
	case typ == "nexmark" && n.Linger != nil && (*n.Linger < 0 || *n.Linger > Duration(time.Hour/time.Millisecond)):
		c.add("source.nexmark.linger", fmt.Sprintf("%v is out of range", n.Linger), "use 0 to 1h of processing time after the last event, such as 11s")
	}
	if typ == "nexmark" && s.Format != "" {
		c.add("source.format", "the nexmark source makes its own rows", "remove format")
	}
	p.Format = enum(c, "source.format", s.Format, FormatJSONL, FormatJSONL, FormatCSV)
	if len(s.CSVColumns) > 0 {
		seen := map[string]int{}
		switch {
		case p.Format != FormatCSV:
			c.add("source.csv_columns", "names CSV columns, and the source is not CSV", "set format: csv, or remove csv_columns")
		default:
			for i, name := range s.CSVColumns {
				if name == "" {
					c.add(fmt.Sprintf("source.csv_columns[%d]", i), "is empty", "name each column of the file, in order")
				} else if j, dup := seen[strings.ToLower(name)]; dup {
					c.add(fmt.Sprintf("source.csv_columns[%d]", i), fmt.Sprintf("%q is also column %d", name, j+1), "name each column once")
				}
				seen[strings.ToLower(name)] = i
			}
		}
	}
	if typ == "generator" && s.Format != "" {
		c.add("source.format", "a generator makes its own records", "remove format")
	}
	p.Channels = s.Channels
	switch {
	case s.Channels == 0:
		p.Channels = 1
	case s.Channels < 0 || s.Channels > 1024:
		c.add("source.channels", fmt.Sprintf("%d is out of range", s.Channels), "use 1..1024 (0 or none: 1)")
	}
	p.Final = s.FinalWatermark == nil || *s.FinalWatermark
	p.NumbersInStrings = s.NumbersInStrings
	seen := map[string]bool{}
	for i, d := range s.Decimals {
		path := fmt.Sprintf("source.decimals[%d]", i)
		switch {
		case d.Field == "":
			c.add(path+".field", "missing", "name the field that holds the decimals")
		case seen[d.Field]:
			c.add(path+".field", fmt.Sprintf("%q is declared twice", d.Field), "declare each field once")
		case d.Precision < 1 || d.Precision > 38:
			c.add(path+".precision", fmt.Sprintf("%d is out of range", d.Precision), "use 1..38 digits, as SQL's DECIMAL(p, s)")
		case d.Scale < 0 || d.Scale > d.Precision:
			c.add(path+".scale", fmt.Sprintf("%d is out of range", d.Scale), fmt.Sprintf("use 0..%d (at most the precision)", d.Precision))
		}
		seen[d.Field] = true
	}
	p.Decimals = s.Decimals
	for i, f := range s.Types {
		path := fmt.Sprintf("source.types[%d]", i)
		switch {
		case f.Field == "":
			c.add(path+".field", "missing", "name the field whose type this is")
		case seen[f.Field]:
			c.add(path+".field", fmt.Sprintf("%q is declared twice (in decimals or types)", f.Field), "declare each field once")
		}
		seen[f.Field] = true
		c.oneOf(path+".type", f.Type, "", FieldTypes...)
	}
	p.Types = s.Types

	t := &s.Timestamp
	switch c.oneOf("source.timestamp.source", t.Source, "record", "record", "kafka", "nats") {
	case "nats":
		p.TSFromNATS = true
		if typ != "nats" {
			c.add("source.timestamp.source", "only a nats source has publish times", "remove source, or use source: record")
		}
		if t.Field != "" || t.Unit != "" {
			c.add("source.timestamp", "the publish time is in no field", "remove field and unit, or use source: record")
		}
	case "kafka":
		p.TSFromKafka = true
		if typ != "kafka" {
			c.add("source.timestamp.source", "only a kafka source has Kafka timestamps", "remove source, or use source: record")
		}
		if t.Field != "" || t.Unit != "" {
			c.add("source.timestamp", "the Kafka timestamp is in milliseconds and in no field", "remove field and unit, or use source: record")
		}
	}
	p.TSField = t.Field
	if p.TSField == "" {
		p.TSField = "ts"
	}
	p.TSUnit = enum(c, "source.timestamp.unit", t.Unit, UnitMillis, UnitMillis, UnitSeconds, UnitMicros, UnitNanos, UnitRFC3339, UnitSQL)
	p.Checks = t.Checks == nil || *t.Checks
	c.positive("source.timestamp.max_future", t.MaxFuture, "max_future")
	p.MaxFuture = DurOr(t.MaxFuture, etime.FromDuration(time.Hour))
	p.WarnAhead = WarnAhead
	if t.WarnAhead != nil {
		p.WarnAhead = etime.Duration(*t.WarnAhead)
	}
	if p.Time != EventTime && (t.Field != "" || t.Unit != "" || t.MaxFuture != nil || t.Checks != nil) {
		c.add("source.timestamp", string(p.Time)+" time takes no timestamp from records", "remove source.timestamp, or use time: event")
	}
	if typ == "generator" {
		c.generator()
		if p.TSField != "ts" || p.TSUnit != UnitMillis {
			c.add("source.timestamp", "the generator writes its timestamps to field ts in milliseconds", "remove field and unit, or use field: ts, unit: ms")
		}
	}
	if known && !slices.Contains(blockKinds, typ) {
		// A kind whose settings sit beside type (or in a block of its
		// own, kept in Source.Extra): it checks them here; the kinds
		// of blockKinds check theirs with their block (sourceBlock).
		ck := checker{c: c, path: "source", v: reflect.ValueOf(s).Elem()}
		if kind.Source.Check != nil {
			kind.Source.Check(ck)
		}
		c.required(ck, typ, true, kind.Source.Fields)
	}
}

func (c *compiler) generator() {
	p := c.p
	g := Generator{}
	if c.s.Source.Generator != nil {
		g = *c.s.Source.Generator
	}
	const path = "source.generator."
	c.positive(path+"duration", g.Duration, "duration")
	if g.Duration != nil && *g.Duration > 0 && g.Rate > 0 && g.Records > 0 {
		if span := float64(g.Records) / g.Rate * 1000; math.Abs(span-float64(*g.Duration)) > 0.01*float64(*g.Duration) {
			c.warn(path+"records", fmt.Sprintf("%d records at rate %v per second of event time span %v, not duration %v: records and rate win", g.Records, g.Rate, Duration(span), *g.Duration),
				"give two of records, rate and duration; rate is per second of event time, and pace: wall makes it per second of the clock too (as Flink's DataGen rows-per-second)")
		}
	}
	if g.Duration == nil {
		d := Duration(etime.FromDuration(time.Hour))
		g.Duration = &d
	}
	if g.Rate == 0 && g.Records > 0 && *g.Duration > 0 {
		g.Rate = float64(g.Records) * 1000 / float64(*g.Duration)
	} else if g.Rate == 0 {
		g.Rate = 1000
	} else if g.Rate < 0 || math.IsNaN(g.Rate) || math.IsInf(g.Rate, 0) {
		c.add(path+"rate", fmt.Sprint(g.Rate, " is not a rate"), "use records per second of event time, such as 1000")
	}
	if g.Keys == 0 {
		g.Keys = 100
	} else if g.Keys < 0 {
		c.add(path+"keys", fmt.Sprint(g.Keys, " is negative"), "use the number of distinct user_id values, such as 200")
	}
	if g.Hot < 0 || g.Hot > 1 || math.IsNaN(g.Hot) {
		c.add(path+"hot", fmt.Sprint(g.Hot, " is not a share"), "use the share of records that carry the hot key u0, such as 0.33")
	}
	if g.Records < 0 {
		c.add(path+"records", fmt.Sprint(g.Records, " is negative"), "use 0 (rate × duration) or a positive count")
	}
	if g.Records == 0 && g.Rate > 0 && *g.Duration > 0 {
		if n := g.Rate * float64(*g.Duration) / 1000; n > 1<<40 {
			g.Records = 1<<40 + 1 // refused below
		} else {
			g.Records = int64(n)
		}
	}
	if g.Records > 1<<40 {
		c.add(path+"records", fmt.Sprint(g.Records, " records is too many"), "use at most 2^40 records")
	}
	if g.Start == "" {
		g.Start = "2026-01-01T00:00:00Z"
	}
	if p.GenStartNow = g.Start == "now"; !p.GenStartNow {
		st, err := time.Parse(time.RFC3339Nano, g.Start)
		if err != nil {
			c.add(path+"start", fmt.Sprintf("%q is not an RFC 3339 time", g.Start), hint(g.Start, []string{"now"}, "use now, or a time with a zone such as 2026-01-01T00:00:00Z"))
		}
		p.GenStart = etime.FromTime(st)
	}
	switch g.Pace {
	case "", "none", "wall":
	default:
		c.add(path+"pace", fmt.Sprintf("unknown value %q", g.Pace), hint(g.Pace, []string{"none", "wall"}, "use none (as fast as the job reads) or wall (rate records per second of processing time)"))
	}
	var total float64
	for i, b := range g.Disorder {
		bp := fmt.Sprintf("%sdisorder[%d].", path, i)
		if !(b.Share >= 0 && b.Share <= 1) {
			c.add(bp+"share", fmt.Sprint(b.Share, " is not a share"), "use a fraction between 0 and 1, such as 0.04")
		}
		total += b.Share
		c.nonNegative(bp+"min", b.Min)
		if b.Max == nil {
			c.add(bp+"max", "missing", "each band needs the largest delay, such as 30s")
		} else if b.Min != nil && *b.Min > *b.Max {
			c.add(bp+"max", fmt.Sprintf("%v is below min %v", *b.Max, *b.Min), "make max at least min")
		}
	}
	if total > 1+1e-9 {
		c.add(path+"disorder", fmt.Sprintf("shares sum to %g", total), "make the shares sum to 1 or less (the rest arrives in order)")
	}
	if !(g.Bad >= 0 && g.Bad < 1) {
		c.add(path+"bad", fmt.Sprint(g.Bad, " is not a share"), "use a fraction below 1, such as 0.001")
	}
	if g.Seed == 0 {
		g.Seed = 1
	}
	p.Generator = g
	if err := p.UnpacedNow(); err != nil && g.Pace != "wall" {
		c.add(path+"start", "start: now without pace: wall "+err.Error(), "add pace: wall, or shorten duration, or raise max_future")
	}
}

// Kinds is the registry the plan was compiled with (Registry), or
// connector.Default for a plan made without one.
func (p *Plan) Kinds() *connector.Registry {
	if p.Registry != nil {
		return p.Registry
	}
	return connector.Default
}

// TSFromSource reports whether event time is the time the source's
// broker gave each record (timestamp.source kafka or nats), not a field.
func (p *Plan) TSFromSource() bool { return p.TSFromKafka || p.TSFromNATS }

// UnpacedNow says why a generator that starts now cannot run unpaced,
// or nil: its records come faster than the clock runs, so the last are
// up to its duration ahead of it, which max_future may refuse.
func (p *Plan) UnpacedNow() error {
	g := p.Generator
	if !p.GenStartNow || !p.Checks || p.Time != EventTime || g.Duration == nil || etime.Duration(*g.Duration) <= p.MaxFuture {
		return nil
	}
	return fmt.Errorf("puts the last records up to %v ahead of the clock, beyond source.timestamp.max_future (%v): they would be dead letters (timestamp_future)", *g.Duration, Duration(p.MaxFuture))
}

func (c *compiler) watermark() {
	w, p := &c.s.Watermark, c.p
	if p.Time == ProcessingTime {
		if *w != (Watermark{}) {
			c.add("watermark", "processing time has no watermarks", "remove watermark, or use time: event")
		}
		return
	}
	if p.Time == IngestionTime {
		if w.Type != "" || w.MaxOutOfOrderness != nil {
			c.add("watermark.type", "ingestion time is in order, its watermarks are monotonous", "remove type and max_out_of_orderness")
		}
		p.WMType = Monotonous
	} else {
		p.WMType = enum(c, "watermark.type", w.Type, BoundedOutOfOrderness, BoundedOutOfOrderness, Monotonous, StrictlyAscending, Punctuated)
	}
	if p.WMType == Punctuated && c.s.Source.Type == "generator" {
		c.add("watermark.type", "punctuated watermarks come from $watermark lines, which a generator does not write",
			"use bounded_out_of_orderness for a generator")
	}
	switch p.WMType {
	case BoundedOutOfOrderness:
		if w.MaxOutOfOrderness == nil {
			c.add("watermark.max_out_of_orderness", "missing", "bounded_out_of_orderness needs the bound on disorder, such as 30s")
		}
		c.nonNegative("watermark.max_out_of_orderness", w.MaxOutOfOrderness)
		p.Bound = DurOr(w.MaxOutOfOrderness, 0)
	case StrictlyAscending:
		p.Bound = -1 // the largest timestamp - (-1 ms) - 1 ms
		if w.MaxOutOfOrderness != nil {
			c.add("watermark.max_out_of_orderness", "strictly_ascending watermarks take no bound", "remove it, or use type: bounded_out_of_orderness")
		}
	default:
		if w.MaxOutOfOrderness != nil && p.Time == EventTime {
			c.add("watermark.max_out_of_orderness", string(p.WMType)+" watermarks take no bound", "remove it, or use type: bounded_out_of_orderness")
		}
	}
	c.nonNegative("watermark.idle_timeout", w.IdleTimeout)
	idle := etime.Duration(0)
	if k, ok := c.reg.Lookup(c.s.Source.Type); ok && k.Source != nil {
		// A broker's partitions and channels may stay empty for good:
		// without idleness one of them holds the watermark back forever
		// (H6), so its kind says how long (kafka, nats: 1m).
		idle = etime.FromDuration(k.Source.IdleTimeout)
	}
	p.IdleTimeout = DurOr(w.IdleTimeout, idle)
	c.nonNegative("watermark.max_drift", w.MaxDrift)
	p.MaxDrift = DurOr(w.MaxDrift, 0)
	if c.s.Source.Type == "nats" && p.WMType == Punctuated {
		c.add("watermark.type", "punctuated watermarks come from $watermark lines of a file", "use bounded_out_of_orderness or monotonous for nats")
	}
	if c.s.Source.Type == "kafka" {
		if p.WMType == Punctuated {
			c.add("watermark.type", "punctuated watermarks come from $watermark lines of a file", "use bounded_out_of_orderness or monotonous for kafka")
		}
		if w.Emit == "every_record" || w.Heartbeat != nil {
			c.add("watermark", "a kafka source emits watermarks per partition, periodically", "remove emit and heartbeat")
		}
	} else if w.MaxDrift != nil {
		c.add("watermark.max_drift", "watermark alignment pauses Kafka partitions", "remove max_drift, or read a kafka source")
	}
	c.nonNegative("watermark.heartbeat", w.Heartbeat)
	p.Heartbeat = DurOr(w.Heartbeat, 0)
	p.EveryRecord = c.oneOf("watermark.emit", w.Emit, "periodic", "periodic", "every_record") == "every_record"
	c.positive("watermark.interval", w.Interval, "the interval")
	p.Interval = DurOr(w.Interval, 200)
	if p.Interval <= 0 {
		p.Interval = 200
	}
	p.BacklogEvery = DefaultBacklogEvery
	if w.BacklogEvery != nil {
		if *w.BacklogEvery < 0 {
			c.add("watermark.backlog_every", fmt.Sprintf("%d is negative", *w.BacklogEvery), "use a number of records such as 1000, or 0 for periodic emission only")
		}
		p.BacklogEvery = max(*w.BacklogEvery, 0)
	}
}

func (c *compiler) window() {
	w, p := &c.s.Window, c.p
	proc := p.Time == ProcessingTime
	if c.s.TimeZone != "" {
		z, err := ParseZone(c.s.TimeZone)
		if err != nil {
			c.add("time_zone", err.Error(), "use a zone with one offset all year, such as Asia/Shanghai or +08:00, or leave time_zone out (windows in UTC)")
		}
		p.Zone = z
	}
	// Windows cut by the zone's wall clock: a day starts at its midnight,
	// the zone's offset before UTC's; modulo the windows' period, which
	// an assigner's offset stays within.
	offset := func(period etime.Duration) etime.Duration {
		o := DurOr(w.Offset, 0)
		if p.Zone == 0 || period <= 0 || o >= period || -o >= period {
			return o // the assigner refuses an offset beyond the period
		}
		return ((o-p.Zone)%period + period) % period
	}
	typ := c.oneOf("window.type", w.Type, "", "tumbling", "sliding", "cumulate", "session", "global")
	p.WindowKind = WindowKind(typ)
	if w.Size != nil {
		p.WindowSpan = etime.Duration(*w.Size)
	} else if w.Gap != nil {
		p.WindowSpan = etime.Duration(*w.Gap)
	}
	need := func(field string, d *Duration, fix string) etime.Duration {
		if d == nil {
			c.add("window."+field, "missing", typ+" windows need "+fix)
			return 0
		}
		c.positive("window."+field, d, field)
		return etime.Duration(*d)
	}
	refuse := func(field string, d *Duration) {
		if d != nil {
			c.add("window."+field, typ+" windows take no "+field, "remove it")
		}
	}
	var err error
	switch typ {
	case "tumbling":
		refuse("step", w.Step)
		size := need("size", w.Size, "a size such as 5m")
		refuse("slide", w.Slide)
		refuse("gap", w.Gap)
		if size > 0 {
			if proc {
				p.Assigner, err = window.TumblingProcessing(size, offset(size))
			} else {
				p.Assigner, err = window.Tumbling(size, offset(size))
			}
		}
	case "sliding":
		refuse("step", w.Step)
		size := need("size", w.Size, "a size such as 10m")
		slide := need("slide", w.Slide, "a slide such as 1m")
		refuse("gap", w.Gap)
		if size > 0 && slide > size {
			// Records between two windows would belong to none: neither
			// accepted nor late (Flink drops them without a count).
			c.add("window.size", fmt.Sprintf("%v is less than the slide %v, which leaves gaps between the windows whose records belong to no window", Duration(size), Duration(slide)),
				"make the size at least the slide (equal: a tumbling window), or swap them if size and slide were swapped")
		}
		if size > 0 && slide > 0 {
			if proc {
				p.Assigner, err = window.SlidingProcessing(size, slide, offset(slide))
			} else {
				p.Assigner, err = window.Sliding(size, slide, offset(slide))
			}
		}
	case "cumulate":
		size := need("size", w.Size, "a size such as 1h")
		step := need("step", w.Step, "a step such as 10m")
		refuse("slide", w.Slide)
		refuse("gap", w.Gap)
		if size > 0 && step > 0 {
			if proc {
				p.Assigner, err = window.CumulateProcessing(size, step, offset(size))
			} else {
				p.Assigner, err = window.Cumulate(size, step, offset(size))
			}
		}
	case "session":
		refuse("step", w.Step)
		gap := need("gap", w.Gap, "a gap such as 30m")
		refuse("size", w.Size)
		refuse("slide", w.Slide)
		refuse("offset", w.Offset)
		if gap > 0 {
			if proc {
				p.Assigner, err = window.SessionProcessing(gap)
			} else {
				p.Assigner, err = window.Session(gap)
			}
		}
	case "global":
		refuse("step", w.Step)
		refuse("size", w.Size)
		refuse("slide", w.Slide)
		refuse("gap", w.Gap)
		refuse("offset", w.Offset)
		p.Assigner = window.GlobalWindows()
	}
	if err != nil {
		c.add("window", err.Error(), "")
	}
	s := c.s
	c.nonNegative("allowed_lateness", s.AllowedLateness)
	p.Lateness = DurOr(s.AllowedLateness, 0)
	if s.AllowedLateness != nil && *s.AllowedLateness != 0 {
		switch {
		case typ == "global":
			c.add("allowed_lateness", "the global window has no end, so lateness does not apply", "remove allowed_lateness or use a time window")
		case proc:
			c.add("allowed_lateness", "processing-time windows have no late records", "remove allowed_lateness, or use time: event")
		}
	}
	c.nonNegative("late_firing_interval", s.LateFiringInterval)
	p.LateFiringInterval = DurOr(s.LateFiringInterval, 0)
	if p.LateFiringInterval > 0 {
		switch {
		case p.Lateness == 0:
			c.add("late_firing_interval", "late firings come only from allowed lateness, which is 0", "set allowed_lateness (such as 2m), or remove late_firing_interval")
		case typ == "session":
			c.add("late_firing_interval", "the late-firing throttle does not support session windows yet", "remove late_firing_interval, or use tumbling or sliding windows")
		case s.Trigger != nil && s.Trigger.Type == "purging":
			c.add("late_firing_interval", "a purging trigger clears the window at each firing, which a deferred firing would find empty", "remove late_firing_interval, or the purging trigger")
		}
	}
}

// skipUnchanged checks skip_unchanged: refused with a purging trigger,
// and a warning where the window fires once.
func (c *compiler) skipUnchanged() {
	s := c.s
	if !s.SkipUnchanged {
		return
	}
	c.p.SkipUnchanged = true
	switch {
	case c.p.Trigger != nil && !trigger.NeverPurges(c.p.Trigger):
		c.add("skip_unchanged", "a purging trigger clears the window at each firing, so an equal result is new contents, not an unchanged one", "remove skip_unchanged, or the purging trigger")
	case c.p.Assigner != nil && !FiresAgain(c.p.Trigger, c.p.Lateness):
		why, fix := "the window fires once (no early firings, no allowed lateness)", "remove skip_unchanged, or give the window a continuous trigger or allowed_lateness"
		switch {
		case c.p.Trigger != nil && !trigger.IsEventTime(c.p.Trigger):
			why, fix = "the final trigger fires each window once (W9)", "remove skip_unchanged, or use the event-time trigger with allowed_lateness or a continuous trigger"
		case c.p.Assigner.ProcessingTime():
			why, fix = "a processing-time window fires once", "remove skip_unchanged"
		}
		c.warn("skip_unchanged", why+", so there is nothing to skip", fix)
	}
}

// FiresAgain reports whether a window with trigger t (nil: the
// assigner's default) and allowed lateness may fire more than once:
// early firings, or late firings within the lateness. The final trigger
// fires once whatever the lateness (W9).
func FiresAgain(t trigger.Trigger, lateness etime.Duration) bool {
	if t != nil && trigger.FiresOnce(t) && !trigger.IsEventTime(t) {
		return false // final
	}
	return lateness > 0 || t != nil && !trigger.FiresOnce(t)
}

// SkipsUnchanged reports whether skip_unchanged has something to skip
// and is allowed for a window with trigger t (nil: the default) and
// allowed lateness: it may fire again, and never purges.
func SkipsUnchanged(t trigger.Trigger, lateness etime.Duration) bool {
	return FiresAgain(t, lateness) && (t == nil || trigger.NeverPurges(t))
}

// twoPhase checks two_phase: windows, triggers and aggregates whose
// pre-aggregated bundles give exactly the one-phase results
// (weir.WindowOptions.TwoPhase).
func (c *compiler) twoPhase() {
	s := c.s
	if !s.TwoPhase {
		return
	}
	c.p.TwoPhase = true
	const fix = "remove two_phase"
	if c.p.Assigner != nil {
		if why := TwoPhaseWindow(c.p.Assigner, c.p.Trigger); why != "" {
			c.add("two_phase", why, fix)
		}
	}
	if s.Group != nil {
		c.add("two_phase", "group mode does not pre-aggregate yet", fix)
	}
	for i, a := range s.Aggregate {
		if path, why := TwoPhaseAggregate(a); why != "" {
			c.add(fmt.Sprintf("aggregate[%d].%s", i, path), why, fix+", or this aggregate")
		}
	}
}

// TwoPhaseWindow is why windows of assigner a with trigger t (nil: the
// default) cannot be two-phase (weir.WindowOptions.TwoPhase), or "".
func TwoPhaseWindow(a window.Assigner, t trigger.Trigger) string {
	return trigger.TwoPhaseRefusal(a, t)
}

// TwoPhaseAggregate is why aggregate a does not merge exactly (the field
// of a at fault and the reason), or "".
func TwoPhaseAggregate(a Aggregate) (field, why string) {
	switch {
	case a.Fn != "count" && a.Fn != "sum" && a.Fn != "avg" && a.Fn != "min" && a.Fn != "max" && a.Fn != "count_distinct":
		return "fn", fmt.Sprintf("two_phase needs aggregates that merge exactly; %s is not one of them (count, sum, avg, min, max, count_distinct)", a.Fn)
	case a.Type == "float" && (a.Fn == "sum" || a.Fn == "avg"):
		return "type", fmt.Sprintf("a float %s depends on the order it adds in, which pre-aggregation changes; read the field as a decimal (the default)", a.Fn)
	}
	return "", ""
}

func (c *compiler) trigger() {
	s := c.s
	if s.Trigger == nil {
		if s.Window.Type == "global" {
			c.add("trigger", "missing; the global window never ends, so without a trigger it never fires",
				"add a trigger such as {type: count, count: 100} or {type: final} (one result at the end of input)")
		}
		return
	}
	c.p.Trigger = c.buildTrigger("trigger", s.Trigger)
}

func (c *compiler) buildTrigger(path string, t *Trigger) trigger.Trigger {
	typ := c.oneOf(path+".type", t.Type, "", "event_time", "processing_time", "continuous", "count", "final", "purging")
	if typ != "continuous" && t.Interval != nil {
		c.add(path+".interval", typ+" takes no interval", "remove it, or use type: continuous")
	}
	if typ != "count" && t.Count != 0 {
		c.add(path+".count", typ+" takes no count", "remove it, or use type: count")
	}
	if typ != "purging" && t.Nested != nil {
		c.add(path+".nested", typ+" takes no nested trigger", "remove it, or use type: purging")
	}
	if c.p.Time == ProcessingTime && (typ == "event_time" || typ == "continuous" || typ == "final") {
		c.add(path+".type", typ+" is an event-time trigger, and processing-time records carry no event time",
			"use processing_time or count, or use time: event")
		return nil
	}
	switch typ {
	case "event_time":
		return trigger.EventTime()
	case "processing_time":
		return trigger.ProcessingTime()
	case "final":
		return trigger.Final()
	case "continuous":
		if t.Interval == nil {
			c.add(path+".interval", "missing", "continuous triggers need an interval such as 1m")
			return nil
		}
		tr, err := trigger.Continuous(etime.Duration(*t.Interval))
		if err != nil {
			c.add(path+".interval", err.Error(), "use a positive interval such as 1m")
		}
		return tr
	case "count":
		tr, err := trigger.Count(t.Count)
		if err != nil {
			c.add(path+".count", "missing or not positive", "count triggers need a count such as 100")
		}
		return tr
	case "purging":
		if t.Nested == nil {
			c.add(path+".nested", "missing", "purging wraps another trigger, such as nested: {type: count, count: 100}")
			return nil
		}
		if n := c.buildTrigger(path+".nested", t.Nested); n != nil {
			return trigger.Purging(n)
		}
	}
	return nil
}

func (c *compiler) aggregates() {
	s := c.s
	// Names compare without case: SQL column names do.
	names := map[string]string{}
	for _, r := range ResultColumns {
		names[r] = "a result column"
	}
	names[AccColumn] = "the column of SQL results that keeps accumulators"
	names["job"] = "the column of SQL results that names the job"
	lower := strings.ToLower
	for i, k := range s.Key {
		path := fmt.Sprintf("key[%d]", i)
		switch {
		case k == "":
			c.add(path, "empty field name", "name a record field")
		case names[lower(k)] != "":
			c.add(path, fmt.Sprintf("%q is %s", k, names[lower(k)]), "rename the field upstream, or key by another field")
		default:
			names[lower(k)] = "a key field"
		}
	}
	if s.NullKeys && len(s.Key) > 0 {
		for i, k := range s.Sinks.Results {
			if k != nil && c.reg.Revise(k.Type) == connector.ReviseTable {
				c.add("null_keys", fmt.Sprintf("sinks.%s is a %s table, whose primary key cannot hold a null key", ResultsPath(i, len(s.Sinks.Results)), k.Type),
					"remove null_keys (a record without its key is then a dead letter, key_missing), or write the results to a file, Kafka or NATS")
			}
		}
	}
	if len(s.Aggregate) == 0 {
		c.add("aggregate", "missing", "list at least one aggregate, such as [{name: orders, fn: count}]")
	}
	for i, a := range s.Aggregate {
		path := fmt.Sprintf("aggregate[%d]", i)
		switch {
		case a.Name == "":
			c.add(path+".name", "missing", "name the output field, such as total")
		case names[lower(a.Name)] != "":
			c.add(path+".name", fmt.Sprintf("%q is already %s (names compare without case)", a.Name, names[lower(a.Name)]), "choose another name")
		default:
			names[lower(a.Name)] = "an aggregate"
		}
		fn := c.oneOf(path+".fn", a.Fn, "", aggFns...)
		if a.Field == "" && fn != "count" && slices.Contains(aggFns, fn) {
			c.add(path+".field", "missing", fn+" needs the record field it aggregates, such as amount")
		}
		switch base := BaseFn(fn); {
		case a.Type == "":
		case base != "sum" && base != "avg" && base != "min" && base != "max" && fn != "":
			c.add(path+".type", fn+" takes no type", "remove type: it is for sum, avg, min and max and their _distinct forms (decimal or float)")
		case a.Type == "integer" && base != "avg":
			c.add(path+".type", "integer is avg's (and avg_distinct's)", "remove type, or use decimal or float")
		case a.Type == "string" && base != "min" && base != "max":
			c.add(path+".type", "string is min's and max's", "remove type, or use decimal or float")
		case a.Type != "decimal" && a.Type != "float" && a.Type != "integer" && a.Type != "string":
			c.add(path+".type", fmt.Sprintf("unknown value %q", a.Type), hint(a.Type, []string{"decimal", "float", "integer", "string"}, "use decimal (exact, the default), float (float64), for avg integer, or for min and max string"))
		}
		if a.Type == "decimal" {
			s.Aggregate[i].Type = "" // the default: one spec hash with or without it
		}
		switch {
		case a.Nulls == "":
		case fn != "collect" && fn != "first" && fn != "last" && fn != "first_value" && fn != "last_value" && fn != "":
			c.add(path+".nulls", fn+" takes no nulls", "remove nulls: it is collect's, first's and last's (respect or ignore)")
		case a.Nulls != "respect" && a.Nulls != "ignore":
			c.add(path+".nulls", fmt.Sprintf("unknown value %q", a.Nulls), hint(a.Nulls, []string{"respect", "ignore"}, "use respect (collect nulls too) or ignore (skip them)"))
		}
	}
}

// pgDatabase is the database a Postgres connection string names, as
// host:port/dbname without the user, password and options, so that two
// sinks reaching one table as different users are seen to share it. A
// string it cannot read is its own database.
func pgDatabase(conn string) string {
	host, port, db, user := "", "5432", "", ""
	if u, err := url.Parse(conn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		host, db, user = u.Hostname(), strings.TrimPrefix(u.Path, "/"), u.User.Username()
		if p := u.Port(); p != "" {
			port = p
		}
		if h := u.Query().Get("host"); h != "" {
			host = h
		}
		if d := u.Query().Get("dbname"); d != "" {
			db = d
		}
	} else if strings.Contains(conn, "=") {
		for _, kv := range strings.Fields(conn) {
			k, v, _ := strings.Cut(kv, "=")
			v = strings.Trim(v, "'")
			switch k {
			case "host":
				host = v
			case "port":
				port = v
			case "dbname":
				db = v
			case "user":
				user = v
			}
		}
	} else {
		return conn
	}
	if db == "" {
		db = user // Postgres's default database is the user's name
	}
	if db == "" {
		return conn // the environment's (PGDATABASE): not known here
	}
	if host == "" || host == "localhost" || host == "::1" {
		host = "127.0.0.1"
	}
	return host + ":" + port + "/" + db
}

// keepsForBackfill reports whether late sink l keeps the too-late records
// where weir backfill reads them (a ledger, a Kafka topic, a Postgres
// table).
func keepsForBackfill(l *Sink) bool {
	return l != nil && (l.Type == "ledger" || l.Type == "kafka" || l.Type == "postgres")
}

func (c *compiler) sinks() {
	s, p := &c.s.Sinks, c.p
	if s.Results != nil && len(s.Results) == 0 {
		c.add("sinks.results", "an empty list", "list one sink at least, or leave results out for stdout")
	}
	if len(s.Results) == 0 {
		s.Results = SinkList{{Type: "stdout"}}
	}
	resultsPath := func(i int) string { return ResultsPath(i, len(s.Results)) }
	kafkaResults := ""
	for i, r := range s.Results {
		switch {
		case r == nil:
			c.add("sinks."+resultsPath(i), "missing", "give the sink's type and settings, or remove the empty list item")
		case r.Type == "kafka" && kafkaResults != "":
			c.add("sinks."+resultsPath(i)+".type", "a second kafka results sink (sinks."+kafkaResults+" is one)", "write the results to one kafka topic; a job has one Kafka producer, whose transactions carry every topic it writes")
		case r.Type == "kafka":
			kafkaResults = resultsPath(i)
		}
	}
	paths := map[string]string{}
	if c.s.Source.Type == "file" && c.s.Source.Path != "" {
		paths[filepath.Clean(c.s.Source.Path)] = "source"
	}
	// check checks sink k at sinks.<name>, an output of kind output
	// (results, late, late_partial, dead_letter).
	check := func(name, output string, k *Sink, role connector.SinkRole) {
		if k == nil {
			return
		}
		path := "sinks." + name
		if role != connector.RoleResults && k.Type == "kafka" && kafkaResults == "" {
			c.add(path+".type", "a kafka sink for "+name+" writes in the results sink's transactions", "use kafka results too, or write it to a postgres table or, in one process, a jsonl file")
		}
		c.kind(path+".type", k.Type, c.reg.Sinks(role))
		// A sink kind known for another output is still checked, so that
		// every problem is reported at once.
		kind, ok := c.reg.Lookup(k.Type)
		c.extra(path, extras{&k.Extra, &k.ExtraAt, sinkFields}, false, kind, ok && kind.Sink != nil)
		if !ok || kind.Sink == nil {
			return
		}
		c.settings(path, k, kind)
		ck := checker{c: c, path: path, v: reflect.ValueOf(k).Elem()}
		if kind.Sink.Check != nil {
			kind.Sink.Check(ck, output)
		}
		c.required(ck, k.Type, false, kind.Sink.Fields)
		c.columns(path, k, kind, role)
		// A sink that writes a file must not write another's, or the input.
		if kind.Takes(false, "path") && k.Path != "" {
			if other, dup := paths[filepath.Clean(k.Path)]; dup {
				what := "sinks." + other
				if other == "source" {
					what = "the source (the sink would destroy its input)"
				}
				c.add(path+".path", fmt.Sprintf("%s is also the path of %s", k.Path, what), "give each sink its own file")
			} else {
				paths[filepath.Clean(k.Path)] = name
			}
		}
	}
	for i, r := range s.Results {
		check(resultsPath(i), "results", r, connector.RoleResults)
	}
	if len(s.Results) > 1 && keepsForBackfill(s.Late) {
		for i := 1; i < len(s.Results); i++ {
			c.warn("sinks."+resultsPath(i), "weir backfill revises the first results sink (sinks.results[0]) alone; this one keeps what the live job wrote",
				"list first the sink whose results backfill should revise")
		}
	}
	check("late", "late", s.Late, connector.RoleLate)
	check("late_partial", "late_partial", s.LatePartial, connector.RoleLate)
	check("dead_letter", "dead_letter", s.DeadLetter, connector.RoleDeadLetters)
	// Two sinks must not share a Postgres table.
	tables := map[string]string{}
	type named struct {
		name string
		k    *Sink
	}
	var all []named
	for i, r := range s.Results {
		all = append(all, named{resultsPath(i), r})
	}
	all = append(all, named{"late", s.Late}, named{"late_partial", s.LatePartial}, named{"dead_letter", s.DeadLetter})
	for _, n := range all {
		if n.k == nil || n.k.Type != "postgres" || n.k.Table == "" {
			continue
		}
		t := pgDatabase(n.k.URL) + "\x00" + strings.ToLower(n.k.Table)
		if other, dup := tables[t]; dup {
			c.add("sinks."+n.name+".table", fmt.Sprintf("%s is also the table of sinks.%s in the same database", n.k.Table, other), "give each sink its own table")
		}
		tables[t] = n.name
	}
	// Each ledger cuts its own directory back on restore.
	if l, lp := s.Late, s.LatePartial; l != nil && lp != nil && l.Type == "ledger" && lp.Type == "ledger" && filepath.Clean(l.Dir) == filepath.Clean(lp.Dir) {
		c.add("sinks.late_partial.dir", fmt.Sprintf("%s is also the directory of the late ledger", lp.Dir), "leave late_partial out (the late ledger then holds partial misses too), or give it its own dir")
	}
	if p.Time == ProcessingTime && (s.Late != nil || s.LatePartial != nil) {
		c.add("sinks.late", "processing-time windows have no late records", "remove the late sinks, or use time: event")
	}
}

// ColumnSources are what a results column may hold besides key fields
// and aggregates (Column.From).
var ColumnSources = []string{ColWindowStart, ColWindowEnd, ColWindowTime, "firing", "run", "pane", "watermark"}

// columns checks the columns of sink k at path (Sink.Columns): a results
// sink that writes JSON rows, each column named once and holding a key
// field, a window bound, an aggregate or the firing's metadata.
func (c *compiler) columns(path string, k *Sink, kind connector.Kind, role connector.SinkRole) {
	c.layout(path, k, role)
	if len(k.Columns) == 0 {
		return
	}
	if role != connector.RoleResults {
		c.add(path+".columns", "columns shape results rows; a "+path[len("sinks."):]+" sink writes records", "remove columns")
		return
	}
	checkColumns(path, k.Columns, c.s.Key, c.s.Aggregate, c.add)
	for i, col := range k.Columns {
		// A bound written as a date names a day: windows shorter than
		// a day (or not aligned to days) would share it, and a reader
		// (or weir backfill) could not tell their rows apart.
		day := etime.Duration(86_400_000)
		if col.Expr == "" && (cmp.Or(col.From, col.Name) == ColWindowStart || cmp.Or(col.From, col.Name) == ColWindowEnd) && col.Time == "date" &&
			c.p.WindowKind != Global && (c.p.WindowSpan < day || c.p.WindowSpan%day != 0 || c.p.WindowKind == Session) {
			c.warn(fmt.Sprintf("%s.columns[%d].time", path, i), fmt.Sprintf("%s as a date names a day, which several of this job's %s windows share: their rows cannot be told apart (nor revised by weir backfill)", cmp.Or(col.From, col.Name), c.p.WindowKind),
				"write it as a timestamp (time: timestamp) or epoch milliseconds")
		}
	}
}

// layout checks the layout of sink k at path (Sink.Layout): a declared
// table is a postgres results table of columns without expressions,
// whose primary key (by default the columns of the key fields and the
// window's bounds) is those columns.
func (c *compiler) layout(path string, k *Sink, role connector.SinkRole) {
	switch k.Layout {
	case "", "weir":
		switch {
		case len(k.PrimaryKey) > 0 && k.Type == "kafka" && role == connector.RoleResults && len(k.Columns) > 0:
			// The columns of each message's key, as Flink's upsert-kafka
			// keys a message by its table's primary key (a retraction is
			// the key's tombstone).
			// It must tell every result apart, as the results' own key
			// does: each key field, and a window bound (window_end for
			// cumulating windows, which share their start), none as a
			// date (windows of one day share it).
			fix := "name the columns of the key fields and window_start, window_end"
			held := map[string]bool{}
			for i, name := range k.PrimaryKey {
				j := slices.IndexFunc(k.Columns, func(col Column) bool { return col.Name == name })
				at := fmt.Sprintf("%s.primary_key[%d]", path, i)
				switch from := ""; {
				case j < 0:
					c.add(at, fmt.Sprintf("%q is no column of the sink", name), fix)
				case k.Columns[j].Expr != "":
					c.add(at, fmt.Sprintf("column %q is computed, not a key field or window bound", name), fix)
				default:
					from = cmp.Or(k.Columns[j].From, k.Columns[j].Name)
					switch {
					case from != ColWindowStart && from != ColWindowEnd && !slices.Contains(c.s.Key, from):
						c.add(at, fmt.Sprintf("column %q holds no key field or window bound", name), fix)
					case held[from]:
						c.add(at, fmt.Sprintf("column %q holds %s, as another key column does", name, from), fix)
					case k.Columns[j].Time == "date" && (from == ColWindowStart || from == ColWindowEnd):
						c.add(at, fmt.Sprintf("column %q writes %s as a date, which windows of one day share", name, from), "write it as a timestamp (time: timestamp) or epoch milliseconds")
					}
					held[from] = true
				}
			}
			for _, f := range c.s.Key {
				if !held[f] {
					c.add(path+".primary_key", fmt.Sprintf("no column of key field %q: results of two keys would share a message key", f), fix)
				}
			}
			bound := held[ColWindowEnd] || held[ColWindowStart] && c.p.WindowKind != Cumulate
			if c.p.WindowKind != Global && !bound {
				c.add(path+".primary_key", "no column of a window bound: results of two windows would share a message key", fix)
			}
		case len(k.PrimaryKey) > 0:
			c.add(path+".primary_key", "a primary key is a declared table's, or a kafka results sink's of columns (its messages' key)", "remove it, or add layout: declared")
		}
		if k.Type == "postgres" && len(k.Columns) > 0 {
			c.add(path+".columns", "weir's layout has its own columns", "remove columns, or add layout: declared to write the table's own columns")
		}
		return
	case LayoutDeclared:
	default:
		c.add(path+".layout", fmt.Sprintf("%q is not a layout", k.Layout), "use weir (the default) or declared")
		return
	}
	if k.Type != "postgres" {
		return // not a setting of its kind (settings says so)
	}
	if role != connector.RoleResults {
		c.add(path+".layout", "a declared layout is a postgres results table's", "remove layout")
		return
	}
	if len(k.Columns) == 0 {
		c.add(path+".columns", "missing: a declared table has the columns given", "list the columns, each {name, from, time, type}")
		return
	}
	holds := map[string]string{}
	for i, col := range k.Columns {
		if col.Expr != "" {
			c.add(fmt.Sprintf("%s.columns[%d].expr", path, i), "a declared table's column holds a key field, a window bound, an aggregate or the firing's metadata", "select the aggregates themselves, or write the expression's rows to a JSON sink")
			continue
		}
		holds[col.Name] = cmp.Or(col.From, col.Name)
	}
	need := append(slices.Clone(c.s.Key), ColWindowStart, ColWindowEnd)
	if len(k.PrimaryKey) == 0 {
		for _, col := range k.Columns {
			if slices.Contains(need, cmp.Or(col.From, col.Name)) && col.Expr == "" {
				k.PrimaryKey = append(k.PrimaryKey, col.Name)
			}
		}
	}
	var got []string
	for i, name := range k.PrimaryKey {
		from, ok := holds[name]
		if from == ColWindowTime {
			from = ColWindowEnd
		}
		switch {
		case !ok:
			c.add(fmt.Sprintf("%s.primary_key[%d]", path, i), fmt.Sprintf("%q is not a column", name), suggest.Or(name, slices.Sorted(maps.Keys(holds)), "name the columns of the key fields and the window's bounds"))
		case !slices.Contains(need, from) || slices.Contains(got, from):
			c.add(fmt.Sprintf("%s.primary_key[%d]", path, i), fmt.Sprintf("column %q holds %s", name, from), "the primary key is the columns of the key fields and of window_start and window_end, each once")
		default:
			got = append(got, from)
		}
	}
	for _, n := range need {
		if !slices.Contains(got, n) && len(got) == len(k.PrimaryKey) {
			c.add(path+".primary_key", fmt.Sprintf("no column of %s in the primary key", n), "a declared table's rows are upserted by the columns of the key fields and the window's bounds: declare a column of each")
			break
		}
	}
}

// checkColumns checks the columns cols of a results sink at path, whose
// rows have key fields key and aggregates aggs: each named once and
// holding a key field, a window bound, an aggregate or the firing's
// metadata (From defaults to the name). add reports a problem.
func checkColumns(path string, cols []Column, key []string, aggs []Aggregate, add func(path, problem, fix string)) {
	from := map[string]bool{}
	for _, f := range ColumnSources {
		from[f] = true
	}
	for _, f := range key {
		from[f] = true
	}
	for _, a := range aggs {
		from[a.Name] = true
	}
	seen := map[string]bool{}
	for i := range cols {
		col := &cols[i]
		at := fmt.Sprintf("%s.columns[%d]", path, i)
		switch {
		case col.Name == "":
			add(at+".name", "missing", "name the column")
		case seen[col.Name]:
			add(at+".name", fmt.Sprintf("%q is named twice", col.Name), "give each column its own name")
		}
		seen[col.Name] = true
		if col.Float != "" && col.Float != "double" && col.Float != "float" {
			add(at+".float", fmt.Sprintf("%q is not a float format", col.Float), "use double (as Flink writes a DOUBLE: 7.0, 2.5E7) or float, or remove it")
		}
		if col.Expr != "" {
			if col.Decimal != nil {
				add(at+".decimal", "an expression's column casts in its expression", "remove decimal, and write CAST(... AS DECIMAL(p, s)) in expr")
			}
			checkColumnExpr(at, col, key, aggs, add)
			continue
		}
		if col.From == "" {
			col.From = col.Name
		}
		if d := col.Decimal; d != nil {
			i := slices.IndexFunc(aggs, func(a Aggregate) bool { return a.Name == col.From })
			switch {
			case i < 0 || !CastsToDecimal(aggs[i]):
				add(at+".decimal", fmt.Sprintf("%s is no aggregate of numbers", col.From), "remove decimal: it writes a count's, sum's, avg's, min's or max's value")
			case d.Precision < 1 || d.Precision > 38:
				add(at+".decimal.precision", fmt.Sprintf("%d is out of range", d.Precision), "use 1..38 digits, as SQL's DECIMAL(p, s)")
			case d.Scale < 0 || d.Scale > d.Precision:
				add(at+".decimal.scale", fmt.Sprintf("%d is out of range", d.Scale), fmt.Sprintf("use 0..%d (at most the precision)", d.Precision))
			}
		}
		if !from[col.From] {
			add(at+".from", fmt.Sprintf("%q is neither a key field, an aggregate nor one of %s", col.From, strings.Join(ColumnSources, ", ")),
				suggest.Or(col.From, slices.Sorted(maps.Keys(from)), "name a key field, an aggregate or a window bound"))
		}
		switch col.Time {
		case "", "ms", "timestamp", "timestamp_ltz", "date":
			if col.Time != "" && col.Time != "ms" && slices.Contains([]string{"firing", "run", "pane"}, col.From) {
				add(at+".time", col.From+" is not a time", "remove time; it formats window_start, window_end, window_time, watermark, and key fields and aggregates that hold epoch milliseconds")
			}
		default:
			add(at+".time", fmt.Sprintf("%q is not a time format", col.Time), "use ms, timestamp, timestamp_ltz or date")
		}
	}
}

// CastsToDecimal reports whether aggregate a gives a number a results
// column may write as a DECIMAL (Column.Decimal): a count, sum, avg, min
// or max (of numbers), or a count, sum or avg of distinct values.
func CastsToDecimal(a Aggregate) bool {
	switch a.Fn {
	case "count", "sum", "avg", "count_distinct", "sum_distinct", "avg_distinct":
		return true
	case "min", "max":
		return a.Type != "string"
	}
	return false
}

// checkColumnExpr checks a results column's expression (Column.Expr),
// at path at: one over the key fields and aggregates, without from; its
// time formats a value that is epoch milliseconds.
func checkColumnExpr(at string, col *Column, key []string, aggs []Aggregate, add func(path, problem, fix string)) {
	if col.From != "" {
		add(at, "a column has from, or expr", "remove from, or expr")
		return
	}
	switch col.Time {
	case "", "ms", "timestamp", "timestamp_ltz", "date":
	default:
		add(at+".time", fmt.Sprintf("%q is not a time format", col.Time), "use ms, timestamp, timestamp_ltz or date")
	}
	names := slices.Clone(key)
	for _, a := range aggs {
		names = append(names, a.Name)
	}
	names = append(names, ColWindowStart, ColWindowEnd, ColWindowTime) // epoch milliseconds
	if err := checkExpr(col.Expr, names, false); err != nil {
		add(at+".expr", fmt.Sprintf("column %d: %s", err.Pos.Col, err.Msg), cmp.Or(err.Hint, "write an expression over the key fields and aggregates, such as total / orders"))
	}
}

// checkExpr compiles src over fields names, as a condition (pred) or a
// value, returning the first error with its place (nil when it
// compiles).
func checkExpr(src string, names []string, pred bool) *sqlparse.Error {
	x, err := sqlparse.ParseExpr(src)
	field := func(id sqlparse.Ident) (int, *sqlparse.Error) {
		if i := slices.Index(names, id.Name); i >= 0 {
			return i, nil
		}
		what := "neither a key field nor an aggregate"
		if slices.Contains(names, ColWindowStart) {
			what = "neither a key field, an aggregate nor a window bound"
		}
		return 0, &sqlparse.Error{Pos: id.Pos, Text: id.Name, Msg: fmt.Sprintf("%s is %s", id.Name, what),
			Hint: suggest.Or(id.Name, names, "name one of "+strings.Join(names, ", "))}
	}
	// A string compared with a window bound is a time (expr.TimeNames).
	times := expr.TimeNames(ColWindowStart, ColWindowEnd, ColWindowTime)
	switch {
	case err != nil:
	case pred:
		_, err = expr.Compile(x, field, times)
	default:
		_, err = expr.CompileValue(x, field, times)
	}
	var pe *sqlparse.Error
	if errors.As(err, &pe) {
		return pe
	}
	if err != nil {
		return &sqlparse.Error{Pos: sqlparse.Pos{Line: 1, Col: 1}, Msg: err.Error()}
	}
	return nil
}

// having checks the spec's having: an expression over the key fields
// and the aggregates, of a window that fires each window once.
func (c *compiler) having() {
	s, p := c.s, c.p
	if s.Having == "" {
		return
	}
	names := slices.Clone(s.Key)
	for _, a := range s.Aggregate {
		names = append(names, a.Name)
	}
	names = append(names, ColWindowStart, ColWindowEnd, ColWindowTime)
	switch pe := checkExpr(s.Having, names, true); {
	case pe != nil:
		c.add("having", fmt.Sprintf("column %d: %s", pe.Pos.Col, pe.Msg), cmp.Or(pe.Hint, "write a SQL condition over the key fields, the aggregates and the window's bounds, such as orders > 3"))
	case BoundsOnly(s.Having):
		// Every firing of a window decides alike.
		p.Having = s.Having
	case p.Lateness > 0:
		c.add("having", "a late firing with allowed lateness could not take back a result the having let through", "remove allowed_lateness, or the having")
	case p.Trigger != nil && !trigger.FiresOnce(p.Trigger):
		c.add("having", fmt.Sprintf("trigger %v may fire a window more than once, and a later firing could not take back a result the having let through", p.Trigger), "use the default trigger or final, or remove the having")
	default:
		p.Having = s.Having
	}
}

// BoundsOnly reports whether having, a having's condition, reads the
// window's bounds (window_start, window_end, window_time) and nothing
// else: no key and no aggregate, so every firing of a window, late ones
// and a backfill's revision too, decides alike (a SQL WHERE on the
// bounds, which the SQL compiler makes a having).
func BoundsOnly(having string) bool {
	x, err := sqlparse.ParseExpr(having)
	if err != nil {
		return false
	}
	bounds, other := false, false
	_, err = expr.Compile(x, func(id sqlparse.Ident) (int, *sqlparse.Error) {
		switch id.Name {
		case ColWindowStart, ColWindowEnd, ColWindowTime:
			bounds = true
		default:
			other = true
		}
		return 0, nil
	}, expr.TimeNames(ColWindowStart, ColWindowEnd, ColWindowTime))
	return err == nil && bounds && !other
}

// where checks the spec's computed fields and where: expressions
// internal/expr compiles.
func (c *compiler) where() {
	check := func(path, src, hint string) bool {
		x, err := sqlparse.ParseExpr(src)
		if err == nil {
			_, err = expr.Compile(x, func(sqlparse.Ident) (int, *sqlparse.Error) { return 0, nil })
		}
		var pe *sqlparse.Error
		if errors.As(err, &pe) {
			c.add(path, fmt.Sprintf("column %d: %s", pe.Pos.Col, pe.Msg), cmp.Or(pe.Hint, hint))
			return false
		}
		return true
	}
	ok := true
	for i, f := range c.s.Computed {
		path := fmt.Sprintf("computed[%d]", i)
		if f.Name == "" {
			c.add(path+".name", "missing", "name the computed field")
			ok = false
		}
		ok = check(path+".expr", f.Expr, "write an expression over the record's fields, such as bid.price * 0.908") && ok
	}
	if ok {
		c.p.Computed = c.s.Computed
	}
	if c.s.Where != "" && check("where", c.s.Where, "write a SQL condition over the record's fields, such as amount > 100 AND region IN ('eu', 'us')") {
		c.p.Where = c.s.Where
	}
}

// CompleteRows reports whether each window's last published row is its
// whole state (trigger.Complete of its trigger, or the default one's):
// what weir backfill folds late records into.
func (p *Plan) CompleteRows() bool { return p.Trigger == nil || trigger.Complete(p.Trigger) }

// FinalTrigger reports whether the plan's trigger is final: each window
// fires once, at its cleanup.
func (p *Plan) FinalTrigger() bool {
	return p.Trigger != nil && trigger.FiresOnce(p.Trigger) && !trigger.IsEventTime(p.Trigger)
}

// NullOnOverflow reports whether aggregate i of p gives null once its
// decimal sum goes beyond 38 digits: a sum or avg (of distinct values
// too) of a field declared a DECIMAL (source.decimals, as a SQL table's
// DECIMAL column compiles), as Flink SQL's SUM and AVG of a DECIMAL are.
// Other decimal sums go on in float64.
func (p *Plan) NullOnOverflow(i int) bool {
	ag := p.Aggregates[i]
	switch ag.Fn {
	case "sum", "avg", "sum_distinct", "avg_distinct":
	default:
		return false
	}
	return ag.Type == "" && slices.ContainsFunc(p.Decimals, func(d DecimalField) bool { return d.Field == ag.Field })
}
