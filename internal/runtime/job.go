package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/watermark"
)

// Options configures the runtime.
type Options struct {
	// BatchSize is how many elements an exchange buffers per target before
	// it sends a batch.
	BatchSize int
	// QueueBatches is the capacity, in batches, of each subtask's input
	// queue; a full queue blocks the sender (backpressure).
	QueueBatches int
	// Deterministic runs everything on one goroutine.
	Deterministic bool
	// Clock is processing time.
	Clock clock.Clock
	// Tick is how often a parallel subtask looks at processing time
	// (periodic watermarks, processing-time timers).
	Tick time.Duration
	// Logger receives runtime events: the failure that stops a job.
	Logger *slog.Logger
	// Checkpoint, when set, takes aligned checkpoints and restores.
	Checkpoint *CheckpointOptions
}

// PollStatus is what a source poll did.
type PollStatus uint8

// The poll results.
const (
	// Emitted: the poll emitted something; poll again.
	Emitted PollStatus = iota
	// Waiting: nothing is available now; the source is not finished.
	Waiting
	// Done: the source is exhausted.
	Done
)

// Poller is a source subtask's reader.
type Poller interface {
	// Poll emits zero or more elements into the source chain. ctx is the
	// job's (Subtask.Context): a Poll that waits for data returns once it
	// is done.
	Poll(ctx context.Context) (PollStatus, error)
	// Close releases the reader.
	Close() error
}

// Waiter is an optional Poller ability: Waited says how long its last
// Poll blocked waiting for data, which counts as idle time.
type Waiter interface {
	Waited() time.Duration
}

// SourceSpec is how a source stage builds one subtask.
type SourceSpec struct {
	// Open builds the subtask's chain and returns its reader and the chain
	// head's control (which gets the final watermark and Finish). It runs
	// while the job is built; a reader that connects to something gives
	// up when st.Context() is done.
	Open func(st *Subtask) (Poller, Control, error)
	// FinalWatermark sends MAX when the source is done (J1). When false, a
	// finished source only ends its channels.
	FinalWatermark bool
}

// Job is a physical graph ready to run once.
type Job struct {
	opts   Options
	stages []*Stage
	ran    atomic.Bool
	built  atomic.Bool // subtasks exist and may be read
	dead   DeadLetterFunc
	deadMu sync.Mutex

	// coord is the checkpoint coordinator, nil without checkpoints. It is
	// stored once, by build, before the subtasks and the trigger start;
	// it is atomic for the goroutines other than the job's
	// (CheckpointStats, RequestCheckpoint), which may ask while Run builds
	// the job.
	coord      atomic.Pointer[coordinator]
	preCommit  []func(id int64, write func(name string, data []byte) error) error
	onBarriers []func(stage string, idx int, id int64)

	// ctx is the job's context, set by Run or NewExecutor before the job
	// is built: it is done once Run's context is, a subtask failed, Fail
	// was called, or the run ended (cancel, with the cause).
	ctx    context.Context
	cancel context.CancelCauseFunc

	// failed is the first error Fail recorded; mu also guards the
	// reading of cancel by Fail.
	failed struct {
		sync.Mutex
		err error
	}
}

// Fail fails the job with err as its cause, from any goroutine: a sink
// whose write or commit failed calls it. The run stops as after a subtask
// error and Run returns err (the first one, when several fail); before
// Run, the run fails as soon as it starts.
func (j *Job) Fail(err error) {
	j.failed.Lock()
	if j.failed.err == nil {
		j.failed.err = err
	}
	cancel := j.cancel
	j.failed.Unlock()
	if cancel != nil {
		cancel(err)
	}
}

// failure returns the error Fail recorded, if any.
func (j *Job) failure() error {
	j.failed.Lock()
	defer j.failed.Unlock()
	return j.failed.err
}

// start makes the job's context from parent (cancelled at once when Fail
// was called before).
func (j *Job) start(parent context.Context) {
	j.failed.Lock()
	defer j.failed.Unlock()
	j.ctx, j.cancel = context.WithCancelCause(parent)
	if j.failed.err != nil {
		j.cancel(j.failed.err)
	}
}

// Context returns the job's context (Subtask.Context): nil before Run or
// NewExecutor. Sinks make their calls with it, so a failure elsewhere in
// the job ends a call that waits.
func (j *Job) Context() context.Context { return j.ctx }

// Context returns the job's context: done when the context given to Run is
// (Execute's), when a subtask fails, or when the run ended. Sources open
// and read with it. It is nil before Run or NewExecutor.
func (st *Subtask) Context() context.Context { return st.job.ctx }

// OnBarrier registers fn to run on each subtask's goroutine when a
// checkpoint barrier passes it (sinks close an epoch there).
func (j *Job) OnBarrier(fn func(stage string, idx int, id int64)) {
	j.onBarriers = append(j.onBarriers, fn)
}

// DeadLetter is bad input that an operator refused (W4).
type DeadLetter struct {
	Stage   string
	Subtask int
	Reason  string
	Detail  string
	Record  any
}

// DeadLetterFunc receives dead letters; it is called from subtask
// goroutines, serialized by the runtime.
type DeadLetterFunc func(DeadLetter)

// NewJob returns an empty job.
func NewJob(opts Options) *Job {
	if opts.BatchSize <= 0 {
		opts.BatchSize = 1024 // weir.Options' default
	}
	if opts.QueueBatches <= 0 {
		opts.QueueBatches = 8
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Tick <= 0 {
		opts.Tick = 50 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Job{opts: opts}
}

// SetDeadLetters sets the dead-letter receiver.
func (j *Job) SetDeadLetters(f DeadLetterFunc) { j.dead = f }

// DeadLetters counts the dead letters of every subtask, restored ones
// included. Safe for concurrent use.
func (j *Job) DeadLetters() int64 {
	var n int64
	for _, s := range j.stages {
		for _, st := range s.subtasks {
			n += st.dead.Load()
		}
	}
	return n
}

// Stages returns the job's stages in creation order.
func (j *Job) Stages() []*Stage { return j.stages }

// Built reports whether the job's subtasks exist, so that readers such as
// Env.Watermarks may look at them.
func (j *Job) Built() bool { return j.built.Load() }

// Stage is a set of parallel subtasks running the same operator chain.
type Stage struct {
	job   *Job
	Name  string
	Par   int
	src   *SourceSpec
	gates []*Gate
	// build makes the chain of one subtask and returns one handler per gate.
	build    func(st *Subtask) ([]GateHandler, Control, error)
	subtasks []*Subtask
}

// Gate is one logical input of a stage; its channels are the upstream
// subtasks that write to it.
type Gate struct {
	Channels int
	// From says which stage's subtasks the channels are, in order.
	From []GateFrom
}

// GateFrom is one upstream stage of a gate: channels Base to
// Base+Par-1 are its subtasks 0 to Par-1.
type GateFrom struct {
	Stage     string
	Base, Par int
}

// Gates returns the stage's gates (nil for a source).
func (s *Stage) Gates() []Gate {
	out := make([]Gate, len(s.gates))
	for i, g := range s.gates {
		out[i] = Gate{Channels: g.Channels, From: append([]GateFrom(nil), g.From...)}
	}
	return out
}

// IsSource reports whether the stage is a source.
func (s *Stage) IsSource() bool { return s.src != nil }

// GateHandler receives the batches of one gate on a subtask.
type GateHandler func(from int, b any)

// AddSource adds a source stage with par subtasks.
func (j *Job) AddSource(name string, par int, spec SourceSpec) *Stage {
	s := &Stage{job: j, Name: name, Par: par, src: &spec}
	j.stages = append(j.stages, s)
	return s
}

// AddStage adds a stage with the given number of input gates; its chains are
// built by build, called once per subtask when the job starts.
func (j *Job) AddStage(name string, par, gates int, build func(st *Subtask) ([]GateHandler, Control, error)) *Stage {
	s := &Stage{job: j, Name: name, Par: par, build: build}
	for range gates {
		s.gates = append(s.gates, &Gate{})
	}
	j.stages = append(j.stages, s)
	return s
}

// Subtasks returns the stage's subtasks once the job is built.
func (s *Stage) Subtasks() []*Subtask { return s.subtasks }

// Subtask is one parallel instance of a stage.
type Subtask struct {
	stage *Stage
	Index int
	job   *Job

	in       chan envelope
	done     <-chan struct{} // the job's context, for blocking sends
	handlers []GateHandler
	ctrl     Control
	poller   Poller

	valves   []*watermark.Valve
	combined *watermark.Combined
	gateOut  []gateOut
	ended    []int // per gate: channels that ended
	finished bool

	procFns    []func(now etime.Time)
	flushers   []func()
	publishers []func()
	closers    []func() error

	snapshots  []snapshotter
	barrierFns []func(id int64)
	injected   int64 // the newest checkpoint this subtask snapshotted
	align      alignment

	// backlog: the subtask's source reads a backlog (its last read had
	// more at once, W10); owned by the subtask's goroutine.
	backlog bool
	// backlogEvery: the source's own backlog emission period (0: none).
	backlogEvery int

	dead   atomic.Int64 // dead letters, including restored ones
	wm     atomic.Int64 // the subtask's input watermark, for readers
	idle   atomic.Bool
	chanMu sync.Mutex
	chans  [][]watermark.ChannelState // published copy of the valves' channels
	// chansDirty: a valve changed since the last publishChannels; owned by
	// the subtask's goroutine.
	chansDirty bool

	// Time and record accounting (Stats), parallel runs only: nanoseconds
	// spent waiting for input or, for a source, for data (idle), and
	// blocked on a full downstream queue (backpressured); the rest of the
	// running time is busy. Added per wait or per batch, never per record.
	//
	// These stay on the wall clock (time.Now), not Options.Clock: they
	// measure how the machine spent the subtask's goroutine (CPU-ish
	// time, Flink's busyTimeMsPerSecond), which a fake processing time
	// that stands still or jumps would make meaningless; nothing in a
	// run's results depends on them. Stats' now must be wall time too.
	startNs, endNs atomic.Int64 // Unix nanoseconds of the wall clock; 0: not yet
	idleNs         atomic.Int64
	bpNs           atomic.Int64
	recordsIn      atomic.Int64 // records received through exchanges
	// ckDelayNs is the newest checkpoint's start delay here: from its
	// trigger to this subtask's snapshot (the barrier's way through the
	// queues and the alignment of its inputs), on the checkpoints' clock
	// (CheckpointOptions.Clock), like the trigger time it starts from.
	ckDelayNs atomic.Int64
}

// SubtaskStats is how a subtask spent its time and what it received, for
// metrics: Busy + Backpressured + Idle is its running time (Flink's
// busyTimeMsPerSecond and friends, as totals).
type SubtaskStats struct {
	Busy, Backpressured, Idle time.Duration
	// RecordsIn counts records received through exchanges (not those a
	// source reads).
	RecordsIn int64
	// QueueLen and QueueCap are the subtask's input queue (batches); 0
	// for sources and in deterministic runs.
	QueueLen, QueueCap int
	// CheckpointDelay is the newest checkpoint's start delay at this
	// subtask: from its trigger to the subtask's snapshot.
	CheckpointDelay time.Duration
}

// Stats returns the subtask's accounting as of now, a wall-clock time
// (time.Now: busy and idle time are the machine's, not Options.Clock's);
// it is safe to call while the job runs. Before the subtask starts, and in deterministic
// runs, the times are zero.
func (st *Subtask) Stats(now time.Time) SubtaskStats {
	s := SubtaskStats{RecordsIn: st.recordsIn.Load(), QueueLen: len(st.in), QueueCap: cap(st.in), CheckpointDelay: time.Duration(st.ckDelayNs.Load())}
	start := st.startNs.Load()
	if start == 0 {
		return s
	}
	end := st.endNs.Load()
	if end == 0 {
		end = now.UnixNano()
	}
	s.Idle, s.Backpressured = time.Duration(st.idleNs.Load()), time.Duration(st.bpNs.Load())
	s.Busy = max(time.Duration(end-start)-s.Idle-s.Backpressured, 0)
	return s
}

type gateOut struct {
	st *Subtask
	g  int
}

func (o gateOut) Watermark(wm etime.Time) {
	if o.st.combined != nil {
		o.st.combined.InputWatermark(o.g, wm, subtaskOut{o.st})
		return
	}
	subtaskOut{o.st}.Watermark(wm)
}

func (o gateOut) Status(idle bool) {
	if o.st.combined != nil {
		o.st.combined.InputStatus(o.g, idle, subtaskOut{o.st})
		return
	}
	subtaskOut{o.st}.Status(idle)
}

type subtaskOut struct{ st *Subtask }

func (o subtaskOut) Watermark(wm etime.Time) {
	o.st.wm.Store(int64(wm))
	o.st.ctrl.Watermark(wm)
}

func (o subtaskOut) Status(idle bool) {
	o.st.idle.Store(idle)
	o.st.ctrl.Status(idle)
}

// OnProcessingTime registers fn to be called with the current processing
// time: periodically in the parallel executor, when the driver advances
// time in the deterministic one.
func (st *Subtask) OnProcessingTime(fn func(now etime.Time)) { st.procFns = append(st.procFns, fn) }

// OnFlush registers fn to run when the subtask's input is momentarily
// drained (exchange writers flush partial batches there).
func (st *Subtask) OnFlush(fn func()) { st.flushers = append(st.flushers, fn) }

// OnPublish registers fn to run after each batch, so operators can publish
// counters to concurrent readers cheaply.
func (st *Subtask) OnPublish(fn func()) { st.publishers = append(st.publishers, fn) }

// OnClose registers fn to run when the subtask stops.
func (st *Subtask) OnClose(fn func() error) { st.closers = append(st.closers, fn) }

// SetBacklog records whether the subtask's source is reading a backlog
// (W10). The source's poller calls it on the subtask's goroutine; operators
// chained behind the source read it there with Backlog.
func (st *Subtask) SetBacklog(b bool) { st.backlog = b }

// Backlog reports what SetBacklog last recorded: false for a subtask
// without a source of its own (behind an exchange).
func (st *Subtask) Backlog() bool { return st.backlog }

// SetBacklogEvery records the source's own backlog emission period in
// records (0: none, the strategy's or the job's applies); BacklogEvery
// returns it. Both run on the subtask's goroutine.
func (st *Subtask) SetBacklogEvery(n int) { st.backlogEvery = n }

// BacklogEvery returns what SetBacklogEvery recorded.
func (st *Subtask) BacklogEvery() int { return st.backlogEvery }

// DeadLetter reports bad input.
func (st *Subtask) DeadLetter(d DeadLetter) {
	st.dead.Add(1)
	if d.Stage == "" {
		d.Stage = st.stage.Name
	}
	d.Subtask = st.Index
	if f := st.job.dead; f != nil {
		st.job.deadMu.Lock()
		f(d)
		st.job.deadMu.Unlock()
	}
}

// StageName returns the name of the subtask's stage.
func (st *Subtask) StageName() string { return st.stage.Name }

// Watermark returns the subtask's current input watermark (MIN before the
// first one). Safe for concurrent use.
func (st *Subtask) Watermark() etime.Time { return etime.Time(st.wm.Load()) }

// Idle reports whether the subtask's input is idle. Safe for concurrent use.
func (st *Subtask) Idle() bool { return st.idle.Load() }

// Channels returns the state of each input channel per gate. Safe for
// concurrent use.
func (st *Subtask) Channels() [][]watermark.ChannelState {
	st.chanMu.Lock()
	defer st.chanMu.Unlock()
	out := make([][]watermark.ChannelState, len(st.chans))
	for i, c := range st.chans {
		out[i] = append([]watermark.ChannelState(nil), c...)
	}
	return out
}

// publishChannels copies the valves' channel states for readers; it runs
// with the other publishers, once per batch, and only after a change.
func (st *Subtask) publishChannels() {
	if !st.chansDirty {
		return
	}
	st.chansDirty = false
	st.chanMu.Lock()
	for g, v := range st.valves {
		st.chans[g] = v.AppendChannels(st.chans[g][:0])
	}
	st.chanMu.Unlock()
}

// inputWatermark feeds a watermark from channel from of gate g into the
// subtask's valve.
func (st *Subtask) inputWatermark(g, from int, wm etime.Time) {
	st.valves[g].InputWatermark(from, wm, st.gateOut[g])
	st.chansDirty = true
}

func (st *Subtask) inputStatus(g, from int, idle bool) {
	st.valves[g].InputStatus(from, idle, st.gateOut[g])
	st.chansDirty = true
}

func (st *Subtask) inputEnd(g int) {
	st.ended[g]++
	if st.align.id != 0 {
		// A channel ended inside an alignment: its source finished
		// without the barrier, so the checkpoint is abandoned. What the
		// alignment held may end the other channels (and finish the
		// subtask) while it is replayed.
		st.releaseAlignment()
		if st.finished {
			return
		}
	}
	for i, n := range st.ended {
		if n < st.stage.gates[i].Channels {
			return
		}
	}
	st.finish()
	st.ctrl.Finish()
	st.flush()
}

// finish marks the subtask finished; no checkpoint can include it now.
func (st *Subtask) finish() {
	st.finished = true
	if c := st.job.coord.Load(); c != nil {
		c.finished(st.stage.src != nil)
	}
}

// sourceSubtasks counts the job's source subtasks.
func (j *Job) sourceSubtasks() int {
	n := 0
	for _, s := range j.stages {
		if s.src != nil {
			n += s.Par
		}
	}
	return n
}

func (st *Subtask) flush() {
	for _, f := range st.flushers {
		f()
	}
}

func (st *Subtask) publish() {
	st.publishChannels()
	for _, f := range st.publishers {
		f()
	}
}

func (st *Subtask) advanceProcessingTime(now etime.Time) {
	for _, f := range st.procFns {
		f(now)
	}
}

// build creates the subtasks of every stage, upstream first.
func (j *Job) build() error {
	for _, s := range j.stages {
		s.subtasks = make([]*Subtask, s.Par)
		for i := range s.Par {
			st := &Subtask{stage: s, Index: i, job: j}
			if !j.opts.Deterministic {
				st.in = make(chan envelope, j.opts.QueueBatches)
			}
			st.wm.Store(int64(etime.MinTime))
			s.subtasks[i] = st
		}
	}
	if o := j.opts.Checkpoint; o != nil && o.Store != nil && o.Interval > 0 {
		j.coord.Store(newCoordinator(j, o))
	}
	// Chains are built downstream first, so that exchange writers find
	// their target subtasks ready.
	for k := len(j.stages) - 1; k >= 0; k-- {
		s := j.stages[k]
		for _, st := range s.subtasks {
			if err := st.buildChain(); err != nil {
				return err
			}
		}
	}
	j.built.Store(true)
	return nil
}

// buildChain builds the subtask's operator chain and restores what the
// runtime keeps (valves, dead-letter counts); a panic while building (a
// corrupt checkpoint part) becomes an error.
func (st *Subtask) buildChain() (err error) {
	s := st.stage
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("weir: stage %s subtask %d: %v", s.Name, st.Index, r)
		}
	}()
	if err := st.restoreDeadLetters(); err != nil {
		return fmt.Errorf("weir: stage %s subtask %d: %w", s.Name, st.Index, err)
	}
	if s.src != nil {
		p, ctrl, err := s.src.Open(st)
		if err != nil {
			return fmt.Errorf("weir: stage %s subtask %d: %w", s.Name, st.Index, err)
		}
		st.poller, st.ctrl = p, ctrl
		return nil
	}
	hs, ctrl, err := s.build(st)
	if err != nil {
		return fmt.Errorf("weir: stage %s subtask %d: %w", s.Name, st.Index, err)
	}
	st.handlers, st.ctrl = hs, ctrl
	st.ended = make([]int, len(s.gates))
	st.chans = make([][]watermark.ChannelState, len(s.gates))
	for g, gt := range s.gates {
		if gt.Channels == 0 {
			return fmt.Errorf("weir: stage %s gate %d has no input", s.Name, g)
		}
		st.valves = append(st.valves, watermark.NewValve(gt.Channels))
		st.gateOut = append(st.gateOut, gateOut{st: st, g: g})
	}
	st.chansDirty = true // publish the initial channel states
	if len(s.gates) > 1 {
		st.combined = watermark.NewCombined(len(s.gates))
	}
	if err := st.restoreValves(); err != nil {
		return err
	}
	return nil
}

// ErrAlreadyRun is returned when a job is run twice.
var ErrAlreadyRun = errors.New("weir: job already ran; build a new one")

// ErrNotStarted is matched (errors.Is) by the error of a job that failed
// before it ran: a source that did not open, an operator that could not
// be built or restored. It read nothing, and a resumed job's counters are
// not restored (they stand as its checkpoint holds them).
var ErrNotStarted = errors.New("weir: the job did not start")

// notStarted is a build's error, which reads as it does and matches
// ErrNotStarted.
type notStarted struct{ error }

func (e notStarted) Is(target error) bool { return target == ErrNotStarted }
func (e notStarted) Unwrap() error        { return e.error }

// Run builds and runs the job to the end of its input or until ctx is done.
// A panic in user code fails the job with its cause and stack.
func (j *Job) Run(ctx context.Context) error {
	if j.ran.Swap(true) {
		return ErrAlreadyRun
	}
	j.start(ctx)
	defer j.cancel(nil)
	if err := j.build(); err != nil {
		j.closeOpened()
		if ctx.Err() != nil {
			// Opening a source gave up because the run was cancelled.
			return ctx.Err()
		}
		return notStarted{err}
	}
	if j.opts.Deterministic {
		ex := &Executor{job: j}
		return ex.runToEnd(j.ctx)
	}
	return j.runParallel()
}

// closeOpened closes the readers a failed build opened (errors of theirs
// are dropped: the build's error is the job's).
func (j *Job) closeOpened() {
	for _, s := range j.stages {
		for _, st := range s.subtasks {
			if st != nil && st.poller != nil {
				st.poller.Close()
			}
		}
	}
}

func (j *Job) closeAll() error {
	var errs []error
	for _, s := range j.stages {
		for _, st := range s.subtasks {
			if st.poller != nil {
				errs = append(errs, st.poller.Close())
			}
			for _, c := range st.closers {
				errs = append(errs, c())
			}
		}
	}
	return errors.Join(errs...)
}

// PanicError is a panic in operator or user code, turned into a job
// failure.
type PanicError struct {
	Stage   string
	Subtask int
	Value   any
	Stack   []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("weir: stage %s subtask %d panicked: %v\n%s", e.Stage, e.Subtask, e.Value, e.Stack)
}

func (st *Subtask) guard(err *error) {
	if r := recover(); r != nil {
		if r == errStopped {
			*err = errStopped
			return
		}
		*err = &PanicError{Stage: st.stage.Name, Subtask: st.Index, Value: r, Stack: debug.Stack()}
	}
}

// errStopped unwinds a subtask whose send was interrupted because the job
// is stopping; it is not a failure of its own.
var errStopped = errors.New("weir: subtask stopped")

func (j *Job) runParallel() error {
	ctx, cancel := j.ctx, j.cancel
	var wg sync.WaitGroup
	for _, s := range j.stages {
		for _, st := range s.subtasks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := st.runParallel(ctx); err != nil && err != errStopped {
					var reopen interface{ Reopen() bool }
					switch {
					case ctx.Err() != nil:
					case errors.As(err, &reopen) && reopen.Reopen():
						// An end that is no failure (connector.ErrInputGrew):
						// the runner says why it reopens the job.
						j.opts.Logger.Info("weir: subtask ends the attempt; stopping the job", "stage", st.stage.Name, "subtask", st.Index, "err", err)
					default:
						j.opts.Logger.Error("weir: subtask failed; stopping the job", "stage", st.stage.Name, "subtask", st.Index, "err", err)
					}
					cancel(err)
				}
			}()
		}
	}
	stopTrigger := j.runCheckpointTrigger(ctx)
	wg.Wait()
	stopTrigger()
	if c := j.coord.Load(); c != nil {
		c.writers.Wait()
	}
	err := context.Cause(ctx)
	if err == context.Canceled && ctx.Err() != nil {
		err = ctx.Err()
	}
	return errors.Join(err, j.closeAll())
}

// runCheckpointTrigger starts the goroutine that starts checkpoints when
// they are due on the coordinator's clock (c.clk); the returned function
// stops it and waits for it. runParallel owns the goroutine: it calls stop
// once every subtask has returned; the job's context ending stops it too.
//
// The goroutine looks at the clock on a wall-clock ticker (a fraction of
// the interval, at most 100ms), when RequestCheckpoint pokes it, and, for
// a clock.Notifier (a fake clock), whenever the clock moves: a test that
// advances its fake clock past the interval gets a checkpoint at once,
// however fast or slow the machine. The ticker stays for Notifiers too:
// a checkpoint that was not due because another was pending becomes due
// at the next tick after that one completes.
func (j *Job) runCheckpointTrigger(ctx context.Context) (stop func()) {
	c := j.coord.Load()
	if c == nil {
		return func() {}
	}
	n, _ := c.clk.(clock.Notifier)
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(min(c.opts.Interval/4+time.Millisecond, 100*time.Millisecond))
		defer t.Stop()
		for {
			// Take the Notifier's channel before reading the clock, so
			// that a move after the read closes this channel.
			var moved <-chan struct{}
			if n != nil {
				moved = n.Changed()
			}
			if now := c.clk.Now(); c.due(now) {
				c.trigger(now)
			}
			select {
			case <-quit:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			case <-moved: // a fake clock moved: maybe past the interval
			case <-c.poke: // RequestCheckpoint: look now, not at the next tick
			}
		}
	}()
	return func() { close(quit); <-done }
}

func (st *Subtask) runParallel(ctx context.Context) (err error) {
	defer st.guard(&err)
	st.startNs.Store(time.Now().UnixNano())
	defer func() { st.endNs.Store(time.Now().UnixNano()) }()
	st.done = ctx.Done()
	clk := st.job.opts.Clock
	if st.poller != nil {
		return st.runSource(ctx, clk)
	}
	tick := time.NewTicker(st.job.opts.Tick)
	defer tick.Stop()
	// step handles a batch (got) or a tick (ticked).
	step := func(e envelope, got, ticked bool) {
		switch {
		case got:
			st.deliver(e)
			st.publish()
			if len(st.in) == 0 {
				st.flush()
			}
		case ticked:
			st.advanceProcessingTime(clock.Millis(clk))
			st.flush()
		}
	}
	for !st.finished {
		select {
		case e := <-st.in:
			step(e, true, false)
		case <-tick.C:
			step(envelope{}, false, true)
		case <-ctx.Done():
			return context.Cause(ctx)
		default:
			// Nothing to do: the wait is idle time.
			start := time.Now()
			select {
			case e := <-st.in:
				st.idleNs.Add(int64(time.Since(start)))
				step(e, true, false)
			case <-tick.C:
				st.idleNs.Add(int64(time.Since(start)))
				step(envelope{}, false, true)
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
	}
	return nil
}

func (st *Subtask) runSource(ctx context.Context, clk clock.Clock) error {
	next := time.Now()
	for {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		st.maybeInject()
		polled := time.Now()
		status, err := st.poller.Poll(ctx)
		if status == Waiting {
			// A read that found nothing waited for data (a Kafka poll
			// blocks up to its timeout): idle, not busy.
			st.idleNs.Add(int64(time.Since(polled)))
		} else if w, ok := st.poller.(Waiter); ok {
			st.idleNs.Add(int64(w.Waited()))
		}
		if err != nil {
			return fmt.Errorf("weir: source %s subtask %d: %w", st.stage.Name, st.Index, err)
		}
		st.publish()
		if now := time.Now(); !now.Before(next) || status != Emitted {
			st.advanceProcessingTime(clock.Millis(clk))
			// Flush partial batches on every tick, so a busy source does
			// not hold back records for quiet targets.
			st.flush()
			next = now.Add(st.job.opts.Tick)
		}
		switch status {
		case Done:
			st.endSource()
			return nil
		case Waiting:
			st.flush()
			start := time.Now()
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-time.After(time.Millisecond):
			}
			st.idleNs.Add(int64(time.Since(start)))
		}
	}
}

func (st *Subtask) endSource() {
	st.maybeInject() // a requested barrier goes before the end
	if st.stage.src.FinalWatermark {
		st.wm.Store(int64(etime.MaxTime))
		st.ctrl.Watermark(etime.MaxTime)
	}
	st.finish()
	st.ctrl.Finish()
	st.flush()
	st.publish()
}
