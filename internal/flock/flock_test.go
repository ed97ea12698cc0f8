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
