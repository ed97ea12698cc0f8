// Package genio is a synthetic source of orders for demos, tests and
// benchmarks. Each record is a JSON object
//
//	{"order_id": 17, "user_id": "u042", "amount": 250, "ts": 1767225600000}
//
// generated as a pure function of (seed, record index), so the stream is
// the same whatever the number of channels: channel c of n emits the
// records whose index is c modulo n, in index order.
//
// By default the records come as fast as they are read, a backlog whose
// timestamps Rate spaces. Options.Pace = Wall paces them by processing
// time instead, Rate records per second of the Clock, for live load
// tests; Options.StartNow puts their timestamps at the clock.
package genio

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/fileio"
	"github.com/weirstream/weir/etime"
)

// Pace is how the generator spaces its records in processing time.
type Pace uint8

const (
	// Unpaced emits records as fast as they are read (the default): Rate
	// spaces only their timestamps.
	Unpaced Pace = iota
	// Wall emits Rate records per second of the Clock, counted from the
	// clock's time when the first channel first reads: record i is due
	// (i - i0)/Rate seconds after it, i0 being the record a reader starts
	// at (0, or the position it was restored to, rounded down to a
	// multiple of the channel count). A reader with nothing due returns
	// connector.Waiting, never blocks, and emits what is due in batches, so it
	// keeps its rate at any speed the job reads; behind schedule (the job
	// was slower) it emits as fast as it is read until it is back on it,
	// and says so (connector.BacklogReporter).
	Wall
)

// Band is one band of the disorder mix: a share of the records is delayed
// by a uniform amount in [Min, Max] (milliseconds of event time).
type Band struct {
	Share    float64
	Min, Max etime.Duration
}

// Options configures the generator.
type Options struct {
	// Records is the number of records.
	Records int64
	// Rate is records per second of event time; record i's undelayed
	// timestamp is Start + i*1000/Rate ms.
	Rate float64
	// Keys is the number of distinct user_id values.
	Keys int
	// Hot is the share of records whose user_id is u0, a hot key; the
	// others spread evenly over the keys.
	Hot float64
	// Start is the event time of record 0.
	Start etime.Time
	// Disorder lists the delay bands; records in no band are in order.
	Disorder []Band
	// Bad is the share of records made bad on purpose: malformed JSON, a
	// missing timestamp, seconds instead of milliseconds, a timestamp ten
	// years ahead, a non-numeric amount or a missing user_id.
	Bad float64
	// Seed selects the stream.
	Seed uint64
	// Batch is the number of records per Read (default 256).
	Batch int
	// Final and Stop are as in fileio.Options.
	Final func() bool
	Stop  func() bool
	// Pace spaces the records in processing time (default Unpaced).
	Pace Pace
	// StartNow replaces Start with the Clock's time when the first
	// channel first reads, and counts record i's undelayed timestamp from
	// the record its reader starts at (as Pace's schedule does), so that
	// with Wall the timestamps follow the clock, also after a restore.
	// The timestamps then depend on when the generator runs.
	StartNow bool
	// Clock is processing time, for Pace and StartNow; nil is the wall
	// clock.
	Clock clock.Clock
}

// Validate refuses options the generator cannot run with.
func (o *Options) Validate() error {
	switch {
	case !(o.Rate > 0) || math.IsInf(o.Rate, 0):
		return fmt.Errorf("genio: Options.Rate %v must be a positive number of records per second", o.Rate)
	case o.Keys <= 0:
		return fmt.Errorf("genio: Options.Keys %d must be positive", o.Keys)
	case o.Records < 0:
		return fmt.Errorf("genio: Options.Records %d must not be negative", o.Records)
	case o.Pace > Wall:
		return fmt.Errorf("genio: Options.Pace %d is neither Unpaced nor Wall", o.Pace)
	}
	return nil
}

// New returns the generator as a source of lines.
func New(o Options) (connector.Source[fileio.Line], error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Batch <= 0 {
		o.Batch = fileio.DefaultBatch
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	return &source{o: o}, nil
}

// source is the generator; its readers share the time they count from.
type source struct {
	o     Options
	once  sync.Once
	start time.Time // the Clock's time at the first Read of any channel
}

// begin returns the time the readers count from, taking it at the first
// call. It is called from every channel's goroutine.
func (s *source) begin() time.Time {
	s.once.Do(func() { s.start = s.o.Clock.Now() })
	return s.start
}

func (s *source) Open(_ context.Context, ch, n int) (connector.Reader[fileio.Line], error) {
	return &reader{src: s, o: s.o, i: int64(ch), step: int64(n), ch: ch}, nil
}

type reader struct {
	src  *source
	o    Options
	i    int64
	step int64
	ch   int
	buf  []byte
	// Set at the first Read: started; t0, the schedule's start, and
	// base, the record the reader starts at (i0 of Wall); with StartNow,
	// o.Start is t0 and timestamps count from tsBase = base (else 0).
	started      bool
	t0           time.Time
	base, tsBase int64
	// backlog: the last Read left records due (Backlog).
	backlog bool
}

// mix is splitmix64's finalizer: a well-spread hash of x.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// unit is a uniform float in [0, 1) from h.
func unit(h uint64) float64 { return float64(h>>11) / (1 << 53) }

func (r *reader) Read(_ context.Context, out connector.Output[fileio.Line]) (connector.ReadStatus, error) {
	r.backlog = false
	if r.i >= r.o.Records || (r.o.Stop != nil && r.o.Stop()) {
		if r.o.Final == nil || r.o.Final() {
			out.EmitWatermark(etime.MaxTime)
		}
		return connector.Done, nil
	}
	if !r.started {
		r.start()
	}
	n, due := r.o.Batch, int64(math.MaxInt64)
	if r.o.Pace == Wall {
		// Records up to index due are due now (counted from the start,
		// so that no rounding adds up).
		if f := float64(r.o.Clock.Now().Sub(r.t0)) * r.o.Rate / float64(time.Second); f < 1<<62 {
			due = r.base + int64(f)
		}
		if r.i > due {
			return connector.Waiting, nil
		}
		if d := (due-r.i)/r.step + 1; d < int64(n) {
			n = int(d)
		}
	}
	for k := 0; k < n && r.i < r.o.Records; k++ {
		out.Emit(etime.MinTime, fileio.Line{Kind: fileio.Data, Channel: r.ch, No: r.i + 1, Text: r.record(r.i)})
		r.i += r.step
	}
	// Unpaced, every read is of a backlog (as for a reader that does not
	// tell); paced, while records are still due.
	r.backlog = r.o.Pace != Wall || r.i <= due && r.i < r.o.Records
	return connector.Emitted, nil
}

// start sets the reader's schedule at its first Read, after a restore.
func (r *reader) start() {
	r.started = true
	if r.o.Pace == Unpaced && !r.o.StartNow {
		return
	}
	r.t0 = r.src.begin()
	r.base = r.i - int64(r.ch)
	if r.o.StartNow {
		r.o.Start = etime.FromTime(r.t0)
		r.tsBase = r.base
	}
}

// Backlog implements connector.BacklogReporter: an unpaced reader's records
// are a backlog while it emits; a paced one's while it is behind
// schedule.
func (r *reader) Backlog() bool { return r.backlog }

// record renders record i.
func (r *reader) record(i int64) []byte {
	o := &r.o
	h := mix(o.Seed*0x100000001b3 ^ uint64(i))
	ts := o.Start.Add(etime.Duration(float64(i-r.tsBase) * 1000 / o.Rate))
	p := unit(mix(h ^ 1))
	for _, b := range o.Disorder {
		if p < b.Share {
			ts = ts.Add(-(b.Min + etime.Duration(unit(mix(h^2))*float64(b.Max-b.Min+1))))
			break
		}
		p -= b.Share
	}
	user := mix(h^3) % uint64(o.Keys)
	if o.Hot > 0 && unit(mix(h^7)) < o.Hot {
		user = 0
	}
	amount := 1 + int64(mix(h^4)%500)
	kind := -1
	if unit(mix(h^5)) < o.Bad {
		kind = int(mix(h^6) % 6)
	}
	b := r.buf[:0]
	b = append(b, `{"order_id":`...)
	b = strconv.AppendInt(b, i, 10)
	if kind != 5 {
		b = append(b, `,"user_id":"u`...)
		b = appendPadded(b, user)
		b = append(b, '"')
	}
	b = append(b, `,"amount":`...)
	if kind == 4 {
		b = append(b, '"')
		b = strconv.AppendInt(b, amount, 10)
		b = append(b, '"')
	} else {
		b = strconv.AppendInt(b, amount, 10)
	}
	switch kind {
	case 0:
		b = append(b, `,"ts":`...) // malformed: the value is missing
	case 1:
		// no timestamp
	case 2:
		b = append(b, `,"ts":`...)
		b = strconv.AppendInt(b, int64(ts)/1000, 10) // seconds
	case 3:
		b = append(b, `,"ts":`...)
		b = strconv.AppendInt(b, int64(ts.Add(10*365*24*3600*1000)), 10)
	default:
		b = append(b, `,"ts":`...)
		b = strconv.AppendInt(b, int64(ts), 10)
	}
	if kind != 0 {
		b = append(b, '}')
	}
	r.buf = b
	return append([]byte(nil), b...)
}

func appendPadded(b []byte, u uint64) []byte {
	switch {
	case u < 10:
		b = append(b, "00"...)
	case u < 100:
		b = append(b, '0')
	}
	return strconv.AppendUint(b, u, 10)
}

func (r *reader) Close() error { return nil }

// SnapshotPosition implements connector.CheckpointedReader: the index of the
// next record of this channel.
func (r *reader) SnapshotPosition() ([]byte, error) {
	return strconv.AppendInt([]byte("genio1:"), r.i, 10), nil
}

// RestorePosition implements connector.CheckpointedReader.
func (r *reader) RestorePosition(pos []byte) error {
	s, ok := strings.CutPrefix(string(pos), "genio1:")
	i, err := strconv.ParseInt(s, 10, 64)
	if !ok || err != nil || i < 0 || i%r.step != int64(r.ch) && i < r.o.Records {
		return fmt.Errorf("genio: channel %d cannot resume at %q: not a position of this generator and channel", r.ch, pos)
	}
	r.i = i
	return nil
}

var _ connector.CheckpointedReader = (*reader)(nil)
