package job

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/epochs"
	"github.com/weirstream/weir/internal/outfmt"
	"github.com/weirstream/weir/internal/record"
	"github.com/weirstream/weir/spec"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/state/pebblestate"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"

	// The built-in connector kinds, which the plans it runs name.
	_ "github.com/weirstream/weir/connector/all"
)

// sourceStage names the job's first source's stage (the first stage, so
// the name is not made unique); a plan's other sources' stages are named
// after their nodes.
const sourceStage = "source"

// RunOptions are how a spec is run, beside the spec itself.
type RunOptions struct {
	// Dir resolves relative paths in the spec (the spec file's directory).
	Dir string
	// Stdin is the input of a stdin source; Stdout receives stdout sinks.
	Stdin  io.Reader
	Stdout io.Writer
	// Deterministic runs on one goroutine with processing time fixed at
	// Now, watermarks emitted after every record and no idleness, so that
	// outputs are byte-identical run to run. Its checkpoints still come
	// on the interval of the wall clock (or of CheckpointClock).
	Deterministic bool
	// Now is processing time in a deterministic run.
	Now time.Time
	// Clock is processing time otherwise (default: the wall clock).
	Clock clock.Clock
	// Parallelism is the window operator's (default: GOMAXPROCS).
	Parallelism int
	// Stop, when it returns true, ends the sources as if their input had
	// ended (Ctrl-C); open windows stay unfired unless Drain is set, which
	// sends the final MAX watermark first. In a parallel run it is also
	// asked every 50ms by a goroutine that tells sinks waiting for a
	// database to give up, so it must be safe for concurrent use.
	Stop  func() bool
	Drain bool
	// Logger receives the engine's log (default: discard).
	Logger *slog.Logger
	// Warn, when set, is told about suspicious input as it happens (a
	// channel's event time jumping back by more than an hour).
	Warn func(msg string)
	// Warned remembers the warnings given once: runs that share one (the
	// attempts of RunRestarting, a group member's tasks and their
	// restarts) give each once between them. nil: the run's own.
	Warned *Warned
	// CheckpointDir and CheckpointInterval override the spec's checkpoint
	// settings; Fresh ignores existing checkpoints (a fresh run).
	CheckpointDir      string
	CheckpointInterval time.Duration
	Fresh              bool
	// CheckpointClock, when set, is what the checkpoint interval is
	// measured on (weir.CheckpointOptions.Clock); default: Clock, and the
	// wall clock in a deterministic run. Tests give a clock that has
	// passed the interval at every look, so that a deterministic run
	// takes a checkpoint before every read of its source, however fast
	// the machine.
	CheckpointClock clock.Clock
	// Append, at a fresh start, keeps what earlier runs wrote to the
	// job's outputs (its files, ledger, archive and table rows) instead of
	// starting them over, and backfill then uses every run's ledger
	// entries: the daily-file pattern. A resumed run ignores it.
	Append bool
	// Crash, when set, is called at named points of checkpointing (crash
	// tests kill the process there).
	Crash func(point string)
	// Info, when set, is told what the job does that a person should know
	// (resuming from a checkpoint).
	Info func(msg string)
	// Task, when set, runs the plan as one task of a group member (weir
	// run --instance): its checkpoints go to Task.Store instead of a
	// directory, and it restores Task.Restore. The spec's checkpoint
	// settings and CheckpointDir are ignored, and the sinks are not
	// prepared: the member does that once (PrepareSinks).
	Task *TaskCheckpoints

	// locks, set by RunRestarting, are the run's locks, held across its
	// attempts; nil: Open takes them and Run releases them.
	locks *runLocks
}

// Job is a spec ready to run, with its sources and sinks open.
type Job struct {
	plan *spec.Plan
	env  *weir.Env
	// path is the plan's graph as the path this runner executes, reads
	// its sources (one for a YAML job), each with its decoder, and
	// branches its windows (one for a YAML job), each with its sinks.
	path     *spec.Path
	reads    []*read
	branches []*branch
	// msgs are the sinks opened as sinks of messages, in opening order.
	msgs   []*msgSink
	runDir string // RunOptions.Dir: relative paths start there
	// archive keeps each window's newest revision for backfill (jsonl
	// and Kafka results with an archive block); nil otherwise.
	archive *archiveWriter
	recent  recentLate
	// specHash is outfmt.SpecHash(plan), in every late entry's meta.
	specHash string
	stop     func() bool
	drain    bool // RunOptions.Drain
	// deterministic is RunOptions.Deterministic.
	deterministic bool
	// restoredAt is when Open restored a checkpoint (zero: fresh).
	restoredAt time.Time
	// run is the run's id (outCounters.Run), set before any record
	// flows; appendRuns is RunOptions.Append at a fresh start (false on a
	// resume: the outputs are cut back to the checkpoint instead).
	run        int64
	appendRuns bool
	// task: the job is a group's task (RunOptions.Task set).
	task  bool
	fresh bool // the run starts here (no checkpoint restored)
	// removeState removes the pebble backend's scratch directory.
	removeState func()
	// locks are the run's locks when the job took them (Open without
	// RunRestarting), released with the scratch state.
	locks *runLocks
	out   *output
	ck    *checkpoints // nil without checkpoints
	// earlier is the end of the latest window that earlier runs kept in
	// the outputs wrote (--append; 0: none): a result of a window that
	// starts before it may replace an earlier run's row (output.overEarlier).
	earlier etime.Time
	// nulls counts the NULLs of the expressions over results (a
	// having, a join's condition, a sink column's cast) where Flink fails
	// the job; the decoders count those of the records' own.
	nulls *record.NullCount
	// sinkNames are the open sinks, set once they are open (SinkCalls).
	sinkNames []string
	// warn is RunOptions.Warn (nil: no warnings).
	warn func(msg string)
	// firstDead maps a dead-letter reason to the first such dead
	// letter's detail (string to string), for the summary.
	firstDead sync.Map
	// sinkCtx bounds the sinks' lives (Postgres sinks are opened with it):
	// it is cancelled when Run's ctx is (an abort), and at the end of the
	// run. stopping is done once the run stops (RunOptions.Stop), fails,
	// or is aborted: sinks retrying an unavailable database give up then
	// (pgio.Options.Stopping) instead of holding the stop back.
	sinkCtx, stopping         context.Context
	cancelSinks, stopRetrying context.CancelFunc

	mu struct {
		sync.Mutex
		err error
	}
	failed atomic.Bool
	// execFailed: the run ended with an error; a transactional sink
	// aborts what no checkpoint covers instead of committing it.
	execFailed bool
}

// Open builds the job of plan: it opens the input and the sinks, so a
// missing file is reported here, before anything runs. File sinks are
// truncated (a fresh run). First it locks the checkpoint directory and
// the file outputs until the job's run ends: while another run holds one,
// Open changes nothing and returns a *LockedError (ErrLocked). When no
// checkpoint of the directory verifies, it returns a *DamagedError
// (ErrNoValidCheckpoint) unless the run is fresh.
func Open(plan *spec.Plan, o RunOptions) (*Job, error) {
	path, err := plan.Graph.Path()
	if err != nil {
		return nil, fmt.Errorf("job: %w", err)
	}
	switch n := len(path.Windows); {
	case n > math.MaxUint8+1: // an item names its window in a byte
		return nil, fmt.Errorf("job: the plan has %d windows; a run takes at most %d", n, math.MaxUint8+1)
	case n > 1 && plan.Archive != nil:
		return nil, fmt.Errorf("job: the plan has %d windows; the archive keeps one window's results: remove it", n)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	opts := weir.DefaultOptions()
	opts.Logger = o.Logger
	opts.StateBudget = plan.StateBudget
	opts.Deterministic = o.Deterministic
	if o.Parallelism > 0 {
		opts.Parallelism = o.Parallelism
		if opts.Parallelism > opts.MaxParallelism {
			opts.MaxParallelism = opts.Parallelism
		}
	}
	var removeState func()
	if plan.Backend == spec.PebbleBackend {
		nb, remove, err := pebbleBackend(plan, o)
		if err != nil {
			return nil, err
		}
		opts.NewBackend, removeState = nb, remove
	}
	if o.Deterministic && o.Parallelism == 0 {
		// The order of result lines depends on the parallelism; a
		// deterministic run must not depend on the machine's cores.
		opts.Parallelism = 1
	}
	opts.WatermarkInterval = path.Watermark.Interval.Std()
	switch {
	case o.Deterministic:
		opts.Clock = clock.NewFake(o.Now)
	case o.Clock != nil:
		opts.Clock = o.Clock
	}
	nulls := new(record.NullCount)
	reads, branches, err := newReads(plan, path, nulls, opts.Clock)
	if err != nil {
		if removeState != nil {
			removeState()
		}
		return nil, err
	}
	j := &Job{plan: plan, path: path, reads: reads, branches: branches, stop: o.Stop, drain: o.Drain, deterministic: o.Deterministic, removeState: removeState, runDir: o.Dir, specHash: outfmt.SpecHash(plan), nulls: nulls}
	j.sinkCtx, j.cancelSinks = context.WithCancel(context.Background())
	j.stopping, j.stopRetrying = context.WithCancel(context.Background())
	if o.locks == nil {
		locks, err := lockRun(plan, o)
		if err != nil {
			return nil, errors.Join(err, j.cleanup())
		}
		j.locks = locks
	}
	// A group's member prepares its tasks' sinks once (PrepareSinks).
	if o.Task == nil {
		if err := prepareSinks(plan, path, o, checkpointDir(plan, o) != ""); err != nil {
			return nil, errors.Join(err, j.cleanup())
		}
	}
	ck, err := openCheckpoints(plan, path, o)
	if err != nil {
		return nil, errors.Join(err, j.cleanup())
	}
	j.ck = ck
	if ck != nil {
		// A checkpoint that fails fails the run: silently running on
		// without them would break the promise of exact recovery.
		opts.Checkpoint = ck.options(j.check, func(id int64) error { return j.out.committed(id) }) // j.out is made below
		switch {
		case o.CheckpointClock != nil:
			opts.Checkpoint.Clock = o.CheckpointClock
		case o.Deterministic:
			// Processing time stands still at Now: measured on it, no
			// interval would ever pass. The checkpoints' interval is the
			// wall clock's (where barriers fall does not change the
			// output of a deterministic run).
			opts.Checkpoint.Clock = clock.Real{}
		}
	}
	if j.env, err = weir.NewEnv(opts); err != nil {
		return nil, errors.Join(err, ck.close(), j.cleanup())
	}
	j.out = newOutput(j, ck != nil, o.Deterministic)
	j.warn = o.Warn
	if o.Warn != nil {
		j.nulls.OnNull = func(w string) {
			if o.Warned.first(w) {
				o.Warn(w)
			}
		}
	}
	for _, r := range j.reads {
		r.dec.Note = func(ch int, regression bool) {
			k := itemControl
			if regression {
				k = itemRegression
			}
			j.out.add(weir.Subtask{Stage: r.stage, Index: ch}, item{kind: k, b: uint8(r.i)})
		}
		r.dec.Filter = func(ch int) {
			j.out.add(weir.Subtask{Stage: r.stage, Index: ch}, item{kind: itemFiltered, b: uint8(r.i)})
		}
		if o.Warn != nil {
			src := ""
			if len(j.reads) > 1 {
				src = r.Name + ": " // which source's fields, or event time
			}
			r.dec.WarnField = func(w record.FieldWarning) {
				// Once per field and place, whatever count of records
				// each run looked at.
				if o.Warned.first(src + "field " + w.Path + " " + w.Field) {
					o.Warn(src + w.String())
				}
			}
			r.dec.Nulls.OnNull = func(w string) {
				// The decoder tells each kind's first; a restart's
				// decoder tells the same again.
				if o.Warned.first(src + w) {
					o.Warn(src + w)
				}
			}
			r.dec.OnText = func(w string) {
				if o.Warned.first(src + "csv number text") {
					o.Warn(src + w)
				}
			}
			r.dec.OnFuture = func(w string) {
				if o.Warned.first(src + "future-dated") {
					o.Warn(src + w)
				}
			}
			r.dec.Warn = func(where string, from, to etime.Time) {
				if !o.Warned.first(src + "event time jumped back") {
					return
				}
				o.Warn(fmt.Sprintf("%s%s: event time jumped back from %s to %s (more than 1h; counted in timestamp_regressions, warned once)",
					src, where, from.Wall().Format(time.RFC3339), to.Wall().Format(time.RFC3339)))
			}
		}
	}
	if err := j.build(o); err != nil {
		j.failed.Store(true) // the sinks opened are closed as after a failure: aborted, not committed
		return nil, errors.Join(err, j.closeSinks(), ck.close(), j.cleanup())
	}
	return j, nil
}

// Env is the job's engine environment, for observers (metrics) while it
// runs.
func (j *Job) Env() *weir.Env { return j.env }

// Checkpoint takes the last checkpoint of a graceful stop: no periodic
// one follows it, so a run resumed afterwards starts from it. It returns
// its id once it completed, or 0 when the job has no checkpoints or it
// did not complete within timeout.
func (j *Job) Checkpoint(timeout time.Duration) int64 {
	if j.ck == nil {
		return 0
	}
	want, ok := j.env.RequestLastCheckpoint()
	if !ok {
		return 0
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if id := j.ck.last.Load(); id >= want {
			return id
		}
		if j.sinkUnavailable() {
			return 0 // no checkpoint commits while a sink waits for its database
		}
		time.Sleep(5 * time.Millisecond)
	}
	return 0
}

// cleanup removes the job's scratch state (the operators' backends are
// closed by the runtime when the job ends) and releases the locks it
// took, after everything else is closed.
func (j *Job) cleanup() error {
	if j.removeState != nil {
		j.removeState()
	}
	j.stopRetrying()
	j.cancelSinks()
	return j.locks.release()
}

// stopInterval is how often a running job looks whether it was asked to
// stop (RunOptions.Stop is polled), to tell its sinks.
const stopInterval = 50 * time.Millisecond

// watchStop starts the goroutine that tells the sinks the run stops:
// stopping is done once the run stops (a parallel run's RunOptions.Stop;
// a deterministic run's sinks wait on its one goroutine) or ctx is done
// (a failure does it at once: check), and ctx being done also cancels
// sinkCtx (an abort). The returned function ends
// the goroutine and waits for it; Run calls it before closing the sinks
// (then cleanup ends both contexts).
func (j *Job) watchStop(ctx context.Context) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(stopInterval)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-ctx.Done():
				j.stopRetrying()
				j.cancelSinks()
				return
			case <-t.C:
				// A deterministic run's Stop is asked on its one goroutine
				// only (tests sample their sinks in it).
				if !j.deterministic && j.stopped() {
					j.stopRetrying()
				}
			}
		}
	}()
	return func() { close(quit); <-done }
}

// sinkUnavailable reports whether a sink is failing to reach its server
// (a Postgres table: the job is waiting for it). Safe for concurrent use.
func (j *Job) sinkUnavailable() bool {
	for _, r := range j.allResults() {
		if r, ok := r.resultSink.(*tableResults); ok {
			if u, ok := r.s.(connector.UnavailableReporter); ok && u.Unavailable() {
				return true
			}
		}
	}
	for _, m := range j.msgs {
		if u, ok := m.s.(connector.UnavailableReporter); ok && u.Unavailable() {
			return true
		}
	}
	return false
}

// Buffered returns how many output items (results, late records, dead
// letters) the job holds in memory for checkpoints that have not
// committed, now and at the most so far: at most checkpoint.max_buffered
// while a checkpoint's commit waits for a sink, unless more had gathered
// before that commit began (see CheckpointSpec.MaxBuffered). It is safe
// to call while the job runs; 0 without checkpoints (items are written as
// they come).
func (j *Job) Buffered() (now, peak int64) { return j.out.buffered() }

// pebbleBackend makes the backends of the pebble state option: one Pebble
// database per operator instance under the state directory, behind caches
// of live windows.
func pebbleBackend(p *spec.Plan, o RunOptions) (func() state.Backend, func(), error) {
	st := p.State
	base, remove := st.Dir, func() {}
	if base == "" {
		d, err := os.MkdirTemp("", "weir-state-")
		if err != nil {
			return nil, nil, err
		}
		base, remove = d, func() { os.RemoveAll(d) }
	} else {
		base = o.Path(base)
	}
	cache := st.Cache
	if cache == 0 {
		cache = DefaultStateCache
	}
	return pebblestate.Backends(base, cache), remove, nil
}

// DefaultStateCache is state.cache's default: the live windows each
// operator instance keeps in memory in front of Pebble.
const DefaultStateCache = 100_000

// stopped reports whether the run was asked to stop (Ctrl-C) rather than
// reading all its input.
func (j *Job) stopped() bool { return j.stop != nil && j.stop() }

// Path resolves p against the spec's directory (empty stays empty).
func (o RunOptions) Path(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(o.Dir, p)
}

func (j *Job) build(o RunOptions) error {
	j.task = o.Task != nil
	restoring := j.ck != nil && j.ck.restored != nil
	if restoring {
		j.restoredAt = time.Now()
		b, ok := j.env.Restored("output")
		if !ok {
			return fmt.Errorf("checkpoint %d has no output part", j.ck.restored.ID)
		}
		if err := j.out.restore(b); err != nil {
			return err
		}
		for i, r := range j.reads {
			cm := j.out.c.SlotMax
			if i > 0 {
				cm = nil
				if i-1 < len(j.out.c.ReadSlotMax) {
					cm = j.out.c.ReadSlotMax[i-1]
				}
			}
			if len(cm) == len(r.dec.ChMax) {
				for c := range cm {
					r.dec.ChMax[c] = slices.Clone(cm[c])
				}
			} else if cm := j.out.c.ChannelMax; i == 0 && len(cm) == len(r.dec.ChMax) { // older checkpoints
				for c := range cm {
					r.dec.ChMax[c] = []etime.Time{cm[c]}
				}
			}
		}
	}
	if !restoring {
		// A fresh start begins a run: its id is the processing-time
		// millisecond it began, raised above every run the outputs
		// hold (openSinks notes them).
		j.out.c.Run = max(j.env.Options().Clock.Now().UnixMilli(), 1)
		if o.Task != nil && o.Task.Run > 0 {
			j.out.c.Run = o.Task.Run // every task of a group is one run
		}
		j.fresh, j.appendRuns = true, o.Append
	}
	env := j.env
	env.OnDeadLetter(j.deadLetter)
	if j.ck != nil {
		env.OnBarrier(func(s weir.Subtask, id int64) {
			j.out.epochs.Barrier(epochs.Subtask(s), id)
			if r := j.readOf(s.Stage); r != nil {
				r.dec.Barrier(s.Index, id)
			}
		})
		env.OnPreCommit(func(id int64, write func(string, []byte) error) error {
			err := j.out.preCommit(id, write)
			if err == nil && o.Crash != nil {
				o.Crash("sink-committed")
			}
			return err
		})
	}
	// Each read's records, watermarked.
	recs := make([]weir.Stream[record.Record], len(j.reads))
	for i, r := range j.reads {
		s, err := j.sourceRecords(env, o, r)
		if err != nil {
			return err
		}
		recs[i] = j.watermarked(s, r, o)
		if r.plan.Where != "" {
			// Dropped after the watermark saw them, as Flink SQL's WHERE
			// drops rows after the source's watermark; counted where
			// they were decoded (Decoder.Filter).
			recs[i] = weir.Filter(recs[i], func(r record.Record) bool { return !r.Filtered })
		}
	}
	// The sinks open after the sources: a fresh start empties its
	// outputs (files, the ledger) when they open, and a source that
	// cannot be opened (a misspelt path) must leave them as they were.
	if !restoring {
		if err := j.checkAppend(o); err != nil {
			return err
		}
		j.aboveEarlierRun(o)
	}
	if err := j.openSinks(o, restoring); err != nil {
		return err
	}
	// The file outputs the sinks made are locked as files now too.
	if err := cmp.Or(j.locks, o.locks).lockFiles(); err != nil {
		return err
	}
	if !restoring {
		j.noteDefinition(o)
		j.out.c.Since = j.out.c.Run
		if o.Append {
			j.out.c.Since = 0 // every earlier run's outputs stay
		}
	}
	j.earlier = j.earlierRuns()
	j.run = j.out.c.Run
	if j.archive != nil {
		j.archive.run = j.run
	}
	j.sinkNames = j.listSinks()
	// A window reads the watermarked records of its read, or the results
	// of the window that feeds it (which comes before it).
	results := make([]weir.Stream[window.Result[string, []byte]], len(j.branches))
	for i, b := range j.branches {
		in := recs[b.Read]
		switch {
		case b.topn != nil:
			j.buildTopN(b, results[b.From])
			continue
		case b.join != nil:
			j.buildJoin(b, results[b.From], results[b.Right])
			continue
		case b.Select != nil:
			results[i] = j.buildSelect(b, in)
			continue
		case b.From >= 0:
			in = j.cascadeRecords(b, results[b.From])
		}
		results[i] = j.buildWindow(b, in, j.reads[b.Read].Watermark)
	}
	return nil
}

// watermarked is read r's records with their event time and watermarks,
// as its watermark operator says (or as its reader watermarked each
// split).
func (j *Job) watermarked(recs weir.Stream[record.Record], r *read, o RunOptions) weir.Stream[record.Record] {
	isMark := func(r record.Record) (weir.Marker, bool) {
		switch r.Mark {
		case record.MarkWatermark:
			return weir.Marker{Watermark: r.WM}, true
		case record.MarkIdle:
			return weir.Marker{Idle: true}, true
		}
		return weir.Marker{}, false
	}
	// The operators are the plan graph's path's.
	wm := r.Watermark
	switch {
	case r.splits: // its reader watermarks each split
	case wm.Time == spec.EventTime, wm.Time == spec.IngestionTime:
		var ws weir.WatermarkStrategy[record.Record]
		if wm.Time == spec.IngestionTime {
			ws = weir.IngestionTime[record.Record]()
		} else {
			ws = weir.WatermarkStrategy[record.Record]{Timestamp: func(r record.Record, _ etime.Time) etime.Time { return r.TS }}
			switch wm.Type {
			case spec.BoundedOutOfOrderness, spec.Monotonous, spec.StrictlyAscending:
				b := wm.Bound
				ws.Generator = func() watermark.Generator[record.Record] { return watermark.ForBound[record.Record](b) }
			case spec.Punctuated:
				ws.Generator = func() watermark.Generator[record.Record] {
					return watermark.Punctuated(func(record.Record, etime.Time) (etime.Time, bool) { return 0, false })
				}
			}
		}
		ws = ws.WithMarkers(isMark)
		if !o.Deterministic && wm.IdleTimeout > 0 {
			ws = ws.WithIdleness(wm.IdleTimeout.Std())
		}
		if wm.Heartbeat > 0 {
			ws = ws.WithHeartbeat(wm.Heartbeat.Std())
		}
		if o.Deterministic || wm.EveryRecord {
			ws = ws.WithEveryRecord()
		}
		ws.BacklogEvery = zeroIsOff(wm.BacklogEvery)
		recs = weir.AssignTimestamps(recs, ws)
	default:
		recs = weir.Filter(recs, func(r record.Record) bool { _, m := isMark(r); return !m })
	}
	return recs
}

// buildWindow keys, windows and aggregates branch b's records (the
// watermarked records of the read, or a feeding window's results as
// records), sends its results and late records to the output, and
// returns its results.
func (j *Job) buildWindow(b *branch, recs weir.Stream[record.Record], wm *spec.WatermarkOp) weir.Stream[window.Result[string, []byte]] {
	if b.proj != nil {
		pr := *b.proj
		recs = weir.Map(recs, pr.Apply)
	}
	win := b.Window
	keyed := weir.KeyByEncoded(recs, func(r record.Record) string { return r.Key }, appendKey)
	windowed := weir.Window(keyed, win.Assigner, weir.WindowOptions{
		Name: b.stage, Trigger: win.Trigger, AllowedLateness: win.Lateness, LateFiringInterval: win.LateFiringInterval,
		LateOutput: b.late != nil, PartialOutput: b.partial != nil, TwoPhase: win.TwoPhase, SkipUnchanged: win.SkipUnchanged,
	})
	if wm.Time == spec.EventTime && wm.Type != spec.Punctuated && b.From < 0 {
		// "On time" in the summary means within the bound: records the
		// bound's watermark would have made late are counted apart.
		// (A feeding window's results are never late, W12.)
		windowed = weir.CountTrailing(windowed, func(r record.Record) etime.Time { return r.Promised })
	}
	out := weir.Aggregate(windowed, record.NewAggregator(b.plan, record.KeepsAccs(b.plan)))
	bi := uint8(b.i)
	h := record.NewHaving(win, j.nulls)
	keeper := func(h *record.Having) func(r window.Result[string, []byte]) bool {
		return func(r window.Result[string, []byte]) bool {
			// A retraction passes: it takes back a result that passed (a
			// window that fires once has none, but a session's merge may).
			if r.Firing == window.Retract {
				return true
			}
			return h.Keep(r.Key, r.Value, b.plan.BoundValues(r.Window))
		}
	}
	keep := keeper(h)
	if len(b.results) > 0 || h != nil {
		weir.ForEachSubtask(out.Results, func(sub weir.Subtask) func(etime.Time, window.Result[string, []byte]) {
			return func(_ etime.Time, r window.Result[string, []byte]) {
				switch {
				case h != nil && !keep(r):
					j.out.add(sub, item{kind: itemHaving, b: bi})
				case len(b.results) > 0:
					j.out.add(sub, item{kind: itemResult, b: bi, res: r})
				}
			}
		})
	}
	if b.late != nil || b.partial != nil {
		weir.ForEachSubtask(out.Late, func(sub weir.Subtask) func(etime.Time, window.LateRecord[string, record.Record]) {
			return func(_ etime.Time, l window.LateRecord[string, record.Record]) {
				it := j.lateItem(b, l)
				if l.Reason == window.ExpiredPartial {
					it.kind = itemPartial
				}
				j.out.add(sub, it)
			}
		})
	}
	if h != nil {
		// A window fed by this one reads what the having keeps (its
		// NULLs counted once, above).
		return weir.Filter(out.Results, keeper(record.NewHaving(win, nil)))
	}
	return out.Results
}

// buildSelect sends each of branch b's records (a read's watermarked
// records, past the where) to b's results sinks as a row of its values
// (a stateless query, spec.SelectOp): the record's key, its time as a
// window [ts, ts+1), on time. A select that a join of records reads
// (W19) returns its rows instead, each counted with the join's rows of
// it (itemRow); otherwise it returns no stream.
func (j *Job) buildSelect(b *branch, recs weir.Stream[record.Record]) weir.Stream[window.Result[string, []byte]] {
	if b.proj != nil {
		pr := *b.proj
		recs = weir.Map(recs, pr.Apply)
	}
	bi := uint8(b.i)
	// row is record r's row, value its values (Record.AppendValues).
	row := func(ts etime.Time, r record.Record, value []byte) window.Result[string, []byte] {
		return window.Result[string, []byte]{
			Key: r.Key, Window: window.Window{Start: ts, End: ts.Add(1)}, Firing: window.OnTime, Watermark: etime.MinTime, Value: value}
	}
	for _, jb := range j.branches {
		if jb.join == nil || jb.From != b.i || jb.Join.Range == nil {
			continue
		}
		rng, right, ji := jb.Join.Range, j.branches[jb.Right].Window.Assigner, uint8(jb.i)
		weir.ForEachSubtask(recs, func(sub weir.Subtask) func(etime.Time, record.Record) {
			return func(ts etime.Time, _ record.Record) {
				var n int64
				rng.Windows(right, ts, func(window.Window) { n++ })
				j.out.add(sub, item{kind: itemRow, b: bi, join: ji, n: n})
			}
		})
		return weir.FlatMapTimed(recs, func(ts etime.Time, r record.Record, emit func(etime.Time, window.Result[string, []byte])) {
			emit(ts, row(ts, r, r.AppendValues(nil)))
		})
	}
	weir.ForEachSubtask(recs, func(sub weir.Subtask) func(etime.Time, record.Record) {
		// Each row's value is cut from a slab of the subtask's, never
		// written again once cut (a row may wait in its epoch until a
		// checkpoint completes): an allocation per slab, not per row.
		var slab []byte
		return func(ts etime.Time, r record.Record) {
			if cap(slab)-len(slab) < rowSlab/16 {
				slab = make([]byte, 0, rowSlab)
			}
			n := len(slab)
			slab = r.AppendValues(slab)
			j.out.add(sub, item{kind: itemResult, b: bi, res: row(ts, r, slab[n:len(slab):len(slab)])})
		}
	})
	return weir.Stream[window.Result[string, []byte]]{}
}

// windowCounters are branch b's window counts in report rep: its window
// operator's, or for a select, which has none, its rows as accepted
// (rows, its results written).
func (j *Job) windowCounters(b *branch, rep weir.Report, rows int64) weir.WindowCounters {
	if b.Select != nil {
		return weir.WindowCounters{Accepted: rows}
	}
	return rep.Windows[b.stage]
}

// rowSlab is the size of the slabs a query without a window cuts its
// rows' values from.
const rowSlab = 32 << 10

// appendKey is the canonical key encoding (W5 order): the JSON array of
// the key values.
func appendKey(dst []byte, k string) []byte {
	dst = append(dst, '[')
	dst = append(dst, strings.ReplaceAll(k, record.KeySep, ",")...)
	return append(dst, ']')
}

// check records a sink's first error and stops the sources: the job ends
// and Run returns the error.
func (j *Job) check(err error) {
	if err == nil {
		return
	}
	j.mu.Lock()
	if j.mu.err == nil {
		j.mu.err = err
	}
	j.mu.Unlock()
	j.failed.Store(true)
	j.stopRetrying() // sinks waiting for a database give up: the run failed
}

// firstErr is the first error check recorded (nil: none).
func (j *Job) firstErr() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.mu.err
}

// Run runs the job to its end and closes its sinks; ctx cancellation
// aborts it (a graceful stop goes through RunOptions.Stop instead).
func (j *Job) Run(ctx context.Context) (Summary, error) {
	stopFlusher := j.startFlusher()
	stopWatch := j.watchStop(ctx)
	rep, err := j.env.Execute(ctx)
	for _, r := range j.reads {
		r.dec.Judge() // a run shorter than the field watch
	}
	stopFlusher()
	j.execFailed = err != nil
	st := j.env.State()
	open := st.OpenWindows
	j.out.finish()
	err = errors.Join(err, j.closeSinks())
	stopWatch()
	j.mu.Lock()
	err = errors.Join(j.mu.err, err)
	j.mu.Unlock()
	// Only a run that read all its input, without failing, is finished:
	// a failed or stopped one must be resumed.
	if err == nil && !j.failed.Load() && !j.stopped() {
		if err = j.ck.finished(); err == nil {
			j.noteThrough(j.out.through)
		}
	}
	err = errors.Join(err, j.ck.close(), j.cleanup())
	sum := j.summary(rep, open)
	if st.PastKnown {
		sum.PastWindows = &st.Past
	}
	return sum, err
}

// Progress is a live view of a running job, safe to take concurrently.
type Progress struct {
	RecordsIn, LateFired, SideOutput, DeadLetters, Results int64
	// Watermark is the window operator's (the minimum over its subtasks).
	Watermark etime.Time
	// State is the size of the window state.
	State weir.StateInfo
}

// State returns the window operator's state size, now and at its peak; it
// is safe to call while the job runs.
func (j *Job) State() weir.OperatorState {
	var t weir.OperatorState
	for _, s := range j.env.OperatorStates() {
		t.Add(s)
	}
	return t
}

// Progress returns the job's progress so far.
func (j *Job) Progress() Progress {
	rep := j.env.Report()
	t := rep.Total()
	wm := etime.MaxTime
	seen := false
	for _, w := range j.env.Watermarks() {
		if slices.ContainsFunc(j.branches, func(b *branch) bool { return b.stage == w.Stage }) {
			wm, seen = min(wm, w.Watermark), true
		}
	}
	if !seen {
		wm = etime.MinTime
	}
	return Progress{
		RecordsIn: j.recordsIn(rep, j.controls()), LateFired: t.FiredLate, SideOutput: t.LateSideOutput,
		DeadLetters: rep.DeadLetters, Results: j.out.counters().Results, Watermark: wm, State: j.env.State(),
	}
}

// Counters returns the summary's counters so far, by name; it is safe to
// call while the job runs (with checkpoints, the output's counts move at
// each checkpoint).
func (j *Job) Counters() map[string]int64 {
	m := map[string]int64{}
	for _, c := range j.summary(j.env.Report(), 0).Counters {
		m[c.Name] = c.Value
	}
	for name := range m {
		if name == "open_windows" || strings.HasSuffix(name, ".open_windows") {
			delete(m, name)
		}
	}
	return m
}

// RecordEpoch is the epoch of the rows the job's Postgres late table (or,
// without one, its dead-letter table) flushed at the checkpoint under
// way: each checkpoint flushes them as the next one (0: no such table,
// or no checkpoint yet). It is read on the checkpoint goroutine, from a
// RunOptions.Crash hook at a checkpoint's points (tests crash there).
func (j *Job) RecordEpoch() int64 {
	for _, op := range []*spec.SinkOp{j.branches[0].Late, j.path.DeadLetter} {
		if op != nil && op.Config.Type == "postgres" {
			n, _ := strconv.ParseInt(string(j.out.c.Sinks[op.Name]), 10, 64)
			return n
		}
	}
	return 0
}

// RestoredAt is when the job was opened from a checkpoint (zero: it
// started fresh).
func (j *Job) RestoredAt() time.Time { return j.restoredAt }

// recordsIn is the data records read: lines emitted by the source minus
// control lines.
func (j *Job) recordsIn(rep weir.Report, controls int64) int64 {
	if len(j.reads) < 2 {
		var n int64
		for _, c := range rep.SourceRecords {
			n += c
		}
		return n - controls
	}
	// A source that several reads read (a SQL table that two queries
	// filter differently) holds its records once: its first read's.
	oc := j.out.counters()
	var n int64
	for _, r := range j.reads {
		if !r.echo {
			n += rep.SourceRecords[r.stage] - oc.ReadControls[r.i]
		}
	}
	return n
}

func (j *Job) deadLetter(d weir.DeadLetter) {
	if _, ok := j.firstDead.Load(d.Reason); !ok {
		j.firstDead.LoadOrStore(d.Reason, d.Detail)
	}
	src := j.deadRead(d.Stage)
	it := item{kind: itemDead, reason: d.Reason, b: uint8(src.i)}
	defer func() { j.out.add(weir.Subtask{Stage: d.Stage, Index: d.Subtask}, it) }()
	if src.dead == nil {
		return
	}
	line := deadLine{Run: j.run, Source: src.srcName, Reason: d.Reason, Detail: d.Detail}
	kafka, part := false, int32(0)
	fromLine := func(l connector.Line) {
		line.Line, line.Raw = l.No, string(l.Data())
		if l.Raw != nil {
			line.Raw = string(l.Raw)
		}
		if src.splits {
			kafka, part, line.Line = true, l.Split, l.No-1 // No is the position + 1
		}
	}
	switch r := d.Record.(type) {
	case connector.Line:
		fromLine(r)
	case connector.Liner:
		fromLine(r.Line())
	case record.Record:
		kafka, line.Line = src.position(r)
		line.Raw, part = string(r.Raw), r.Part
	default:
		line.Raw = fmt.Sprint(r)
	}
	if kafka {
		p := part
		line.Partition = &p
	}
	line.ID = entryID(kafka, part, line.Line)
	b, err := json.Marshal(line)
	j.check(err)
	it.line, it.id, it.raw = b, line.ID, []byte(line.Raw)
	line.ID, line.Raw, line.Reason = "", "", ""
	it.meta, err = json.Marshal(line)
	j.check(err)
}

// deadLine is a dead letter's line. Line is the line number of a file,
// the offset of a Kafka record (in Partition) or a NATS stream sequence.
type deadLine struct {
	ID        string `json:"id,omitempty"`
	Run       int64  `json:"run,omitempty"`
	Source    string `json:"source"`
	Partition *int32 `json:"partition,omitempty"`
	Line      int64  `json:"line"`
	Raw       string `json:"raw,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Detail    string `json:"detail"`
}

// Summary is what a run did: the counters of the summary JSON.
type Summary struct {
	// Counters in output order; conservation (W4): records_in = accepted
	// + late_side_output + late_dropped + dead_letter (+ filtered, when
	// the job has a where).
	Counters []Counter
	// Fields are the fields the spec reads that never appeared in the
	// run's first records (a misspelled name, a CSV header that does
	// not match).
	Fields []record.FieldWarning
	// PastWindows is, of the open windows at the end (open_windows),
	// those whose end the watermark had passed: kept only for the
	// allowed lateness (nil: not counted).
	PastWindows *int64
	// FirstDead is, per dead-letter reason, the detail of the first
	// such dead letter of this process (the hint of timestamp_unit, the
	// field of key_missing).
	FirstDead map[string]string
}

// Counter is one named count.
type Counter struct {
	Name  string
	Value int64
}

// Has reports whether the summary has a counter.
func (s Summary) Has(name string) bool {
	return slices.ContainsFunc(s.Counters, func(c Counter) bool { return c.Name == name })
}

// Get returns a counter's value (0 if absent).
func (s Summary) Get(name string) int64 {
	for _, c := range s.Counters {
		if c.Name == name {
			return c.Value
		}
	}
	return 0
}

// JSON renders the summary as one flat JSON object of integers.
func (s Summary) JSON() []byte {
	b := []byte{'{'}
	for i, c := range s.Counters {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, "%q:%d", c.Name, c.Value)
	}
	return append(b, '}', '\n')
}

// Windows are the names of the windows of a job of several, whose
// counters they prefix (hourly.accepted), in order; nil for a job of
// one, whose counters are unprefixed.
func (s Summary) Windows() []string {
	var ws []string
	for _, c := range s.Counters {
		if w := windowOf(c.Name); w != "" && c.Name == w+".accepted" {
			ws = append(ws, w)
		}
	}
	return ws
}

// Conserved reports whether the summary satisfies conservation (W4): for
// each window of a job of several, whose counters are prefixed by the
// window's name (hourly.accepted), every record read is accepted, sent
// to the side output, dropped, a dead letter or filtered (by the where;
// a window of a job of several sources counts its source's); for a window fed by
// another window, which has its own records_in (that window's firings,
// W12), every one of those is accepted, sent to the side output or
// dropped.
func (s Summary) Conserved() bool {
	windows := []string{""}
	for _, w := range s.Windows() {
		windows = append(windows, w+".")
	}
	if len(windows) > 1 {
		windows = windows[1:] // several windows: no unprefixed counts
	}
	for _, w := range windows {
		in, dead := s.Get("records_in"), s.Get("dead_letter")+s.Get("filtered")
		if w != "" && s.Has(w+"records_in") {
			in, dead = s.Get(w+"records_in"), s.Get(w+"dead_letter")+s.Get(w+"filtered")
		}
		if in != s.Get(w+"accepted")+s.Get(w+"late_side_output")+s.Get(w+"late_dropped")+dead {
			return false
		}
	}
	return true
}

func (j *Job) summary(rep weir.Report, open int64) Summary {
	oc := j.out.counters()
	var s Summary
	add := func(name string, v int64) { s.Counters = append(s.Counters, Counter{name, v}) }
	add("records_in", j.recordsIn(rep, oc.Controls))
	filters := slices.ContainsFunc(j.reads, func(r *read) bool { return r.Decode.Where != "" })
	if filters {
		add("filtered", oc.Filtered)
	}
	if slices.ContainsFunc(j.branches, func(b *branch) bool { return b.Window.Having != "" }) {
		add("having_filtered", oc.Having)
	}
	if !j.several() {
		t := rep.Total()
		if j.branches[0].Select != nil {
			t = j.windowCounters(j.branches[0], rep, oc.Results)
		}
		j.windowSummary(add, t, windowCounts{Results: oc.Results, Late: oc.Late, Partial: oc.Partial}, open, rep.DeadLetters, j.branches[0].Window.SkipUnchanged)
	} else {
		// Each window's counts, prefixed by its name; the records read
		// and the dead letters are the read's, shared. The dead letters
		// are every read's: two reads of one source (read.echo) may
		// refuse different records (their tables' types differ).
		add("dead_letter", rep.DeadLetters)
		states := j.env.OperatorStates()
		for _, b := range j.branches {
			pre := func(name string, v int64) { add(j.counterName(b, name), v) }
			switch {
			case b.From >= 0:
				// A window fed by windows reads their firings (W12).
				var in int64
				for _, f := range b.feeds() {
					if j.branches[f].Select != nil {
						// A join of records reads its rows of each
						// record (W19).
						in += oc.Windows[b.i].JoinIn
						continue
					}
					up := rep.Windows[j.branches[f].stage]
					// Less the results its having dropped, which it
					// never passed on.
					in += up.FiredEarly + up.FiredOnTime + up.FiredLate - oc.Windows[f].Having
				}
				pre("records_in", in)
			case len(j.reads) > 1:
				// Several sources: a window reads its source's records.
				r := j.reads[b.Read]
				pre("records_in", rep.SourceRecords[r.stage]-oc.ReadControls[r.i])
				pre("dead_letter", oc.ReadDead[r.i])
				if filters {
					pre("filtered", oc.ReadFiltered[r.i])
				}
			}
			t := j.windowCounters(b, rep, oc.Windows[b.i].Results+oc.Windows[b.i].Rows)
			t.LateDropped += oc.Windows[b.i].JoinLate // a join of records' rows, judged before it (W19)
			j.windowSummary(pre, t, oc.Windows[b.i], states[b.stage].OpenWindows, -1, b.Window.SkipUnchanged)
		}
	}
	add("control_lines", oc.Controls)
	add("timestamp_regressions", oc.Regressions)
	// Only when they happened, so that summaries of jobs without them
	// read as they did before decimals.
	if oc.DecimalOverflow > 0 {
		add("decimal_overflow", oc.DecimalOverflow)
	}
	if oc.FloatOverflow > 0 {
		add("float_overflow", oc.FloatOverflow)
	}
	// Records accepted with a timestamp more than the plan's WarnAhead
	// ahead of the clock: the watermark runs ahead with them (counted in this
	// process; only when there were some).
	var future int64
	for _, r := range j.reads {
		future += r.dec.Future.Load()
	}
	if future > 0 {
		add("future_dated", future)
	}
	// Results of windows within the time that earlier runs kept in the
	// outputs cover (--append): each may replace an earlier run's row of
	// the same key and window with this run's records alone.
	if n := j.out.overEarlier.Load(); n > 0 {
		add("over_earlier_runs", n)
	}
	// NULLs of expressions where Flink fails the job (a CAST of a value
	// not of its type, a division by zero): only when there were some.
	for i, name := range record.NullCounters {
		n := j.nulls.Load(i)
		for _, r := range j.reads {
			n += r.dec.Nulls.Load(i)
		}
		if n > 0 {
			add(name, n)
		}
	}
	// Records the source lost before it read them (retention passed a
	// restored position): in no term of conservation, since never read,
	// but counted, so that nothing is gone without a number.
	if n := sumValues(rep.SourceLost); n > 0 {
		add("lost_before_read", n)
	}
	for _, r := range slices.Sorted(maps.Keys(oc.Dead)) {
		add("dead_letter_"+r, oc.Dead[r])
	}
	s.Fields = j.FieldWarnings()
	j.firstDead.Range(func(k, v any) bool {
		if s.FirstDead == nil {
			s.FirstDead = map[string]string{}
		}
		s.FirstDead[k.(string)] = v.(string)
		return true
	})
	return s
}

// sumValues is the sum of m's values.
func sumValues(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// windowSummary adds one window's counters: its operator's counts t, its
// output's counts c and its open windows; dead (the dead letters, -1:
// not here) goes between late_dropped and results, as a job of one
// window has always listed it.
func (j *Job) windowSummary(add func(string, int64), t weir.WindowCounters, c windowCounts, open, dead int64, skip bool) {
	add("accepted", t.Accepted)
	add("accepted_late", t.AcceptedLate)
	add("on_time_trailing", t.OnTimeTrailing)
	add("late_side_output", t.LateSideOutput)
	add("late_dropped", t.LateDropped)
	if dead >= 0 {
		add("dead_letter", dead)
	}
	add("results", c.Results)
	add("fired_early", t.FiredEarly)
	add("fired_on_time", t.FiredOnTime)
	add("fired_late", t.FiredLate)
	if skip {
		// Only for a window that skips unchanged results (W20), so
		// that other summaries read as before.
		add("unchanged_firings", t.Unchanged)
	}
	add("retractions", t.Retractions)
	add("window_misses", t.WindowMisses)
	add("late_partial", t.PartialSideOutput)
	add("late_lines", c.Late)
	add("late_partial_lines", c.Partial)
	add("open_windows", open)
}

// ResumedRecords is, of the summary's records_in, what earlier processes
// of the run had read by the checkpoint this one resumed from (0: it
// started fresh): the rest is this process's.
func (j *Job) ResumedRecords() int64 {
	var n int64
	for _, c := range j.env.Report().SourceRestored {
		n += c
	}
	j.out.pub.Lock()
	defer j.out.pub.Unlock()
	return n - j.out.restoredControls
}

// FieldWarnings are the fields the spec reads that the first records
// did not have (nil until the job has looked at enough records).
func (j *Job) FieldWarnings() []record.FieldWarning {
	var ws []record.FieldWarning
	for _, r := range j.reads {
		ws = append(ws, r.dec.FieldWarnings()...)
	}
	return ws
}

func (j *Job) closeSinks() error {
	var errs []error
	for _, s := range j.recordSinks() {
		errs = append(errs, s.close()) // idempotent: sinks may share stdout
	}
	for _, r := range j.allResults() {
		errs = append(errs, r.close())
	}
	if j.archive != nil {
		// What the end of a run that ended well produced is kept; a
		// failed run replays it from its checkpoint. (A group's task
		// hands them to its member, which commits them with the task's
		// end.)
		if !j.execFailed && !j.failed.Load() {
			errs = append(errs, j.archive.commit(j.out.c.Watermark, j.plan.ArchiveHorizon, archiveWait))
		}
		j.archive = nil
	}
	return errors.Join(errs...)
}

// RestartPolicy says how a job with checkpoints recovers from a failure
// inside one process (weir.RestartPolicy). A job without checkpoints does
// not restart: it would start over and repeat its output.
type RestartPolicy = weir.RestartPolicy

// zeroIsOff maps a spec setting whose 0 means "off" (idle_timeout,
// backlog_every) to the library's option, whose 0 means its default and
// a negative value "off".
func zeroIsOff[T int | time.Duration](v T) T {
	if v == 0 {
		return -1
	}
	return v
}

// inputChanged reports whether err says the input is not the one the
// checkpoint read: a restart would meet the same input, so it is not
// retried.
func inputChanged(err error) bool {
	return errors.Is(err, connector.ErrInputChanged)
}

// RunRestarting opens and runs plan, restarting it from its newest
// checkpoint when it fails, as p says. The summary counts the restarts.
// The run's locks are taken once, before the first attempt, and held
// until the last ends, so no other run takes them between attempts.
// Build-time errors are permanent, never retried: another run holding the
// locks (ErrLocked), no checkpoint that verifies (ErrNoValidCheckpoint),
// a missing input, a checkpoint of another spec. A restart that fails to
// open returns the failed attempt's summary with both errors.
func RunRestarting(ctx context.Context, plan *spec.Plan, o RunOptions, p RestartPolicy, onOpen func(*Job)) (sum Summary, err error) {
	locks, err := lockRun(plan, o)
	if err != nil {
		return Summary{}, err
	}
	defer func() { err = errors.Join(err, locks.release()) }()
	o.locks = locks
	if o.Warned == nil {
		o.Warned = new(Warned) // a restart does not warn again
	}
	var failed error // the previous attempt's
	reopens := 0     // of the attempts before this one
	_, err = weir.RunRestarting(ctx, p, func(ctx context.Context, n int) error {
		if n > 0 {
			o.Fresh = false // a restart resumes, whatever the first run was told
		}
		j, err := Open(plan, o)
		if n > 0 {
			// The first attempt opened the job, so a restart that cannot
			// reach a server meets an outage, not a bad address: it waits
			// for the server, as the running job does.
			j, err = reopenWaiting(ctx, o, j, err, failed, func() (*Job, error) { return Open(plan, o) })
		}
		if err != nil {
			if failed != nil {
				err = fmt.Errorf("%w; restart %d could not open the job: %w", failed, n, err)
			}
			return weir.Permanent(err)
		}
		if onOpen != nil {
			onOpen(j)
		}
		s, err := j.Run(ctx)
		s.Counters = append(s.Counters, Counter{"restarts", int64(n - reopens)})
		sum = s
		if errors.Is(err, connector.ErrInputGrew) && !j.stopped() {
			if j.ck == nil {
				return weir.Permanent(fmt.Errorf("%w; this job takes no checkpoints, so it cannot: run it again (a new run reads every partition), or give it checkpoint: {dir: ...} so that it reopens by itself", err))
			}
			reopens++
			return weir.Reopen(err)
		}
		if err != nil && (j.ck == nil || j.stopped() || inputChanged(err)) {
			return weir.Permanent(err)
		}
		failed = err
		return err
	})
	return sum, err
}

// reopenWaits are the waits between a restart's opens while a server
// does not answer (the last repeats; a variable for the tests).
var reopenWaits = []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second}

// reopenWaiting opens the job again (open), after waits, while its open
// fails because a server does not answer (connector.Unreachable),
// warning each time, until it opens, fails otherwise, or the run is
// asked to stop (ctx, or o.Stop): the error then is the last open's. j
// and err are the first open's, failed the failure the restart is for.
func reopenWaiting(ctx context.Context, o RunOptions, j *Job, err, failed error, open func() (*Job, error)) (*Job, error) {
	for i := 0; err != nil && connector.Unreachable(err); i++ {
		wait := reopenWaits[min(i, len(reopenWaits)-1)]
		if o.Warn != nil {
			o.Warn(fmt.Sprintf("the restart after %v cannot open the job: %v; it tries again in %v, for as long as the server does not answer (Ctrl-C stops)", failed, err, wait))
		}
		for end := time.Now().Add(wait); time.Now().Before(end); {
			if ctx.Err() != nil || o.Stop != nil && o.Stop() {
				return nil, err
			}
			time.Sleep(min(100*time.Millisecond, time.Until(end)))
		}
		j, err = open()
	}
	return j, err
}

// Warned remembers which once-only warnings were given (RunOptions.Warned).
// It is safe for concurrent use.
type Warned struct {
	mu    sync.Mutex
	given map[string]bool
}

// first reports whether the warning of this kind was not given before by
// the runs sharing w, and notes it given. A nil w remembers nothing: the
// decoder's own once decides.
func (w *Warned) first(kind string) bool {
	if w == nil {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.given[kind] {
		return false
	}
	if w.given == nil {
		w.given = map[string]bool{}
	}
	w.given[kind] = true
	return true
}
