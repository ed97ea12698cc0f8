//go:build unix

package benchutil

import (
	"os"
	"runtime"
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

// PeakRSS is the largest resident set of the ended process ps, in bytes
// (0 when the system does not say).
func PeakRSS(ps *os.ProcessState) int64 {
	if u, ok := ps.SysUsage().(*syscall.Rusage); ok {
		if runtime.GOOS == "darwin" {
			return u.Maxrss // bytes there
		}
		return u.Maxrss * 1024 // kilobytes elsewhere
	}
	return 0
}
