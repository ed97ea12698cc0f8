package ledger

import (
	"encoding/json"

	"github.com/weirstream/weir/window"
)

// LateEntries returns the function that turns a too-late record of a
// window operator's Late output into a ledger Entry, for weir.Map in front
// of a Sink: id gives the record's stable id (its source position, such as
// "partition:offset": a replay after a restore must give the same id),
// arrived its arrival time (Unix ms). The key, as {key: <the key>}, and the
// record are encoded with encoding/json.
func LateEntries[K, T any](key string, id func(T) string, arrived func(T) int64) func(window.LateRecord[K, T]) Entry {
	return func(l window.LateRecord[K, T]) Entry {
		k, _ := json.Marshal(map[string]K{key: l.Key})
		rec, _ := json.Marshal(l.Record)
		e := Entry{ID: id(l.Record), Kind: "late", Reason: l.Reason.String(), Key: k, TS: int64(l.Timestamp),
			Watermark: int64(l.Watermark), LatenessMS: int64(l.Lateness), ArrivedAt: arrived(l.Record), Record: rec}
		for _, w := range l.Windows {
			e.Windows = append(e.Windows, [2]int64{int64(w.Start), int64(w.End)})
		}
		return e
	}
}
