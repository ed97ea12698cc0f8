// Package connector is weir's connector SPI: the contracts between the
// engine and the connectors that read its inputs and write its outputs.
// Connectors implement these interfaces; the engine (the root package)
// drives them. Nothing here does I/O.
//
// # Sources
//
// A [Source] opens one [Reader] per source channel. The engine calls a
// reader's Read on the channel's goroutine with a context that is
// cancelled when the job stops, and Close once. Optional abilities are
// extra interfaces a reader may implement: [CheckpointedReader] (positions
// for checkpoints), [CheckpointListener], [InputReporter],
// [BacklogReporter] and [WaitReporter].
//
// # Sinks
//
// A [Sink] receives batches: Write(ctx, batch), Flush(ctx), Close(). Its
// abilities are extra interfaces: a [Transactional] sink makes an epoch of
// output durable at a checkpoint's pre-commit and visible when the
// checkpoint completes, and recovers to a checkpoint's state after a
// restore; an [Idempotent] sink stores each record id once however often
// it is written. The engine, not the sink, buffers output per subtask and
// checkpoint epoch (weir.ToSink), so every sink gets the same
// exactly-once protocol. A sink error fails the job with its cause.
package connector
