package monitor

import (
	"context"
	"sync"
	"time"

	"github.com/weirstream/weir"
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
	StateBytes    int64    `json:"state_bytes"`
	// Late records per second by outcome (window operators).
	LateAcceptedPerS *float64 `json:"late_accepted_per_s,omitempty"`
	SideOutputPerS   *float64 `json:"side_output_per_s,omitempty"`
	DroppedPerS      *float64 `json:"dropped_per_s,omitempty"`
	LatenessP50S     float64  `json:"lateness_p50_s"`
	LatenessP99S     float64  `json:"lateness_p99_s"`
	FiringDelayP50S  float64  `json:"firing_delay_p50_s"`
	FiringDelayP99S  float64  `json:"firing_delay_p99_s"`
}

// JobPoint is the job as a whole at one moment.
type JobPoint struct {
	RecordsInPerS *float64 `json:"records_in_per_s"`
	Checkpoints   int64    `json:"checkpoints"`
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
	// RecentLate, when set, returns the newest too-late records.
	RecentLate func() []LateEntry
}

// Monitor samples a job every interval into a ring of points and keeps
// the newest snapshot; subscribers are told of each new point. Run owns
// its goroutine; it stops when ctx is done.
type Monitor struct {
	o Options

	mu struct {
		sync.Mutex
		ring   []Point
		next   int
		full   bool
		snap   *Snapshot
		prev   *Snapshot
		prevAt time.Time
		since  map[string]time.Time // holder chain end -> since when
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
	m := &Monitor{o: o}
	m.mu.ring = make([]Point, o.History)
	m.mu.since = map[string]time.Time{}
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
	s := take(env, m.o.Info, now)
	if m.o.RecentLate != nil {
		s.RecentLate = m.o.RecentLate()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.holdingFor(&s, now)
	p := point(&s, m.mu.prev, now.Sub(m.mu.prevAt))
	m.mu.ring[m.mu.next] = p
	m.mu.next = (m.mu.next + 1) % len(m.mu.ring)
	m.mu.full = m.mu.full || m.mu.next == 0
	m.mu.prev, m.mu.prevAt = &s, now
	m.mu.snap = &s
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

// Snapshot returns the newest snapshot (nil before the first sample).
func (m *Monitor) Snapshot() *Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.snap
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

// point derives a history point from a snapshot and the previous one.
func point(s, prev *Snapshot, dt time.Duration) Point {
	p := Point{T: s.Now, Ops: map[string]OpPoint{}, Job: JobPoint{Checkpoints: s.Totals.Checkpoints}}
	secs := dt.Seconds()
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
			o.FiringDelayP50S, o.FiringDelayP99S = w.FiringDelayP50S, w.FiringDelayP99S
		}
		if po := prevOps[op.Name]; po != nil && len(po.Subtasks) == len(op.Subtasks) {
			var busy, bp float64
			var recs int64
			for j := range op.Subtasks {
				a, b := &op.Subtasks[j], &po.Subtasks[j]
				busy = max(busy, (a.BusyS-b.BusyS)/secs)
				bp = max(bp, (a.BackpressuredS-b.BackpressuredS)/secs)
				recs += a.RecordsIn - b.RecordsIn
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
