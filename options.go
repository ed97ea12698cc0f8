package weir

import (
	"errors"
	"fmt"
	"log/slog"
	goruntime "runtime"
	"time"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/state/memstate"
)

// Options configures an Env. Start from DefaultOptions; the zero value of a
// field means its default.
type Options struct {
	// Parallelism is the number of subtasks of keyed (windowed) stages.
	// Default: GOMAXPROCS.
	Parallelism int
	// MaxParallelism is the number of key groups, the upper bound on
	// parallelism when state is rescaled. Default 128.
	MaxParallelism int
	// Deterministic runs the whole job on one goroutine with synchronous
	// exchanges, so its output is a pure function of its input (scenario
	// tests, replays).
	Deterministic bool
	// BatchSize is the number of elements per exchange batch. Default 1024:
	// a batch crosses goroutines, and each hand-off (a wake-up of the
	// receiver, the batch's cache lines moving between cores) costs what
	// hundreds of records do (Nexmark count at parallelism 1 ran 25% faster
	// than with 256). A writer sends a batch before it is full when its
	// subtask's input drains or a watermark passes, so a slow stream does
	// not wait for a batch to fill.
	BatchSize int
	// QueueBatches is each subtask's input queue capacity in batches; a full
	// queue blocks upstream (backpressure). Default 8.
	QueueBatches int
	// WatermarkInterval is the processing-time period of periodic watermark
	// emission (Flink's pipeline.auto-watermark-interval). Default 200ms.
	WatermarkInterval time.Duration
	// BacklogWatermarkEvery is how many records of a source channel pass
	// between two watermark emissions while the channel reads a backlog
	// (semantics W10): then the generator emits after every this many
	// records instead of on the processing-time period, so a replay
	// classifies its records the same at any read speed. Default
	// DefaultBacklogWatermarkEvery; negative: periodic emission only, as
	// Flink.
	BacklogWatermarkEvery int
	// Clock is processing time. Default: the wall clock.
	Clock clock.Clock
	// Logger receives job events. Default: discard.
	Logger *slog.Logger
	// NewBackend creates the state backend of one operator instance.
	// Default: the in-memory backend.
	NewBackend func() state.Backend
	// Checkpoint enables checkpoints and restore.
	Checkpoint CheckpointOptions
	// StateBudget, when positive, is the state size in bytes (StateInfo
	// Bytes, summed over the subtasks) above which a window operator logs
	// a warning on Logger, once each time it passes it.
	StateBudget int64
}

// DefaultBacklogWatermarkEvery is the default of
// Options.BacklogWatermarkEvery: a watermark after every 1,000 records of
// a channel reading a backlog (W10).
const DefaultBacklogWatermarkEvery = 1000

// DefaultOptions returns the defaults.
func DefaultOptions() Options {
	return Options{
		Parallelism:           goruntime.GOMAXPROCS(0),
		MaxParallelism:        state.DefaultMaxParallelism,
		BatchSize:             1024,
		QueueBatches:          8,
		WatermarkInterval:     200 * time.Millisecond,
		BacklogWatermarkEvery: DefaultBacklogWatermarkEvery,
		Clock:                 clock.Real{},
		Logger:                slog.New(slog.DiscardHandler),
		NewBackend:            func() state.Backend { return memstate.New() },
	}
}

// withDefaults fills zero fields from DefaultOptions.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Parallelism == 0 {
		o.Parallelism = d.Parallelism
	}
	if o.MaxParallelism == 0 {
		o.MaxParallelism = d.MaxParallelism
	}
	if o.BatchSize == 0 {
		o.BatchSize = d.BatchSize
	}
	if o.QueueBatches == 0 {
		o.QueueBatches = d.QueueBatches
	}
	if o.WatermarkInterval == 0 {
		o.WatermarkInterval = d.WatermarkInterval
	}
	if o.BacklogWatermarkEvery == 0 {
		o.BacklogWatermarkEvery = d.BacklogWatermarkEvery
	}
	if o.Clock == nil {
		o.Clock = d.Clock
	}
	if o.Logger == nil {
		o.Logger = d.Logger
	}
	if o.NewBackend == nil {
		o.NewBackend = d.NewBackend
	}
	return o
}

// Validate reports every invalid field, naming the field and the fix.
func (o Options) Validate() error {
	var errs []error
	if o.Parallelism < 0 {
		errs = append(errs, fmt.Errorf("weir: Options.Parallelism = %d; use 1 or more (0 means GOMAXPROCS)", o.Parallelism))
	}
	if o.MaxParallelism < 0 || o.MaxParallelism > 32768 {
		errs = append(errs, fmt.Errorf("weir: Options.MaxParallelism = %d; use 1..32768 (0 means 128)", o.MaxParallelism))
	}
	if o.MaxParallelism > 0 && o.Parallelism > o.MaxParallelism {
		errs = append(errs, fmt.Errorf("weir: Options.Parallelism %d exceeds MaxParallelism %d; raise MaxParallelism", o.Parallelism, o.MaxParallelism))
	}
	if o.BatchSize < 0 {
		errs = append(errs, fmt.Errorf("weir: Options.BatchSize = %d; use 1 or more", o.BatchSize))
	}
	if o.QueueBatches < 0 {
		errs = append(errs, fmt.Errorf("weir: Options.QueueBatches = %d; use 1 or more", o.QueueBatches))
	}
	if o.WatermarkInterval < 0 {
		errs = append(errs, fmt.Errorf("weir: Options.WatermarkInterval = %v; use a positive duration such as 200ms", o.WatermarkInterval))
	}
	if o.StateBudget < 0 {
		errs = append(errs, fmt.Errorf("weir: Options.StateBudget = %d; use a size in bytes, or 0 for none", o.StateBudget))
	}
	if err := o.Checkpoint.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
