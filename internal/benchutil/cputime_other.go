//go:build !unix

package benchutil

import (
	"os"
	"time"
)

// CPUTime is not measured here (0: per-CPU-second figures are omitted).
func CPUTime() time.Duration { return 0 }

// PeakRSS is not measured here (0).
func PeakRSS(*os.ProcessState) int64 { return 0 }
