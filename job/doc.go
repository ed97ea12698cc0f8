// Package job runs a compiled job spec (spec.Plan): it opens the source
// and the sinks, builds the weir job (decoding, watermarks, the window
// and its aggregates), runs it with checkpoints, restores and restarts,
// and reports what it did in a Summary whose counts are conserved. Package
// backfill works on what a run leaves behind.
//
// Open and Job.Run are what `weir run` calls; RunRestarting adds the
// restart policy. Every output goes through the sinks in the plan, in
// checkpoint epochs, so that a restored run writes exactly the output of
// a run that never failed.
package job
