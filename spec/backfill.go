package spec

import (
	"cmp"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/connector/fileio"
	"github.com/weirstream/weir/connector/sqliteio"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/ledger"
)

// BackfillOptions configures Backfill.
type BackfillOptions struct {
	// Dir is the spec's directory (relative paths start there).
	Dir string
	// DryRun reports what would change and writes nothing.
	DryRun bool
	// Out, when set, is told about each window changed.
	Out io.Writer
	// Filter, when set, chooses the entries to apply (by key, reason,
	// window or arrival); the others are left for a later run.
	Filter func(ledger.Entry) bool
}

// BackfillReport counts what a backfill did.
type BackfillReport struct {
	// Entries scanned in the ledger; Applied folded into windows;
	// AlreadyApplied skipped (a previous backfill applied them);
	// Unreadable entries whose record no longer decodes.
	Entries, Applied, AlreadyApplied, Unreadable int
	// Windows revised (or, with DryRun, that would be).
	Windows int
}

// backfillFns are the aggregates whose stored result is their own
// accumulator, so a results row can be folded into.
var backfillFns = []string{"count", "sum", "min", "max"}

// appliedTable records, in the results database, which ledger entry was
// folded into which window, in the transaction that updates the window.
const appliedTable = "weir_backfill_applied"

// Backfill folds the entries of the job's late-data ledger into the
// results table of its SQLite sink: per (key, window) it loads the row,
// folds the entries not applied yet with the job's own aggregate code,
// and writes the next revision (pane + 1, firing backfill) together with
// the applied entry ids, in one transaction. Running it again changes
// nothing; a run killed half way and run again ends in the same state.
// Every window an entry names had expired when the entry arrived (that is
// why it is in the ledger), so the live job no longer writes it.
//
// Supported: tumbling and sliding windows; count, sum, min and max.
func Backfill(p *Plan, o BackfillOptions) (BackfillReport, error) {
	var rep BackfillReport
	s := p.Spec
	switch {
	case s.Sinks.Late == nil || s.Sinks.Late.Type != "ledger":
		return rep, fmt.Errorf("backfill reads the late-data ledger: set sinks.late: {type: ledger, dir: ledger}")
	case s.Sinks.Results.Type != "sqlite":
		return rep, fmt.Errorf("backfill folds into a sqlite results table for now (sinks.results.type is %s)", s.Sinks.Results.Type)
	case s.Window.Type != "tumbling" && s.Window.Type != "sliding":
		return rep, fmt.Errorf("backfill supports tumbling and sliding windows for now; %s windows would need their merged sessions retracted", s.Window.Type)
	}
	fns := make([]string, len(s.Aggregate))
	for i, a := range s.Aggregate {
		if !slices.Contains(backfillFns, a.Fn) {
			return rep, fmt.Errorf("aggregate[%d] %s: backfill folds count, sum, min and max, whose stored value is their accumulator; %s needs its accumulator stored (not yet)", i, a.Name, a.Fn)
		}
		fns[i] = a.Fn
	}
	agg := aggFunc{fns: fns}
	dec := newDecoder(p, clock.Real{})
	dir := LedgerDir(p, o.Dir, s.Sinks.Late)
	if !o.DryRun {
		unlock, err := ledger.Lock(dir)
		if err != nil {
			return rep, err
		}
		defer unlock()
	}

	// Group the entries by key and window, in window-end then key order.
	type group struct {
		key     string // the key object, compact JSON
		start   int64
		end     int64
		entries []ledger.Entry
	}
	groups := map[[3]string]*group{}
	var order []*group
	_, err := ledger.Scan(dir, func(e ledger.Entry) error {
		if o.Filter != nil && !o.Filter(e) {
			return nil
		}
		rep.Entries++
		key := string(e.Key) // compact, as the live job wrote it
		for _, w := range e.Windows {
			k := [3]string{key, fmt.Sprint(w[0]), fmt.Sprint(w[1])}
			g := groups[k]
			if g == nil {
				g = &group{key: key, start: w[0], end: w[1]}
				groups[k] = g
				order = append(order, g)
			}
			g.entries = append(g.entries, e)
		}
		return nil
	})
	if err != nil {
		return rep, err
	}
	slices.SortFunc(order, func(a, b *group) int {
		if c := cmp.Compare(a.end, b.end); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})

	db, err := sql.Open("sqlite", sqliteio.DSN(RunOptions{Dir: o.Dir}.path(s.Sinks.Results.Path)))
	if err != nil {
		return rep, err
	}
	defer db.Close()
	if !o.DryRun {
		if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS ` + appliedTable + ` (id TEXT NOT NULL, key TEXT NOT NULL, window_start INTEGER NOT NULL, window_end INTEGER NOT NULL, PRIMARY KEY (id, key, window_start, window_end))`); err != nil {
			return rep, err
		}
	}
	// A dry run before any backfill finds no applied table: nothing is
	// applied yet.
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, appliedTable).Scan(&n); err != nil {
		return rep, err
	}
	noneApplied := n == 0
	table := quoteSQL(s.Sinks.Results.Table)
	var cols []string
	for _, a := range s.Aggregate {
		cols = append(cols, quoteSQL(a.Name))
	}
	var conds []string
	for _, k := range s.Key {
		conds = append(conds, quoteSQL(k)+" = ?")
	}
	where := strings.Join(append(conds, "window_start = ?", "window_end = ?"), " AND ")
	sqlRow := rowSQL{
		sel: `SELECT pane, ` + strings.Join(cols, ", ") + ` FROM ` + table + ` WHERE ` + where,
		upd: `UPDATE ` + table + ` SET ` + strings.Join(cols, " = ?, ") + ` = ?, firing = 'backfill', pane = ? WHERE ` + where,
		ins: `INSERT INTO ` + table + ` (` + strings.Join(append(append(quoteAll(s.Key), "window_start", "window_end", "firing", "pane", "watermark"), cols...), ", ") +
			`) VALUES (` + strings.TrimSuffix(strings.Repeat("?, ", len(s.Key)+5+len(cols)), ", ") + `)`,
	}

	for _, g := range order {
		var keyVals map[string]json.RawMessage
		if err := json.Unmarshal([]byte(g.key), &keyVals); err != nil {
			return rep, fmt.Errorf("ledger entry key %s: %w", g.key, err)
		}
		args := make([]any, 0, len(s.Key)+2)
		for _, k := range s.Key {
			v, err := sqliteio.Value(keyVals[k])
			if err != nil {
				return rep, fmt.Errorf("ledger entry key %s: %w", g.key, err)
			}
			args = append(args, v)
		}
		args = append(args, g.start, g.end)
		if err := backfillWindow(db, o, &rep, g.key, g.start, g.end, g.entries, args, sqlRow, agg, dec, noneApplied); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// rowSQL are the statements on one results row, whose WHERE (or VALUES)
// takes the key values, window_start and window_end.
type rowSQL struct{ sel, upd, ins string }

// backfillWindow folds one window's entries in one transaction.
func backfillWindow(db *sql.DB, o BackfillOptions, rep *BackfillReport, key string, start, end int64, entries []ledger.Entry,
	args []any, q rowSQL, agg aggFunc, dec *decoder, noneApplied bool) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var fresh []ledger.Entry
	for _, e := range entries {
		if noneApplied {
			fresh = append(fresh, e)
			continue
		}
		var one int
		err := tx.QueryRow(`SELECT 1 FROM `+appliedTable+` WHERE id = ? AND key = ? AND window_start = ? AND window_end = ?`, e.ID, key, start, end).Scan(&one)
		switch {
		case err == sql.ErrNoRows:
			fresh = append(fresh, e)
		case err != nil:
			return err
		default:
			rep.AlreadyApplied++
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	// The window's accumulator: its row's values (count, sum, min and
	// max are their own accumulators), or empty if it never fired.
	ac := agg.CreateAccumulator()
	pane := int64(-1)
	vals := make([]any, len(agg.fns))
	ptrs := []any{&pane}
	for i := range vals {
		ptrs = append(ptrs, &vals[i])
	}
	switch err := tx.QueryRow(q.sel, args...).Scan(ptrs...); {
	case err == sql.ErrNoRows:
		pane = -1
	case err != nil:
		return err
	default:
		for i, fn := range agg.fns {
			seedSlot(fn, &ac.s[i], vals[i])
		}
	}
	applied := 0
	for _, e := range fresh {
		r, err := dec.decode(fileio.Line{Kind: fileio.Data, Text: e.Record})
		if err != nil {
			rep.Unreadable++
			continue
		}
		r.ts = etime.Time(e.TS)
		agg.Add(ac, r)
		applied++
	}
	rep.Applied += applied
	rep.Windows++
	result := splitResult(agg.Result(ac), len(agg.fns))
	if o.Out != nil {
		fmt.Fprintf(o.Out, "window %s [%d,%d): %d entries, pane %d -> %d: %s\n", key, start, end, applied, pane, pane+1, strings.Join(result, " "))
	}
	if o.DryRun {
		return nil
	}
	set := make([]any, 0, len(result)+1)
	for _, v := range result {
		x, err := sqliteio.Value([]byte(v))
		if err != nil {
			return err
		}
		set = append(set, x)
	}
	if pane < 0 { // the window never fired: its first row
		_, err = tx.Exec(q.ins, append(append(slices.Clone(args), "backfill", int64(0), end), set...)...)
	} else {
		_, err = tx.Exec(q.upd, append(append(set, pane+1), args...)...)
	}
	if err != nil {
		return err
	}
	for _, e := range fresh {
		if _, err := tx.Exec(`INSERT INTO `+appliedTable+` (id, key, window_start, window_end) VALUES (?, ?, ?, ?)`, e.ID, key, start, end); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// seedSlot sets an aggregate's slot from its stored value.
func seedSlot(fn string, s *slot, v any) {
	x, ok := numberVal(v)
	switch fn {
	case "count":
		if ok {
			s.n = x.i
		}
	case "sum", "min", "max":
		if !ok {
			return // null: no value yet
		}
		s.n = 1
		if fn == "sum" {
			if x.kind == vInt {
				s.i = x.i
			} else {
				s.isF, s.f = true, x.f
			}
		} else {
			s.v = x
		}
	}
}

func numberVal(v any) (val, bool) {
	switch x := v.(type) {
	case int64:
		return val{kind: vInt, i: x}, true
	case float64:
		return val{kind: vFloat, f: x}, true
	}
	return val{}, false
}

// splitResult splits aggFunc.Result into its JSON values.
func splitResult(b []byte, n int) []string {
	out := make([]string, 0, n)
	for len(b) > 0 && len(out) < n {
		i := slices.Index(b, 0)
		out = append(out, string(b[:i]))
		b = b[i+1:]
	}
	return out
}

func quoteSQL(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = quoteSQL(n)
	}
	return out
}
