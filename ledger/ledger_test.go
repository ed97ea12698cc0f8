package ledger

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func entry(i int) []byte {
	return fmt.Appendf(nil, `{"id":"%d","kind":"late","reason":"window_expired","key":{"k":"a"},"ts":%d,"windows":[[0,10]],"watermark":99,"lateness_ms":%d,"arrived_at":0,"record":{"k":"a","n":%d}}`, i, i, 99-i, i)
}

func scanIDs(t *testing.T, dir string) []string {
	t.Helper()
	var ids []string
	bad, err := Scan(dir, func(e Entry) error { ids = append(ids, e.ID); return nil })
	if err != nil || len(bad) != 0 {
		t.Fatalf("scan: %v %v", err, bad)
	}
	return ids
}

// TestCommitRestore: entries are segmented by arrival day; a restore to
// a committed position drops what came after it, in its segment and in
// later ones; a fresh open appends to a new segment.
func TestCommitRestore(t *testing.T) {
	dir := t.TempDir()
	day1 := time.Date(2026, 11, 29, 23, 59, 0, 0, time.UTC)
	day2 := day1.Add(2 * time.Minute)
	w, err := Open(dir, nil, 0, day1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := w.Append(entry(i), day1); err != nil {
			t.Fatal(err)
		}
	}
	pos, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	w.Append(entry(3), day1)
	w.Append(entry(4), day2) // a new day: a new segment
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	segs, _ := Segments(dir)
	if len(segs) != 2 || !strings.HasPrefix(segs[0], "day=2026-11-29") || !strings.HasPrefix(segs[1], "day=2026-11-30") {
		t.Fatalf("segments %v", segs)
	}
	if ids := scanIDs(t, dir); strings.Join(ids, ",") != "0,1,2,3,4" {
		t.Fatalf("ids %v", ids)
	}
	// Restore to the first commit: entries 3 and 4 go.
	w, err = Open(dir, &pos, 0, day2)
	if err != nil {
		t.Fatal(err)
	}
	w.Append(entry(5), day2)
	w.Commit()
	w.Close()
	if ids := scanIDs(t, dir); strings.Join(ids, ",") != "0,1,2,5" {
		t.Fatalf("after restore: ids %v", ids)
	}
	// A restore to a position the segment cannot hold is refused.
	if _, err := Open(dir, &Pos{Segment: pos.Segment, Length: 1 << 30}, 0, day2); err == nil || !strings.Contains(err.Error(), "shorter than the checkpoint") {
		t.Fatalf("too long a position: %v", err)
	}
	// Retention removes whole days older than it.
	if _, err := Open(dir, nil, 24*time.Hour, day2.Add(36*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if ids := scanIDs(t, dir); strings.Join(ids, ",") != "5" {
		t.Fatalf("after retention: ids %v", ids)
	}
}

// TestCorruption: a flipped byte or a torn line is reported by segment
// and line, and the other entries still read.
func TestCorruption(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	w, _ := Open(dir, nil, 0, now)
	for i := range 3 {
		w.Append(entry(i), now)
	}
	w.Close()
	segs, _ := Segments(dir)
	p := filepath.Join(dir, segs[0])
	b, _ := os.ReadFile(p)
	b[20] ^= 1
	b = append(b, `{"id":"torn","kind`...)
	os.WriteFile(p, b, 0o644)
	var ids []string
	bad, err := Scan(dir, func(e Entry) error { ids = append(ids, e.ID); return nil })
	if err != nil || len(bad) != 2 || bad[0].Line != 1 || bad[0].Reason != "checksum mismatch" || bad[1].Line != 4 || strings.Join(ids, ",") != "1,2" {
		t.Fatalf("ids %v bad %+v err %v", ids, bad, err)
	}
	if err := w.Append([]byte("[1]"), now); err == nil {
		t.Fatal("a non-object entry was accepted")
	}
}

// TestLock: one holder at a time; released by unlock.
func TestLock(t *testing.T) {
	dir := t.TempDir()
	unlock, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(dir); err == nil || !strings.Contains(err.Error(), "another backfill") {
		t.Fatalf("second lock: %v", err)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	unlock, err = Lock(dir)
	if err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	unlock()
}

// TestCommitBeforeAppend: a checkpoint taken after a restore (or a fresh
// start) but before the next entry records the ledger as it stands, so a
// later restore to that checkpoint keeps every earlier entry. (A CI run
// of TestCrashRecovery/ledger lost 1,465 entries this way: the empty
// position meant "an empty ledger".)
func TestCommitBeforeAppend(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	w, _ := Open(dir, nil, 0, now)
	for i := range 3 {
		w.Append(entry(i), now)
	}
	pos, _ := w.Commit()
	w.Close()
	for _, restored := range []*Pos{&pos, nil} { // after a restore; a fresh run
		w, err := Open(dir, restored, 0, now)
		if err != nil {
			t.Fatal(err)
		}
		idle, err := w.Commit()
		if err != nil {
			t.Fatal(err)
		}
		w.Append(entry(9), now) // after the checkpoint: cut at restore
		w.Close()
		if _, err := Open(dir, &idle, 0, now); err != nil {
			t.Fatal(err)
		}
		if ids := scanIDs(t, dir); strings.Join(ids, ",") != "0,1,2" {
			t.Fatalf("restored %v: a restore to a checkpoint taken before any append left ids %v", restored != nil, ids)
		}
	}
	// Retention removed the position's day before the checkpoint: the
	// restore still cuts later segments.
	old := Pos{Segment: "day=2026-01-01/seg-000001.jsonl", Length: 10}
	w, err := Open(dir, nil, 0, now)
	if err != nil {
		t.Fatal(err)
	}
	w.Append(entry(7), now)
	w.Close()
	if _, err := Open(dir, &old, 30*24*time.Hour, now); err != nil {
		t.Fatalf("a restore to a segment retention removed: %v", err)
	}
	if ids := scanIDs(t, dir); len(ids) != 0 {
		t.Fatalf("after a restore to a removed older day: ids %v", ids)
	}
}

// TestClockBack: entries that arrive by a clock gone back to an earlier
// day go to the newest day's directory, so a restore to a position after
// them keeps the later day's entries.
func TestClockBack(t *testing.T) {
	dir := t.TempDir()
	later := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	w, _ := Open(dir, nil, 0, later)
	w.Append(entry(1), later)
	w.Close()
	earlier := later.Add(-48 * time.Hour)
	w, _ = Open(dir, nil, 0, earlier)
	w.Append(entry(2), earlier)
	pos, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	w.Append(entry(3), earlier)
	w.Close()
	if !strings.HasPrefix(pos.Segment, "day=2026-11-30") {
		t.Fatalf("an entry of an earlier clock went to %s", pos.Segment)
	}
	if _, err := Open(dir, &pos, 0, earlier); err != nil {
		t.Fatal(err)
	}
	if ids := scanIDs(t, dir); strings.Join(ids, ",") != "1,2" {
		t.Fatalf("after a restore: ids %v", ids)
	}
}

// TestWriteErrorSticks: after a write fails, Commit returns the error
// every time, also once the failed segment is sealed (a new day's entry),
// so no checkpoint records a length the segment never reached.
func TestWriteErrorSticks(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	w, _ := Open(dir, nil, 0, now)
	w.Append(entry(1), now)
	w.f.Close() // the disk goes away
	w.Append(entry(2), now)
	if pos, err := w.Commit(); err == nil {
		t.Fatalf("Commit after a failed write = %+v, nil", pos)
	}
	if err := w.Append(entry(3), now.Add(24*time.Hour)); err == nil {
		t.Fatal("Append after a failed write succeeded")
	}
	if pos, err := w.Commit(); err == nil {
		t.Fatalf("Commit after a failed write and a new day = %+v, nil", pos)
	}
}
