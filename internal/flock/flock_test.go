package flock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestTryLock: the lock is exclusive (also against this process's own
// second TryLock), its file names the holder's pid while it is held, and
// after unlock it can be taken again.
func TestTryLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	if Holder(path) != 0 {
		t.Fatal("a missing lock file has a holder")
	}
	unlock, err := TryLock(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := Holder(path); got != os.Getpid() {
		t.Fatalf("Holder = %d, want %d", got, os.Getpid())
	}
	if _, err := TryLock(path); !errors.Is(err, ErrBusy) {
		t.Fatalf("second TryLock: %v, want ErrBusy", err)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	if got := Holder(path); got != 0 {
		t.Fatalf("Holder after unlock = %d, want 0", got)
	}
	unlock, err = TryLock(path)
	if err != nil {
		t.Fatalf("TryLock after unlock: %v", err)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
}

// TestTryLockFile: the lock of a file itself is taken through any of its
// names (a hard link), leaves the file's content alone, and is free
// again after unlock; a missing file is an error, not created.
func TestTryLockFile(t *testing.T) {
	dir := t.TempDir()
	path, link := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "link.jsonl")
	if _, err := TryLockFile(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("TryLockFile of a missing file: %v", err)
	}
	if err := os.WriteFile(path, []byte("row\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(path, link); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	unlock, err := TryLockFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := TryLockFile(link); !errors.Is(err, ErrBusy) {
		t.Fatalf("TryLockFile through a hard link: %v, want ErrBusy", err)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "row\n" {
		t.Fatalf("the file holds %q after its lock", b)
	}
	unlock, err = TryLockFile(link)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
}
