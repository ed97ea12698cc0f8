package nexmark

import (
	"encoding/json"
	"fmt"
	"math/big"
	"time"

	"github.com/weirstream/weir/etime"
)

// SQLDDL is the Nexmark project's Flink source table and views in
// weir's words (the same columns, CASE time attribute, watermark and
// connector options), with the project's ${...} placeholders as verbs:
// events.num, then the rate (first-event.rate and next-event.rate).
const SQLDDL = `CREATE TABLE datagen (
  event_type INT,
  person ROW<id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR, state VARCHAR, dateTime TIMESTAMP(3), extra VARCHAR>,
  auction ROW<id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT, dateTime TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra VARCHAR>,
  bid ROW<auction BIGINT, bidder BIGINT, price BIGINT, dateTime TIMESTAMP(3), extra VARCHAR>,
  dateTime AS CASE WHEN event_type = 0 THEN person.dateTime WHEN event_type = 1 THEN auction.dateTime ELSE bid.dateTime END,
  WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
) WITH (
  'connector' = 'nexmark', 'events.num' = '%[1]d',
  'first-event.rate' = '%[2]d', 'next-event.rate' = '%[2]d',
  'person.proportion' = '1', 'auction.proportion' = '3', 'bid.proportion' = '46'
);
CREATE VIEW person AS
SELECT person.id, person.name, person.emailAddress, person.creditCard, person.city, person.state, dateTime, person.extra
FROM datagen WHERE event_type = 0;
CREATE VIEW auction AS
SELECT auction.id, auction.itemName, auction.description, auction.initialBid, auction.reserve, dateTime, auction.expires,
  auction.seller, auction.category, auction.extra
FROM datagen WHERE event_type = 1;
CREATE VIEW bid AS
SELECT bid.auction, bid.bidder, bid.price, dateTime, bid.extra
FROM datagen WHERE event_type = 2;
`

// SQLQuery is a query as the Nexmark project writes it in Flink SQL,
// its sink a JSON lines file (out.jsonl) where the project's is a
// blackhole, and how its rows read as the hand loop's Rows.
type SQLQuery struct {
	// Sink is the CREATE TABLE of its sink; Query the INSERT.
	Sink, Query string
	// Row reads one JSON row of the sink.
	Row func(map[string]json.RawMessage) (Row, error)
	// Shown (nil: the row itself) is a row of the hand loop as the
	// query's sink shows it (q5's has no window bounds).
	Shown func(Row) Row
	// Hand, when set, is the loop of the SQL's semantics where they
	// differ from the typed query's (q7's range includes each window's
	// end); nil: the query's own loop.
	Hand func(events []Event, emit func(*Row))
}

// Want is the hand loop's row r as the query's sink shows it.
func (q SQLQuery) Want(r Row) Row {
	if q.Shown == nil {
		return r
	}
	return q.Shown(r)
}

// Text is the query's whole SQL job over events events at rate events per
// second of event time.
func (q SQLQuery) Text(events, rate int64) string {
	return fmt.Sprintf(SQLDDL, events, rate) + q.Sink + "\n" + q.Query + "\n"
}

// SQL are the queries weir runs as the project writes them, by name.
var SQL = map[string]SQLQuery{
	"q0": {
		Sink: `CREATE TABLE nexmark_q0 (auction BIGINT, bidder BIGINT, price BIGINT, dateTime TIMESTAMP(3), extra VARCHAR)
  WITH ('connector' = 'filesystem', 'path' = 'out.jsonl');`,
		Query: `INSERT INTO nexmark_q0
SELECT auction, bidder, price, dateTime, extra FROM bid;`,
		Row: func(m map[string]json.RawMessage) (Row, error) {
			var r Row
			err := readSQL(m, map[string]any{"auction": &r.A, "bidder": &r.B, "price": &r.C, "dateTime": &r.End})
			return r, err
		},
	},
	"q1": {
		Sink: `CREATE TABLE nexmark_q1 (auction BIGINT, bidder BIGINT, price DECIMAL(23, 3), dateTime TIMESTAMP(3), extra VARCHAR)
  WITH ('connector' = 'filesystem', 'path' = 'out.jsonl');`,
		Query: `INSERT INTO nexmark_q1
SELECT
    auction,
    bidder,
    0.908 * price as price, -- convert dollar to euro
    dateTime,
    extra
FROM bid;`,
		Row: func(m map[string]json.RawMessage) (Row, error) {
			// The loop keeps euros as whole numbers (price*908/1000, cut
			// toward zero); SQL's exact decimal is cut the same way.
			var r Row
			err := readSQL(m, map[string]any{"auction": &r.A, "bidder": &r.B, "dateTime": &r.End})
			if err != nil {
				return r, err
			}
			// An exact decimal, in canonical JSON (2.9537240908e+07).
			price, ok := new(big.Rat).SetString(string(m["price"]))
			if !ok || price.Sign() < 0 {
				return r, fmt.Errorf("nexmark: price %s is no price", m["price"])
			}
			r.C = new(big.Int).Quo(price.Num(), price.Denom()).Int64()
			return r, nil
		},
	},
	"q2": {
		Sink: `CREATE TABLE nexmark_q2 (auction BIGINT, price BIGINT)
  WITH ('connector' = 'filesystem', 'path' = 'out.jsonl');`,
		Query: `INSERT INTO nexmark_q2
SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0;`,
		Row: func(m map[string]json.RawMessage) (Row, error) {
			var r Row
			err := readSQL(m, map[string]any{"auction": &r.A, "price": &r.C})
			return r, err
		},
	},
	"q5": {
		Sink: `CREATE TABLE nexmark_q5 (auction BIGINT, num BIGINT)
  WITH ('connector' = 'filesystem', 'path' = 'out.jsonl');`,
		Query: `INSERT INTO nexmark_q5
SELECT AuctionBids.auction, AuctionBids.num
 FROM (
   SELECT
     auction,
     count(*) AS num,
     window_start AS starttime,
     window_end AS endtime
     FROM TABLE(
             HOP(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
     GROUP BY auction, window_start, window_end
 ) AS AuctionBids
 JOIN (
   SELECT
     max(CountBids.num) AS maxn,
     CountBids.starttime,
     CountBids.endtime
   FROM (
     SELECT
       count(*) AS num,
       window_start AS starttime,
       window_end AS endtime
     FROM TABLE(
                HOP(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
     GROUP BY auction, window_start, window_end
     ) AS CountBids
   GROUP BY CountBids.starttime, CountBids.endtime
 ) AS MaxBids
 ON AuctionBids.starttime = MaxBids.starttime AND
    AuctionBids.endtime = MaxBids.endtime AND
    AuctionBids.num >= MaxBids.maxn;`,
		Row: func(m map[string]json.RawMessage) (Row, error) {
			var r Row
			err := readSQL(m, map[string]any{"auction": &r.A, "num": &r.B})
			return r, err
		},
		// The query selects the auction and its count, not the window.
		Shown: func(r Row) Row { return Row{A: r.A, B: r.B} },
	},
	"q7": {
		Sink: `CREATE TABLE nexmark_q7 (auction BIGINT, bidder BIGINT, price BIGINT, dateTime TIMESTAMP(3), extra VARCHAR)
  WITH ('connector' = 'filesystem', 'path' = 'out.jsonl');`,
		Query: `INSERT INTO nexmark_q7
SELECT B.auction, B.price, B.bidder, B.dateTime, B.extra
from bid B
JOIN (
  SELECT MAX(price) AS maxprice, window_end as dateTime
  FROM TABLE(
          TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
  GROUP BY window_start, window_end
) B1
ON B.price = B1.maxprice
WHERE B.dateTime BETWEEN B1.dateTime  - INTERVAL '10' SECOND AND B1.dateTime;`,
		Row: func(m map[string]json.RawMessage) (Row, error) {
			var r Row
			// The query selects auction, price, bidder into the sink's
			// auction, bidder, price: by position, as SQL maps them, the
			// price is in the bidder column and the bidder in price.
			err := readSQL(m, map[string]any{"auction": &r.A, "price": &r.B, "bidder": &r.C, "dateTime": &r.Start})
			return r, err
		},
		Hand: handQ7Range,
	},
	"q8": {
		Sink: `CREATE TABLE nexmark_q8 (id BIGINT, name VARCHAR, stime TIMESTAMP(3))
  WITH ('connector' = 'filesystem', 'path' = 'out.jsonl');`,
		Query: `INSERT INTO nexmark_q8
SELECT P.id, P.name, P.starttime
FROM (
  SELECT id, name, window_start AS starttime, window_end AS endtime
  FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
  GROUP BY id, name, window_start, window_end
) P
JOIN (
  SELECT seller, window_start AS starttime, window_end AS endtime
  FROM TABLE(TUMBLE(TABLE auction, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
  GROUP BY seller, window_start, window_end
) A
ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime;`,
		Row: func(m map[string]json.RawMessage) (Row, error) {
			var r Row
			err := readSQL(m, map[string]any{"stime": &r.Start, "id": &r.A, "name": &r.S})
			r.End = r.Start + etime.Time(windowSize)
			return r, err
		},
	},
	"q11": {
		Sink: `CREATE TABLE nexmark_q11 (bidder BIGINT, bid_count BIGINT, starttime TIMESTAMP(3), endtime TIMESTAMP(3))
  WITH ('connector' = 'filesystem', 'path' = 'out.jsonl');`,
		Query: `INSERT INTO nexmark_q11
SELECT B.bidder, count(*) as bid_count,
    SESSION_START(B.dateTime, INTERVAL '10' SECOND) as starttime,
    SESSION_END(B.dateTime, INTERVAL '10' SECOND) as endtime
FROM bid B
GROUP BY B.bidder, SESSION(B.dateTime, INTERVAL '10' SECOND);`,
		Row: func(m map[string]json.RawMessage) (Row, error) {
			var r Row
			err := readSQL(m, map[string]any{"starttime": &r.Start, "endtime": &r.End, "bidder": &r.A, "bid_count": &r.B})
			return r, err
		},
	},
}

// readSQL reads a row's columns into their places: an etime.Time from a
// TIMESTAMP(3) as Flink's JSON writes it or from epoch milliseconds, an
// int64 from a number, a string from a string.
func readSQL(m map[string]json.RawMessage, into map[string]any) error {
	for col, p := range into {
		raw, ok := m[col]
		if !ok {
			return fmt.Errorf("nexmark: a row without %s: %v", col, m)
		}
		switch p := p.(type) {
		case *etime.Time:
			var ms int64
			if json.Unmarshal(raw, &ms) == nil {
				*p = etime.Time(ms) // a time as epoch milliseconds
				continue
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return fmt.Errorf("nexmark: %s: %w", col, err)
			}
			t, err := time.Parse("2006-01-02 15:04:05.000", s)
			if err != nil {
				return fmt.Errorf("nexmark: %s: %w", col, err)
			}
			*p = etime.Time(t.UnixMilli())
		case *int64, *string:
			if err := json.Unmarshal(raw, p); err != nil {
				return fmt.Errorf("nexmark: %s: %w", col, err)
			}
		}
	}
	return nil
}

// handQ7Range is q7 as the Nexmark project writes it in SQL: each bid
// whose price is the highest of a tumbling window and whose time lies in
// [window_end - 10 s, window_end], both ends included (so a bid at a
// window's end meets that window too), one row per bid and window met:
// A auction, B bidder, C price, Start the bid's time. The loop reads the
// events twice (the highest prices, then the bids); it counts no bid
// late, as the events of a run have less disorder than the watermark's
// bound.
func handQ7Range(events []Event, emit func(*Row)) {
	highest := map[etime.Time]int64{} // by window end
	handBids(events, func(b *Bid) {
		end := b.DateTime - b.DateTime%etime.Time(windowSize) + etime.Time(windowSize)
		if p, ok := highest[end]; !ok || b.Price > p {
			highest[end] = b.Price
		}
	})
	handBids(events, func(b *Bid) {
		// The ends in [t, t+10 s]: t's window's, and t itself when t is
		// an end.
		end := b.DateTime - b.DateTime%etime.Time(windowSize) + etime.Time(windowSize)
		for _, e := range []etime.Time{b.DateTime, end} {
			if e%etime.Time(windowSize) != 0 || e == b.DateTime && e == end {
				continue
			}
			if p, ok := highest[e]; ok && p == b.Price {
				r := Row{A: b.Auction, B: b.Bidder, C: b.Price, Start: b.DateTime}
				emit(&r)
			}
		}
	})
}
