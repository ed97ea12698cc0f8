// Package backfill works on what a run of a job spec leaves behind.
//
// Backfill folds the too-late records the ledger kept (a ledger
// directory, a Postgres table or a Kafka topic) into the windows the job
// already published: it seeds each window's accumulator from its published
// row (SQL results keep it in a weir_acc column) or from the archive of
// closed windows (jsonl and Kafka results), adds the late records, and
// writes the revised result as a new pane. Each ledger entry is applied
// once, recorded beside the result in the same transaction, so a backfill
// can be run again, or stopped and resumed, without counting anything
// twice. It reads only the entries that the job's last checkpoint
// committed, so it may run beside the live job.
//
// Complete computes the answer a run with unbounded allowed lateness
// would give for the same input, which weir backfill --verify compares the
// backfilled results with; ScanLedger reads a job's ledger, whatever
// stores it.
package backfill
