//go:build unix

// Package flock takes exclusive file locks that the kernel releases when
// the process dies, so a killed process never leaves one held. The lock
// file records the holder's process id (Holder reads it); the file itself
// stays, empty, after unlock: removing it would let a process that opened
// it just before the removal lock a file that others no longer lock.
package flock

import (
	"errors"
	"os"
	"syscall"
)

// ErrBusy is returned by TryLock when another process holds the lock.
var ErrBusy = errors.New("flock: held by another process")

// TryLock takes the exclusive lock of the file at path (created if
// missing) without waiting: ErrBusy when another process holds it, or
// this process through another TryLock of the same path. It writes the
// process id into the file; unlock empties the file and releases the
// lock.
func TryLock(path string) (unlock func() error, err error) {
	f, err := lockOpen(os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644))
	if err != nil {
		return nil, err
	}
	if err := writePID(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error { return errors.Join(f.Truncate(0), f.Close()) }, nil
}

// TryLockFile takes the exclusive lock of the existing file at path
// itself, without writing to it or creating it: another name of the same
// file (a hard link) takes the same lock. ErrBusy as TryLock; an error
// satisfying errors.Is(err, fs.ErrNotExist) when there is no file.
// Locks of SQLite's (fcntl) are not flock locks: the two do not meet.
func TryLockFile(path string) (unlock func() error, err error) {
	f, err := lockOpen(os.Open(path))
	if err != nil {
		return nil, err
	}
	return f.Close, nil
}

// lockOpen takes the exclusive flock of f, just opened (or err), without
// waiting: ErrBusy when another open file holds it; f is closed unless
// it is returned.
func lockOpen(f *os.File, err error) (*os.File, error) {
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrBusy
		}
		return nil, err
	}
	return f, nil
}
