package group

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/kafkaio"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/record"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/spec"
)

// A job whose input is not partitioned by its key (no
// source.kafka.partitioned_by_key) runs in two stages, as Kafka Streams
// runs a repartitioned topology. A route task per input partition reads
// it, stamps each record (its event time and key, by the job's decoder)
// and writes it to the repartition topic's partition of its key (Kafka's
// default partitioner); a window task per repartition partition runs the
// job on what reaches it. Whenever its partition's watermark (the kafka
// reader's, with W10 and backlog-aware idleness) or idleness changes, and
// when it read its input to the end, a route task writes a marker into
// every repartition partition after the records routed before; they go
// in the member's transaction with the route task's position and input
// offset. A window task's watermark is the minimum over the
// route tasks' markers, idle ones left out (all idle: the largest, as H6
// flushes), once every route task was heard from; it never decreases. A
// window task's input is thus the repartition partition's records in
// their committed order, in blocks per member and commit (a member
// interleaves its route tasks' records, routeChunk at a time): the
// classification of records near the lateness boundary depends on where
// commits fall (unlike partitioned_by_key, where a task's watermark
// follows its own input only).

// RepartitionTopic is the repartition topic of a job's group.
func RepartitionTopic(p *spec.Plan) string { return Name(p) + "-repartition" }

// repartitioned reports whether the job runs in two stages (its input
// is not partitioned by its key).
func repartitioned(p *spec.Plan) bool {
	return !spec.SourceSettings(p).Bool("kafka.partitioned_by_key")
}

// markerHeader names a watermark marker's header (its value "from wm
// idle done"); srcHeader a routed record's origin ("partition offset").
const (
	markerHeader = "weir-wm"
	srcHeader    = "weir-src"
	// deadHeader marks a routed dead letter: "reason detail".
	deadHeader = "weir-dead"
	// lostHeader marks a route task's report of input records lost
	// before it read them (connector.LossOutput): "n detail".
	lostHeader = "weir-lost"
)

// marker is a route task's watermark, as a window task hears it.
type marker struct {
	From int32      `json:"from"`
	WM   etime.Time `json:"wm"`
	Idle bool       `json:"idle,omitempty"`
	Done bool       `json:"done,omitempty"`
}

func (mk marker) record(topic string, part int32) *kgo.Record {
	v := fmt.Appendf(nil, "%d %d %t %t", mk.From, int64(mk.WM), mk.Idle, mk.Done)
	return &kgo.Record{Topic: topic, Partition: part, Headers: []kgo.RecordHeader{{Key: markerHeader, Value: v}}}
}

// parseMarker reads a marker record; ok is false for a routed record.
func parseMarker(r *kgo.Record) (mk marker, ok bool, err error) {
	for _, h := range r.Headers {
		if h.Key != markerHeader {
			continue
		}
		var wm int64
		if _, err := fmt.Sscanf(string(h.Value), "%d %d %t %t", &mk.From, &wm, &mk.Idle, &mk.Done); err != nil {
			return mk, true, fmt.Errorf("a watermark marker %q: %w", h.Value, err)
		}
		mk.WM = etime.Time(wm)
		return mk, true, nil
	}
	return mk, false, nil
}

// routePart names a route task's reader position in its snapshot.
const routePart = "route"

// router is a route task's work, on its own goroutine (run): it reads
// its input partition through the kafka reader and routes each record.
type router struct {
	t    *task
	rd   connector.Reader[connector.Line]
	rt   string // the repartition topic
	nout int
	keys kgo.TopicPartitioner
	// key is the key of the line stamped last (Stamp runs right before
	// Emit, on the goroutine).
	key string
	out []*kgo.Record // routed since the last snapshot
	// probe is the key partitioner's argument; recs, hdrs and buf are
	// slabs the routed records, their headers, keys and header values
	// are cut from (never reused: a full one is replaced, so that a
	// routed record stays valid until the member produced it), so that
	// routing a record allocates nothing on its own.
	probe kgo.Record
	recs  []kgo.Record
	hdrs  []kgo.RecordHeader
	buf   []byte
	wm    etime.Time // the last watermark marked
	idle  bool
	done  bool // the reader read to its end
	err   error
	req   chan chan routed
}

// routed is a route task's answer to a commit: what it routed since the
// last one, and its reader's position after them.
type routed struct {
	recs []*kgo.Record
	pos  []byte
	done bool
	err  error
}

// newRouter opens the route task of t (its inbox, from its last snapshot
// or offset from): the plan's source as the task plan opens it (the
// kafka reader on the inbox), stamped by the job's decoder.
func (m *Member) newRouter(t *task, snap *snapshot, from int64) (*router, error) {
	p := m.o.Plan
	path, err := p.Graph.Path()
	if err != nil {
		return nil, err
	}
	clk := m.o.Run.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	r := &router{t: t, rt: m.rt, nout: m.nparts, keys: kgo.StickyKeyPartitioner(nil).ForTopic(m.rt), req: make(chan chan routed), wm: etime.MinTime}
	if snap != nil {
		r.wm = snap.Watermark
	}
	dec := record.NewDecoder(p, clk)
	stamp := func(l connector.Line) (etime.Time, error) {
		rec, err := dec.DecodeSlot(l, 0)
		if err != nil {
			return 0, err
		}
		if p.TSFromSource() {
			rec.TS = l.Time
		}
		r.key = rec.Key
		return rec.TS, nil
	}
	src, _, err := job.OpenSource(context.Background(), m.taskPlan(t), m.o.Run,
		job.SourceHooks{Clock: clk, Splits: job.SplitOptions(p, path.Reads[0].Watermark, stamp)})
	if err != nil {
		return nil, err
	}
	if r.rd, err = src.Source.Open(context.Background(), 0, 1); err != nil {
		return nil, err
	}
	if snap != nil {
		if err := r.rd.(connector.CheckpointedReader).RestorePosition(snap.Parts[routePart]); err != nil {
			return nil, errors.Join(err, r.rd.Close())
		}
	}
	return r, nil
}

// run reads and routes until ctx is done, answering the member's
// requests (snapshot) between reads.
func (r *router) run(ctx context.Context) {
	defer r.rd.Close()
	for {
		select {
		case c := <-r.req:
			c <- r.answer()
			continue
		case <-ctx.Done():
			return
		default:
		}
		if r.done || r.err != nil {
			select {
			case c := <-r.req:
				c <- r.answer()
			case <-ctx.Done():
				return
			}
			continue
		}
		st, err := r.rd.Read(ctx, r)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			r.err = err
		case st == connector.Done:
			r.done = true
		}
	}
}

func (r *router) answer() routed {
	if r.err != nil {
		return routed{err: r.err}
	}
	pos, err := r.rd.(connector.CheckpointedReader).SnapshotPosition()
	return routed{recs: r.answerRecords(), pos: pos, done: r.done, err: err}
}

// answerRecords hands over the records routed since the last answer.
func (r *router) answerRecords() []*kgo.Record {
	out := r.out
	r.out = nil
	return out
}

// snapshot asks the router for its routed records and position (nil
// when it stopped).
func (r *router) snapshot(quit <-chan struct{}) (routed, bool) {
	c := make(chan routed, 1)
	select {
	case r.req <- c:
		return <-c, true
	case <-quit:
		return routed{}, false
	}
}

// Emit routes a stamped line to the repartition partition of its key.
func (r *router) Emit(_ etime.Time, l connector.Line) {
	key := r.bytes(len(r.key))
	copy(key, r.key)
	r.probe.Key = key
	part := int32(r.keys.Partition(&r.probe, r.nout))
	var src [48]byte
	v := appendSrc(src[:0], r.t.part, l.No-1)
	hv := r.bytes(len(v))
	copy(hv, v)
	if len(r.recs) == cap(r.recs) {
		r.recs, r.hdrs = make([]kgo.Record, 0, routeSlab), make([]kgo.RecordHeader, 0, routeSlab)
	}
	r.hdrs = append(r.hdrs, kgo.RecordHeader{Key: srcHeader, Value: hv})
	r.recs = append(r.recs, kgo.Record{Topic: r.rt, Partition: part, Key: key, Value: l.Data(), Timestamp: time.UnixMilli(int64(l.Time)),
		Headers: r.hdrs[len(r.hdrs)-1 : len(r.hdrs) : len(r.hdrs)]})
	r.out = append(r.out, &r.recs[len(r.recs)-1])
}

// routeSlab is the number of records (and headers) of a router's slab.
const routeSlab = 256

// bytes cuts n bytes from the router's byte slab.
func (r *router) bytes(n int) []byte {
	if cap(r.buf)-len(r.buf) < n {
		r.buf = make([]byte, 0, max(n, 32<<10))
	}
	b := r.buf[len(r.buf) : len(r.buf)+n : len(r.buf)+n]
	r.buf = r.buf[:len(r.buf)+n]
	return b
}

// srcValue is a routed record's srcHeader: its input partition and offset.
func srcValue(p int32, off int64) []byte { return appendSrc(nil, p, off) }

// appendSrc appends srcValue(p, off) to b.
func appendSrc(b []byte, p int32, off int64) []byte {
	b = strconv.AppendInt(b, int64(p), 10)
	return strconv.AppendInt(append(b, ' '), off, 10)
}

// DeadLetter routes a record the reader could not stamp, with its reason
// and detail (header deadHeader), to repartition partition 0, whose
// window task makes it the job's dead letter as it is: a decision that
// depends on the clock (timestamp_future) is the route task's.
func (r *router) DeadLetter(reason, detail string, rec any) {
	kr, ok := rec.(*kafkaio.Record)
	if !ok {
		r.err = cmp.Or(r.err, fmt.Errorf("group: a dead letter of the kafka reader is a %T, not a *kafkaio.Record", rec))
		return
	}
	r.out = append(r.out, &kgo.Record{Topic: r.rt, Partition: 0, Key: kr.Key, Value: kr.Value, Timestamp: kr.Timestamp.Wall(),
		Headers: []kgo.RecordHeader{{Key: srcHeader, Value: srcValue(kr.Partition, kr.Offset)}, {Key: deadHeader, Value: fmt.Appendf(nil, "%s %s", reason, detail)}}})
}

// Lost routes the reader's report of records lost before it read them
// (a retention gap after a restored position: connector.LossOutput), in
// a record with header lostHeader, to repartition partition 0, whose
// window task counts them in its summary as a single process counts its
// own (lost_before_read). The report is in the route task's transaction:
// a route task that restores the same position again reports it again,
// and only the committed report counts.
func (r *router) Lost(n int64, detail string) {
	r.out = append(r.out, &kgo.Record{Topic: r.rt, Partition: 0, Value: []byte{},
		Headers: []kgo.RecordHeader{{Key: lostHeader, Value: fmt.Appendf(nil, "%d %s", n, detail)}}})
}

// EmitWatermark, MarkIdle and MarkActive send the partition's watermark
// and status to every window task, in a marker after the records routed
// before it: a window task's watermark follows the route tasks' as the
// single process's channel follows its partitions'.
func (r *router) EmitWatermark(wm etime.Time) {
	if wm > r.wm {
		r.wm = wm
		r.mark()
	}
}

func (r *router) MarkIdle() {
	if !r.idle {
		r.idle = true
		r.mark()
	}
}

func (r *router) MarkActive() {
	if r.idle {
		r.idle = false
		r.mark()
	}
}

// mark routes a marker of the router's watermark and status to every
// repartition partition.
func (r *router) mark() {
	for p := range int32(r.nout) {
		r.out = append(r.out, marker{From: r.t.part, WM: r.wm, Idle: r.idle}.record(r.rt, p))
	}
}

// rtReader is a window task's source: its repartition partition's
// routed records, and a watermark from the route tasks' markers.
type rtReader struct {
	inbox *inbox
	topic string // the input topic (dead letters name it)
	nup   int    // route tasks
	stamp func(connector.Line) (etime.Time, error)
	bound bool // stop_at_end: Done once every route task is done
	pos   rtPosition
	idle  bool
}

// rtPosition is a window task's reader position: the next repartition
// offset, the watermark emitted and each route task's last marker.
type rtPosition struct {
	Next int64      `json:"next"`
	WM   etime.Time `json:"wm"`
	Up   []marker   `json:"up"`
}

func openRTReader(so connector.SourceOpen, t *task, topic string, nup int) (connector.OpenedSource, error) {
	if so.Splits == nil || so.Splits.Stamp == nil {
		return connector.OpenedSource{}, errors.New("group: a window task's source needs the job's Stamp")
	}
	bound := so.Settings.Bool("kafka.stop_at_end")
	r := &rtReader{inbox: t.inbox, topic: topic, nup: nup, stamp: so.Splits.Stamp, bound: bound,
		pos: rtPosition{Next: t.from, WM: etime.MinTime}}
	return connector.OpenedSource{Source: rtSource{r}, Name: "kafka:" + topic, Bounded: bound}, nil
}

type rtSource struct{ r *rtReader }

func (s rtSource) Open(context.Context, int, int) (connector.Reader[connector.Line], error) {
	return s.r, nil
}

// Read implements connector.Reader.
func (r *rtReader) Read(ctx context.Context, out connector.Output[connector.Line]) (connector.ReadStatus, error) {
	pctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	f := r.inbox.PollRecords(pctx, 4096)
	cancel()
	n := 0
	var err error
	f.EachRecord(func(kr *kgo.Record) {
		if err != nil || kr.Offset < r.pos.Next {
			return
		}
		r.pos.Next = kr.Offset + 1
		if kr.Attrs.IsControl() {
			return
		}
		mk, isMarker, merr := parseMarker(kr)
		if merr != nil {
			err = merr
			return
		}
		if isMarker {
			r.hear(mk)
			r.advance(out) // the records after the marker see its watermark
			return
		}
		srcPart, srcOff := int32(0), kr.Offset
		var dead []byte
		for _, h := range kr.Headers {
			switch h.Key {
			case srcHeader:
				var p, o int64
				if _, e := fmt.Sscanf(string(h.Value), "%d %d", &p, &o); e == nil {
					srcPart, srcOff = int32(p), o
				}
			case deadHeader:
				dead = h.Value
			case lostHeader:
				// A route task's input records lost before it read them.
				num, detail, _ := strings.Cut(string(h.Value), " ")
				if lost, e := strconv.ParseInt(num, 10, 64); e == nil {
					connector.ReportLost(out, lost, detail)
				}
				return
			}
		}
		rec := &kafkaio.Record{Topic: r.topic, Partition: srcPart, Offset: srcOff, Key: kr.Key, Value: kr.Value, Timestamp: etime.FromTime(kr.Timestamp)}
		if dead != nil {
			reason, detail, _ := strings.Cut(string(dead), " ")
			if d, ok := out.(connector.DeadLetterOutput); ok {
				d.DeadLetter(reason, detail, rec)
			}
			return
		}
		l := connector.Line{Kind: connector.Data, Text: kr.Value, No: srcOff + 1, Split: srcPart, Time: etime.FromTime(kr.Timestamp), Unchecked: true}
		ts, serr := r.stamp(l)
		if serr != nil {
			if d, ok := out.(connector.DeadLetterOutput); ok {
				reason, detail := kafkaio.DeadLetterReason(serr)
				d.DeadLetter(reason, fmt.Sprintf("%s (topic %s partition %d offset %d)", detail, r.topic, srcPart, srcOff), rec)
			}
			return
		}
		out.Emit(ts, l)
		n++
	})
	if err != nil {
		return connector.Waiting, err
	}
	if r.bound && r.allDone() && r.inbox.empty() {
		return connector.Done, nil
	}
	if n > 0 {
		return connector.Emitted, nil
	}
	return connector.Waiting, nil
}

// hear keeps route task mk.From's newest marker.
func (r *rtReader) hear(mk marker) {
	for i := range r.pos.Up {
		if r.pos.Up[i].From == mk.From {
			r.pos.Up[i] = mk
			return
		}
	}
	r.pos.Up = append(r.pos.Up, mk)
}

func (r *rtReader) allDone() bool {
	if len(r.pos.Up) < r.nup {
		return false
	}
	for _, mk := range r.pos.Up {
		if !mk.Done {
			return false
		}
	}
	return true
}

// advance emits the watermark the markers allow, once every route task
// was heard from: the minimum over the active ones; when every one not
// done is idle, the largest of theirs, and the channel is idle.
func (r *rtReader) advance(out connector.Output[connector.Line]) {
	if len(r.pos.Up) < r.nup {
		return
	}
	low, high, active, waiting := etime.MaxTime, etime.MinTime, false, false
	for _, mk := range r.pos.Up {
		if mk.Done {
			continue
		}
		waiting = true
		high = max(high, mk.WM)
		if !mk.Idle {
			active = true
			low = min(low, mk.WM)
		}
	}
	if !waiting {
		return // every route task is done: the end of input's final watermark follows
	}
	wm := low
	if !active {
		wm = high
	}
	if wm > r.pos.WM {
		r.pos.WM = wm
		out.EmitWatermark(wm)
	}
	if !active && !r.idle {
		r.idle = true
		out.MarkIdle()
	} else if active && r.idle {
		r.idle = false
		out.MarkActive()
	}
}

func (r *rtReader) Close() error { return nil }

// SnapshotPosition implements connector.CheckpointedReader.
func (r *rtReader) SnapshotPosition() ([]byte, error) { return json.Marshal(r.pos) }

// RestorePosition implements connector.CheckpointedReader.
func (r *rtReader) RestorePosition(b []byte) error {
	if err := json.Unmarshal(b, &r.pos); err != nil {
		return fmt.Errorf("group: a window task's position: %w", err)
	}
	return nil
}

// rtPositionOf reads a window task's position from its checkpoint part.
func rtPositionOf(b []byte) (rtPosition, error) {
	var p rtPosition
	err := json.Unmarshal(b, &p)
	return p, err
}

// empty reports whether the inbox holds no record.
func (b *inbox) empty() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.recs) == 0
}
