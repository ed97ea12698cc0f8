package fileio

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/etime"
)

// check compares the lines of res in emission order with want.
func check(t *testing.T, name string, res *result, want ...string) {
	t.Helper()
	if got := texts(res.all()); !slices.Equal(got, want) {
		t.Errorf("%s:\ngot  %q\nwant %q", name, got, want)
	}
}

func TestFraming(t *testing.T) {
	data := "{\"a\":1}\r\n\n   \n\t\r\n  {\"b\":2}  \r\n{\"c\":3}"
	for name, res := range runModes(t, Options{}, data) {
		check(t, name, res, `1:0:data:{"a":1}`, `5:0:data:{"b":2}`, `6:0:data:{"c":3}`)
		if wms := res.chans[0].wms; !slices.Equal(wms, []etime.Time{etime.MaxTime}) {
			t.Errorf("%s: watermarks %v, want the final MAX", name, wms)
		}
	}
	// Not JSON: data all the same, for the decoder to report.
	res := mustRun(t, Options{Input: strings.NewReader("hello\n{\"$channel\": \n[\"$idle\"]\n{\"a\":\"$x\"}")})
	check(t, "not json", res, `1:0:data:hello`, `2:0:data:{"$channel":`, `3:0:data:["$idle"]`, `4:0:data:{"a":"$x"}`)
}

func TestEmptyInput(t *testing.T) {
	for _, format := range []Format{JSONL, CSV} {
		for name, res := range runModes(t, Options{Format: format, Channels: 2}, "") {
			check(t, format.String()+" "+name, res)
			for _, o := range res.chans {
				if len(o.wms) != 1 {
					t.Errorf("%s: channel %d watermarks %v", name, o.ch, o.wms)
				}
			}
		}
	}
}

func TestLineTooLong(t *testing.T) {
	long := strings.Repeat("x", 3<<20)
	data := "{\"a\":1}\n" + long + "\r\n\n{\"b\":2}\n" + long
	for name, res := range runModes(t, Options{}, data) {
		ls := res.all()
		check(t, name, res, `1:0:data:{"a":1}`, `2:0:bad:line_too_long`, `4:0:data:{"b":2}`, `5:0:bad:line_too_long`)
		if len(ls) != 4 {
			continue
		}
		for _, l := range []Line{ls[1], ls[3]} {
			if len(l.Text) != 1<<20 || l.Text[0] != 'x' {
				t.Errorf("%s: text of %d bytes", name, len(l.Text))
			}
			if l.Detail != "the line is longer than the limit of 1048576 bytes" {
				t.Errorf("%s: detail %q", name, l.Detail)
			}
		}
	}
	// A line exactly at the limit is fine, and its "\r" does not count.
	res := mustRun(t, Options{MaxLine: 5, Input: strings.NewReader("12345\r\n123456\n   \n")})
	check(t, "limit", res, `1:0:data:12345`, `2:0:bad:line_too_long`)
}

// TestLineTooLongMemory checks that an overlong line is streamed through:
// reading a 3 MiB line with a 64 KiB limit allocates far less than 3 MiB.
func TestLineTooLongMemory(t *testing.T) {
	long := bytes.Repeat([]byte("y"), 3<<20)
	data := append(append([]byte("{}\n"), long...), "\n{}\n"...)
	path := writeFile(t, "long", string(data))
	for _, strict := range []bool{false, true} {
		src, err := New(Options{Path: path, MaxLine: 64 << 10, Strict: strict})
		if err != nil {
			t.Fatal(err)
		}
		rs := openAll(t, src, 1)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		res, err := poll(t, rs)
		runtime.ReadMemStats(&after)
		rs[0].Close()
		if err != nil {
			t.Fatal(err)
		}
		check(t, "memory", res, `1:0:data:{}`, `2:0:bad:line_too_long`, `3:0:data:{}`)
		n := after.TotalAlloc - before.TotalAlloc
		t.Logf("strict %v: %d bytes allocated", strict, n)
		if n > 1<<20 {
			t.Errorf("strict %v: reading allocated %d bytes", strict, n)
		}
	}
}

func TestUTF8Invalid(t *testing.T) {
	data := "{\"a\":\"ok é\"}\n{\"a\":\"\xff\"}\n{\"$channel\":1,\"a\":\"\xc3\"}\n"
	for name, res := range runModes(t, Options{Channels: 2}, data) {
		check(t, name, res, `1:0:data:{"a":"ok é"}`, `2:0:bad:utf8_invalid`, `3:0:bad:utf8_invalid`)
		if ls := res.all(); len(ls) == 3 {
			if ls[1].Detail != "invalid UTF-8 at byte offset 6 of the line" || string(ls[1].Text) != "{\"a\":\"\xff\"}" {
				t.Errorf("%s: %q %q", name, ls[1].Detail, ls[1].Text)
			}
		}
	}
}

func TestChannelRouting(t *testing.T) {
	data := `{"n":1}
{"$channel":1,"n":2}
{"$channel":2,"n":3}
{"n":4,"$channel":0}
{"$channel":2,"$watermark":7}
{"$idle":true,"$channel":1}
{"$channel":1,"n":7}
`
	want := [][]string{
		{`1:0:data:{"n":1}`, `4:0:data:{"n":4}`},
		{`2:1:data:{"n":2}`, `6:1:idle`, `7:1:data:{"n":7}`},
		{`3:2:data:{"n":3}`, `5:2:watermark:7`},
	}
	for name, res := range runModes(t, Options{Channels: 3}, data) {
		for ch, o := range res.chans {
			if got := texts(o.lines); !slices.Equal(got, want[ch]) {
				t.Errorf("%s channel %d: got %q, want %q", name, ch, got, want[ch])
			}
			if !slices.Equal(o.wms, []etime.Time{etime.MaxTime}) {
				t.Errorf("%s channel %d: watermarks %v", name, ch, o.wms)
			}
		}
	}
}

func TestStrictOrder(t *testing.T) {
	var b strings.Builder
	var want []string
	for i := 1; i <= 2000; i++ {
		ch := (i / 3 * 7) % 4 // runs of lines on a channel, then a jump
		if i%11 == 0 {
			b.WriteString("\n") // blank lines do not count
			i++
		}
		b.WriteString(`{"$channel":` + itoa(int64(ch)) + `,"i":` + itoa(int64(i)) + "}\n")
		want = append(want, itoa(int64(i))+":"+itoa(int64(ch))+`:data:{"i":`+itoa(int64(i))+"}")
	}
	path := writeFile(t, "strict", b.String())
	for _, stdin := range []bool{false, true} {
		o := Options{Channels: 4, Strict: true, Batch: 7, Path: path}
		if stdin {
			o.Input = strings.NewReader(b.String())
		}
		res := mustRun(t, o)
		check(t, "strict", res, want...)
	}
}

// slowReader returns its data a few bytes at a time, after a pause.
type slowReader struct {
	data  []byte
	pause time.Duration
}

func (r *slowReader) Read(b []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	time.Sleep(r.pause)
	n := copy(b[:min(len(b), 3)], r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestStrictSlowInput(t *testing.T) {
	data := "{\"$channel\":1}\n{}\n{\"$channel\":1}\n{\"$channel\":1}\n{}\n"
	res := mustRun(t, Options{Channels: 2, Strict: true, Input: &slowReader{data: []byte(data), pause: 100 * time.Microsecond}})
	check(t, "slow", res, `1:1:data:{}`, `2:0:data:{}`, `3:1:data:{}`, `4:1:data:{}`, `5:0:data:{}`)
}

// TestStdinPipe feeds a pipe slowly: Read never blocks, returns Waiting
// while nothing is there, and the lines come out as they are written.
func TestStdinPipe(t *testing.T) {
	for _, strict := range []bool{false, true} {
		pr, pw := io.Pipe()
		src, err := New(Options{Input: pr, Channels: 2, Strict: strict})
		if err != nil {
			t.Fatal(err)
		}
		rs := openAll(t, src, 2)
		outs := []*fakeOut{{ch: 0}, {ch: 1}}
		// readAll polls both channels once and checks neither blocks.
		readAll := func() (sts [2]weir.ReadStatus) {
			for ch, r := range rs {
				start := time.Now()
				st, err := r.Read(context.Background(), outs[ch])
				if err != nil {
					t.Fatal(err)
				}
				if d := time.Since(start); d > 200*time.Millisecond {
					t.Fatalf("Read blocked for %v", d)
				}
				sts[ch] = st
			}
			return sts
		}
		for range 5 {
			if sts := readAll(); sts != [2]weir.ReadStatus{weir.Waiting, weir.Waiting} {
				t.Fatalf("statuses %v on an empty pipe", sts)
			}
		}
		// waitFor polls until the channels have emitted n lines in all.
		waitFor := func(n int) {
			t.Helper()
			deadline := time.Now().Add(10 * time.Second)
			for len(outs[0].lines)+len(outs[1].lines) < n {
				if time.Now().After(deadline) {
					t.Fatalf("strict %v: waiting for %d lines, have %d and %d", strict, n, len(outs[0].lines), len(outs[1].lines))
				}
				readAll()
				time.Sleep(time.Millisecond)
			}
		}
		writes := []string{"{\"a\":", "1}\n", "{\"$channel\":1,\"b\":2}\n{\"c\":3}\n", "\n", "{\"d\":4}"}
		counts := []int{0, 1, 3, 3, 3}
		// Each write on a goroutine of its own (an io.Pipe write waits
		// for the reader), after the one before it: on a loaded machine
		// two goroutines may otherwise write in either order.
		prev := make(chan struct{})
		close(prev)
		for i, w := range writes {
			done := make(chan struct{})
			go func(prev <-chan struct{}) {
				<-prev
				pw.Write([]byte(w))
				close(done)
			}(prev)
			prev = done
			waitFor(counts[i])
			time.Sleep(5 * time.Millisecond)
			if sts := readAll(); sts[0] != weir.Waiting && sts[1] != weir.Waiting {
				t.Fatalf("statuses %v while the pipe is open", sts)
			}
		}
		<-prev
		pw.Close()
		waitFor(4)
		var sts [2]weir.ReadStatus
		for sts != [2]weir.ReadStatus{weir.Done, weir.Done} {
			s := readAll()
			for ch := range s {
				if sts[ch] != weir.Done {
					sts[ch] = s[ch]
				}
			}
		}
		if got := texts(append(outs[0].lines, outs[1].lines...)); !slices.Equal(got, []string{`1:0:data:{"a":1}`, `3:0:data:{"c":3}`, `5:0:data:{"d":4}`, `2:1:data:{"b":2}`}) {
			t.Errorf("strict %v: got %q", strict, got)
		}
		for _, r := range rs {
			r.Close()
		}
	}
}

// TestStdinClose closes the readers while the pipe is still open and
// nobody read: no goroutine may stay (goleak checks) once the pipe closes.
func TestStdinClose(t *testing.T) {
	pr, pw := io.Pipe()
	src, err := New(Options{Input: pr, Channels: 2})
	if err != nil {
		t.Fatal(err)
	}
	rs := openAll(t, src, 2)
	out := &fakeOut{}
	if st, err := rs[0].Read(context.Background(), out); st != weir.Waiting || err != nil {
		t.Fatalf("Read: %v %v", st, err)
	}
	go func() {
		pw.Write([]byte(strings.Repeat("{\"a\":1}\n", 100000)))
	}()
	time.Sleep(10 * time.Millisecond)
	for _, r := range rs {
		r.Close()
	}
	pw.Close()
	if _, err := src.Open(context.Background(), 0, 2); err == nil {
		t.Error("a closed stdin source opened again")
	}
}

func TestChannelInvalid(t *testing.T) {
	data := `{"$channel":3,"a":1}
{"$channel":-1}
{"$channel":"1"}
{"$channel":1.0}
{"$channel":1e0}
{"$channel":null,"$idle":true}
{"$channel":2}
`
	res := mustRun(t, Options{Channels: 3, Input: strings.NewReader(data)})
	check(t, "invalid", res, `1:0:bad:channel_invalid`, `2:0:bad:channel_invalid`, `3:0:bad:channel_invalid`,
		`4:0:bad:channel_invalid`, `5:0:bad:channel_invalid`, `6:0:bad:channel_invalid`, `7:2:data:{}`)
	ls := res.all()
	if ls[0].Detail != "$channel 3 is not a channel number in 0..2" || ls[2].Detail != `$channel "1" is not a channel number in 0..2` {
		t.Errorf("details %q, %q", ls[0].Detail, ls[2].Detail)
	}
	if string(ls[0].Text) != `{"$channel":3,"a":1}` {
		t.Errorf("text %q", ls[0].Text)
	}
}

func TestControlLines(t *testing.T) {
	data := `{"$watermark": 1767225600000}
 {"$idle":true} 
{"$watermark":-5}
{"$watermark":"5"}
{"$watermark":5.5}
{"$watermark":99999999999999999999}
{"$idle":false}
{"$idle":"true"}
{"$idle":true,"a":1}
{"a":1,"$watermark":3}
{"$watermark":1,"$idle":true}
{"$foo":1}
{"a":1,"$foo":1,"$channel":0}
{"$idle":true,"$idle":true}
{"$channel":0,"$channel":0}
{"a":{"$watermark":1},"b":["$idle"]}
{"$watermark":9223372036854775807}
`
	res := mustRun(t, Options{Input: strings.NewReader(data)})
	check(t, "control", res,
		`1:0:watermark:1767225600000`, `2:0:idle`, `3:0:watermark:-5`,
		`4:0:bad:control_invalid`, `5:0:bad:control_invalid`, `6:0:bad:control_invalid`,
		`7:0:bad:control_invalid`, `8:0:bad:control_invalid`, `9:0:bad:control_invalid`,
		`10:0:bad:control_invalid`, `11:0:bad:control_invalid`, `12:0:bad:control_invalid`,
		`13:0:bad:control_invalid`, `14:0:bad:control_invalid`, `15:0:bad:control_invalid`,
		`16:0:data:{"a":{"$watermark":1},"b":["$idle"]}`, `17:0:watermark:+inf`)
	details := map[int64]string{
		4:  `$watermark must be an integer (milliseconds), got "5"`,
		7:  `$idle must be true, got false`,
		9:  `a control line has no data fields, found "a"`,
		11: `$watermark and $idle cannot be on one line`,
		12: `unknown control key $foo; known: $channel, $watermark, $idle`,
		14: `control key $idle appears twice`,
	}
	for _, l := range res.all() {
		if d, ok := details[l.No]; ok && l.Detail != d {
			t.Errorf("line %d: detail %q, want %q", l.No, l.Detail, d)
		}
		if l.Kind == Watermark || l.Kind == Idle {
			if l.Text != nil {
				t.Errorf("line %d: control line with text %q", l.No, l.Text)
			}
		}
	}
	if l := res.all()[1]; string(l.Text) != "" {
		t.Errorf("idle text %q", l.Text)
	}
	if l := res.all()[3]; string(l.Text) != `{"$watermark":"5"}` {
		t.Errorf("bad text %q", l.Text)
	}
}

func TestStripControlKeys(t *testing.T) {
	data := `  {"b": 1.50, "$channel": 1, "a": "x\u00e9\"", "c": {"d": [1, 2.0e0, "$e"], "\u0066": null}, "é\u0041":true}  ` + "\n" +
		`{"$channel":0}` + "\n"
	res := mustRun(t, Options{Channels: 2, Strict: true, Input: strings.NewReader(data)})
	check(t, "strip", res,
		`1:1:data:{"b":1.50,"a":"x\u00e9\"","c":{"d":[1,2.0e0,"$e"],"\u0066":null},"éA":true}`,
		`2:0:data:{}`)
}

func TestCSV(t *testing.T) {
	data := "\n  \nid,name,amount,$channel,note\r\n" +
		"1,alice,2.50,1,\n" +
		"\n" +
		"2,\"bob, \"\"the\"\" builder\",-3e2,x,\"multi\r\nline\n\nnote\"\n" +
		"3,\"é\tü\",007,,+1\n" +
		"4,a,b\n" +
		"5,a\"b,1,2,3\n" +
		"6,\"a\"b,1,2,3\n" +
		"7,\xff,1,2,3\n" +
		"8,NaN,Inf,1e999,0.5\n" +
		"9,\" \",.5,5.,-0\n" +
		"11,\"\",,\"\",\"\"\n" + // a quoted empty cell is "", an unquoted one null
		"10,\"open,1,2,3\n"
	want := []string{
		`4:0:data:{"id":1,"name":"alice","amount":2.50,"$channel":1,"note":null}`,
		`6:0:data:{"id":2,"name":"bob, \"the\" builder","amount":-3e2,"$channel":"x","note":"multi\r\nline\n\nnote"}`,
		`10:0:data:{"id":3,"name":"é\tü","amount":"007","$channel":null,"note":"+1"}`,
		`11:0:bad:csv_malformed`,
		`12:0:bad:csv_malformed`,
		`13:0:bad:csv_malformed`,
		`14:0:bad:utf8_invalid`,
		`15:0:data:{"id":8,"name":"NaN","amount":"Inf","$channel":"1e999","note":0.5}`,
		`16:0:data:{"id":9,"name":" ","amount":".5","$channel":"5.","note":-0}`,
		`17:0:data:{"id":11,"name":"","amount":null,"$channel":"","note":""}`,
		`18:0:bad:csv_malformed`,
	}
	for name, res := range runModes(t, Options{Format: CSV, Channels: 2}, data) {
		check(t, name, res, want...)
		ls := res.all()
		if len(ls) != len(want) {
			continue
		}
		details := map[int]string{
			3:  "row has 3 fields, header has 5",
			4:  `bare " in non-quoted field (line 12, column 4)`,
			5:  `extraneous or missing " in quoted field (line 13, column 5)`,
			10: `extraneous or missing " in quoted field (line 18, column 15)`,
		}
		for i, d := range details {
			if ls[i].Detail != d {
				t.Errorf("%s: line %d: detail %q, want %q", name, ls[i].No, ls[i].Detail, d)
			}
		}
		if string(ls[3].Text) != "4,a,b" || string(ls[10].Text) != "10,\"open,1,2,3" {
			t.Errorf("%s: raw rows %q, %q", name, ls[3].Text, ls[10].Text)
		}
		if len(res.chans[1].lines) != 0 || len(res.chans[1].wms) != 1 {
			t.Errorf("%s: channel 1 emitted %d lines, %v", name, len(res.chans[1].lines), res.chans[1].wms)
		}
	}
}

// TestCSVColumns: with Columns, as Flink's CSV format maps columns by
// position, the first row is data unless it names the columns (in any
// order and case, among others: a header, which maps them by name), and
// the records' fields are the columns' names.
func TestCSVColumns(t *testing.T) {
	cols := []string{"u", "v"}
	for name, res := range runModes(t, Options{Format: CSV, Columns: cols}, "\nalice,10\nbob,\"x,y\"\ncarl\n") {
		check(t, "no header "+name, res, `2:0:data:{"u":"alice","v":10}`, `3:0:data:{"u":"bob","v":"x,y"}`, `4:0:bad:csv_malformed`)
		if ls := res.all(); len(ls) == 3 && ls[2].Detail != "row has 1 fields, the table 2 columns" {
			t.Errorf("%s: detail %q", name, ls[2].Detail)
		}
	}
	for name, res := range runModes(t, Options{Format: CSV, Columns: cols}, "U,V\nalice,10\n") {
		check(t, "header "+name, res, `2:0:data:{"u":"alice","v":10}`)
	}
	for name, res := range runModes(t, Options{Format: CSV, Columns: cols}, "v,U\n10,alice\n") {
		check(t, "header in another order "+name, res, `2:0:data:{"v":10,"u":"alice"}`)
	}
	for name, res := range runModes(t, Options{Format: CSV, Columns: cols}, "id,V,u\n7,10,alice\n") {
		check(t, "header with another column "+name, res, `2:0:data:{"id":7,"v":10,"u":"alice"}`)
	}
	for name, res := range runModes(t, Options{Format: CSV, Columns: cols}, "alice\n") {
		check(t, "one short row "+name, res, `1:0:bad:csv_malformed`)
	}
}

func TestCSVTooLong(t *testing.T) {
	data := "a,b\n" + "1,\"" + strings.Repeat("x\n", 100) + "\",2\n" + "3,4\n" + "5,\"" + strings.Repeat("y", 100) + "\n\"\n6,7"
	for name, res := range runModes(t, Options{Format: CSV, MaxLine: 50}, data) {
		check(t, name, res, `2:0:bad:line_too_long`, `103:0:data:{"a":3,"b":4}`, `104:0:bad:line_too_long`, `106:0:data:{"a":6,"b":7}`)
		if ls := res.all(); len(ls) == 4 && (len(ls[0].Text) != 50 || len(ls[2].Text) != 50) {
			t.Errorf("%s: texts %q, %q", name, ls[0].Text, ls[2].Text)
		}
	}
}

func TestCSVHeaderErrors(t *testing.T) {
	cases := map[string]string{
		"a,,b\n1,2,3\n":     `csv header (line 1): column 2 has an empty name`,
		"\na,b,a\n":         `csv header (line 2): duplicate column name "a" (columns 1 and 3)`,
		"a,\"b\n":           `csv header (line 1): extraneous or missing " in quoted field (line 1, column 5)`,
		"a,b\xff\n1,2\n":    `csv header (line 1) is not valid UTF-8 (byte offset 3)`,
		"abcdef,g\n1,2\n":   `csv header (line 1) is longer than the limit of 4 bytes`,
		"a,\"\"\"b\"\"\"\n": ``,
	}
	for data, want := range cases {
		path := writeFile(t, "h.csv", data)
		if want == "" {
			if _, err := New(Options{Path: path, Format: CSV}); err != nil {
				t.Errorf("%q: %v", data, err)
			}
			continue
		}
		maxLine := 0
		if strings.Contains(want, "limit") {
			maxLine = 4
		}
		_, err := New(Options{Path: path, Format: CSV, MaxLine: maxLine})
		if err == nil || err.Error() != path+": "+want {
			t.Errorf("file %q: error %v, want %s", data, err, want)
		}
		// From stdin, the first Read reports it.
		src, err := New(Options{Input: strings.NewReader(data), Format: CSV, MaxLine: maxLine})
		if err != nil {
			t.Fatal(err)
		}
		_, err = run(t, src, 1)
		if err == nil || err.Error() != "stdin: "+want {
			t.Errorf("stdin %q: error %v, want %s", data, err, want)
		}
	}
}

func TestFinal(t *testing.T) {
	var calls atomic.Int32
	final := func() bool { calls.Add(1); return false }
	for name, res := range runModes(t, Options{Channels: 3, Final: final}, "{}\n{\"$channel\":2}\n") {
		check(t, name, res, `1:0:data:{}`, `2:2:data:{}`)
		for _, o := range res.chans {
			if len(o.wms) != 0 {
				t.Errorf("%s: watermarks %v", name, o.wms)
			}
		}
	}
	if n := calls.Load(); n != 3*4 {
		t.Errorf("Final called %d times, want 12", n)
	}
}

func TestStop(t *testing.T) {
	data := strings.Repeat("{}\n", 1000)
	for _, m := range modes {
		var stop atomic.Bool
		o := Options{Batch: 10, Strict: m.strict, Channels: 2, Stop: stop.Load}
		if m.stdin {
			o.Input = strings.NewReader(data)
		} else {
			o.Path = writeFile(t, "stop", data)
		}
		src, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		rs := openAll(t, src, 2)
		out := &fakeOut{}
		for len(out.lines) == 0 {
			if _, err := rs[0].Read(context.Background(), out); err != nil {
				t.Fatal(err)
			}
		}
		stop.Store(true)
		res, err := poll(t, rs)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(res.order); n != 0 {
			t.Errorf("%s: %d lines after Stop", m.name, n)
		}
		for _, o := range res.chans {
			if !slices.Equal(o.wms, []etime.Time{etime.MaxTime}) {
				t.Errorf("%s: watermarks %v", m.name, o.wms)
			}
		}
		for _, r := range rs {
			r.Close()
		}
	}
}

func TestMissingFile(t *testing.T) {
	t.Chdir(t.TempDir())
	_, err := New(Options{Path: "orders.jsonl"})
	if err == nil || err.Error() != "open orders.jsonl: no such file or directory" {
		t.Errorf("error %v", err)
	}
	_, err = New(Options{Path: filepath.Join(t.TempDir(), "orders.jsonl"), Name: "orders.jsonl"})
	if err == nil || err.Error() != "open orders.jsonl: no such file or directory" {
		t.Errorf("error %v", err)
	}
	os.Mkdir("dir", 0o755)
	if _, err := New(Options{Path: "dir"}); err == nil || !strings.HasPrefix(err.Error(), "open dir: is a directory: weir reads one file") {
		t.Errorf("error %v", err)
	}
	if _, err := New(Options{}); err == nil {
		t.Error("no input: no error")
	}
}

// errReader returns data, then an error.
type errReader struct {
	data string
	err  error
}

func (r *errReader) Read(b []byte) (int, error) {
	if r.data == "" {
		return 0, r.err
	}
	n := copy(b, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestReadError(t *testing.T) {
	boom := errors.New("boom")
	for _, strict := range []bool{false, true} {
		src, err := New(Options{Input: &errReader{data: "{}\n{}\n{\"a\"", err: boom}, Name: "in.jsonl", Strict: strict})
		if err != nil {
			t.Fatal(err)
		}
		res, err := run(t, src, 1)
		if !errors.Is(err, boom) || err.Error() != "read in.jsonl: boom" {
			t.Errorf("error %v", err)
		}
		if n := len(res.order); n != 2 {
			t.Errorf("%d lines before the error", n)
		}
	}
}

func TestPosition(t *testing.T) {
	data := "{}\n\n{\"$channel\":1}\r\n{}\n\n"
	path := writeFile(t, "pos", data)
	for _, m := range modes {
		o := Options{Channels: 2, Strict: m.strict, Batch: 1}
		if m.stdin {
			o.Input = strings.NewReader(data)
		} else {
			o.Path = path
		}
		src, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		rs := openAll(t, src, 2)
		if _, err := poll(t, rs); err != nil {
			t.Fatal(err)
		}
		pos := func(ch int) [2]int64 {
			off, line := rs[ch].(*Reader).Position()
			return [2]int64{off, line}
		}
		if p0, p1 := pos(0), pos(1); p0 != [2]int64{23, 4} || p1 != [2]int64{20, 3} {
			t.Errorf("%s: positions %v %v", m.name, p0, p1)
		}
		for _, r := range rs {
			r.Close()
		}
	}
}

func TestOpenChecks(t *testing.T) {
	src, err := New(Options{Input: strings.NewReader(""), Channels: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Open(context.Background(), 0, 3); err == nil {
		t.Error("Open with another channel count: no error")
	}
	if _, err := New(Options{Input: strings.NewReader(""), Format: 7}); err == nil {
		t.Error("unknown format: no error")
	}
}

func TestBatch(t *testing.T) {
	path := writeFile(t, "batch", strings.Repeat("{}\n", 25))
	for _, strict := range []bool{false, true} {
		src, err := New(Options{Path: path, Batch: 10, Strict: strict})
		if err != nil {
			t.Fatal(err)
		}
		rs := openAll(t, src, 1)
		out := &fakeOut{}
		var sizes []int
		for {
			n := len(out.lines)
			st, err := rs[0].Read(context.Background(), out)
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, len(out.lines)-n)
			if st == weir.Done {
				break
			}
		}
		rs[0].Close()
		if !slices.Equal(sizes, []int{10, 10, 5, 0}) && !slices.Equal(sizes, []int{10, 10, 5}) {
			t.Errorf("strict %v: batches %v", strict, sizes)
		}
	}
}

// TestNamedPipe reads a FIFO given as a path: it is read once and shared.
func TestNamedPipe(t *testing.T) {
	path := fifo(t, "{}\n{\"$channel\":1}\n")
	res := mustRun(t, Options{Path: path, Channels: 2, Strict: true})
	check(t, "fifo", res, `1:0:data:{}`, `2:1:data:{}`)
}

func TestBOM(t *testing.T) {
	res := mustRun(t, Options{Input: strings.NewReader("\ufeff{\"a\":1}\n\ufeff{}\n")})
	check(t, "jsonl", res, `1:0:data:{"a":1}`, "2:0:data:\ufeff{}")
	for name, res := range runModes(t, Options{Format: CSV}, "\ufeffid,x\r\n1,2\n") {
		check(t, name, res, `2:0:data:{"id":1,"x":2}`)
	}
	// The mark does not count against the limit, even in a line longer
	// than the read buffer.
	const max = 2*readBufSize - 2
	long := strings.Repeat("x", max)
	res = mustRun(t, Options{MaxLine: max, Input: strings.NewReader("\ufeff" + long + "\n" + long + "x\n{}")})
	check(t, "long", res, "1:0:data:"+long, "2:0:bad:line_too_long", "3:0:data:{}")
}

// nopOut discards what a reader emits.
type nopOut struct{ n int }

func (o *nopOut) Emit(ts etime.Time, l Line)  { o.n++ }
func (o *nopOut) EmitWatermark(wm etime.Time) {}
func (o *nopOut) MarkIdle()                   {}
func (o *nopOut) MarkActive()                 {}

func BenchmarkRead(b *testing.B) {
	const lines = 100000
	jsonl := strings.Repeat(`{"order_id":17,"user_id":"u042","amount":250,"ts":1767225600000}`+"\n", lines)
	csv := "order_id,user_id,amount,ts\n" + strings.Repeat("17,u042,250,1767225600000\n", lines)
	for _, c := range []struct {
		name string
		data string
		o    Options
	}{
		{"jsonl-file", jsonl, Options{}},
		{"jsonl-file-strict", jsonl, Options{Strict: true}},
		{"jsonl-stdin", jsonl, Options{Input: strings.NewReader("")}},
		{"csv-file", csv, Options{Format: CSV}},
	} {
		b.Run(c.name, func(b *testing.B) {
			path := writeFile(b, "in", c.data)
			b.SetBytes(int64(len(c.data)))
			for b.Loop() {
				o := c.o
				if o.Input != nil {
					o.Input = strings.NewReader(c.data)
				} else {
					o.Path = path
				}
				src, err := New(o)
				if err != nil {
					b.Fatal(err)
				}
				r, err := src.Open(context.Background(), 0, 1)
				if err != nil {
					b.Fatal(err)
				}
				out := &nopOut{}
				for {
					st, err := r.Read(context.Background(), out)
					if err != nil {
						b.Fatal(err)
					}
					if st == weir.Done {
						break
					}
				}
				r.Close()
				if out.n != lines {
					b.Fatalf("%d lines", out.n)
				}
			}
		})
	}
}

func TestDeepJSON(t *testing.T) {
	deep := `{"$channel":1,"a":` + strings.Repeat("[", 400000) + strings.Repeat("]", 400000) + "}"
	res := mustRun(t, Options{Channels: 2, Input: strings.NewReader(deep + "\n")})
	check(t, "deep", res, "1:0:data:"+deep)
}
