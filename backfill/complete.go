package backfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fastjson"
	"github.com/weirstream/weir"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/sqliteio"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/jsonnum"
	"github.com/weirstream/weir/internal/outfmt"
	"github.com/weirstream/weir/internal/record"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/spec"
	"github.com/weirstream/weir/window"
)

// Answer is the complete answer of a job: every record of its input
// grouped by key and window with its aggregates, without watermarks (a
// batch group-by), which is what its results hold once every late record
// is in them.
type Answer struct {
	// Records aggregated, and Bad input lines (dead letters).
	Records, Bad int64
	// rows are the aggregates by row identity (rowID).
	rows map[string][]string
}

// Windows is the number of (key, window) rows of the answer.
func (a *Answer) Windows() int { return len(a.rows) }

// Complete computes the complete answer of a job whose source can be
// read again (a generator or a file) and whose windows are tumbling or
// sliding, reading the source from the start. CheckComplete says,
// without reading anything, whether it can.
func Complete(p *spec.Plan, dir string) (*Answer, error) {
	if err := CheckComplete(p, dir); err != nil {
		return nil, err
	}
	// A generator or a file: reads that do not wait, with nothing to cancel.
	ctx := context.Background()
	never := func() bool { return false }
	always := func() bool { return true }
	opened, _, err := job.OpenSource(ctx, p, job.RunOptions{Dir: dir}, job.SourceHooks{Clock: clock.Real{}, Final: always, Stop: never, Unpaced: true})
	if err != nil {
		return nil, err
	}
	src := opened.Source
	keys, err := keyTexter(ctx, p, dir)
	if err != nil {
		return nil, err
	}
	agg := record.NewAggregator(p, false)
	dec := record.NewDecoder(p, clock.Real{})
	var bounds *record.Having // a having of the bounds alone (CheckComplete)
	if p.Having != "" {
		bounds = record.NewHaving(&spec.WindowOp{Key: p.Key, Aggregates: p.Aggregates, Having: p.Having}, nil)
	}
	accs := map[string]*record.Acc{}
	a := &Answer{rows: map[string][]string{}}
	var wins []window.Window
	out := &collectLines{}
	for ch := range p.Channels {
		r, err := src.Open(ctx, ch, p.Channels)
		if err != nil {
			return nil, err
		}
		for {
			st, err := r.Read(ctx, out)
			for _, l := range out.lines {
				switch l.Kind {
				case connector.Data:
				case connector.Bad:
					a.Bad++
					continue
				default:
					continue
				}
				rec, derr := dec.Decode(l)
				if derr != nil {
					a.Bad++
					continue
				}
				if rec.Filtered { // the job's where drops it
					continue
				}
				a.Records++
				wins, err = p.Assigner.AssignWindows(rec.TS, wins[:0])
				if err != nil {
					a.Bad++
					continue
				}
				for _, w := range wins {
					if bounds != nil && !bounds.KeepWindow([]etime.Time{w.Start, w.End, w.MaxTimestamp()}) {
						continue
					}
					id := rowID(p, keys, rec.Key, w)
					ac := accs[id]
					if ac == nil {
						ac = agg.CreateAccumulator()
						accs[id] = ac
					}
					agg.Add(ac, rec)
				}
			}
			out.lines = out.lines[:0]
			a.Bad += out.dead
			out.dead = 0
			if err != nil {
				r.Close()
				return nil, err
			}
			if st == weir.Done {
				break
			}
			if st == weir.Waiting {
				time.Sleep(time.Millisecond)
			}
		}
		if err := r.Close(); err != nil {
			return nil, err
		}
	}
	log := revision(p) == connector.ReviseLog
	casts := outfmt.Casts(p, outfmt.Columns(p)) // as the results show them
	for id, ac := range accs {
		agg.CollectInInputOrder(ac)
		vals := record.SplitResult(agg.Result(ac), len(agg.Fns))
		for i, v := range vals {
			vals[i] = valueCanonical(log, outfmt.AppendCast(nil, casts, i, []byte(v)))
		}
		a.rows[id] = vals
	}
	return a, nil
}

// rowID identifies a results row of the answer: its key values (the
// decoder's canonical texts), as the job's results store them
// (keyText), and its window.
func rowID(p *spec.Plan, keyText func([]byte) string, key string, w window.Window) string {
	keys := outfmt.SplitKey(key, len(p.Key))
	for i, k := range keys {
		keys[i] = keyText([]byte(k))
	}
	return rowIdentity(keys, strconv.FormatInt(int64(w.Start), 10), strconv.FormatInt(int64(w.End), 10))
}

// rowIdentity is the one form of a row's identity the answer and the
// results it is compared with share: the canonical texts of its key
// values, then its window's start and end in ms.
func rowIdentity(keys []string, start, end string) string {
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('|')
	}
	b.WriteString(start)
	b.WriteByte(',')
	b.WriteString(end)
	return b.String()
}

// keyTexter returns how a key value (canonical JSON) reads as the job's
// results keep it, with its type (valueText), for comparing: in a results
// table, as its kind stores a key (connector.SQLDialect.Arg: in Postgres
// the text of a text column, where the string "7" and the number 7 are
// one key); in a log, as a JSON value (sqlCanonical).
func keyTexter(ctx context.Context, p *spec.Plan, dir string) (func([]byte) string, error) {
	if revision(p) != connector.ReviseTable {
		return sqlCanonical, nil
	}
	t, err := planTable(ctx, p, dir, false)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	dia := t.Dialect
	return func(k []byte) string {
		x, err := dia.Arg(connector.Text, k, true) // key columns are text (connector.TableColumns)
		if err != nil {
			return "invalid " + string(k)
		}
		return valueText(x)
	}, nil
}

// valueCanonical renders an aggregate's JSON value as the job's results
// keep it, for comparing: as sqlCanonical for SQL tables (a REAL keeps
// 15 digits), and a number with a fraction or beyond int64 as its exact
// text for results in a log (a file, a topic: log), which keep the text
// (a decimal sum is then compared digit for digit).
func valueCanonical(log bool, v []byte) string {
	if log && isNumberText(string(v)) {
		if _, err := strconv.ParseInt(string(v), 10, 64); err != nil {
			return "number:" + string(v)
		}
	}
	return sqlCanonical(v)
}

// sqlCanonical renders a JSON value as the SQLite sink stores it once it
// is written canonically, so that the answer, a results file and a
// table compare as the table would.
func sqlCanonical(v []byte) string {
	x, err := sqlValue(v)
	if err != nil {
		return "invalid " + string(v)
	}
	return valueText(x)
}

// sqlValue is the SQLite value of a JSON value written canonically (as
// the live job writes keys; jsonb writes numbers and orders object
// members its own way).
func sqlValue(v []byte) (any, error) {
	c, err := CanonicalJSON(v)
	if err != nil {
		return nil, err
	}
	return sqliteio.Value(c)
}

// CanonicalJSON is a JSON value's text written canonically, as the job
// writes key values (numbers exactly in one form, object members sorted
// by name and a repeated member's last value, no spaces), so two texts
// of one value are equal bytes.
func CanonicalJSON(v []byte) ([]byte, error) {
	x, err := fastjson.ParseBytes(v)
	if err != nil {
		return nil, err
	}
	return record.AppendCanonical(nil, x), nil
}

// valueText is a value as the SQLite driver gives it, with its type, so
// that 1 and "1" differ: a number (INTEGER, REAL, or a BLOB of its
// canonical text) as its canonical text, so that an INTEGER and a REAL
// of one number are equal, as SQLite compares them.
func valueText(v any) string {
	switch x := v.(type) {
	case int64:
		return "number:" + strconv.FormatInt(x, 10)
	case float64:
		return "number:" + string(jsonnum.AppendCanonical(nil, strconv.AppendFloat(nil, x, 'g', -1, 64)))
	case []byte:
		return "number:" + string(x)
	}
	return fmt.Sprintf("%T:%v", v, v)
}

// shown is a row identity or value without its type prefixes (they keep
// 1 and "1" apart when comparing).
func shown(s string) string {
	parts := strings.Split(s, "|")
	for i, p := range parts {
		if _, v, ok := strings.Cut(p, ":"); ok {
			parts[i] = v
		}
	}
	return strings.Join(parts, " ")
}

func shownRow(vals []string, ok bool) string {
	if !ok {
		return "no row"
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = shown(v)
	}
	return "[" + strings.Join(out, " ") + "]"
}

// CheckComplete returns why the complete answer of the job (its spec's
// directory dir) cannot be computed, or nil if Complete can compute it:
// event time, tumbling or sliding windows, and a source it can read
// again from the start (a generator, or a file that is there; not stdin,
// Kafka or NATS). It reads nothing but the file's metadata, so a caller
// that writes before it computes the answer (weir backfill --verify)
// asks first and writes nothing when it cannot.
func CheckComplete(p *spec.Plan, dir string) error {
	s := p
	if err := oneWindow(p); err != nil {
		return err
	}
	if p.Time != spec.EventTime {
		return fmt.Errorf("the complete answer is computed for event time; this job uses %s time", p.Time)
	}
	if t := p.WindowKind; t != spec.Tumbling && t != spec.Sliding {
		return fmt.Errorf("the complete answer is computed for tumbling and sliding windows, not %s", t)
	}
	if p.Having != "" && !spec.BoundsOnly(p.Having) {
		return fmt.Errorf("the complete answer is computed for a having of the window's bounds alone, not %s", p.Having)
	}
	reg := s.Kinds()
	t := s.Source.Type
	if k, ok := reg.Lookup(t); ok && k.Source != nil && k.Source.Replay != nil {
		if err := k.Source.Replay(spec.SourceSettings(p), job.RunOptions{Dir: dir}.Path); err != nil {
			return err
		}
		if revision(p) == connector.ReviseLog {
			// The comparison reads the results log: one that is not
			// there is said before a backfill appends to it.
			return logReadable(p, dir)
		}
		return nil
	}
	var replays []string
	for _, k := range reg.Kinds() {
		if k.Source != nil && k.Source.Replay != nil {
			replays = append(replays, k.Name)
		}
	}
	return fmt.Errorf("the complete answer reads every input record again, and a %s source cannot be read again (weir reads again from %s); save the input to a file and verify with a copy of the spec whose source is {type: file, path: ...}, or leave out --verify", t, strings.Join(replays, " or "))
}

// logReadable reads the first line of the job's results log (none, when
// it is empty), to tell one that is not there.
func logReadable(p *spec.Plan, dir string) error {
	ctx := context.Background()
	st, err := openPlanStore(ctx, p, dir, false)
	if err != nil {
		return err
	}
	defer st.Close()
	l, ok := st.(connector.LogStore)
	if !ok {
		return fmt.Errorf("sinks.results: kind %s keeps no log of results", p.Sinks.Primary().Type)
	}
	errFirst := errors.New("first line")
	if err := l.Scan(ctx, func([]byte) error { return errFirst }); err != nil && !errors.Is(err, errFirst) {
		return err
	}
	return nil
}

// collectLines is a SourceOutput that keeps what a reader emits.
type collectLines struct {
	lines []connector.Line
	dead  int64
}

func (c *collectLines) Emit(_ etime.Time, l connector.Line) { c.lines = append(c.lines, l) }
func (c *collectLines) EmitWatermark(etime.Time)            {}
func (c *collectLines) MarkIdle()                           {}
func (c *collectLines) MarkActive()                         {}
func (c *collectLines) DeadLetter(string, string, any)      { c.dead++ }

// Compare compares the job's results with the answer and returns the
// rows that differ (at most limit of them, described) and their number.
func (a *Answer) Compare(p *spec.Plan, dir string, limit int) ([]string, int, error) {
	c, err := a.CompareRevised(p, dir, limit, nil)
	return c.Diffs, c.N, err
}

// Comparison is what CompareRevised found.
type Comparison struct {
	// Diffs describes at most limit of the N windows that differ.
	Diffs []string
	N     int
	// Earlier counts the windows of the answer whose rows are of earlier
	// runs of the job (kept beside the newest run's by --append): made
	// from input this run did not read, they are not compared.
	Earlier int
}

// CompareRevised is Compare of the results as revisions would leave them
// (a dry run's: BackfillReport.Revisions): each revised window's values
// in place of the stored ones. Only the rows of the job's newest run are
// compared: a window whose row is of an earlier run is left out on both
// sides (Comparison.Earlier), whether or not a revision touches it.
func (a *Answer) CompareRevised(p *spec.Plan, dir string, limit int, revisions []Revision) (Comparison, error) {
	var got map[string][]string
	var earlier map[string]bool
	var newest int64
	var err error
	log := revision(p) == connector.ReviseLog
	casts := outfmt.Casts(p, outfmt.Columns(p))
	if log {
		got, earlier, newest, err = latestResults(p, dir)
	} else {
		got, earlier, newest, err = tableRows(p, dir)
	}
	if err != nil {
		return Comparison{}, err
	}
	// An aggregate that no column of the results shows (one an
	// expression column computes from: SUM(x) / COUNT(*)) cannot be read
	// back, and is compared as "" on both sides.
	var unshown []int // the aggregates no column shows, by index
	if cols := outfmt.Columns(p); log && len(cols) > 0 {
		for i, ag := range p.Aggregates {
			if outfmt.ColumnOf(cols, ag.Name) == nil {
				unshown = append(unshown, i)
			}
		}
	}
	hidden := func(row []string) []string {
		if len(unshown) == 0 {
			return row
		}
		out := slices.Clone(row)
		for _, i := range unshown {
			if i < len(out) {
				out[i] = ""
			}
		}
		return out
	}
	if len(revisions) > 0 {
		keyText, err := keyTexter(context.Background(), p, dir)
		if err != nil {
			return Comparison{}, err
		}
		for _, r := range revisions {
			keys := make([]string, len(r.Key))
			for i, k := range r.Key {
				c, err := CanonicalJSON(k)
				if err != nil {
					return Comparison{}, err
				}
				keys[i] = keyText(c)
			}
			vals := make([]string, len(r.Values))
			for i, v := range r.Values {
				vals[i] = valueCanonical(log, outfmt.AppendCast(nil, casts, i, []byte(v)))
			}
			id := rowIdentity(keys, strconv.FormatInt(r.Start, 10), strconv.FormatInt(r.End, 10))
			switch {
			case r.Run < newest:
				// A first revision of an earlier run's entries.
				earlier[id] = true
			case !earlier[id]:
				got[id] = hidden(vals)
			}
		}
	}
	var c Comparison
	for _, id := range slices.Sorted(maps.Keys(a.rows)) {
		if earlier[id] {
			c.Earlier++
			continue
		}
		want := hidden(a.rows[id])
		if g, ok := got[id]; !ok || !slices.Equal(g, want) {
			c.N++
			if len(c.Diffs) < limit {
				c.Diffs = append(c.Diffs, fmt.Sprintf("%s: %s, complete answer %s", shown(id), shownRow(g, ok), shownRow(want, true)))
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(got)) {
		if _, ok := a.rows[id]; !ok {
			c.N++
			if len(c.Diffs) < limit {
				c.Diffs = append(c.Diffs, fmt.Sprintf("%s: %s, not in the complete answer", shown(id), shownRow(got[id], true)))
			}
		}
	}
	return c, nil
}

// latestResults reads the results of a job whose results are a log (a
// file and its corrections, a topic as read_committed readers see it:
// connector.LogStore.Scan), keeping each window's highest (run, pane)
// (at equal ones, the later), by row identity, and of those the windows
// of the newest run (a topic, or files kept with --append, hold earlier
// runs too; the complete answer is of this run's input): earlier holds
// the others' identities.
func latestResults(p *spec.Plan, dir string) (got map[string][]string, earlier map[string]bool, newest int64, err error) {
	f := resultFold{p: p, got: map[string][]string{}, revs: map[string][2]int64{}}
	ctx := context.Background()
	st, err := openPlanStore(ctx, p, dir, false)
	if err != nil {
		return nil, nil, 0, err
	}
	defer st.Close()
	l, ok := st.(connector.LogStore)
	if !ok {
		return nil, nil, 0, fmt.Errorf("sinks.results: kind %s keeps no log of results", p.Sinks.Primary().Type)
	}
	if kl, ok := l.(connector.KeyedLogStore); ok {
		err = kl.ScanKeyed(ctx, f.addKeyed)
	} else {
		err = l.Scan(ctx, f.add)
	}
	if err != nil {
		return nil, nil, 0, err
	}
	runs := map[string]int64{}
	for k, r := range f.revs {
		runs[k] = r[0]
	}
	earlier, newest = newestRun(f.got, runs)
	return f.got, earlier, newest, nil
}

// resultFold keeps the newest revision, by (run, pane), of each window
// among result lines.
type resultFold struct {
	p    *spec.Plan
	got  map[string][]string
	revs map[string][2]int64 // the (run, pane) of got's rows
}

// newestRun keeps in got the rows of the newest run only, by runs (each
// row's run), and returns the identities of the others and that run.
func newestRun(got map[string][]string, runs map[string]int64) (map[string]bool, int64) {
	var last int64
	for _, r := range runs {
		last = max(last, r)
	}
	earlier := map[string]bool{}
	for k, r := range runs {
		if r != last {
			delete(got, k)
			earlier[k] = true
		}
	}
	return earlier, last
}

func (f *resultFold) add(line []byte) error {
	if len(line) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return err
	}
	k, get, err := f.identity(m)
	if err != nil {
		return err
	}
	var rev [2]int64 // run, pane
	var firing string
	json.Unmarshal(get("run"), &rev[0])
	json.Unmarshal(get("pane"), &rev[1])
	json.Unmarshal(get("firing"), &firing)
	old, ok := f.revs[k]
	if ok && (old[0] > rev[0] || old[0] == rev[0] && old[1] > rev[1]) {
		return nil
	}
	if firing == "retract" {
		delete(f.got, k)
		delete(f.revs, k)
		return nil
	}
	row := make([]string, len(f.p.Aggregates))
	for i, ag := range f.p.Aggregates {
		if outfmt.ColumnOf(outfmt.Columns(f.p), ag.Name) != nil { // else unshown: ""
			row[i] = valueCanonical(true, get(ag.Name))
		}
	}
	f.got[k], f.revs[k] = row, rev
	return nil
}

// addKeyed is add for a keyed log's record (connector.KeyedLogStore): a
// record without a value is its key's tombstone (a results sink with a
// primary key retracts so), which removes the row of that key: the row
// of that identity, or, where the key holds no window end (a session
// keyed by its start), every row of its keys and start.
func (f *resultFold) addKeyed(key, line []byte) error {
	if line != nil || len(key) == 0 {
		return f.add(line)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(key, &m); err != nil {
		return err
	}
	k, _, err := f.identity(m)
	if err != nil {
		return err
	}
	for row := range f.got {
		if row == k || strings.HasSuffix(k, ",") && strings.HasPrefix(row, k) {
			delete(f.got, row)
			delete(f.revs, row)
		}
	}
	return nil
}

// identity is the row identity of result line m (its key fields and
// window bounds, by the results sink's columns, if it has them), and how
// to read a field of it by what it holds.
func (f *resultFold) identity(m map[string]json.RawMessage) (string, func(from string) json.RawMessage, error) {
	s := f.p
	// The fields by what they hold (the results sink's columns, if it
	// has them: a row without run and pane is newer than the rows before
	// it, one without firing no retraction).
	cols := outfmt.Columns(s)
	get := func(from string) json.RawMessage {
		c := outfmt.ColumnOf(cols, from)
		if c == nil {
			return nil
		}
		// A key field or an aggregate written as a time reads back as
		// the milliseconds it holds.
		if raw := m[c.Name]; c.Time != "" && c.Time != "ms" && len(raw) > 0 && raw[0] == '"' {
			if ms, ok := outfmt.ParseColumnTime(s, c, raw); ok {
				return strconv.AppendInt(nil, ms, 10)
			}
		}
		return m[c.Name]
	}
	bound := func(from string) (string, error) {
		c := outfmt.ColumnOf(cols, from)
		if c == nil {
			return "", nil
		}
		raw := m[c.Name]
		if c.Time == "" || c.Time == "ms" || raw == nil {
			return string(raw), nil
		}
		ms, ok := outfmt.ParseColumnTime(s, c, raw)
		if !ok {
			return "", fmt.Errorf("%s %s is not a time", c.Name, raw)
		}
		return strconv.FormatInt(ms, 10), nil
	}
	keys := make([]string, len(s.Key))
	for i, k := range s.Key {
		keys[i] = sqlCanonical(get(k))
	}
	start, err := bound(spec.ColWindowStart)
	if err != nil {
		return "", nil, err
	}
	end, err := bound(spec.ColWindowEnd)
	if err != nil {
		return "", nil, err
	}
	if end == "" && start != "" && (s.WindowKind == spec.Tumbling || s.WindowKind == spec.Sliding) {
		// Columns without window_end: a tumbling or sliding window
		// ends its size after its start.
		if ms, err := strconv.ParseInt(start, 10, 64); err == nil {
			end = strconv.FormatInt(ms+int64(s.WindowSpan), 10)
		}
	}
	return rowIdentity(keys, start, end), get, nil
}

// tableRows reads a SQL results table by row identity: the job's rows of
// its newest run (--append keeps earlier runs' rows beside them; the
// complete answer is of this run's input), and the others' identities.
func tableRows(p *spec.Plan, dir string) (got map[string][]string, earlier map[string]bool, newest int64, err error) {
	ctx := context.Background()
	rt, err := planTable(ctx, p, dir, false)
	if err != nil {
		return nil, nil, 0, err
	}
	db, err := openResultsDB(ctx, rt, false)
	if err != nil {
		return nil, nil, 0, err
	}
	defer rt.Close()
	s := p
	var cols []string
	for _, k := range s.Key {
		cols = append(cols, db.dia.Text(quoteSQL(k)))
	}
	cols = append(cols, "window_start", "window_end")
	for _, ag := range s.Aggregates {
		cols = append(cols, db.dia.Text(quoteSQL(ag.Name)))
	}
	t := quoteSQL(rt.Table)
	q := db.dia.Rebind(`SELECT ` + strings.Join(cols, ", ") + `, run FROM ` + t + ` WHERE "job" = ?`)
	rows, err := db.db.QueryContext(ctx, q, s.Name)
	if err != nil {
		return nil, nil, 0, err
	}
	defer rows.Close()
	got = map[string][]string{}
	runs := map[string]int64{}
	nk := len(s.Key)
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols)+1)
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		var run int64
		ptrs[len(cols)] = &run
		if err := rows.Scan(ptrs...); err != nil {
			return nil, nil, 0, err
		}
		keys := make([]string, 0, nk)
		row := make([]string, 0, len(s.Aggregates))
		for i, v := range vals {
			if i == nk || i == nk+1 { // the window
				continue
			}
			var t connector.ColumnType
			if i < nk {
				t = rt.Keys[i].Type
			} else {
				t = rt.Values[i-nk-2].Type
			}
			if v, err = db.value(t, v); err != nil {
				return nil, nil, 0, err
			}
			if c := valueText(v); i < nk {
				keys = append(keys, c)
			} else {
				row = append(row, c)
			}
		}
		id := rowIdentity(keys, fmt.Sprint(vals[nk]), fmt.Sprint(vals[nk+1]))
		got[id], runs[id] = row, run
	}
	if err := rows.Err(); err != nil {
		return nil, nil, 0, err
	}
	earlier, newest = newestRun(got, runs)
	return got, earlier, newest, nil
}
