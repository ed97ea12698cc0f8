package pgio

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/etime"
)

// Declared is a results table of its own layout, as Flink's JDBC sink
// writes one (Options.Declared): the columns its DDL declares, in any
// order, each holding a key field, a window bound, an aggregate or the
// firing's metadata, upserted by its primary key. weir adds no column of
// its own: a table made by hand for a Flink job takes the job's rows
// as they are.
//
// What the table cannot keep without weir's columns: the job's rows are
// not told from other jobs' (a fresh start removes nothing: Reset returns
// 0, and a new run upserts over the rows of the windows it writes, as a
// Flink job does); a replayed older pane overwrites a newer one unless
// the table has both a run and a pane column (then the pane guard holds
// as in weir's layout); and weir backfill does not revise it.
type Declared = connector.TableLayout

// declared is a Sink's plan for a Declared table: each column's source
// and how its value is written, and the statements, made once the
// table's column types are known (setup).
type declared struct {
	cols  []dcol
	pk    []int // indexes into cols of the primary key's columns
	guard bool  // run and pane columns: the pane guard applies
}

// The sources of a declared column.
const (
	srcKey = iota
	srcValue
	srcStart
	srcEnd
	srcTime // window_time: window_end - 1
	srcFiring
	srcRun
	srcPane
	srcWatermark
)

type dcol struct {
	name string
	src  int
	at   int    // srcKey, srcValue: the key's or value's index
	time string // "", ms, timestamp, timestamp_ltz or date
	typ  string // the type it is created with
	cast string // the table's type, as $n::cast binds it
}

// newDeclared checks layout l against the sink's keys and values.
func newDeclared(l *Declared, keys, vals []ColumnDef) (*declared, error) {
	d := &declared{}
	seen := map[string]bool{}
	for _, c := range l.Columns {
		if err := checkIdent("column name", c.Name); err != nil {
			return nil, err
		}
		if seen[c.Name] {
			return nil, fmt.Errorf("pgio: column %q is declared twice", c.Name)
		}
		seen[c.Name] = true
		from := c.From
		if from == "" {
			from = c.Name
		}
		dc := dcol{name: c.Name, time: c.Time}
		switch from {
		case "window_start":
			dc.src = srcStart
		case "window_end":
			dc.src = srcEnd
		case "window_time":
			dc.src = srcTime
		case "firing":
			dc.src = srcFiring
		case "run":
			dc.src = srcRun
		case "pane":
			dc.src = srcPane
		case "watermark":
			dc.src = srcWatermark
		default:
			if i := slices.IndexFunc(keys, func(k ColumnDef) bool { return k.Name == from }); i >= 0 {
				dc.src, dc.at = srcKey, i
			} else if i := slices.IndexFunc(vals, func(v ColumnDef) bool { return v.Name == from }); i >= 0 {
				dc.src, dc.at = srcValue, i
			} else {
				return nil, fmt.Errorf("pgio: column %q holds %q, which is neither a key, a value, a window bound nor firing, run, pane or watermark", c.Name, from)
			}
		}
		dc.typ = createType(c.Type, dc, keys, vals)
		d.cols = append(d.cols, dc)
	}
	d.guard = d.find(srcRun) >= 0 && d.find(srcPane) >= 0
	// The primary key must be the key columns and the window's bounds:
	// what identifies a window's row.
	need := map[string]bool{"start": true, "end": true}
	for _, k := range keys {
		need["key "+k.Name] = true
	}
	for _, name := range l.PrimaryKey {
		i := slices.IndexFunc(d.cols, func(c dcol) bool { return c.name == name })
		if i < 0 {
			return nil, fmt.Errorf("pgio: primary key column %q is not a declared column", name)
		}
		c := d.cols[i]
		var what string
		switch c.src {
		case srcKey:
			what = "key " + keys[c.at].Name
		case srcStart:
			what = "start"
		case srcEnd, srcTime:
			what = "end"
		default:
			return nil, fmt.Errorf("pgio: primary key column %q holds no key field or window bound", name)
		}
		if !need[what] {
			return nil, fmt.Errorf("pgio: primary key column %q holds what another primary key column holds", name)
		}
		delete(need, what)
		d.pk = append(d.pk, i)
	}
	if len(need) > 0 {
		var names []string
		for _, k := range keys {
			names = append(names, k.Name)
		}
		return nil, fmt.Errorf("pgio: the primary key (%s) must hold the key fields (%s) and the window's start and end, which identify a window's row",
			strings.Join(l.PrimaryKey, ", "), strings.Join(names, ", "))
	}
	return d, nil
}

// createType is the type a declared column is created with: its
// declared SQL type in Postgres's words, or one that holds its source.
func createType(sqlType string, c dcol, keys, vals []ColumnDef) string {
	if sqlType != "" {
		return PostgresType(sqlType)
	}
	switch c.src {
	case srcKey:
		if c.time != "" && c.time != "ms" {
			return timeType(c.time)
		}
		return keys[c.at].Type.String()
	case srcValue:
		if c.time != "" && c.time != "ms" {
			return timeType(c.time)
		}
		return vals[c.at].Type.String()
	case srcFiring:
		return "text"
	case srcRun, srcPane:
		return "bigint"
	}
	return timeType(c.time)
}

// timeType is the column type of a time written as format says.
func timeType(format string) string {
	switch format {
	case "timestamp":
		return "timestamp(3)"
	case "timestamp_ltz":
		return "timestamptz(3)"
	case "date":
		return "date"
	}
	return "bigint"
}

var sqlTypeRE = regexp.MustCompile(`^([A-Z_]+(?: [A-Z_]+)*) ?(\( ?\d+ ?(?:, ?\d+ ?)?\))?$`)

// PostgresType is a column's SQL type, as Flink SQL declares it (STRING,
// DECIMAL(10, 2), TIMESTAMP(3), TIMESTAMP_LTZ(3), DOUBLE, ...), in
// Postgres's words (text, numeric(10,2), timestamp(3), timestamptz(3),
// double precision, ...). A type Postgres spells the same is kept.
func PostgresType(t string) string {
	up := strings.TrimSuffix(strings.ToUpper(strings.Join(strings.Fields(t), " ")), " NOT NULL")
	rest := ""
	if u, ok := strings.CutSuffix(up, " WITH LOCAL TIME ZONE"); ok {
		up, rest = u, "WITH LOCAL TIME ZONE"
	}
	m := sqlTypeRE.FindStringSubmatch(up)
	if m == nil {
		return t
	}
	name, args := m[1], strings.ReplaceAll(m[2], " ", "")
	switch {
	case name == "STRING":
		return "text"
	case name == "VARCHAR" || name == "CHARACTER VARYING":
		if args == "" {
			return "text"
		}
		return "varchar" + args
	case name == "CHAR" || name == "CHARACTER":
		return "char" + args
	case name == "TINYINT" || name == "SMALLINT":
		return "smallint"
	case name == "INT" || name == "INTEGER":
		return "integer"
	case name == "BIGINT":
		return "bigint"
	case name == "BOOLEAN":
		return "boolean"
	case name == "DOUBLE" || name == "DOUBLE PRECISION":
		return "double precision"
	case name == "FLOAT" || name == "REAL":
		return "real"
	case name == "DECIMAL" || name == "DEC" || name == "NUMERIC":
		return "numeric" + args
	case name == "DATE":
		return "date"
	case name == "TIMESTAMP_LTZ" || name == "TIMESTAMP" && rest == "WITH LOCAL TIME ZONE":
		return "timestamptz" + args
	case name == "TIMESTAMP":
		return "timestamp" + args
	}
	return t
}

// setupDeclared creates the declared table if it is missing, or checks
// that the table has every declared column and the primary key, and
// makes the statements for the table's column types.
func (s *Sink) setupDeclared(ctx context.Context, conn *pgx.Conn) error {
	d := s.decl
	got, gotPK, exists, err := tableColumns(ctx, conn, s.c.qt)
	if err != nil {
		return fmt.Errorf("pgio: read the columns of table %s: %w", s.c.qt, err)
	}
	pk := make([]string, len(d.pk))
	for i, at := range d.pk {
		pk[i] = d.cols[at].name
	}
	if !exists {
		q := make([]string, len(d.cols))
		for i, c := range d.cols {
			q[i] = quoteIdent(c.name) + " " + c.typ
			if slices.Contains(d.pk, i) {
				q[i] += " NOT NULL"
			}
		}
		create := fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (%s, PRIMARY KEY (%s))", s.c.qt, strings.Join(q, ", "), joinIdents(pk))
		if _, err := conn.Exec(ctx, create); err != nil {
			return fmt.Errorf("pgio: create table %s: %w\n  statement: %s", s.c.qt, createRace(err), create)
		}
		if got, gotPK, _, err = tableColumns(ctx, conn, s.c.qt); err != nil {
			return fmt.Errorf("pgio: read the columns of table %s: %w", s.c.qt, err)
		}
	}
	types := map[string]string{}
	for _, c := range got {
		types[c[0]] = c[1]
	}
	var diffs []string
	for i := range d.cols {
		c := &d.cols[i]
		t, ok := types[c.name]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("column %s (%s) is missing", quoteIdent(c.name), c.typ))
			continue
		}
		c.cast = baseType(t)
		if err := timeFits(*c, t); err != "" {
			diffs = append(diffs, err)
		}
	}
	if len(gotPK) != len(pk) || slices.ContainsFunc(pk, func(n string) bool { return !slices.Contains(gotPK, n) }) {
		diffs = append(diffs, fmt.Sprintf("the primary key is (%s), expected (%s): the key columns and the window's bounds, which the rows are upserted by", joinIdents(gotPK), joinIdents(pk)))
	}
	if len(diffs) > 0 {
		gotCols := make([]string, len(got))
		for i, c := range got {
			gotCols[i] = quoteIdent(c[0]) + " " + c[1]
		}
		return schemaError{fmt.Errorf("pgio: table %s does not have the declared layout:\n  - %s\n  found columns (%s), primary key (%s)\n"+
			"add the columns or the primary key, or use another table name (weir creates a missing table with the declared columns)",
			s.c.qt, strings.Join(diffs, "\n  - "), strings.Join(gotCols, ", "), joinIdents(gotPK))}
	}
	s.buildDeclaredSQL()
	return nil
}

var typmod = regexp.MustCompile(`\(\d+(,\d+)?\)`)

// baseType is a column's type as format_type prints it without its
// length, precision or scale (character varying(4) is character
// varying): a parameter cast to the full type would cut a text that is
// too long without a word, where the insert's own conversion into the
// column refuses it (and rounds a numeric or a timestamp as the column
// says).
func baseType(t string) string {
	return strings.Join(strings.Fields(typmod.ReplaceAllString(t, "")), " ")
}

// timeFits says what is wrong ("": nothing) with writing column c, a
// time written as c.time says, into a column of type t: epoch
// milliseconds into a timestamp or date, or a timestamp's text into a
// number.
func timeFits(c dcol, t string) string {
	timed := c.src == srcStart || c.src == srcEnd || c.src == srcTime || c.src == srcWatermark || c.time != "" && c.time != "ms"
	if !timed {
		return ""
	}
	isTime := strings.HasPrefix(t, "timestamp") || t == "date"
	ms := c.time == "" || c.time == "ms"
	switch {
	case ms && isTime:
		return fmt.Sprintf("column %s is %s, and the column is written as epoch milliseconds: declare it TIMESTAMP(3) (time: timestamp) or make it a bigint", quoteIdent(c.name), t)
	case !ms && !isTime && t != "text" && !strings.HasPrefix(t, "character"):
		return fmt.Sprintf("column %s is %s, and the column is written as a %s: declare it BIGINT (epoch milliseconds) or make it a timestamp", quoteIdent(c.name), t, c.time)
	}
	return ""
}

// buildDeclaredSQL makes the upsert and the delete of a declared table:
// INSERT ... ON CONFLICT (pk) DO UPDATE SET the other columns [WHERE the
// pane guard], and DELETE ... WHERE pk [AND the pane guard].
func (s *Sink) buildDeclaredSQL() {
	d := s.decl
	qcols := make([]string, len(d.cols))
	params := make([]string, len(d.cols))
	for i, c := range d.cols {
		qcols[i] = quoteIdent(c.name)
		params[i] = fmt.Sprintf("$%d::%s", i+1, c.cast)
	}
	pk := make([]string, len(d.pk))
	for i, at := range d.pk {
		pk[i] = qcols[at]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT INTO %s AS t (%s) VALUES (%s) ON CONFLICT (%s) DO ", s.c.qt, strings.Join(qcols, ", "), strings.Join(params, ", "), strings.Join(pk, ", "))
	var sets []string
	for i, c := range qcols {
		if !slices.Contains(d.pk, i) {
			sets = append(sets, fmt.Sprintf("%s = excluded.%s", c, c))
		}
	}
	if len(sets) == 0 {
		b.WriteString("NOTHING")
	} else {
		b.WriteString("UPDATE SET " + strings.Join(sets, ", "))
		if d.guard {
			run, pane := d.find(srcRun), d.find(srcPane)
			// A row of NULL run or pane (written by another program) is
			// taken as older.
			fmt.Fprintf(&b, " WHERE t.%s IS NULL OR t.%s IS NULL OR (t.%s, t.%s) <= (excluded.%s, excluded.%s)", qcols[run], qcols[pane], qcols[run], qcols[pane], qcols[run], qcols[pane])
		}
	}
	s.upsert = b.String()
	b.Reset()
	fmt.Fprintf(&b, "DELETE FROM %s AS t WHERE ", s.c.qt)
	for i, at := range d.pk {
		if i > 0 {
			b.WriteString(" AND ")
		}
		fmt.Fprintf(&b, "t.%s = $%d::%s", qcols[at], i+1, d.cols[at].cast)
	}
	if d.guard {
		n := len(d.pk)
		run, pane := qcols[d.find(srcRun)], qcols[d.find(srcPane)]
		fmt.Fprintf(&b, " AND (t.%s IS NULL OR t.%s IS NULL OR (t.%s, t.%s) <= ($%d::bigint, $%d::bigint))", run, pane, run, pane, n+1, n+2)
	}
	s.del = b.String()
}

// find is the index of the column of source src (-1: none).
func (d *declared) find(src int) int {
	return slices.IndexFunc(d.cols, func(c dcol) bool { return c.src == src })
}

// args are the arguments of op o's statement: every column's for an
// upsert, the primary key's (and run and pane, with the guard) for a
// retraction.
func (s *Sink) declaredArgs(o op) []any {
	d := s.decl
	nk := len(s.keyNames)
	arg := func(c dcol) any {
		switch c.src {
		case srcKey:
			return textArg(s.cols[o.col+c.at], c.time)
		case srcValue:
			return textArg(s.cols[o.col+nk+c.at], c.time)
		case srcStart:
			return timeArg(o.start, c.time, false)
		case srcEnd:
			return timeArg(o.end, c.time, false)
		case srcTime:
			if o.end == int64(etime.MaxTime) {
				return timeArg(o.end, c.time, false)
			}
			return timeArg(o.end-1, c.time, false)
		case srcFiring:
			return o.firing
		case srcRun:
			return o.run
		case srcPane:
			return o.pane
		}
		return timeArg(o.wm, c.time, true)
	}
	if o.firing == "" {
		args := make([]any, 0, len(d.pk)+2)
		for _, at := range d.pk {
			args = append(args, arg(d.cols[at]))
		}
		if d.guard {
			args = append(args, o.run, o.pane)
		}
		return args
	}
	args := make([]any, len(d.cols))
	for i, c := range d.cols {
		args[i] = arg(c)
	}
	return args
}

// textArg is a key's or value's column text as an argument (nil: NULL),
// a time when format says it is one and the text is an integer.
func textArg(v, format string) any {
	if v == nullText {
		return nil
	}
	if format != "" && format != "ms" {
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
			return timeArg(ms, format, false)
		}
	}
	return v
}

// timeArg is time ms (etime milliseconds) written as format says: epoch
// milliseconds, or the text of a timestamp (UTC), a timestamptz or a
// date; the extremes (the global window's bounds) are -infinity and
// infinity, an infinite watermark (wm) NULL.
func timeArg(ms int64, format string, wm bool) any {
	if format == "" || format == "ms" {
		return ms
	}
	switch {
	case wm && ms == int64(etime.MaxTime):
		return nil
	case ms == int64(etime.MaxTime):
		return "infinity"
	case ms == int64(etime.MinTime):
		return "-infinity"
	}
	t := time.UnixMilli(ms).UTC()
	switch format {
	case "timestamp_ltz":
		return t.Format("2006-01-02 15:04:05.000Z07:00")
	case "date":
		return t.Format("2006-01-02")
	}
	return t.Format("2006-01-02 15:04:05.000")
}
