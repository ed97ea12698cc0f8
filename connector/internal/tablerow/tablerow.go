// Package tablerow is the row model shared by the table sinks of window
// results (sqliteio, pgio): one row per (key, window) holding the newest
// revision, written with the pane guard.
package tablerow

import (
	"fmt"
	"strings"

	"github.com/weirstream/weir/etime"
)

// The firing kinds of Row.Firing.
const (
	FiringEarly   = "early"
	FiringOnTime  = "on_time"
	FiringLate    = "late"
	FiringRetract = "retract"
)

// Column is one named value; Value is the value's JSON text. How a table
// stores it is the sink's (see its Column documentation).
type Column struct {
	Name  string
	Value []byte
}

// Row is one result revision.
type Row struct {
	Keys       []Column   // the key fields, in the order given to Open
	Start, End etime.Time // the window; the global window is (etime.MinTime, etime.MaxTime)
	Firing     string     // "early", "on_time", "late" or "retract"
	Pane       int64
	Watermark  etime.Time
	Values     []Column // the aggregates, in the order given to Open (ignored for retract)
}

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
