//go:build !unix

package ledger

import (
	"fmt"
	"os"
	"path/filepath"
)

// Lock takes the single-writer lock of backfills over the ledger in dir:
// without flock, an exclusively created lock file, removed by unlock (a
// killed backfill leaves it; remove it by hand).
func Lock(dir string) (unlock func() error, err error) {
	p := filepath.Join(dir, ".backfill.lock")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("another backfill of this ledger is running, or one was killed (remove %s if none runs): %w", p, err)
	}
	f.Close()
	return func() error { return os.Remove(p) }, nil
}
