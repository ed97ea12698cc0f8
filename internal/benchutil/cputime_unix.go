//go:build unix

package benchutil

import (
	"syscall"
	"time"
)

// CPUTime is the process's user and system CPU time so far.
func CPUTime() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
