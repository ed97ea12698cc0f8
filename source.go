package weir

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/watermark"
)

// The source contract is package connector's; these aliases keep its
// names in the root package, where library users have them.

// ReadStatus is what one SourceReader.Read call did (connector.ReadStatus).
type ReadStatus = connector.ReadStatus

// The read results.
const (
	// Emitted: Read emitted something; it will be called again at once.
	Emitted = connector.Emitted
	// Waiting: nothing is available now; Read will be called again later.
	Waiting = connector.Waiting
	// Done: the reader is exhausted.
	Done = connector.Done
)

// Source is a connector's source: it opens one reader per source channel,
// with the job's context (connector.Source).
type Source[T any] = connector.Source[T]

// SourceReader reads one channel; Read gets the job's context
// (connector.Reader).
type SourceReader[T any] = connector.Reader[T]

// SourceOutput receives a reader's records and source-level watermarks
// (connector.Output).
type SourceOutput[T any] = connector.Output[T]

// DeadLetterOutput is implemented by the SourceOutput the engine gives
// readers (connector.DeadLetterOutput).
type DeadLetterOutput = connector.DeadLetterOutput

// LossOutput is implemented by the SourceOutput the engine gives readers
// (connector.LossOutput): records lost before they were read are counted
// in Report.SourceLost.
type LossOutput = connector.LossOutput

// CheckpointListener is implemented by readers that act on checkpoints
// beyond their position (connector.CheckpointListener).
type CheckpointListener = connector.CheckpointListener

// CheckpointedReader is a SourceReader that can be checkpointed; a job
// with checkpoints refuses sources whose readers are not
// CheckpointedReaders (connector.CheckpointedReader).
type CheckpointedReader = connector.CheckpointedReader

// SourceOptions configures a source stage.
type SourceOptions struct {
	// Channels is the number of parallel source channels. Default 1.
	Channels int
	// NoFinalWatermark skips the final MAX watermark at end of input, so
	// windows still open stay unfired (replays of unfinished streams).
	NoFinalWatermark bool
	// Stop, when set, is asked before each read: once it returns true,
	// every channel ends as at the end of its input (a graceful stop of
	// an unbounded source, Ctrl-C).
	Stop func() bool
	// Final, when set, decides when a channel ends (its input ended, or
	// Stop) whether the final MAX watermark is sent, instead of
	// NoFinalWatermark.
	Final func() bool
	// BacklogEvery, when > 0, is the backlog emission period (W10) of the
	// watermark strategies applied right behind this source, unless a
	// strategy sets its own: Options.BacklogWatermarkEvery otherwise.
	BacklogEvery int
}

// InputReporter is an optional SourceReader ability: a reader of several
// inputs reports their state (connector.InputReporter).
type InputReporter = connector.InputReporter

// InputStatus is the state of one input of a source reader
// (connector.InputStatus).
type InputStatus = connector.InputStatus

// BacklogReporter is an optional SourceReader ability: whether more
// records are there to be read at once (connector.BacklogReporter).
type BacklogReporter = connector.BacklogReporter

// WaitReporter is an optional SourceReader ability: how long its last
// Read blocked waiting for data (connector.WaitReporter).
type WaitReporter = connector.WaitReporter

// SourceInputs is the state of the inputs of one source channel.
type SourceInputs struct {
	Source  string
	Channel int
	Inputs  []InputStatus
}

type sourceStats struct {
	name string
	// n counts the records emitted; restored those of n that the
	// checkpoint restored (emitted by an earlier process).
	n, restored atomic.Int64
	// lost counts the records the readers reported lost before they
	// read them (LossOutput), those of a restored checkpoint's too.
	lost atomic.Int64
}

// FromSource creates a stream from src.
func FromSource[T any](env *Env, name string, src Source[T], o SourceOptions) Stream[T] {
	if o.Channels <= 0 {
		o.Channels = 1
	}
	name = env.uniqueName(name)
	stats := &sourceStats{name: name}
	env.sources = append(env.sources, stats)
	var out Stream[T]
	stage := env.job.AddSource(name, o.Channels, runtime.SourceSpec{
		FinalWatermark: !o.NoFinalWatermark && o.Final == nil,
		Open: func(st *runtime.Subtask) (runtime.Poller, runtime.Control, error) {
			r, err := src.Open(st.Context(), st.Index, o.Channels)
			if err != nil {
				return nil, nil, fmt.Errorf("open source %s channel %d: %w", name, st.Index, err)
			}
			// A channel starts as reading a backlog: whatever is there at
			// start is history, read as fast as it can be (W10). The chain
			// behind it (built by collector) reads the period.
			st.SetBacklog(true)
			st.SetBacklogEvery(o.BacklogEvery)
			head := out.n.collector(st)
			so := &srcOut[T]{head: head, SourceOutput: watermark.NewSourceOutput(ctrlOutput{head}), st: st, stats: stats}
			p := &poller[T]{r: r, out: so, stats: stats, stop: o.Stop, final: o.Final}
			p.waits, _ = r.(WaitReporter)
			p.backlog, _ = r.(BacklogReporter)
			st.OnPublish(p.publish)
			if err := p.checkpointing(st, name); err != nil {
				r.Close()
				return nil, nil, err
			}
			if ir, ok := r.(InputReporter); ok {
				env.listenMu.Lock()
				env.reporters = append(env.reporters, reporter{source: name, channel: st.Index, r: ir})
				env.listenMu.Unlock()
			}
			if l, ok := r.(CheckpointListener); ok && st.Checkpointing() {
				st.OnBarrier(l.CheckpointTaken)
				env.listenMu.Lock()
				env.listeners = append(env.listeners, l)
				env.listenMu.Unlock()
			}
			// The runtime's final MAX goes through the channel's source
			// output too, so an idle channel is reactivated by it (J3, H4).
			return p, srcControl[T]{so}, nil
		},
	})
	out = newStream[T](env, stage)
	return out
}

type poller[T any] struct {
	r     SourceReader[T]
	out   *srcOut[T]
	stats *sourceStats
	seen  int64
	stop  func() bool  // SourceOptions.Stop
	final func() bool  // SourceOptions.Final
	waits WaitReporter // r, if it reports its waits
	// backlog is r, if it reports its backlog (W10)
	backlog BacklogReporter
}

func (p *poller[T]) Poll(ctx context.Context) (runtime.PollStatus, error) {
	if p.stop != nil && p.stop() {
		return p.end(), nil
	}
	st, err := p.r.Read(ctx, p.out)
	if st == Done && err == nil {
		return p.end(), nil
	}
	// The channel reads a backlog (W10) while its reader says so, or, for
	// a reader that does not tell, while its reads emit.
	if p.backlog != nil {
		p.out.st.SetBacklog(p.backlog.Backlog())
	} else {
		p.out.st.SetBacklog(st == Emitted)
	}
	return pollStatus(st), err
}

// pollStatus is the runtime's name of a read's status; a status the
// connector package does not define counts as Emitted (read again at once).
func pollStatus(s ReadStatus) runtime.PollStatus {
	switch s {
	case Waiting:
		return runtime.Waiting
	case Done:
		return runtime.Done
	}
	return runtime.Emitted
}

// Waited implements runtime.Waiter for readers that report their waits.
func (p *poller[T]) Waited() time.Duration {
	if p.waits != nil {
		return p.waits.Waited()
	}
	return 0
}

// end ends the channel, with the final watermark when Final says so.
func (p *poller[T]) end() runtime.PollStatus {
	if p.final != nil && p.final() {
		p.out.EmitWatermark(etime.MaxTime)
	}
	return runtime.Done
}

// checkpointing restores the reader's position, its source output and its
// record count from a restored checkpoint, and registers their snapshot.
func (p *poller[T]) checkpointing(st *runtime.Subtask, name string) error {
	cr, ok := p.r.(CheckpointedReader)
	if b, restored := st.Restored("source")[st.Index]; restored {
		if !ok {
			return fmt.Errorf("source %s cannot resume from a checkpoint: its reader is not a CheckpointedReader", name)
		}
		r := state.Reader{Buf: b}
		pos := r.Bytes()
		out := r.Bytes()
		n := r.Int()
		var lost int64
		if len(r.Buf) > 0 { // checkpoints before LossOutput end at n
			lost = r.Int()
		}
		if r.Err != nil {
			return fmt.Errorf("source %s channel %d: corrupt checkpoint: %w", name, st.Index, r.Err)
		}
		if err := cr.RestorePosition(pos); err != nil {
			return fmt.Errorf("source %s channel %d: %w", name, st.Index, err)
		}
		if err := p.out.SourceOutput.RestoreState(out); err != nil {
			return fmt.Errorf("source %s channel %d: %w", name, st.Index, err)
		}
		p.out.n, p.seen = n, n
		p.stats.n.Add(n)
		p.stats.restored.Add(n)
		p.out.lost = lost
		p.stats.lost.Add(lost)
	}
	if !st.Checkpointing() {
		return nil
	}
	if !ok {
		return fmt.Errorf("source %s cannot be checkpointed: its reader is not a CheckpointedReader", name)
	}
	st.OnSnapshot("source", func(dst []byte) ([]byte, error) {
		pos, err := cr.SnapshotPosition()
		if err != nil {
			return dst, err
		}
		w := state.Writer{Buf: dst}
		w.Bytes(pos)
		w.Bytes(p.out.SourceOutput.AppendState(nil))
		w.Int(p.out.n)
		w.Int(p.out.lost)
		return w.Buf, nil
	})
	return nil
}
func (p *poller[T]) Close() error { return p.r.Close() }
func (p *poller[T]) publish() {
	if d := p.out.n - p.seen; d != 0 {
		p.stats.n.Add(d)
		p.seen = p.out.n
	}
}

// srcOut is a reader's SourceOutput: records go to the chain head,
// watermarks and status through the channel's watermark.SourceOutput.
type srcOut[T any] struct {
	*watermark.SourceOutput
	head  runtime.Collector[T]
	n     int64
	st    *runtime.Subtask
	stats *sourceStats
	// lost counts the channel's records lost before they were read
	// (Lost), checkpointed beside n.
	lost int64
}

func (s *srcOut[T]) Emit(ts etime.Time, v T) {
	s.n++
	s.head.Collect(ts, v)
}

// DeadLetter implements DeadLetterOutput.
func (s *srcOut[T]) DeadLetter(reason, detail string, record any) {
	s.n++
	s.st.DeadLetter(runtime.DeadLetter{Reason: reason, Detail: detail, Record: record})
}

// Lost implements LossOutput: the records are counted (Report.SourceLost),
// not read; the reader has logged where they were.
func (s *srcOut[T]) Lost(n int64, _ string) {
	s.lost += n
	s.stats.lost.Add(n)
}

// srcControl is the control the runtime drives at end of input.
type srcControl[T any] struct{ so *srcOut[T] }

func (c srcControl[T]) Watermark(wm etime.Time) { c.so.EmitWatermark(wm) }
func (c srcControl[T]) Status(idle bool)        { markStatus(c.so, idle) }
func (c srcControl[T]) Finish()                 { c.so.head.Finish() }

// markStatus turns a runtime status change into a watermark.Output call.
func markStatus(o watermark.Output, idle bool) {
	if idle {
		o.MarkIdle()
	} else {
		o.MarkActive()
	}
}

// ctrlOutput adapts a runtime.Control to a watermark.Output.
type ctrlOutput struct{ c runtime.Control }

func (o ctrlOutput) EmitWatermark(wm etime.Time) { o.c.Watermark(wm) }
func (o ctrlOutput) MarkIdle()                   { o.c.Status(true) }
func (o ctrlOutput) MarkActive()                 { o.c.Status(false) }

// FromSlice creates a bounded single-channel stream of items without
// timestamps (assign them with AssignTimestamps).
func FromSlice[T any](env *Env, items []T) Stream[T] {
	// A slice is history known in full: a watermark after every record
	// makes it classify as its deterministic replay does (W10).
	return FromSource[T](env, "slice", sliceSource[T]{items: items, batch: env.opts.BatchSize}, SourceOptions{BacklogEvery: 1})
}

type sliceSource[T any] struct {
	items []T
	batch int
}

func (s sliceSource[T]) Open(_ context.Context, ch, n int) (SourceReader[T], error) {
	return &sliceReader[T]{items: s.items, batch: s.batch}, nil
}

type sliceReader[T any] struct {
	items []T
	pos   int
	batch int
}

func (r *sliceReader[T]) Read(_ context.Context, out SourceOutput[T]) (ReadStatus, error) {
	if r.pos >= len(r.items) {
		return Done, nil
	}
	end := min(r.pos+r.batch, len(r.items))
	for ; r.pos < end; r.pos++ {
		out.Emit(etime.MinTime, r.items[r.pos])
	}
	return Emitted, nil
}
func (r *sliceReader[T]) Close() error { return nil }

// SnapshotPosition implements CheckpointedReader.
func (r *sliceReader[T]) SnapshotPosition() ([]byte, error) {
	return strconv.AppendInt(nil, int64(r.pos), 10), nil
}

// RestorePosition implements CheckpointedReader.
func (r *sliceReader[T]) RestorePosition(pos []byte) error {
	n, err := strconv.Atoi(string(pos))
	if err != nil || n < 0 || n > len(r.items) {
		return fmt.Errorf("weir: slice source cannot resume at %q of %d items", pos, len(r.items))
	}
	r.pos = n
	return nil
}
