package kafkaio

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// SinkOptions configures a transactional Kafka sink.
type SinkOptions struct {
	// Brokers are the seed brokers (host:port).
	Brokers []string
	// TransactionalID identifies the sink's producer across restarts: it
	// must be stable for the job and unique to it (weir uses
	// "weir-<job>-<sink>"). A restarted sink with the same id fences off
	// and aborts the transaction its crashed predecessor left open.
	TransactionalID string
	// MarkerTopic receives one marker per checkpoint, inside the
	// checkpoint's transaction: key TransactionalID, value the checkpoint
	// id. It must exist: Prepare creates it (one partition, compacted, so
	// that the newest marker per sink is kept and older ones go).
	MarkerTopic string
	// TransactionTimeout is how long the broker keeps a transaction open
	// before aborting it; default 60s. A checkpoint's transaction is open
	// from its pre-commit to its commit.
	TransactionTimeout time.Duration
	// ClientOptions are passed to franz-go (TLS, SASL, batching).
	ClientOptions []kgo.Opt
	// Logger receives transaction aborts; nil logs nothing.
	Logger *slog.Logger
}

// Validate refuses incomplete options, naming the field.
func (o *SinkOptions) Validate() error {
	switch {
	case len(o.Brokers) == 0:
		return errors.New("kafkaio: SinkOptions.Brokers is empty: give at least one host:port")
	case o.TransactionalID == "":
		return errors.New("kafkaio: SinkOptions.TransactionalID is empty: give the job a stable, unique id")
	case o.MarkerTopic == "":
		return errors.New("kafkaio: SinkOptions.MarkerTopic is empty: name the topic that records committed checkpoints")
	case o.TransactionTimeout < 0:
		return errors.New("kafkaio: SinkOptions.TransactionTimeout must be >= 0")
	}
	return nil
}

// Sink writes records to Kafka exactly once with weir's checkpoints: the
// output of each checkpoint's epoch goes into one transaction, together
// with a marker naming the checkpoint.
//
// The protocol, for checkpoint n:
//
//  1. pre-commit (the engine has every part of checkpoint n): the
//     epoch's records and marker n are produced in a transaction and
//     flushed (PreCommit);
//  2. the engine writes checkpoint n's manifest;
//  3. the transaction is committed (Commit).
//
// franz-go cannot resume a transaction after a crash, so checkpoint n
// counts as complete only once marker n is visible to read_committed
// readers: a restore takes the newest checkpoint whose id is at most
// LastCommitted's answer. A crash between 2 and 3 leaves checkpoint n on
// disk with its transaction open: the restarted sink (same
// TransactionalID) aborts it, the job restores checkpoint n-1 and
// produces epoch n again. A crash between 1 and 2 leaves no checkpoint n
// at all. Either way read_committed readers see every record once.
//
// As a connector.Sink of records it is connector.Transactional and a
// connector.CommitReporter: Committed is LastCommitted, and a job restores
// from the newest checkpoint no newer than it.
//
// A Sink is used from one goroutine at a time (the engine serializes its
// calls).
type Sink struct {
	o    SinkOptions
	cl   *kgo.Client
	open bool // a transaction is open
	// failed holds the first produce error of the open transaction; the
	// client's goroutines set it (produced), begin clears it.
	failed   atomic.Pointer[error]
	produced func(*kgo.Record, error)
	// sent are the records of the open transaction and sentBytes the
	// size of their keys and values, kept for redo up to maxRedoBytes
	// (sent is nil beyond it); redone: the open transaction is a redo.
	sent      []*kgo.Record
	sentBytes int
	redone    bool
}

// maxRedoBytes bounds the records a sink keeps to produce an open
// transaction again (redo): a transaction larger than this (a job without
// checkpoints, whose one transaction is its whole run) fails instead.
const maxRedoBytes = 64 << 20

// recordOverhead is what a kept record costs beyond its key, value and
// headers (a kgo.Record and its slot), counted toward maxRedoBytes.
const recordOverhead = 256

// OpenSink connects the sink's transactional producer. A transaction a
// crashed predecessor with the same TransactionalID left open is aborted
// when the first transaction begins (the broker fences the old producer).
func OpenSink(o SinkOptions) (*Sink, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.TransactionTimeout == 0 {
		o.TransactionTimeout = 60 * time.Second
	}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(o.Brokers...),
		kgo.TransactionalID(o.TransactionalID),
		kgo.TransactionTimeout(o.TransactionTimeout),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		// Records are produced in bursts at pre-commit: fill batches. An
		// A/B on kfake (linger 0, 5 ms, 20 ms; batches of 256 KiB, 1 MiB,
		// 4 MiB) found no difference beyond the noise (docs/PERFORMANCE.md);
		// these are the middle values.
		kgo.ProducerLinger(5 * time.Millisecond),
		kgo.ProducerBatchMaxBytes(1 << 20),
	}, o.ClientOptions...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafkaio: %w", err)
	}
	s := &Sink{o: o, cl: cl}
	s.produced = func(_ *kgo.Record, err error) {
		if err != nil {
			s.failed.CompareAndSwap(nil, &err)
		}
	}
	return s, nil
}

// flushed waits for what was produced and returns the first error of
// the open transaction: the flush's, else a record's.
func (s *Sink) flushed(ctx context.Context) error {
	return cmp.Or(s.cl.Flush(ctx), s.produceErr())
}

// forget drops the records kept for redo (the transaction ended).
func (s *Sink) forget() {
	clear(s.sent)
	s.sent = s.sent[:0]
}

// produceErr is the first produce error of the open transaction (nil:
// none).
func (s *Sink) produceErr() error {
	if e := s.failed.Load(); e != nil {
		return *e
	}
	return nil
}

// begin opens a transaction if none is open.
func (s *Sink) begin() error {
	if s.open {
		return nil
	}
	if err := s.cl.BeginTransaction(); err != nil {
		return fmt.Errorf("kafkaio: begin transaction: %w", err)
	}
	s.failed.Store(nil)
	s.open = true
	s.sent, s.sentBytes, s.redone = s.sent[:0], 0, false
	return nil
}

// produce sends r in the open transaction, keeping it for redo.
func (s *Sink) produce(ctx context.Context, r *kgo.Record) {
	n := len(r.Key) + len(r.Value) + recordOverhead
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	if s.sentBytes += n; s.sentBytes <= maxRedoBytes {
		s.sent = append(s.sent, r)
	} else {
		s.sent = nil // too large to keep: no redo
	}
	s.cl.Produce(ctx, r, s.produced)
}

// settle waits until everything produced in the open transaction is
// written. When the broker failed it with an error of the transaction's
// sequence or state (redoable), as a broker may after a partition or
// coordinator moved, and as kfake does under load, the transaction is
// aborted and produced again once, in a new transaction: none of the
// aborted one's records is ever visible, so the output is the same. Any
// other error, or a second one, aborts the transaction and is returned.
func (s *Sink) settle(ctx context.Context) error {
	err := s.flushed(ctx)
	if err != nil && !s.redone && s.sentBytes <= maxRedoBytes && redoable(err) {
		err = s.redo(ctx, err)
	}
	if err != nil && s.open {
		s.abort(ctx, err)
	}
	return err
}

// redoable reports whether err is one a new transaction may not meet.
func redoable(err error) bool {
	return errors.Is(err, kerr.OutOfOrderSequenceNumber) || errors.Is(err, kerr.InvalidTxnState)
}

// redo aborts the open transaction, which failed with cause, and produces
// its records again in a new one.
func (s *Sink) redo(ctx context.Context, cause error) error {
	old := s.sent
	s.sent = nil // so that begin does not reuse old's array
	if err := s.abort(ctx, cause); err != nil {
		return fmt.Errorf("%w (and the transaction could not be aborted to produce it again: %w)", cause, err)
	}
	if err := s.begin(); err != nil {
		return fmt.Errorf("%w (and no new transaction began to produce it again: %w)", cause, err)
	}
	s.redone = true
	for _, r := range old {
		s.produce(ctx, &kgo.Record{Topic: r.Topic, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp})
	}
	if err := s.flushed(ctx); err != nil {
		return fmt.Errorf("%w (and again in a new transaction: %w)", cause, err)
	}
	if s.o.Logger != nil {
		s.o.Logger.Warn("kafka transaction produced again in a new one", "transactional_id", s.o.TransactionalID, "records", len(old), "cause", cause)
	}
	return nil
}

// Write adds records to the current transaction (opening one). Each
// record's Topic must be set; the sink keeps the records until the
// transaction commits or aborts (franz-go owns them until they are
// produced, and the sink produces them again if the transaction must be
// redone), so the caller must not reuse them. Errors surface at Flush or
// PreCommit.
func (s *Sink) Write(ctx context.Context, recs []*kgo.Record) error {
	if err := s.begin(); err != nil {
		return err
	}
	for _, r := range recs {
		s.produce(ctx, r)
	}
	return nil
}

// Flush waits until every record written so far is sent (not yet
// visible: that takes Commit).
func (s *Sink) Flush(ctx context.Context) error {
	if err := s.settle(ctx); err != nil {
		return fmt.Errorf("kafkaio: flush: %w", err)
	}
	return nil
}

// PreCommit adds checkpoint id's marker to the transaction and waits until
// every record of it is written. On error the transaction is aborted and
// the checkpoint must fail. It returns no state: a restore needs none.
// Epoch 0 (no checkpoint records it: the end of the input) gets no marker.
func (s *Sink) PreCommit(ctx context.Context, id int64) ([]byte, error) {
	if err := s.begin(); err != nil {
		return nil, err
	}
	if id != 0 {
		marker := &kgo.Record{Topic: s.o.MarkerTopic, Key: []byte(s.o.TransactionalID), Value: strconv.AppendInt(nil, id, 10)}
		s.produce(ctx, marker)
	}
	if err := s.settle(ctx); err != nil {
		return nil, fmt.Errorf("kafkaio: flush of checkpoint %d: %w", id, err)
	}
	return nil, nil
}

// Recover prepares the sink for a job restored from checkpoint epoch: the
// transaction a crashed predecessor left open is aborted when the first
// transaction begins (the broker fences the old producer), so nothing
// after the newest committed marker is ever visible. Kafka cannot take
// back committed records, so Recover refuses a checkpoint older than the
// newest committed marker (the output after it is visible already), and
// one newer than it (its transaction was never committed, and franz-go
// cannot resume it): restore from the checkpoint Committed names.
func (s *Sink) Recover(ctx context.Context, epoch int64, _ []byte) error {
	id, ok, err := LastCommitted(ctx, s.o)
	if err != nil {
		return err
	}
	if ok && id != epoch || !ok && epoch != 0 {
		return fmt.Errorf("kafkaio: restoring checkpoint %d, but the newest checkpoint committed to %s by %s is %d (ok %v): restore from that one", epoch, s.o.MarkerTopic, s.o.TransactionalID, id, ok)
	}
	return nil
}

// Committed returns the newest checkpoint whose transaction committed
// (LastCommitted): a restore must be from it.
func (s *Sink) Committed(ctx context.Context) (int64, bool, error) {
	return LastCommitted(ctx, s.o)
}

// Commit commits the transaction PreCommit flushed. When it fails, the
// checkpoint's marker is not visible and a restore takes the checkpoint
// before; the job must stop (a later checkpoint cannot repair it).
func (s *Sink) Commit(ctx context.Context, _ int64) error {
	if !s.open {
		return nil
	}
	s.open = false
	s.forget()
	if err := s.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		if cause := s.produceErr(); cause != nil {
			return fmt.Errorf("kafkaio: commit transaction: %w (a record of it was not produced: %w)", err, cause)
		}
		return fmt.Errorf("kafkaio: commit transaction: %w", err)
	}
	return nil
}

// Finish commits what was produced since the last checkpoint, without a
// marker: the end of a bounded run, which no checkpoint covers.
func (s *Sink) Finish(ctx context.Context) error {
	if !s.open {
		return nil
	}
	if err := s.Flush(ctx); err != nil {
		return err
	}
	return s.Commit(ctx, 0)
}

// Abort drops the open transaction, if any (a checkpoint that failed).
func (s *Sink) Abort(ctx context.Context) error {
	if !s.open {
		return nil
	}
	return s.abort(ctx, nil)
}

func (s *Sink) abort(ctx context.Context, cause error) error {
	s.open = false
	s.forget()
	if s.o.Logger != nil {
		s.o.Logger.Warn("kafka transaction aborted", "transactional_id", s.o.TransactionalID, "cause", cause)
	}
	if err := s.cl.AbortBufferedRecords(ctx); err != nil {
		return fmt.Errorf("kafkaio: abort: %w", err)
	}
	if err := s.cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		return fmt.Errorf("kafkaio: abort transaction: %w", err)
	}
	return nil
}

// Close aborts an open transaction and closes the producer.
func (s *Sink) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := s.Abort(ctx)
	s.cl.Close()
	return err
}

// LastCommitted returns the checkpoint id of the newest marker the sink
// with o.TransactionalID committed, as read_committed readers see it (the
// last one written, whatever the ids of earlier runs' markers); ok is
// false when there is none. Call it before OpenSink: a transaction
// left open by a crash is invisible here (it is aborted once the sink
// begins its first transaction).
func LastCommitted(ctx context.Context, o SinkOptions) (id int64, ok bool, err error) {
	if err := o.Validate(); err != nil {
		return 0, false, err
	}
	adm, err := newAdmin(o.Brokers, o.ClientOptions)
	if err != nil {
		return 0, false, err
	}
	defer adm.Close()
	starts, err := adm.ListStartOffsets(ctx, o.MarkerTopic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return 0, false, fmt.Errorf("kafkaio: marker topic %q: %w", o.MarkerTopic, err)
	}
	// Read up to the last stable offset: records after it belong to open
	// transactions, which do not count.
	ends, err := adm.ListCommittedOffsets(ctx, o.MarkerTopic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return 0, false, fmt.Errorf("kafkaio: marker topic %q: %w", o.MarkerTopic, err)
	}
	from := map[int32]kgo.Offset{}
	remaining := map[int32]int64{}
	ends.Each(func(l kadm.ListedOffset) {
		if s, ok := starts.Lookup(l.Topic, l.Partition); ok && l.Offset > s.Offset {
			from[l.Partition] = kgo.NewOffset().At(s.Offset)
			remaining[l.Partition] = l.Offset
		}
	})
	if len(from) == 0 {
		return 0, false, nil
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(o.Brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{o.MarkerTopic: from}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(100 * time.Millisecond)}, o.ClientOptions...)...)
	if err != nil {
		return 0, false, fmt.Errorf("kafkaio: %w", err)
	}
	defer cl.Close()
	// The sink's newest marker counts, not its largest id: a fresh start
	// numbers checkpoints from 1 again, below the markers of the runs
	// before (which a compacted marker topic eventually drops). A sink's
	// markers are keyed by its transactional id, so they are in one
	// partition, in commit order; should they be in several (the topic's
	// partition count changed), the largest of their newest counts.
	last := map[int32]int64{}
	// Poll until every partition's visible records below its last stable
	// offset are read. Records of aborted transactions and control
	// records are never returned, so a partition whose last records are
	// such is done when a poll brings nothing more.
	for len(remaining) > 0 {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		f := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return 0, false, err
		}
		if err := fetchError(f); err != nil {
			return 0, false, err
		}
		if f.NumRecords() == 0 {
			break
		}
		f.EachPartition(func(p kgo.FetchTopicPartition) {
			for _, r := range p.Records {
				if string(r.Key) == o.TransactionalID {
					if n, err := strconv.ParseInt(string(r.Value), 10, 64); err == nil {
						last[p.Partition] = n
					}
				}
			}
			if end, in := remaining[p.Partition]; in && nextOffset(p) >= end {
				delete(remaining, p.Partition)
			}
		})
	}
	for _, n := range last {
		if !ok || n > id {
			id, ok = n, true
		}
	}
	return id, ok, nil
}

// nextOffset is the offset after the last record of a fetched partition,
// or its last stable offset when the fetch held only control records.
func nextOffset(p kgo.FetchTopicPartition) int64 {
	if n := len(p.Records); n > 0 {
		return p.Records[n-1].Offset + 1
	}
	return p.LastStableOffset
}
