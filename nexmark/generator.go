// Package nexmark generates the Nexmark auction benchmark's events (persons,
// auctions and bids) exactly as Apache Beam's Java generator does, and
// runs the benchmark's queries on weir and as hand-written loops.
//
// Every event is a pure function of its event number: its id comes from
// the number (permuted within out-of-order groups), and a java.util.Random
// seeded with the id draws its fields in Beam's order. So the stream is
// reproducible and can be generated in any order. The port of
// java.util.Random is checked against values printed by Java
// (testdata/java-random.txt); events from Beam's own generator could not
// be fetched here, so testdata/events-ooo50.tsv pins this port's output.
//
// Deviation from Beam: only a constant event rate (Beam's first and next
// rates equal, its default); the square and sine rate shapes are not
// ported.
package nexmark

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/weirstream/weir/etime"
)

// Beam's fixed numbers.
const (
	firstPersonID   = 1000
	firstAuctionID  = 1000
	firstCategoryID = 10
	numCategories   = 5
	personShare     = 1
	auctionShare    = 3
	bidShare        = 46
	shares          = personShare + auctionShare + bidShare // 50
	idLead          = 10                                    // ids ahead of the last created
	hotBatch        = 100                                   // hot auctions, bidders, sellers: the first of each 100
	minStringLen    = 3
)

// BaseTime is Beam's base time, 2015-07-15T00:00:00Z.
const BaseTime etime.Time = 1436918400000

// Config configures a generator. DefaultConfig is Beam's
// NexmarkConfiguration.DEFAULT except Generators (1 instead of 100), so
// that one generator gives the whole rate.
type Config struct {
	// Rate is the event rate in events per second of event time.
	Rate int64
	// Generators is Beam's numEventGenerators: the generator's events are
	// Generators periods apart (Beam splits the rate over that many
	// generators on parallel timelines).
	Generators int64
	// OutOfOrderGroupSize permutes event ids within blocks of this many
	// events (1: in order).
	OutOfOrderGroupSize int64
	// BaseTime is the timestamp of event number 0.
	BaseTime etime.Time
	// FirstEventID and FirstEventNumber start the generator (Beam: 0, 0).
	FirstEventID, FirstEventNumber int64
	// Average sizes of the events, which the padding (Extra) makes up.
	AvgPersonBytes, AvgAuctionBytes, AvgBidBytes int
	// One in each ratio of bids, sellers or bidders is not hot.
	HotAuctionRatio, HotSellersRatio, HotBiddersRatio int32
	// NumInFlightAuctions and NumActivePeople bound the random choices of
	// auctions and people.
	NumInFlightAuctions, NumActivePeople int64
	// NoExtra leaves out the padding strings (every other field is the
	// same): a benchmark that holds many events in memory saves ~70 bytes
	// per bid.
	NoExtra bool
}

// DefaultConfig returns Beam's defaults with one generator at 10,000
// events/s.
func DefaultConfig() Config {
	return Config{
		Rate: 10_000, Generators: 1, OutOfOrderGroupSize: 1, BaseTime: BaseTime,
		AvgPersonBytes: 200, AvgAuctionBytes: 500, AvgBidBytes: 100,
		HotAuctionRatio: 2, HotSellersRatio: 4, HotBiddersRatio: 4,
		NumInFlightAuctions: 100, NumActivePeople: 1000,
	}
}

// Validate refuses a config the generator cannot follow, naming the field.
func (c Config) Validate() error {
	var errs []error
	positive := func(name string, v int64) {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("nexmark: %s must be positive, got %d", name, v))
		}
	}
	positive("Rate", c.Rate)
	positive("Generators", c.Generators)
	positive("OutOfOrderGroupSize", c.OutOfOrderGroupSize)
	positive("HotAuctionRatio", int64(c.HotAuctionRatio))
	positive("HotSellersRatio", int64(c.HotSellersRatio))
	positive("HotBiddersRatio", int64(c.HotBiddersRatio))
	positive("NumInFlightAuctions", c.NumInFlightAuctions)
	positive("NumActivePeople", c.NumActivePeople)
	if c.Rate > 1_000_000 {
		errs = append(errs, fmt.Errorf("nexmark: Rate %d is above 1,000,000 events/s, which a whole-microsecond period between events cannot express", c.Rate))
	}
	if c.FirstEventID < 0 || c.FirstEventNumber < 0 {
		errs = append(errs, errors.New("nexmark: FirstEventID and FirstEventNumber must be >= 0"))
	}
	return errors.Join(errs...)
}

// Generator produces the events of one generator in order. It is not safe
// for concurrent use; Event is (any number may be generated anywhere).
type Generator struct {
	c       Config
	delayUs int64 // event-time microseconds between two events
	count   int64 // events generated so far
}

// NewGenerator returns a generator at its first event.
func NewGenerator(c Config) (*Generator, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &Generator{c: c, delayUs: (1_000_000 + c.Rate/2) / c.Rate * c.Generators}, nil
}

// timestamp is the event time of event number n.
func (g *Generator) timestamp(n int64) etime.Time {
	return g.c.BaseTime + etime.Time(n*g.delayUs/1000)
}

// adjusted is the event number of the count-th event, permuted within its
// out-of-order group.
func (g *Generator) adjusted(count int64) int64 {
	n, k := g.c.FirstEventNumber+count, g.c.OutOfOrderGroupSize
	return n/k*k + n*953%k
}

// Next returns the next event and the generator's watermark before it:
// no event from here on is older than the watermark (the timestamp of the
// first event of the current out-of-order group).
func (g *Generator) Next() (Event, etime.Time) {
	e := g.Event(g.count)
	n, k := g.c.FirstEventNumber+g.count, g.c.OutOfOrderGroupSize
	g.count++
	return e, g.timestamp(n / k * k)
}

// Count is the number of events generated so far.
func (g *Generator) Count() int64 { return g.count }

// Event returns the count-th event of the generator (0-based), as Beam's
// generator gives it.
func (g *Generator) Event(count int64) Event {
	adj := g.adjusted(count)
	id := g.c.FirstEventID + adj
	ts := g.timestamp(adj)
	r := newJavaRandom(id)
	switch rem := id % shares; {
	case rem < personShare:
		return Event{Kind: KindPerson, Person: g.person(id, &r, ts)}
	case rem < personShare+auctionShare:
		return Event{Kind: KindAuction, Auction: g.auction(count, id, &r, ts)}
	default:
		return Event{Kind: KindBid, Bid: g.bid(id, &r, ts)}
	}
}

// lastPerson is the last person id (base 0) created at or before event
// id; lastAuction likewise.
func lastPerson(id int64) int64 {
	epoch, off := id/shares, id%shares
	if off >= personShare {
		off = personShare - 1
	}
	return epoch*personShare + off
}

func lastAuction(id int64) int64 {
	epoch, off := id/shares, id%shares
	switch {
	case off < personShare:
		epoch--
		off = auctionShare - 1
	case off >= personShare+auctionShare:
		off = auctionShare - 1
	default:
		off -= personShare
	}
	return epoch*auctionShare + off
}

// randomPerson picks one of the active people, or one of a few not yet
// created (base 0).
func (g *Generator) randomPerson(id int64, r *javaRandom) int64 {
	people := lastPerson(id) + 1
	active := min(people, g.c.NumActivePeople)
	return people - active + r.nextLongn(active+idLead)
}

// randomAuction picks one of the auctions likely still open, or one of a
// few not yet created (base 0).
func (g *Generator) randomAuction(id int64, r *javaRandom) int64 {
	last := lastAuction(id)
	lo := max(last-g.c.NumInFlightAuctions, 0)
	return lo + r.nextLongn(last-lo+1+idLead)
}

var (
	usStates   = []string{"AZ", "CA", "ID", "OR", "WA", "WY"}
	usCities   = []string{"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"}
	firstNames = []string{"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"}
	lastNames  = []string{"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"}
)

func pick(r *javaRandom, from []string) string { return from[r.nextIntn(int32(len(from)))] }

func (g *Generator) person(id int64, r *javaRandom, ts etime.Time) *Person {
	p := &Person{ID: lastPerson(id) + firstPersonID, DateTime: ts}
	p.Name = pick(r, firstNames) + " " + pick(r, lastNames)
	p.Email = nextString(r, 7) + "@" + nextString(r, 5) + ".com"
	var cc []byte
	for i := range 4 {
		if i > 0 {
			cc = append(cc, ' ')
		}
		cc = fmt.Appendf(cc, "%04d", r.nextIntn(10000))
	}
	p.CreditCard = string(cc)
	p.City = pick(r, usCities)
	p.State = pick(r, usStates)
	if !g.c.NoExtra {
		size := 8 + len(p.Name) + len(p.Email) + len(p.CreditCard) + len(p.City) + len(p.State)
		p.Extra = nextExtra(r, size, g.c.AvgPersonBytes)
	}
	return p
}

func (g *Generator) auction(count, id int64, r *javaRandom, ts etime.Time) *Auction {
	a := &Auction{ID: lastAuction(id) + firstAuctionID, DateTime: ts}
	if r.nextIntn(g.c.HotSellersRatio) > 0 {
		a.Seller = lastPerson(id) / hotBatch * hotBatch
	} else {
		a.Seller = g.randomPerson(id, r)
	}
	a.Seller += firstPersonID
	a.Category = firstCategoryID + int64(r.nextIntn(numCategories))
	a.InitialBid = nextPrice(r)
	// The auction lasts on average until the auction NumInFlightAuctions
	// ahead is created.
	ahead := g.c.NumInFlightAuctions * shares / auctionShare
	horizon := int64(g.timestamp(g.adjusted(count)+ahead) - ts)
	a.Expires = ts + etime.Time(1+r.nextLongn(max(2*horizon, 1)))
	a.ItemName = nextString(r, 20)
	a.Description = nextString(r, 100)
	a.Reserve = a.InitialBid + nextPrice(r)
	if !g.c.NoExtra {
		size := 8 + len(a.ItemName) + len(a.Description) + 5*8
		a.Extra = nextExtra(r, size, g.c.AvgAuctionBytes)
	}
	return a
}

func (g *Generator) bid(id int64, r *javaRandom, ts etime.Time) Bid {
	b := Bid{DateTime: ts}
	if r.nextIntn(g.c.HotAuctionRatio) > 0 {
		b.Auction = lastAuction(id) / hotBatch * hotBatch
	} else {
		b.Auction = g.randomAuction(id, r)
	}
	b.Auction += firstAuctionID
	if r.nextIntn(g.c.HotBiddersRatio) > 0 {
		// The second person of the batch, so hot bidders are not hot
		// sellers.
		b.Bidder = lastPerson(id)/hotBatch*hotBatch + 1
	} else {
		b.Bidder = g.randomPerson(id, r)
	}
	b.Bidder += firstPersonID
	b.Price = nextPrice(r)
	if !g.c.NoExtra {
		b.Extra = nextExtra(r, 4*8, g.c.AvgBidBytes)
	}
	return b
}

// nextPrice is log-uniform between 1 and 1,000,000 dollars, in cents.
func nextPrice(r *javaRandom) int64 { return javaRound(math.Pow(10, r.nextDouble()*6) * 100) }

// nextString is 3 to max-1 random lower-case letters and spaces (1 in
// 13), trimmed.
func nextString(r *javaRandom, max int32) string {
	n := minStringLen + r.nextIntn(max-minStringLen)
	b := make([]byte, n)
	for i := range b {
		if r.nextIntn(13) == 0 {
			b[i] = ' '
		} else {
			b[i] = 'a' + byte(r.nextIntn(26))
		}
	}
	return strings.Trim(string(b), " ")
}

// nextExtra pads an event of size bytes to avg bytes on average (±20%).
func nextExtra(r *javaRandom, size, avg int) string {
	if size > avg {
		return ""
	}
	avg -= size
	delta := int32(javaRound(float64(avg) * 0.2))
	n := int32(avg) - delta
	if delta != 0 {
		n += r.nextIntn(2 * delta)
	}
	return nextExactString(r, n)
}

// nextExactString is n letters, six from each random int; as Beam's, a
// negative int gives characters below 'a'.
func nextExactString(r *javaRandom, n int32) string {
	b := make([]byte, n)
	var rnd int32
	left := 0
	for i := range b {
		if left == 0 {
			rnd = r.nextInt()
			left = 6
		}
		b[i] = byte('a' + rnd%26)
		rnd /= 26
		left--
	}
	return string(b)
}
