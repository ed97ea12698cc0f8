// Package nexmarkio is the Nexmark benchmark's event generator (package
// nexmark, Beam's generator) as a job spec's source kind, nexmark: each
// event is a typed record (Event, of Columns) whose JSON form is a row in
// the shape of the Nexmark project's Flink table (event_type 0, 1 or 2
// for a person, an auction or a bid, and the row of its kind; the others
// null), so that the project's SQL runs on it; a job reads the columns it
// needs without rendering the row.
// Times (dateTime, expires) are epoch milliseconds, as weir's JSON holds
// a TIMESTAMP(3). One channel reads every event in order; its position
// is the next event's number.
package nexmarkio

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/fileio"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/nexmark"
)

// Kinds are the job spec's kinds of this package: the nexmark source.
func Kinds() []connector.Kind {
	return []connector.Kind{{Name: "nexmark",
		Doc: "generates the Nexmark benchmark's events (people, auctions, bids; Beam's generator) as typed rows of the Nexmark project's Flink table",
		Source: &connector.SourceKind{Abilities: connector.AbilityPositions, Open: open, OwnEnd: true, Columns: Columns, Fields: []connector.Field{
			{Name: "nexmark.events", Doc: "events to generate", Required: true},
			{Name: "nexmark.rate", Doc: "events per second of event time (default 10000)"},
			{Name: "nexmark.linger", Doc: "processing time the source stays open after its last event, so that processing-time windows open at its end fire (default 0)"},
		}}}}
}

func open(_ context.Context, so connector.SourceOpen) (connector.OpenedSource, error) {
	src, err := newSource(int64(so.Settings.Int("nexmark.events")), int64(so.Settings.Int("nexmark.rate")))
	if err != nil {
		return connector.OpenedSource{}, err
	}
	src.final, src.stop = so.Final, so.Stop
	if !so.Unpaced {
		// A deterministic run's clock stands still: no window of
		// processing time fires, however long the source waits.
		src.linger, _ = so.Settings.Duration("nexmark.linger")
	}
	return connector.OpenedSource{Source: src, Name: "nexmark"}, nil
}

// New returns a source of events rows of the generator at rate events
// per second of event time (0: 10000), ending with the final watermark.
func New(events, rate int64) (connector.Source[fileio.Line], error) { return newSource(events, rate) }

func newSource(events, rate int64) (*source, error) {
	c := nexmark.DefaultConfig()
	if rate > 0 {
		c.Rate = rate
	}
	g, err := nexmark.NewGenerator(c)
	if err != nil {
		return nil, err
	}
	return &source{g: g, events: events, batch: fileio.DefaultBatch}, nil
}

type source struct {
	g           *nexmark.Generator
	events      int64
	final, stop func() bool
	batch       int
	// linger keeps the reader open after the last event (wall time).
	linger time.Duration
}

func (s *source) Open(_ context.Context, ch, n int) (connector.Reader[fileio.Line], error) {
	if n != 1 {
		return nil, fmt.Errorf("nexmarkio: the nexmark source has one channel, not %d", n)
	}
	return &reader{s: s}, nil
}

// slabEvents is the size of the slabs that events are cut from.
const slabEvents = 512

type reader struct {
	s     *source
	i     int64
	slab  []Event
	until time.Time // lingering until then
}

func (r *reader) Read(ctx context.Context, out connector.Output[fileio.Line]) (connector.ReadStatus, error) {
	s := r.s
	if r.i >= s.events && s.linger > 0 && (s.stop == nil || !s.stop()) {
		// Lingering: processing-time windows open at the end fire.
		now := time.Now()
		if r.until.IsZero() {
			r.until = now.Add(s.linger)
		}
		if now.Before(r.until) {
			select {
			case <-time.After(min(r.until.Sub(now), 20*time.Millisecond)):
			case <-ctx.Done():
			}
			return connector.Waiting, nil
		}
	}
	if r.i >= s.events || (s.stop != nil && s.stop()) {
		if s.final == nil || s.final() {
			out.EmitWatermark(etime.MaxTime)
		}
		return connector.Done, nil
	}
	for k := 0; k < s.batch && r.i < s.events; k++ {
		// Each event is cut from a slab, never written again once cut:
		// an allocation per slab, not per event.
		if len(r.slab) == cap(r.slab) {
			r.slab = make([]Event, 0, slabEvents)
		}
		r.slab = append(r.slab, Event(s.g.Event(r.i)))
		out.Emit(etime.MinTime, fileio.Line{Kind: fileio.Data, No: r.i + 1, Typed: &r.slab[len(r.slab)-1]})
		r.i++
	}
	return connector.Emitted, nil
}

// Backlog implements connector.BacklogReporter: generated events are a
// backlog (none is left while the source lingers).
func (r *reader) Backlog() bool { return r.i < r.s.events }

func (r *reader) Close() error { return nil }

// SnapshotPosition implements connector.CheckpointedReader.
func (r *reader) SnapshotPosition() ([]byte, error) {
	return strconv.AppendInt([]byte("nexmark1:"), r.i, 10), nil
}

// RestorePosition implements connector.CheckpointedReader.
func (r *reader) RestorePosition(pos []byte) error {
	v, ok := strings.CutPrefix(string(pos), "nexmark1:")
	i, err := strconv.ParseInt(v, 10, 64)
	if !ok || err != nil || i < 0 {
		return fmt.Errorf("nexmarkio: cannot resume at %q: not a position of this source", pos)
	}
	r.i = i
	return nil
}

var _ connector.CheckpointedReader = (*reader)(nil)

// Event is a generated event as a typed record of the Nexmark project's
// Flink table (Columns), whose JSON form is AppendRow's.
type Event nexmark.Event

// Columns are the columns of the nexmark source's typed records (Event):
// event_type, then the person's, the auction's and the bid's, by their
// paths in the row's JSON form. Times are epoch milliseconds.
var Columns = []connector.TypedColumn{
	{Name: "event_type", Kind: connector.ValueInt},
	{Name: "person.id", Kind: connector.ValueInt},
	{Name: "person.name", Kind: connector.ValueString},
	{Name: "person.emailAddress", Kind: connector.ValueString},
	{Name: "person.creditCard", Kind: connector.ValueString},
	{Name: "person.city", Kind: connector.ValueString},
	{Name: "person.state", Kind: connector.ValueString},
	{Name: "person.dateTime", Kind: connector.ValueInt},
	{Name: "person.extra", Kind: connector.ValueString},
	{Name: "auction.id", Kind: connector.ValueInt},
	{Name: "auction.itemName", Kind: connector.ValueString},
	{Name: "auction.description", Kind: connector.ValueString},
	{Name: "auction.initialBid", Kind: connector.ValueInt},
	{Name: "auction.reserve", Kind: connector.ValueInt},
	{Name: "auction.dateTime", Kind: connector.ValueInt},
	{Name: "auction.expires", Kind: connector.ValueInt},
	{Name: "auction.seller", Kind: connector.ValueInt},
	{Name: "auction.category", Kind: connector.ValueInt},
	{Name: "auction.extra", Kind: connector.ValueString},
	{Name: "bid.auction", Kind: connector.ValueInt},
	{Name: "bid.bidder", Kind: connector.ValueInt},
	{Name: "bid.price", Kind: connector.ValueInt},
	{Name: "bid.dateTime", Kind: connector.ValueInt},
	{Name: "bid.extra", Kind: connector.ValueString},
}

// Column implements connector.TypedRecord: the value at Columns[c], null
// for the columns of the kinds the event is not.
func (e *Event) Column(c int) connector.Value {
	num := func(i int64) connector.Value { return connector.Value{Kind: connector.ValueInt, Int: i} }
	str := func(s string) connector.Value { return connector.Value{Kind: connector.ValueString, Str: s} }
	switch {
	case c == 0:
		return num(int64(e.Kind))
	case c <= 8:
		p := e.Person
		if e.Kind != nexmark.KindPerson || p == nil {
			break
		}
		switch c {
		case 1:
			return num(p.ID)
		case 2:
			return str(p.Name)
		case 3:
			return str(p.Email)
		case 4:
			return str(p.CreditCard)
		case 5:
			return str(p.City)
		case 6:
			return str(p.State)
		case 7:
			return num(int64(p.DateTime))
		case 8:
			return str(p.Extra)
		}
	case c <= 18:
		a := e.Auction
		if e.Kind != nexmark.KindAuction || a == nil {
			break
		}
		switch c {
		case 9:
			return num(a.ID)
		case 10:
			return str(a.ItemName)
		case 11:
			return str(a.Description)
		case 12:
			return num(a.InitialBid)
		case 13:
			return num(a.Reserve)
		case 14:
			return num(int64(a.DateTime))
		case 15:
			return num(int64(a.Expires))
		case 16:
			return num(a.Seller)
		case 17:
			return num(a.Category)
		case 18:
			return str(a.Extra)
		}
	case c <= 23:
		if e.Kind != nexmark.KindBid {
			break
		}
		b := &e.Bid
		switch c {
		case 19:
			return num(b.Auction)
		case 20:
			return num(b.Bidder)
		case 21:
			return num(b.Price)
		case 22:
			return num(int64(b.DateTime))
		case 23:
			return str(b.Extra)
		}
	}
	return connector.Value{}
}

// AppendJSON implements connector.TypedRecord (AppendRow).
func (e *Event) AppendJSON(b []byte) []byte { return AppendRow(b, (*nexmark.Event)(e)) }

var _ connector.TypedRecord = (*Event)(nil)

// AppendRow appends event e as the JSON row of the Nexmark project's
// Flink table: {"event_type", "person", "auction", "bid"}, the row of
// e's kind set, the others null.
func AppendRow(b []byte, e *nexmark.Event) []byte {
	str := func(b []byte, k, v string) []byte {
		b = append(b, `,"`+k+`":`...)
		return weir.AppendJSONString(b, v)
	}
	num := func(b []byte, k string, v int64) []byte {
		b = append(b, `,"`+k+`":`...)
		return strconv.AppendInt(b, v, 10)
	}
	b = append(b, `{"event_type":`...)
	b = strconv.AppendInt(b, int64(e.Kind), 10)
	b = append(b, `,"person":`...)
	if p := e.Person; e.Kind == nexmark.KindPerson && p != nil {
		b = append(b, `{"id":`...)
		b = strconv.AppendInt(b, p.ID, 10)
		b = str(b, "name", p.Name)
		b = str(b, "emailAddress", p.Email)
		b = str(b, "creditCard", p.CreditCard)
		b = str(b, "city", p.City)
		b = str(b, "state", p.State)
		b = num(b, "dateTime", int64(p.DateTime))
		b = str(b, "extra", p.Extra)
		b = append(b, '}')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"auction":`...)
	if a := e.Auction; e.Kind == nexmark.KindAuction && a != nil {
		b = append(b, `{"id":`...)
		b = strconv.AppendInt(b, a.ID, 10)
		b = str(b, "itemName", a.ItemName)
		b = str(b, "description", a.Description)
		b = num(b, "initialBid", a.InitialBid)
		b = num(b, "reserve", a.Reserve)
		b = num(b, "dateTime", int64(a.DateTime))
		b = num(b, "expires", int64(a.Expires))
		b = num(b, "seller", a.Seller)
		b = num(b, "category", a.Category)
		b = str(b, "extra", a.Extra)
		b = append(b, '}')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"bid":`...)
	if e.Kind == nexmark.KindBid {
		x := &e.Bid
		b = append(b, `{"auction":`...)
		b = strconv.AppendInt(b, x.Auction, 10)
		b = num(b, "bidder", x.Bidder)
		b = num(b, "price", x.Price)
		b = num(b, "dateTime", int64(x.DateTime))
		b = str(b, "extra", x.Extra)
		b = append(b, '}')
	} else {
		b = append(b, "null"...)
	}
	return append(b, '}')
}
