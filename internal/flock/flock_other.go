//go:build !unix

package flock

import (
	"errors"
	"os"
)

// ErrBusy is returned by TryLock when another process holds the lock.
var ErrBusy = errors.New("flock: held by another process")

// TryLock takes the lock at path: without flock, an exclusively created
// file holding the process id, removed by unlock (a killed process leaves
// it; remove it by hand).
func TryLock(path string) (unlock func() error, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil, ErrBusy
	}
	if err != nil {
		return nil, err
	}
	err = writePID(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	return func() error { return os.Remove(path) }, nil
}

// TryLockFile locks nothing where flock is missing: hard links to an
// output are not told apart there.
func TryLockFile(path string) (unlock func() error, err error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	return func() error { return nil }, nil
}
