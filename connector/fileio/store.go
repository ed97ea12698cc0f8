package fileio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/weirstream/weir/connector"
)

// CorrectionsPath is where weir backfill appends the revisions of the
// windows of a jsonl results file at results: beside it, with .backfill
// before its extension (out.jsonl: out.backfill.jsonl). The live job
// appends to its results file and cuts it back at a restore, so the
// revisions go apart; readers take both.
func CorrectionsPath(results string) string {
	base, ext := results, ""
	if i := strings.LastIndexByte(results, '.'); i > strings.LastIndexByte(results, '/') {
		base, ext = results[:i], results[i:]
	}
	return base + ".backfill" + ext
}

// openStore opens a job spec's jsonl results file and its corrections
// (connector.SinkKind.OpenStore).
func openStore(_ context.Context, o connector.StoreOpen) (connector.ResultsStore, error) {
	path := o.Settings.String("path")
	if path == "" || path == "-" {
		return nil, fmt.Errorf("%s: results written to stdout cannot be read back or revised; write them to a file", o.Output)
	}
	path = o.Path(path)
	return &resultsLog{results: path, corrections: CorrectionsPath(path)}, nil
}

// resultsLog is a results file and its corrections (connector.LogStore).
// Append opens the corrections at its first call (never in a dry run,
// which does not append), cutting a line a crash (or a full disk) tore.
type resultsLog struct {
	results, corrections string
	f                    *os.File
	buf                  []byte
}

func (l *resultsLog) Scan(_ context.Context, fn func(line []byte) error) error {
	for _, path := range []string{l.results, l.corrections} {
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			if path == l.corrections {
				continue // no backfill appended yet
			}
			return fmt.Errorf("results file %s is not there (has the job run?): %w", path, connector.ErrNoResults)
		}
		if err != nil {
			return err
		}
		// Complete lines only: a line without its newline is a write a
		// crash tore, never committed (the job's resume, or the next
		// Append, cuts it; an outbox publishes the revision again).
		b = b[:bytes.LastIndexByte(b, '\n')+1]
		if len(b) == 0 {
			continue
		}
		for no, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
			if err := fn(line); err != nil {
				return fmt.Errorf("%s:%d: %w", path, no+1, err)
			}
		}
	}
	return nil
}

func (l *resultsLog) Append(_ context.Context, revs []connector.Message) error {
	if l.f == nil {
		f, err := os.OpenFile(l.corrections, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		if err := cutTornTail(f); err != nil {
			f.Close()
			return fmt.Errorf("corrections %s: %w", l.corrections, err)
		}
		l.f = f
	}
	b := l.buf[:0]
	for _, r := range revs {
		b = append(append(b, r.Value...), '\n')
	}
	l.buf = b
	_, err := l.f.Write(b)
	if err == nil {
		err = l.f.Sync()
	}
	if err != nil {
		return fmt.Errorf("corrections %s: %w", l.corrections, err)
	}
	return nil
}

func (l *resultsLog) Forget(context.Context) error {
	if err := os.Remove(l.corrections); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func (l *resultsLog) Close() error {
	if l.f == nil {
		return nil
	}
	return l.f.Close()
}

// cutTornTail truncates f after its last newline.
func cutTornTail(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	end := fi.Size()
	buf := make([]byte, 64<<10)
	for end > 0 {
		n := min(int64(len(buf)), end)
		if _, err := f.ReadAt(buf[:n], end-n); err != nil {
			return err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			end = end - n + int64(i) + 1
			break
		}
		end -= n
	}
	if end == fi.Size() {
		return nil
	}
	return f.Truncate(end)
}
