// Package sqljob compiles a SQL job (internal/sqlparse's AST) to the job
// spec the same job would have as YAML, which package spec compiles to a
// plan: a SQL job and its YAML twin run the same plan. It resolves
// tables, columns, functions and options, and reports what it cannot
// compile with its place in the SQL and a hint.
//
// This first cut compiles one INSERT of a windowed aggregation (the
// table functions TUMBLE, HOP or SESSION over a filesystem table, grouped
// by window_start, window_end and keys, or the legacy group windows
// GROUP BY TUMBLE/HOP/SESSION(ts, ...) with FN_START and FN_END; COUNT,
// SUM, MIN, MAX, AVG and COUNT DISTINCT) into a filesystem or JDBC
// (SQLite) table, with the SET keys of lateness, early and late firing,
// idleness and checkpoints.
package sqljob

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/weirstream/weir/etime"

	"github.com/weirstream/weir/internal/sqlparse"
	"github.com/weirstream/weir/internal/suggest"
	"github.com/weirstream/weir/spec"
)

// Job is a compiled SQL file: its spec and the warnings (SET keys weir
// ignores, options it reads differently).
type Job struct {
	Spec     *spec.Spec
	Warnings []string
	// The operators of the query being compiled, and after compiling,
	// of the first query: how it composes Spec's window with others.
	composition
	// more are the other queries of a statement set, each a window (or
	// a composition of them) of its own (spec.UnitePlans); firstTable is
	// the first's table.
	more       []moreQuery
	firstTable string
	// twoPhase: SET 'table.optimizer.agg-phase-strategy' = 'TWO_PHASE'
	// (Plan makes each window that can be two-phase so).
	twoPhase bool
	// at is where in the source each spec field came from, by the spec
	// of the query it belongs to (nil: a SET's, every query's), so that
	// an error the spec finds names its line (place, inSQLTerms).
	at map[*spec.Spec]map[string]sqlparse.Pos
}

// place notes that the field at path of spec s (nil: every query's) came
// from pos; the first place of a path is kept.
func (j *Job) place(s *spec.Spec, path string, pos sqlparse.Pos) {
	if j.at == nil {
		j.at = map[*spec.Spec]map[string]sqlparse.Pos{}
	}
	m := j.at[s]
	if m == nil {
		m = map[string]sqlparse.Pos{}
		j.at[s] = m
	}
	if _, ok := m[path]; !ok {
		m[path] = pos
	}
}

// places finds where a field of spec s came from: the place of the
// longest path that is path or contains it, the query's before a SET's.
func (j *Job) places(s *spec.Spec) places {
	return func(path string) (sqlparse.Pos, bool) {
		for _, m := range []map[string]sqlparse.Pos{j.at[s], j.at[nil]} {
			best, found := "", false
			var pos sqlparse.Pos
			for p, at := range m {
				if (path == p || strings.HasPrefix(path, p+".") || strings.HasPrefix(path, p+"[")) && (!found || len(p) > len(best)) {
					best, pos, found = p, at, true
				}
			}
			if found {
				return pos, true
			}
		}
		return sqlparse.Pos{}, false
	}
}

// composition is what a query compiles to besides its spec's window.
type composition struct {
	// join, when set, makes the query a window join of its spec's window
	// (the left side's) with join.right's; topN, a Top-N of its window's
	// results.
	join *joined
	topN *spec.TopNOp
	// cascade, when set, makes its window read the results of the
	// window of cascade.up (W12).
	cascade *cascaded
	// selectOp, when set, replaces its window: a query without one.
	selectOp *spec.SelectOp
}

// moreQuery is a query of a statement set besides the first: its spec
// and composition, and the prefix of its nodes and sinks (its table's
// name and a dot).
type moreQuery struct {
	spec *spec.Spec
	composition
	prefix string
}

// Compile compiles the SQL job src, read from file (whose name, without
// its extension, names the job unless SET 'pipeline.name' does). Errors
// are *sqlparse.Error.
func Compile(src, file string) (*Job, error) {
	script, err := sqlparse.Parse(src)
	if err != nil {
		return nil, err
	}
	c := &compiler{tables: map[string]*sqlparse.CreateTable{}, views: map[string]*sqlparse.CreateView{}, outputs: map[string]*sqlparse.Set{}, job: &Job{Spec: &spec.Spec{NullKeys: true}}}
	c.job.Spec.Name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	if err := c.script(script); err != nil {
		return nil, err
	}
	c.tableNullKeys()
	return c.job, nil
}

// tableNullKeys warns of the queries whose GROUP BY keys go to a jdbc
// table (nullKeys): a record with a NULL key is a dead letter there, not
// a group of its own.
func (c *compiler) tableNullKeys() {
	specs := []*spec.Spec{c.job.Spec}
	for _, m := range c.job.more {
		specs = append(specs, m.spec)
	}
	pos := "1:1"
	if len(c.inserts) > 0 {
		pos = c.inserts[0].Pos.String()
	}
	for _, s := range specs {
		if len(s.Key) > 0 && tableResults(s) {
			c.job.Warnings = append(c.job.Warnings, fmt.Sprintf("%s: GROUP BY %s into a jdbc table: a table's primary key cannot hold NULL, so a record whose key is NULL is a dead letter (key_missing) rather than a group of its own, as it is for the other sinks of the query (Flink's insert would fail); map NULL to a value (COALESCE) to keep it",
				pos, strings.Join(s.Key, ", ")))
		}
	}
}

type compiler struct {
	job    *Job
	tables map[string]*sqlparse.CreateTable
	views  map[string]*sqlparse.CreateView
	// hinted is the query's outermost SELECT, whose hint compileInsert
	// read (windowed reads those of the SELECTs inside it).
	hinted *sqlparse.Select
	// descriptor is the DESCRIPTOR of the query's window table function
	// (zero: none), where an error about its time attribute points.
	descriptor sqlparse.Ident
	// srcTable is the table the query's window reads (sourceTable), whose
	// declared types its key columns have.
	srcTable *sqlparse.CreateTable
	// timeAttr is the source table's time attribute when the timestamp
	// is read from its field (TO_TIMESTAMP_LTZ(field, p)), which no
	// computed field then holds.
	timeAttr string
	// attrLTZ: the source table's time attribute is a TIMESTAMP_LTZ(3)
	// (ltzAttr), and so is its windows' window_time.
	attrLTZ bool
	// zone is table.local-time-zone's offset from UTC (0: UTC), and
	// zoneName the zone as the SET gave it: windows over a TIMESTAMP_LTZ
	// are cut in it (spec.Spec.TimeZone), and a TIMESTAMP_LTZ read as a
	// wall time (its text, its hour, a comparison with a TIMESTAMP) is
	// its wall time there (zoned).
	zone     etime.Duration
	zoneName string
	zonePos  sqlparse.Pos
	// inserts are the file's INSERT, or its statement set's.
	inserts []*sqlparse.Insert
	// early are the early-fire keys as SET (or a query's hint) gave them.
	early struct {
		on              bool
		delay           *spec.Duration
		onPos, delayPos sqlparse.Pos
	}
	// outputs are the SETs of weir.*.sink keys, by key.
	outputs map[string]*sqlparse.Set
	// viewDepth is how deep viewBase is in views over views.
	viewDepth int
	// nested are the computed fields of nested keys (GROUP BY
	// bid.bidder), by the reference's text.
	nested map[string]string
	// computedTypes are the numeric types of the computed fields
	// (addComputed).
	computedTypes map[string]numType
	// shownAs are the query's texts of the names it gives what no column
	// shows (_weir_agg_3: MAX(ts); _weir_x_0: O.total), for messages.
	shownAs map[string]string
}

// errAt is an error at pos.
func errAt(pos sqlparse.Pos, text, hint, format string, args ...any) *sqlparse.Error {
	return &sqlparse.Error{Pos: pos, Text: text, Msg: fmt.Sprintf(format, args...), Hint: hint}
}

// sqlTypes are the type names Flink SQL knows.
var sqlTypes = []string{"ARRAY", "BIGINT", "BINARY", "BOOLEAN", "BYTES", "CHAR", "DATE", "DEC", "DECIMAL", "DOUBLE", "FLOAT", "INT", "INTEGER",
	"INTERVAL", "MAP", "MULTISET", "NULL", "NUMERIC", "RAW", "REAL", "ROW", "SMALLINT", "STRING", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ", "TINYINT",
	"VARBINARY", "VARCHAR"}

// knownType refuses a type (nil: a computed column's, none) whose name,
// or a nested one's, Flink SQL does not know (DOUBEL), with a
// did-you-mean.
func knownType(t *sqlparse.Type) error {
	if t == nil {
		return nil
	}
	if !slices.Contains(sqlTypes, t.Name) {
		return errAt(t.Pos, t.Name, suggest.Or(t.Name, sqlTypes, "the types: "+strings.Join(sqlTypes, ", ")), "unknown type %s", t.Name)
	}
	for _, f := range t.Fields {
		if err := knownType(f.Type); err != nil {
			return err
		}
	}
	for _, e := range t.Elems {
		if err := knownType(e); err != nil {
			return err
		}
	}
	return nil
}

func (c *compiler) script(s *sqlparse.Script) error {
	for _, st := range s.Stmts {
		var err error
		switch st := st.(type) {
		case *sqlparse.Set:
			if c.inserts != nil {
				// Flink's SET applies to the statements after it.
				c.job.Warnings = append(c.job.Warnings, fmt.Sprintf("%s: SET '%s' comes after the query and applies to nothing, as in Flink, where a SET applies to the statements after it: move it before the query",
					st.Pos, st.Key))
				continue
			}
			err = c.set(st)
		case *sqlparse.CreateTable:
			name := tableName(st.Name)
			if _, dup := c.tables[name]; dup {
				return errAt(st.Pos, name, "give it another name", "table %s is created twice", name)
			}
			for _, col := range st.Columns {
				if err := knownType(col.Type); err != nil {
					return err
				}
			}
			c.tables[name] = st
		case *sqlparse.Insert:
			if c.inserts != nil {
				return errAt(st.Pos, "INSERT", "put several INSERTs in one EXECUTE STATEMENT SET BEGIN ... END; so that they share one read of their sources", "a second INSERT; a file holds one")
			}
			c.inserts = []*sqlparse.Insert{st}
		case *sqlparse.StatementSet:
			if c.inserts != nil {
				return errAt(st.Pos, "EXECUTE STATEMENT SET", "put every INSERT in the one statement set", "a second INSERT or statement set; a file holds one")
			}
			c.inserts = st.Inserts
		case *sqlparse.CreateView:
			name := tableName(st.Name)
			if _, dup := c.views[name]; dup || c.tables[name] != nil {
				return errAt(st.Pos, name, "give it another name", "%s is created twice", name)
			}
			c.views[name] = st
		case *sqlparse.QueryStmt:
			if c.inserts != nil {
				return errAt(st.Query.Pos, "SELECT", "run one query per file", "a second query; a file holds one")
			}
			c.inserts = []*sqlparse.Insert{c.stdoutTable(st.Query)}
		}
		if err != nil {
			return err
		}
	}
	if len(c.inserts) == 0 {
		return errAt(sqlparse.Pos{Line: 1, Col: 1}, "", "add INSERT INTO sink SELECT ...", "the file has no INSERT")
	}
	if err := c.compileInserts(); err != nil {
		return err
	}
	return c.sideOutputs()
}

// compileInserts compiles the INSERTs of the file: one, or those of a
// statement set. Those that insert the first's windowed aggregation
// (aggregates named as each sink names them) into other tables are its
// results sinks, as a YAML job lists several; another query is a window
// of its own (Job.more), on the first's read of the source when it reads
// the same table the same way (spec.UnitePlans).
func (c *compiler) compileInserts() error {
	base := *c.job.Spec // the SETs'
	var first *spec.Spec
	var firstShape []byte
	var firstComp composition
	early := c.early // the SETs': a query's hint is its own
	tables := map[string]bool{}
	for i, in := range c.inserts {
		s := base
		c.job.Spec = &s
		c.job.composition = composition{} // this query's
		c.early = early
		err := c.compileInsert(in)
		comp, qs := c.job.composition, c.job.Spec // a join's is its left side's
		c.job.composition = firstComp
		if err != nil {
			return err
		}
		if name := tableName(in.Table); tables[name] {
			return errAt(in.Pos, name, "insert each query into a table of its own", "a second query into table %s", name)
		} else {
			tables[name] = true
		}
		if i == 0 {
			first, firstShape = c.job.Spec, shape(c.job.Spec)
			firstComp, c.job.composition = comp, comp
			c.job.firstTable = tableName(in.Table)
			continue
		}
		if comp != (composition{}) || firstComp != (composition{}) || !bytes.Equal(shape(&s), firstShape) || exprColumns(&s) || exprColumns(first) {
			// Another query: a window of its own, on the first's read
			// when it reads the same table the same way.
			name := tableName(in.Table)
			c.job.more = append(c.job.more, moreQuery{spec: qs, composition: comp, prefix: name + "."})
			continue
		}
		k := s.Sinks.Results[0]
		for j := range s.Aggregate {
			from, name := s.Aggregate[j].Name, first.Aggregate[j].Name
			if from == name {
				continue
			}
			if len(k.Columns) == 0 {
				return errAt(in.Pos, tableName(in.Table), "name the column "+name+" as in "+tableName(c.inserts[0].Table)+" (weir's tables keep an aggregate under one name)",
					"table %s names aggregate %s %s", tableName(in.Table), name, from)
			}
			for ci := range k.Columns {
				if k.Columns[ci].From == from {
					k.Columns[ci].From = name
				}
			}
		}
		first.Sinks.Results = append(first.Sinks.Results, k)
	}
	c.job.Spec = first
	return nil
}

// exprColumns reports whether s's results have a column computed from
// them (Column.Expr), whose aggregates a statement set's sharing of one
// window could not rename: such an INSERT is a query of its own.
func exprColumns(s *spec.Spec) bool {
	for _, k := range s.Sinks.Results {
		if slices.ContainsFunc(k.Columns, func(c spec.Column) bool { return c.Expr != "" }) {
			return true
		}
	}
	return false
}

// shape is what the INSERTs of a statement set must share: their
// specs without sinks and aggregate names.
func shape(s *spec.Spec) []byte {
	t := *s
	t.Sinks = spec.Sinks{}
	t.Aggregate = slices.Clone(s.Aggregate)
	for i := range t.Aggregate {
		t.Aggregate[i].Name = ""
	}
	b, _ := json.Marshal(&t) // plain data
	return b
}

// sideOutputs compiles the tables the weir.*.sink keys name.
func (c *compiler) sideOutputs() error {
	sinks := &c.job.Spec.Sinks
	if c.job.cascade != nil {
		// The records the side outputs hold are the view's window's.
		sinks = &c.job.cascade.up.Sinks
	}
	for _, key := range []string{lateKey, latePartialKey, deadLetterKey} {
		st, ok := c.outputs[key]
		if !ok {
			continue
		}
		if c.job.selectOp != nil && key != deadLetterKey {
			return errAt(st.Pos, st.Key, "leave it out", "%s: a query without a window has no too-late rows", st.Key)
		}
		if c.job.join != nil {
			return errAt(st.Pos, st.Key, "leave it out: each side's too-late rows and dead letters are counted (late_dropped, dead_letter)",
				"%s is not compiled for a join yet: its two sides would write one table", st.Key)
		}
		if key != deadLetterKey && len(c.job.more) > 0 {
			// One table has one writer: the first query's window.
			var others []string
			for _, m := range c.job.more {
				others = append(others, strings.TrimSuffix(m.prefix, "."))
			}
			c.job.Warnings = append(c.job.Warnings, fmt.Sprintf("%s: %s applies to the first query's window (INSERT INTO %s); the too-late rows of %s are counted (late_dropped), not written: run a query as a job of its own to keep its too-late rows",
				st.Pos, st.Key, c.job.firstTable, strings.Join(others, ", ")))
		}
		t, err := c.lookup(sqlparse.Name{Parts: []sqlparse.Ident{{Pos: st.Pos, Name: st.Value}}})
		if err != nil {
			return err
		}
		k, err := sinkOf(t, key)
		if err != nil {
			return err
		}
		switch key {
		case lateKey:
			sinks.Late = k
		case latePartialKey:
			sinks.LatePartial = k
		case deadLetterKey:
			sinks.DeadLetter = k
		}
	}
	return nil
}

// setPaths are the spec fields the SET keys set (Job.place).
var setPaths = map[string]string{
	"pipeline.name": "name", "execution.checkpointing.interval": "checkpoint.interval", "execution.checkpointing.min-pause": "checkpoint.min_pause",
	"state.checkpoints.dir": "checkpoint.dir", "pipeline.auto-watermark-interval": "watermark.interval", "table.exec.source.idle-timeout": "watermark.idle_timeout",
	"table.exec.emit.allow-lateness": "allowed_lateness", "table.exec.emit.early-fire.enabled": "trigger", "table.exec.emit.early-fire.delay": "trigger",
	"table.exec.emit.late-fire.delay": "late_firing_interval", lateKey: "sinks.late", latePartialKey: "sinks.late_partial", deadLetterKey: "sinks.dead_letter",
	archiveKey: "archive",
}

// setKeys are the SET keys weir honours.
var setKeys = []string{
	"pipeline.name", "parallelism.default", "execution.checkpointing.interval", "execution.checkpointing.min-pause", "state.checkpoints.dir",
	"pipeline.auto-watermark-interval", "table.exec.source.idle-timeout",
	"table.exec.emit.allow-lateness", "table.exec.emit.early-fire.enabled", "table.exec.emit.early-fire.delay",
	"table.exec.emit.late-fire.enabled", "table.exec.emit.late-fire.delay",
	"table.optimizer.agg-phase-strategy",
	lateKey, latePartialKey, deadLetterKey, archiveKey,
}

// weirKeys are weir's own SET keys (below).
var weirKeys = []string{lateKey, latePartialKey, deadLetterKey, archiveKey}

// weir's own SET keys, for what Flink has no word for: the tables that
// receive too-late rows (the third layer of late-data defence), partial
// misses of sliding windows (W7) and dead letters, and the archive of
// closed windows that weir backfill revises a results file from.
const (
	lateKey        = "weir.late.sink"
	latePartialKey = "weir.late-partial.sink"
	deadLetterKey  = "weir.dead-letter.sink"
	archiveKey     = "weir.archive.dir"
)

func (c *compiler) set(st *sqlparse.Set) error {
	s := c.job.Spec
	dur := func() (*spec.Duration, error) {
		d, err := flinkDuration(st.Value)
		if err != nil {
			return nil, errAt(st.Pos, st.Value, "write a duration such as '2 min', '10 s' or '500 ms'", "%s: %v", st.Key, err)
		}
		return &d, nil
	}
	var err error
	if path, ok := setPaths[st.Key]; ok {
		c.job.place(nil, path, st.Pos)
	}
	switch st.Key {
	case "pipeline.name":
		s.Name = st.Value
	case "parallelism.default":
		c.job.Warnings = append(c.job.Warnings, "parallelism.default: give weir run --parallelism; the spec has none")
	case "execution.checkpointing.interval":
		if s.Checkpoint == nil {
			s.Checkpoint = &spec.CheckpointSpec{}
		}
		s.Checkpoint.Interval, err = dur()
	case "execution.checkpointing.min-pause":
		if s.Checkpoint == nil {
			s.Checkpoint = &spec.CheckpointSpec{}
		}
		s.Checkpoint.MinPause, err = dur()
	case "state.checkpoints.dir":
		if s.Checkpoint == nil {
			s.Checkpoint = &spec.CheckpointSpec{}
		}
		s.Checkpoint.Dir = strings.TrimPrefix(st.Value, "file://")
	case "pipeline.auto-watermark-interval":
		s.Watermark.Interval, err = dur()
	case "table.exec.source.idle-timeout":
		s.Watermark.IdleTimeout, err = dur()
	case "table.exec.emit.allow-lateness":
		s.AllowedLateness, err = dur()
	case "table.exec.emit.early-fire.enabled", "table.exec.emit.late-fire.enabled":
		if st.Value != "true" && st.Value != "false" {
			return errAt(st.Pos, st.Value, "use 'true' or 'false'", "%s takes a boolean", st.Key)
		}
		if st.Key == "table.exec.emit.early-fire.enabled" {
			c.early.on, c.early.onPos = st.Value == "true", st.Pos
		}
		if st.Key == "table.exec.emit.late-fire.enabled" && st.Value == "false" {
			c.job.Warnings = append(c.job.Warnings, fmt.Sprintf("%s: table.exec.emit.late-fire.enabled = 'false' is not honoured: within the allowed lateness weir fires a window again for its late rows "+
				"(table.exec.emit.late-fire.delay throttles that); for no late firings, leave allow-lateness out, and late rows go to the weir.late.sink table", st.Pos))
		}
	case "table.exec.emit.early-fire.delay":
		c.early.delay, err = dur()
		c.early.delayPos = st.Pos
	case "table.exec.emit.late-fire.delay":
		s.LateFiringInterval, err = dur()
	case "table.optimizer.agg-phase-strategy":
		// Flink's local-global aggregation: weir's two_phase, for the
		// windows it applies to (Plan). AUTO is one phase here.
		switch v := strings.ToUpper(st.Value); v {
		case "AUTO", "ONE_PHASE", "TWO_PHASE":
			c.job.twoPhase = v == "TWO_PHASE"
		default:
			return errAt(st.Pos, st.Value, "use 'TWO_PHASE' (pre-aggregate per source subtask, then merge: for a hot key), 'ONE_PHASE' or 'AUTO' (one phase in weir)", "%s takes AUTO, ONE_PHASE or TWO_PHASE", st.Key)
		}
	case lateKey, latePartialKey, deadLetterKey:
		c.outputs[st.Key] = st
	case archiveKey:
		s.Archive = &spec.ArchiveSpec{Dir: st.Value}
	case "table.local-time-zone":
		// Flink cuts the windows of a TIMESTAMP_LTZ attribute in this
		// zone and shows a TIMESTAMP_LTZ's wall time in it; weir does
		// both for a zone with one offset all year.
		z, zerr := spec.ParseZone(st.Value)
		if zerr != nil {
			hint := "use a zone with one offset all year, such as Asia/Shanghai or +08:00, or leave it out (UTC)"
			if strings.Contains(zerr.Error(), "daylight saving") {
				hint = "leave it out: weir's windows are cut in UTC or a zone with one offset all year, and " + st.Value + " changes its offset over the year (daylight saving)"
			}
			return errAt(st.Pos, st.Value, hint, "table.local-time-zone %q is not supported: %v", st.Value, zerr)
		}
		c.zone, c.zoneName, c.zonePos = z, st.Value, st.Pos
		if z == 0 {
			c.zoneName = ""
		}
		return nil
	default:
		if strings.HasPrefix(st.Key, "weir.") {
			// weir's own keys are weir's to know: a typo would lose
			// what the key was for (too-late rows, dead letters).
			return errAt(st.Pos, st.Key, suggest.Or(st.Key, weirKeys, "use one of "+strings.Join(weirKeys, ", ")), "SET key %q is not one of weir's", st.Key)
		}
		if k := suggest.Closest(st.Key, setKeys); strings.HasPrefix(st.Key, "table.exec.emit.") && k != "" {
			// A typo of a key that decides which records count (allowed
			// lateness, early and late firings) would lose what it was
			// for without a word.
			return errAt(st.Pos, st.Key, suggest.DidYouMean(k), "SET key %q is not one weir honours", st.Key)
		}
		w := fmt.Sprintf("%s: SET key %q is not one weir honours; it is ignored", st.Pos, st.Key)
		if k := suggest.Closest(st.Key, setKeys); k != "" {
			w += " (" + suggest.DidYouMean(k) + ")"
		}
		c.job.Warnings = append(c.job.Warnings, w)
	}
	return err
}

// flinkDuration reads a duration as Flink's configuration writes them: a
// number and a unit (ms, s, min, h, d, with their long forms), with or
// without a space; a bare number is milliseconds.
func flinkDuration(s string) (spec.Duration, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	}
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a duration", s)
	}
	units := map[string]float64{
		"": 1, "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
		"s": 1e3, "sec": 1e3, "secs": 1e3, "second": 1e3, "seconds": 1e3,
		"min": 6e4, "mins": 6e4, "m": 6e4, "minute": 6e4, "minutes": 6e4,
		"h": 36e5, "hour": 36e5, "hours": 36e5, "d": 864e5, "day": 864e5, "days": 864e5,
	}
	f, ok := units[unit]
	if !ok {
		return 0, fmt.Errorf("%q has an unknown unit %q", s, unit)
	}
	return spec.Duration(n * f), nil
}

func tableName(n sqlparse.Name) string { return n.Parts[len(n.Parts)-1].Name }

// lookup finds a table created in the file, or fails with a
// did-you-mean.
func (c *compiler) lookup(n sqlparse.Name) (*sqlparse.CreateTable, error) {
	name := tableName(n)
	if t, ok := c.tables[name]; ok {
		return t, nil
	}
	hint := suggest.Or(name, slices.Sorted(maps.Keys(c.tables)), "create it with CREATE TABLE "+name+" (...) WITH (...)")
	return nil, errAt(n.Pos(), name, hint, "unknown table %s", name)
}

// options are a table's WITH options by key, with their positions.
type options map[string]sqlparse.Option

func optionsOf(t *sqlparse.CreateTable) options {
	o := options{}
	for _, op := range t.Options {
		o[op.Key] = op
	}
	return o
}

// take returns option key's value ("" when absent), marking it read.
func (o options) take(key string) string {
	v := o[key].Value
	delete(o, key)
	return v
}

// rest fails on an option no one read (the first by key), with a
// did-you-mean among known.
func (o options) rest(table string, known []string) error {
	if len(o) == 0 {
		return nil
	}
	k := slices.Min(slices.Collect(maps.Keys(o)))
	hint := suggest.Or(k, known, "known options: "+strings.Join(known, ", "))
	return errAt(o[k].Pos, k, hint, "table %s: unknown option '%s'", table, k)
}

// Plan compiles the job's spec (spec.Compile): the plan its YAML twin
// compiles to, with the windows, joins, Top-Ns and selects its queries
// compose (queryPlan), a statement set's queries united in one plan.
// Its errors speak SQL's terms (the field path says what it is in SQL).
func (j *Job) Plan() (*spec.Plan, error) {
	p, err := queryPlan(j.Spec, j.composition, j.places(j.Spec))
	if err != nil {
		return nil, err
	}
	if len(j.more) > 0 {
		// The operators of several queries go by their tables' names
		// (the others' by UnitePlans' prefix).
		for i, n := range p.Graph.Nodes {
			switch n.Op.(type) {
			case *spec.WindowOp, *spec.JoinOp, *spec.TopNOp, *spec.SelectOp:
				p.Graph.Nodes[i].Name = j.firstTable + "." + n.Name
			}
		}
	}
	for _, m := range j.more {
		q, err := queryPlan(m.spec, m.composition, j.places(m.spec))
		if err != nil {
			return nil, fmt.Errorf("the INSERT INTO %s: %w", strings.TrimSuffix(m.prefix, "."), err)
		}
		if p, err = spec.UnitePlans(p, q, m.prefix); err != nil {
			return nil, inSQLTerms(err, j.places(m.spec))
		}
	}
	for i, w := range p.Warnings {
		p.Warnings[i] = fieldInSQLTerms(w, j.places(j.Spec))
	}
	if j.twoPhase {
		twoPhase(p)
	}
	skipUnchanged(p)
	p.SQL = true
	if err := kafkaReads(p); err != nil {
		return nil, err
	}
	return p, nil
}

// skipUnchanged makes each window of p that may fire more than once (early
// firings, allowed lateness) skip unchanged results (W20), as Flink's
// early and late firings emit an update only when the result changed.
func skipUnchanged(p *spec.Plan) {
	for _, n := range p.Graph.Nodes {
		if op, ok := n.Op.(*spec.WindowOp); ok && spec.SkipsUnchanged(op.Trigger, op.Lateness) {
			op.SkipUnchanged = true
		}
	}
}

// twoPhase makes each window of p two-phase (spec.WindowOp.TwoPhase)
// that can be, as Flink's TWO_PHASE strategy applies where it can, and
// warns about the others with the reason.
func twoPhase(p *spec.Plan) {
	for _, n := range p.Graph.Nodes {
		op, ok := n.Op.(*spec.WindowOp)
		if !ok {
			continue
		}
		why := spec.TwoPhaseWindow(op.Assigner, op.Trigger)
		for _, a := range op.Aggregates {
			if _, w := spec.TwoPhaseAggregate(a); why == "" && w != "" {
				why = w
			}
		}
		if why != "" {
			p.Warnings = append(p.Warnings, spec.FieldError{Path: n.Name, Msg: "table.optimizer.agg-phase-strategy TWO_PHASE: this window aggregates in one phase: " + why,
				Fix: "nothing to do: its results are the same either way (Flink applies TWO_PHASE where it can, too)"})
			continue
		}
		op.TwoPhase = true
	}
}

// nullKeys says where GROUP BY groups NULLs (spec.Spec.NullKeys, which
// a SQL job's specs start with): in every window, joined or not, as in
// Flink (a join's equalities match only equal values, and NULL equals
// nothing, not even a NULL: the join pairs no row with a NULL join
// column, and an outer join emits such a row of a side it keeps padded
// with NULLs), except into a results table, whose primary key cannot
// hold NULL (a record with a NULL key is a dead letter, key_missing,
// there; the query is warned about: tableNullKeys).
func nullKeys(s *spec.Spec, c composition) {
	if !tableResults(s) {
		return
	}
	s.NullKeys = false
	if c.join != nil {
		c.join.right.NullKeys = false
		for _, cas := range c.join.cascades {
			if cas != nil {
				cas.up.NullKeys = false
			}
		}
	}
	if c.cascade != nil {
		c.cascade.up.NullKeys = false
	}
}

// tableResults reports whether a results sink of s is a SQL table,
// which keys its rows by the key columns.
func tableResults(s *spec.Spec) bool {
	return slices.ContainsFunc(s.Sinks.Results, sqlTable)
}

// sqlTable reports whether sink k is a SQL table: the kinds a jdbc table
// compiles to (tables.go).
func sqlTable(k *spec.Sink) bool { return k.Type == "postgres" || k.Type == "sqlite" }

// queryPlan compiles one query: spec s's window, composed as c says.
func queryPlan(s *spec.Spec, c composition, at places) (*spec.Plan, error) {
	nullKeys(s, c)
	if c.cascade != nil {
		return cascadeQueryPlan(s, c.cascade)
	}
	var cols []spec.Column
	var k *spec.Sink
	if c.composed() {
		// The join's or Top-N's rows have the columns, which the window's
		// do not.
		k = s.Sinks.Results[0]
		cols, k.Columns = k.Columns, nil
	}
	var p *spec.Plan
	var err error
	switch {
	case c.join != nil && c.join.cascades[0] != nil:
		p, err = cascadePlan(s, c.join.cascades[0], "query")
	case c.join != nil && c.join.records != nil:
		// The records of a join of records with windowed results (W19).
		if p, err = spec.Compile(s); err == nil {
			p, err = spec.SelectPlan(p, c.join.records, "records", c.join.records)
		}
		if err != nil {
			err = inSQLTerms(err, at)
		}
	default:
		if p, err = spec.Compile(s); err != nil {
			err = inSQLTerms(err, at)
		}
	}
	if k != nil {
		k.Columns = cols
	}
	if err != nil {
		return nil, err
	}
	if c.join != nil {
		var r *spec.Plan
		if c.join.cascades[1] != nil {
			r, err = cascadePlan(c.join.right, c.join.cascades[1], "query")
		} else if r, err = spec.Compile(c.join.right); err != nil {
			err = inSQLTerms(err, at)
		}
		if err != nil {
			return nil, fmt.Errorf("the join's right side, %s: %w", strings.TrimSuffix(c.join.prefix, "."), err)
		}
		if p, err = spec.JoinPlans(p, r, c.join.op, "join", c.join.leftPrefix, c.join.prefix, c.join.op); err != nil {
			return nil, inSQLTerms(err, at)
		}
	}
	if c.topN != nil {
		if p, err = spec.FeedPlan(p, c.topN, "topn", c.topN); err != nil {
			return nil, inSQLTerms(err, at)
		}
	}
	if c.selectOp != nil {
		if p, err = spec.SelectPlan(p, c.selectOp, "select", c.selectOp); err != nil {
			return nil, inSQLTerms(err, at)
		}
	}
	if c.composed() && len(cols) > 0 {
		if err := p.SetResultColumns(cols); err != nil {
			return nil, inSQLTerms(err, at)
		}
	}
	return p, nil
}

// stdoutName names the table a bare SELECT writes to.
const stdoutName = "the query's output"

// stdoutTable makes a bare SELECT an INSERT into a print table whose
// columns are the query's, as Flink's SQL client shows a query: JSON
// lines on stdout, a column per select item named by its alias, its
// column's name or, unnamed, EXPR$n; window bounds as TIMESTAMP(3).
func (c *compiler) stdoutTable(q *sqlparse.Query) *sqlparse.Insert {
	t := &sqlparse.CreateTable{Pos: q.Pos, Name: sqlparse.Name{Parts: []sqlparse.Ident{{Pos: q.Pos, Name: stdoutName}}},
		Options: []sqlparse.Option{{Pos: q.Pos, Key: "connector", Value: "print"}}}
	if len(q.Selects) > 0 {
		for i, it := range q.Selects[0].Items {
			name, time := it.Alias.Name, false
			switch e := it.Expr.(type) {
			case *sqlparse.Ref:
				last := e.Parts[len(e.Parts)-1].Name
				name = cmp.Or(name, last)
				time = last == "window_start" || last == "window_end" || last == "window_time"
			case *sqlparse.Call:
				fn := strings.ToUpper(tableName(e.Name))
				time = strings.HasSuffix(fn, "_START") || strings.HasSuffix(fn, "_END") || strings.HasSuffix(fn, "_ROWTIME")
			}
			addStdoutColumn(t, it.Pos, cmp.Or(name, fmt.Sprintf("EXPR$%d", i)), time)
		}
	}
	c.tables[stdoutName] = t
	return &sqlparse.Insert{Pos: q.Pos, Table: t.Name, Query: q}
}

// addStdoutColumn adds a column for name to print table t, a bare
// SELECT's: a second column of one name is named as Flink's planner names
// it (SELECT a.total, b.total shows total and total0); a window bound
// (time) is a TIMESTAMP(3).
func addStdoutColumn(t *sqlparse.CreateTable, pos sqlparse.Pos, name string, time bool) {
	name = suggest.FreeName(name, func(n string) bool {
		return slices.ContainsFunc(t.Columns, func(c *sqlparse.Column) bool { return c.Name.Name == n })
	})
	col := &sqlparse.Column{Pos: pos, Name: sqlparse.Ident{Pos: pos, Name: name}}
	if time {
		col.Type = &sqlparse.Type{Pos: pos, Name: "TIMESTAMP", Params: []int{3}}
	}
	t.Columns = append(t.Columns, col)
}

// earlyFiring applies the early-fire keys to the query's spec, as Flink
// reads them: early firings every delay when enabled, which needs the
// delay; a delay without enabled fires nothing early (warned about).
func (c *compiler) earlyFiring() error {
	e := &c.early
	switch {
	case e.on && e.delay == nil:
		return errAt(e.onPos, "table.exec.emit.early-fire.enabled", "add SET 'table.exec.emit.early-fire.delay' = '10 s'", "early firing needs its delay, as in Flink")
	case e.on:
		c.job.Spec.Trigger = &spec.Trigger{Type: "continuous", Interval: e.delay}
	case e.delay != nil:
		c.job.Warnings = append(c.job.Warnings, fmt.Sprintf("%s: table.exec.emit.early-fire.delay without table.exec.emit.early-fire.enabled = 'true' fires nothing early, as in Flink", e.delayPos))
	}
	return nil
}
