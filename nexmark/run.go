package nexmark

import (
	"context"
	"sync"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/state"
)

// Generate returns the first n events of a generator with config c.
func Generate(c Config, n int) ([]Event, error) {
	g, err := NewGenerator(c)
	if err != nil {
		return nil, err
	}
	events := make([]Event, n)
	for i := range events {
		events[i], _ = g.Next()
	}
	return events, nil
}

// block is how many consecutive events a source channel reads before the
// next channel's turn.
const block = 256

// source reads events over any number of channels: channel c of n reads
// the blocks b with b % n == c, so all channels move through event time
// together. With a generator instead of events it generates them as it
// reads (the mode that times generation too).
type source struct {
	events []Event
	gen    *Generator
	n      int64
	// linger: after the last event, wait until processing time passes
	// the end of the current processing-time window (Query.Linger).
	linger bool
	done   *finish
}

// finish records when the last channel emitted its last event.
type finish struct {
	mu   sync.Mutex
	last time.Time
}

func (f *finish) record(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.After(f.last) {
		f.last = t
	}
}

func (s source) Open(_ context.Context, ch, n int) (weir.SourceReader[*Event], error) {
	return &reader{s: s, next: int64(ch) * block, step: int64(n) * block}, nil
}

type reader struct {
	s          source
	next, step int64
	until      time.Time // lingering until then
}

func (r *reader) Read(_ context.Context, out weir.SourceOutput[*Event]) (weir.ReadStatus, error) {
	if r.next >= r.s.n {
		if !r.s.linger {
			return weir.Done, nil
		}
		now := time.Now()
		if r.until.IsZero() {
			r.s.done.record(now)
			// Past the end of the processing-time window open a second
			// from now: the window operator has taken every queued
			// element by then, into a window that has fired.
			size := windowSize.Std()
			r.until = now.Add(time.Second).Truncate(size).Add(size + 200*time.Millisecond)
		}
		if now.Before(r.until) {
			time.Sleep(min(r.until.Sub(now), 10*time.Millisecond))
			return weir.Waiting, nil
		}
		return weir.Done, nil
	}
	end := min(r.next+block, r.s.n)
	if r.s.gen != nil {
		// Generated events live in a block of their own: downstream may
		// keep pointers to them.
		evs := make([]Event, end-r.next)
		for i := range evs {
			evs[i] = r.s.gen.Event(r.next + int64(i))
			out.Emit(evs[i].Time(), &evs[i])
		}
	} else {
		for i := r.next; i < end; i++ {
			e := &r.s.events[i]
			out.Emit(e.Time(), e)
		}
	}
	r.next += r.step
	return weir.Emitted, nil
}

func (r *reader) Close() error { return nil }

// Result is what a run of a query produced.
type Result struct {
	// Digest fingerprints the rows (for Q12, the per-bidder totals).
	Digest Digest
	// Rows holds the rows when they were kept, sorted.
	Rows []Row
	// Elapsed is the run's wall time.
	Elapsed time.Duration
	// Events is the number of events read.
	Events int64
}

// Input is what a run reads: pre-generated events, or a generator
// config and a number of events to generate while running.
type Input struct {
	Events []Event
	// Generate, with N, makes the run generate its events (timed too).
	Generate *Config
	N        int64
	// NewBackend, when set, makes the keyed state of each of RunWeir's
	// operator instances (weir.Options.NewBackend; nil: in memory).
	NewBackend func() state.Backend
}

func (in Input) count() int64 {
	if in.Generate != nil {
		return in.N
	}
	return int64(len(in.Events))
}

// RunWeir runs query q on weir with parallelism p (source channels and
// keyed subtasks). With keep, the result holds the rows.
func RunWeir(ctx context.Context, q *Query, in Input, p int, keep bool) (Result, error) {
	keep = keep || q.Totals != nil
	src := source{events: in.Events, n: in.count(), linger: q.Linger, done: &finish{}}
	if in.Generate != nil {
		g, err := NewGenerator(*in.Generate)
		if err != nil {
			return Result{}, err
		}
		src.gen = g
	}
	env, err := weir.NewEnv(weir.Options{Parallelism: p, NewBackend: in.NewBackend})
	if err != nil {
		return Result{}, err
	}
	events := weir.FromSource[*Event](env, "nexmark", src, weir.SourceOptions{Channels: p})
	events = weir.AssignTimestamps(events, weir.BoundedOutOfOrderness(Bound, func(e *Event) etime.Time { return e.Time() }))
	var mu sync.Mutex
	var res Result
	type sink struct {
		d    Digest
		rows []Row
	}
	var sinks []*sink
	weir.ForEachSubtask(q.Weir(events), func(weir.Subtask) func(etime.Time, Row) {
		s := &sink{}
		mu.Lock()
		sinks = append(sinks, s)
		mu.Unlock()
		return func(_ etime.Time, r Row) {
			s.d.Add(&r)
			if keep {
				s.rows = append(s.rows, r)
			}
		}
	})
	start := time.Now()
	if _, err := env.Execute(ctx); err != nil {
		return Result{}, err
	}
	res.Elapsed = time.Since(start)
	if q.Linger {
		res.Elapsed = src.done.last.Sub(start)
	}
	res.Events = in.count()
	for _, s := range sinks {
		res.Digest.Merge(s.d)
		res.Rows = append(res.Rows, s.rows...)
	}
	res.finish(q, keep)
	return res, nil
}

// RunHand runs query q's hand-written loop. With keep, the result holds
// the rows.
func RunHand(q *Query, in Input, keep bool) Result {
	keep = keep || q.Totals != nil
	var res Result
	start := time.Now()
	events := in.Events
	if in.Generate != nil {
		// Generation is timed with the loop: the loops need the events
		// in order in one slice.
		g, err := NewGenerator(*in.Generate)
		if err != nil {
			panic(err) // RunWeir and the CLI validate the config first
		}
		events = make([]Event, in.N)
		for i := range events {
			events[i] = g.Event(int64(i))
		}
	}
	q.Hand(events, func(r *Row) {
		res.Digest.Add(r)
		if keep {
			res.Rows = append(res.Rows, *r)
		}
	})
	res.Elapsed = time.Since(start)
	res.Events = in.count()
	res.finish(q, keep)
	return res
}

// finish sorts kept rows and, for a query compared on totals, replaces
// the digest by the totals'.
func (r *Result) finish(q *Query, keep bool) {
	if !keep {
		return
	}
	if q.Totals != nil {
		r.Rows = q.Totals(r.Rows)
		r.Digest = Digest{}
		for i := range r.Rows {
			r.Digest.Add(&r.Rows[i])
		}
	}
	SortRows(r.Rows)
}
