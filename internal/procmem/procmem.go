// Package procmem reads the process's resident memory, for messages that
// put weir's own estimate of its state beside what the operating system
// counts.
package procmem

import (
	"bytes"
	"os"
	"runtime/metrics"
	"strconv"
)

// RSS returns the process's resident set size in bytes: from
// /proc/self/statm where there is one (Linux), else the memory the Go
// runtime has mapped from the system (an upper bound of its part of the
// resident set). It is 0 when neither can be read.
func RSS() int64 {
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := bytes.Fields(b); len(f) > 1 {
			if pages, err := strconv.ParseInt(string(f[1]), 10, 64); err == nil {
				return pages * int64(os.Getpagesize())
			}
		}
	}
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		return int64(s[0].Value.Uint64())
	}
	return 0
}
