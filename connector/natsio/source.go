package natsio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/etime"
)

// Message is one JetStream message. A Message owns its Data and Headers:
// they are shared with nothing else and may be kept.
type Message struct {
	// Subject is the subject the message was published to.
	Subject string
	// Data is the payload.
	Data []byte
	// Headers are the message headers; nil when there are none.
	Headers nats.Header
	// Sequence is the message's sequence in its stream.
	Sequence uint64
	// Published is the time the stream stored the message (milliseconds).
	Published etime.Time
}

// Start is where a source starts reading when it does not resume from a
// checkpoint. The zero value is the earliest message of the stream.
type Start struct {
	seq uint64
	at  time.Time
}

// StartAtSequence starts at stream sequence seq (or at the first message
// after it that the stream still holds and the filter accepts). 0 is the
// earliest message.
func StartAtSequence(seq uint64) Start { return Start{seq: seq} }

// StartAtTime starts at the first message stored at or after t.
func StartAtTime(t time.Time) Start { return Start{at: t} }

// String describes the start position.
func (s Start) String() string {
	switch {
	case !s.at.IsZero():
		return "time " + s.at.UTC().Format(time.RFC3339Nano)
	case s.seq > 0:
		return "sequence " + strconv.FormatUint(s.seq, 10)
	}
	return "earliest"
}

// SourceOptions configures a source.
type SourceOptions struct {
	// URL is the NATS server URL (default nats.DefaultURL,
	// nats://127.0.0.1:4222); several URLs are separated by commas.
	URL string
	// ConnectOptions are passed to nats.Connect after the source's own
	// (credentials, TLS, reconnect policy). By default the client
	// reconnects as nats.go does (60 attempts, 2 s apart); when it gives up,
	// Read fails. A nats.ClosedHandler given here replaces the one that
	// makes Read fail then.
	ConnectOptions []nats.Option
	// Stream is the JetStream stream to read. Required.
	Stream string
	// Subjects, when not empty, keeps only the messages whose subject
	// matches one of these subjects (wildcards allowed).
	Subjects []string
	// Start is where to start without a checkpoint (default: the earliest
	// message).
	Start Start
	// StopAtEnd makes the source bounded: channel 0 returns connector.Done once
	// it has emitted every message (that the filter accepts) up to the
	// stream's last sequence at Open; later messages are not emitted.
	// Replays and tests use it. Without it a source never ends. The idle
	// channels (all but 0) end at once, and a job takes no checkpoint
	// after a source channel ended: use one channel for a bounded job with
	// checkpoints.
	StopAtEnd bool
	// Timestamp, when set, gives a record's timestamp instead of its
	// publish time. A message for which it returns false is still emitted,
	// with etime.MinTime ("no timestamp"), so that timestamp assignment and
	// dead letters downstream deal with it. It is called on the reading
	// channel's goroutine.
	Timestamp func(Message) (etime.Time, bool)
	// Logger receives warnings (consumer resets, messages removed by
	// retention before they were read). Default: discard.
	Logger *slog.Logger
	// FetchBatch is the most messages one Read emits, and the number of
	// messages the client buffers ahead (default 256).
	FetchBatch int
	// FetchWait is the longest a Read waits for a first message before it
	// returns connector.Waiting (default 100ms).
	FetchWait time.Duration
	// Reach, if not nil, is told whether the reader reaches the server:
	// a disconnection is its failure until the client reconnects (the
	// runner warns of an outage, and its health check fails).
	Reach *connector.Reach
	// ResetAttempts is how many times in a row the ordered consumer tries
	// to recreate itself after losing its server-side consumer (a
	// reconnect, a missed heartbeat), waiting 1 s, 2 s, 4 s, 8 s, then
	// 10 s between attempts, before Read fails (default 6, about 25 s).
	ResetAttempts int
}

// Default option values.
const (
	DefaultFetchBatch    = 256
	DefaultFetchWait     = 100 * time.Millisecond
	DefaultResetAttempts = 6
)

// apiTimeout bounds each JetStream API request the source and the sink
// make themselves (stream lookups, consumer creation and deletion).
const apiTimeout = 10 * time.Second

// positionPrefix versions the encoding of positions.
const positionPrefix = "natsio1:"

// NewSource returns a source reading o.Stream. Options are checked, and the
// server contacted, when a channel is opened.
func NewSource(o SourceOptions) connector.Source[Message] {
	return newSource(o, func(m Message) Message { return m })
}

// NewLineSource is NewSource emitting each message as a connector.Line:
// its data as Text, its stream sequence as No, its publish time as Time.
func NewLineSource(o SourceOptions) connector.Source[connector.Line] {
	return newSource(o, func(m Message) connector.Line {
		return connector.Line{Kind: connector.Data, No: int64(m.Sequence), Time: m.Published, Text: m.Data, Unchecked: true}
	})
}

func newSource[T any](o SourceOptions, conv func(Message) T) connector.Source[T] {
	if o.URL == "" {
		o.URL = nats.DefaultURL
	}
	if o.FetchBatch <= 0 {
		o.FetchBatch = DefaultFetchBatch
	}
	if o.FetchWait <= 0 {
		o.FetchWait = DefaultFetchWait
	}
	if o.ResetAttempts <= 0 {
		o.ResetAttempts = DefaultResetAttempts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Subjects = append([]string(nil), o.Subjects...)
	o.ConnectOptions = append([]nats.Option(nil), o.ConnectOptions...)
	return &source[T]{o: o, conv: conv}
}

// source is the connector.Source of what conv makes of each message; its
// options are read-only after NewSource.
type source[T any] struct {
	o    SourceOptions
	conv func(Message) T
}

// Open returns the reader of channel ch of n. Channel 0 connects to the
// server and looks the stream up (an error here names what is missing);
// the other channels are idle readers and connect to nothing. Open may be
// called from several goroutines at once. It gives up when ctx is done:
// the dial and the handshake of the connection (unless ConnectOptions
// bring a dialer of their own), and the stream lookup, which apiTimeout
// bounds too.
func (s *source[T]) Open(ctx context.Context, ch, n int) (connector.Reader[T], error) {
	o := &s.o
	if o.Stream == "" {
		return nil, errors.New("natsio: SourceOptions.Stream is empty; name the JetStream stream to read")
	}
	if ch < 0 || ch >= n {
		return nil, fmt.Errorf("natsio: channel %d out of range 0..%d", ch, n-1)
	}
	if ch > 0 {
		return &idleReader[T]{stream: o.Stream, stopAtEnd: o.StopAtEnd}, nil
	}
	r := &reader[T]{
		conv:  s.conv,
		o:     o,
		log:   o.Logger.With("stream", o.Stream),
		msgs:  make(chan jetstream.Msg, o.FetchBatch),
		stop:  make(chan struct{}),
		fatal: make(chan struct{}),
		timer: time.NewTimer(time.Hour),
	}
	r.timer.Stop()
	dialer := &ctxDialer{ctx: ctx}
	opts := append([]nats.Option{
		nats.Name("weir natsio source " + o.Stream),
		nats.ClosedHandler(r.onClosed),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			select {
			case <-r.stop:
				return // the reader's own Close
			default:
			}
			if nc.IsClosed() {
				return
			}
			if err == nil {
				err = errors.New("disconnected")
			}
			o.Reach.Fail(ch, time.Now(), fmt.Errorf("natsio: %s: %w", o.URL, err))
		}),
		nats.ReconnectHandler(func(*nats.Conn) { o.Reach.OK(ch) }),
	}, o.ConnectOptions...)
	opts = append(opts, dialer.option())
	nc, err := nats.Connect(o.URL, opts...)
	dialer.release()
	if err == nil && ctx.Err() != nil {
		// The handshake was done, but the connection may be the one the
		// cancellation closed.
		nc.Close()
		err = ctx.Err()
	}
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("natsio: connect to %s: %w", o.URL, err)
	}
	r.nc = nc
	js, err := jetstream.New(nc)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("natsio: %s: %w", o.URL, err)
	}
	r.js = js
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	st, err := js.Stream(ctx, o.Stream)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("natsio: stream %q at %s: %w", o.Stream, o.URL, err)
	}
	info := st.CachedInfo()
	if info.Config.Retention == jetstream.WorkQueuePolicy {
		r.Close()
		return nil, fmt.Errorf("natsio: stream %q has work-queue retention, which ordered consumers cannot read; use limits retention", o.Stream)
	}
	if info.Config.Retention == jetstream.InterestPolicy {
		r.log.Warn("natsio: the stream has interest retention: messages delivered to every consumer are removed, so a checkpoint may not be replayable; use limits retention")
	}
	r.end = info.State.LastSeq
	r.created = info.Created.UnixNano()
	return r, nil
}

// reader reads the stream on channel 0. Read, Close, SnapshotPosition and
// RestorePosition are called from the channel's goroutine; the consumer's
// callbacks run on goroutines of the NATS client and reach the reader only
// through msgs and fail.
type reader[T any] struct {
	conv func(Message) T // what a message is emitted as
	o    *SourceOptions
	log  *slog.Logger
	nc   *nats.Conn
	js   jetstream.JetStream

	cons jetstream.Consumer
	cc   jetstream.ConsumeContext

	msgs  chan jetstream.Msg // messages handed over by the consumer
	stop  chan struct{}      // closed by Close: the handler gives up
	timer *time.Timer        // FetchWait; owned by Read

	// The position: the stream sequence of the last emitted message, when
	// has is set (from a message or RestorePosition).
	last uint64
	has  bool

	end uint64 // the stream's last sequence at Open (StopAtEnd)
	// created is the stream's creation time (Unix nanoseconds), which
	// positions keep: a stream deleted and made again under its name is
	// another input.
	created int64
	started bool // the consumer was created (RestorePosition no longer allowed)
	done    bool // StopAtEnd reached
	checked bool // the first message after the start was checked for a gap
	closed  bool
	// pending is the last message's count of stream messages after it not
	// yet delivered to the consumer (Backlog).
	pending uint64

	failOnce sync.Once
	fatal    chan struct{} // closed when failure is set
	failure  error
}

// handle is the consumer's message handler. It hands the message to Read,
// waiting while Read has not taken the previous ones (backpressure: the
// client then stops asking the server for more), until Close.
func (r *reader[T]) handle(m jetstream.Msg) {
	select {
	case r.msgs <- m:
	case <-r.stop:
	}
}

// onConsumeError is told about the consumer's errors. The ordered consumer
// recovers from most by recreating itself; those are logged. A stream that
// no longer exists, a consumer that could not be recreated and a closed
// connection fail the reader.
func (r *reader[T]) onConsumeError(_ jetstream.ConsumeContext, err error) {
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		r.fail(fmt.Errorf("natsio: stream %q no longer exists", r.o.Stream))
	case errors.Is(err, jetstream.ErrConnectionClosed), errors.Is(err, nats.ErrConnectionClosed):
		r.fail(fmt.Errorf("natsio: stream %q: connection to %s closed", r.o.Stream, r.o.URL))
	case errors.As(err, &apiErr), errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		// Only the consumer's re-creation, after its last attempt, reports
		// API errors and timeouts: the consumer is gone for good.
		r.fail(fmt.Errorf("natsio: stream %q: cannot recreate the ordered consumer: %w", r.o.Stream, err))
	default:
		r.log.Warn("natsio: consumer error; the ordered consumer recovers", "err", err)
	}
}

// onClosed is the connection's closed handler: a connection closed by
// anything but Close (the client gave up reconnecting) fails the reader.
func (r *reader[T]) onClosed(*nats.Conn) {
	select {
	case <-r.stop:
	default:
		r.fail(fmt.Errorf("natsio: stream %q: connection to %s closed (reconnect attempts exhausted)", r.o.Stream, r.o.URL))
	}
}

func (r *reader[T]) fail(err error) {
	r.failOnce.Do(func() {
		r.failure = err
		close(r.fatal)
	})
}

// start creates the ordered consumer at the restored position or at
// Options.Start, and starts consuming; the creation gives up when ctx is
// done. It reports whether there is nothing to read (StopAtEnd only).
func (r *reader[T]) start(ctx context.Context) (empty bool, err error) {
	r.started = true
	o := r.o
	if o.StopAtEnd && (r.end == 0 || r.has && r.last >= r.end) {
		return true, nil
	}
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects:   o.Subjects,
		DeliverPolicy:    jetstream.DeliverAllPolicy,
		MaxResetAttempts: o.ResetAttempts,
	}
	switch {
	case r.has:
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = r.last + 1
	case !o.Start.at.IsZero():
		t := o.Start.at
		cfg.DeliverPolicy = jetstream.DeliverByStartTimePolicy
		cfg.OptStartTime = &t
	case o.Start.seq > 0:
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = o.Start.seq
	}
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	cons, err := r.js.OrderedConsumer(ctx, o.Stream, cfg)
	if err != nil {
		return false, fmt.Errorf("natsio: stream %q: create ordered consumer: %w", o.Stream, err)
	}
	r.cons = cons
	if info := cons.CachedInfo(); o.StopAtEnd && info != nil && info.NumPending == 0 {
		return true, nil
	}
	cc, err := cons.Consume(r.handle,
		jetstream.PullMaxMessages(o.FetchBatch),
		jetstream.ConsumeErrHandler(r.onConsumeError))
	if err != nil {
		return false, fmt.Errorf("natsio: stream %q: consume: %w", o.Stream, err)
	}
	r.cc = cc
	return false, nil
}

// Read emits up to FetchBatch messages in stream order. It waits at most
// FetchWait for the first one, and not once ctx is done, and returns
// connector.Waiting if none came. With StopAtEnd it returns
// connector.Done once caught up with the stream's last sequence at Open.
// A failure of the consumer or of the connection that the client cannot
// recover from is returned as an error.
func (r *reader[T]) Read(ctx context.Context, out connector.Output[T]) (connector.ReadStatus, error) {
	if r.closed {
		return 0, errors.New("natsio: Read after Close")
	}
	if r.done {
		return connector.Done, nil
	}
	select {
	case <-r.fatal:
		return 0, r.failure
	default:
	}
	if !r.started {
		empty, err := r.start(ctx)
		if err != nil {
			return 0, err
		}
		if empty {
			r.done = true
			return connector.Done, nil
		}
	}
	var m jetstream.Msg
	select {
	case m = <-r.msgs:
	default:
		r.timer.Reset(r.o.FetchWait)
		select {
		case m = <-r.msgs:
			r.timer.Stop()
		case <-r.timer.C:
			return connector.Waiting, nil
		case <-ctx.Done():
			r.timer.Stop()
			return connector.Waiting, nil
		case <-r.fatal:
			r.timer.Stop()
			return 0, r.failure
		}
	}
	n := 0
	for {
		emitted, err := r.emit(out, m)
		if err != nil {
			return 0, err
		}
		if emitted {
			n++
		}
		if r.done || n == r.o.FetchBatch {
			break
		}
		select {
		case m = <-r.msgs:
			continue
		default:
		}
		break
	}
	if n == 0 {
		if r.done {
			return connector.Done, nil
		}
		return connector.Waiting, nil
	}
	return connector.Emitted, nil
}

// Backlog implements connector.BacklogReporter: the stream holds messages after
// the last one emitted, delivered to the reader or not yet (W10). A
// caught-up consumer of a live stream is not reading a backlog, although
// its reads emit.
func (r *reader[T]) Backlog() bool { return r.pending > 0 || len(r.msgs) > 0 }

// emit emits m unless it is a duplicate or, with StopAtEnd, past the end.
func (r *reader[T]) emit(out connector.Output[T], m jetstream.Msg) (bool, error) {
	md, err := m.Metadata()
	if err != nil {
		return false, fmt.Errorf("natsio: stream %q: message on %q without JetStream metadata: %w", r.o.Stream, m.Subject(), err)
	}
	seq := md.Sequence.Stream
	if r.has && seq <= r.last {
		// The ordered consumer never redelivers; should a reset ever hand
		// over a message again, it is not emitted twice.
		r.log.Warn("natsio: skipped a message delivered twice", "seq", seq, "last", r.last)
		return false, nil
	}
	if r.o.StopAtEnd && seq > r.end {
		r.done = true
		return false, nil
	}
	if !r.checked {
		r.checked = true
		if r.has && len(r.o.Subjects) == 0 && seq != r.last+1 {
			r.log.Warn("natsio: messages after the restored position were removed by the stream's retention",
				"from", r.last+1, "to", seq-1)
			connector.ReportLost(out, int64(seq-1-r.last), fmt.Sprintf("nats stream %q, sequences %d to %d: removed by the stream's retention before they were read", r.o.Stream, r.last+1, seq-1))
		}
	}
	msg := Message{
		Subject:   m.Subject(),
		Data:      m.Data(),
		Headers:   m.Headers(),
		Sequence:  seq,
		Published: etime.FromTime(md.Timestamp),
	}
	if len(msg.Headers) == 0 {
		msg.Headers = nil
	}
	ts := msg.Published
	if r.o.Timestamp != nil {
		var ok bool
		if ts, ok = r.o.Timestamp(msg); !ok {
			ts = etime.MinTime
		}
	}
	out.Emit(ts, r.conv(msg))
	r.last, r.has = seq, true
	r.pending = md.NumPending
	if r.o.StopAtEnd && (seq >= r.end || md.NumPending == 0) {
		r.done = true
	}
	return true, nil
}

// Close stops the consumer, deletes it on the server and closes the
// connection. The client's goroutines end shortly after.
func (r *reader[T]) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	close(r.stop)
	if r.cc != nil {
		r.cc.Stop()
	}
	if r.cons != nil && r.nc != nil && r.nc.IsConnected() {
		if info := r.cons.CachedInfo(); info != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if derr := r.js.DeleteConsumer(ctx, r.o.Stream, info.Name); derr != nil && !errors.Is(derr, jetstream.ErrConsumerNotFound) {
				// The server removes it after its inactivity threshold.
				r.log.Debug("natsio: delete ordered consumer", "consumer", info.Name, "err", derr)
			}
			cancel()
		}
	}
	if r.nc != nil {
		r.nc.Close()
	}
	r.timer.Stop()
	return nil
}

// SnapshotPosition implements connector.CheckpointedReader: the stream sequence
// of the last emitted message.
func (r *reader[T]) SnapshotPosition() ([]byte, error) {
	b := appendPosition(nil, r.o.Stream, r.last, r.has)
	if r.created != 0 {
		b = strconv.AppendInt(append(b, '@'), r.created, 10)
	}
	return b, nil
}

// RestorePosition implements connector.CheckpointedReader: the next Read
// resumes after the position's sequence. It must be called before the
// first Read. A position of another stream is refused.
func (r *reader[T]) RestorePosition(pos []byte) error {
	if r.started {
		return errors.New("natsio: RestorePosition after the first Read")
	}
	pos, created := cutCreated(pos)
	seq, has, err := parsePosition(pos, r.o.Stream)
	if err != nil {
		return err
	}
	if created != 0 && r.created != 0 && created != r.created {
		return fmt.Errorf("%w: stream %q was made at %s, the checkpoint read one made at %s (deleted and made again under its name): its sequences are another stream's; start over with --fresh",
			ErrStreamChanged, r.o.Stream, time.Unix(0, r.created).UTC().Format(time.RFC3339Nano), time.Unix(0, created).UTC().Format(time.RFC3339Nano))
	}
	r.last, r.has = seq, has
	return nil
}

// ErrStreamChanged is returned by a restore onto a stream that is not
// the one the checkpoint read: deleted and made again under its name.
var ErrStreamChanged = connector.InputChanged("natsio: the stream changed since the checkpoint")

// cutCreated splits a position into the stream and sequence part and the
// stream's creation time after its @ (0: none, a position of an older
// weir).
func cutCreated(pos []byte) ([]byte, int64) {
	i := bytes.LastIndexByte(pos, '@')
	if i < 0 || bytes.IndexByte(pos[i:], ':') >= 0 {
		return pos, 0
	}
	n, err := strconv.ParseInt(string(pos[i+1:]), 10, 64)
	if err != nil {
		return pos, 0
	}
	return pos[:i], n
}

func appendPosition(dst []byte, stream string, seq uint64, has bool) []byte {
	dst = append(dst, positionPrefix...)
	dst = append(dst, stream...)
	dst = append(dst, ':')
	if !has {
		return append(dst, '-')
	}
	return strconv.AppendUint(dst, seq, 10)
}

// parsePosition decodes a position of stream; has is false for a position
// taken before any message.
func parsePosition(pos []byte, stream string) (seq uint64, has bool, err error) {
	rest, ok := strings.CutPrefix(string(pos), positionPrefix)
	i := strings.LastIndexByte(rest, ':')
	if !ok || i < 0 {
		return 0, false, fmt.Errorf("natsio: stream %q cannot resume at %q: not a natsio position", stream, pos)
	}
	if got := rest[:i]; got != stream {
		return 0, false, fmt.Errorf("natsio: stream %q cannot resume at a position of stream %q (%q)", stream, got, pos)
	}
	if rest[i+1:] == "-" {
		return 0, false, nil
	}
	seq, err = strconv.ParseUint(rest[i+1:], 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("natsio: stream %q cannot resume at %q: bad sequence", stream, pos)
	}
	return seq, true, nil
}

// ctxDialer dials the connection of Open so that the dial, and the
// handshake on the connection it made, end when Open's context is done
// (the connection is closed then). After release (Open returned) it dials
// as nats.go does, for reconnects: a reader keeps no context of Open's.
type ctxDialer struct {
	d     net.Dialer
	mu    sync.Mutex
	ctx   context.Context // nil after release
	stops []func() bool   // the context.AfterFunc of each dialed connection
}

// option is the nats.Option that makes d the connection's dialer, unless
// the options bring a dialer of their own. It goes after them. It dials
// as the options say (their net.Dialer, or their Timeout, and multipath
// TCP), but with the whole Timeout for each address a host name resolves
// to, where nats.go's own dialer shares it out among them.
func (d *ctxDialer) option() nats.Option {
	return func(o *nats.Options) error {
		if o.CustomDialer != nil {
			return nil
		}
		if o.Dialer != nil {
			d.d = *o.Dialer
		} else {
			d.d = net.Dialer{Timeout: o.Timeout}
			if o.Timeout == 0 {
				d.d.Timeout = nats.DefaultTimeout // as nats.go does
			}
		}
		if o.AllowMultipathTCP != nil {
			d.d.SetMultipathTCP(*o.AllowMultipathTCP)
		}
		o.CustomDialer = d
		return nil
	}
}

// Dial implements nats.CustomDialer.
func (d *ctxDialer) Dial(network, address string) (net.Conn, error) {
	d.mu.Lock()
	ctx := d.ctx
	d.mu.Unlock()
	if ctx == nil {
		return d.d.Dial(network, address)
	}
	conn, err := d.d.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ctx != nil {
		d.stops = append(d.stops, context.AfterFunc(ctx, func() { conn.Close() }))
	}
	return conn, nil
}

// release ends the dialer's use of Open's context.
func (d *ctxDialer) release() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ctx = nil
	for _, stop := range d.stops {
		stop()
	}
	d.stops = nil
}

// idleReader is a channel other than 0: it emits nothing. It marks itself
// idle, so the watermark is channel 0's; it ends at once with StopAtEnd and
// otherwise waits forever, so that a job's checkpoints go on (no
// checkpoint starts once a source channel has finished).
type idleReader[T any] struct {
	stream    string
	stopAtEnd bool
	marked    bool
}

func (r *idleReader[T]) Read(_ context.Context, out connector.Output[T]) (connector.ReadStatus, error) {
	if r.stopAtEnd {
		return connector.Done, nil
	}
	if !r.marked {
		r.marked = true
		out.MarkIdle()
	}
	return connector.Waiting, nil
}

func (r *idleReader[T]) Close() error { return nil }

// SnapshotPosition implements connector.CheckpointedReader.
func (r *idleReader[T]) SnapshotPosition() ([]byte, error) {
	return appendPosition(nil, r.stream, 0, false), nil
}

// RestorePosition implements connector.CheckpointedReader: any position of the
// stream is accepted (an idle channel has nothing to resume).
func (r *idleReader[T]) RestorePosition(pos []byte) error {
	pos, _ = cutCreated(pos)
	_, _, err := parsePosition(pos, r.stream)
	return err
}

var (
	_ connector.CheckpointedReader = (*reader[Message])(nil)
	_ connector.BacklogReporter    = (*reader[Message])(nil)
	_ connector.CheckpointedReader = (*idleReader[Message])(nil)
)
