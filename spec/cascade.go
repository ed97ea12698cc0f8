package spec

import (
	"fmt"
	"slices"

	"github.com/weirstream/weir/trigger"
	"github.com/weirstream/weir/window"
)

// The columns a window's results give a window they feed (semantics
// W12), besides its key fields and aggregates: the window's bounds and
// its rowtime, window_end - 1, which is the downstream record's event
// time (Flink's window_time).
const (
	ColWindowStart = "window_start"
	ColWindowEnd   = "window_end"
	ColWindowTime  = "window_time"
)

// numericFns are the aggregates whose results are numbers (or null), so
// that sum, min, max and avg downstream can read them.
var numericFns = []string{"count", "sum", "min", "max", "avg", "count_distinct", "sum_distinct", "avg_distinct"}

// checkCascade checks that window up, node upName, may feed window down
// (semantics W12): up fires each window once, on event time, and every
// field down reads is a column of up's results, a number where down
// needs one.
func checkCascade(upName string, up *WindowOp, downName string, down *WindowOp) error {
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("window %s reads the results of window %s, but %s (semantics W12)", downName, upName, fmt.Sprintf(format, args...))
	}
	if err := checkFeeds(upName, up, downName, refuse); err != nil {
		return err
	}
	cols, numeric := resultColumns(up)
	column := func(what, f string) error {
		if !slices.Contains(cols, f) {
			return refuse("%s reads %q, which %s's results do not have (they have %q)", what, f, upName, cols)
		}
		return nil
	}
	for _, k := range down.Key {
		if err := column("its key", k); err != nil {
			return err
		}
	}
	for _, a := range down.Aggregates {
		if a.Fn == "count" && a.Field == "" {
			continue
		}
		if err := column(fmt.Sprintf("aggregate %s (%s)", a.Name, a.Fn), a.Field); err != nil {
			return err
		}
		if slices.Contains([]string{"sum", "min", "max", "avg"}, BaseFn(a.Fn)) && !numeric[a.Field] && a.Type != "string" {
			return refuse("aggregate %s takes the %s of %q, which is no number in %s's results (a key field's type is not known, and first, last and collect give any value)", a.Name, a.Fn, a.Field, upName)
		}
	}
	return nil
}

// resultColumns are the columns of window op's results as a node fed by
// them reads them, and which of them hold numbers.
func resultColumns(op *WindowOp) (cols []string, numeric map[string]bool) {
	numeric = map[string]bool{ColWindowStart: true, ColWindowEnd: true, ColWindowTime: true}
	cols = append(slices.Clone(op.Key), ColWindowStart, ColWindowEnd, ColWindowTime)
	for _, a := range op.Aggregates {
		cols = append(cols, a.Name)
		numeric[a.Name] = slices.Contains(numericFns, a.Fn) && a.Type != "string"
	}
	return cols, numeric
}

// checkFeeds checks that window up fires each window once, on event
// time, so that a node may read its results (semantics W12); refuse
// words the error.
func checkFeeds(upName string, up *WindowOp, downName string, refuse func(format string, args ...any) error) error {
	switch {
	case up.Assigner == nil || up.Assigner.Kind() == window.KindGlobal:
		return refuse("%s is a global window: its results have no window_time to window them by", upName)
	case up.Assigner.ProcessingTime():
		return refuse("%s is a processing-time window: its results have no event time", upName)
	case up.Lateness != 0:
		return refuse("%s has allowed lateness %v: a late firing would revise a result %s has already counted; give %s no lateness (its too-late records still go to its side output)", upName, up.Lateness.Std(), downName, upName)
	case up.Trigger != nil && !trigger.FiresOnce(up.Trigger):
		return refuse("%s's trigger %v may fire a window more than once, and %s would count each firing; use the event-time trigger or final", upName, up.Trigger, downName)
	}
	return nil
}
