package sqljob

import (
	"cmp"
	"errors"
	"fmt"
	neturl "net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/sqlparse"
	"github.com/weirstream/weir/internal/suggest"
	"github.com/weirstream/weir/spec"
)

// column finds a table's column by name (nil: none, or no table).
func column(t *sqlparse.CreateTable, name string) *sqlparse.Column {
	if t == nil {
		return nil // a relation that is no table's
	}
	for _, col := range t.Columns {
		if col.Name.Name == name {
			return col
		}
	}
	return nil
}

// source compiles the table a window reads: its connector, its time
// attribute (timeCol, which its watermark must be on) and its watermark.
func (c *compiler) source(rel *relation, viewTime string) (string, error) {
	if err := c.timeAttribute(rel, viewTime); err != nil {
		return "", err
	}
	return c.computed(rel, c.timeAttr)
}

// sourceTable compiles the table a window reads (through a view or
// not): its connector, its time attribute (timeCol, which its watermark
// must be on) and its watermark.
func (c *compiler) sourceTable(t *sqlparse.CreateTable, timeCol string) (err error) {
	s := c.job.Spec
	c.srcTable = t
	c.job.place(s, "source", t.Pos)
	if t.Watermark != nil {
		c.job.place(s, "watermark", t.Watermark.Pos)
	}
	name := tableName(t.Name)
	o := optionsOf(t)
	// weir's timestamp checks (R2), set once the time attribute is:
	// how far ahead of processing time a record's time may be, and
	// whether a record's time is checked at all.
	var maxFuture *spec.Duration
	var checks *bool
	if f := o.take("weir.timestamp.max-future"); f != "" {
		d, derr := flinkDuration(f)
		if derr != nil || d <= 0 {
			return errAt(t.Pos, f, "write a duration such as '1 h' or '30 d'", "table %s: weir.timestamp.max-future '%s' is not a positive duration", name, f)
		}
		maxFuture = &d
	}
	switch f := o.take("weir.timestamp.checks"); f {
	case "":
	case "true", "false":
		b := f == "true"
		checks = &b
	default:
		return errAt(t.Pos, f, "use 'true' or 'false'", "table %s: weir.timestamp.checks takes a boolean", name)
	}
	defer func() {
		if err == nil {
			if maxFuture != nil {
				s.Source.Timestamp.MaxFuture = maxFuture
			}
			if checks != nil {
				s.Source.Timestamp.Checks = checks
			}
		}
		if err == nil {
			// The windows of a TIMESTAMP_LTZ are cut in the zone, as
			// Flink cuts them; a TIMESTAMP's are its wall times' own.
			if c.attrLTZ, err = c.ltzAttr(t, timeCol); c.attrLTZ && c.zone != 0 {
				s.TimeZone = c.zoneName
			}
		}
		if err == nil && timeCol != "" && !c.attrLTZ && c.zone > 0 && s.Source.Timestamp.Source == "" {
			// A TIMESTAMP is a wall time in the session's zone, which
			// reads ahead of the clock by the zone's offset east of UTC:
			// max_future allows for it, or every record of now would be
			// a dead letter (timestamp_future).
			d := spec.Duration(time.Hour / time.Millisecond)
			if maxFuture != nil {
				d = *maxFuture
			}
			d += spec.Duration(c.zone)
			s.Source.Timestamp.MaxFuture = &d
			// Warned of past the offset too.
			w := spec.Duration(spec.WarnAhead) + spec.Duration(c.zone)
			s.Source.Timestamp.WarnAhead = &w
		}
	}()
	connPos := o["connector"].Pos
	switch conn := o.take("connector"); conn {
	case "filesystem":
		s.Source.Type = "file"
		s.Source.Path = o.take("path")
		switch f := o.take("format"); f {
		case "json", "":
			s.Source.Format = "jsonl"
		case "csv":
			// Flink's CSV format maps the columns by position: the
			// table's physical columns name them, and a first row that
			// names them is a header.
			s.Source.Format = "csv"
			for _, col := range t.Columns {
				if col.Computed == nil && !col.Metadata {
					s.Source.CSVColumns = append(s.Source.CSVColumns, col.Name.Name)
				}
			}
		default:
			return errAt(t.Pos, f, "use 'json' or 'csv'", "table %s: format '%s' is not supported", name, f)
		}
	case "generator":
		if err := generator(s, o, name); err != nil {
			return err
		}
	case "kafka":
		if err := kafkaSource(s, o, t); err != nil {
			return err
		}
	case "nexmark":
		if err := nexmarkSource(s, o, t); err != nil {
			return err
		}
	case "nats":
		if err := natsSource(s, o, t); err != nil {
			return err
		}
	case "":
		return errAt(t.Pos, name, "add WITH ('connector' = 'filesystem', 'path' = '...', 'format' = 'json')", "table %s has no 'connector' option", name)
	default:
		known := []string{"filesystem", "kafka", "nexmark", "nats", "generator"}
		return errAt(connPos, conn, suggest.Or(conn, known, "the source connectors are "+strings.Join(known, ", ")), "table %s: connector '%s' is not a source weir compiles", name, conn)
	}
	// weir's own options: parallel channels of a replay file (its lines'
	// $channel), and no final watermark at the end of the input.
	if ch := o.take("weir.channels"); ch != "" {
		n, err := strconv.Atoi(ch)
		if err != nil || n < 1 {
			return errAt(t.Pos, ch, "write a number of channels, such as '2'", "table %s: weir.channels '%s' is not a positive number", name, ch)
		}
		s.Source.Channels = n
	}
	switch f := o.take("weir.final-watermark"); f {
	case "":
	case "true", "false":
		b := f == "true"
		s.Source.FinalWatermark = &b
	default:
		return errAt(t.Pos, f, "use 'true' or 'false'", "table %s: weir.final-watermark takes a boolean", name)
	}
	if err := c.tableWatermarkOptions(o, name); err != nil {
		return err
	}
	if err := typedColumns(s, t); err != nil {
		return err
	}
	// Flink's JSON format reads a number column's value given as a
	// string that holds a number ("12" into a BIGINT) as that number.
	s.Source.NumbersInStrings = true
	known := []string{"connector", "path", "format", "weir.channels", "weir.final-watermark"}
	switch s.Source.Type {
	case "generator":
		known = append(generatorOptions, "connector", "weir.final-watermark")
	case "kafka":
		known = append(kafkaSourceOptions, "connector", "weir.channels")
	case "nexmark":
		known = append(nexmarkOptions, "connector", "weir.final-watermark", "weir.linger")
	case "nats":
		known = append(natsSourceOptions, "connector", "weir.channels")
	}
	if err := o.rest(name, slices.Concat(known, watermarkOptionKeys, timestampOptionKeys)); err != nil {
		return err
	}
	if timeCol == "" {
		// A query without a window over a table without a watermark: its
		// rows take the time they are processed at.
		s.Time = "processing"
		return nil
	}
	col := column(t, timeCol)
	if col == nil {
		hint := "DESCRIPTOR names the table's time attribute, the column of its WATERMARK"
		return errAt(t.Pos, timeCol, hint, "table %s has no column %s", name, timeCol)
	}
	wm := t.Watermark
	if wm == nil || wm.Column.Name != timeCol {
		hint := "add WATERMARK FOR " + timeCol + " AS " + timeCol + " - INTERVAL '5' SECOND to the table"
		if wm != nil {
			// The table has a time attribute: the query named another
			// column (a time's source field, DESCRIPTOR(ts) for rowtime).
			hint = fmt.Sprintf("the table's time attribute is %s, the column of its WATERMARK: write DESCRIPTOR(%s)", wm.Column.Name, wm.Column.Name)
		}
		pos := col.Pos
		if c.descriptor.Name == timeCol {
			pos = c.descriptor.Pos // the query's DESCRIPTOR, not the column
		}
		return errAt(pos, timeCol, hint, "%s is not a time attribute of table %s: it has no watermark", timeCol, name)
	}
	// The time attribute: the Kafka record's timestamp, or
	// TO_TIMESTAMP_LTZ(field, 3 or 0) of a number.
	if col.Metadata && s.Source.Type == "kafka" {
		if key := cmp.Or(col.MetadataKey, col.Name.Name); key != "timestamp" {
			return errAt(col.Pos, key, "read the record time: "+timeCol+" TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'", "table %s: metadata '%s' is not a time weir reads", name, key)
		}
		s.Source.Timestamp = spec.Timestamp{Source: "kafka"}
		return c.watermark(wm, timeCol)
	}
	// TO_TIMESTAMP_LTZ(field, 3 or 0) of a number field is read as the
	// timestamp; another computed column (a CASE of fields, say) or a
	// TIMESTAMP column is a SQL timestamp: text as Flink's JSON writes it,
	// or a number of milliseconds.
	call, ok := col.Computed.(*sqlparse.Call)
	if ok && strings.EqualFold(tableName(call.Name), "TO_TIMESTAMP") {
		// TO_TIMESTAMP(field) of a text 'yyyy-MM-dd HH:mm:ss[.SSS]' (in
		// UTC, weir's only zone): the field read as a SQL timestamp.
		var field *sqlparse.Ref
		isRef := false
		if len(call.Args) > 0 {
			field, isRef = call.Args[0].Value.(*sqlparse.Ref)
		}
		format := "yyyy-MM-dd HH:mm:ss"
		if len(call.Args) == 2 {
			format = ""
			if lit, isLit := call.Args[1].Value.(*sqlparse.Lit); isLit && lit.Kind == "string" {
				format = lit.Text
			}
		}
		if len(call.Args) == 0 || len(call.Args) > 2 {
			return errAt(call.Pos, "TO_TIMESTAMP", "write TO_TIMESTAMP(field) of a text such as '2026-01-01 00:00:05', or TO_TIMESTAMP(field, 'yyyyMMddHHmmss')",
				"TO_TIMESTAMP as a time attribute takes a text and, if it is not in the format 'yyyy-MM-dd HH:mm:ss', its format")
		}
		if !isRef || len(field.Parts) != 1 || format != "yyyy-MM-dd HH:mm:ss" && format != "yyyy-MM-dd HH:mm:ss.SSS" {
			// TO_TIMESTAMP of an expression (FROM_UNIXTIME(sec)), or in
			// a format of its own: a computed field holds the time (the
			// expression's check refuses a format it cannot read), read
			// as a SQL timestamp.
			s.Source.Timestamp = spec.Timestamp{Field: timeCol, Unit: "sql"}
			return c.watermark(wm, timeCol)
		}
		if column(t, field.Parts[0].Name) == nil {
			return errAt(call.Pos, field.Parts[0].Name, "", "table %s has no column %s", name, field.Parts[0].Name)
		}
		c.timeAttr = timeCol // read as the timestamp: no computed field
		s.Source.Timestamp = spec.Timestamp{Field: field.Parts[0].Name, Unit: "sql"}
		return c.watermark(wm, timeCol)
	}
	if !ok || !strings.EqualFold(tableName(call.Name), "TO_TIMESTAMP_LTZ") || len(call.Args) != 2 {
		s.Source.Timestamp = spec.Timestamp{Field: timeCol, Unit: "sql"}
		return c.watermark(wm, timeCol)
	}
	field, ok := call.Args[0].Value.(*sqlparse.Ref)
	prec, ok2 := call.Args[1].Value.(*sqlparse.Lit)
	if ok2 && (prec.Text == "3" || prec.Text == "0") && (!ok || len(field.Parts) != 1) {
		// TO_TIMESTAMP_LTZ of an expression (ts / 1000 of
		// microseconds): a computed field holds the time, read as a SQL
		// timestamp (a number of milliseconds).
		s.Source.Timestamp = spec.Timestamp{Field: timeCol, Unit: "sql"}
		return c.watermark(wm, timeCol)
	}
	if !ok || !ok2 || len(field.Parts) != 1 || prec.Kind != "number" || prec.Text != "3" && prec.Text != "0" {
		return errAt(call.Pos, "TO_TIMESTAMP_LTZ", "write TO_TIMESTAMP_LTZ(field, 3) for milliseconds or TO_TIMESTAMP_LTZ(field, 0) for seconds", "TO_TIMESTAMP_LTZ takes a column and the precision 3 or 0")
	}
	if column(t, field.Parts[0].Name) == nil {
		return errAt(call.Pos, field.Parts[0].Name, "", "table %s has no column %s", name, field.Parts[0].Name)
	}
	c.timeAttr = timeCol // read as the timestamp: no computed field
	s.Source.Timestamp = spec.Timestamp{Field: field.Parts[0].Name, Unit: map[string]string{"3": "ms", "0": "s"}[prec.Text]}
	return c.watermark(wm, timeCol)
}

// typedColumns declares the table's physical columns, and the fields of
// its nested ROWs (by dotted name), as the source's decimals and types,
// so that a record's values are read as Flink's JSON format reads them
// into the columns' types. DECIMAL(p, s) columns are read at their scale
// (a number, or a string that holds one, rounded half up; null beyond
// the precision; a dead letter when no number; DECIMAL is DECIMAL(10, 0)
// and DECIMAL(p) DECIMAL(p, 0), as in Flink); integer, BOOLEAN, STRING
// and DOUBLE columns as spec.Source.Types says.
func typedColumns(s *spec.Spec, t *sqlparse.CreateTable) error {
	var walk func(prefix string, cols []*sqlparse.Column) error
	walk = func(prefix string, cols []*sqlparse.Column) error {
		for _, col := range cols {
			if col.Type == nil || col.Metadata || col.Computed != nil {
				continue
			}
			if col.Type.Name == "ROW" {
				if err := walk(prefix+col.Name.Name+".", col.Type.Fields); err != nil {
					return err
				}
				continue
			}
			if typ := fieldType(col.Type); typ != "" {
				s.Source.Types = append(s.Source.Types, spec.TypedField{Field: prefix + col.Name.Name, Type: typ})
				continue
			}
			t := typeOfSQL(col.Type) // DECIMAL's defaults: (10, 0)
			if t.kind != tDec {
				continue
			}
			p, sc := t.p, t.s
			if p < 1 || p > 38 || sc < 0 || sc > p || len(col.Type.Params) > 2 {
				return errAt(col.Type.Pos, col.Type.Name, "write DECIMAL(p, s) with 1 <= p <= 38 and 0 <= s <= p, such as DECIMAL(10, 2)", "column %s: %s is out of range", prefix+col.Name.Name, sqlparse.FormatType(col.Type))
			}
			s.Source.Decimals = append(s.Source.Decimals, spec.DecimalField{Field: prefix + col.Name.Name, Precision: p, Scale: sc})
		}
		return nil
	}
	return walk("", t.Columns)
}

// fieldType is the source.types type of a column of SQL type t ("": it
// has none, such as DECIMAL, read as a decimal, or TIMESTAMP, read as a
// time).
func fieldType(t *sqlparse.Type) string {
	switch strings.ToUpper(t.Name) {
	case "BIGINT":
		return "bigint"
	case "INT", "INTEGER":
		return "int"
	case "SMALLINT":
		return "smallint"
	case "TINYINT":
		return "tinyint"
	case "BOOLEAN":
		return "boolean"
	case "STRING", "VARCHAR", "CHAR":
		return "string"
	case "DOUBLE":
		return "double"
	case "FLOAT", "REAL":
		return "float"
	}
	return ""
}

// watermark compiles the table's WATERMARK on timeCol.
func (c *compiler) watermark(wm *sqlparse.Watermark, timeCol string) error {
	s := c.job.Spec
	// The watermark: the source's own (SOURCE_WATERMARK(): a replay's
	// $watermark lines), the attribute itself, or minus an interval.
	if call, ok := wm.Expr.(*sqlparse.Call); ok && strings.EqualFold(tableName(call.Name), "SOURCE_WATERMARK") && len(call.Args) == 0 {
		s.Watermark.Type = "punctuated"
		return nil
	}
	// Flink SQL's watermark is the expression itself: the largest
	// timestamp minus the interval, where the spec's bound takes 1 ms
	// more (Flink's DataStream strategy); without an interval it is the
	// largest timestamp, strictly_ascending.
	bound := spec.Duration(0)
	switch e := wm.Expr.(type) {
	case *sqlparse.Ref:
		if len(e.Parts) != 1 || e.Parts[0].Name != timeCol {
			return errAt(wm.Pos, "", "write WATERMARK FOR "+timeCol+" AS "+timeCol+" - INTERVAL '5' SECOND", "the watermark is %s minus an interval", timeCol)
		}
	case *sqlparse.Binary:
		ref, ok := e.X.(*sqlparse.Ref)
		iv, ok2 := e.Y.(*sqlparse.Interval)
		if e.Op != "-" || !ok || !ok2 || len(ref.Parts) != 1 || ref.Parts[0].Name != timeCol {
			return errAt(wm.Pos, "", "write WATERMARK FOR "+timeCol+" AS "+timeCol+" - INTERVAL '5' SECOND", "the watermark is %s minus an interval", timeCol)
		}
		d, err := intervalDuration(iv)
		if err != nil {
			return err
		}
		bound = *d
	default:
		return errAt(wm.Pos, "", "write WATERMARK FOR "+timeCol+" AS "+timeCol+" - INTERVAL '5' SECOND", "the watermark is %s minus an interval", timeCol)
	}
	if bound <= 0 {
		s.Watermark.Type = "strictly_ascending"
		return nil
	}
	bound-- // milliseconds
	s.Watermark.Type = "bounded_out_of_orderness"
	s.Watermark.MaxOutOfOrderness = &bound
	return nil
}

// sink compiles the table results go to.
func (c *compiler) sink(t *sqlparse.CreateTable) (*spec.Sink, error) {
	k, err := sinkOf(t, "results")
	if err != nil {
		return nil, err
	}
	c.job.Spec.Sinks.Results = append(c.job.Spec.Sinks.Results, k)
	c.job.place(c.job.Spec, "sinks.results", t.Pos)
	return k, nil
}

// sinkOf compiles table t as a sink of output (results, or the SET key
// that names it for late rows and dead letters): filesystem (a JSON lines
// file), print (stdout), jdbc with a SQLite url (results), or weir's
// ledger (late rows).
func sinkOf(t *sqlparse.CreateTable, output string) (*spec.Sink, error) {
	name := tableName(t.Name)
	o := optionsOf(t)
	k := &spec.Sink{}
	known := []string{"connector"}
	results := output == "results"
	connPos, formatPos := o["connector"].Pos, o["format"].Pos
	switch conn := o.take("connector"); {
	case conn == "filesystem":
		k.Type, k.Path = "jsonl", o.take("path")
		if f := o.take("format"); f != "" && f != "json" {
			return nil, errAt(formatPos, f, "use 'json'", "table %s: a sink file is written as json", name)
		}
		known = append(known, "path", "format")
	case conn == "jdbc":
		url := o.take("url")
		if path, ok := strings.CutPrefix(url, "jdbc:sqlite:"); ok && results {
			k.Type, k.Path = "sqlite", path
		} else if ok {
			return nil, errAt(t.Pos, url, "use a filesystem table, or Postgres", "table %s: a SQLite table holds results only", name)
		} else if pg, ok := postgresURL(url, o.take("username"), o.take("password")); ok {
			k.Type, k.URL = "postgres", pg
		} else {
			return nil, errAt(t.Pos, url, "write 'jdbc:sqlite:results.db' or 'jdbc:postgresql://host:5432/db'", "table %s: url '%s' is neither SQLite's nor Postgres's", name, url)
		}
		if k.Table = o.take("table-name"); k.Table == "" {
			// Flink's JDBC connector requires it; a default would put
			// the rows where no one looks for them.
			return nil, errAt(connPos, conn, "add 'table-name' = '"+strings.ToLower(name)+"' to its WITH options", "table %s: a jdbc table needs 'table-name', the database table it writes", name)
		}
		if k.Type == "postgres" {
			k.Table = postgresName(k.Table)
		}
		known = append(known, "url", "table-name", "username", "password", "weir.layout")
		switch l := o.take("weir.layout"); {
		case l == "" || l == "weir":
		case l == spec.LayoutDeclared && k.Type == "postgres" && results:
			k.Layout = l
		case l == spec.LayoutDeclared:
			return nil, errAt(t.Pos, l, "remove it", "table %s: 'weir.layout' = 'declared' is a Postgres results table's", name)
		default:
			return nil, errAt(t.Pos, l, "use 'weir' (weir's own columns, the default) or 'declared' (the table's columns, as Flink writes them)", "table %s: 'weir.layout' = '%s' is not a layout", name, l)
		}
	case conn == "kafka" || conn == "upsert-kafka":
		// weir's Kafka results are keyed by key and window, exactly once
		// with checkpoints: kafka and upsert-kafka alike.
		k.Type, k.Topic = "kafka", o.take("topic")
		k.Brokers = splitList(o.take("properties.bootstrap.servers"))
		for _, key := range []string{"format", "value.format", "key.format"} {
			if f := o.take(key); f != "" && f != "json" {
				return nil, errAt(t.Pos, f, "use 'json'", "table %s: %s '%s': weir writes JSON", name, key, f)
			}
		}
		if g := o.take("sink.delivery-guarantee"); g != "" && g != "exactly-once" {
			return nil, errAt(t.Pos, g, "remove it: weir writes exactly once with checkpoints", "table %s: sink.delivery-guarantee '%s'", name, g)
		}
		o.take("sink.transactional-id-prefix")
		known = append(known, "topic", "properties.bootstrap.servers", "format", "value.format", "key.format", "sink.delivery-guarantee", "sink.transactional-id-prefix")
	case conn == "print":
		k.Type = "stdout"
	case conn == "blackhole":
		k.Type = "blackhole"
	case conn == "nats":
		// Results, late rows or dead letters published to a JetStream
		// subject, a message id per row, as the YAML nats sink.
		k.Type, k.URL, k.Subject = "nats", o.take("url"), o.take("subject")
		if f := o.take("format"); f != "" && f != "json" {
			return nil, errAt(formatPos, f, "use 'json'", "table %s: a NATS message is written as json", name)
		}
		known = append(known, "url", "subject", "format")
	case conn == "ledger" && (output == lateKey || output == latePartialKey):
		k.Type, k.Dir = "ledger", o.take("dir")
		known = append(known, "dir", "retention")
		pos := o["retention"].Pos
		if r := o.take("retention"); r != "" {
			d, err := flinkDuration(r)
			if err != nil {
				return nil, errAt(pos, r, "write a duration such as '30 d'", "table %s: retention: %v", name, err)
			}
			k.Retention = &d
		}
	default:
		use := "filesystem, jdbc, kafka, upsert-kafka, nats, print or blackhole"
		switch output {
		case lateKey, latePartialKey:
			use = "ledger (what weir backfill folds back), filesystem, kafka, nats, jdbc (Postgres), print or blackhole"
		case deadLetterKey:
			use = "filesystem, kafka, nats, jdbc (Postgres), print or blackhole"
		}
		known := []string{"filesystem", "jdbc", "kafka", "upsert-kafka", "nats", "print", "blackhole", "ledger"}
		hint := "use " + use
		if !slices.Contains(known, conn) {
			hint = suggest.Or(conn, known, hint)
		}
		return nil, errAt(connPos, conn, hint, "table %s: connector '%s' is not compiled as a sink of %s", name, conn, output)
	}
	if err := o.rest(name, known); err != nil {
		return nil, err
	}
	return k, nil
}

// generatorOptions are the options of weir's generator of orders.
var generatorOptions = []string{"records", "rate", "keys", "duration", "start", "disorder", "bad", "seed"}

// generator compiles weir's generator of orders ({order_id, user_id,
// amount, ts}): its options are the YAML generator's, durations as
// Flink's configuration writes them, and disorder as bands
// 'share:min-max' separated by commas ('0.9:0s-10s,0.1:1min-15min').
func generator(s *spec.Spec, o options, table string) error {
	s.Source.Type = "generator"
	g := &spec.Generator{}
	s.Source.Generator = g
	for _, key := range generatorOptions {
		op, ok := o[key]
		if !ok {
			continue
		}
		v := o.take(key)
		var err error
		want := "a whole number"
		switch key {
		case "records":
			g.Records, err = strconv.ParseInt(v, 10, 64)
		case "keys":
			g.Keys, err = strconv.Atoi(v)
		case "seed":
			g.Seed, err = strconv.ParseUint(v, 10, 64)
		case "rate", "bad":
			want = "a number"
			f := &g.Rate
			if key == "bad" {
				f = &g.Bad
			}
			*f, err = strconv.ParseFloat(v, 64)
		case "duration":
			want = "a duration, such as '1 h'"
			var d spec.Duration
			d, err = flinkDuration(v)
			g.Duration = &d
		case "start":
			g.Start = v
		case "disorder":
			want = "bands share:min-max, such as '0.9:0s-10s,0.1:1min-15min'"
			g.Disorder, err = disorder(v)
		}
		if err != nil {
			return errAt(op.Pos, v, "write "+want, "table %s: %s '%s' is not %s", table, key, v, want)
		}
	}
	return nil
}

// disorder reads the generator's disorder bands, 'share:min-max,...'.
func disorder(v string) ([]spec.DelayBand, error) {
	var bands []spec.DelayBand
	for _, band := range strings.Split(v, ",") {
		share, span, ok1 := strings.Cut(band, ":")
		lo, hi, ok2 := strings.Cut(span, "-")
		f, err := strconv.ParseFloat(strings.TrimSpace(share), 64)
		dlo, err1 := flinkDuration(lo)
		dhi, err2 := flinkDuration(hi)
		if !ok1 || !ok2 || err != nil || err1 != nil || err2 != nil {
			return nil, errors.New("not bands")
		}
		bands = append(bands, spec.DelayBand{Share: f, Min: &dlo, Max: &dhi})
	}
	return bands, nil
}

// kafkaSourceOptions are the options of a Kafka source table, Flink's.
var kafkaSourceOptions = []string{"topic", "properties.bootstrap.servers", "properties.group.id", "scan.startup.mode",
	"scan.startup.timestamp-millis", "scan.bounded.mode", "format", "value.format"}

// kafkaSource compiles a Kafka source table with Flink's options.
func kafkaSource(s *spec.Spec, o options, t *sqlparse.CreateTable) error {
	name := tableName(t.Name)
	k := &spec.KafkaSource{}
	s.Source.Type, s.Source.Kafka = "kafka", k
	k.Topic = o.take("topic")
	k.Brokers = splitList(o.take("properties.bootstrap.servers"))
	k.Group = o.take("properties.group.id")
	for _, key := range []string{"format", "value.format"} {
		if f := o.take(key); f != "" && f != "json" {
			return errAt(t.Pos, f, "use 'json'", "table %s: %s '%s': weir reads JSON", name, key, f)
		}
	}
	pos := o["scan.startup.mode"].Pos
	ms := o.take("scan.startup.timestamp-millis")
	switch mode := o.take("scan.startup.mode"); mode {
	case "", "earliest-offset":
	case "latest-offset":
		k.Start = "latest"
	case "group-offsets":
		k.Start = "committed"
	case "timestamp":
		n, err := strconv.ParseInt(ms, 10, 64)
		if err != nil {
			return errAt(pos, mode, "add 'scan.startup.timestamp-millis' = '1767225600000'", "table %s: scan.startup.mode 'timestamp' needs scan.startup.timestamp-millis", name)
		}
		k.Start = time.UnixMilli(n).UTC().Format(time.RFC3339Nano)
	default:
		return errAt(pos, mode, "use earliest-offset, latest-offset, group-offsets or timestamp", "table %s: scan.startup.mode '%s' is not supported", name, mode)
	}
	pos = o["scan.bounded.mode"].Pos
	switch mode := o.take("scan.bounded.mode"); mode {
	case "", "unbounded":
	case "latest-offset":
		k.StopAtEnd = true
	default:
		return errAt(pos, mode, "use unbounded or latest-offset (the end each partition had at start)", "table %s: scan.bounded.mode '%s' is not supported", name, mode)
	}
	return nil
}

// natsSourceOptions are the options of a NATS JetStream source table,
// weir's own (Flink has no NATS connector): the YAML source's.
var natsSourceOptions = []string{"url", "stream", "subjects", "start", "stop-at-end", "format"}

// natsSource compiles a NATS JetStream source table: url (default
// nats://127.0.0.1:4222), stream, subjects (a comma-separated list,
// wildcards allowed), start (earliest, a stream sequence or an RFC 3339
// time) and stop-at-end ('true': end at the stream's last message at
// start).
func natsSource(s *spec.Spec, o options, t *sqlparse.CreateTable) error {
	name := tableName(t.Name)
	n := &spec.NATSSource{URL: o.take("url"), Stream: o.take("stream"), Subjects: splitList(o.take("subjects")), Start: o.take("start")}
	s.Source.Type, s.Source.NATS = "nats", n
	if f := o.take("format"); f != "" && f != "json" {
		return errAt(t.Pos, f, "use 'json'", "table %s: format '%s': weir reads JSON", name, f)
	}
	pos := o["stop-at-end"].Pos
	switch v := o.take("stop-at-end"); v {
	case "", "false":
	case "true":
		n.StopAtEnd = true
	default:
		return errAt(pos, v, "use 'true' or 'false'", "table %s: stop-at-end takes a boolean", name)
	}
	return nil
}

// splitList splits a comma-separated list.
func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// postgresName is a jdbc table-name as Postgres reads the name Flink's
// JDBC sink writes into its statements unquoted: folded to lower case
// (trialA_stats is triala_stats); one in double quotes ('"Stats"') keeps
// its case. A schema and a table (Analytics.Stats, "A".b) are each read
// so.
func postgresName(name string) string {
	var parts []string
	for rest := name; ; {
		part := rest
		if len(rest) > 0 && rest[0] == '"' {
			// A quoted part runs to its closing quote ("" is a quote).
			i := 1
			for i < len(rest) && (rest[i] != '"' || i+1 < len(rest) && rest[i+1] == '"') {
				if rest[i] == '"' {
					i++
				}
				i++
			}
			part = rest[:min(i+1, len(rest))]
		} else if j := strings.IndexByte(rest, '.'); j >= 0 {
			part = rest[:j]
		}
		if len(part) >= 2 && part[0] == '"' && part[len(part)-1] == '"' {
			parts = append(parts, strings.ReplaceAll(part[1:len(part)-1], `""`, `"`))
		} else {
			parts = append(parts, strings.ToLower(part))
		}
		rest = rest[len(part):]
		if !strings.HasPrefix(rest, ".") || len(parts) == 2 {
			if rest != "" {
				return name // not a name weir can read: the table check says so
			}
			return strings.Join(parts, ".")
		}
		rest = rest[1:]
	}
}

// postgresURL turns Flink's jdbc:postgresql://host:port/db URL, with its
// username and password options, into a Postgres connection string.
func postgresURL(url, user, password string) (string, bool) {
	rest, ok := strings.CutPrefix(url, "jdbc:postgresql://")
	if !ok {
		return "", false
	}
	u := &neturl.URL{Scheme: "postgres", Host: rest}
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		u.Host = rest[:i]
		path, query, _ := strings.Cut(rest[i:], "?")
		u.Path, u.RawQuery = path, query
	}
	if user != "" {
		u.User = neturl.UserPassword(user, password)
		if password == "" {
			u.User = neturl.User(user)
		}
	}
	return u.String(), true
}

// timeAttribute resolves the query's time column viewTime, a column of
// rel, to its table's time attribute (a view passes it through under
// its name or another), and compiles the table.
func (c *compiler) timeAttribute(rel *relation, viewTime string) error {
	c.timeAttr, c.attrLTZ = "", false // this source's, if any, are set by sourceTable
	if viewTime == "" {
		return c.sourceTable(rel.table, "")
	}
	col := rel.col(viewTime)
	timeCol := viewTime
	if col != nil && isProctime(col.expr) {
		return c.sourceTable(rel.table, "") // processing time
	}
	if col != nil && col.expr != nil {
		ref, ok := col.expr.(*sqlparse.Ref)
		if !ok || len(ref.Parts) != 1 {
			return errAt(col.pos, viewTime, "select the table's time attribute in the view as it is", "view %s: column %s is no time attribute", rel.name, viewTime)
		}
		timeCol = ref.Parts[0].Name
	}
	if tc := column(rel.table, timeCol); tc != nil && isProctime(tc.Computed) {
		timeCol = "" // processing time
	}
	return c.sourceTable(rel.table, timeCol)
}

// nexmarkOptions are the Nexmark project's options of its Flink source.
var nexmarkOptions = []string{"events.num", "first-event.rate", "next-event.rate", "person.proportion", "auction.proportion", "bid.proportion"}

// nexmarkSource compiles the Nexmark project's source table: weir's
// generator is Beam's, at one rate and in Beam's proportions 1:3:46
// (the project's defaults), which the options may state but not change.
func nexmarkSource(s *spec.Spec, o options, t *sqlparse.CreateTable) error {
	name := tableName(t.Name)
	n := &spec.NexmarkSource{}
	s.Source.Type, s.Source.Nexmark = "nexmark", n
	num := func(key string) (int64, error) {
		pos := o[key].Pos
		v := o.take(key)
		if v == "" {
			return 0, nil
		}
		i, err := strconv.ParseInt(v, 10, 64)
		if err != nil || i < 0 {
			return 0, errAt(pos, v, "write a whole number", "table %s: %s '%s' is not a whole number", name, key, v)
		}
		return i, nil
	}
	var err error
	if n.Events, err = num("events.num"); err != nil {
		return err
	}
	first, err := num("first-event.rate")
	if err != nil {
		return err
	}
	next, err := num("next-event.rate")
	if err != nil {
		return err
	}
	if first != 0 && next != 0 && first != next {
		return errAt(t.Pos, name, "give first-event.rate and next-event.rate the same value", "table %s: weir's Nexmark generator has one rate", name)
	}
	n.Rate = cmp.Or(first, next)
	if op, ok := o["weir.linger"]; ok {
		// weir's: processing-time windows open at the end fire (J2).
		d, err := flinkDuration(o.take("weir.linger"))
		if err != nil {
			return errAt(op.Pos, op.Value, "write a duration such as '11 s'", "table %s: weir.linger: %v", name, err)
		}
		n.Linger = &d
	}
	for key, want := range map[string]int64{"person.proportion": 1, "auction.proportion": 3, "bid.proportion": 46} {
		pos := o[key].Pos
		if v, err := num(key); err != nil {
			return err
		} else if v != 0 && v != want {
			return errAt(pos, strconv.FormatInt(v, 10), "leave the proportions at 1, 3 and 46, or out", "table %s: weir's Nexmark generator is Beam's, in proportions 1:3:46", name)
		}
	}
	return nil
}

// timestampOptionKeys are weir's checks of a record's time, which every
// source table takes (sourceTable).
var timestampOptionKeys = []string{"weir.timestamp.max-future", "weir.timestamp.checks"}

// watermarkOptionKeys are Flink's per-table watermark options and the
// JSON format's error options, which a source table may give.
var watermarkOptionKeys = []string{"scan.watermark.idle-timeout", "scan.watermark.emit.strategy", "scan.watermark.alignment.group",
	"scan.watermark.alignment.max-drift", "scan.watermark.alignment.update-interval", "json.ignore-parse-errors", "json.fail-on-missing-field"}

// tableWatermarkOptions compiles Flink's per-table watermark options
// (they win over the SET keys, as Flink's do): the idle timeout, the
// emit strategy (on-event: a watermark after every record) and
// alignment (weir aligns the partitions of its one source by their
// drift: the group names nothing more). The JSON format's error options
// change nothing: weir keeps what it cannot read as dead letters, said
// in a warning.
func (c *compiler) tableWatermarkOptions(o options, table string) error {
	s := c.job.Spec
	for _, key := range watermarkOptionKeys {
		op, ok := o[key]
		if !ok {
			continue
		}
		v := o.take(key)
		dur := func() (*spec.Duration, error) {
			d, err := flinkDuration(v)
			if err != nil {
				return nil, errAt(op.Pos, v, "write a duration such as '30 s'", "table %s: %s: %v", table, key, err)
			}
			return &d, nil
		}
		var err error
		switch key {
		case "scan.watermark.idle-timeout":
			s.Watermark.IdleTimeout, err = dur()
		case "scan.watermark.alignment.max-drift":
			s.Watermark.MaxDrift, err = dur()
		case "scan.watermark.emit.strategy":
			switch v {
			case "on-event":
				s.Watermark.Emit = "every_record"
			case "on-periodic":
				s.Watermark.Emit = "periodic"
			default:
				return errAt(op.Pos, v, "use on-event or on-periodic", "table %s: %s '%s' is not a strategy", table, key, v)
			}
		case "scan.watermark.alignment.update-interval":
			c.job.Warnings = append(c.job.Warnings, fmt.Sprintf("%s: table %s: %s is not read: weir checks a partition's drift at every watermark", op.Pos, table, key))
		case "json.ignore-parse-errors", "json.fail-on-missing-field":
			c.job.Warnings = append(c.job.Warnings, fmt.Sprintf("%s: table %s: %s is not read: weir sends what it cannot read to dead letters (SET 'weir.dead-letter.sink') and counts it, neither failing the job nor dropping it unseen", op.Pos, table, key))
		}
		if err != nil {
			return err
		}
	}
	return nil
}
