package weir

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/winop"
	"github.com/weirstream/weir/watermark"
)

// Env builds one job: create streams from sources, transform them with the
// generic functions of this package, then call Execute once. An Env is not
// safe for concurrent use while building.
type Env struct {
	opts    Options
	job     *runtime.Job
	err     error
	ops     []*opStats
	sources []*sourceStats
	deadFn  func(DeadLetter)
	names   map[string]int

	listenMu  sync.Mutex // guards listeners and reporters
	listeners []CheckpointListener
	reporters []reporter

	// Sinks (ToSink) hook in here: starts run before the job, ends after
	// it with its error, onComplete after each checkpoint commits. runCtx
	// is Execute's context, set before the job starts.
	starts     []func(ctx context.Context) error
	ends       []func(ctx context.Context, runErr error) error
	onComplete []func(id int64)
	runCtx     context.Context
	executed   bool            // Execute was called
	sinkNames  map[string]bool // the names of ToSink's sinks
}

// DeadLetter is a record an operator refused as bad input (semantics W4),
// as Env.OnDeadLetter's function receives it.
type DeadLetter struct {
	// Stage and Subtask are where it was refused.
	Stage   string
	Subtask int
	// Reason is a short code such as "map_failed" or "timestamp_missing";
	// Detail says what was wrong.
	Reason string
	Detail string
	// Record is the refused record (or the source's raw input).
	Record any
}

// NewEnv returns an Env; it refuses invalid options.
func NewEnv(opts Options) (*Env, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	e := &Env{opts: opts, names: map[string]int{}}
	ck := opts.Checkpoint.runtime()
	if ck != nil {
		user := ck.OnComplete
		ck.OnComplete = func(id int64) {
			e.checkpointComplete(id)
			if user != nil {
				user(id)
			}
		}
	}
	e.job = runtime.NewJob(runtime.Options{
		BatchSize: opts.BatchSize, QueueBatches: opts.QueueBatches, Deterministic: opts.Deterministic,
		Clock: opts.Clock, Logger: opts.Logger, Checkpoint: ck,
	})
	e.job.SetDeadLetters(func(d runtime.DeadLetter) {
		if e.deadFn != nil {
			e.deadFn(DeadLetter(d))
		}
	})
	return e, nil
}

// checkpointComplete tells the source readers that listen that checkpoint
// id committed.
func (e *Env) checkpointComplete(id int64) {
	e.listenMu.Lock()
	ls := slices.Clone(e.listeners)
	e.listenMu.Unlock()
	for _, l := range ls {
		l.CheckpointComplete(id)
	}
	for _, f := range e.onComplete {
		f(id)
	}
}

// Options returns the Env's options with defaults filled in.
func (e *Env) Options() Options { return e.opts }

// OnDeadLetter sets the receiver of dead letters (called serialized).
func (e *Env) OnDeadLetter(fn func(DeadLetter)) { e.deadFn = fn }

func (e *Env) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

func (e *Env) uniqueName(base string) string {
	n := e.names[base]
	e.names[base] = n + 1
	if n == 0 {
		return base
	}
	return base + "-" + strconv.Itoa(n)
}

// Stream is a typed stream of records with timestamps.
type Stream[T any] struct{ n *node[T] }

// node is one logical stream: the stage whose subtasks produce it and the
// operators that consume it there.
type node[T any] struct {
	env       *Env
	stage     *runtime.Stage
	consumers []func(st *runtime.Subtask) runtime.Collector[T]
}

func newStream[T any](env *Env, stage *runtime.Stage) Stream[T] {
	return Stream[T]{n: &node[T]{env: env, stage: stage}}
}

// Env returns the stream's Env.
func (s Stream[T]) Env() *Env { return s.n.env }

// consume adds an operator that reads s on each subtask of its stage.
func (s Stream[T]) consume(c func(st *runtime.Subtask) runtime.Collector[T]) {
	s.n.consumers = append(s.n.consumers, c)
}

// collector builds, for subtask st, the collector that receives s.
func (n *node[T]) collector(st *runtime.Subtask) runtime.Collector[T] {
	switch len(n.consumers) {
	case 0:
		return runtime.Func[T]{}
	case 1:
		return n.consumers[0](st)
	}
	f := make(runtime.Fanout[T], len(n.consumers))
	for i, c := range n.consumers {
		f[i] = c(st)
	}
	return f
}

// derived returns a stream produced by an operator chained onto s.
func derived[T, U any](s Stream[T]) Stream[U] { return newStream[U](s.n.env, s.n.stage) }

// Report is what a finished job did.
type Report struct {
	// Windows has the counters of each window operator, summed over its
	// subtasks, by operator name.
	Windows map[string]WindowCounters
	// SourceRecords counts records emitted by each source.
	SourceRecords map[string]int64
	// SourceRestored is, of SourceRecords, what each source had emitted
	// by the checkpoint the job resumed from (0: it started fresh).
	SourceRestored map[string]int64
	// DeadLetters counts bad input refused anywhere in the job.
	DeadLetters int64
	// SourceLost counts, by source, the records its readers reported
	// lost before they read them (LossOutput: retention removed them),
	// with those of the checkpoint the job resumed from; absent: none.
	// They are in no term of conservation.
	SourceLost map[string]int64
}

// WindowCounters are a window operator's exact counts (W4, W7, W8).
type WindowCounters struct {
	RecordsIn         int64 // elements processed
	Accepted          int64 // added to at least one window
	AcceptedLate      int64 // accepted, and late (B2) for a window it was added to: allowed lateness at work
	LateSideOutput    int64 // late for every window, sent to the late output
	LateDropped       int64 // late for every window, dropped
	NoTimestamp       int64 // refused by the assigner (MIN timestamp, A5)
	WindowMisses      int64 // window assignments missed by accepted records (W7)
	PartialSideOutput int64 // accepted records sent to the late output for missed windows
	Retractions       int64 // retract lines (W8)
	FiredEarly        int64
	FiredOnTime       int64
	FiredLate         int64
	// OnTimeTrailing: accepted on time (not late for any window it was
	// added to), but late for one of them under the watermark its
	// channel's bound promised at its arrival: records more than the
	// bound out of order, on time only because the watermark trailed.
	OnTimeTrailing int64
	// Unchanged counts early and late firings skipped because their
	// results equal the window's last emitted ones
	// (WindowOptions.SkipUnchanged, W20).
	Unchanged int64
}

// Add adds o's counts to c.
func (c *WindowCounters) Add(o WindowCounters) { (*winop.Counters)(c).Add(winop.Counters(o)) }

// WindowHists are a window operator's lateness and firing-delay
// distributions, for metrics.
type WindowHists struct {
	// Lateness: watermark minus timestamp, in seconds, of each record
	// behind the watermark (accepted within the lateness, side output or
	// dropped); on-time records are not observed.
	Lateness Histogram
	// FiringDelay: processing time minus window end, in seconds, of each
	// on-time firing of an event-time window (how long after its end, by
	// the clock, a window's result came out), except the windows the
	// operator's first watermark fires: they ended before it had one, so
	// their delay is the age of the records read before it, not a
	// firing backlog.
	FiringDelay Histogram
}

// CheckpointStats counts the job's checkpoints (zero without them). Its
// times and durations are on the checkpoints' clock
// (CheckpointOptions.Clock, by default Options.Clock).
type CheckpointStats struct {
	Completed, Failed int64
	// InProgress: a checkpoint is pending.
	InProgress bool
	// LastCompleted is when the newest checkpoint committed (zero: none),
	// LastDuration how long it took from trigger to commit, LastSize the
	// bytes of its parts.
	LastCompleted time.Time
	LastDuration  time.Duration
	LastSize      int64
	// Durations are the completed checkpoints' durations.
	Durations Histogram
	// InFlight is the pending checkpoint (ID 0: none).
	InFlight InFlightCheckpoint
}

// InFlightCheckpoint is a checkpoint in progress: since when, and what it
// waits for.
type InFlightCheckpoint struct {
	ID int64
	// Started is when it was triggered.
	Started time.Time
	// Phase is what it waits for (CheckpointPhaseBegin, ...), since
	// PhaseSince.
	Phase      string
	PhaseSince time.Time
	// Acked subtasks of Subtasks took their snapshot; the parts of
	// Written of them are written.
	Acked, Written, Subtasks int
}

// The phases of a checkpoint in progress (InFlightCheckpoint.Phase).
const (
	// CheckpointPhaseBegin ("begin"): the store opens it (CheckpointStore.Begin).
	CheckpointPhaseBegin = runtime.PhaseBegin
	// CheckpointPhaseSnapshots ("snapshots"): the barriers travel; some subtask has not
	// taken its snapshot yet (it is busy, backpressured, or aligning).
	CheckpointPhaseSnapshots = runtime.PhaseSnapshots
	// CheckpointPhaseParts ("parts"): every snapshot is taken; parts are being
	// written.
	CheckpointPhaseParts = runtime.PhaseParts
	// CheckpointPhasePreCommit ("pre-commit"): the pre-commit hooks run (sinks make the
	// epoch's output durable).
	CheckpointPhasePreCommit = runtime.PhasePreCommit
	// CheckpointPhaseCommit ("commit"): the store commits it (the manifest).
	CheckpointPhaseCommit = runtime.PhaseCommit
)

// CheckpointStats returns the job's checkpoint counts; it is safe to call
// while the job runs.
func (e *Env) CheckpointStats() CheckpointStats {
	s := e.job.CheckpointStats()
	return CheckpointStats{Completed: s.Completed, Failed: s.Failed, InProgress: s.InProgress,
		LastCompleted: s.LastCompleted, LastDuration: s.LastDuration, LastSize: s.LastSize,
		Durations: Histogram(s.Durations), InFlight: InFlightCheckpoint(s.InFlight)}
}

// WindowHists returns each window operator's distributions by operator
// name, summed over its subtasks; it is safe to call while the job runs.
func (e *Env) WindowHists() map[string]WindowHists {
	m := make(map[string]WindowHists, len(e.ops))
	for _, o := range e.ops {
		h := o.hists()
		m[o.name] = WindowHists{Lateness: Histogram(h.Lateness), FiringDelay: Histogram(h.FiringDelay)}
	}
	return m
}

// Execute runs the job to the end of its input, or until ctx is done (then
// it returns ctx's error). A panic in user code fails the job with its cause.
func (e *Env) Execute(ctx context.Context) (Report, error) {
	if e.executed {
		return Report{}, ErrAlreadyRun
	}
	e.executed = true
	e.runCtx = ctx
	var err error
	if e.err != nil {
		// A refused option: the sinks accepted so far are closed all the
		// same.
		err = e.err
		for _, f := range e.ends {
			err = errors.Join(err, f(ctx, err))
		}
		return Report{}, err
	}
	for _, f := range e.starts {
		if err = f(ctx); err != nil {
			break
		}
	}
	if err == nil {
		err = e.job.Run(ctx)
	}
	for _, f := range e.ends {
		err = errors.Join(err, f(ctx, err))
	}
	return e.Report(), err
}

// Report returns the counters so far; it is safe to call while the job runs.
func (e *Env) Report() Report {
	r := Report{Windows: map[string]WindowCounters{}, SourceRecords: map[string]int64{}, SourceRestored: map[string]int64{}}
	for _, o := range e.ops {
		r.Windows[o.name] = WindowCounters(o.counters())
	}
	for _, s := range e.sources {
		r.SourceRecords[s.name] = s.n.Load()
		r.SourceRestored[s.name] = s.restored.Load()
		if n := s.lost.Load(); n > 0 {
			if r.SourceLost == nil {
				r.SourceLost = map[string]int64{}
			}
			r.SourceLost[s.name] = n
		}
	}
	if e.job.Built() {
		r.DeadLetters = e.job.DeadLetters()
	}
	return r
}

// SubtaskWatermark is the input watermark state of one subtask.
type SubtaskWatermark struct {
	Stage     string
	Subtask   int
	Watermark etime.Time
	Idle      bool
	// Channels holds each input channel's state per input gate.
	Channels [][]watermark.ChannelState
}

// Watermarks returns every subtask's watermark and per-channel state; it
// is safe to call while the job runs.
func (e *Env) Watermarks() []SubtaskWatermark {
	if !e.job.Built() {
		return nil
	}
	var out []SubtaskWatermark
	for _, s := range e.job.Stages() {
		for _, st := range s.Subtasks() {
			out = append(out, SubtaskWatermark{Stage: s.Name, Subtask: st.Index, Watermark: st.Watermark(), Idle: st.Idle(), Channels: st.Channels()})
		}
	}
	return out
}

// reporter is a source reader that reports its inputs.
type reporter struct {
	source  string
	channel int
	r       InputReporter
}

// SourceInputs returns the inputs of every source channel whose reader
// reports them (InputReporter), by source and channel; it is safe to call
// while the job runs.
func (e *Env) SourceInputs() []SourceInputs {
	e.listenMu.Lock()
	rs := slices.Clone(e.reporters)
	e.listenMu.Unlock()
	slices.SortFunc(rs, func(a, b reporter) int {
		if a.source != b.source {
			return strings.Compare(a.source, b.source)
		}
		return a.channel - b.channel
	})
	out := make([]SourceInputs, 0, len(rs))
	for _, r := range rs {
		out = append(out, SourceInputs{Source: r.source, Channel: r.channel, Inputs: r.r.Inputs()})
	}
	return out
}

// StageInfo is one stage of the job graph: an operator (or a chain of
// operators) run by Parallelism subtasks.
type StageInfo struct {
	Name        string
	Parallelism int
	Source      bool
	// Gates are the stage's logical inputs; each lists the upstream
	// stages whose subtasks are its channels, in channel order.
	Gates [][]GateFrom
}

// GateFrom says that channels Base to Base+Par-1 of a gate are the
// subtasks 0 to Par-1 of stage Stage.
type GateFrom struct {
	Stage     string
	Base, Par int
}

// Graph returns the job's stages, upstream first (nil before the job is
// built).
func (e *Env) Graph() []StageInfo {
	if !e.job.Built() {
		return nil
	}
	var out []StageInfo
	for _, s := range e.job.Stages() {
		si := StageInfo{Name: s.Name, Parallelism: s.Par, Source: s.IsSource()}
		for _, g := range s.Gates() {
			from := make([]GateFrom, len(g.From))
			for i, f := range g.From {
				from[i] = GateFrom(f)
			}
			si.Gates = append(si.Gates, from)
		}
		out = append(out, si)
	}
	return out
}

// SubtaskStats is how one subtask spent its time and what it received.
// Times are zero before the subtask starts and in deterministic runs.
type SubtaskStats struct {
	Stage   string
	Subtask int
	// Busy + Backpressured + Idle is the subtask's running time (Flink's
	// busyTimeMsPerSecond and friends, as totals): Idle is the time spent
	// waiting for input or, for a source, for data; Backpressured the
	// time blocked on a full downstream queue. They are wall-clock time
	// (how the machine spent the subtask), whatever Options.Clock says.
	Busy, Backpressured, Idle time.Duration
	// RecordsIn counts the records received from upstream subtasks (not
	// those a source reads).
	RecordsIn int64
	// QueueLen and QueueCap are the subtask's input queue, in batches; 0
	// for sources and in deterministic runs.
	QueueLen, QueueCap int
	// CheckpointDelay is the newest checkpoint's start delay at this
	// subtask: from its trigger to the subtask's snapshot, on the
	// checkpoints' clock (CheckpointOptions.Clock, by default
	// Options.Clock), unlike Busy, Backpressured and Idle, which are the
	// machine's time.
	CheckpointDelay time.Duration
}

// SubtaskStats returns every subtask's time and record accounting; it is
// safe to call while the job runs.
func (e *Env) SubtaskStats() []SubtaskStats {
	if !e.job.Built() {
		return nil
	}
	// Busy, idle and backpressured time are the machine's (wall clock),
	// not processing time of Options.Clock: the runtime measures them
	// with time.Now, so the end of a running subtask's span is too.
	now := time.Now()
	var out []SubtaskStats
	for _, s := range e.job.Stages() {
		for _, st := range s.Subtasks() {
			t := st.Stats(now)
			out = append(out, SubtaskStats{Stage: s.Name, Subtask: st.Index, Busy: t.Busy, Backpressured: t.Backpressured, Idle: t.Idle,
				RecordsIn: t.RecordsIn, QueueLen: t.QueueLen, QueueCap: t.QueueCap, CheckpointDelay: t.CheckpointDelay})
		}
	}
	return out
}

// Total sums the counters of every window operator.
func (r Report) Total() WindowCounters {
	var t WindowCounters
	for _, c := range r.Windows {
		t.Add(c)
	}
	return t
}

// StateInfo is the size of window state, as last published by the
// subtasks (after each batch).
type StateInfo struct {
	// OpenWindows counts live (key, window) entries.
	OpenWindows int64
	// Timers counts registered event- and processing-time timers.
	Timers int64
	// Bytes is the encoded size of the state's keys and values, as the
	// pebble backend and checkpoints store them: counted by the KV
	// backends, estimated from a sample of entries by the in-memory one
	// (whose Go memory use is larger).
	Bytes int64
	// Oldest is the earliest pending event-time timer (a window end or
	// cleanup time the watermark has to reach), when HasOldest; unknown
	// for on-disk timers.
	Oldest    etime.Time
	HasOldest bool
	// Past is, of OpenWindows, the windows whose end the watermark had
	// passed when the job ended: fired, and kept only for the allowed
	// lateness. PastKnown says it was counted (it is at the end of a
	// run, for event-time windows with allowed lateness other than
	// sliding ones in pane mode).
	Past      int64
	PastKnown bool
}

func (s *StateInfo) add(o StateInfo) {
	if o.HasOldest && (!s.HasOldest || o.Oldest < s.Oldest) {
		s.Oldest, s.HasOldest = o.Oldest, true
	}
	if o.PastKnown {
		s.Past += o.Past
		s.PastKnown = true
	}
	s.OpenWindows += o.OpenWindows
	s.Timers += o.Timers
	s.Bytes += o.Bytes
}

// OperatorState is one window operator's state, summed over its subtasks.
type OperatorState struct {
	StateInfo
	// Peak is the state when its Bytes were largest.
	Peak StateInfo
	// OverBudget counts the times the state passed Options.StateBudget.
	OverBudget int
}

// Add adds o's sizes, peaks and budget warnings to s (the peaks of
// several operators add up to a bound on their joint peak).
func (s *OperatorState) Add(o OperatorState) {
	s.StateInfo.add(o.StateInfo)
	s.Peak.add(o.Peak)
	s.OverBudget += o.OverBudget
}

// State sums the window state of every window operator; it is safe to call
// while the job runs.
func (e *Env) State() StateInfo {
	var t StateInfo
	for _, o := range e.ops {
		t.add(o.state().StateInfo)
	}
	return t
}

// OperatorStates returns each window operator's state by operator name; it
// is safe to call while the job runs.
func (e *Env) OperatorStates() map[string]OperatorState {
	m := make(map[string]OperatorState, len(e.ops))
	for _, o := range e.ops {
		m[o.name] = o.state()
	}
	return m
}

// Stepper drives a deterministic job step by step, for replays and
// scenario tests: sources are polled only inside RunUntilQuiet, and
// processing time moves only in AdvanceProcessingTime.
type Stepper struct{ x *runtime.Executor }

// Step builds the job for step-by-step driving instead of Execute. The Env
// must have Options.Deterministic set.
func (e *Env) Step() (*Stepper, error) {
	if e.err != nil {
		return nil, e.err
	}
	if len(e.starts) > 0 {
		return nil, errors.New("weir: Step does not drive the sinks of ToSink (their recovery, commits and close); run the job with Execute and Options.Deterministic")
	}
	x, err := runtime.NewExecutor(e.job)
	if err != nil {
		return nil, err
	}
	return &Stepper{x: x}, nil
}

// RunUntilQuiet polls the sources until none has anything to emit; it
// reports whether all of them are done.
func (s *Stepper) RunUntilQuiet() (bool, error) { return s.x.RunUntilQuiet() }

// AdvanceProcessingTime tells every operator that processing time is now
// (periodic watermarks, processing-time timers). A panic in user code comes
// back as an error.
func (s *Stepper) AdvanceProcessingTime(now etime.Time) error { return s.x.AdvanceProcessingTime(now) }

// Close releases the job's sources and state.
func (s *Stepper) Close() error { return s.x.Close() }
