package fileio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc64"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/etime"
)

// cutRun opens the channels of a new source of o, restores them at pos
// (unless nil), and polls them round robin to the end as poll does. It
// snapshots the channels' positions along the way: in strict mode every
// channel after cut Read calls in all (as the deterministic executor
// injects a checkpoint between two polls), otherwise channel ch after
// cut+ch Read calls of its own (each at its own moment). A channel done
// before is snapshotted at its end. It returns what the channels emitted,
// the positions and how many lines each channel had emitted before its
// snapshot.
func cutRun(t testing.TB, o Options, pos [][]byte, cut int) (res *result, snaps [][]byte, before []int) {
	res, snaps, before, _, _ = cutRunCount(t, o, pos, cut)
	return
}

// cutRunCount is cutRun that also returns the Read calls in all and the
// most of one channel. A negative cut takes no snapshot before the end.
func cutRunCount(t testing.TB, o Options, pos [][]byte, cut int) (res *result, snaps [][]byte, before []int, reads, most int) {
	t.Helper()
	src, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	n := max(o.Channels, 1)
	rs := openAll(t, src, n)
	defer func() {
		for _, r := range rs {
			if err := r.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		}
	}()
	for ch, p := range pos {
		if err := rs[ch].(weir.CheckpointedReader).RestorePosition(p); err != nil {
			t.Fatalf("restore channel %d: %v", ch, err)
		}
	}
	res = newResult(n)
	snaps, before = make([][]byte, n), make([]int, n)
	snap := func(ch int) {
		if snaps[ch] != nil {
			return
		}
		p, err := rs[ch].(weir.CheckpointedReader).SnapshotPosition()
		if err != nil {
			t.Fatalf("snapshot channel %d: %v", ch, err)
		}
		snaps[ch], before[ch] = p, len(res.chans[ch].lines)
	}
	own := make([]int, n)
	err = pollInto(t, rs, res, func(ch, ownReads, all int) {
		own[ch], reads = ownReads, all
		if cut >= 0 && o.Strict && reads == cut {
			for ch := range rs {
				snap(ch)
			}
		}
		if cut >= 0 && !o.Strict && ownReads == cut+ch {
			snap(ch)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for ch := range rs {
		snap(ch)
	}
	for _, o := range res.chans {
		if len(o.bad) > 0 {
			t.Fatalf("channel %d: %v", o.ch, o.bad)
		}
		if len(o.wms) != 1 || o.wms[0] != etime.MaxTime {
			t.Fatalf("channel %d: watermarks %v", o.ch, o.wms)
		}
	}
	return res, snaps, before, reads, slices.Max(own)
}

// checkResume reads o's file uninterrupted, then in three runs: the first
// cut at cut1, the second restored there and cut at cut2, the third
// restored there to the end. Per channel, the lines of the runs before
// their cuts and the lines of the last run must be those of the
// uninterrupted read.
func checkResume(t testing.TB, o Options, cut1, cut2 int) {
	t.Helper()
	want, _, _ := cutRun(t, o, nil, -1)
	r1, p1, n1 := cutRun(t, o, nil, cut1)
	r2, p2, n2 := cutRun(t, o, p1, cut2)
	r3, _, _ := cutRun(t, o, p2, -1)
	for ch, w := range want.chans {
		if !reflect.DeepEqual(r1.chans[ch].lines, w.lines) {
			t.Fatalf("channel %d: a cut changes the lines:\n%q\n%q", ch, texts(r1.chans[ch].lines), texts(w.lines))
		}
		var got []Line
		got = append(got, r1.chans[ch].lines[:n1[ch]]...)
		got = append(got, r2.chans[ch].lines[:n2[ch]]...)
		got = append(got, r3.chans[ch].lines...)
		if !reflect.DeepEqual(got, w.lines) {
			t.Fatalf("strict %v, %d channels, batch %d, cuts %d %d (%d, %d lines before): channel %d resumes wrong:\ngot  %q\nwant %q",
				o.Strict, o.Channels, o.Batch, cut1, cut2, n1[ch], n2[ch], ch, texts(got), texts(w.lines))
		}
	}
}

// reads returns the Read calls a cut can meet: in all for strict mode, the
// most of one channel otherwise.
func reads(t testing.TB, o Options) int {
	t.Helper()
	_, _, _, reads, most := cutRunCount(t, o, nil, -1)
	if o.Strict {
		return reads
	}
	return most
}

var resumeJSONL = "\ufeff{\"a\":1}\n" +
	"\n" +
	"{\"$channel\":1,\"b\":2}\r\n" +
	"{\"$watermark\":5}\n" +
	"{\"$channel\":2,\"$idle\":true}\n" +
	"\xff\n" +
	"{\"$channel\":1,\"$watermark\":7}\n" +
	"  {\"c\":3}  \n" +
	"{\"$channel\":9}\n" +
	"{\"$channel\":2,\"d\":\"x\"}\n" +
	strings.Repeat("x", 100) + "\n" +
	"{\"$channel\":1}\n" +
	"{\"$channel\":1,\"$channel\":2}\n" +
	"{\"$channel\":2,\"e\":[1,2]}\n" +
	"{\"$channel\":2,\"f\":{}}\n" +
	"\ufeff{}\n" +
	"   \n" +
	"{\"g\":5}"

var resumeCSV = []string{
	"\ufeffid,name,amount\r\n" +
		"1,\"x,\"\"y\"\"\",2.5\n" +
		"\n" +
		"2,\"multi\nline\",-1e3\n" +
		"3,,007\n" +
		"4,a\n" +
		"5,\"a\n\n\nb\",1\r\n" +
		strings.Repeat("9", 100) + ",b,c\n" +
		"6,a\"b,1\n" +
		"7,\xff,1\n" +
		"8,\"open\nrest",
	"\n \nid,x\n1,2\n\n3,4\n",
	"id,x\n",
	"",
}

func TestResume(t *testing.T) {
	type input struct {
		format  Format
		data    string
		columns []string
	}
	inputs := []input{{JSONL, resumeJSONL, nil}, {JSONL, "", nil}, {JSONL, "{}\n", nil}}
	for _, d := range resumeCSV {
		inputs = append(inputs, input{CSV, d, nil})
		// The columns by position: the header, then no header.
		inputs = append(inputs, input{CSV, d, []string{"ID", "name", "amount"}})
		if _, rows, ok := strings.Cut(d, "\n"); ok {
			inputs = append(inputs, input{CSV, rows, []string{"id", "name", "amount"}})
		}
	}
	for i, in := range inputs {
		path := writeFile(t, fmt.Sprint("in", i), in.data)
		for n := 1; n <= 3; n++ {
			for _, strict := range []bool{false, true} {
				for _, batch := range []int{1, 2, 5} {
					o := Options{Path: path, Format: in.format, Columns: in.columns, Channels: n, Strict: strict, Batch: batch, MaxLine: 40}
					total := reads(t, o)
					for cut := 0; cut <= total; cut++ {
						for _, cut2 := range []int{0, 1, 3, total} {
							checkResume(t, o, cut, cut2)
						}
					}
				}
			}
		}
	}
}

// TestResumeStrictPending checks that a line read into the shared cursor
// but not taken (it is another channel's) is read again after a restore.
func TestResumeStrictPending(t *testing.T) {
	path := writeFile(t, "in", "{\"a\":1}\n{\"$channel\":1,\"b\":2}\n{\"c\":3}\n")
	o := Options{Path: path, Channels: 2, Strict: true}
	src, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	rs := openAll(t, src, 2)
	out := &fakeOut{}
	if _, err := rs[0].Read(context.Background(), out); err != nil { // takes line 1, peeks line 2
		t.Fatal(err)
	}
	if len(out.lines) != 1 {
		t.Fatalf("lines %q", texts(out.lines))
	}
	var pos [][]byte
	for _, r := range rs {
		p, err := r.(*Reader).SnapshotPosition()
		if err != nil {
			t.Fatal(err)
		}
		pos = append(pos, p)
		r.Close()
	}
	sum := crc64.Checksum([]byte(`{"a":1}`+"\n"), crcTable)
	if want := (position{format: JSONL, shared: true, off: 8, line: 1, sum: sum, hasSum: true}).encode(); string(pos[0]) != string(want) || string(pos[1]) != string(want) {
		t.Fatalf("positions %q %q, want %q", pos[0], pos[1], want)
	}
	res, _, _ := cutRun(t, o, pos, -1)
	check(t, "resumed", res, `2:1:data:{"b":2}`, `3:0:data:{"c":3}`)
}

// restoreErr opens channel ch of a new source of o and restores pos.
func restoreErr(t *testing.T, o Options, ch int, pos []byte) error {
	t.Helper()
	src, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	rs := openAll(t, src, max(o.Channels, 1))
	defer func() {
		for _, r := range rs {
			r.Close()
		}
	}()
	return rs[ch].(weir.CheckpointedReader).RestorePosition(pos)
}

func wantErr(t *testing.T, what string, err error, sub string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), sub) {
		t.Errorf("%s: error %v, want one with %q", what, err, sub)
	}
}

func TestResumeStdin(t *testing.T) {
	good := (position{format: JSONL}).encode()
	for _, strict := range []bool{false, true} {
		src, err := New(Options{Input: strings.NewReader("{}\n"), Channels: 2, Strict: strict})
		if err != nil {
			t.Fatal(err)
		}
		rs := openAll(t, src, 2)
		for _, r := range rs {
			_, err := r.(*Reader).SnapshotPosition()
			wantErr(t, "stdin snapshot", err, "stdin cannot be checkpointed")
			wantErr(t, "stdin restore", r.(*Reader).RestorePosition(good), "stdin cannot be checkpointed")
		}
		if _, err := poll(t, rs); err != nil {
			t.Fatal(err)
		}
		_, err = rs[0].(*Reader).SnapshotPosition()
		wantErr(t, "stdin snapshot at the end", err, "use a file source")
		for _, r := range rs {
			r.Close()
		}
	}
}

func TestResumePipe(t *testing.T) {
	path := fifo(t, "{}\n")
	src, err := New(Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	rs := openAll(t, src, 1)
	_, err = rs[0].(*Reader).SnapshotPosition()
	wantErr(t, "pipe snapshot", err, path+" cannot be checkpointed")
	if _, err := poll(t, rs); err != nil {
		t.Fatal(err)
	}
	rs[0].Close()
}

func TestResumeBadPositions(t *testing.T) {
	data := "{\"a\":1}\n{\"$channel\":1}\n{\"b\":2}\n"
	path := writeFile(t, "in", data)
	csvPath := writeFile(t, "in.csv", "a,b\n1,2\n3,4\n")
	head := []byte(posMagic + "\x01\x00o")
	garbage := map[string][]byte{
		"nil":           nil,
		"text":          []byte("hello, world"),
		"magic only":    []byte(posMagic),
		"version":       []byte(posMagic + "\x03\x00o\x00\x00"),
		"format":        []byte(posMagic + "\x01\x07o\x00\x00"),
		"mode":          []byte(posMagic + "\x01\x00x\x00\x00"),
		"no numbers":    head,
		"bad varint":    append(head, 0x80),
		"trailing":      append(append([]byte{}, head...), 0, 0, 0),
		"line, no off":  append(append([]byte{}, head...), 0, 3),
		"line past off": append(append([]byte{}, head...), 2, 3),
		"genio":         []byte("genio1:5"),
	}
	for _, strict := range []bool{false, true} {
		for _, ch := range []int{0, 1} {
			o := Options{Path: path, Channels: 2, Strict: strict}
			for name, pos := range garbage {
				if err := restoreErr(t, o, ch, pos); err == nil || !strings.Contains(err.Error(), "fileio: "+path) {
					t.Errorf("%s: %v", name, err)
				}
			}
			wantErr(t, "csv position", restoreErr(t, o, ch, (position{format: CSV, shared: strict}).encode()), "one of a csv source; this source reads jsonl")
			tooFar := position{format: JSONL, shared: strict, off: int64(len(data)) + 8, line: 4}
			wantErr(t, "too far", restoreErr(t, o, ch, tooFar.encode()), "the input file is shorter (31 bytes) than the checkpoint's position (byte 39): it changed; start over with --fresh")
			mid := position{format: JSONL, shared: strict, off: 5, line: 1}
			wantErr(t, "not at a line end", restoreErr(t, o, ch, mid.encode()), "not at the end of a line")

			co := Options{Path: csvPath, Format: CSV, Channels: 2, Strict: strict}
			wantErr(t, "jsonl position", restoreErr(t, co, ch, (position{format: JSONL, shared: strict}).encode()), "one of a jsonl source; this source reads csv")
			other := position{format: CSV, shared: strict, off: 8, line: 2, header: 42}
			wantErr(t, "csv header", restoreErr(t, co, ch, other.encode()), "the CSV header is not the one of the checkpoint")
			tooFar.format = CSV
			wantErr(t, "csv too far", restoreErr(t, co, ch, tooFar.encode()), "is shorter")
		}
	}
	// The end of a file without a final newline is a position.
	noNL := writeFile(t, "nonl", "{}\n{}")
	if err := restoreErr(t, Options{Path: noNL}, 0, (position{format: JSONL, off: 5, line: 2}).encode()); err != nil {
		t.Error(err)
	}
}

func TestResumeMisuse(t *testing.T) {
	path := writeFile(t, "in", "{\"a\":1}\n{\"$channel\":1}\n{\"b\":2}\n")
	at := func(off, line int64, shared bool) []byte {
		return (position{format: JSONL, shared: shared, off: off, line: line}).encode()
	}
	for _, strict := range []bool{false, true} {
		src, err := New(Options{Path: path, Channels: 2, Strict: strict})
		if err != nil {
			t.Fatal(err)
		}
		rs := openAll(t, src, 2)
		if _, err := rs[0].Read(context.Background(), &fakeOut{}); err != nil {
			t.Fatal(err)
		}
		wantErr(t, "restore after Read", rs[0].(*Reader).RestorePosition(at(8, 1, strict)), "after reading")
		if strict {
			// The shared cursor has started.
			wantErr(t, "restore after another channel's Read", rs[1].(*Reader).RestorePosition(at(8, 1, true)), "after reading")
		}
		for _, r := range rs {
			r.Close()
		}
		wantErr(t, "restore after Close", rs[1].(*Reader).RestorePosition(at(8, 1, strict)), "after reading")
	}

	// Strict channels must agree; repeating the position is fine.
	src, err := New(Options{Path: path, Channels: 2, Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	rs := openAll(t, src, 2)
	for _, r := range rs {
		if err := r.(*Reader).RestorePosition(at(8, 1, true)); err != nil {
			t.Fatal(err)
		}
	}
	wantErr(t, "disagreeing channels", rs[1].(*Reader).RestorePosition(at(24, 2, true)), "resume at different positions")
	for _, r := range rs {
		r.Close()
	}

	// A non-strict checkpoint has a position per channel: a strict run with
	// several channels cannot use it; one with one channel can.
	wantErr(t, "non-strict into strict", restoreErr(t, Options{Path: path, Channels: 2, Strict: true}, 0, at(8, 1, false)), "non-strict run")
	if err := restoreErr(t, Options{Path: path, Strict: true}, 0, at(8, 1, false)); err != nil {
		t.Error(err)
	}
}

// TestResumeStrictToParallel resumes a strict run's checkpoint in a
// non-strict run: the shared position is a valid one for every channel.
func TestResumeStrictToParallel(t *testing.T) {
	path := writeFile(t, "in", resumeJSONL)
	o := Options{Path: path, Channels: 3, Batch: 1, MaxLine: 40}
	want, _, _ := cutRun(t, o, nil, -1)
	for cut := range 20 {
		so := o
		so.Strict = true
		r1, pos, n := cutRun(t, so, nil, cut)
		r2, _, _ := cutRun(t, o, pos, -1)
		for ch := range want.chans {
			got := append(r1.chans[ch].lines[:n[ch]:n[ch]], r2.chans[ch].lines...)
			if !reflect.DeepEqual(got, want.chans[ch].lines) {
				t.Fatalf("cut %d channel %d:\ngot  %q\nwant %q", cut, ch, texts(got), texts(want.chans[ch].lines))
			}
		}
	}
}

// TestResumeConcurrent snapshots non-strict channels on their own
// goroutines while the others read (for the race detector).
func TestResumeConcurrent(t *testing.T) {
	path := writeFile(t, "in", strings.Repeat(resumeJSONL+"\n", 50))
	o := Options{Path: path, Channels: 3, Batch: 2, MaxLine: 40}
	want, _, _ := cutRun(t, o, nil, -1)
	src, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	rs := openAll(t, src, 3)
	type part struct {
		lines []Line
		pos   []byte
	}
	parts := make([]part, 3)
	errs := make(chan error, 3)
	for ch, r := range rs {
		go func() {
			out := &fakeOut{ch: ch}
			for i := 0; ; i++ {
				if i == 7*(ch+1) {
					p, err := r.(*Reader).SnapshotPosition()
					if err != nil {
						errs <- err
						return
					}
					parts[ch] = part{lines: out.lines, pos: p}
				}
				st, err := r.Read(context.Background(), out)
				if err != nil || st == weir.Done {
					errs <- err
					return
				}
			}
		}()
	}
	for range rs {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range rs {
		r.Close()
	}
	pos := [][]byte{parts[0].pos, parts[1].pos, parts[2].pos}
	res, _, _ := cutRun(t, o, pos, -1)
	for ch := range want.chans {
		got := append(parts[ch].lines, res.chans[ch].lines...)
		if !reflect.DeepEqual(got, want.chans[ch].lines) {
			t.Fatalf("channel %d:\ngot  %q\nwant %q", ch, texts(got), texts(want.chans[ch].lines))
		}
	}
}

func FuzzResume(f *testing.F) {
	// channels: the channel count is channels%3+1; bit 0x40 reads CSV, bit
	// 0x80 sets a small MaxLine. cut: the low byte is the first cut, the
	// high byte the second (see checkResume).
	seeds := []string{resumeJSONL, "", "{}", "\n\n{\"$channel\":1}\n{}\n"}
	seeds = append(seeds, resumeCSV...)
	for i, s := range seeds {
		channels := uint8(i)
		if i >= 4 {
			channels |= 0x40
		}
		f.Add([]byte(s), uint16(i*37), channels, i%2 == 0)
		f.Add([]byte(s), uint16(i*5+0x300), channels|0x80, i%2 == 1)
	}
	f.Fuzz(func(t *testing.T, data []byte, cut uint16, channels uint8, strict bool) {
		o := Options{Path: writeFile(t, "in", string(data)), Channels: int(channels%3) + 1, Strict: strict, Batch: 2}
		if channels&0x40 != 0 {
			o.Format = CSV
		}
		if channels&0x80 != 0 {
			o.MaxLine = 24
		}
		if _, err := New(o); err != nil {
			if o.Format == CSV && strings.Contains(err.Error(), "csv header") {
				return
			}
			t.Fatal(err)
		}
		checkResume(t, o, int(cut&0xff)%64, int(cut>>8)%16)
	})
}

// TestResumeRewrittenFile: a file rewritten in place with lines of the same
// lengths fits every old position, so only the sum of the bytes a
// checkpoint covered tells the files apart: the restore is refused with
// ErrInputChanged; the file as it was resumes.
func TestResumeRewrittenFile(t *testing.T) {
	path := writeFile(t, "in", "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n")
	for _, strict := range []bool{false, true} {
		o := Options{Path: path, Channels: 1, Strict: strict}
		src, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		rs := openAll(t, src, 1)
		r := rs[0].(*Reader)
		if _, err := r.Read(context.Background(), &fakeOut{}); err != nil {
			t.Fatal(err)
		}
		pos, err := r.SnapshotPosition()
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		if err := restoreErr(t, o, 0, pos); err != nil {
			t.Fatalf("strict %v: the same file: %v", strict, err)
		}
		if err := os.WriteFile(path, []byte("{\"a\":7}\n{\"a\":8}\n{\"a\":9}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		err = restoreErr(t, o, 0, pos)
		if !errors.Is(err, ErrInputChanged) || !strings.Contains(err.Error(), "are not the ones the checkpoint read") {
			t.Fatalf("strict %v: a rewritten file: %v, want ErrInputChanged", strict, err)
		}
		if err := os.WriteFile(path, []byte("{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTruncatedWhileHashing: a file shorter than the position its sum is
// taken to (truncated after its size was read, or while a reader read
// it) is refused with ErrInputChanged, which the restart policy does not
// retry: by the prefix sum itself (check hashes after Stat), and by a
// snapshot of a reader whose file was truncated under it.
func TestTruncatedWhileHashing(t *testing.T) {
	path := writeFile(t, "in", "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ps prefixSum
	_, err = ps.upTo(f, 100)
	if !errors.Is(err, ErrInputChanged) || !strings.Contains(err.Error(), "is shorter (24 bytes) than its position (byte 100)") {
		t.Fatalf("the sum of a file of 24 bytes up to byte 100: %v, want ErrInputChanged saying it is shorter", err)
	}

	o := Options{Path: path, Channels: 1}
	src, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	r := openAll(t, src, 1)[0].(*Reader)
	defer r.Close()
	if _, err := r.Read(context.Background(), &fakeOut{}); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 4); err != nil {
		t.Fatal(err)
	}
	_, err = r.SnapshotPosition()
	if !errors.Is(err, ErrInputChanged) || !strings.Contains(err.Error(), "is shorter (4 bytes)") {
		t.Fatalf("a snapshot after the file was truncated: %v, want ErrInputChanged saying it is shorter", err)
	}
}

// TestSnapshotAfterClose: a non-strict reader closed after reading lines
// since its last snapshot still snapshots its position (the file is
// opened again to take the sum).
func TestSnapshotAfterClose(t *testing.T) {
	path := writeFile(t, "in", "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n")
	o := Options{Path: path, Channels: 1}
	src, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	r := openAll(t, src, 1)[0].(*Reader)
	if _, err := r.Read(context.Background(), &fakeOut{}); err != nil {
		t.Fatal(err)
	}
	want, err := r.SnapshotPosition()
	if err != nil {
		t.Fatal(err)
	}
	// A second reader, read as far, but closed before its snapshot.
	src2, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	r2 := openAll(t, src2, 1)[0].(*Reader)
	if _, err := r2.Read(context.Background(), &fakeOut{}); err != nil {
		t.Fatal(err)
	}
	r.Close()
	r2.Close()
	got, err := r2.SnapshotPosition()
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("snapshot after Close: %x, %v; want %x", got, err, want)
	}
}

// TestInputChangedMatches: the refusal of a changed input matches both
// this package's sentinel and connector.ErrInputChanged, which runners
// match to not restart on it.
func TestInputChangedMatches(t *testing.T) {
	err := fmt.Errorf("restore: %w", changed("fileio: %s: the input file changed", "in.jsonl"))
	if !errors.Is(err, ErrInputChanged) || !errors.Is(err, connector.ErrInputChanged) {
		t.Errorf("%v matches ErrInputChanged %v, connector.ErrInputChanged %v", err, errors.Is(err, ErrInputChanged), errors.Is(err, connector.ErrInputChanged))
	}
	if errors.Is(errors.New("other"), connector.ErrInputChanged) {
		t.Error("any error matches connector.ErrInputChanged")
	}
}
