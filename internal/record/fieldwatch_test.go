package record

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/connector/fileio"
	"github.com/weirstream/weir/spec"

	// The built-in kinds, which the specs of these tests name.
	_ "github.com/weirstream/weir/connector/all"
)

const watchJob = `
name: watch
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
key: [user_id]
window: {type: tumbling, size: 10s}
aggregate: [{name: total, fn: sum, field: amount}, {name: n, fn: count}]
sinks: {results: {type: jsonl, path: out.jsonl}}
`

// TestFieldWatch: the watch judges after 1,000 records, or once a second
// of the clock has passed since the first record, and warns once per
// configured field that none of them had, with a did-you-mean from the
// fields they did have; a field the first records have is never warned
// about, and after the judgment a record costs no more bookkeeping.
func TestFieldWatch(t *testing.T) {
	decodeN := func(d *Decoder, n int, line func(i int) string) {
		for i := range n {
			d.Decode(fileio.Line{Kind: fileio.Data, No: int64(i + 1), Text: []byte(line(i))})
		}
	}
	p, err := spec.Parse([]byte(watchJob))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("records", func(t *testing.T) {
		d := NewDecoder(p, clock.NewFake(testNow))
		var warned []FieldWarning
		d.WarnField = func(w FieldWarning) { warned = append(warned, w) }
		// amount only from record 1,001 on: too late for the watch.
		decodeN(d, 1500, func(i int) string {
			if i >= 1000 {
				return fmt.Sprintf(`{"user_id":"u","amount":1,"ts":%d}`, 1780272000000+i)
			}
			return fmt.Sprintf(`{"user_id":"u","amnt":1,"ts":%d}`, 1780272000000+i)
		})
		if len(warned) != 1 || warned[0].Path != "aggregate[0].field" || warned[0].Records != watchRecords || warned[0].Fatal() ||
			!strings.Contains(warned[0].String(), `did you mean "amnt"?`) {
			t.Fatalf("warned %+v", warned)
		}
		if got := d.FieldWarnings(); len(got) != 1 {
			t.Fatalf("kept %+v", got)
		}
	})
	t.Run("clock", func(t *testing.T) {
		clk := clock.NewFake(testNow)
		d := NewDecoder(p, clk)
		// A slow source: 100 records over 2 s; the key is misspelled.
		decodeN(d, 100, func(i int) string {
			if i == 50 {
				clk.Advance(2 * time.Second)
			}
			return fmt.Sprintf(`{"userid":"u","amount":1,"ts":%d}`, 1780272000000+i)
		})
		w := d.FieldWarnings()
		if len(w) != 1 || w[0].Path != "key" || !w[0].Fatal() || w[0].Records != 64 || !strings.Contains(w[0].Fix, `did you mean "userid"?`) {
			t.Fatalf("after a second: %+v", w)
		}
	})
	t.Run("present", func(t *testing.T) {
		d := NewDecoder(p, clock.NewFake(testNow))
		decodeN(d, 10, func(i int) string {
			return fmt.Sprintf(`{"user_id":"u","amount":1,"ts":%d}`, 1780272000000+i)
		})
		d.Judge() // the end of a short run
		if w := d.FieldWarnings(); len(w) != 0 || !d.watch.Done.Load() {
			t.Fatalf("fields present: %+v", w)
		}
	})
	t.Run("allocs", func(t *testing.T) {
		d := NewDecoder(p, clock.NewFake(testNow))
		line := []byte(`{"user_id":"u","amount":1,"ts":1780272000000}`)
		decodeN(d, watchRecords, func(int) string { return string(line) })
		l := fileio.Line{Kind: fileio.Data, No: 1, Text: line}
		// After the judgment the watch is not called at all.
		n := d.watch.N.Load()
		decodeN(d, 100, func(int) string { return string(line) })
		if !d.watch.Done.Load() || d.watch.N.Load() != n {
			t.Fatalf("the watch went on after its judgment: %d records, then %d", n, d.watch.N.Load())
		}
		if raceOn {
			t.Skip("the race detector's sync.Pool drops items on purpose: allocations are counted without it")
		}
		if a := testing.AllocsPerRun(1000, func() { d.Decode(l) }); a > 0 {
			t.Fatalf("%v allocations per record after the watch", a)
		}
	})
}

// TestBrokerTimestamps: with timestamp.source kafka or nats the source
// gives the timestamp, so a record without a timestamp field is no dead
// letter, and the field watch does not ask for one.
func TestBrokerTimestamps(t *testing.T) {
	for _, src := range []string{
		"{type: kafka, kafka: {brokers: ['127.0.0.1:1'], topic: in}, timestamp: {source: kafka}}",
		"{type: nats, nats: {url: 'nats://127.0.0.1:1', stream: in}, timestamp: {source: nats}}",
	} {
		p, err := spec.Parse([]byte(`name: broker
source: ` + src + `
watermark: {max_out_of_orderness: 1s}
key: [user_id]
window: {type: tumbling, size: 10s}
aggregate: [{name: n, fn: count}]
sinks: {results: {type: jsonl, path: out.jsonl}}
`))
		if err != nil {
			t.Fatal(err)
		}
		d := NewDecoder(p, clock.NewFake(testNow))
		if _, err := d.Decode(fileio.Line{Kind: fileio.Data, No: 1, Text: []byte(`{"user_id":"u"}`), Unchecked: true}); err != nil {
			t.Errorf("%s: a record without a ts field: %v", src, err)
		}
		d.Judge()
		if w := d.FieldWarnings(); len(w) != 0 {
			t.Errorf("%s: field warnings %v", src, w)
		}
	}
}

// testNow is the processing time of the tests' fake clocks.
var testNow = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

// TestWhenFieldWatched: an aggregate's when that names a field the
// records never have is warned about (its aggregate takes nothing).
func TestWhenFieldWatched(t *testing.T) {
	p, err := spec.Parse([]byte(`name: when
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
key: [user_id]
window: {type: tumbling, size: 10s}
computed: [{name: big, expr: "amount > 5"}]
aggregate: [{name: n, fn: count, when: bgi}, {name: m, fn: count, when: big}]
sinks: {results: {type: jsonl, path: out.jsonl}}
`))
	if err != nil {
		t.Fatal(err)
	}
	d := NewDecoder(p, clock.NewFake(testNow))
	if _, err := d.Decode(fileio.Line{Kind: fileio.Data, No: 1, Text: []byte(`{"user_id":"u","amount":9,"ts":1767225600000}`)}); err != nil {
		t.Fatal(err)
	}
	d.Judge()
	w := d.FieldWarnings()
	if len(w) != 1 || w[0].Field != "bgi" || w[0].Path != "aggregate[0].when" {
		t.Errorf("field warnings %v, want one for aggregate[0].when bgi", w)
	}
}

// TestDottedKeyWatched: a key named with a dot is a field of that name;
// when the records hold its root instead, the warning says how to read
// the nested field, and with null_keys what its absence does (the records
// fall into one null key: no dead letters).
func TestDottedKeyWatched(t *testing.T) {
	job := strings.Replace(watchJob, "key: [user_id]", "key: [u.id]\nnull_keys: true", 1)
	p, err := spec.Parse([]byte(job))
	if err != nil {
		t.Fatal(err)
	}
	d := NewDecoder(p, clock.NewFake(testNow))
	var warned []FieldWarning
	d.WarnField = func(w FieldWarning) { warned = append(warned, w) }
	for i := range 10 {
		if _, err := d.Decode(fileio.Line{Kind: fileio.Data, No: int64(i + 1), Text: fmt.Appendf(nil, `{"u":{"id":%d},"amount":1,"ts":%d}`, i%3, 1780272000000+i)}); err != nil {
			t.Fatalf("record %d: %v (null_keys: a null key, no dead letter)", i, err)
		}
	}
	d.Judge()
	if len(warned) != 1 || !strings.Contains(warned[0].String(), "null (null_keys: true)") ||
		!strings.Contains(warned[0].String(), `computed: [{name: u_id, expr: "u.id"}]`) {
		t.Fatalf("warned %+v", warned)
	}
}
