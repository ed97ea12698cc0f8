package job

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/fileio"
	"github.com/weirstream/weir/connector/pgio"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/outfmt"
	"github.com/weirstream/weir/internal/record"
	"github.com/weirstream/weir/ledger"
	"github.com/weirstream/weir/spec"
	"github.com/weirstream/weir/window"
)

// lineSink writes JSON lines to a file (a fileio.FileSink) or to stdout.
// Results, late records and dead letters are written from different
// goroutines, and several sinks may share stdout: the mutex keeps lines
// whole.
type lineSink struct {
	mu   sync.Mutex
	w    *bufio.Writer    // stdout
	file *fileio.FileSink // nil for stdout
	one  [1][]byte        // the line being written to file
	krec [1]*kgo.Record   // the record being written to Kafka
	// topic, with kafka, sends the lines to a Kafka topic instead, in the
	// results sink's transaction of each checkpoint.
	topic string
	kafka *kafkaResults
}

// openLineSink opens a file sink: truncated for a fresh run (offset
// freshOffset), kept and appended to for a fresh run told to append
// (appendOffset), or cut back to where a restored checkpoint says it
// ended (offset >= 0).
func openLineSink(path string, stdout io.Writer, offset int64) (*lineSink, error) {
	if path == "" {
		return &lineSink{w: bufio.NewWriterSize(stdout, 64<<10)}, nil
	}
	f, err := fileio.OpenFileSink(path, fileio.FileSinkOptions{Fresh: offset == freshOffset})
	if err != nil {
		return nil, err
	}
	if offset >= 0 {
		if err := f.Recover(context.Background(), 0, strconv.AppendInt(nil, offset, 10)); err != nil {
			f.Close()
			return nil, err
		}
	}
	return &lineSink{file: f}, nil
}

// The offsets of openLineSink that are not a checkpoint's.
const (
	freshOffset  = -1
	appendOffset = -2
)

// sync flushes the sink and, for a file, fsyncs it and returns its length
// (-1 for stdout).
func (s *lineSink) sync() (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.kafka != nil:
		return -1, nil // the results sink's transaction makes it durable
	case s.file == nil:
		return -1, s.w.Flush()
	}
	n, err := s.file.PreCommit(context.Background(), 0)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(string(n), 10, 64)
}

func (s *lineSink) write(line []byte) error {
	return s.writeKeyed(nil, line)
}

// writeKeyed writes a line; a Kafka record gets key as its key.
func (s *lineSink) writeKeyed(key, line []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kafka != nil {
		s.krec[0] = &kgo.Record{Topic: s.topic, Key: key, Value: append([]byte(nil), line...)}
		return s.kafka.s.Write(context.Background(), s.krec[:])
	}
	if s.file != nil {
		s.one[0] = line
		err := s.file.Write(context.Background(), s.one[:])
		s.one[0] = nil
		return err
	}
	s.w.Write(line)
	return s.w.WriteByte('\n')
}

// writeRecord writes a late record's or dead letter's line (to Kafka
// keyed by its entry id).
func (s *lineSink) writeRecord(it *item) error {
	if s.kafka != nil {
		return s.writeKeyed([]byte(it.id), it.line)
	}
	return s.write(it.line)
}

// commit is done by sync (files) or by the results sink's transaction.
func (s *lineSink) commit() error { return nil }

// recordSink receives late records and dead letters.
type recordSink interface {
	writeRecord(it *item) error
	// commit makes what was written durable at a checkpoint (files are
	// synced with the other files).
	commit() error
	close() error
}

// namedSink is a record sink with the name of its spec field.
type namedSink struct {
	recordSink
	name string
}

// recordSinks returns the job's open late and dead-letter sinks.
func (j *Job) recordSinks() []namedSink {
	var ss []namedSink
	for _, s := range []recordSink{j.late, j.partial, j.dead} {
		if s != nil && !slices.ContainsFunc(ss, func(n namedSink) bool { return n.recordSink == s }) { // late and late_partial may share one
			ss = append(ss, namedSink{s, j.sinkName(s)})
		}
	}
	return ss
}

// sinkName is the spec field of a record sink: late, late_partial (when
// it is not the late sink's) or dead_letter.
func (j *Job) sinkName(s recordSink) string {
	switch s {
	case j.late:
		return "late"
	case j.partial:
		return "late_partial"
	}
	return "dead_letter"
}

// SinkCalls returns one entry per sink of the job (results, late,
// late_partial, dead_letter, archive), with the call in progress, if
// any; it never waits for a sink, and is safe to call while the job
// runs. The job calls its sinks one at a time.
func (j *Job) SinkCalls() []SinkCall {
	out := make([]SinkCall, len(j.sinkNames))
	cur := j.out.call()
	for i, name := range j.sinkNames {
		out[i].Sink = name
		if name == cur.Sink {
			out[i] = cur
		}
	}
	return out
}

// listSinks names the open sinks, for SinkCalls.
func (j *Job) listSinks() []string {
	var names []string
	for _, r := range j.results {
		names = append(names, r.name)
	}
	for _, s := range j.recordSinks() {
		names = append(names, s.name)
	}
	if j.archive != nil {
		names = append(names, "archive")
	}
	return names
}

// pgRecords stores late records or dead letters in a Postgres table, each
// once by its entry id, committed at each checkpoint as the job's rows of
// the checkpoint's epoch (outCounters.Epoch); without checkpoints, every
// uncheckedBatch rows (flushDue).
type pgRecords struct {
	db    *pgio.RecordSink
	j     *Job
	batch int // rows per transaction (batchRows)
}

// cutRecords makes a record table match the checkpoint a run restores:
// the run's rows of later epochs (flushed before a crash that came before
// their checkpoint) go, since the replay writes what it judges late
// again. A fresh start removes the job's rows of earlier runs unless it
// appends (startTable). Rows are the job's by its name, the run's by its
// id.
func (j *Job) cutRecords(db *pgio.RecordSink, sink string, restoring bool) error {
	ctx := j.sinkCtx
	name := j.plan.Name
	if restoring && !j.startsFresh(sink) {
		n, err := db.Cut(ctx, name, j.out.c.Run, j.out.c.Epoch)
		if err == nil && n > 0 {
			j.env.Options().Logger.Info("restore: removed the rows a later checkpoint would have covered", "table", db.Table(), "rows", n, "epoch", j.out.c.Epoch)
		}
		return err
	}
	return j.startTable(sink, "sinks."+sink, db.Table(), func() (int64, error) { return db.MaxRun(ctx, name) }, func() (int64, error) { return db.Reset(ctx, name) })
}

// flushAs flushes the buffered rows as the run's rows of epoch.
func (w *pgRecords) flushAs(epoch int64) error {
	w.db.SetEpoch(w.j.plan.Name, w.j.run, epoch)
	return w.db.Flush(context.Background())
}

// writeRecord buffers; without checkpoints a full batch is flushed as
// the epoch after the last (the run's only one).
func (w *pgRecords) writeRecord(it *item) error {
	if err := w.db.WriteRecord(it.id, it.reason, it.raw, it.meta); err != nil {
		return err
	}
	if w.j.flushDue(w.db.Pending(), w.batch) {
		return w.flushAs(w.j.out.c.Epoch + 1)
	}
	return nil
}

// commit flushes as the epoch output.sync has just begun (o.mu is held).
func (w *pgRecords) commit() error { return w.flushAs(w.j.out.c.Epoch) }

// close flushes what a run that ended well wrote last (as the epoch after
// the last checkpoint's: no restore follows a run that ended), and closes.
func (w *pgRecords) close() error {
	var err error
	if !w.j.execFailed && !w.j.failed.Load() {
		err = w.flushAs(w.j.out.c.Epoch + 1)
	}
	return errors.Join(err, w.db.Close())
}

// flush writes what is buffered to the file or stdout, whole lines only
// (a line is written under s.mu), without an fsync.
func (s *lineSink) flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.kafka != nil:
		return nil
	case s.file != nil:
		return s.file.WriteOut()
	}
	return s.w.Flush()
}

// fileFlushInterval is how often a job without checkpoints flushes its
// file sinks, so that a live job's results can be read as they come
// (tail -f) instead of when 256 KiB have gathered or the run ends.
const fileFlushInterval = time.Second

// startFlusher starts, for a job without checkpoints (whose file sinks
// are written as results come, not at checkpoints), a goroutine that
// flushes them every fileFlushInterval; the returned stop ends it and
// waits for it. With checkpoints, files are synced at each checkpoint.
func (j *Job) startFlusher() (stop func()) {
	if j.ck != nil || len(j.files) == 0 {
		return func() {}
	}
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(fileFlushInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				for _, f := range j.files {
					if err := f.flush(); err != nil {
						j.env.Options().Logger.Warn("flushing a file sink failed", "err", err)
					}
				}
			}
		}
	}()
	return func() { close(done); <-exited }
}

func (s *lineSink) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kafka != nil {
		return nil // the results sink closes the producer
	}
	switch {
	case s.file == nil && s.w == nil: // closed
		return nil
	case s.file == nil:
		return s.w.Flush()
	}
	err := s.file.Flush(context.Background())
	if cerr := s.file.Close(); err == nil {
		err = cerr
	}
	s.file = nil
	return err
}

// resultSink receives window results.
type resultSink interface {
	write(r window.Result[string, []byte]) error
	// commit makes what was written durable at a checkpoint (a file's
	// sync is done with the other files).
	commit() error
	close() error
}

// startsFresh reports whether sink name starts as at a fresh start: the
// run is fresh, or it resumes a checkpoint of a job without that sink (an
// added sink gets the output from the checkpoint on, and whatever an
// earlier run left in it goes, as a fresh start's file is truncated).
func (j *Job) startsFresh(name string) bool {
	return j.fresh || j.ck != nil && slices.Contains(j.ck.added, name)
}

// namedResult is a results sink with its name (spec.ResultsName).
type namedResult struct {
	resultSink
	name string
}

// kafkaResults returns the job's kafka results sink, or nil: a job has
// one at most (spec.Compile refuses a second), whose transactions carry
// the kafka late and dead-letter sinks too.
func (j *Job) kafkaResults() *kafkaResults {
	for _, r := range j.results {
		if k, ok := r.resultSink.(*kafkaResults); ok {
			return k
		}
	}
	return nil
}

// openSinks opens the sinks; offsets, from a restored checkpoint, say how
// long each file sink was when it was taken.
func (j *Job) openSinks(o RunOptions, offsets map[string]int64) error {
	s := &j.plan.Sinks
	var stdout *lineSink
	var src os.FileInfo
	if t := j.plan.Source.Type; t == "file" {
		src, _ = os.Stat(o.Path(j.plan.Source.Path))
	}
	// sinkPath resolves a sink's path, refusing the input file.
	sinkPath := func(k *spec.Sink) (string, error) {
		path := o.Path(k.Path)
		if fi, err := os.Stat(path); err == nil && src != nil && os.SameFile(fi, src) {
			return "", fmt.Errorf("sink %s is the input file %s; writing it would destroy the input", k.Path, j.plan.Source.Path)
		}
		return path, nil
	}
	open := func(name string, k *spec.Sink) (*lineSink, error) {
		switch {
		case k.Type == "kafka":
			kr := j.kafkaResults()
			if kr == nil {
				return nil, fmt.Errorf("sinks.%s: a kafka sink for %s needs kafka results (one transaction holds both)", name, name)
			}
			return &lineSink{topic: k.Topic, kafka: kr}, nil
		case k.Type == "stdout":
			if stdout == nil {
				stdout, _ = openLineSink("", o.Stdout, freshOffset)
			}
			return stdout, nil
		}
		path, err := sinkPath(k)
		if err != nil {
			return nil, err
		}
		offset := int64(freshOffset)
		switch {
		case offsets != nil:
			offset = offsets[name] // 0 when the checkpoint had none written yet
		case j.appendRuns:
			offset = appendOffset
		}
		ls, err := openLineSink(path, o.Stdout, offset)
		if err == nil {
			j.files[name] = ls
		}
		return ls, err
	}
	j.files = map[string]*lineSink{}
	for _, r := range j.path.Results {
		k, err := j.openResults(r, open, sinkPath)
		if k != nil {
			j.results = append(j.results, namedResult{k, r.Name})
		}
		if err != nil {
			return err
		}
	}
	if a := j.plan.Archive; a != nil {
		ar, last, err := newArchiveWriter(RunOptions{Dir: j.runDir}.Path(a.Dir), j.env.Options().Logger, j.fresh, j.appendRuns)
		if err != nil {
			return err
		}
		j.noteRun(last)
		j.archive = ar
		if r := s.Primary(); j.fresh && !j.appendRuns && r.Type == "jsonl" && r.Path != "" && r.Path != "-" {
			// The corrections of earlier runs' backfills go with them.
			if err := os.Remove(CorrectionsPath(j.plan, j.runDir)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	var err error
	j.ledgers = map[string]*ledgerSink{}
	cfg := func(op *spec.SinkOp) *spec.Sink {
		if op == nil {
			return nil
		}
		return op.Config
	}
	late, partial := cfg(j.path.Late), cfg(j.path.LatePartial)
	if j.late, err = j.openRecords("late", late, open, offsets != nil); err != nil {
		return err
	}
	if partial == nil && late != nil && (late.Type == "ledger" || late.Type == "postgres") {
		j.partial = j.late // the ledger holds partial misses too (W7), by their reason
	} else if j.partial, err = j.openRecords("late_partial", partial, open, offsets != nil); err != nil {
		return err
	}
	if j.dead, err = j.openRecords("dead_letter", cfg(j.path.DeadLetter), open, offsets != nil); err != nil {
		return err
	}
	return nil
}

// openRecords opens a late or dead-letter sink (nil when k is nil).
func (j *Job) openRecords(name string, k *spec.Sink, open func(string, *spec.Sink) (*lineSink, error), restoring bool) (recordSink, error) {
	switch {
	case k == nil:
		return nil, nil
	case k.Type == "ledger":
		dir := LedgerDir(j.plan, j.runDir, k)
		var pos *ledger.Pos
		switch {
		case restoring:
			p := j.out.c.Ledgers[name] // the zero Pos when the checkpoint had none yet
			pos = &p
		case j.appendRuns:
			// Earlier runs' entries stay; this run's id goes above theirs.
			last, ok, err := ledger.Last(dir)
			if err != nil {
				return nil, fmt.Errorf("sinks.%s: %w", name, err)
			}
			if ok {
				j.noteRun(last.Run)
			}
		default:
			pos = &ledger.Pos{} // a new run: the ledger starts over
		}
		retention := time.Duration(0)
		if k.Retention != nil {
			retention = time.Duration(*k.Retention) * time.Millisecond
		}
		w, err := ledger.Open(dir, pos, retention, j.env.Options().Clock.Now())
		if err != nil {
			return nil, fmt.Errorf("sinks.%s: %w", name, err)
		}
		l := &ledgerSink{w: w}
		j.ledgers[name] = l
		return l, nil
	case k.Type == "postgres":
		db, err := pgio.OpenRecords(j.sinkCtx, k.URL, k.Table, j.pgOptions(name, k))
		if err != nil {
			return nil, fmt.Errorf("sinks.%s: %w", name, err)
		}
		if err := j.cutRecords(db, name, restoring); err != nil {
			db.Close()
			return nil, fmt.Errorf("sinks.%s: %w", name, err)
		}
		return &pgRecords{db: db, j: j, batch: batchRows(k)}, nil
	case k.Type == "nats":
		s, err := openNATSSink(j, k)
		if err != nil {
			return nil, fmt.Errorf("sinks.%s: %w", name, err)
		}
		return &natsRecords{natsResults: natsResults{s: s, subject: k.Subject, prefix: name + "/", j: j}}, nil
	}
	return open(name, k)
}

// openResults opens results sink op. The sink it returns with an error is
// open too: the caller closes it.
func (j *Job) openResults(op *spec.SinkOp, open func(string, *spec.Sink) (*lineSink, error), sinkPath func(*spec.Sink) (string, error)) (resultSink, error) {
	name, r := op.Name, op.Config
	switch r.Type {
	case "nats":
		k, err := openNATSResults(j, name, r)
		if err != nil {
			return nil, err
		}
		return k, nil
	case "kafka":
		k, err := openKafkaResults(j, r)
		if err != nil {
			return nil, err
		}
		return k, nil
	}
	if kind, ok := cmp.Or(j.plan.Registry, connector.Default).Lookup(r.Type); ok && kind.Sink != nil && kind.Sink.OpenResults != nil {
		return j.openTableResults(op, kind.Sink.OpenResults, sinkPath)
	}
	ls, err := open(name, r)
	if err != nil {
		return nil, err
	}
	return &jsonlResults{s: ls, plan: j.plan, j: j}, nil
}

// startTable begins the run in the table of sink name (given in the spec
// at what): at a fresh start, and for a sink a resumed job added
// (startsFresh), it removes the job's rows, as a fresh start truncates the
// job's files, or, when the run appends (RunOptions.Append), notes the
// highest run they hold, which the new run's id goes above. Other jobs'
// rows stay.
func (j *Job) startTable(name, what, table string, maxRun, reset func() (int64, error)) error {
	if !j.startsFresh(name) {
		return nil
	}
	if j.appendRuns {
		last, err := maxRun()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		j.noteRun(last)
		return nil
	}
	n, err := reset()
	if err != nil {
		return fmt.Errorf("%s: starting the job's rows over for a new run: %w", what, err)
	}
	if n > 0 {
		j.env.Options().Logger.Info("a new run: removed the job's rows of earlier runs (--append keeps them)", "sink", what, "table", table, "rows", n)
	}
	return nil
}

// noteRun raises the id of a run being started above last, a run the
// job's outputs hold.
func (j *Job) noteRun(last int64) {
	if last >= j.out.c.Run {
		j.out.c.Run = last + 1
	}
}

// jsonlResults writes results as JSON lines: key fields, window, firing,
// run, pane, watermark, then the aggregates.
type jsonlResults struct {
	s    *lineSink
	plan *spec.Plan
	j    *Job
	buf  []byte
}

func (w *jsonlResults) write(r window.Result[string, []byte]) error {
	w.buf = outfmt.AppendResult(w.buf[:0], w.plan, w.j.run, r)
	return w.s.write(w.buf)
}

func (w *jsonlResults) close() error  { return w.s.close() }
func (w *jsonlResults) commit() error { return nil }

// tableResults is a results sink a connector kind opens
// (connector.SinkKind.OpenResults): each result is upserted as a row by
// (job, key, window) with the (run, pane) guard, committed at each
// checkpoint, or without checkpoints every batch_rows rows (flushDue),
// and at the end of a run that ended well.
type tableResults struct {
	s          connector.ResultsSink
	j          *Job
	keys, vals []string
	rows       [1]connector.Row
	batch      int // rows per transaction (batchRows)
	pending    int // rows written since the last Flush
}

// openTableResults opens results sink op through its kind's open
// function; a path setting is resolved from the spec's directory, and
// the input file is refused. The sink is begun as a fresh start or a
// run that keeps earlier rows begins it (startTable).
func (j *Job) openTableResults(op *spec.SinkOp, open func(context.Context, connector.ResultsOpen) (connector.ResultsSink, error), sinkPath func(*spec.Sink) (string, error)) (resultSink, error) {
	r := op.Config
	if r.Path != "" {
		if _, err := sinkPath(r); err != nil {
			return nil, err
		}
	}
	cols := outfmt.ResultColumns(j.plan)
	vals := make([]string, len(cols))
	for i, c := range cols {
		vals[i] = c.Name
	}
	s, err := open(j.sinkCtx, connector.ResultsOpen{Settings: spec.SinkSettings(r), Output: op.Path, Path: RunOptions{Dir: j.runDir}.Path,
		Job: j.plan.Name, Keys: j.plan.Key, Values: cols, Logger: j.env.Options().Logger.With("sink", op.Name), Stopping: j.stopping})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op.Path, err)
	}
	if err := j.startTable(op.Name, op.Path, cmp.Or(r.Table, "results"), func() (int64, error) { return s.MaxRun(j.sinkCtx) }, func() (int64, error) { return s.Reset(j.sinkCtx) }); err != nil {
		// After an error a sink is only closed.
		return nil, errors.Join(err, s.Close())
	}
	return &tableResults{s: s, j: j, keys: j.plan.Key, vals: vals, batch: batchRows(r)}, nil
}

func (w *tableResults) write(r window.Result[string, []byte]) error {
	row := &w.rows[0]
	row.Keys, row.Values = row.Keys[:0], row.Values[:0]
	row.Start, row.End = tableWindow(r.Window)
	row.Firing, row.Run, row.Pane, row.Watermark = r.Firing.String(), w.j.run, r.Pane, r.Watermark
	columns(r, w.keys, w.vals, func(key bool, name string, v []byte) {
		if key {
			row.Keys = append(row.Keys, connector.Column{Name: name, Value: v})
		} else {
			row.Values = append(row.Values, connector.Column{Name: name, Value: v})
		}
	})
	if err := w.s.Write(context.Background(), w.rows[:]); err != nil {
		return err
	}
	if w.pending++; w.j.flushDue(w.pending, w.batch) {
		return w.commit()
	}
	return nil
}

func (w *tableResults) commit() error {
	if err := w.s.Flush(context.Background()); err != nil {
		return err
	}
	w.pending = 0
	return nil
}

// close flushes what the end of a run that ended well produced (a failed
// run replays it from its checkpoint) and closes the sink.
func (w *tableResults) close() error {
	var err error
	if !w.j.execFailed && !w.j.failed.Load() {
		err = w.commit()
	}
	return errors.Join(err, w.s.Close())
}

// tableWindow is a window's bounds in a table: the global window is
// (MinTime, MaxTime).
func tableWindow(w window.Window) (etime.Time, etime.Time) {
	if w == window.Global {
		return etime.MinTime, etime.MaxTime
	}
	return w.Start, w.End
}

// columns calls add for each key field and each aggregate of a result,
// with its JSON value.
func columns(r window.Result[string, []byte], keys, vals []string, add func(key bool, name string, v []byte)) {
	for i, v := range outfmt.SplitKey(r.Key, len(keys)) {
		add(true, keys[i], []byte(v))
	}
	rest := r.Value
	for _, name := range vals {
		n := slices.Index(rest, 0)
		if n < 0 {
			break
		}
		add(false, name, rest[:n])
		rest = rest[n+1:]
	}
}

// uncheckedBatch is how many rows a Postgres sink buffers before it
// commits them unless batch_rows says otherwise (and how many windows
// the archive of a job without checkpoints gathers); sqliteio's
// BatchRows is the same.
const uncheckedBatch = 1000

// batchRows is a Postgres sink's batch_rows, or its default.
func batchRows(k *spec.Sink) int {
	if k.BatchRows > 0 {
		return k.BatchRows
	}
	return uncheckedBatch
}

// flushDue says whether a Postgres sink holding pending rows commits them
// now: when it holds batch rows and they are covered (a job without
// checkpoints, or the output is applying what a checkpoint covers, or the
// end of a run that did not fail: output.flushing), so that rows appear
// as the job runs and a checkpoint's rows go in transactions of batch
// rows, not in one (memory and transactions stay bounded). (Rows no
// checkpoint covers are not flushed: a restore must be able to cut back
// what no checkpoint covers.) o.mu is held.
func (j *Job) flushDue(pending, batch int) bool {
	return pending >= batch && (j.ck == nil || j.out.flushing)
}

// pgOptions are the pgio options of the Postgres sink k, called name:
// its timeouts, its logger naming it, and the job's stop.
func (j *Job) pgOptions(name string, k *spec.Sink) pgio.Options {
	o := outfmt.PgTimes(k)
	o.Logger, o.Stopping = j.env.Options().Logger.With("sink", name), j.stopping
	return o
}

// lateItem is a too-late record as an item: its line has the entry id,
// the record, its key, the windows it missed, the watermark at arrival and
// how late it was; its meta is the line without id and record.
func (j *Job) lateItem(l window.LateRecord[string, record.Record]) item {
	r := l.Record
	kafka, pos := j.position(r)
	id := entryID(kafka, r.Part, pos)
	meta := j.appendLateMeta(nil, l)
	line := append(make([]byte, 0, len(id)+len(r.Raw)+len(meta)+20), `{"id":"`...)
	line = append(line, id...)
	line = append(line, `","record":`...)
	line = append(line, r.Raw...)
	line = append(line, ',')
	line = append(line, meta[1:]...)
	j.recent.add(l, id)
	return item{kind: itemLate, line: line, id: id, raw: r.Raw, meta: meta, reason: l.Reason.String(),
		arrived: j.env.Options().Clock.Now().UnixMilli(), wm: l.Watermark}
}

// LedgerDir is the directory of a job's ledger: the sink's dir (relative
// to dir, the spec's directory), then the job's name.
func LedgerDir(p *spec.Plan, dir string, k *spec.Sink) string {
	d := k.Dir
	if !filepath.IsAbs(d) {
		d = filepath.Join(dir, d)
	}
	name := p.Name
	if name == "" {
		name = "job"
	}
	return filepath.Join(d, strings.NewReplacer("/", "_", "\\", "_", "..", "_").Replace(name))
}

// ledgerSink appends too-late records to the job's ledger; the late and
// late_partial outputs may share it.
type ledgerSink struct {
	mu     sync.Mutex
	w      *ledger.Writer
	pos    ledger.Pos
	buf    []byte
	closed bool
}

func (l *ledgerSink) writeRecord(it *item) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := append(l.buf[:0], `{"id":`...)
	b = weir.AppendJSONString(b, it.id)
	b = append(b, `,"kind":"late","reason":`...)
	b = weir.AppendJSONString(b, it.reason)
	b = append(b, ',')
	b = append(b, it.meta[1:len(it.meta)-1]...)
	b = append(b, `,"arrived_at":`...)
	b = strconv.AppendInt(b, it.arrived, 10)
	b = append(b, `,"record":`...)
	b = append(b, it.raw...)
	b = append(b, '}')
	l.buf = b
	return l.w.Append(b, time.UnixMilli(it.arrived))
}

func (l *ledgerSink) commit() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	pos, err := l.w.Commit()
	if err == nil {
		l.pos = pos
	}
	return err
}

func (l *ledgerSink) position() ledger.Pos {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pos
}

// close commits and closes; it is idempotent (late and late_partial may
// share the sink).
func (l *ledgerSink) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	return l.w.Close()
}

// LateRecord is a too-late record as RecentLate lists it.
type LateRecord struct {
	ID         string
	Key        string // the key values as a JSON array
	TS         etime.Time
	Watermark  etime.Time
	LatenessMS int64
	Windows    string // the missed windows, [start,end) in ms
	Reason     string // window_expired or window_expired_partial
}

// recentLate keeps the newest too-late records for the dashboard; late
// records come from several subtasks.
type recentLate struct {
	mu   sync.Mutex
	ring [50]LateRecord
	n    int
}

func (r *recentLate) add(l window.LateRecord[string, record.Record], id string) {
	var ws strings.Builder
	for i, w := range l.Windows {
		if i > 0 {
			ws.WriteByte(' ')
		}
		ws.WriteString(w.String())
	}
	e := LateRecord{ID: id, Key: string(appendKey(nil, l.Key)), TS: l.Timestamp, Watermark: l.Watermark,
		LatenessMS: int64(l.Lateness), Windows: ws.String(), Reason: l.Reason.String()}
	r.mu.Lock()
	r.ring[r.n%len(r.ring)] = e
	r.n++
	r.mu.Unlock()
}

// RecentLate returns the job's newest too-late records (at most 50),
// oldest first; it is safe to call while the job runs.
func (j *Job) RecentLate() []LateRecord {
	r := &j.recent
	r.mu.Lock()
	defer r.mu.Unlock()
	n := min(r.n, len(r.ring))
	out := make([]LateRecord, 0, n)
	for i := r.n - n; i < r.n; i++ {
		out = append(out, r.ring[i%len(r.ring)])
	}
	return out
}

// appendLateMeta renders what a too-late record missed: its key, the
// windows it missed, the watermark at arrival, how late it was, the hash
// of the spec that gives those their meaning (specHash) and the run.
func (j *Job) appendLateMeta(b []byte, l window.LateRecord[string, record.Record]) []byte {
	b = append(b, `{"key":{`...)
	keys := j.plan.Key
	for i, v := range outfmt.SplitKey(l.Key, len(keys)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = weir.AppendJSONString(b, keys[i])
		b = append(b, ':')
		b = append(b, v...)
	}
	b = append(b, `},"ts":`...)
	b = strconv.AppendInt(b, int64(l.Timestamp), 10)
	b = append(b, `,"windows":[`...)
	for i, w := range l.Windows {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, "[%d,%d]", int64(w.Start), int64(w.End))
	}
	b = fmt.Appendf(b, `],"watermark":%d,"lateness_ms":%d,"spec":"`, int64(l.Watermark), int64(l.Lateness))
	b = append(b, j.specHash...)
	b = append(b, `","run":`...)
	b = strconv.AppendInt(b, j.run, 10)
	return append(b, '}')
}

// CorrectionsPath is where weir backfill appends the revisions of a job
// with jsonl results: beside the results file, with .backfill before the
// extension (results.jsonl: results.backfill.jsonl). Not the results file
// itself: a restore of the live job cuts that back to its checkpoint.
func CorrectionsPath(p *spec.Plan, dir string) string {
	path := RunOptions{Dir: dir}.Path(p.Sinks.Primary().Path)
	base, ext := path, ""
	if i := strings.LastIndexByte(path, '.'); i > strings.LastIndexByte(path, '/') {
		base, ext = path[:i], path[i:]
	}
	return base + ".backfill" + ext
}
