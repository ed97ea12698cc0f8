package job

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/outfmt"
	"github.com/weirstream/weir/internal/record"
	"github.com/weirstream/weir/ledger"
	"github.com/weirstream/weir/spec"
	"github.com/weirstream/weir/window"
)

// recordSink receives late records and dead letters.
type recordSink interface {
	writeRecord(it *item) error
	// commit makes what was written durable at a checkpoint (a message
	// sink's is its pre-commit, which output.sync makes for every message
	// sink at once).
	commit() error
	close() error
}

// namedSink is a record sink with the name of its spec field.
type namedSink struct {
	recordSink
	name string
}

// recordSinks returns the job's open late and dead-letter sinks: each
// window's late and late_partial, then each read's dead letters.
func (j *Job) recordSinks() []namedSink {
	var all []recordSink
	for _, b := range j.branches {
		all = append(all, b.late, b.partial)
	}
	for _, r := range j.reads {
		all = append(all, r.dead)
	}
	var ss []namedSink
	for _, s := range all {
		if s != nil && !slices.ContainsFunc(ss, func(n namedSink) bool { return n.recordSink == s }) { // late and late_partial may share one
			ss = append(ss, namedSink{s, j.sinkName(s)})
		}
	}
	return ss
}

// sinkName is the name of a record sink: its window's late or
// late_partial sink's (late and late_partial for a YAML job; the late
// sink's when the two are one), or dead_letter.
func (j *Job) sinkName(s recordSink) string {
	for _, b := range j.branches {
		switch {
		case s == nil:
		case s == b.late:
			return b.Late.Name
		case s == b.partial:
			return b.LatePartial.Name
		}
	}
	for _, r := range j.reads {
		if s != nil && s == r.dead {
			return r.DeadLetter.Name
		}
	}
	return "dead_letter"
}

// allResults are every window's results sinks.
func (j *Job) allResults() []namedResult {
	var rs []namedResult
	for _, b := range j.branches {
		rs = append(rs, b.results...)
	}
	return rs
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
	// A source that does not reach its server (a Kafka broker down)
	// waits as a sink does: a call "reach" since its first failure.
	for _, r := range j.reads {
		if since, err := r.reach.Failing(); !since.IsZero() {
			c := SinkCall{Sink: r.stage, Call: "reach", Since: since} // monitor.ReachCall
			if err != nil {
				c.Err = err.Error()
			}
			out = append(out, c)
		}
	}
	return out
}

// listSinks names the open sinks, for SinkCalls.
func (j *Job) listSinks() []string {
	var names []string
	for _, r := range j.allResults() {
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

// drainInterval is how often a job without checkpoints drains its sinks
// (connector.Drainer), so that a live job's results can be read as they
// come (tail -f) instead of when 256 KiB have gathered or the run ends.
const drainInterval = time.Second

// startFlusher starts, for a job without checkpoints (whose sinks are
// written as results come, not at checkpoints), a goroutine that drains
// its message sinks every drainInterval; the returned stop ends it and
// waits for it. With checkpoints, sinks are made durable at each
// checkpoint.
func (j *Job) startFlusher() (stop func()) {
	if j.ck != nil || !slices.ContainsFunc(j.msgs, func(m *msgSink) bool { _, ok := m.s.(connector.Drainer); return ok }) {
		return func() {}
	}
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(drainInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				j.out.mu.Lock()
				for _, m := range j.msgs {
					if err := m.drain(); err != nil {
						j.env.Options().Logger.Warn("writing out a sink's buffer failed", "sink", m.name, "err", err)
					}
				}
				j.out.mu.Unlock()
			}
		}
	}()
	return func() { close(done); <-exited }
}

// resultSink receives window results.
type resultSink interface {
	write(r window.Result[string, []byte]) error
	// commit makes what was written durable at a checkpoint (a message
	// sink's is its pre-commit, which output.sync makes for every message
	// sink at once).
	commit() error
	close() error
}

// forgetRevisions removes what earlier backfills appended to the results
// apart from them (connector.LogStore.Forget), for a fresh start.
func (j *Job) forgetRevisions() error {
	kind, ok := j.plan.Kinds().Lookup(j.plan.Sinks.Primary().Type)
	if !ok || kind.Sink == nil || kind.Sink.Revise != connector.ReviseLog {
		return nil
	}
	st, err := OpenResultsStore(j.sinkCtx, j.plan, j.runDir, true)
	if err != nil {
		return err
	}
	l, ok := st.(connector.LogStore)
	if ok {
		err = l.Forget(j.sinkCtx)
	}
	return errors.Join(err, st.Close())
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

// openSinks opens the sinks, recovering them to the restored checkpoint
// when restoring.
func (j *Job) openSinks(o RunOptions, restoring bool) error {
	var stdout io.Writer // one buffer keeps the lines of several stdout sinks whole
	if o.Stdout != nil {
		stdout = bufio.NewWriterSize(o.Stdout, 64<<10)
	}
	open := func(op *spec.SinkOp, role connector.SinkRole) (*msgSink, error) {
		if err := j.notInput(op.Config); err != nil {
			return nil, err
		}
		kind, ok := j.plan.Kinds().Lookup(op.Config.Type)
		if !ok || kind.Sink == nil || kind.Sink.OpenMessages == nil {
			return nil, fmt.Errorf("%s: kind %q cannot be opened as a sink of %s", op.Path, op.Config.Type, role)
		}
		return j.openMessages(op, kind.Sink.OpenMessages, role, stdout, restoring)
	}
	for _, b := range j.branches {
		for _, r := range b.Results {
			k, err := j.openResults(b, r, open)
			if k != nil {
				b.results = append(b.results, namedResult{k, r.Name})
			}
			if err != nil {
				return err
			}
		}
	}
	if a := j.plan.Archive; a != nil && o.Task != nil && o.Task.Archive != nil {
		j.archive = &archiveWriter{task: o.Task.Archive, pending: map[archiveWindow]*archivePut{}}
	} else if a != nil {
		ar, last, err := newArchiveWriter(RunOptions{Dir: j.runDir}.Path(a.Dir), j.env.Options().Logger, j.fresh, j.appendRuns)
		if err != nil {
			return err
		}
		j.noteRun(last)
		j.archive = ar
		if j.fresh && !j.appendRuns {
			// The revisions earlier runs' backfills appended go with
			// those runs' results (a jsonl file's corrections).
			if err := j.forgetRevisions(); err != nil {
				return err
			}
		}
	}
	var err error
	for _, b := range j.branches {
		late, partial := b.Late, b.LatePartial
		if b.late, err = j.openRecords(late, connector.RoleLate, open, restoring); err != nil {
			return err
		}
		switch {
		case partial != nil:
			if b.partial, err = j.openRecords(partial, connector.RoleLate, open, restoring); err != nil {
				return err
			}
		case late != nil && j.keepsReasons(late):
			b.partial = b.late // the ledger holds partial misses too (W7), by their reason
		}
	}
	for _, r := range j.reads {
		if r.dead, err = j.openRecords(r.DeadLetter, connector.RoleDeadLetters, open, restoring); err != nil {
			return err
		}
	}
	return nil
}

// notInput refuses a sink whose path is an input file: the file of a
// read whose source reads one.
func (j *Job) notInput(k *spec.Sink) error {
	if k.Path == "" {
		return nil
	}
	p := RunOptions{Dir: j.runDir}
	sink, err := os.Stat(p.Path(k.Path))
	if err != nil {
		return nil
	}
	for _, r := range j.reads {
		in := r.plan.Source.Path
		if in == "" { // a source that reads no file
			continue
		}
		if src, err := os.Stat(p.Path(in)); err == nil && os.SameFile(sink, src) {
			return fmt.Errorf("sink %s is the input file %s; writing it would destroy the input", k.Path, in)
		}
	}
	return nil
}

// keepsReasons reports whether sink op's kind keeps each late record with
// its reason (connector.SinkKind.Reasons), so that it takes the partial
// misses when no late_partial sink is given.
func (j *Job) keepsReasons(op *spec.SinkOp) bool {
	kind, ok := j.plan.Kinds().Lookup(op.Config.Type)
	return ok && kind.Sink != nil && kind.Sink.Reasons
}

// PrepareSinks readies the sinks of p's job before its runs, as Open does
// for a run of its own (without checkpoints): a group's member calls it
// once for the tasks it runs (RunOptions.Task), whose Open does not.
func PrepareSinks(p *spec.Plan, o RunOptions) error {
	path, err := p.Graph.Path()
	if err != nil {
		return err
	}
	return prepareSinks(p, path, o, false)
}

// prepareSinks readies the sinks' servers before the run
// (connector.SinkKind.Prepare): a Kafka sink's topic must exist, and
// with checkpoints its marker topic is created if it is missing; o.Info
// is told what was done. Every sink is first checked, all at once (so
// that servers that do not answer cost one wait, not one per sink, and
// the refusal names every problem); only then are they prepared, the
// late and dead-letter sinks first, so that nothing is created for a
// run that is refused.
func prepareSinks(p *spec.Plan, path *spec.Path, o RunOptions, checkpoints bool) error {
	ops := path.Sinks()
	slices.Reverse(ops)
	prepare := func(op *spec.SinkOp, checkOnly bool) error {
		kind, ok := p.Kinds().Lookup(op.Config.Type)
		if !ok || kind.Sink == nil || kind.Sink.Prepare == nil {
			return nil
		}
		var results connector.Settings
		if r := p.Sinks.Results.First(op.Config.Type); r != nil {
			results = spec.SinkSettings(r)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		info := o.Info
		if checkOnly {
			info = nil
		}
		return kind.Sink.Prepare(ctx, connector.PrepareOpen{Settings: spec.SinkSettings(op.Config), Output: op.Path, Role: op.Role, Job: p.Name,
			Results: results, Checkpoints: checkpoints, CheckOnly: checkOnly, Info: info})
	}
	errs := make([]error, len(ops))
	var wg sync.WaitGroup
	for i, op := range ops {
		wg.Go(func() { errs[i] = prepare(op, true) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, op := range ops {
		if err := prepare(op, false); err != nil {
			return err // the rest were checked: nothing more is created
		}
	}
	return nil
}

// openRecords opens a late or dead-letter sink (nil when op is nil).
func (j *Job) openRecords(op *spec.SinkOp, role connector.SinkRole, open func(*spec.SinkOp, connector.SinkRole) (*msgSink, error), restoring bool) (recordSink, error) {
	if op == nil {
		return nil, nil
	}
	m, err := open(op, role)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// openResults opens results sink op. The sink it returns with an error is
// open too: the caller closes it.
func (j *Job) openResults(b *branch, op *spec.SinkOp, open func(*spec.SinkOp, connector.SinkRole) (*msgSink, error)) (resultSink, error) {
	r := op.Config
	if kind, ok := j.plan.Kinds().Lookup(r.Type); ok && kind.Sink != nil && kind.Sink.OpenResults != nil {
		return j.openTableResults(b, op, kind.Sink.OpenResults)
	}
	m, err := open(op, connector.RoleResults)
	if err != nil {
		return nil, err
	}
	m.plan = b.plan // its results are the window's
	return m, nil
}

// startTable begins the run in the table of sink name (given in the spec
// at what): at a fresh start, and for a sink a resumed job added
// (startsFresh), it returns begin, which removes the job's rows, as a
// fresh start truncates the job's files; or, when the run appends
// (RunOptions.Append), it notes the highest run they hold, which the new
// run's id goes above. Other jobs' rows stay. The rows are removed only
// when the run first writes or commits to the table (tableResults.start),
// so that a run that fails before (an unreachable input) removes nothing;
// the removal is warned about.
func (j *Job) startTable(name, what, table string, maxRun, reset func() (int64, error)) (begin func() error, err error) {
	if !j.startsFresh(name) {
		return nil, nil
	}
	if j.appendRuns {
		last, err := maxRun()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		j.noteRun(last)
		return nil, nil
	}
	return func() error {
		n, err := reset()
		if err != nil {
			return fmt.Errorf("%s: starting the job's rows over for a new run: %w", what, err)
		}
		if n > 0 {
			msg := fmt.Sprintf("%s: a new run of job %q: removed its %d rows of earlier runs from table %s (--append keeps them; a resume from a checkpoint keeps what it covers)", what, j.plan.Name, n, table)
			j.warnOutput(msg)
		}
		return nil
	}, nil
}

// warnOutput tells of what a run did to its outputs' earlier contents:
// on RunOptions.Warn, or the engine's logger without one.
func (j *Job) warnOutput(msg string) {
	if j.warn != nil {
		j.warn(msg)
		return
	}
	j.env.Options().Logger.Warn(msg)
}

// noteRun raises the id of a run being started above last, a run the
// job's outputs hold.
func (j *Job) noteRun(last int64) {
	if last >= j.out.c.Run {
		j.out.c.Run = last + 1
	}
}

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
	// begin, until the first write or commit calls it, begins a fresh
	// run in the table (startTable).
	begin func() error
}

// openTableResults opens results sink op through its kind's open
// function; a path setting is resolved from the spec's directory, and
// the input file is refused. The sink is begun as a fresh start or a
// run that keeps earlier rows begins it (startTable).
func (j *Job) openTableResults(b *branch, op *spec.SinkOp, open func(context.Context, connector.ResultsOpen) (connector.ResultsSink, error)) (resultSink, error) {
	plan := b.plan
	r := op.Config
	if err := j.notInput(r); err != nil {
		return nil, err
	}
	cols := outfmt.ResultColumns(plan)
	vals := make([]string, len(cols))
	for i, c := range cols {
		vals[i] = c.Name
	}
	s, err := open(j.sinkCtx, connector.ResultsOpen{Settings: spec.SinkSettings(r), Output: op.Path, Path: RunOptions{Dir: j.runDir}.Path,
		Job: j.plan.Name, Keys: plan.Key, Values: cols, Layout: tableLayout(r), Logger: j.env.Options().Logger.With("sink", op.Name), Stopping: j.stopping})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op.Path, err)
	}
	if r.Layout == spec.LayoutDeclared && j.startsFresh(op.Name) {
		// A fresh start cannot remove the job's rows of a declared table
		// (it does not tell them): the run goes above the newest its run
		// column holds, so that the pane guard takes its rows (a clock
		// behind the last run's would have them refused without a word).
		last, err := s.MaxRun(j.sinkCtx)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("%s: %w", op.Path, err), s.Close())
		}
		j.noteRun(last)
	}
	begin, err := j.startTable(op.Name, op.Path, cmp.Or(r.Table, "results"), func() (int64, error) { return s.MaxRun(j.sinkCtx) }, func() (int64, error) { return s.Reset(j.sinkCtx) })
	if err == nil && begin == nil && !j.startsFresh(op.Name) {
		err = j.tableKept(b, op, s)
	}
	if err != nil {
		// After an error a sink is only closed.
		return nil, errors.Join(err, s.Close())
	}
	return &tableResults{s: s, j: j, keys: plan.Key, vals: vals, batch: batchRows(r), begin: begin}, nil
}

// tableLayout is the declared layout of results sink r (nil: weir's).
func tableLayout(r *spec.Sink) *connector.TableLayout {
	if r.Layout != spec.LayoutDeclared {
		return nil
	}
	l := &connector.TableLayout{PrimaryKey: r.PrimaryKey}
	for _, c := range r.Columns {
		l.Columns = append(l.Columns, connector.LayoutColumn{Name: c.Name, From: c.From, Time: c.Time, Type: c.Type})
	}
	return l
}

// tableKept refuses to resume into table sink s of branch b when the
// checkpoint restored says results were written to it and the table
// holds no row of the run: the table (or its database file) was removed
// or emptied outside weir, and the rows the checkpoint covers would
// never be written again (a results file shorter than its checkpoint is
// refused so too). A group's task, whose table rows come from its
// committed outbox, is not checked here.
func (j *Job) tableKept(b *branch, op *spec.SinkOp, s connector.ResultsSink) error {
	if j.ck == nil || j.ck.restored == nil || j.task {
		return nil
	}
	if rl, ok := s.(connector.RunlessTable); ok && rl.Runless() {
		return nil // a table without a run column cannot tell
	}
	written := j.out.c.Results
	if w := j.out.c.window(b.i); w != nil {
		written = w.Results
	}
	if written == 0 {
		return nil
	}
	last, err := s.MaxRun(j.sinkCtx)
	if err != nil {
		return fmt.Errorf("%s: %w", op.Path, err)
	}
	if last < j.out.c.Run {
		return fmt.Errorf("%s: table %s holds no rows of run %d, but checkpoint %d covers %d results written to it: the table or its database was removed or emptied outside weir, and a resume would not write those rows again; restore it, or start over with a fresh run (--fresh)",
			op.Path, cmp.Or(op.Config.Table, "results"), j.out.c.Run, j.ck.restored.ID, written)
	}
	return nil
}

// start begins the run in the table (startTable's begin) before the
// first write or commit.
func (w *tableResults) start() error {
	if w.begin != nil {
		if err := w.begin(); err != nil {
			return err // tried again by the next write or commit, if any
		}
		w.begin = nil
	}
	return nil
}

func (w *tableResults) write(r window.Result[string, []byte]) error {
	if err := w.start(); err != nil {
		return err
	}
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
	if err := w.start(); err != nil {
		return err
	}
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

// flushDue says whether a results table (tableResults) holding pending
// rows commits them now: when it holds batch rows and they are covered (a job without
// checkpoints, or the output is applying what a checkpoint covers, or the
// end of a run that did not fail: output.flushing), so that rows appear
// as the job runs and a checkpoint's rows go in transactions of batch
// rows, not in one (memory and transactions stay bounded). (Rows no
// checkpoint covers are not flushed: a restore must be able to cut back
// what no checkpoint covers: a table's upserts cannot be cut back by
// epoch, as a record table's rows are.) o.mu is held.
func (j *Job) flushDue(pending, batch int) bool {
	return pending >= batch && (j.ck == nil || j.out.flushing)
}

// lateItem is a too-late record as an item: its line has the entry id,
// the record, its key, the windows it missed, the watermark at arrival and
// how late it was; its meta is the line without id and record.
func (j *Job) lateItem(b *branch, l window.LateRecord[string, record.Record]) item {
	r := l.Record
	kafka, pos := j.reads[b.Read].position(r)
	id := entryID(kafka, r.Part, pos)
	meta := j.appendLateMeta(nil, b, l)
	line := append(make([]byte, 0, len(id)+len(r.Raw)+len(meta)+20), `{"id":"`...)
	line = append(line, id...)
	line = append(line, `","record":`...)
	at := len(line)
	line = append(line, r.Raw...)
	raw := line[at:len(line):len(line)] // the record's own copy: r.Raw may be cut from a source's slab
	line = append(line, ',')
	line = append(line, meta[1:]...)
	j.recent.add(l, id)
	return item{kind: itemLate, b: uint8(b.i), line: line, id: id, raw: raw, meta: meta, reason: l.Reason.String(),
		arrived: j.env.Options().Clock.Now().UnixMilli(), wm: l.Watermark}
}

// LedgerDir is the directory of a job's ledger: the sink's dir (relative
// to dir, the spec's directory), then the job's name (ledger.JobDir).
func LedgerDir(p *spec.Plan, dir string, k *spec.Sink) string {
	return ledger.JobDir(RunOptions{Dir: dir}.Path(k.Dir), p.Name)
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
// of the spec that gives those their meaning (specHash), the run and the
// job's name.
func (j *Job) appendLateMeta(b []byte, br *branch, l window.LateRecord[string, record.Record]) []byte {
	b = append(b, `{"key":{`...)
	keys := br.plan.Key
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
	b = append(b, `,"job":`...)
	b = weir.AppendJSONString(b, j.plan.Name)
	return append(b, '}')
}

// OpenResultsStore opens the results of plan's first results sink as
// weir backfill revises them and the complete answer reads them back,
// through its kind (connector.SinkKind.OpenStore); dir is the spec's
// directory, create says the caller will write. It is a refusal
// (ErrNoStore) when the kind keeps no results it can read back.
func OpenResultsStore(ctx context.Context, p *spec.Plan, dir string, create bool) (connector.ResultsStore, error) {
	r := p.Sinks.Primary()
	kind, ok := p.Kinds().Lookup(r.Type)
	if !ok || kind.Sink == nil || kind.Sink.OpenStore == nil {
		return nil, fmt.Errorf("sinks.results is %s: %w", r.Type, ErrNoStore)
	}
	return kind.Sink.OpenStore(ctx, connector.StoreOpen{Settings: spec.SinkSettings(r), Output: "sinks." + spec.ResultsPath(0, len(p.Sinks.Results)),
		Path: RunOptions{Dir: dir}.Path, Job: p.Name, Keys: p.Key, Values: outfmt.ResultColumns(p), Create: create})
}

// ErrNoStore is matched (errors.Is) by OpenResultsStore's error for a
// results kind whose results weir backfill cannot read back or revise.
var ErrNoStore = errors.New("weir backfill cannot read back or revise its results")
