//go:build unix

package ledger

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Lock takes the single-writer lock of backfills over the ledger in dir
// (an flock on dir/.backfill.lock, released by unlock or when the
// process dies, so a killed backfill never leaves it held). It fails at
// once when another process holds it.
func Lock(dir string) (unlock func() error, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p := filepath.Join(dir, ".backfill.lock")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another backfill of this ledger is running (it holds %s); wait for it to end", p)
		}
		return nil, err
	}
	return func() error { return f.Close() }, nil
}
