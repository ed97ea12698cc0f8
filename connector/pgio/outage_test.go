package pgio

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"
)

// waitLog waits up to d for logs to contain want and returns how long it
// took; it fails the test if it never does.
func waitLog(t *testing.T, logs *syncBuffer, want string, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for !strings.Contains(logs.String(), want) {
		if time.Since(start) > d {
			t.Fatalf("no %q in the log after %v:\n%s", want, d, logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

// TestStall: a connection that stays open and forwards no bytes is noticed
// within Options.Timeout, logged as a stall naming the table and the
// operation, and replaced; once the server answers again the Flush
// commits every row. (Before, the Flush waited on the silent connection
// for ever, without a line.)
func TestStall(t *testing.T) {
	d := connect(t)
	table := d.table(t, "")
	p := startProxy(t, d.url)
	cs := p.connString(t, d.url)
	var logs syncBuffer
	const timeout = 500 * time.Millisecond
	o := Options{MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, Timeout: timeout,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	s := mustOpen(t, cs, table, []string{"k"}, []string{"v"}, o)
	mustWrite(t, s, row([]string{"k", "1"}, 0, 10, "on_time", 0, 10, "v", "1"))
	mustFlush(t, s)

	mustWrite(t, s, row([]string{"k", "2"}, 0, 10, "on_time", 0, 10, "v", "2"))
	p.Stall()
	done := make(chan error, 1)
	go func() { done <- s.Flush(context.Background()) }()
	// The first stalled attempt ends at its deadline; the warning follows
	// at once (the slack is for a loaded machine, not for speed).
	took := waitLog(t, &logs, "Postgres stalled", timeout+5*time.Second)
	l := logs.String()
	if !strings.Contains(l, "table="+table) || !strings.Contains(l, `op="flush 1 rows to`) || !strings.Contains(l, "address="+p.Addr()) {
		t.Fatalf("the stall warning does not name the table, the operation and the address:\n%s", l)
	}
	if took < timeout/2 {
		t.Fatalf("stall reported after %v, before the %v deadline", took, timeout)
	}
	if err := p.Heal(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Flush after the stall: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Flush did not return 30s after the stall ended")
	}
	if n := d.count(t, table); n != 2 || s.Pending() != 0 {
		t.Fatalf("%d rows in the table and %d pending after the stall, want 2 and 0", n, s.Pending())
	}
	if !strings.Contains(logs.String(), "Postgres is available again") {
		t.Fatalf("no recovery logged:\n%s", logs.String())
	}
}

// TestWrongPort: a port nobody listens on is retried for
// Options.ConnectRetryFor, each retry logged with the address, then Open
// fails with an error that names it. (Before, Open retried for ever.)
func TestWrongPort(t *testing.T) {
	d := connect(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // a free port: connections are refused
	p := startProxy(t, d.url)
	cs := strings.Replace(p.connString(t, d.url), p.Addr(), addr, 1)
	p.Close()
	var logs syncBuffer
	o := Options{MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, ConnectRetryFor: 500 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	start := time.Now()
	s, err := openJSONB(context.Background(), cs, "weir_wrong_port", []string{"k"}, []string{"v"}, o)
	took := time.Since(start)
	if err == nil {
		s.Close()
		t.Fatal("Open on a closed port succeeded")
	}
	if msg := err.Error(); !strings.Contains(msg, "cannot reach Postgres at "+addr) || !strings.Contains(msg, "connect_retry_for (Options.ConnectRetryFor) is 500ms") ||
		!strings.Contains(msg, "connection refused") {
		t.Fatalf("Open = %v, want an error naming %s, the bound and the refusal", err, addr)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Open = %v: a deadline, not the refusal", err)
	}
	if took < 500*time.Millisecond {
		t.Fatalf("Open gave up after %v, before ConnectRetryFor", took)
	}
	if l := logs.String(); !strings.Contains(l, "address="+addr) || !strings.Contains(l, "attempt=2") {
		t.Fatalf("the retries are not logged with the address:\n%s", l)
	}
}
