package ledger

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// lastWhole is Last as it was, reading each segment whole: the reference
// for the backwards reader.
func lastWhole(t *testing.T, dir string) (Entry, bool) {
	t.Helper()
	segs, err := Segments(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(segs) - 1; i >= 0; i-- {
		b, err := os.ReadFile(filepath.Join(dir, segs[i]))
		if err != nil {
			t.Fatal(err)
		}
		for len(b) > 0 {
			b = bytes.TrimRight(b, "\n")
			j := bytes.LastIndexByte(b, '\n')
			if e, why := parse(b[j+1:]); why == "" {
				e.Segment = segs[i]
				return e, true
			}
			b = b[:max(j, 0)]
		}
	}
	return Entry{}, false
}

// withChunk runs fn with lastChunk set to n.
func withChunk(n int, fn func()) {
	old := lastChunk
	lastChunk = n
	defer func() { lastChunk = old }()
	fn()
}

// TestLastLongSegment: in a segment of several MiB whose end is a torn
// line, rotten lines, blank lines and an entry longer than a chunk, Last
// finds the newest readable entry; reading backwards, it stops there.
func TestLastLongSegment(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	w, err := Open(dir, nil, 0, now)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20_000 {
		if err := w.Append(entry(i), now); err != nil {
			t.Fatal(err)
		}
	}
	long := fmt.Appendf(nil, `{"id":"long","kind":"late","record":{"pad":"%s"}}`, strings.Repeat("x", 3*lastChunk+17))
	if err := w.Append(long, now); err != nil {
		t.Fatal(err)
	}
	w.Append(entry(20_001), now) // rotten below
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	segs, _ := Segments(dir)
	if len(segs) != 1 {
		t.Fatalf("segments %v", segs)
	}
	p := filepath.Join(dir, segs[0])
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 3<<20 {
		t.Fatalf("segment of %d bytes, want a long one", len(b))
	}
	b[len(b)-10] ^= 1 // the last entry's checksum no longer holds
	b = append(b, "\n\n"...)
	b = append(b, `{"id":"torn","kind":"la`...)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	e, ok, err := Last(dir)
	if err != nil || !ok || e.ID != "long" || e.Segment != segs[0] {
		t.Fatalf("Last = %q in %q, %v, %v; want the long entry", e.ID, e.Segment, ok, err)
	}
	// Without the long entry and what follows, the one before it.
	i := bytes.Index(b, []byte(`{"id":"long"`))
	if err := os.WriteFile(p, b[:i], 0o644); err != nil {
		t.Fatal(err)
	}
	if e, ok, err := Last(dir); err != nil || !ok || e.ID != "19999" {
		t.Fatalf("Last = %q, %v, %v; want 19999", e.ID, ok, err)
	}
}

// TestLastMatchesWholeRead: on random segments (good, rotten, torn and
// blank lines, empty segments, several days), Last with chunks of every
// size from 1 byte up gives what reading the segments whole gives.
func TestLastMatchesWholeRead(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	for round := range 200 {
		dir := t.TempDir()
		nseg := r.IntN(3)
		for s := range nseg {
			var b []byte
			for range r.IntN(5) {
				switch r.IntN(5) {
				case 0:
					b = append(b, '\n')
				case 1:
					l := lineOf(entry(r.IntN(1000)))
					l[r.IntN(len(l)-1)] ^= 1
					b = append(b, l...)
				default:
					b = append(b, lineOf(entry(r.IntN(1000)))...)
				}
			}
			if r.IntN(3) == 0 {
				l := lineOf(entry(1))
				b = append(b, l[:r.IntN(len(l))]...) // torn
			}
			d := filepath.Join(dir, fmt.Sprintf("day=2026-11-%02d", 10+s))
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, "seg-000001.jsonl"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, wantOK := lastWhole(t, dir)
		for _, chunk := range []int{1, 2, 7, 64, 333, 64 << 10} {
			withChunk(chunk, func() {
				got, ok, err := Last(dir)
				if err != nil || ok != wantOK || got.ID != want.ID || got.Segment != want.Segment || got.TS != want.TS {
					t.Fatalf("round %d, chunk %d: Last = %q in %q, %v, %v; want %q in %q, %v", round, chunk, got.ID, got.Segment, ok, err, want.ID, want.Segment, wantOK)
				}
			})
		}
	}
}

// lineOf is entry e as Append writes it.
func lineOf(e []byte) []byte {
	dir, _ := os.MkdirTemp("", "ledger")
	defer os.RemoveAll(dir)
	now := time.Unix(0, 0)
	w, _ := Open(dir, nil, 0, now)
	w.Append(e, now)
	w.Close()
	segs, _ := Segments(dir)
	b, _ := os.ReadFile(filepath.Join(dir, segs[0]))
	return b
}

// TestScanToRefusesALedgerShorterThanItsCut: a scan up to a checkpoint's
// position fails, naming the segment, when that segment is gone or
// shorter than the position (entries the job wrote were lost outside
// weir); a scan of the whole ledger reads what is there.
func TestScanToRefusesALedgerShorterThanItsCut(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	w, err := Open(dir, nil, 0, now)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := w.Append(entry(i), now); err != nil {
			t.Fatal(err)
		}
	}
	pos, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	count := func(cut *Pos) (int, error) {
		n := 0
		_, err := ScanTo(dir, cut, func(Entry) error { n++; return nil })
		return n, err
	}
	if n, err := count(&pos); err != nil || n != 20 {
		t.Fatalf("the whole ledger up to its cut: %d entries, %v", n, err)
	}
	if err := os.Truncate(filepath.Join(dir, pos.Segment), pos.Length/2); err != nil {
		t.Fatal(err)
	}
	if _, err := count(&pos); err == nil || !strings.Contains(err.Error(), "shorter than the") || !strings.Contains(err.Error(), pos.Segment) {
		t.Errorf("a segment shorter than the cut: %v", err)
	}
	if n, err := count(nil); err != nil || n == 0 || n >= 20 {
		t.Errorf("without a cut: %d entries, %v", n, err)
	}
	if err := os.Remove(filepath.Join(dir, pos.Segment)); err != nil {
		t.Fatal(err)
	}
	if _, err := count(&pos); err == nil || !strings.Contains(err.Error(), "is not there") {
		t.Errorf("a segment that is gone: %v", err)
	}
}
