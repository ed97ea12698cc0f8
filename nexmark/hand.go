package nexmark

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/etime"
)

// The hand-written loops: what a programmer would write for each query
// without an engine, over the events in order, with the same watermark
// (the largest timestamp so far - Bound - 1) and the same window rules.
// They are the benchmark's baseline and its correctness oracle. They
// assume no event is late (the generator's disorder stays inside Bound:
// CheckDisorder); weir would drop late events at moments that depend on
// its periodic watermark, which no loop can replay.

var bound = etime.FromDuration(Bound)

// watermark tracks the hand loops' watermark.
type watermark struct{ max etime.Time }

func (w *watermark) see(ts etime.Time) etime.Time {
	w.max = max(w.max, ts)
	return w.max - etime.Time(bound) - 1
}

func handBids(events []Event, fn func(b *Bid)) {
	for i := range events {
		if e := &events[i]; e.Kind == KindBid {
			fn(&e.Bid)
		}
	}
}

func handQ0(events []Event, emit func(*Row)) {
	handBids(events, func(b *Bid) {
		r := Row{A: b.Auction, B: b.Bidder, C: b.Price, End: b.DateTime}
		emit(&r)
	})
}

func handQ1(events []Event, emit func(*Row)) {
	handBids(events, func(b *Bid) {
		r := Row{A: b.Auction, B: b.Bidder, C: b.Price * 908 / 1000, End: b.DateTime}
		emit(&r)
	})
}

func handQ2(events []Event, emit func(*Row)) {
	handBids(events, func(b *Bid) {
		if b.Auction%auctionSkip == 0 {
			r := Row{A: b.Auction, C: b.Price}
			emit(&r)
		}
	})
}

// windowStart is the start of the window of size that holds ts (the
// timestamps here are positive).
func windowStart(ts etime.Time, size etime.Duration) etime.Time { return ts - ts%etime.Time(size) }

// tumbling keeps one value per open tumbling window, the newest first in
// line for the next element.
type tumbling[V any] struct {
	size etime.Duration
	open []tumble[V]
	last int
	make func() V
}

type tumble[V any] struct {
	start etime.Time
	v     V
}

func (t *tumbling[V]) get(ts etime.Time) *V {
	s := windowStart(ts, t.size)
	if t.last < len(t.open) && t.open[t.last].start == s {
		return &t.open[t.last].v
	}
	for i := range t.open {
		if t.open[i].start == s {
			t.last = i
			return &t.open[i].v
		}
	}
	t.open = append(t.open, tumble[V]{s, t.make()})
	t.last = len(t.open) - 1
	return &t.open[t.last].v
}

// fire hands every window that ends at or before wm+1 to fn, oldest
// first, and forgets it.
func (t *tumbling[V]) fire(wm etime.Time, fn func(start, end etime.Time, v *V)) {
	for {
		oldest := -1
		for i := range t.open {
			if end := t.open[i].start + etime.Time(t.size); end-1 <= wm && (oldest < 0 || t.open[i].start < t.open[oldest].start) {
				oldest = i
			}
		}
		if oldest < 0 {
			return
		}
		w := t.open[oldest]
		t.open = append(t.open[:oldest], t.open[oldest+1:]...)
		t.last = 0
		fn(w.start, w.start+etime.Time(t.size), &w.v)
	}
}

func handCount(events []Event, emit func(*Row)) {
	t := tumbling[map[int64]int64]{size: windowSize, make: func() map[int64]int64 { return map[int64]int64{} }}
	var wm watermark
	out := func(start, end etime.Time, m *map[int64]int64) {
		for a, n := range *m {
			r := Row{Start: start, End: end, A: a, B: n}
			emit(&r)
		}
	}
	handBids(events, func(b *Bid) {
		(*t.get(b.DateTime))[b.Auction]++
		t.fire(wm.see(b.DateTime), out)
	})
	t.fire(etime.MaxTime, out)
}

func handQ5(events []Event, emit func(*Row)) {
	// Counts per 2 s pane; a window of 5 panes merges them when it fires.
	panes := tumbling[map[int64]int64]{size: slide, make: func() map[int64]int64 { return map[int64]int64{} }}
	var wm watermark
	merged := map[int64]int64{}
	var nextEnd etime.Time // the end of the next window to fire
	fired := false
	fire := func(upTo etime.Time) {
		if len(panes.open) == 0 {
			return
		}
		if !fired {
			// Until a window has fired, the first one is that of the
			// oldest pane so far (a later bid may open an older pane).
			first := panes.open[0].start
			for _, p := range panes.open {
				first = min(first, p.start)
			}
			nextEnd = first + etime.Time(slide)
		}
		for nextEnd-1 <= upTo && len(panes.open) > 0 {
			fired = true
			start := nextEnd - etime.Time(windowSize)
			clear(merged)
			for _, p := range panes.open {
				if p.start >= start && p.start < nextEnd {
					for a, n := range p.v {
						merged[a] += n
					}
				}
			}
			var best int64
			for _, n := range merged {
				best = max(best, n)
			}
			for a, n := range merged {
				if n == best {
					r := Row{Start: start, End: nextEnd, A: a, B: n}
					emit(&r)
				}
			}
			// The oldest pane is in no later window.
			for i := 0; i < len(panes.open); i++ {
				if panes.open[i].start < start+etime.Time(slide) {
					panes.open = append(panes.open[:i], panes.open[i+1:]...)
					i--
				}
			}
			panes.last = 0
			nextEnd += etime.Time(slide)
		}
	}
	handBids(events, func(b *Bid) {
		(*panes.get(b.DateTime))[b.Auction]++
		fire(wm.see(b.DateTime))
	})
	fire(etime.MaxTime)
}

func handQ7(events []Event, emit func(*Row)) {
	t := tumbling[top]{size: windowSize, make: func() top { return top{} }}
	var wm watermark
	out := func(start, end etime.Time, v *top) {
		for _, r := range v.rows {
			r.Start, r.End = start, end
			emit(&r)
		}
	}
	handBids(events, func(b *Bid) {
		w := t.get(b.DateTime)
		switch {
		case len(w.rows) == 0 || b.Price > w.max:
			w.max = b.Price
			w.rows = append(w.rows[:0], Row{A: b.Auction, B: b.Bidder, C: b.Price})
		case b.Price == w.max:
			w.rows = append(w.rows, Row{A: b.Auction, B: b.Bidder, C: b.Price})
		}
		t.fire(wm.see(b.DateTime), out)
	})
	t.fire(etime.MaxTime, out)
}

type newUsers struct {
	people  []*Person
	sellers map[int64]struct{}
}

func handQ8(events []Event, emit func(*Row)) {
	t := tumbling[newUsers]{size: windowSize, make: func() newUsers { return newUsers{sellers: map[int64]struct{}{}} }}
	var wm watermark
	out := func(start, end etime.Time, v *newUsers) {
		for _, p := range v.people {
			if _, ok := v.sellers[p.ID]; ok {
				r := Row{Start: start, End: end, A: p.ID, S: p.Name}
				emit(&r)
			}
		}
	}
	for i := range events {
		e := &events[i]
		switch e.Kind {
		case KindPerson:
			w := t.get(e.Person.DateTime)
			w.people = append(w.people, e.Person)
		case KindAuction:
			t.get(e.Auction.DateTime).sellers[e.Auction.Seller] = struct{}{}
		}
		t.fire(wm.see(e.Time()), out)
	}
	t.fire(etime.MaxTime, out)
}

type session struct {
	start, end etime.Time
	n          int64
}

func handQ11(events []Event, emit func(*Row)) {
	open := map[int64][]session{}
	var wm watermark
	var scanned etime.Time
	expire := func(upTo etime.Time) {
		for bidder, ss := range open {
			kept := ss[:0]
			for _, s := range ss {
				if s.end-1 <= upTo {
					r := Row{Start: s.start, End: s.end, A: bidder, B: s.n}
					emit(&r)
				} else {
					kept = append(kept, s)
				}
			}
			if len(kept) == 0 {
				delete(open, bidder)
			} else {
				open[bidder] = kept
			}
		}
	}
	handBids(events, func(b *Bid) {
		// The bid's proto-session [ts, ts+gap) absorbs every session it
		// overlaps or touches (semantics F1).
		s := session{b.DateTime, b.DateTime + etime.Time(sessionGap), 1}
		ss := open[b.Bidder]
		kept := ss[:0]
		for _, o := range ss {
			if o.start <= s.end && s.start <= o.end {
				s.start, s.end, s.n = min(s.start, o.start), max(s.end, o.end), s.n+o.n
			} else {
				kept = append(kept, o)
			}
		}
		open[b.Bidder] = append(kept, s)
		// Expire closed sessions once per second of event time.
		if w := wm.see(b.DateTime); w >= scanned+1000 {
			expire(w)
			scanned = w
		}
	})
	expire(etime.MaxTime)
}

// CheckDisorder refuses a config whose out-of-order groups span Bound or
// more of event time: its late events would make the rows of weir and of
// the loops differ.
func CheckDisorder(c Config) error {
	span := time.Duration(c.OutOfOrderGroupSize) * time.Second * time.Duration(c.Generators) / time.Duration(c.Rate)
	if span >= Bound {
		return fmt.Errorf("nexmark: out-of-order groups of %d events at %d events/s span %s of event time, not less than the watermark bound %s: events would be late", c.OutOfOrderGroupSize, c.Rate, span, Bound)
	}
	return nil
}

func handQ12(events []Event, emit func(*Row)) {
	counts := map[int64]int64{}
	win := func() int64 { return time.Now().UnixMilli() / int64(windowSize) }
	cur := win()
	flush := func() {
		for bidder, n := range counts {
			r := Row{A: bidder, B: n}
			emit(&r)
		}
		clear(counts)
	}
	i := 0
	handBids(events, func(b *Bid) {
		if i++; i%4096 == 0 {
			if w := win(); w != cur {
				flush()
				cur = w
			}
		}
		counts[b.Bidder]++
	})
	flush()
}
