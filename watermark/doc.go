// Package watermark generates watermarks at the sources and combines them
// where streams meet. It follows Apache Flink rule for rule (docs/SEMANTICS.md
// sections H and I); where weir chooses between Flink versions or adds
// something, the doc comment of the type says so.
//
// # Generation (semantics H)
//
// A [Generator] runs once per source channel (split or partition), never per
// key. It sees every record's timestamp in OnEvent and is asked for a
// watermark on a processing-time period in OnPeriodicEmit (200 ms by default,
// chosen by the engine). The built-in generators are:
//
//   - [BoundedOutOfOrderness]: maxTs - bound - 1, only on the periodic call (H1);
//   - [Monotonous]: bound 0, that is maxTs - 1;
//   - [Punctuated]: a watermark carried by marker records, emitted at once;
//   - [WithIdleness]: marks a channel idle after a processing-time timeout (H3);
//   - [WithHeartbeat]: weir's addition for sparse streams: advances the
//     watermark with processing time while no record arrives (R3).
//
// A generator writes to an [Output]. Between a generator and the rest of the
// engine sits a [SourceOutput], which forwards only strictly increasing
// watermarks and turns idle/active marks into status changes (H2, H4).
//
// # Combination (semantics I)
//
// A [Valve] combines the N physical input channels of one operator instance
// (Flink's StatusWatermarkValve, I1-I4): the minimum over aligned channels,
// never decreasing, with idle channels left out and reactivated channels
// re-aligned only once they catch up.
//
// A [Combined] combines the logical inputs of a two- or multi-input operator
// (Flink's IndexedCombinedWatermarkStatus, I5): the minimum over non-idle
// inputs, where a reactivated input does hold the result back. Both flush the
// maximum over their inputs when the last active one goes idle (I3, H6), so
// a backlog followed by silence fires its windows without new data.
//
// # Concurrency
//
// Nothing in this package is safe for concurrent use. Each generator, source
// output, valve and combiner belongs to the one goroutine that runs its
// subtask.
package watermark
