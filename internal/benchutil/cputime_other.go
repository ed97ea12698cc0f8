//go:build !unix

package benchutil

import "time"

// CPUTime is not measured here (0: per-CPU-second figures are omitted).
func CPUTime() time.Duration { return 0 }
