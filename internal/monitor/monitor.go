package monitor

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/metrics"
)

// Point is one second of history: per operator, the numbers the
// dashboard charts and the doctor reads.
type Point struct {
	// T is processing time, Unix ms.
	T   int64              `json:"t"`
	Ops map[string]OpPoint `json:"ops"`
	Job JobPoint           `json:"job"`
}

// OpPoint is one operator at one moment. Rates are per second since the
// previous point; nil values were not measurable (no watermark yet, or
// no previous point).
type OpPoint struct {
	LagS    *float64 `json:"lag_s"`
	SpreadS *float64 `json:"spread_s"`
	// Busy and Backpressured are the fraction of the interval the
	// operator's busiest subtask spent so (max over subtasks, as Flink's
	// graph colours).
	Busy          *float64 `json:"busy"`
	Backpressured *float64 `json:"backpressured"`
	RecordsPerS   *float64 `json:"records_per_s"`
	// Skew is the records in over its subtasks in the interval: mean
	// absolute deviation over mean (0: even).
	Skew       *float64 `json:"skew"`
	StateBytes int64    `json:"state_bytes"`
	// OldestTimerAgeS is processing time minus the oldest pending
	// event-time timer (null: none).
	OldestTimerAgeS *float64 `json:"oldest_timer_age_s"`
	// Late records per second by outcome (window operators).
	LateAcceptedPerS *float64 `json:"late_accepted_per_s,omitempty"`
	SideOutputPerS   *float64 `json:"side_output_per_s,omitempty"`
	DroppedPerS      *float64 `json:"dropped_per_s,omitempty"`
	LatenessP50S     float64  `json:"lateness_p50_s"`
	LatenessP99S     float64  `json:"lateness_p99_s"`
	// FiringDelay quantiles are over the firings since the previous
	// point (0: none fired), so that the start of a job or a replay
	// caught up long ago does not weigh on every later point.
	FiringDelayP50S float64 `json:"firing_delay_p50_s"`
	FiringDelayP99S float64 `json:"firing_delay_p99_s"`
}

// JobPoint is the job as a whole at one moment.
type JobPoint struct {
	RecordsInPerS *float64 `json:"records_in_per_s"`
	Checkpoints   int64    `json:"checkpoints"`
	// Backlog sums the source inputs' backlogs (null: none reported).
	Backlog *int64 `json:"backlog"`
	// MaxEventAheadS is the largest event time read minus processing
	// time (null: not reported); positive means future-dated records.
	MaxEventAheadS *float64 `json:"max_event_ahead_s"`
	// Regressions and DeadLetters are totals so far.
	Regressions int64 `json:"regressions"`
	DeadLetters int64 `json:"dead_letters"`
	LateTotal   int64 `json:"late_total"`
	RecordsIn   int64 `json:"records_in"`
	// CheckpointS is the newest checkpoint's start delay, max over
	// subtasks (null: none yet).
	CheckpointDelayS *float64 `json:"checkpoint_delay_s"`
}

// Options configures a Monitor.
type Options struct {
	Info JobInfo
	// Env returns the job's current Env (nil before it is built; a job
	// that restarts returns the new attempt's).
	Env func() *weir.Env
	// Every is the sampling interval (default 1s); History how many
	// points are kept (default 900: 15 minutes).
	Every   time.Duration
	History int
	// Now is processing time (default time.Now).
	Now func() time.Time
	// Extra, when set, returns what the job adds to each snapshot.
	Extra func() Extra
	// Sinks, when set, returns the job's sinks with the call in progress
	// of each; like Env's readers it must never wait for a sink.
	Sinks func() []SinkCall
	// StuckAfter is how long a checkpoint, a sink call or the sampling
	// itself may go on before Stuck reports it (default 10s).
	StuckAfter time.Duration
}

// Monitor samples a job every interval into a ring of points and keeps
// the newest snapshot; subscribers are told of each new point. Run owns
// its goroutine; it stops when ctx is done.
type Monitor struct {
	o Options
	// sampling is when the Sample in progress began (Unix ns; 0: none).
	sampling atomic.Int64

	mu struct {
		sync.Mutex
		ring   []Point
		next   int
		full   bool
		snap   *Snapshot // the newest sample
		snapAt time.Time
		since  map[string]time.Time   // holder chain end -> since when
		ended  time.Time              // when every operator first had the final watermark (zero: not yet)
		idle   map[string]bool        // source input -> idle at the last sample
		flips  map[string][]time.Time // source input -> its idle/active changes
		// read and readAt: a source subtask that reports no inputs of
		// its own, by operator and index: its records in at the last
		// sample, and when that count last grew (channelInput).
		read   map[string]int64
		readAt map[string]time.Time
		subs   map[chan Point]struct{}
	}
}

// New returns a Monitor; call Run to start sampling.
func New(o Options) *Monitor {
	if o.Every <= 0 {
		o.Every = time.Second
	}
	if o.History <= 0 {
		o.History = 900
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.StuckAfter <= 0 {
		o.StuckAfter = 10 * time.Second
	}
	m := &Monitor{o: o}
	m.mu.ring = make([]Point, o.History)
	m.mu.since = map[string]time.Time{}
	m.mu.idle = map[string]bool{}
	m.mu.flips = map[string][]time.Time{}
	m.mu.subs = map[chan Point]struct{}{}
	return m
}

// Run samples until ctx is done.
func (m *Monitor) Run(ctx context.Context) {
	t := time.NewTicker(m.o.Every)
	defer t.Stop()
	for {
		m.Sample()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sample takes a snapshot and a history point now (Run calls it every
// interval; tests call it directly).
func (m *Monitor) Sample() {
	env := m.o.Env()
	if env == nil {
		return
	}
	now := m.o.Now()
	m.sampling.Store(now.UnixNano())
	defer m.sampling.Store(0)
	cs := env.CheckpointStats()
	s := take(env, cs, m.o.Info, now)
	var sinks []SinkCall
	if m.o.Sinks != nil {
		sinks = m.o.Sinks()
	}
	s.Sinks = sinkCalls(sinks, now)
	s.Stuck = FindStuck(cs, sinks, now, m.o.StuckAfter)
	if m.o.Extra != nil {
		x := m.o.Extra()
		s.RecentLate, s.Counters, s.MissingFields = x.RecentLate, x.Counters, x.MissingFields
		if !x.RestoredAt.IsZero() {
			t := x.RestoredAt.UnixMilli()
			s.RestoredAt = &t
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.holdingFor(&s, now)
	m.endedAt(&s, now)
	m.channelInputs(&s, now)
	m.countFlips(&s, now)
	p := point(&s, m.mu.snap, now.Sub(m.mu.snapAt))
	m.mu.ring[m.mu.next] = p
	m.mu.next = (m.mu.next + 1) % len(m.mu.ring)
	m.mu.full = m.mu.full || m.mu.next == 0
	m.mu.snap, m.mu.snapAt = &s, now
	for c := range m.mu.subs {
		select {
		case c <- p:
		default: // a slow reader misses a point, never stalls sampling
		}
	}
}

// holdingFor sets how long each holder's source input has held.
func (m *Monitor) holdingFor(s *Snapshot, now time.Time) {
	seen := map[string]bool{}
	for i := range s.Holders {
		h := &s.Holders[i]
		if len(h.Chain) == 0 {
			continue
		}
		key := h.Operator + "\x00" + h.Chain[len(h.Chain)-1]
		seen[key] = true
		since, ok := m.mu.since[key]
		if !ok {
			since = now
			m.mu.since[key] = now
		}
		h.HoldingForS = now.Sub(since).Seconds()
	}
	for k := range m.mu.since {
		if !seen[k] {
			delete(m.mu.since, k)
		}
	}
}

// endedAt sets when the job's input ended: the first sample in which
// every operator with inputs had the final watermark.
func (m *Monitor) endedAt(s *Snapshot, now time.Time) {
	ended := false
	for i := range s.Operators {
		op := &s.Operators[i]
		if op.Source {
			continue
		}
		if op.Watermark == nil || etime.Time(*op.Watermark) != etime.MaxTime {
			ended = false
			break
		}
		ended = true
	}
	switch {
	case !ended:
		m.mu.ended = time.Time{}
	case m.mu.ended.IsZero():
		m.mu.ended = now
	}
	if ended {
		t := m.mu.ended.UnixMilli()
		s.EndedAt = &t
	}
}

// channelInputs gives a source subtask whose reader reports no inputs
// of its own (a file, a NATS stream: only Kafka's report partitions) its
// channel as its one input, with the subtask's watermark and state, and
// the age of the source's last record as the samples saw its count grow
// (a count per source, not per channel: each channel of a source that
// read records since the last sample is taken to have), so that the
// doctor sees such a source go quiet (D20) as it sees a Kafka partition.
// m.mu is held.
func (m *Monitor) channelInputs(s *Snapshot, now time.Time) {
	if m.mu.read == nil {
		m.mu.read, m.mu.readAt = map[string]int64{}, map[string]time.Time{}
	}
	for i := range s.Operators {
		op := &s.Operators[i]
		if !op.Source {
			continue
		}
		for j := range op.Subtasks {
			st := &op.Subtasks[j]
			if len(st.Inputs) > 0 {
				continue
			}
			key := op.Name + "\x00" + strconv.Itoa(st.Index)
			if op.emitted > m.mu.read[key] {
				m.mu.readAt[key] = now
			}
			m.mu.read[key] = op.emitted
			in := Input{Name: "channel " + strconv.Itoa(st.Index), Watermark: st.Watermark, State: "active"}
			switch st.State {
			case "idle":
				in.State, in.Why = "idle", "the channel is idle"
			case "no watermark yet":
				in.State, in.Why = st.State, st.Why
			}
			if at, ok := m.mu.readAt[key]; ok {
				in.LastRecordAgeS = fptr(now.Sub(at).Seconds())
			}
			st.Inputs = []Input{in}
		}
	}
}

// countFlips counts each source input's idle/active changes over the
// last 10 minutes.
func (m *Monitor) countFlips(s *Snapshot, now time.Time) {
	for i := range s.Operators {
		op := &s.Operators[i]
		if !op.Source {
			continue
		}
		for j := range op.Subtasks {
			for k := range op.Subtasks[j].Inputs {
				in := &op.Subtasks[j].Inputs[k]
				key := op.Name + "\x00" + in.Name
				idle := in.State == "idle"
				if was, ok := m.mu.idle[key]; ok && was != idle {
					m.mu.flips[key] = append(m.mu.flips[key], now)
				}
				m.mu.idle[key] = idle
				fl := m.mu.flips[key]
				for len(fl) > 0 && now.Sub(fl[0]) > 10*time.Minute {
					fl = fl[1:]
				}
				m.mu.flips[key] = fl
				in.IdleFlips = len(fl)
			}
		}
	}
}

// Snapshot returns the newest snapshot (nil before the first sample).
// It never waits for a sample: when one has been blocked for StuckAfter,
// the snapshot returned is the previous one with that said in Stuck.
func (m *Monitor) Snapshot() *Snapshot {
	m.mu.Lock()
	s := m.mu.snap
	m.mu.Unlock()
	if s == nil {
		return nil
	}
	if st, ok := m.sampleStuck(m.o.Now(), s); ok {
		c := *s
		c.Stuck = append(slices.Clip(s.Stuck), st)
		return &c
	}
	return s
}

// Stuck reports, as of now, what has been in progress for StuckAfter or
// longer: the job's checkpoint, a sink call, a sample of the job. It
// waits for none of them (the health check calls it).
func (m *Monitor) Stuck() []Stuck {
	now := m.o.Now()
	var out []Stuck
	if env := m.o.Env(); env != nil {
		var sinks []SinkCall
		if m.o.Sinks != nil {
			sinks = m.o.Sinks()
		}
		out = FindStuck(env.CheckpointStats(), sinks, now, m.o.StuckAfter)
	}
	m.mu.Lock()
	s := m.mu.snap
	m.mu.Unlock()
	if st, ok := m.sampleStuck(now, s); ok {
		out = append(out, st)
	}
	return out
}

// sampleStuck reports a sample in progress for StuckAfter or longer;
// prev is the newest snapshot (nil: none yet).
func (m *Monitor) sampleStuck(now time.Time, prev *Snapshot) (Stuck, bool) {
	began := m.sampling.Load()
	if began == 0 || ranFor(time.Unix(0, began), now) < m.o.StuckAfter {
		return Stuck{}, false
	}
	since := time.Unix(0, began)
	served := "none was taken yet"
	if prev != nil {
		served = "the snapshot served is from " + time.UnixMilli(prev.Now).UTC().Format(time.RFC3339)
	}
	return Stuck{What: "monitor", Name: "sample", Phase: "sample", Since: since.UnixMilli(), ForS: now.Sub(since).Seconds(),
		Why: fmt.Sprintf("taking a snapshot of the job has been blocked for %.0fs; %s", now.Sub(since).Seconds(), served)}, true
}

// History returns the points, oldest first.
func (m *Monitor) History() []Point {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Point
	if m.mu.full {
		out = append(out, m.mu.ring[m.mu.next:]...)
	}
	return append(out, m.mu.ring[:m.mu.next]...)
}

// Subscribe returns a channel that receives each new point, and a
// function that unsubscribes.
func (m *Monitor) Subscribe() (<-chan Point, func()) {
	c := make(chan Point, 4)
	m.mu.Lock()
	m.mu.subs[c] = struct{}{}
	m.mu.Unlock()
	return c, func() {
		m.mu.Lock()
		delete(m.mu.subs, c)
		m.mu.Unlock()
	}
}

// minSkewRecords is the fewest records in an interval whose spread over
// subtasks says anything about skew (a last batch or two does not).
const minSkewRecords = 100

// notStarted is the Why of a subtask of a job not yet built: its
// operators have not restored their counters.
const notStarted = "not started"

// built reports whether snapshot s is of a built job (its operators, a
// resumed job's with its checkpoint's counters).
func built(s *Snapshot) bool {
	for _, op := range s.Operators {
		for _, st := range op.Subtasks {
			if st.Why == notStarted {
				return false
			}
		}
	}
	return true
}

// sameRestore reports whether snapshots a and b are of one restore (or
// of none).
func sameRestore(a, b *Snapshot) bool {
	if a.RestoredAt == nil || b.RestoredAt == nil {
		return a.RestoredAt == b.RestoredAt
	}
	return *a.RestoredAt == *b.RestoredAt
}

// point derives a history point from a snapshot and the previous one.
func point(s, prev *Snapshot, dt time.Duration) Point {
	p := Point{T: s.Now, Ops: map[string]OpPoint{}, Job: JobPoint{Checkpoints: s.Totals.Checkpoints, Regressions: s.Counters["timestamp_regressions"],
		DeadLetters: s.Totals.DeadLetters, LateTotal: s.Totals.SideOutput + s.Totals.Dropped, RecordsIn: s.Totals.RecordsIn}}
	var backlog *int64
	var ahead *float64
	var ckDelay *float64
	for i := range s.Operators {
		for _, st := range s.Operators[i].Subtasks {
			if st.CheckpointDelayS > 0 && (ckDelay == nil || st.CheckpointDelayS > *ckDelay) {
				ckDelay = fptr(st.CheckpointDelayS)
			}
			if !s.Operators[i].Source {
				continue
			}
			for _, in := range st.Inputs {
				if in.Backlog != nil {
					if backlog == nil {
						backlog = new(int64)
					}
					*backlog += *in.Backlog
				}
				if in.MaxEventTime != nil {
					a := float64(*in.MaxEventTime-s.Now) / 1000
					if ahead == nil || a > *ahead {
						ahead = &a
					}
				}
			}
		}
	}
	p.Job.Backlog, p.Job.MaxEventAheadS, p.Job.CheckpointDelayS = backlog, ahead, ckDelay
	secs := dt.Seconds()
	if prev != nil && (!built(prev) || !sameRestore(prev, s)) {
		// A resumed job's counters jump to its checkpoint's as its
		// operators are built and restored, after it opened: an
		// interval from before that (or across another resume) is no
		// rate (the doctor took the jump for a spike of late records,
		// D17, after every resume).
		prev = nil
	}
	var prevOps map[string]*Operator
	if prev != nil && secs > 0 {
		prevOps = map[string]*Operator{}
		for i := range prev.Operators {
			prevOps[prev.Operators[i].Name] = &prev.Operators[i]
		}
		r := float64(s.Totals.RecordsIn-prev.Totals.RecordsIn) / secs
		p.Job.RecordsInPerS = &r
	}
	for i := range s.Operators {
		op := &s.Operators[i]
		o := OpPoint{LagS: op.LagS, SpreadS: op.SpreadS}
		if w := op.Window; w != nil {
			o.StateBytes = w.StateBytes
			o.LatenessP50S, o.LatenessP99S = w.LatenessP50S, w.LatenessP99S
			fd := w.firingDelay
			if po := prevOps[op.Name]; po != nil && po.Window != nil {
				fd.Sub(po.Window.firingDelay)
			}
			o.FiringDelayP50S, o.FiringDelayP99S = fd.Quantile(0.5), fd.Quantile(0.99)
			if w.OldestTimer != nil && *w.OldestTimer < s.Now {
				o.OldestTimerAgeS = fptr(float64(s.Now-*w.OldestTimer) / 1000)
			}
		}
		if po := prevOps[op.Name]; po != nil && len(po.Subtasks) == len(op.Subtasks) {
			var busy, bp float64
			var recs int64
			deltas := make([]float64, len(op.Subtasks))
			for j := range op.Subtasks {
				a, b := &op.Subtasks[j], &po.Subtasks[j]
				busy = max(busy, (a.BusyS-b.BusyS)/secs)
				bp = max(bp, (a.BackpressuredS-b.BackpressuredS)/secs)
				recs += a.RecordsIn - b.RecordsIn
				deltas[j] = float64(a.RecordsIn - b.RecordsIn)
			}
			if recs >= minSkewRecords {
				o.Skew = fptr(metrics.Skew(deltas))
			}
			busy, bp = min(max(busy, 0), 1), min(max(bp, 0), 1)
			o.Busy, o.Backpressured = &busy, &bp
			r := float64(recs) / secs
			o.RecordsPerS = &r
			if w, pw := op.Window, po.Window; w != nil && pw != nil {
				o.LateAcceptedPerS = fptr(float64(w.LateAccepted-pw.LateAccepted) / secs)
				o.SideOutputPerS = fptr(float64(w.SideOutput-pw.SideOutput) / secs)
				o.DroppedPerS = fptr(float64(w.Dropped-pw.Dropped) / secs)
			}
		}
		p.Ops[op.Name] = o
	}
	return p
}
