package ledger

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzScan feeds arbitrary segment bytes to Scan: it never panics, every
// line is either an entry whose checksum holds or reported corrupt with a
// reason and its place.
func FuzzScan(f *testing.F) {
	dir := f.TempDir()
	w, err := Open(dir, nil, 0, time.Unix(0, 0))
	if err != nil {
		f.Fatal(err)
	}
	for i := range 3 {
		if err := w.Append(entry(i), time.Unix(0, 0)); err != nil {
			f.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		f.Fatal(err)
	}
	segs, _ := Segments(dir)
	good, err := os.ReadFile(filepath.Join(dir, segs[0]))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-7])                                           // a torn tail
	f.Add(bytes.Replace(good, []byte(`"k":"a"`), []byte(`"k":"b"`), 1)) // bit rot
	f.Add([]byte("\xff\xfe{\"crc\":\"00000000\"}\n"))
	f.Add(bytes.Repeat([]byte("x"), 1<<17))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "day=2026-11-30"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "day=2026-11-30", "seg-000001.jsonl"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		lines := bytes.Count(data, []byte("\n"))
		if len(data) > 0 && data[len(data)-1] != '\n' {
			lines++
		}
		n := 0
		bad, err := Scan(dir, func(e Entry) error {
			n++
			if e.Line < 1 || e.Line > lines {
				t.Fatalf("entry on line %d of %d", e.Line, lines)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range bad {
			if c.Reason == "" || c.Line < 1 || c.Line > lines {
				t.Fatalf("corrupt line without a reason or place: %+v", c)
			}
		}
		if n+len(bad) != lines {
			t.Fatalf("%d entries and %d corrupt lines of %d", n, len(bad), lines)
		}
	})
}
