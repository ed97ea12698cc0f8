package natsio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// SinkOptions configures a Sink.
type SinkOptions struct {
	// URL is the NATS server URL (default nats.DefaultURL).
	URL string
	// ConnectOptions are passed to nats.Connect after the sink's own.
	ConnectOptions []nats.Option
	// Subject is the subject Publish uses when it is given none. When set,
	// OpenSink checks that a stream stores it.
	Subject string
	// Logger receives warnings (retried publishes). Default: discard.
	Logger *slog.Logger
	// AckTimeout is how long a published message waits for the stream's
	// acknowledgement before it counts as failed (and Flush publishes it
	// again). Default 5s.
	AckTimeout time.Duration
	// MaxPending is the most messages awaiting acknowledgement; Publish
	// blocks while there are that many, for up to AckTimeout, then fails.
	// Default 4096.
	MaxPending int
}

// Default sink option values.
const (
	DefaultAckTimeout = 5 * time.Second
	DefaultMaxPending = 4096
)

// flushAttempts is how many times Flush publishes failed messages again
// before it reports them (they stay queued for the next Flush).
const flushAttempts = 3

// SinkStats counts what the stream acknowledged.
type SinkStats struct {
	// Stored counts messages the stream acknowledged as new.
	Stored int64
	// Duplicates counts messages the stream acknowledged as duplicates of
	// a message with the same id within its duplicate window (not stored).
	Duplicates int64
	// Retried counts publishes that failed and were published again.
	Retried int64
}

// Sink publishes messages to JetStream asynchronously. Publish, Flush and
// Stats are safe for concurrent use; Flush calls run one at a time.
//
// Every message published is either acknowledged by the stream, or failed
// and kept to be published again by the next Flush, until Close: nothing
// is dropped silently. A message published again may follow messages
// published after it.
type Sink struct {
	o   SinkOptions
	nc  *nats.Conn
	js  jetstream.JetStream
	log *slog.Logger

	flushMu sync.Mutex // one Flush at a time

	mu sync.Mutex
	// epoch is the current flush epoch: Flush waits for the messages of
	// its epoch and the earlier ones, not for those published after it
	// began.
	epoch    uint64
	inflight map[*nats.Msg]uint64 // awaiting acknowledgement -> epoch
	pending  map[uint64]int       // epoch -> messages in inflight
	failed   []failure            // failed, to publish again
	stats    SinkStats
	closed   bool
	changed  chan struct{} // a message settled (capacity 1)
}

type failure struct {
	m   *nats.Msg
	err error
}

// OpenSink connects to the server. With o.Subject set, it fails unless a
// stream stores that subject.
func OpenSink(ctx context.Context, o SinkOptions) (*Sink, error) {
	if o.URL == "" {
		o.URL = nats.DefaultURL
	}
	if o.AckTimeout <= 0 {
		o.AckTimeout = DefaultAckTimeout
	}
	if o.MaxPending <= 0 {
		o.MaxPending = DefaultMaxPending
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Sink{
		o:        o,
		log:      o.Logger,
		inflight: map[*nats.Msg]uint64{},
		pending:  map[uint64]int{},
		changed:  make(chan struct{}, 1),
	}
	opts := append([]nats.Option{nats.Name("weir natsio sink")}, o.ConnectOptions...)
	nc, err := nats.Connect(o.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("natsio: connect to %s: %w", o.URL, err)
	}
	s.nc = nc
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(o.MaxPending),
		jetstream.WithPublishAsyncTimeout(o.AckTimeout),
		jetstream.WithPublishAsyncAckHandler(s.onAck),
		jetstream.WithPublishAsyncErrHandler(s.onErr))
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("natsio: %s: %w", o.URL, err)
	}
	s.js = js
	if o.Subject != "" {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, apiTimeout)
			defer cancel()
		}
		if _, err := js.StreamNameBySubject(ctx, o.Subject); err != nil {
			nc.Close()
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				return nil, fmt.Errorf("natsio: no stream at %s stores subject %q", o.URL, o.Subject)
			}
			return nil, fmt.Errorf("natsio: find the stream of subject %q at %s: %w", o.Subject, o.URL, err)
		}
	}
	return s, nil
}

// Msg is a message for Write: Publish's arguments.
type Msg struct {
	// ID is the message's JetStream id (see Publish); Subject defaults to
	// SinkOptions.Subject.
	ID, Subject string
	Data        []byte
	Headers     map[string]string
}

// Write publishes the messages in order (Publish); Flush awaits their
// acknowledgements. It makes the Sink a connector.Sink of messages, and
// an idempotent one: every message needs an ID that a replay reproduces
// (the stream drops a repeated id within its duplicate window, 2 minutes
// by default, so a restore that replays more than that window stores
// some messages twice).
func (s *Sink) Write(_ context.Context, msgs []Msg) error {
	for i := range msgs {
		m := &msgs[i]
		if m.ID == "" {
			return fmt.Errorf("natsio: a message without an ID for subject %q: the stream deduplicates by id, so give each message one that a replay reproduces", m.Subject)
		}
		if err := s.Publish(m.ID, m.Subject, m.Data, m.Headers); err != nil {
			return err
		}
	}
	return nil
}

// Idempotent marks the sink as connector.Idempotent: the stream stores
// each message id once within its duplicate window, so messages with ids
// a replay reproduces are stored once.
func (s *Sink) Idempotent() {}

// Publish publishes data to subject (o.Subject when empty) with headers,
// asynchronously: the stream's acknowledgement is awaited by Flush. id,
// when not empty, is the message's JetStream id (the Nats-Msg-Id header,
// which it overrides in headers): the stream drops a message whose id it
// has seen within its duplicate window. Give each logical message an id
// that a replay reproduces, so that re-publishing after a restore stores
// nothing twice.
//
// Publish copies data and headers. It blocks while MaxPending messages
// await acknowledgement, and fails if that lasts AckTimeout, or if the
// connection is closed. A message that cannot be written because the
// connection is being lost is kept for Flush, like one that is not
// acknowledged.
func (s *Sink) Publish(id, subject string, data []byte, headers map[string]string) error {
	if subject == "" {
		subject = s.o.Subject
	}
	if subject == "" {
		return errors.New("natsio: Publish without a subject, and SinkOptions.Subject is empty")
	}
	m := nats.NewMsg(subject)
	m.Data = append([]byte(nil), data...)
	for k, v := range headers {
		m.Header.Set(k, v)
	}
	if id != "" {
		m.Header.Set(jetstream.MsgIDHeader, id)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errors.New("natsio: Publish after Close")
	}
	s.track(m, s.epoch)
	s.mu.Unlock()
	err := s.publish(m)
	switch {
	case err == nil:
	case s.nc.IsClosed(), errors.Is(err, jetstream.ErrTooManyStalledMsgs):
		return fmt.Errorf("natsio: publish to %q: %w", subject, err)
	default:
		// A write error on a connection that reconnects: the next Flush
		// publishes the message again.
		s.log.Debug("natsio: publish failed; Flush retries it", "subject", subject, "err", err)
		s.mu.Lock()
		s.failed = append(s.failed, failure{m, err})
		s.mu.Unlock()
	}
	return nil
}

// track registers m as awaiting acknowledgement in epoch e. s.mu is held.
// It must precede the publish: the acknowledgement may come before
// PublishMsgAsync returns.
func (s *Sink) track(m *nats.Msg, e uint64) {
	s.inflight[m] = e
	s.pending[e]++
}

// publish sends m, which is tracked; on an immediate error it untracks it.
func (s *Sink) publish(m *nats.Msg) error {
	_, err := s.js.PublishMsgAsync(m, jetstream.WithStallWait(s.o.AckTimeout))
	if err != nil {
		s.mu.Lock()
		if e, ok := s.inflight[m]; ok {
			delete(s.inflight, m)
			if s.pending[e]--; s.pending[e] == 0 {
				delete(s.pending, e)
			}
		}
		s.mu.Unlock()
	}
	return err
}

func (s *Sink) onAck(_ jetstream.JetStream, m *nats.Msg, ack *jetstream.PubAck) {
	s.settle(m, nil, ack.Duplicate)
}

func (s *Sink) onErr(_ jetstream.JetStream, m *nats.Msg, err error) {
	if err == nil {
		err = errors.New("publish failed")
	}
	s.settle(m, err, false)
}

// settle records the outcome of a tracked message: acknowledged (err nil)
// or failed (kept for Flush). A message not tracked (its immediate publish
// error was already handled) is ignored.
func (s *Sink) settle(m *nats.Msg, err error, dup bool) {
	s.mu.Lock()
	e, ok := s.inflight[m]
	if ok {
		delete(s.inflight, m)
		if s.pending[e]--; s.pending[e] == 0 {
			delete(s.pending, e)
		}
		switch {
		case err != nil:
			s.failed = append(s.failed, failure{m, err})
		case dup:
			s.stats.Duplicates++
		default:
			s.stats.Stored++
		}
	}
	s.mu.Unlock()
	if ok {
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}
}

// Flush waits until every message published before it began is
// acknowledged by the stream. Failed messages (no acknowledgement within
// AckTimeout, a lost connection, an error from the stream) are published
// again, with the same id, up to 3 times; messages still failing are
// reported in the error and kept for the next Flush. If ctx ends first,
// Flush returns its error and the messages stay pending.
//
// Messages published while Flush runs are not waited for (the next Flush
// does), so a steady stream of publishes cannot keep Flush waiting.
func (s *Sink) Flush(ctx context.Context) error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errors.New("natsio: Flush after Close")
	}
	e := s.epoch
	s.epoch++
	s.mu.Unlock()
	for attempt := 0; ; attempt++ {
		if err := s.wait(ctx, e); err != nil {
			return err
		}
		s.mu.Lock()
		fails := s.failed
		s.failed = nil
		if len(fails) == 0 {
			s.mu.Unlock()
			return nil
		}
		if attempt == flushAttempts {
			s.failed = append(fails, s.failed...)
			s.mu.Unlock()
			return fmt.Errorf("natsio: %d messages not stored after %d attempts; first: subject %q: %w",
				len(fails), flushAttempts+1, fails[0].m.Subject, fails[0].err)
		}
		s.stats.Retried += int64(len(fails))
		s.mu.Unlock()
		s.log.Warn("natsio: publishing failed messages again", "messages", len(fails), "attempt", attempt+1, "err", fails[0].err)
		for i, f := range fails {
			s.mu.Lock()
			s.track(f.m, e)
			s.mu.Unlock()
			if err := s.publish(f.m); err != nil {
				// Keep this and the rest for the next attempt.
				s.mu.Lock()
				s.failed = append(s.failed, failure{f.m, err})
				s.failed = append(s.failed, fails[i+1:]...)
				s.mu.Unlock()
				break
			}
		}
	}
}

// wait waits until no message of epoch e or earlier awaits
// acknowledgement.
func (s *Sink) wait(ctx context.Context, e uint64) error {
	for {
		s.mu.Lock()
		busy := false
		for k := range s.pending {
			if k <= e {
				busy = true
				break
			}
		}
		s.mu.Unlock()
		if !busy {
			return nil
		}
		select {
		case <-s.changed:
		case <-ctx.Done():
			return fmt.Errorf("natsio: flush: %w", context.Cause(ctx))
		}
	}
}

// Stats returns the sink's counters.
func (s *Sink) Stats() SinkStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Close closes the connection without waiting: call Flush first. It
// reports the messages that were neither acknowledged nor flushed, which
// are then lost to this sink (a restore from the last checkpoint publishes
// them again).
func (s *Sink) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	n := len(s.inflight) + len(s.failed)
	s.mu.Unlock()
	s.nc.Close()
	if n > 0 {
		return fmt.Errorf("natsio: sink closed with %d messages not acknowledged; call Flush before Close", n)
	}
	return nil
}
