package ledger

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/weirstream/weir/internal/flock"
)

// Lock takes the single-writer lock of backfills over the ledger in dir
// (dir/.backfill.lock, released by unlock or, with flock, when the
// process dies, so a killed backfill never leaves it held). It fails at
// once when another process holds it.
func Lock(dir string) (unlock func() error, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p := filepath.Join(dir, ".backfill.lock")
	unlock, err = flock.TryLock(p)
	if errors.Is(err, flock.ErrBusy) {
		return nil, fmt.Errorf("another backfill of this ledger is running (it holds %s); wait for it to end", p)
	}
	return unlock, err
}
