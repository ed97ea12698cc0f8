package pgio

import (
	"github.com/weirstream/weir/connector/internal/tablerow"
	"github.com/weirstream/weir/window"
)

// ResultRows returns the function that turns a window result into a Row
// of one key column and one value column (both encoded with encoding/json),
// for weir.Map in front of a Sink opened with those columns:
//
//	weir.ToSink(weir.Map(out.Results, pgio.ResultRows[string, int64]("user", "total", run)), table, weir.SinkOptions{})
//
// run is the job's run: the table keeps a window's revision of the
// highest (run, pane), so a job that starts over without its checkpoints
// beside rows of an earlier run must either give a higher run (the time
// it started, say) or empty its rows first (Sink.Reset); a restored job
// keeps the run it had. A key or value that does not encode as JSON
// becomes null, which Write refuses for a key.
func ResultRows[K, V any](key, value string, run int64) func(window.Result[K, V]) Row {
	return tablerow.ResultRows[K, V](key, value, run)
}
