package nexmark

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/window"
)

// The queries' fixed parameters (docs/NEXMARK.md §2; Flink's window sizes).
const (
	windowSize  etime.Duration = 10_000 // tumbling windows, Q5's size, Q12's processing-time windows
	slide       etime.Duration = 2_000  // Q5
	sessionGap  etime.Duration = 10_000 // Q11
	auctionSkip                = 123    // Q2
	// Bound is the watermark's out-of-orderness bound (DataStream's: the
	// largest timestamp - Bound - 1 ms; the SQL DDL's INTERVAL '4' SECOND
	// is 1 ms later, which no generated event is near enough to tell).
	Bound = 4 * time.Second
)

// Query is one benchmark query: a weir job and a hand-written loop that
// produce the same rows.
type Query struct {
	Name string
	// Rows says what a row holds.
	Rows string
	// Weir builds the query on a stream of timestamped events (pointers:
	// an 80-byte event is not copied from operator to operator).
	Weir func(events weir.Stream[*Event]) weir.Stream[Row]
	// Hand is the hand-written loop over the events in order.
	Hand func(events []Event, emit func(*Row))
	// Totals, when set, turns rows into what is compared (Q12: processing
	// time windows differ from run to run, per-bidder totals do not).
	Totals func(rows []Row) []Row
	// Linger keeps the source open after its last event until processing
	// time has passed the end of the current window, as an unbounded
	// stream would: processing-time windows emit nothing at end of input
	// (semantics J2). The time spent waiting is not counted.
	Linger bool
}

// Queries lists the queries by name.
var Queries = map[string]*Query{
	"q0":    {Name: "q0", Rows: "every bid: A auction, B bidder, C price, End its time", Weir: q0, Hand: handQ0},
	"q1":    {Name: "q1", Rows: "every bid in euro: A auction, B bidder, C price*908/1000, End its time", Weir: q1, Hand: handQ1},
	"q2":    {Name: "q2", Rows: "bids on auctions divisible by 123: A auction, C price", Weir: q2, Hand: handQ2},
	"count": {Name: "count", Rows: "bids per auction per tumbling 10 s window: A auction, B count", Weir: qCount, Hand: handCount},
	"q5":    {Name: "q5", Rows: "the auctions with the most bids per sliding window (10 s, every 2 s): A auction, B count", Weir: q5, Hand: handQ5},
	"q7":    {Name: "q7", Rows: "the highest bids per tumbling 10 s window: A auction, B bidder, C price", Weir: q7, Hand: handQ7},
	"q8":    {Name: "q8", Rows: "people who opened an auction in the tumbling 10 s window they joined in: A person, S name", Weir: q8, Hand: handQ8},
	"q11":   {Name: "q11", Rows: "bids per bidder session (gap 10 s): A bidder, B count", Weir: q11, Hand: handQ11},
	"q12":   {Name: "q12", Rows: "bids per bidder per processing-time 10 s window, compared as totals per bidder: A bidder, B count", Weir: q12, Hand: handQ12, Totals: totalsByA, Linger: true},
}

// QueryNames lists the query names in order.
func QueryNames() []string {
	return []string{"q0", "q1", "q2", "count", "q5", "q7", "q8", "q11", "q12"}
}

// Lookup returns the query called name.
func Lookup(name string) (*Query, error) {
	if q := Queries[strings.ToLower(name)]; q != nil {
		return q, nil
	}
	return nil, fmt.Errorf("nexmark: no query %q (have %s)", name, strings.Join(QueryNames(), ", "))
}

func must(a window.Assigner, err error) window.Assigner {
	if err != nil {
		panic(err) // the queries' constant windows are valid
	}
	return a
}

func bids(events weir.Stream[*Event]) weir.Stream[Bid] {
	return weir.FlatMap(events, func(e *Event, emit func(Bid)) {
		if e.Kind == KindBid {
			emit(e.Bid)
		}
	})
}

func bidRow(b Bid) Row { return Row{A: b.Auction, B: b.Bidder, C: b.Price, End: b.DateTime} }

func q0(events weir.Stream[*Event]) weir.Stream[Row] { return weir.Map(bids(events), bidRow) }

func euro(b Bid) Row {
	r := bidRow(b)
	r.C = b.Price * 908 / 1000
	return r
}

func q1(events weir.Stream[*Event]) weir.Stream[Row] { return weir.Map(bids(events), euro) }

func q2(events weir.Stream[*Event]) weir.Stream[Row] {
	sel := weir.Filter(bids(events), func(b Bid) bool { return b.Auction%auctionSkip == 0 })
	return weir.Map(sel, func(b Bid) Row { return Row{A: b.Auction, C: b.Price} })
}

func countRow(r window.Result[int64, int64]) Row {
	return Row{Start: r.Window.Start, End: r.Window.End, A: r.Key, B: r.Value}
}

// bidField projects each bid to one field (what a SQL engine would keep
// of a bid for a count by that field): 8 bytes cross the exchange instead
// of the bid.
func bidField(events weir.Stream[*Event], field func(*Bid) int64) weir.Stream[int64] {
	return weir.FlatMap(events, func(e *Event, emit func(int64)) {
		if e.Kind == KindBid {
			emit(field(&e.Bid))
		}
	})
}

// countBy counts the values per value in windows of a.
func countBy(vs weir.Stream[int64], a window.Assigner) weir.Stream[window.Result[int64, int64]] {
	k := weir.KeyBy(vs, func(v int64) int64 { return v })
	return weir.Aggregate(weir.Window(k, a, weir.WindowOptions{}), weir.Sum(func(int64) int64 { return 1 })).Results
}

func countPerAuction(events weir.Stream[*Event], a window.Assigner) weir.Stream[window.Result[int64, int64]] {
	return countBy(bidField(events, func(b *Bid) int64 { return b.Auction }), a)
}

func bidder(b *Bid) int64 { return b.Bidder }

func qCount(events weir.Stream[*Event]) weir.Stream[Row] {
	return weir.Map(countPerAuction(events, must(window.Tumbling(windowSize, 0))), countRow)
}

// top keeps the rows with the largest score (ties: all of them).
type top struct {
	max  int64
	rows []Row
}

// MarshalBinary encodes t for state on disk (`--state pebble`) and
// checkpoints: varints, and each row's text with its length.
func (t top) MarshalBinary() ([]byte, error) {
	b := binary.AppendVarint(nil, t.max)
	b = binary.AppendUvarint(b, uint64(len(t.rows)))
	for _, r := range t.rows {
		for _, v := range [...]int64{int64(r.Start), int64(r.End), r.A, r.B, r.C} {
			b = binary.AppendVarint(b, v)
		}
		b = binary.AppendUvarint(b, uint64(len(r.S)))
		b = append(b, r.S...)
	}
	return b, nil
}

// UnmarshalBinary decodes what MarshalBinary wrote.
func (t *top) UnmarshalBinary(b []byte) error {
	bad := errors.New("nexmark: corrupt top rows")
	next := func() int64 {
		v, n := binary.Varint(b)
		if n <= 0 {
			b = nil
			return 0
		}
		b = b[n:]
		return v
	}
	t.max = next()
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return bad
	}
	b = b[k:]
	t.rows = make([]Row, 0, n)
	for range n {
		var r Row
		r.Start, r.End, r.A, r.B, r.C = etime.Time(next()), etime.Time(next()), next(), next(), next()
		l, k := binary.Uvarint(b)
		if b == nil || k <= 0 || l > uint64(len(b)-k) {
			return bad
		}
		r.S = string(b[k : k+int(l)])
		b = b[k+int(l):]
		t.rows = append(t.rows, r)
	}
	if len(b) != 0 {
		return bad
	}
	return nil
}

// topAgg keeps the rows with the largest B, or with byC the largest C.
type topAgg struct{ byC bool }

func (a topAgg) score(r *Row) int64 {
	if a.byC {
		return r.C
	}
	return r.B
}

func (topAgg) CreateAccumulator() top { return top{} }
func (a topAgg) Add(t top, r Row) top {
	switch s := a.score(&r); {
	case len(t.rows) == 0 || s > t.max:
		// The window owns its accumulator, and the FlatMap after it copies
		// the rows out as they are emitted: the array can be reused.
		t.max, t.rows = s, append(t.rows[:0], r)
	case s == t.max:
		t.rows = append(t.rows, r)
	}
	return t
}
func (a topAgg) Merge(x, y top) top {
	for _, r := range y.rows {
		x = a.Add(x, r)
	}
	return x
}
func (topAgg) Result(t top) []Row { return t.rows }

// maxPerWindow keys rows by their window and keeps those with the largest
// B. Rows carry their window's maxTimestamp, so a tumbling window of the
// slide holds the rows of exactly one window end.
func maxPerWindow(rows weir.Stream[Row], every etime.Duration, agg topAgg) weir.Stream[Row] {
	k := weir.KeyBy(rows, func(r Row) etime.Time { return r.End })
	res := weir.Aggregate(weir.Window(k, must(window.Tumbling(every, 0)), weir.WindowOptions{TwoPhase: true}), agg).Results
	return weir.FlatMap(res, func(r window.Result[etime.Time, []Row], emit func(Row)) {
		for _, row := range r.Value {
			emit(row)
		}
	})
}

func q5(events weir.Stream[*Event]) weir.Stream[Row] {
	counts := weir.Map(countPerAuction(events, must(window.Sliding(windowSize, slide, 0))), countRow)
	return maxPerWindow(counts, slide, topAgg{})
}

func q7(events weir.Stream[*Event]) weir.Stream[Row] {
	// Per bucket of auctions first (parallel), then per window: the
	// highest bids.
	// Only the fields the query reads cross the exchange.
	priced := weir.FlatMap(events, func(e *Event, emit func(pricedBid)) {
		if e.Kind == KindBid {
			emit(pricedBid{Auction: e.Bid.Auction, Bidder: e.Bid.Bidder, Price: e.Bid.Price})
		}
	})
	// Keyed by a bucket of the auction, not the auction: the highest bid of
	// a window is the highest over any partition of its bids, and 64
	// buckets spread it over subtasks while keeping the first stage's
	// state small (what a SQL engine's two-phase MAX does).
	k := weir.KeyBy(priced, func(b pricedBid) int64 { return b.Auction % q7Buckets })
	w := weir.Window(k, must(window.Tumbling(windowSize, 0)), weir.WindowOptions{})
	perAuction := weir.Aggregate(w, weir.AggregateFunc[pricedBid, top, []Row](bidTop{topAgg{byC: true}}))
	rows := weir.FlatMap(perAuction.Results, func(r window.Result[int64, []Row], emit func(Row)) {
		for _, row := range r.Value {
			row.Start, row.End = r.Window.Start, r.Window.End
			emit(row)
		}
	})
	return maxPerWindow(rows, windowSize, topAgg{byC: true})
}

// q7Buckets is the number of keys of q7's first stage.
const q7Buckets = 64

// pricedBid is the part of a bid that q7 reads.
type pricedBid struct{ Auction, Bidder, Price int64 }

// bidTop keeps an auction's highest bids.
type bidTop struct{ topAgg }

func (t bidTop) Add(acc top, b pricedBid) top {
	return t.topAgg.Add(acc, Row{A: b.Auction, B: b.Bidder, C: b.Price})
}

func q8(events weir.Stream[*Event]) weir.Stream[Row] {
	people := weir.FlatMap(events, func(e *Event, emit func(*Person)) {
		if e.Kind == KindPerson {
			emit(e.Person)
		}
	})
	auctions := weir.FlatMap(events, func(e *Event, emit func(int64)) {
		if e.Kind == KindAuction {
			emit(e.Auction.Seller)
		}
	})
	out := weir.CoGroup(weir.KeyBy(people, func(p *Person) int64 { return p.ID }), weir.KeyBy(auctions, func(s int64) int64 { return s }),
		must(window.Tumbling(windowSize, 0)), weir.WindowOptions{},
		func(ctx *weir.WindowContext[int64, Row], ps []*Person, sellers []int64) {
			if len(sellers) == 0 {
				return
			}
			for _, p := range ps {
				ctx.Emit(Row{Start: ctx.Window.Start, End: ctx.Window.End, A: p.ID, S: p.Name})
			}
		})
	return weir.Map(out.Results, func(r window.Result[int64, Row]) Row { return r.Value })
}

func q11(events weir.Stream[*Event]) weir.Stream[Row] {
	return weir.Map(countBy(bidField(events, bidder), must(window.Session(sessionGap))), countRow)
}

func q12(events weir.Stream[*Event]) weir.Stream[Row] {
	res := countBy(bidField(events, bidder), must(window.TumblingProcessing(windowSize, 0)))
	return weir.Map(res, func(r window.Result[int64, int64]) Row { return Row{A: r.Key, B: r.Value} })
}

// totalsByA sums B per A.
func totalsByA(rows []Row) []Row {
	sums := map[int64]int64{}
	for _, r := range rows {
		sums[r.A] += r.B
	}
	out := make([]Row, 0, len(sums))
	for a, b := range sums {
		out = append(out, Row{A: a, B: b})
	}
	slices.SortFunc(out, compareRows)
	return out
}
