// Package kafkaio reads Kafka topics into weir and writes results to
// Kafka, on franz-go.
//
// The source gives every partition its own watermark generator, as
// Flink's KafkaSource does, and combines the partitions a source channel
// reads: the channel's watermark is the minimum over its partitions that
// are not idle, and it never decreases (watermark.Combined), so a skewed
// or empty partition can neither stall nor rush the job unseen, and a
// partition that becomes active again holds the watermark back until it
// catches up instead of turning its backlog into late data.
//
// Idleness is backlog-aware: a partition is idle only when nothing of it
// arrived for the idle timeout (not counting time it was paused), it is
// caught up to the broker's last stable offset (asked for; a poll says
// nothing about a quiet partition), and nothing of it is buffered in the
// reader. A slow partition with a backlog is never idle.
//
// Watermark alignment (SourceOptions.MaxDrift, Flink's FLIP-182 at
// partition level): a partition whose watermark runs more than the drift
// ahead of the slowest active partition of its channel is paused (its
// records stay in Kafka, nothing is dropped) until the slowest catches up;
// pause time is counted.
//
// Partitions are assigned to source channels statically (partition p to
// channel p mod n); positions live in weir's checkpoints, not in a
// consumer group. A channel without partitions marks itself idle.
package kafkaio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/watermark"
)

// Record is one Kafka record as the source reads it.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []Header
	// Timestamp is the record's Kafka timestamp (create or log-append
	// time, as the topic says), in milliseconds.
	Timestamp etime.Time
}

// Header is a Kafka record header.
type Header struct {
	Key   string
	Value []byte
}

// StartKind says where a source without a checkpoint starts reading.
type StartKind uint8

// The start positions.
const (
	// StartEarliest reads every partition from its first offset.
	StartEarliest StartKind = iota
	// StartLatest reads only records produced after the job starts.
	StartLatest
	// StartTime reads from the first record whose timestamp is >= Start.Time.
	StartTime
	// StartCommitted reads from the offsets committed by SourceOptions.Group
	// (partitions without a commit from their first offset).
	StartCommitted
)

// Start is a start position.
type Start struct {
	Kind StartKind
	Time etime.Time // for StartTime
}

// SourceOptions configures a Kafka source of values of type T.
type SourceOptions[T any] struct {
	// Brokers are the seed brokers (host:port).
	Brokers []string
	// Topic is the topic to read.
	Topic string
	// Group is the consumer group whose committed offsets StartCommitted
	// reads, and to which the offsets of each completed checkpoint are
	// committed so that lag tools see the job's progress. weir does not
	// consume through the group: positions are kept in its checkpoints.
	Group string
	// Start applies when the job has no checkpoint.
	Start Start
	// Decode turns a record into a value and its event timestamp; the
	// record is reused for the next one, so Decode must copy what it keeps
	// (Raw copies it). An error
	// sends the record to the dead-letter output (a *weir.BadInput error
	// gives the reason code; others are "decode_failed"), where it is
	// counted; it does not move the watermark. Raw decodes nothing.
	Decode func(r *Record) (T, etime.Time, error)
	// Watermarks makes the watermark generator of each partition; nil is
	// bounded out-of-orderness 0 (monotonous).
	Watermarks func() watermark.Generator[T]
	// WatermarkInterval is how often generators emit, idleness is
	// checked and alignment is decided (processing time); default 200ms.
	WatermarkInterval time.Duration
	// BacklogEvery: while a partition has a backlog (its next offset is
	// behind the last stable offset the broker reported), its generator
	// emits after every this many of its records instead of on the
	// WatermarkInterval (semantics W10), so a backlog is classified the
	// same at any read speed and cannot be read whole before the first
	// watermark. 0 is weir.DefaultBacklogWatermarkEvery; negative: periodic
	// emission only.
	BacklogEvery int
	// IdleTimeout marks a caught-up partition idle after this long without
	// records; 0 is DefaultIdleTimeout and a negative value never marks
	// partitions idle. Idleness is backlog-aware, so it cannot turn a
	// backlog into late data; without it, one empty partition holds the
	// channel's watermark back for good (Flink's withIdleness, which the
	// source articles call mandatory: docs/SOURCES.md, seed 000).
	IdleTimeout time.Duration
	// MaxDrift, when > 0, pauses partitions whose watermark is more than
	// this ahead of the slowest active partition of the channel.
	MaxDrift etime.Duration
	// MaxFuture, when > 0, sends records whose timestamp is more than this
	// ahead of processing time to the dead-letter output
	// ("timestamp_future", R2), so one future-dated record cannot move its
	// partition's watermark.
	MaxFuture etime.Duration
	// StopAtEnd makes the source bounded: it ends once every partition
	// reached the last stable offset it had when the job started.
	StopAtEnd bool
	// Strict is deterministic replay (weir run --deterministic): the
	// records up to each partition's last stable offset at start are
	// emitted in one order whatever the timing of the fetches, and each
	// moves its partition's watermark. The partitions of a reader take
	// turns by partition number, one record each; a partition leaves the
	// turns at its end offset of the start; a Read waits (polling, until
	// ctx is done) for the record whose turn it is and returns after one
	// round of turns, so that the records each Read emits do not depend
	// on timing either, and several channels interleave by rounds.
	// Records written after the start follow in the order the fetches
	// bring them.
	Strict bool
	// Clock is processing time; nil is the real clock.
	Clock clock.Clock
	// ClientOptions are passed to franz-go (TLS, SASL, fetch sizes).
	ClientOptions []kgo.Opt
	// MaxPollRecords bounds the records one Read emits; default 1024.
	MaxPollRecords int
	// Logger receives partition status changes; nil logs nothing.
	Logger *slog.Logger
	// Reach, if not nil, is told whether the reader reaches the brokers:
	// while no record comes, the reader asks them for the end offsets
	// every ProbeEvery (and at each idleness check), a failure there
	// being the sign of an outage that fetches do not give (the client
	// retries them quietly).
	Reach *connector.Reach
	// Checkpointed: the job takes checkpoints. Partitions added to the
	// topic are then reported (ErrInputGrew) only once a checkpoint
	// completed or was restored, so that the job reopens from one that
	// knows the partitions read so far; without checkpoints at once.
	Checkpointed bool
	// Partitions, when set, are the partitions the source reads (one
	// channel), instead of every partition split among the channels.
	Partitions []int32
	// Fetcher, when set, is where the reader gets its records instead of
	// a client of its own: a group member's consumer, which hands each
	// task its partitions' records (weir run --instance). The reader then
	// neither resolves Start nor seeks: it reads from the first record
	// the fetcher gives at or after a restored position.
	Fetcher Fetcher
	// From are the offsets a reader with a Fetcher starts at where no
	// position is restored (the member resolved them as its consumer
	// starts there).
	From map[int32]int64
}

// Fetcher is what a reader polls for records: *kgo.Client is one, and a
// group member's task gives another (SourceOptions.Fetcher). The methods
// are kgo.Client's, called on the reader's goroutine.
type Fetcher interface {
	PollRecords(ctx context.Context, maxPollRecords int) kgo.Fetches
	PauseFetchPartitions(topicPartitions map[string][]int32) map[string][]int32
	ResumeFetchPartitions(topicPartitions map[string][]int32)
}

// Aligner is a Fetcher whose reader's partitions align (MaxDrift) with
// inputs beyond the reader: a group member's task aligns with the
// group's other input tasks, in other processes too. AlignLow is the
// lowest watermark among those that are active (neither idle nor at
// their end); ok is false when there is none. Called on the reader's
// goroutine at each watermark tick.
type Aligner interface {
	AlignLow() (wm etime.Time, ok bool)
}

// DefaultIdleTimeout is the idle timeout of a source whose
// SourceOptions.IdleTimeout is 0: one minute, as the source articles use
// (docs/SOURCES.md).
const DefaultIdleTimeout = time.Minute

// Raw is a Decode for sources of *Record: the record itself, at its Kafka
// timestamp.
func Raw(r *Record) (*Record, etime.Time, error) {
	c := *r
	c.Headers = slices.Clone(r.Headers)
	return &c, r.Timestamp, nil
}

// Validate refuses incomplete or contradictory options, naming the field.
func (o *SourceOptions[T]) Validate() error {
	switch {
	case len(o.Brokers) == 0:
		return errors.New("kafkaio: SourceOptions.Brokers is empty: give at least one host:port")
	case o.Topic == "":
		return errors.New("kafkaio: SourceOptions.Topic is empty")
	case o.Decode == nil:
		return errors.New("kafkaio: SourceOptions.Decode is nil: use kafkaio.Raw for records as they are")
	case o.Start.Kind == StartCommitted && o.Group == "":
		return errors.New("kafkaio: SourceOptions.Start is StartCommitted but Group is empty: name the consumer group")
	case o.Start.Kind > StartCommitted:
		return fmt.Errorf("kafkaio: SourceOptions.Start.Kind %d is unknown", o.Start.Kind)
	case o.WatermarkInterval < 0 || o.MaxDrift < 0 || o.MaxFuture < 0 || o.MaxPollRecords < 0:
		return errors.New("kafkaio: SourceOptions durations (but IdleTimeout) and MaxPollRecords must be >= 0")
	}
	return nil
}

// NewSource returns a source reading o.Topic.
func NewSource[T any](o SourceOptions[T]) (connector.Source[T], error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.WatermarkInterval == 0 {
		o.WatermarkInterval = 200 * time.Millisecond
	}
	if o.MaxPollRecords == 0 {
		o.MaxPollRecords = 1024
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.BacklogEvery == 0 {
		o.BacklogEvery = weir.DefaultBacklogWatermarkEvery
	}
	if o.Watermarks == nil {
		o.Watermarks = func() watermark.Generator[T] { return watermark.BoundedOutOfOrderness[T](0) }
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	return &source[T]{o: o}, nil
}

type source[T any] struct{ o SourceOptions[T] }

// Open implements connector.Source: it looks the topic's partitions up and
// takes those of channel ch. It gives up when ctx is done, and after
// openTimeout at most (a broker that never answers).
func (s *source[T]) Open(ctx context.Context, ch, n int) (connector.Reader[T], error) {
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	adm, err := newAdmin(s.o.Brokers, s.o.ClientOptions)
	if err != nil {
		return nil, err
	}
	parts, id, err := topicPartitions(ctx, adm, s.o.Topic)
	if err != nil {
		adm.Close()
		return nil, err
	}
	r := &reader[T]{o: &s.o, adm: adm, byID: map[int32]*partition[T]{}, channel: ch, channels: n, topicID: id, topicParts: len(parts)}
	for _, p := range parts {
		mine := int(p)%n == ch
		if s.o.Partitions != nil {
			mine = slices.Contains(s.o.Partitions, p)
		}
		if mine {
			r.parts = append(r.parts, &partition[T]{id: p, next: -1, lso: -1, maxTS: etime.MinTime, end: -1})
		}
	}
	r.combined = watermark.NewCombined(max(1, len(r.parts)))
	for i, p := range r.parts {
		p.idx = i
		p.gen = s.o.Watermarks()
		p.out = partOut[T]{r: r, p: p} // converted once: an Output per record would allocate
		p.wm = etime.MinTime
		r.byID[p.id] = p
	}
	return r, nil
}

// openTimeout bounds the broker requests of Open and of the first Read
// (metadata, start offsets), below the job's context.
const openTimeout = 30 * time.Second

func newAdmin(brokers []string, opts []kgo.Opt) (*kadm.Client, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("kafkaio: %w", err)
	}
	return kadm.NewClient(cl), nil
}

// topicPartitions returns the partitions of topic, sorted; its error
// for a topic that does not exist matches ErrNoTopic.
func topicPartitions(ctx context.Context, adm *kadm.Client, topic string) ([]int32, kadm.TopicID, error) {
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return nil, kadm.TopicID{}, fmt.Errorf("kafkaio: metadata of topic %q: %w", topic, err)
	}
	td, ok := md.Topics[topic]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) || len(td.Partitions) == 0 {
		return nil, kadm.TopicID{}, fmt.Errorf("kafkaio: topic %q does not exist (brokers %v): %w", topic, md.Brokers.NodeIDs(), ErrNoTopic)
	}
	if td.Err != nil {
		return nil, kadm.TopicID{}, fmt.Errorf("kafkaio: topic %q: %w", topic, td.Err)
	}
	var ps []int32
	for p := range td.Partitions {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps, td.ID, nil
}

// ErrTopicChanged is returned by a restore onto a topic that is not the
// one the checkpoint read: deleted and created again under its name (its
// topic id differs), or with fewer partitions. Offsets of the old topic
// mean nothing in the new one, and retrying cannot help.
var ErrTopicChanged = connector.InputChanged("kafkaio: the topic changed since the checkpoint")

// partition is one partition a reader reads.
type partition[T any] struct {
	id   int32
	idx  int   // input of the reader's Combined
	next int64 // the offset of the next record to emit; -1 before start
	gen  watermark.Generator[T]
	out  watermark.Output // a partOut
	wm   etime.Time       // the generator's last watermark
	// records since the generator's last backlog emission (W10)
	sinceEmit int

	lastActive  time.Time // last record, start or resume
	idle        bool
	paused      bool
	pausedSince time.Time
	pausedFor   time.Duration
	idleSince   time.Time
	idleFor     time.Duration // time marked idle, before idleSince
	end         int64         // StopAtEnd: the last stable offset at start

	// Strict (deterministic) reading: the last stable offset at start,
	// up to which the partition takes turns; its fetched records not
	// emitted yet, from head on; held: its fetching is paused because
	// queue is full.
	strictEnd int64
	queue     []*kgo.Record
	head      int
	held      bool

	// For Inputs: the newest last stable offset the broker reported (-1:
	// none yet), the last record's arrival and the largest event time.
	lso        int64
	lastRecord time.Time
	maxTS      etime.Time
}

// backlog reports whether the partition reads a backlog that its
// generator emits by record count, every records (W10): backlog emission
// is on (every > 0) and records up to the last stable offset the newest
// fetch reported are still to come.
func (p *partition[T]) backlog(every int) bool {
	return every > 0 && p.next < p.lso
}

// partOut feeds a partition generator's output into the reader's
// combination of partitions.
type partOut[T any] struct {
	r *reader[T]
	p *partition[T]
}

func (o partOut[T]) EmitWatermark(wm etime.Time) {
	if wm <= o.p.wm {
		return
	}
	o.p.wm = wm
	o.r.combined.InputWatermark(o.p.idx, wm, channelOut[T]{o.r})
}

// The generator's own idleness is not used: idleness is backlog-aware
// (reader.checkIdle).
func (partOut[T]) MarkIdle()   {}
func (partOut[T]) MarkActive() {}

// reader reads the partitions of one source channel.
type reader[T any] struct {
	o   *SourceOptions[T]
	adm *kadm.Client
	cl  Fetcher
	own *kgo.Client // the client the reader made (nil with SourceOptions.Fetcher)
	// idleWarned: when the last failed idleness check was warned about
	// (once per 10 s: Kafka down fails every check).
	idleWarned time.Time
	// lastRecord and lastProbe: when the last record came and the
	// brokers were last asked (probe), on the wall clock.
	lastRecord time.Time
	lastProbe  time.Time
	// down: the last call to the brokers failed. While it is set, no
	// call blocks a Read: the brokers are asked in the background
	// (call), and the partitions' backlog is unknown.
	down bool
	call *endsCall // the background call in flight, or nil

	parts    []*partition[T]
	byID     map[int32]*partition[T]
	combined *watermark.Combined
	out      connector.Output[T] // the current Read's output
	channel  int                 // the reader's channel (its Reach key)
	channels int                 // the source's channel count
	// topicID and topicParts identify the topic read (checkpoints keep
	// them): its id (zero when the broker reports none) and partition
	// count at Open.
	topicID    kadm.TopicID
	topicParts int
	// checkpointParts is the partition count of the checkpoint restored
	// (0: none, or one of older weir): partitions from it on were added
	// since, and are read from their start (resolveStart). restored: a
	// position was restored; completed: a checkpoint completed
	// (CheckpointComplete, from another goroutine); grown: the topic's
	// largest partition count seen (grew).
	checkpointParts int
	restored        bool
	completed       atomic.Bool
	grown           int
	rec             Record // reused by emit for every record
	inputs          atomic.Pointer[[]connector.InputStatus]
	waited          time.Duration // the last Read's poll
	started         bool
	lastTick        time.Time
	// Strict reading (SourceOptions.Strict): the index in parts of the
	// partition whose turn it is.
	turn int

	// Group commits (SourceOptions.Group): the offsets of the last
	// snapshot, and of each checkpoint taken and not completed yet.
	snap   map[int32]int64
	mu     sync.Mutex
	taken  []takenCheckpoint
	closed bool
}

type takenCheckpoint struct {
	id      int64
	offsets map[int32]int64
}

// channelOut receives the combination's output (a watermark.ValveOutput)
// and passes it to the channel.
type channelOut[T any] struct{ r *reader[T] }

func (c channelOut[T]) Watermark(wm etime.Time) { c.r.out.EmitWatermark(wm) }
func (c channelOut[T]) Status(idle bool) {
	if idle {
		c.r.out.MarkIdle()
	} else {
		c.r.out.MarkActive()
	}
}

// Read implements connector.Reader. Its broker requests and its poll (of
// 20ms at most) end when ctx is done; a poll cut short returns Waiting.
func (r *reader[T]) Read(ctx context.Context, out connector.Output[T]) (connector.ReadStatus, error) {
	r.out = out
	now := r.o.Clock.Now()
	if !r.started {
		if err := r.start(ctx, now); err != nil {
			return connector.Waiting, err
		}
	}
	if len(r.parts) == 0 {
		if !r.combined.Idle() {
			r.combined.InputStatus(0, true, channelOut[T]{r})
		}
		if r.o.StopAtEnd {
			return connector.Done, nil
		}
		return connector.Waiting, nil
	}
	n := 0
	if r.o.Strict {
		var err error
		if n, err = r.readStrict(ctx, now); err != nil || n > 0 || ctx.Err() != nil {
			return r.afterRead(ctx, now, n, err)
		}
	}
	fetches, err := r.poll(ctx)
	if err != nil {
		return connector.Waiting, err
	}
	fetches.EachRecord(func(kr *kgo.Record) {
		if r.emit(kr, now) {
			n++
		}
	})
	return r.afterRead(ctx, now, n, nil)
}

// poll polls the fetcher for 20ms at most and notes the last stable
// offsets the fetches report.
func (r *reader[T]) poll(ctx context.Context) (kgo.Fetches, error) {
	pctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	polled := time.Now()
	fetches := r.cl.PollRecords(pctx, r.o.MaxPollRecords)
	r.waited = time.Since(polled) // fetches run in the background: a poll only waits
	cancel()
	if err := fetchError(fetches); err != nil {
		return nil, err
	}
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		if p := r.byID[fp.Partition]; p != nil && fp.LastStableOffset >= 0 {
			p.lso = fp.LastStableOffset
		}
	})
	return fetches, nil
}

// afterRead ends a Read that emitted n records (err: it failed): the
// periodic work when due, the end of a bounded source.
func (r *reader[T]) afterRead(ctx context.Context, now time.Time, n int, err error) (connector.ReadStatus, error) {
	if err != nil {
		return connector.Waiting, err
	}
	if now.Sub(r.lastTick) >= r.o.WatermarkInterval {
		prev := r.lastTick
		r.lastTick = now
		if err := r.tick(ctx, now, prev); err != nil {
			return connector.Waiting, err
		}
	}
	if r.o.StopAtEnd && r.atEnd() {
		r.publishInputs(now)
		return connector.Done, nil
	}
	status := connector.Waiting
	if n > 0 {
		r.lastRecord = time.Now()
		r.down = false
		r.o.Reach.OK(r.channel)
		status = connector.Emitted
	}
	if err := r.probe(ctx); err != nil {
		return connector.Waiting, err
	}
	return status, nil
}

// fetchError returns the first fetch error that is not the poll's own
// timeout.
func fetchError(f kgo.Fetches) error {
	for _, e := range f.Errors() {
		if errors.Is(e.Err, context.DeadlineExceeded) || errors.Is(e.Err, context.Canceled) {
			continue
		}
		return fmt.Errorf("kafkaio: topic %q partition %d: %w", e.Topic, e.Partition, e.Err)
	}
	return nil
}

// emit decodes and emits one record; it reports whether the record was
// emitted (not dead-lettered or skipped).
func (r *reader[T]) emit(kr *kgo.Record, now time.Time) bool {
	p := r.byID[kr.Partition]
	if p == nil || kr.Offset < p.next {
		return false // not ours, or a record from before a restored position
	}
	if kr.Attrs.IsControl() {
		p.next = kr.Offset + 1 // a commit or abort marker: no record
		return false
	}
	p.next = kr.Offset + 1
	p.lastActive, p.lastRecord = now, now
	if p.idle {
		p.idle = false
		p.idleFor += now.Sub(p.idleSince)
		r.combined.InputStatus(p.idx, false, channelOut[T]{r})
		r.log("partition active", p)
	}
	// One Record is reused for every record: Decode must not keep it.
	rec := &r.rec
	*rec = Record{Topic: kr.Topic, Partition: kr.Partition, Offset: kr.Offset, Key: kr.Key, Value: kr.Value,
		Timestamp: etime.FromTime(kr.Timestamp), Headers: rec.Headers[:0]}
	for _, h := range kr.Headers {
		rec.Headers = append(rec.Headers, Header{Key: h.Key, Value: h.Value})
	}
	v, ts, err := r.o.Decode(rec)
	if err == nil && r.o.MaxFuture > 0 && ts > etime.FromTime(now).Add(r.o.MaxFuture) {
		err = &weir.BadInput{Reason: "timestamp_future", Detail: fmt.Sprintf("timestamp %s is more than max_future %v ahead of processing time %s",
			ts.Wall().Format(time.RFC3339), r.o.MaxFuture.Std(), now.UTC().Format(time.RFC3339))}
	}
	if err != nil {
		reason, detail := DeadLetterReason(err)
		if d, ok := r.out.(connector.DeadLetterOutput); ok {
			kept := *rec // the dead letter keeps it
			kept.Headers = slices.Clone(rec.Headers)
			d.DeadLetter(reason, fmt.Sprintf("%s (topic %s partition %d offset %d)", detail, kr.Topic, kr.Partition, kr.Offset), &kept)
		}
		return false
	}
	p.gen.OnEvent(v, ts, p.out)
	p.maxTS = max(p.maxTS, ts)
	r.out.Emit(ts, v)
	// A deterministic run's watermarks follow every record; otherwise
	// (W10), while records up to the last stable offset this fetch
	// reported are still to come, the partition reads a backlog and its
	// generator emits by record count.
	if r.o.Strict {
		p.gen.OnPeriodicEmit(p.out)
	} else if p.backlog(r.o.BacklogEvery) {
		if p.sinceEmit++; p.sinceEmit >= r.o.BacklogEvery {
			p.sinceEmit = 0
			p.gen.OnPeriodicEmit(p.out)
		}
	}
	return true
}

// strictHold is how many fetched records (in MaxPollRecords) a partition
// holds ahead of its turn before its fetching pauses; it resumes at a
// quarter of that.
const strictHold = 4

// readStrict is a Read of SourceOptions.Strict: it emits one round of
// turns, a record of each partition that has turns left, in partition
// order, polling until the record whose turn it is has come (or ctx is
// done). A round per Read interleaves the channels (readers) of a job
// as finely as one reader interleaves its partitions, so that the
// channel count changes the order little. When the turns are over it
// emits what the partitions fetched beyond their end of the start and,
// when nothing is left, returns 0, so that the Read goes on as a plain
// one.
func (r *reader[T]) readStrict(ctx context.Context, now time.Time) (int, error) {
	n := 0
	for taken := false; ; {
		p := r.nextTurn()
		if p == nil || taken && r.turn == 0 {
			break // the turns are over, or the round is
		}
		kr := r.pop(p)
		if kr == nil {
			if ctx.Err() != nil {
				return n, nil
			}
			f, err := r.poll(ctx)
			if err != nil {
				return n, err
			}
			r.enqueue(f)
			// Brokers that stopped answering while the record waited
			// for are told of (Reach), as a plain Read tells them: the
			// wait does not end the Read, whose order the turns keep.
			if err := r.probe(ctx); err != nil {
				return n, err
			}
			continue
		}
		if !kr.Attrs.IsControl() && kr.Offset >= p.next {
			// A record takes a turn (a dead letter too); a transaction
			// marker or a record before a restored position does not.
			r.turn = (r.turn + 1) % len(r.parts)
			taken = true
		}
		if r.emit(kr, now) {
			n++
		}
	}
	if n == 0 {
		for _, p := range r.parts {
			for kr := r.pop(p); kr != nil; kr = r.pop(p) {
				if r.emit(kr, now) {
					n++
				}
			}
		}
	}
	return n, nil
}

// nextTurn returns the partition whose turn it is (r.turn), passing over
// those at their end of the start; nil when every partition is.
func (r *reader[T]) nextTurn() *partition[T] {
	for range r.parts {
		if p := r.parts[r.turn]; p.next < p.strictEnd {
			return p
		}
		r.turn = (r.turn + 1) % len(r.parts)
	}
	return nil
}

// enqueue queues the fetched records by partition for their turns, and
// pauses the fetching of a partition that holds strictHold polls' worth.
func (r *reader[T]) enqueue(f kgo.Fetches) {
	f.EachRecord(func(kr *kgo.Record) {
		if p := r.byID[kr.Partition]; p != nil {
			p.queue = append(p.queue, kr)
		}
	})
	var hold []int32
	for _, p := range r.parts {
		if !p.held && len(p.queue)-p.head >= strictHold*r.o.MaxPollRecords {
			p.held = true
			hold = append(hold, p.id)
		}
	}
	if len(hold) > 0 {
		r.cl.PauseFetchPartitions(map[string][]int32{r.o.Topic: hold})
	}
}

// pop takes p's first queued record (nil: none), resuming p's fetching
// when its queue has run down to a quarter of strictHold.
func (r *reader[T]) pop(p *partition[T]) *kgo.Record {
	if p.head == len(p.queue) {
		return nil
	}
	kr := p.queue[p.head]
	p.queue[p.head] = nil
	p.head++
	if left := len(p.queue) - p.head; left == 0 {
		p.queue, p.head = p.queue[:0], 0
	} else if p.head >= left {
		m := copy(p.queue, p.queue[p.head:])
		clear(p.queue[m:])
		p.queue, p.head = p.queue[:m], 0
	}
	if p.held && len(p.queue)-p.head <= r.o.MaxPollRecords {
		p.held = false
		if !p.paused {
			r.cl.ResumeFetchPartitions(map[string][]int32{r.o.Topic: {p.id}})
		}
	}
	return kr
}

// DeadLetterReason is the reason code and detail of a dead letter whose
// record failed to decode with err: a *weir.BadInput's, else
// decode_failed and err's text.
func DeadLetterReason(err error) (reason, detail string) {
	var bad *weir.BadInput
	if errors.As(err, &bad) {
		return bad.Reason, bad.Detail
	}
	return "decode_failed", err.Error()
}

func (r *reader[T]) log(msg string, p *partition[T]) {
	if r.o.Logger != nil {
		r.o.Logger.Info("kafka "+msg, "topic", r.o.Topic, "partition", p.id, "next_offset", p.next, "watermark", p.wm)
	}
}

// start resolves every partition's start offset (a restored position, or
// the configured start) and starts consuming; it gives up when ctx is
// done.
func (r *reader[T]) start(ctx context.Context, now time.Time) error {
	r.started = true
	r.lastTick = now
	for _, p := range r.parts {
		p.lastActive = now
	}
	if len(r.parts) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	// The start offsets are listed once, for both.
	var starts kadm.ListedOffsets
	startsOf := func() (kadm.ListedOffsets, error) {
		if starts != nil {
			return starts, nil
		}
		l, err := r.listed("start offsets")(r.adm.ListStartOffsets(ctx, r.o.Topic))
		starts = l
		return l, err
	}
	// A group member's task (a Fetcher) checks its restored positions
	// too: its consumer starts past a gap without a word.
	if err := r.checkRetention(startsOf); err != nil {
		return err
	}
	if r.o.Fetcher == nil {
		if err := r.resolveStart(ctx, startsOf); err != nil {
			return err
		}
	}
	// The end offsets are read at open, so that every partition's backlog
	// is known from the start (a partition without records is not in any
	// fetch until the idleness check lists it again).
	ends, err := r.lso(ctx)
	if err != nil {
		return err
	}
	for _, p := range r.parts {
		end, ok := ends[p.id]
		if r.o.StopAtEnd && p.end < 0 { // a restored task keeps its end
			p.end = end
		}
		if r.o.Strict {
			p.strictEnd = end
		}
		if ok {
			p.lso = max(p.lso, end)
		}
	}
	if r.o.Fetcher != nil {
		for _, p := range r.parts {
			if at, ok := r.o.From[p.id]; ok && p.next < 0 {
				p.next = at
			}
		}
		r.cl = r.o.Fetcher
		return nil
	}
	offsets := map[int32]kgo.Offset{}
	for _, p := range r.parts {
		offsets[p.id] = kgo.NewOffset().At(p.next)
	}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(r.o.Brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{r.o.Topic: offsets}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Transaction markers are delivered (and not emitted) so that a
		// partition's next offset passes them: on a transactional topic
		// the last stable offset lies beyond the last record, and a reader
		// that never reached it would neither be caught up (W10) nor idle.
		kgo.KeepControlRecords(),
		// A resumed or quiet partition is fetched again within this.
		kgo.FetchMaxWait(250 * time.Millisecond),
		// 256 KiB per partition and fetch (franz-go's default is 1 MiB):
		// partitions interleave more finely, so a channel's watermark
		// (the minimum over its partitions) moves sooner, and throughput
		// was at least as good in an A/B on kfake (docs/PERFORMANCE.md);
		// 8 MiB was slower.
		kgo.FetchMaxPartitionBytes(256 << 10),
	}, r.o.ClientOptions...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafkaio: %w", err)
	}
	r.cl, r.own = cl, cl
	return nil
}

// resolveStart sets the next offset of every partition without one (not
// restored) from the start option.
func (r *reader[T]) resolveStart(ctx context.Context, startsOf func() (kadm.ListedOffsets, error)) error {
	if !slices.ContainsFunc(r.parts, func(p *partition[T]) bool { return p.next < 0 }) {
		return nil
	}
	var listed kadm.ListedOffsets
	var err error
	switch r.o.Start.Kind {
	case StartEarliest, StartCommitted:
		listed, err = startsOf()
	case StartLatest:
		listed, err = r.listed("end offsets")(r.adm.ListEndOffsets(ctx, r.o.Topic))
	case StartTime:
		listed, err = r.listed("offsets at the start time")(r.adm.ListOffsetsAfterMilli(ctx, int64(r.o.Start.Time), r.o.Topic))
	}
	if err != nil {
		return err
	}
	fresh := slices.DeleteFunc(slices.Clone(r.parts), func(p *partition[T]) bool { return p.next >= 0 })
	for _, p := range fresh {
		if l, ok := listed.Lookup(r.o.Topic, p.id); ok {
			p.next = l.Offset
		} else {
			p.next = 0
		}
	}
	if r.checkpointParts > 0 && slices.ContainsFunc(fresh, func(p *partition[T]) bool { return int(p.id) >= r.checkpointParts }) {
		// Partitions added since the checkpoint's run opened the topic
		// are read from their start, as Flink reads a discovered
		// partition: their records came while the job ran.
		starts, err := startsOf()
		if err != nil {
			return err
		}
		for _, p := range fresh {
			if int(p.id) < r.checkpointParts {
				continue
			}
			p.next = 0
			if l, ok := starts.Lookup(r.o.Topic, p.id); ok {
				p.next = l.Offset
			}
		}
		fresh = slices.DeleteFunc(fresh, func(p *partition[T]) bool { return int(p.id) >= r.checkpointParts })
	}
	if r.o.Start.Kind == StartCommitted {
		committed, err := r.adm.FetchOffsets(ctx, r.o.Group)
		if err == nil {
			err = committed.Error()
		}
		if err != nil {
			return fmt.Errorf("kafkaio: committed offsets of group %q: %w", r.o.Group, err)
		}
		for _, p := range fresh {
			if c, ok := committed.Lookup(r.o.Topic, p.id); ok && c.At >= 0 {
				p.next = c.At
			}
		}
	}
	return nil
}

// checkRetention moves a restored partition whose next offset the
// topic's retention removed (it is below the partition's start offset)
// to the start, and says how many records it lost so, in the log and to
// the output (connector.ReportLost): they were never read, so no term of
// conservation holds them. It runs in Read (r.out is set).
func (r *reader[T]) checkRetention(startsOf func() (kadm.ListedOffsets, error)) error {
	if !slices.ContainsFunc(r.parts, func(p *partition[T]) bool { return p.next >= 0 }) {
		return nil
	}
	starts, err := startsOf()
	if err != nil {
		return err
	}
	for _, p := range r.parts {
		l, ok := starts.Lookup(r.o.Topic, p.id)
		if p.next < 0 || !ok || l.Offset <= p.next {
			continue
		}
		if r.o.Logger != nil {
			r.o.Logger.Warn("kafka records after the restored position were removed by the topic's retention before they were read: they are lost to this job (raise retention.ms, or resume sooner)",
				"topic", r.o.Topic, "partition", p.id, "from", p.next, "to", l.Offset-1, "records", l.Offset-p.next)
		}
		connector.ReportLost(r.out, l.Offset-p.next, fmt.Sprintf("kafka topic %q partition %d, offsets %d to %d: removed by the topic's retention before they were read", r.o.Topic, p.id, p.next, l.Offset-1))
		p.next = l.Offset
	}
	return nil
}

// listed checks a listing of the topic's offsets (what: which, for the
// error): the listing, or the error of the request or of a partition.
func (r *reader[T]) listed(what string) func(kadm.ListedOffsets, error) (kadm.ListedOffsets, error) {
	return func(l kadm.ListedOffsets, err error) (kadm.ListedOffsets, error) {
		if err == nil {
			err = l.Error()
		}
		if err != nil {
			return nil, fmt.Errorf("kafkaio: %s of topic %q: %w", what, r.o.Topic, err)
		}
		return l, nil
	}
}

// lso returns the last stable offset of every partition of the topic.
func (r *reader[T]) lso(ctx context.Context) (map[int32]int64, error) {
	ends, _, err := r.endsAndParts(ctx)
	return ends, err
}

// endsAndParts is lso's answer with the topic's partition count now. It
// reads r.parts' ids only (fixed after Open), so a background call
// (probe) may make it.
func (r *reader[T]) endsAndParts(ctx context.Context) (map[int32]int64, int, error) {
	listed, err := r.adm.ListCommittedOffsets(ctx, r.o.Topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return nil, 0, fmt.Errorf("kafkaio: end offsets of topic %q: %w", r.o.Topic, err)
	}
	out := map[int32]int64{}
	for _, p := range r.parts {
		if l, ok := listed.Lookup(r.o.Topic, p.id); ok {
			out[p.id] = l.Offset
		}
	}
	return out, len(listed[r.o.Topic]), nil
}

// grew is the error of a topic that has nparts partitions (0: no new
// count), more than when the reader opened (ErrInputGrew), or nil. A job
// with checkpoints hears of it once it has one to reopen from (one
// completed, or restored), which knows the partitions read so far; until
// then the reader reads on.
func (r *reader[T]) grew(nparts int) error {
	if r.o.Fetcher != nil || r.o.Partitions != nil || r.o.StopAtEnd {
		// A group member's task reads one partition (the group stops on
		// added ones); a reader of named partitions reads those alone; a
		// bounded read reads to the ends it fixed at start, as Flink's
		// bounded source discovers no partitions.
		return nil
	}
	r.grown = max(r.grown, nparts)
	if r.grown <= r.topicParts || r.o.Checkpointed && !r.restored && !r.completed.Load() {
		return nil
	}
	return fmt.Errorf("%w: topic %q has %d partitions, %d when the job started: a running job reads the partitions it opened, so it reopens from its newest checkpoint, which reads the added ones from their start",
		connector.ErrInputGrew, r.o.Topic, r.grown, r.topicParts)
}

func (r *reader[T]) atEnd() bool {
	for _, p := range r.parts {
		if p.next < p.end {
			return false
		}
	}
	return true
}

// tick is the periodic work: generators emit, idleness, alignment. A
// partition reading its backlog (W10: behind the last stable offset its
// newest fetch reported, and records of it arrived since the previous
// tick, at prev) emits by record count instead; one that delivered
// nothing for a whole interval is treated as caught up, so a stale offset
// cannot stop its emission.
func (r *reader[T]) tick(ctx context.Context, now, prev time.Time) error {
	for _, p := range r.parts {
		// A group member's task (a Fetcher) gets no records while its
		// member commits, so a pause says nothing about the backlog:
		// its backlog emits by count only, up to the last stable offset
		// read when it started on its member (which it reaches), so
		// that over an input written before then its watermarks do not
		// depend on how the deliveries were timed.
		delivered := p.lastRecord.After(prev) || r.o.Fetcher != nil
		if !(p.backlog(r.o.BacklogEvery) && delivered) {
			p.gen.OnPeriodicEmit(p.out)
		}
	}
	if err := r.checkIdle(ctx, now); err != nil {
		return err
	}
	r.align(now)
	r.publishInputs(now)
	return nil
}

// publishInputs publishes the partitions' state for Inputs.
func (r *reader[T]) publishInputs(now time.Time) {
	st := r.status(now)
	in := make([]connector.InputStatus, len(st))
	for i := range st {
		in[i] = st[i].InputStatus
	}
	r.inputs.Store(&in)
}

// Waited implements connector.WaitReporter: how long the last Read's poll
// waited for fetched records.
func (r *reader[T]) Waited() time.Duration { return r.waited }

// Inputs implements connector.InputReporter: the partitions as of the last
// watermark tick.
func (r *reader[T]) Inputs() []connector.InputStatus {
	if in := r.inputs.Load(); in != nil {
		return *in
	}
	return nil
}

// ProbeEvery is how often a reader without records asks the brokers
// whether they answer (SourceOptions.Reach).
var ProbeEvery = 5 * time.Second

// endsCall is one background request for the end offsets (probe). Its
// goroutine writes ends and err, then closes done; the reader reads them
// after done.
type endsCall struct {
	at     time.Time
	done   chan struct{}
	ends   map[int32]int64
	nparts int // the topic's partitions
	err    error
}

// DiscoverEvery is how often a reader asks the brokers for its topic's
// partitions, records or not (probe): added ones reopen the job
// (ErrInputGrew), as Flink's Kafka source discovers them.
var DiscoverEvery = 10 * time.Second

// probe asks the brokers for the end offsets and the topic's partitions
// when no record came for ProbeEvery and they were not asked for as long,
// every DiscoverEvery in any case, or at once while they are down, and
// tells Reach whether they answered. The request runs in the background
// (a reader's Read never waits on brokers that do not answer); a later
// probe takes its answer, and fails with ErrInputGrew when the topic
// gained partitions.
func (r *reader[T]) probe(ctx context.Context) error {
	if r.adm == nil {
		return nil
	}
	if c := r.call; c != nil {
		select {
		case <-c.done:
			r.call = nil
			if c.err == nil || !r.lastRecord.After(c.at) { // records since tell more than a failure before them
				r.reached(ctx, c.at, c.err)
			}
			for id, end := range c.ends {
				if p := r.byID[id]; p != nil {
					p.lso = max(p.lso, end)
				}
			}
			r.grown = max(r.grown, c.nparts)
		default:
		}
	}
	if err := r.grew(0); err != nil {
		return err
	}
	if r.call != nil {
		return nil
	}
	now := time.Now()
	quiet := !r.down && (r.o.Reach == nil || now.Sub(r.lastRecord) < ProbeEvery)
	if now.Sub(r.lastProbe) < ProbeEvery || quiet && now.Sub(r.lastProbe) < DiscoverEvery {
		return nil
	}
	r.lastProbe = now
	c := &endsCall{at: now, done: make(chan struct{})}
	r.call = c
	go func() { // owned by the reader: it ends within 2 s; Close waits for it
		defer close(c.done)
		pctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		c.ends, c.nparts, c.err = r.endsAndParts(pctx)
	}()
	return nil
}

// reached tells Reach how a call to the brokers at now ended (a call
// cut short by the job's end tells nothing), and notes whether they are
// down.
func (r *reader[T]) reached(ctx context.Context, now time.Time, err error) {
	switch {
	case err == nil:
		r.down = false
		r.o.Reach.OK(r.channel)
	case ctx.Err() == nil:
		r.down = true
		r.o.Reach.Fail(r.channel, now, err)
	}
}

// checkIdle marks idle the partitions that had no record for the idle
// timeout (pauses excluded) and are caught up to the last stable offset.
func (r *reader[T]) checkIdle(ctx context.Context, now time.Time) error {
	if r.o.IdleTimeout <= 0 {
		return nil
	}
	var quiet []*partition[T]
	for _, p := range r.parts {
		if !p.idle && !p.paused && now.Sub(p.lastActive) >= r.o.IdleTimeout {
			quiet = append(quiet, p)
		}
	}
	if len(quiet) == 0 {
		return nil
	}
	if r.down {
		// The brokers did not answer: ask them in the background (probe)
		// rather than wait here every tick; the partitions stay active.
		return r.probe(ctx)
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ends, nparts, err := r.endsAndParts(lctx)
	r.reached(ctx, time.Now(), err)
	if err == nil {
		if err := r.grew(nparts); err != nil {
			return err
		}
	}
	if err != nil {
		// Not knowing the backlog, keep the partitions active: a wrong
		// "idle" turns a backlog into late data, a wrong "active" only
		// delays results. A job that ends (ctx) needs no warning.
		if r.o.Logger != nil && ctx.Err() == nil && now.Sub(r.idleWarned) >= 10*time.Second {
			r.idleWarned = now
			r.o.Logger.Warn("kafka idleness check failed (warned once per 10 s while it fails)", "topic", r.o.Topic, "err", err)
		}
		return nil
	}
	for _, p := range quiet {
		if end, ok := ends[p.id]; ok {
			p.lso = max(p.lso, end)
		}
		if end, ok := ends[p.id]; ok && p.next >= end {
			p.idle, p.idleSince = true, now
			r.combined.InputStatus(p.idx, true, channelOut[T]{r})
			r.log("partition idle", p)
		}
	}
	return nil
}

// align pauses the partitions whose watermark is more than MaxDrift
// ahead of the slowest active partition (the Fetcher's other inputs too,
// when it is an Aligner), and resumes those that are not.
func (r *reader[T]) align(now time.Time) {
	if r.o.MaxDrift <= 0 {
		return
	}
	lo := etime.MaxTime
	for _, p := range r.parts {
		if !p.idle {
			lo = etime.Min(lo, p.wm)
		}
	}
	if a, ok := r.cl.(Aligner); ok {
		if wm, ok := a.AlignLow(); ok {
			lo = etime.Min(lo, wm)
		}
	}
	if lo == etime.MaxTime {
		return
	}
	limit := lo.Add(r.o.MaxDrift)
	var pause, resume []int32
	for _, p := range r.parts {
		switch ahead := !p.idle && p.wm > limit; {
		case ahead && !p.paused:
			p.paused, p.pausedSince = true, now
			pause = append(pause, p.id)
			r.log("partition paused (alignment)", p)
		case !ahead && p.paused:
			p.paused = false
			p.pausedFor += now.Sub(p.pausedSince)
			p.lastActive = now // pause time does not count towards idleness
			if !p.held {       // a strict reader's full queue holds it still
				resume = append(resume, p.id)
			}
			r.log("partition resumed", p)
		}
	}
	if len(pause) > 0 {
		r.cl.PauseFetchPartitions(map[string][]int32{r.o.Topic: pause})
	}
	if len(resume) > 0 {
		r.cl.ResumeFetchPartitions(map[string][]int32{r.o.Topic: resume})
	}
}

// PartitionStatus is the state of one partition a source channel reads.
type PartitionStatus struct {
	Partition  int32
	NextOffset int64
	// InputStatus is the partition as an input of its source ("partition
	// N"): its watermark, idle and pause state and times, its backlog
	// (the broker's newest reported last stable offset minus NextOffset),
	// its last record and largest event time.
	connector.InputStatus
}

// Status returns the state of the reader's partitions; call it from the
// reader's goroutine (between reads), or after the job ended.
func (r *reader[T]) Status() []PartitionStatus { return r.status(r.o.Clock.Now()) }

func (r *reader[T]) status(now time.Time) []PartitionStatus {
	out := make([]PartitionStatus, 0, len(r.parts))
	for _, p := range r.parts {
		ps := PartitionStatus{Partition: p.id, NextOffset: p.next, InputStatus: connector.InputStatus{Name: "partition " + strconv.Itoa(int(p.id)),
			Watermark: p.wm, Idle: p.idle, Paused: p.paused, PausedFor: p.pausedFor, Backlog: -1, LastRecord: p.lastRecord, MaxEventTime: p.maxTS}}
		if p.paused {
			ps.PausedFor += now.Sub(p.pausedSince)
		}
		ps.IdleFor = p.idleFor
		if p.idle {
			ps.IdleFor += now.Sub(p.idleSince)
		}
		if p.lso >= 0 && p.next >= 0 && !r.down {
			ps.Backlog = max(p.lso-p.next, 0)
		}
		out = append(out, ps)
	}
	return out
}

// CheckpointTaken implements connector.CheckpointListener: it remembers the
// offsets of checkpoint id's snapshot.
func (r *reader[T]) CheckpointTaken(id int64) {
	if r.o.Group == "" || r.snap == nil {
		return
	}
	r.mu.Lock()
	r.taken = append(r.taken, takenCheckpoint{id, r.snap})
	r.mu.Unlock()
}

// CheckpointComplete implements connector.CheckpointListener: it notes that
// a checkpoint completed (grew), and commits the offsets of checkpoint id
// to SourceOptions.Group, for lag tools only
// (weir restores from its checkpoints, never from the group). A failed
// commit is logged; the next checkpoint commits again.
func (r *reader[T]) CheckpointComplete(id int64) {
	r.completed.Store(true)
	r.mu.Lock()
	var offsets map[int32]int64
	for len(r.taken) > 0 && r.taken[0].id <= id {
		offsets = r.taken[0].offsets
		r.taken = r.taken[1:]
	}
	closed := r.closed
	r.mu.Unlock()
	if offsets == nil || closed {
		return
	}
	os := kadm.Offsets{}
	for p, at := range offsets {
		os.Add(kadm.Offset{Topic: r.o.Topic, Partition: p, At: at, LeaderEpoch: -1})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := r.adm.CommitOffsets(ctx, r.o.Group, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil && r.o.Logger != nil {
		r.o.Logger.Warn("kafka offset commit failed (for monitoring only)", "topic", r.o.Topic, "group", r.o.Group, "checkpoint", id, "err", err)
	}
}

// Close implements connector.Reader.
func (r *reader[T]) Close() error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	if r.call != nil {
		<-r.call.done
	}
	if r.own != nil {
		r.own.Close()
	}
	r.adm.Close()
	return nil
}

// position is a reader's checkpointed position: per partition the next
// offset and the watermark generator's state.
type position struct {
	Version    int            `json:"v"`
	Topic      string         `json:"topic"`
	Channels   int            `json:"channels"`
	Partitions []partPosition `json:"partitions"`
	// TopicID and TopicPartitions identify the topic read (positions of
	// older weir have neither).
	TopicID         string `json:"topic_id,omitempty"` // base64, as kadm prints it
	TopicPartitions int    `json:"topic_partitions,omitempty"`
}

type partPosition struct {
	Partition int32      `json:"p"`
	Next      int64      `json:"next"`
	Watermark etime.Time `json:"wm"`
	Idle      bool       `json:"idle,omitempty"`
	Generator []byte     `json:"gen,omitempty"`
	// SinceEmit: records since the last backlog emission (W10).
	SinceEmit int `json:"since_emit,omitempty"`
	// End is where a bounded read ends (StopAtEnd; 0 otherwise): a
	// group member's task keeps the end its first owner read.
	End int64 `json:"end,omitempty"`
}

const positionVersion = 1

// SnapshotPosition implements connector.CheckpointedReader.
func (r *reader[T]) SnapshotPosition() ([]byte, error) {
	pos := position{Version: positionVersion, Topic: r.o.Topic, Channels: r.channels, TopicPartitions: r.topicParts}
	if r.topicID != (kadm.TopicID{}) {
		pos.TopicID = r.topicID.String()
	}
	r.snap = make(map[int32]int64, len(r.parts))
	for _, p := range r.parts {
		if p.next >= 0 {
			r.snap[p.id] = p.next
		}
		pos.Partitions = append(pos.Partitions, partPosition{Partition: p.id, Next: p.next, Watermark: p.wm, Idle: p.idle,
			Generator: watermark.AppendState(nil, p.gen), SinceEmit: p.sinceEmit, End: max(p.end, 0)})
	}
	return json.Marshal(pos)
}

// RestorePosition implements connector.CheckpointedReader. A partition of the
// channel that the position does not name starts at its start when it was
// added to the topic since (its number is beyond the position's count; a
// position of older weir has none), and at the configured start otherwise.
func (r *reader[T]) RestorePosition(b []byte) error {
	var pos position
	if err := json.Unmarshal(b, &pos); err != nil {
		return fmt.Errorf("kafkaio: corrupt source position: %w", err)
	}
	if pos.Version != positionVersion {
		return fmt.Errorf("kafkaio: source position version %d, this weir reads %d", pos.Version, positionVersion)
	}
	if pos.Channels != r.channels {
		// Partitions move between channels with the count, and a channel
		// restores only its own position: refuse rather than read a
		// partition again from the start.
		return fmt.Errorf("kafkaio: the checkpoint was taken with %d source channels, this job has %d: restore with %d channels", pos.Channels, r.channels, pos.Channels)
	}
	if pos.Topic != r.o.Topic {
		return fmt.Errorf("kafkaio: the checkpoint read topic %q, the source reads %q; start over (--fresh) or keep the topic", pos.Topic, r.o.Topic)
	}
	if pos.TopicID != "" && r.topicID != (kadm.TopicID{}) && pos.TopicID != r.topicID.String() {
		return fmt.Errorf("%w: topic %q has id %s, the checkpoint read id %s: it was deleted and created again, and its offsets are not the checkpoint's; start over with --fresh",
			ErrTopicChanged, r.o.Topic, r.topicID, pos.TopicID)
	}
	if pos.TopicPartitions > r.topicParts {
		return fmt.Errorf("%w: topic %q has %d partitions, the checkpoint read %d; start over with --fresh", ErrTopicChanged, r.o.Topic, r.topicParts, pos.TopicPartitions)
	}
	r.checkpointParts, r.restored = pos.TopicPartitions, true
	for _, pp := range pos.Partitions {
		p := r.byID[pp.Partition]
		if p == nil {
			return fmt.Errorf("kafkaio: the checkpoint's partition %d of topic %q is not read by this channel: restore with the parallelism the checkpoint was taken with", pp.Partition, r.o.Topic)
		}
		p.next = pp.Next
		if err := watermark.RestoreState(p.gen, pp.Generator); err != nil {
			return fmt.Errorf("kafkaio: partition %d: %w", pp.Partition, err)
		}
		p.wm, p.sinceEmit = pp.Watermark, pp.SinceEmit
		if r.o.Fetcher != nil && r.o.StopAtEnd && pp.End > 0 {
			p.end = pp.End
		}
		r.combined.InputWatermark(p.idx, pp.Watermark, discard{})
	}
	return nil
}

// discard is a watermark.ValveOutput that drops what it receives: a
// restore rebuilds the combination's state, the channel's output state is
// restored by the engine.
type discard struct{}

func (discard) Watermark(etime.Time) {}
func (discard) Status(bool)          {}

// Position is a partition's checkpointed position: the offset of its
// next record, its watermark, and whether it was idle.
type Position struct {
	Next      int64
	Watermark etime.Time
	Idle      bool
}

// Positions reads a reader's checkpointed position (what
// SnapshotPosition returned): each partition's.
func Positions(b []byte) (map[int32]Position, error) {
	var pos position
	if err := json.Unmarshal(b, &pos); err != nil {
		return nil, fmt.Errorf("kafkaio: corrupt source position: %w", err)
	}
	out := make(map[int32]Position, len(pos.Partitions))
	for _, pp := range pos.Partitions {
		out[pp.Partition] = Position{Next: pp.Next, Watermark: pp.Watermark, Idle: pp.Idle}
	}
	return out, nil
}
