package archive

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestArchive(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a")
	a, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); !errors.Is(err, ErrBusy) {
		t.Fatalf("a second open: %v", err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// The pane guard: a lower or equal pane never replaces a row.
	must(a.Put("u1", 0, 60_000, 5, 0, []byte("1\x00")))
	must(a.Put("u1", 0, 60_000, 5, 2, []byte("3\x00")))
	must(a.Put("u1", 0, 60_000, 5, 1, []byte("2\x00")))
	must(a.Put("u2", 60_000, 120_000, 5, 0, []byte("7\x00")))
	// The run guard: an earlier run's revision never replaces a later
	// run's, whatever its pane; a later run's pane 0 replaces pane 4.
	must(a.Put("u3", 0, 60_000, 5, 4, []byte("1\x00")))
	must(a.Put("u3", 0, 60_000, 4, 9, []byte("2\x00")))
	must(a.Put("u3", 0, 60_000, 6, 0, []byte("3\x00")))
	if _, _, _, ok, _ := a.Row("u1", 0, 60_000); ok {
		t.Fatal("a row is visible before Commit")
	}
	must(a.Commit(100_000, 0, 6))
	must(a.Commit(100_000, 0, 5)) // an earlier run never lowers Run
	if l, _ := a.Live(); l != 100_000 {
		t.Fatalf("live mark %d", l)
	}
	if r, _ := a.Run(); r != 6 {
		t.Fatalf("run %d", r)
	}
	run, pane, v, ok, err := a.Row("u1", 0, 60_000)
	if err != nil || !ok || run != 5 || pane != 2 || string(v) != "3\x00" {
		t.Fatalf("row u1: %d %d %q %v %v", run, pane, v, ok, err)
	}
	run, pane, v, _, _ = a.Row("u3", 0, 60_000)
	if run != 6 || pane != 0 || string(v) != "3\x00" {
		t.Fatalf("row u3: run %d pane %d %q, want run 6's pane 0", run, pane, v)
	}
	// A backfill's revision, its ids and its outbox line, in one batch.
	must(a.Apply([]Revision{{Key: "u1", Start: 0, End: 60_000, Run: 5, Pane: 3, Value: []byte("4\x00"), IDs: []string{"17", "3:9"}, Line: []byte("line1\n")},
		{Key: "u2", Start: 60_000, End: 120_000, Run: 7, Pane: 1, Value: []byte("8\x00"), IDs: []string{"21"}, Line: []byte("line2\n")}}))
	ids, err := a.Applied("u1", 0, 60_000)
	if err != nil || len(ids) != 2 || !ids["17"] || !ids["3:9"] {
		t.Fatalf("applied: %v %v", ids, err)
	}
	// A key that is a prefix of another shares no applied ids.
	if ids, _ := a.Applied("u", 0, 60_000); len(ids) != 0 {
		t.Fatalf("applied of u: %v", ids)
	}
	out, err := a.Outbox()
	if err != nil || len(out) != 2 || string(out[1].Line) != "line2\n" {
		t.Fatalf("outbox: %v %v", out, err)
	}
	must(a.Published([]uint64{out[0].Seq}))
	must(a.Close())

	// Reopened: the outbox keeps what was not published, and sequence
	// numbers go on.
	a, err = Open(dir)
	must(err)
	defer a.Close()
	out, _ = a.Outbox()
	if len(out) != 1 || string(out[0].Line) != "line2\n" || out[0].Pane != 1 || out[0].Run != 7 {
		t.Fatalf("outbox after reopening: %v", out)
	}
	must(a.Apply([]Revision{{Key: "u2", Start: 60_000, End: 120_000, Pane: 2, Value: []byte("9\x00"), Line: []byte("line3\n")}}))
	out, _ = a.Outbox()
	if len(out) != 2 || string(out[0].Line) != "line2\n" || string(out[1].Line) != "line3\n" || out[0].Seq >= out[1].Seq {
		t.Fatalf("outbox after a new revision: %v (a line comes after every line committed before it)", out)
	}
	// The horizon: windows that ended before watermark - horizon go,
	// with their applied ids.
	must(a.Commit(120_000, 30_000, 6))
	if h, _ := a.Horizon(); h != 90_000 {
		t.Fatalf("horizon %d", h)
	}
	if _, _, _, ok, _ := a.Row("u1", 0, 60_000); ok {
		t.Fatal("a window past the horizon is kept")
	}
	if ids, _ := a.Applied("u1", 0, 60_000); len(ids) != 0 {
		t.Fatalf("applied ids past the horizon: %v", ids)
	}
	if _, _, _, ok, _ := a.Row("u2", 60_000, 120_000); !ok {
		t.Fatal("a window inside the horizon is gone")
	}
	// A lower watermark never moves the horizon back.
	must(a.Commit(100_000, 30_000, 6))
	if h, _ := a.Horizon(); h != 90_000 {
		t.Fatalf("horizon moved back to %d", h)
	}
}

// TestFormatAndReset: an archive of the layout before runs is refused
// with the fix, and Reset empties any archive (a fresh start's), but not
// while another process has it open.
func TestFormatAndReset(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Put("k", 0, 10, 1, 0, []byte("1\x00")); err != nil {
		t.Fatal(err)
	}
	if err := a.Commit(5, 0, 1); err != nil {
		t.Fatal(err)
	}
	if err := Reset(dir); !errors.Is(err, ErrBusy) {
		t.Fatalf("reset while open: %v, want ErrBusy", err)
	}
	// Make it look like an archive of the earlier layout: no format key.
	if err := a.db.Delete([]byte(keyFormat), nil); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if _, err := Open(dir); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "--fresh") {
		t.Fatalf("open of an old archive: %v, want ErrFormat naming --fresh", err)
	}
	if err := Reset(dir); err != nil {
		t.Fatal(err)
	}
	a, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, _, _, ok, _ := a.Row("k", 0, 10); ok {
		t.Fatal("a row survived Reset")
	}
	if r, _ := a.Run(); r != 0 {
		t.Fatalf("run %d after Reset", r)
	}
	if err := Reset(filepath.Join(dir, "none")); err != nil {
		t.Fatalf("reset of a missing archive: %v", err)
	}
}
