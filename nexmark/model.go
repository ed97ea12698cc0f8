package nexmark

import "github.com/weirstream/weir/etime"

// Person is a new user of the auction site.
type Person struct {
	ID         int64
	Name       string
	Email      string
	CreditCard string
	City       string
	State      string
	DateTime   etime.Time
	Extra      string
}

// Auction is an item put up for auction by a seller (a Person's ID).
type Auction struct {
	ID          int64
	ItemName    string
	Description string
	InitialBid  int64 // cents
	Reserve     int64 // cents
	DateTime    etime.Time
	Expires     etime.Time
	Seller      int64
	Category    int64
	Extra       string
}

// Bid is a bid on an auction by a bidder (a Person's ID).
type Bid struct {
	Auction  int64
	Bidder   int64
	Price    int64 // cents
	DateTime etime.Time
	Extra    string
}

// Kind says which of an Event's fields is set.
type Kind uint8

// The kinds of events, in Beam's proportions 1:3:46.
const (
	KindPerson Kind = iota
	KindAuction
	KindBid
)

func (k Kind) String() string {
	switch k {
	case KindPerson:
		return "person"
	case KindAuction:
		return "auction"
	case KindBid:
		return "bid"
	}
	return "unknown"
}

// Event is one event of the Nexmark stream: a bid (inline, since 92% of
// events are bids), or a person or an auction.
type Event struct {
	Kind    Kind
	Bid     Bid
	Person  *Person
	Auction *Auction
}

// Time is the event's timestamp.
func (e *Event) Time() etime.Time {
	switch e.Kind {
	case KindPerson:
		return e.Person.DateTime
	case KindAuction:
		return e.Auction.DateTime
	}
	return e.Bid.DateTime
}
