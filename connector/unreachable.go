package connector

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
)

// Unreachable reports whether err is a connection's failure: the server
// down or unreachable (a refused or reset connection, a network error,
// a connection cut), not an error the server answered with or a timeout
// of the caller's own. A job whose server goes away waits for it; a
// restart that cannot reach it tries again (job.RunRestarting).
func Unreachable(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}
