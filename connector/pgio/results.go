package pgio

import (
	"encoding/json"

	"github.com/weirstream/weir/window"
)

// ResultRows returns the function that turns a window result into a Row
// of one key column and one value column (both encoded with encoding/json),
// for weir.Map in front of a Sink opened with those columns:
//
//	weir.ToSink(weir.Map(out.Results, pgio.ResultRows[string, int64]("user", "total", 0)), table, weir.SinkOptions{})
//
// run is the job's run (0 when the program does not number its runs):
// the table keeps a window's revision of the highest (run, pane). A key
// or value that does not encode as JSON becomes null, which Write
// refuses for a key.
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
