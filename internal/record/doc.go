// Package record decodes a job spec's input records and computes its
// declarative aggregates.
//
// A Decoder turns a line (JSON or CSV, from a file, Kafka, NATS or the
// ledger) into a Record: its event time, checked as the spec says (R2),
// its key as canonical JSON, and one value per aggregate, read in one pass
// over the record. It watches the first records for a field the spec
// reads but the input never has (FieldWarning). A Decoder is shared by the
// source channels; each channel calls it from its own goroutine only.
//
// An Aggregator is the spec's aggregates as a weir aggregate function:
// count, sum, min, max, avg (exact decimals, 38 digits, or float64),
// first, last, collect and count_distinct, with accumulators that
// checkpoints encode (Acc.AppendBinary) and that a backfill seeds from
// published results (Aggregator.Seed).
package record
