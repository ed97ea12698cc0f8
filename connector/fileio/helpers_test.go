package fileio

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/etime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeOut records what one channel emits.
type fakeOut struct {
	ch    int
	lines []Line
	wms   []etime.Time
	order *[]Line // every channel's lines, in emission order
	bad   []string
}

func (o *fakeOut) Emit(ts etime.Time, l Line) {
	if ts != etime.MinTime {
		o.bad = append(o.bad, "Emit with a timestamp")
	}
	if l.Channel != o.ch {
		o.bad = append(o.bad, "line of another channel")
	}
	if len(o.wms) > 0 {
		o.bad = append(o.bad, "line after the final watermark")
	}
	o.lines = append(o.lines, l)
	if o.order != nil {
		*o.order = append(*o.order, l)
	}
}
func (o *fakeOut) EmitWatermark(wm etime.Time) { o.wms = append(o.wms, wm) }
func (o *fakeOut) MarkIdle()                   { o.bad = append(o.bad, "MarkIdle") }
func (o *fakeOut) MarkActive()                 { o.bad = append(o.bad, "MarkActive") }

// result is what all channels of a source emitted.
type result struct {
	chans []*fakeOut
	order []Line // in emission order, as a round-robin poll sees it
}

// all returns every line sorted by line number. Emission order across
// channels is a contract of strict mode only (checked on r.order); without
// it a channel whose lines arrive first may be read before another's.
func (r *result) all() []Line {
	return slices.SortedStableFunc(slices.Values(r.order), func(a, b Line) int { return cmp.Compare(a.No, b.No) })
}

// open opens every channel.
func openAll(t testing.TB, src weir.Source[Line], n int) []weir.SourceReader[Line] {
	t.Helper()
	rs := make([]weir.SourceReader[Line], n)
	for ch := range n {
		r, err := src.Open(context.Background(), ch, n)
		if err != nil {
			t.Fatalf("open channel %d: %v", ch, err)
		}
		rs[ch] = r
	}
	return rs
}

// poll reads every channel in turn, as the deterministic executor does,
// until all are done or one fails.
func poll(t testing.TB, rs []weir.SourceReader[Line]) (*result, error) {
	t.Helper()
	res := newResult(len(rs))
	if err := pollInto(t, rs, res, nil); err != nil {
		return res, err
	}
	for _, o := range res.chans {
		if len(o.bad) > 0 {
			t.Fatalf("channel %d: %v", o.ch, o.bad)
		}
	}
	return res, nil
}

func newResult(n int) *result {
	res := &result{}
	for ch := range n {
		res.chans = append(res.chans, &fakeOut{ch: ch, order: &res.order})
	}
	return res
}

// pollInto polls rs round robin into res until every channel is done;
// before, when set, runs before each channel's Read (with that channel's
// Read count so far and the count over all channels).
func pollInto(t testing.TB, rs []weir.SourceReader[Line], res *result, before func(ch, own, reads int)) error {
	t.Helper()
	own := make([]int, len(rs))
	reads := 0
	done := make([]bool, len(rs))
	deadline := time.Now().Add(30 * time.Second)
	for {
		all, progress := true, false
		for ch, r := range rs {
			if before != nil {
				before(ch, own[ch], reads)
			}
			if done[ch] {
				continue
			}
			all = false
			st, err := r.Read(context.Background(), res.chans[ch])
			own[ch]++
			reads++
			if err != nil {
				return err
			}
			switch st {
			case weir.Done:
				done[ch] = true
				progress = true
			case weir.Emitted:
				progress = true
			}
		}
		if all {
			break
		}
		if !progress {
			if time.Now().After(deadline) {
				t.Fatal("the source does not end")
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	return nil
}

// run opens src's n channels, polls them to the end and closes them.
func run(t testing.TB, src weir.Source[Line], n int) (*result, error) {
	t.Helper()
	rs := openAll(t, src, n)
	res, err := poll(t, rs)
	for _, r := range rs {
		if cerr := r.Close(); cerr != nil {
			t.Errorf("close: %v", cerr)
		}
	}
	return res, err
}

// mustRun is run that fails the test on errors, including New's.
func mustRun(t testing.TB, o Options) *result {
	t.Helper()
	src, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	n := o.Channels
	if n == 0 {
		n = 1
	}
	res, err := run(t, src, n)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// writeFile writes data to a file in a temporary directory.
func writeFile(t testing.TB, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// mode is one way of reading the same input.
type mode struct {
	name   string
	strict bool
	stdin  bool
}

var modes = []mode{
	{"file", false, false},
	{"file-strict", true, false},
	{"stdin", false, true},
	{"stdin-strict", true, true},
}

// runModes runs o over data in every mode and returns the results.
func runModes(t testing.TB, o Options, data string) map[string]*result {
	t.Helper()
	path := writeFile(t, "in", data)
	out := map[string]*result{}
	for _, m := range modes {
		o := o
		o.Strict = m.strict
		if m.stdin {
			o.Input = strings.NewReader(data)
		} else {
			o.Path = path
		}
		out[m.name] = mustRun(t, o)
	}
	return out
}

// texts returns "No:Kind:Text" of lines, for comparisons.
func texts(ls []Line) []string {
	var s []string
	for _, l := range ls {
		s = append(s, describe(l))
	}
	return s
}

func describe(l Line) string {
	var b strings.Builder
	b.WriteString(strings.Join([]string{itoa(l.No), itoa(int64(l.Channel)), l.Kind.String()}, ":"))
	switch l.Kind {
	case Data:
		b.WriteString(":" + string(l.Text))
	case Watermark:
		b.WriteString(":" + l.Watermark.String())
	case Bad:
		b.WriteString(":" + l.Reason)
	}
	return b.String()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// fifo makes a named pipe in a temporary directory and writes data into it
// from a goroutine; it skips the test where named pipes do not exist.
func fifo(t testing.TB, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fifo")
	if err := mkfifo(path); err != nil {
		t.Skip("no named pipes:", err)
	}
	go func() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		f.WriteString(data)
		f.Close()
	}()
	return path
}
