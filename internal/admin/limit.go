package admin

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// limitListener holds at most max connections open, so that clients of
// the admin server cannot take the file descriptors the job needs (a
// checkpoint's files, a sink's). A connection accepted at the limit
// closes the longest-idle open one to make room: a keep-alive connection
// between requests, or one that has sent no request for idleGrace. When
// every open connection is busy, the new one is answered 503 and closed
// at once. Nothing waits in a queue.
//
// Accept runs on the server's accept goroutine; track is the server's
// ConnState hook (the connections' goroutines); Close of a connection
// may come from either. All of them take mu, never across I/O but the
// 503 written to a refused connection, which is not in the set.
type limitListener struct {
	net.Listener
	max       int
	idleGrace time.Duration
	// refused and evicted count the connections answered 503 and the
	// idle ones closed to make room; they are called with mu not held.
	refused, evicted func()

	mu struct {
		sync.Mutex
		conns map[*limitConn]struct{}
	}
}

// limitConn is a connection counted by its listener until it is closed.
type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
	// state and since (when it entered state) are guarded by l.mu.
	state http.ConnState
	since time.Time
}

func newLimitListener(ln net.Listener, max int, idleGrace time.Duration, refused, evicted func()) *limitListener {
	l := &limitListener{Listener: ln, max: max, idleGrace: idleGrace, refused: refused, evicted: evicted}
	l.mu.conns = map[*limitConn]struct{}{}
	return l
}

// refusal is what a connection over the limit reads before it is closed.
var refusal = func() []byte {
	const body = "weir admin server: too many open connections\n"
	return fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}()

// Accept returns the next connection that fits under the limit.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		now := time.Now()
		lc := &limitConn{Conn: c, l: l, state: http.StateNew, since: now}
		l.mu.Lock()
		var victim *limitConn
		full := len(l.mu.conns) >= l.max
		if full {
			victim = l.idlestLocked(now)
		}
		if victim != nil {
			delete(l.mu.conns, victim)
		}
		if !full || victim != nil {
			l.mu.conns[lc] = struct{}{}
		}
		l.mu.Unlock()
		if victim != nil {
			victim.Close()
			l.evicted()
		}
		if !full || victim != nil {
			return lc, nil
		}
		// Counted before the answer, so whoever reads the 503 sees
		// the count. A fresh socket's send buffer is empty: the write
		// does not block, and the deadline makes sure of it.
		l.refused()
		c.SetWriteDeadline(now.Add(100 * time.Millisecond))
		c.Write(refusal)
		c.Close()
	}
}

// idlestLocked returns the open connection idle for longest (nil: none
// is idle); l.mu is held.
func (l *limitListener) idlestLocked(now time.Time) *limitConn {
	var best *limitConn
	for c := range l.mu.conns {
		idle := c.state == http.StateIdle || c.state == http.StateNew && now.Sub(c.since) >= l.idleGrace
		if idle && (best == nil || c.since.Before(best.since)) {
			best = c
		}
	}
	return best
}

// track is the server's ConnState hook: it records each connection's
// state; a closed or hijacked one leaves the count.
func (l *limitListener) track(c net.Conn, s http.ConnState) {
	lc, ok := c.(*limitConn)
	if !ok {
		return
	}
	if s == http.StateClosed || s == http.StateHijacked {
		lc.release()
		return
	}
	l.mu.Lock()
	lc.state, lc.since = s, time.Now()
	l.mu.Unlock()
}

// open is the number of connections held open.
func (l *limitListener) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.mu.conns)
}

func (c *limitConn) release() {
	c.l.mu.Lock()
	delete(c.l.mu.conns, c)
	c.l.mu.Unlock()
}

// Close closes the connection and frees its place; it is safe to call
// more than once and from any goroutine.
func (c *limitConn) Close() error {
	err := net.ErrClosed
	c.once.Do(func() {
		c.release()
		err = c.Conn.Close()
	})
	return err
}
