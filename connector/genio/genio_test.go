package genio

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/connector/fileio"
	"github.com/weirstream/weir/etime"
)

type collect struct {
	lines []fileio.Line
	wms   []etime.Time
}

func (c *collect) Emit(_ etime.Time, l fileio.Line) { c.lines = append(c.lines, l) }
func (c *collect) EmitWatermark(wm etime.Time)      { c.wms = append(c.wms, wm) }
func (c *collect) MarkIdle()                        {}
func (c *collect) MarkActive()                      {}

func read(t *testing.T, o Options, n int) []fileio.Line {
	t.Helper()
	src, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	byNo := map[int64]fileio.Line{}
	for ch := range n {
		r, _ := src.Open(context.Background(), ch, n)
		c := &collect{}
		for {
			st, err := r.Read(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if st == weir.Done {
				break
			}
		}
		if len(c.wms) != 1 || c.wms[0] != etime.MaxTime {
			t.Fatalf("channel %d: final watermarks %v", ch, c.wms)
		}
		for _, l := range c.lines {
			if l.Channel != ch || (l.No-1)%int64(n) != int64(ch) {
				t.Fatalf("line %d on channel %d", l.No, ch)
			}
			byNo[l.No] = l
		}
	}
	out := make([]fileio.Line, 0, len(byNo))
	for i := int64(1); i <= o.Records; i++ {
		out = append(out, byNo[i])
	}
	return out
}

// TestGenerator: the stream is a function of the seed alone (the same on
// one or three channels), in-order records are spaced by the rate, the
// disorder bands and the bad share come out near their shares, and every
// good record is a well-formed order.
func TestGenerator(t *testing.T) {
	o := Options{Records: 20000, Rate: 100, Keys: 7, Start: 1767225600000, Seed: 9, Bad: 0.01,
		Disorder: []Band{{Share: 0.1, Min: 1000, Max: 2000}}}
	one, three := read(t, o, 1), read(t, o, 3)
	var bad, delayed int
	for i := range one {
		if string(one[i].Text) != string(three[i].Text) {
			t.Fatalf("record %d differs between 1 and 3 channels", i)
		}
		var rec struct {
			OrderID int64  `json:"order_id"`
			User    string `json:"user_id"`
			Amount  *int64 `json:"amount"`
			TS      *int64 `json:"ts"`
		}
		if json.Unmarshal(one[i].Text, &rec) != nil || rec.User == "" || rec.Amount == nil || rec.TS == nil {
			bad++
			continue
		}
		clock := int64(1767225600000 + i*10)
		switch d := clock - *rec.TS; {
		case d == 0:
		case d >= 1000 && d <= 2000:
			delayed++
		case d < -1e11 || *rec.TS < 1e12: // future or seconds: bad on purpose
			bad++
		default:
			t.Fatalf("record %d: delay %d ms outside every band: %s", i, d, one[i].Text)
		}
		if rec.OrderID != int64(i) || len(rec.User) != 4 || *rec.Amount < 1 || *rec.Amount > 500 {
			t.Fatalf("record %d: %s", i, one[i].Text)
		}
	}
	if bad < 150 || bad > 260 || delayed < 1800 || delayed > 2200 {
		t.Fatalf("bad %d (want ~200), delayed %d (want ~2000)", bad, delayed)
	}
	// Known values: the first record of seed 9 (a change here changes every golden file that uses the generator).
	if got, want := string(one[0].Text), `{"order_id":0,"user_id":"u003","amount":69,"ts":1767225600000}`; got != want {
		t.Errorf("record 0 = %s, want %s", got, want)
	}
}

// count is a SourceOutput that counts records and keeps the timestamp of
// the last one.
type count struct {
	n      int64
	lastTS int64
}

func (c *count) Emit(_ etime.Time, l fileio.Line) {
	c.n++
	c.lastTS = tsOf(l.Text)
}
func (c *count) EmitWatermark(etime.Time) {}
func (c *count) MarkIdle()                {}
func (c *count) MarkActive()              {}

// tsOf is the ts field of a generated record (which ends with it).
func tsOf(b []byte) int64 {
	i := bytes.LastIndex(b, []byte(`"ts":`))
	v, _ := strconv.ParseInt(string(b[i+5:len(b)-1]), 10, 64)
	return v
}

// TestPaceFakeClock: paced by a fake clock, the channels together emit
// record i once the clock is i/rate past the first read, in batches of
// what is due, say Waiting when nothing is and Backlog while behind; with
// StartNow the timestamps are the clock's; a restored reader's schedule
// and timestamps count from where it resumes.
func TestPaceFakeClock(t *testing.T) {
	t0 := time.UnixMilli(1767225600000)
	clk := clock.NewFake(t0)
	src, err := New(Options{Records: 100000, Rate: 1000, Keys: 5, Seed: 3, Pace: Wall, StartNow: true, Clock: clk, Batch: 4})
	if err != nil {
		t.Fatal(err)
	}
	r0, _ := src.Open(context.Background(), 0, 2)
	r1, _ := src.Open(context.Background(), 1, 2)
	c0, c1 := &count{}, &count{}
	drain := func(r weir.SourceReader[fileio.Line], c *count) (reads int) {
		for {
			st, err := r.Read(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if st != weir.Emitted {
				return reads
			}
			reads++
		}
	}
	if drain(r0, c0); c0.n != 1 || c0.lastTS != t0.UnixMilli() {
		t.Fatalf("at the start: %d records, last ts %d, want record 0 at %d", c0.n, c0.lastTS, t0.UnixMilli())
	}
	if drain(r1, c1); c1.n != 0 {
		t.Fatalf("at the start channel 1 emitted %d records, want 0 (record 1 is due at 1ms)", c1.n)
	}
	clk.Advance(100 * time.Millisecond) // records 0..100 are due
	if st, _ := r0.Read(context.Background(), c0); st != weir.Emitted || c0.n != 5 || !r0.(weir.BacklogReporter).Backlog() {
		t.Fatalf("behind schedule: status %v, %d records, backlog %v; want a batch of 4 more, and backlog", st, c0.n, r0.(weir.BacklogReporter).Backlog())
	}
	drain(r0, c0)
	drain(r1, c1)
	if c0.n != 51 || c1.n != 50 || r0.(weir.BacklogReporter).Backlog() {
		t.Fatalf("after 100ms: %d + %d records, want 51 + 50 (records 0..100)", c0.n, c1.n)
	}
	if want := t0.UnixMilli() + 100; c0.lastTS != want || c1.lastTS != want-1 {
		t.Fatalf("last timestamps %d, %d, want %d, %d (the clock)", c0.lastTS, c1.lastTS, want, want-1)
	}
	clk.Advance(time.Hour)
	drain(r0, c0)
	if c0.n != 50000 {
		t.Fatalf("an hour later channel 0 emitted %d records, want all its 50000", c0.n)
	}
	if st, _ := r0.Read(context.Background(), c0); st != weir.Done {
		t.Fatalf("status %v after the last record, want Done", st)
	}

	// A reader restored at record 4001 of channel 1 starts its schedule
	// and its timestamps at the clock of its first read.
	src, _ = New(Options{Records: 100000, Rate: 1000, Keys: 5, Seed: 3, Pace: Wall, StartNow: true, Clock: clk})
	r, _ := src.Open(context.Background(), 1, 2)
	if err := r.(weir.CheckpointedReader).RestorePosition([]byte("genio1:4001")); err != nil {
		t.Fatal(err)
	}
	now := clk.Now()
	c := &count{}
	if drain(r, c); c.n != 0 {
		t.Fatalf("restored: %d records at once, want none (record 4001 is due 1ms after the first read)", c.n)
	}
	clk.Advance(11 * time.Millisecond)
	if drain(r, c); c.n != 6 || c.lastTS != now.UnixMilli()+11 {
		t.Fatalf("restored, 11ms on: %d records, last ts %d; want records 4001..4011 of channel 1, the last at %d", c.n, c.lastTS, now.UnixMilli()+11)
	}

	// Unpaced, a fixed start keeps the stream a function of the index.
	src, _ = New(Options{Records: 10, Rate: 1000, Keys: 5, Seed: 3, Start: 1767225600000})
	r, _ = src.Open(context.Background(), 0, 1)
	c = &count{}
	if st, _ := r.Read(context.Background(), c); st != weir.Emitted || c.n != 10 || c.lastTS != 1767225600009 || !r.(weir.BacklogReporter).Backlog() {
		t.Fatalf("unpaced: %d records, last ts %d, backlog %v", c.n, c.lastTS, r.(weir.BacklogReporter).Backlog())
	}
}

// TestPaceWallClock: paced by the wall clock at 50,000 records/s for 3s,
// two channels read as the engine reads them (Waiting: 1ms later) emit
// close to 150,000 records, never ahead of the schedule, with timestamps
// (start: now) at most a little behind the clock. Unpaced, the generator
// makes millions a second, so the bounds are generous for a busy machine
// and still fail without pacing.
func TestPaceWallClock(t *testing.T) {
	const rate, run = 50000, 3 * time.Second
	src, err := New(Options{Records: 1 << 40, Rate: rate, Keys: 100, Seed: 1, Pace: Wall, StartNow: true})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		n      int64
		maxLag int64 // ms the timestamps were behind the clock at most
		ahead  int64 // records emitted before their time
	}
	res := make([]result, 2)
	start := time.Now()
	var wg sync.WaitGroup
	for ch := range 2 {
		wg.Go(func() {
			r, _ := src.Open(context.Background(), ch, 2)
			c := &count{}
			res := &res[ch]
			for time.Since(start) < run {
				st, err := r.Read(context.Background(), c)
				if err != nil {
					t.Error(err)
					return
				}
				now := time.Now().UnixMilli()
				if c.n > 0 {
					res.maxLag = max(res.maxLag, now-c.lastTS)
					if c.lastTS > now {
						res.ahead++
					}
				}
				if st == weir.Waiting {
					time.Sleep(time.Millisecond)
				}
			}
			res.n = c.n
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	n := res[0].n + res[1].n
	want := float64(rate) * elapsed.Seconds()
	t.Logf("%d records in %v (%.0f/s, %.2f%% of the schedule); timestamps behind the clock by at most %d ms, %d ms",
		n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), 100*float64(n)/want, res[0].maxLag, res[1].maxLag)
	if float64(n) > want+2 || float64(n) < 0.9*want {
		t.Errorf("%d records in %v, want %.0f (rate × time): not paced", n, elapsed, want)
	}
	for ch, r := range res {
		if r.ahead > 0 || r.maxLag > 500 {
			t.Errorf("channel %d: %d records ahead of the clock, timestamps up to %d ms behind it", ch, r.ahead, r.maxLag)
		}
	}
}

// TestPaceAllocations: a paced Read allocates nothing beyond the records'
// text, however many records are due.
func TestPaceAllocations(t *testing.T) {
	clk := clock.NewFake(time.UnixMilli(1767225600000))
	src, _ := New(Options{Records: 1 << 40, Rate: 1e6, Keys: 100, Seed: 1, Pace: Wall, StartNow: true, Clock: clk})
	r, _ := src.Open(context.Background(), 0, 1)
	c := &count{}
	r.Read(context.Background(), c)
	paced := testing.AllocsPerRun(100, func() {
		clk.Advance(time.Millisecond) // 1000 records due, read in batches
		r.Read(context.Background(), c)
	})
	src, _ = New(Options{Records: 1 << 40, Rate: 1e6, Keys: 100, Seed: 1})
	r, _ = src.Open(context.Background(), 0, 1)
	unpaced := testing.AllocsPerRun(100, func() { r.Read(context.Background(), c) })
	if paced > unpaced {
		t.Fatalf("a paced read allocates %v times, an unpaced one %v", paced, unpaced)
	}
}
