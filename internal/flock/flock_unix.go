//go:build unix

// Package flock takes exclusive file locks that the kernel releases when
// the process dies, so a killed process never leaves one held.
package flock

import (
	"errors"
	"os"
	"syscall"
)

// ErrBusy is returned by TryLock when another process holds the lock.
var ErrBusy = errors.New("flock: held by another process")

// TryLock takes the exclusive lock of the file at path (created if
// missing) without waiting: ErrBusy when another process holds it.
// unlock releases it.
func TryLock(path string) (unlock func() error, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
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
	return f.Close, nil
}
