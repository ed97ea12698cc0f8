package flock

import (
	"bytes"
	"os"
	"strconv"
)

// writePID replaces the content of the locked file f by this process's
// id.
func writePID(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}

// Holder returns the process id that the holder of the lock at path wrote
// into it; 0 when the file holds none (the holder has not written it yet,
// or the lock is free).
func Holder(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}
