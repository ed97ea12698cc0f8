package nexmarkio

import (
	"fmt"
	"testing"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/connectortest"
	"github.com/weirstream/weir/connector/fileio"
	"github.com/weirstream/weir/nexmark"
)

// TestConformance runs the source conformance suite on 3000 events.
func TestConformance(t *testing.T) {
	connectortest.Run(t, connectortest.Source[fileio.Line]{
		New: func(t testing.TB) weir.Source[fileio.Line] {
			src, err := New(3000, 1000)
			if err != nil {
				t.Fatal(err)
			}
			return src
		},
		Records: 3000,
		ID:      func(l fileio.Line) string { return fmt.Sprint(l.No, string(l.Data())) },
	})
}

// TestRows: each event's row is valid JSON holding the event's fields
// under the Flink table's names, the other kinds null.
func TestRows(t *testing.T) {
	events, err := nexmark.Generate(nexmark.DefaultConfig(), 500)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[int]int{}
	for i := range events {
		e := &events[i]
		v, err := fastjson.ParseBytes(AppendRow(nil, e))
		if err != nil {
			t.Fatal(err)
		}
		k := v.GetInt("event_type")
		kinds[k]++
		for j, name := range []string{"person", "auction", "bid"} {
			if (j == k) == (v.Get(name).Type() == fastjson.TypeNull) {
				t.Fatalf("event %d (kind %d): %s is %s", i, k, name, v.Get(name))
			}
		}
		var ok bool
		switch e.Kind {
		case nexmark.KindPerson:
			ok = v.GetInt64("person", "id") == e.Person.ID && string(v.GetStringBytes("person", "emailAddress")) == e.Person.Email && v.GetInt64("person", "dateTime") == int64(e.Person.DateTime)
		case nexmark.KindAuction:
			ok = v.GetInt64("auction", "seller") == e.Auction.Seller && v.GetInt64("auction", "expires") == int64(e.Auction.Expires) && v.GetInt64("auction", "category") == e.Auction.Category
		case nexmark.KindBid:
			ok = v.GetInt64("bid", "auction") == e.Bid.Auction && v.GetInt64("bid", "bidder") == e.Bid.Bidder && v.GetInt64("bid", "price") == e.Bid.Price && v.GetInt64("bid", "dateTime") == int64(e.Bid.DateTime)
		}
		if !ok {
			t.Fatalf("event %d: row %s does not hold %+v", i, v, e)
		}
	}
	if kinds[0] == 0 || kinds[1] == 0 || kinds[2] < kinds[1] {
		t.Errorf("kinds %v", kinds)
	}
}
