// Package pgproxy is a TCP proxy for tests of Postgres outages: it sits
// between a client and the test server and can refuse new connections,
// drop the live ones, or stall (accept and forward no bytes), then be
// healed again.
package pgproxy

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Mode is what the proxy does with connections.
type Mode int

// The modes of a Proxy.
const (
	// Forward passes bytes both ways (the default).
	Forward Mode = iota
	// Stall accepts connections and forwards no bytes either way, on new
	// connections and live ones (a server that went silent with the TCP
	// connection open).
	Stall
)

// Proxy forwards TCP connections from a port of 127.0.0.1 to a server.
// Its methods are safe for concurrent use; Close stops every goroutine it
// started.
type Proxy struct {
	network, target string // the server
	addr            string // the proxy's 127.0.0.1:port

	mu struct {
		sync.Mutex
		ln     net.Listener // nil while refusing
		conns  map[net.Conn]bool
		mode   Mode
		healed chan struct{} // closed when the mode goes back to Forward
		closed bool
	}
	wg sync.WaitGroup
}

// Start starts a proxy to the server of connString (a pgx connection
// string) on a free port of 127.0.0.1.
func Start(connString string) (*Proxy, error) {
	cfg, err := pgx.ParseConfig(connString)
	if err != nil {
		return nil, err
	}
	p := &Proxy{network: "tcp", target: net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))}
	if strings.HasPrefix(cfg.Host, "/") {
		p.network, p.target = "unix", fmt.Sprintf("%s/.s.PGSQL.%d", cfg.Host, cfg.Port)
	}
	p.mu.conns = map[net.Conn]bool{}
	p.mu.healed = make(chan struct{})
	close(p.mu.healed)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	return p, nil
}

// Addr is the proxy's address, 127.0.0.1:port.
func (p *Proxy) Addr() string { return p.addr }

// ConnString is connString with the proxy as its host and port.
func (p *Proxy) ConnString(connString string) (string, error) {
	if strings.HasPrefix(connString, "postgres://") || strings.HasPrefix(connString, "postgresql://") {
		u, err := url.Parse(connString)
		if err != nil {
			return "", err
		}
		u.Host = p.addr
		q := u.Query()
		q.Del("host")
		q.Del("port")
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	host, port, _ := net.SplitHostPort(p.addr)
	return connString + " host=" + host + " port=" + port, nil
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.mu.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go p.forward(c)
		}
	}()
}

// track registers c to be killed by Drop and Refuse; false if the proxy is
// refusing.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.ln == nil {
		return false
	}
	p.mu.conns[c] = true
	return true
}

func (p *Proxy) forward(client net.Conn) {
	defer p.wg.Done()
	defer client.Close()
	if !p.track(client) {
		return
	}
	defer p.untrack(client)
	server, err := net.DialTimeout(p.network, p.target, 5*time.Second)
	if err != nil {
		return
	}
	defer server.Close()
	if !p.track(server) {
		return
	}
	defer p.untrack(server)
	done := make(chan struct{}, 2)
	go func() { p.copy(server, client); done <- struct{}{} }()
	go func() { p.copy(client, server); done <- struct{}{} }()
	<-done
	client.Close()
	server.Close()
	<-done
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.mu.conns, c)
	p.mu.Unlock()
}

// copy copies src to dst until either fails, holding each chunk read
// while the proxy stalls.
func (p *Proxy) copy(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		p.mu.Lock()
		healed := p.mu.healed
		p.mu.Unlock()
		<-healed // Stall holds the bytes here; Drop closes the conns
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			healed = p.mu.healed
			p.mu.Unlock()
			<-healed
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // io.EOF or a closed connection
		}
	}
}

// Refuse closes the port (new connections are refused) and the live
// connections.
func (p *Proxy) Refuse() {
	p.mu.Lock()
	if p.mu.ln != nil {
		p.mu.ln.Close()
		p.mu.ln = nil
	}
	p.mu.Unlock()
	p.Drop()
}

// Drop closes the live connections (the client sees a reset or EOF); new
// ones are accepted as before.
func (p *Proxy) Drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.mu.conns {
		c.Close()
	}
	clear(p.mu.conns)
}

// Stall makes the proxy forward no bytes, on live and new connections,
// until Heal.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.mode != Stall {
		p.mu.mode = Stall
		p.mu.healed = make(chan struct{})
	}
}

// Heal ends a Stall and, after Refuse, listens on the same port again.
func (p *Proxy) Heal() error {
	p.mu.Lock()
	if p.mu.mode == Stall {
		p.mu.mode = Forward
		close(p.mu.healed)
	}
	listening, closed := p.mu.ln != nil, p.mu.closed
	p.mu.Unlock()
	if listening || closed {
		return nil
	}
	var err error
	for range 100 {
		var ln net.Listener
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			p.serve(ln)
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("pgproxy: listen on %s again: %w", p.addr, err)
}

// Close refuses, ends a stall, and waits for the proxy's goroutines. It is
// idempotent.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.mu.closed = true
	if p.mu.mode == Stall {
		p.mu.mode = Forward
		close(p.mu.healed)
	}
	p.mu.Unlock()
	p.Refuse()
	p.wg.Wait()
}
