//go:build !unix

package cli

import "time"

// cpuTime is not measured here (0: per-CPU-second figures are omitted).
func cpuTime() time.Duration { return 0 }
