// Package weir is an event-time stream processing engine: correct
// windowed results from late and out-of-order streams, as a Go library.
//
// # Building a job
//
// A job is built on an [Env] ([NewEnv] with [DefaultOptions], adjusted and
// checked by [Options.Validate]) and run by [Env.Execute]. Streams come from
// a [Source] ([FromSource], or [FromSlice] for a backlog in memory) and are
// typed: [Map], [Filter], [FlatMap] ([FlatMapTimed] moves results later
// in event time) and [TryMap] (whose errors become dead letters, see
// [Env.OnDeadLetter]) transform a [Stream]; [AssignTimestamps]
// gives it event time and watermarks; [KeyBy] partitions it into a [Keyed]
// stream; [Window] assigns windows; [Aggregate], [AggregateProcess],
// [Reduce] and [Process] compute each window's result. Operators are chained
// on one goroutine per subtask and records move between subtasks in batches.
// The source contract ([Source], [SourceReader], [SourceOutput] and the
// reader abilities) is package connector's, whose names these alias;
// readers open and read with a context that is done when the job is
// cancelled, fails or ends.
//
// # Event time and watermarks
//
// A [WatermarkStrategy] says how watermarks follow the records:
// [BoundedOutOfOrderness] (the newest timestamp minus the bound, minus 1 ms),
// [Monotonous], [Punctuated] or [IngestionTime], with idleness
// ([WatermarkStrategy.WithIdleness]), heartbeats and markers. An operator's
// watermark is the minimum over its inputs that are not idle; a backlog read
// quickly gets its watermarks by record count, a live source by the clock
// ([Options.WatermarkInterval]). The exact rules, case by case, are in
// docs/SEMANTICS.md of the repository.
//
// # The three layers of late-data defence
//
// Records within the out-of-orderness bound are on time. Records behind the
// watermark but within [WindowOptions.AllowedLateness] update their window,
// which fires again with the full result (a late firing; its state is kept
// until the window's end - 1 + the lateness). Records later than that go to
// the window's Late output when [WindowOptions.LateOutput] is set, or are
// dropped and counted; nothing is lost without a count ([Report] and
// [WindowCounters]: records in = accepted + side output + dropped + dead
// letters).
//
// # State and checkpoints
//
// Window state lives in a state backend (in memory by default; the pebble
// backend in weir/state/pebblestate keeps it on disk). With
// [Options.Checkpoint] set, the job takes aligned checkpoints into a
// [CheckpointStore] (checkpoint.Open, in weir/checkpoint, opens the on-disk
// one) and a restarted job resumes from the newest one with the same
// watermarks, timers and late decisions.
//
// # Observing a job
//
// [Env.Report], [Env.Watermarks], [Env.SourceInputs], [Env.SubtaskStats],
// [Env.State] and [Env.CheckpointStats] are safe to call while the job
// runs; the weir/metrics package exports them to Prometheus.
//
// # Errors
//
// The errors a caller may want to tell apart are the sentinels of errors.go,
// matched with errors.Is: [ErrAlreadyRun], [ErrNotStarted], [ErrGlobalLateness],
// [ErrNonMergeableTrigger] and [window.ErrNoTimestamp].
package weir
