// Package tablerow is the row model shared by the table sinks of window
// results (sqliteio, pgio): one row per (key, window) holding the newest
// revision, written with the pane guard.
package tablerow

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/window"
)

// The firing kinds of Row.Firing.
const (
	FiringEarly   = "early"
	FiringOnTime  = "on_time"
	FiringLate    = "late"
	FiringRetract = "retract"
)

// MaxIdentifierLen is the longest table or column name, in bytes, that
// Postgres keeps (it truncates longer ones).
const MaxIdentifierLen = 63

// AppliedTable names the table beside a results table in which a
// backfill records the ledger entries it applied to each window (columns
// job, key, window_start, window_end, id): <table>_backfill_applied,
// shortened with a hash of the whole name beyond MaxIdentifierLen bytes.
// A sink's Reset removes its job's rows there too: they name revisions
// that are gone.
func AppliedTable(table string) string {
	name := table + "_backfill_applied"
	if len(name) <= MaxIdentifierLen {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:MaxIdentifierLen-9] + "_" + hex.EncodeToString(sum[:4])
}

// JobColumn is the first column, the job whose row it is: jobs may share
// a table, and a job's fresh start removes its own rows only.
const JobColumn = "job"

// FixedColumns are the columns between the key and the value columns.
// run and pane order a window's revisions: the highest (run, pane) wins,
// so a later run's pane 0 replaces an earlier run's pane 5.
var FixedColumns = [...]string{"window_start", "window_end", "firing", "run", "pane", "watermark"}

// Reserved are the names no key or value column may take.
var Reserved = append([]string{JobColumn}, FixedColumns[:]...)

// Column and Row are the SPI's (connector.Column, connector.Row).
type (
	Column = connector.Column
	Row    = connector.Row
)

// Check refuses a row whose shape does not fit a table of keyNames and
// valueNames (the count of keys and values, the firing kind); pkg prefixes
// the error. It returns the firing (one of the constants, so a sink can
// bind a preallocated value) and whether the row is a retraction.
func Check(pkg string, r *Row, keyNames, valueNames []string) (firing string, retract bool, err error) {
	if len(r.Keys) != len(keyNames) {
		return "", false, fmt.Errorf("%s: row has %d keys, the sink has %d (%s)", pkg, len(r.Keys), len(keyNames), strings.Join(keyNames, ", "))
	}
	switch r.Firing {
	case FiringEarly, FiringOnTime, FiringLate:
		firing = r.Firing
	case FiringRetract:
		return FiringRetract, true, nil
	default:
		return "", false, fmt.Errorf("%s: row has firing %q; want early, on_time, late or retract", pkg, r.Firing)
	}
	if len(r.Values) != len(valueNames) {
		return "", false, fmt.Errorf("%s: row has %d values, the sink has %d (%s)", pkg, len(r.Values), len(valueNames), strings.Join(valueNames, ", "))
	}
	return firing, false, nil
}

// CheckNames refuses key and value column names that valid refuses, that
// collide with a fixed column, or that repeat one another once folded as
// the database compares names; pkg prefixes the errors, which name the
// column.
func CheckNames(pkg string, keyNames, valueNames, fixed []string, fold func(string) string, valid func(field, name string) error) error {
	type seen struct{ field, name string }
	names := make(map[string]seen, len(keyNames)+len(valueNames))
	for _, cols := range [...]struct {
		kind  string
		names []string
	}{{"key", keyNames}, {"value", valueNames}} {
		for i, name := range cols.names {
			field := fmt.Sprintf("%s column %d", cols.kind, i+1)
			if err := valid(field, name); err != nil {
				return err
			}
			f := fold(name)
			if slices.Contains(fixed, f) {
				return fmt.Errorf("%s: %s name %q collides with the fixed column %q; rename it (for example to %q)", pkg, field, name, f, cols.kind+"_"+name)
			}
			if p, dup := names[f]; dup {
				return fmt.Errorf("%s: %s name %q is the same as %s name %q (the database compares names ignoring case); rename one of them", pkg, field, name, p.field, p.name)
			}
			names[f] = seen{field, name}
		}
	}
	return nil
}

// ConformanceRow is the row of a record of connectortest.RunSink in a
// table keyed by one column, id, with one value column, value: what the
// table sinks' conformance tests write.
func ConformanceRow(id string, run, pane int64, retract bool, value int64) Row {
	r := Row{Keys: []Column{{Name: "id", Value: strconv.AppendQuote(nil, id)}}, Start: 0, End: 1000,
		Firing: FiringOnTime, Run: run, Pane: pane, Watermark: 999}
	if retract {
		r.Firing = FiringRetract
	} else {
		r.Values = []Column{{Name: "value", Value: strconv.AppendInt(nil, value, 10)}}
	}
	return r
}

// ResultRows returns the function that turns a window result into a Row
// of one key column and one value column, both encoded with encoding/json:
// what pgio.ResultRows and sqliteio.ResultRows give.
func ResultRows[K, V any](key, value string, run int64) func(window.Result[K, V]) Row {
	return func(r window.Result[K, V]) Row {
		k, _ := json.Marshal(r.Key)
		row := Row{Keys: []Column{{Name: key, Value: k}}, Start: r.Window.Start, End: r.Window.End,
			Firing: r.Firing.String(), Run: run, Pane: r.Pane, Watermark: r.Watermark}
		if r.Firing != window.Retract {
			v, _ := json.Marshal(r.Value)
			row.Values = []Column{{Name: value, Value: v}}
		}
		return row
	}
}
