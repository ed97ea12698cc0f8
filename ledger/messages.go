package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/weirstream/weir/connector"
)

// JobDir is the directory of a job's ledger: under dir, the job's name
// with path separators and .. replaced ("job" when it has none).
func JobDir(dir, job string) string {
	if job == "" {
		job = "job"
	}
	return filepath.Join(dir, strings.NewReplacer("/", "_", "\\", "_", "..", "_").Replace(job))
}

// openMessages opens the ledger of a job spec's late sink: JobDir of its
// dir setting, emptied when the job starts its output over.
func openMessages(_ context.Context, o connector.MessagesOpen) (connector.Sink[connector.Message], error) {
	var ret SinkOptions
	if d, ok := o.Settings.Duration("retention"); ok {
		ret.Retention = d
	}
	ret.Fresh, ret.Now = o.Fresh, o.Now
	s, err := OpenSink(JobDir(o.Path(o.Settings.String("dir")), o.Job), ret)
	if err != nil {
		return nil, err
	}
	return &messages{Sink: s}, nil
}

// messages appends each message's Entry to the ledger as an entry line:
// id, kind late, reason, the entry's meta fields, arrived_at and the
// record. It is Transactional (the Sink's) and reports the newest run
// the ledger holds (MaxRun).
type messages struct {
	*Sink
	buf []byte
}

func (s *messages) Write(_ context.Context, batch []connector.Message) error {
	for i := range batch {
		e := batch[i].Entry
		if e == nil || e.ID == "" {
			return errors.New("ledger: a message without an entry id: the ledger keeps late records, each by its source position")
		}
		b := append(s.buf[:0], `{"id":`...)
		b = appendString(b, e.ID)
		b = append(b, `,"kind":"late","reason":`...)
		b = appendString(b, e.Reason)
		if len(e.Meta) > 2 {
			b = append(b, ',')
			b = append(b, e.Meta[1:len(e.Meta)-1]...)
		}
		b = append(b, `,"arrived_at":`...)
		b = strconv.AppendInt(b, e.Arrived.UnixMilli(), 10)
		b = append(b, `,"record":`...)
		if len(e.Record) == 0 {
			b = append(b, "null"...)
		} else {
			b = append(b, e.Record...)
		}
		b = append(b, '}')
		s.buf = b
		if err := s.w.Append(b, e.Arrived); err != nil {
			return err
		}
	}
	return nil
}

// MaxRun is the run of the ledger's newest entry (0 when it has none),
// which a run that keeps the entries goes above.
func (s *messages) MaxRun(context.Context) (int64, error) {
	e, ok, err := Last(s.dir)
	if err != nil || !ok {
		return 0, err
	}
	return e.Run, nil
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
