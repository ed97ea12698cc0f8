// Package testenv finds the local servers and tools some tests need
// (Postgres, NATS JetStream, kcat). When one is missing the test is
// skipped, or fails when WEIR_REQUIRE_SERVICES=1, which .ci/run sets so
// that CI cannot pass by skipping them.
//
// The servers are the ones of WEIR_PG_URL and WEIR_NATS_URL, by default
// those of this machine (DefaultPostgresURL, DefaultNATSURL). A test
// that needs a NATS server of its own starts one in process
// (EmbeddedJetStream).
package testenv

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// RequireVar is the environment variable that turns a missing server into
// a failure.
const RequireVar = "WEIR_REQUIRE_SERVICES"

const (
	// DefaultPostgresURL is the test Postgres when WEIR_PG_URL is not set.
	DefaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	// DefaultNATSURL is the test NATS server when WEIR_NATS_URL is not set.
	DefaultNATSURL = "nats://127.0.0.1:4222"
)

// Required reports whether missing servers fail tests
// (WEIR_REQUIRE_SERVICES=1).
func Required() bool { return os.Getenv(RequireVar) == "1" }

// Unavailable ends tb because what it needs is missing (msg says what and
// how to provide it): it fails it when Required, and skips it otherwise.
func Unavailable(tb testing.TB, msg string) {
	tb.Helper()
	if Required() {
		tb.Fatal(msg + " (" + RequireVar + "=1)")
	}
	tb.Skip(msg + ", or " + RequireVar + "=1 to fail instead of skipping")
}

// PostgresURL is the test Postgres's connection string: WEIR_PG_URL, or
// DefaultPostgresURL.
func PostgresURL() string {
	if u := os.Getenv("WEIR_PG_URL"); u != "" {
		return u
	}
	return DefaultPostgresURL
}

// Postgres returns PostgresURL once a connection to it answers a ping;
// otherwise it skips tb, or fails it when Required.
func Postgres(tb testing.TB) string {
	tb.Helper()
	u := PostgresURL()
	if err := pingPostgres(u); err != nil {
		Unavailable(tb, postgresMsg(u, err))
	}
	return u
}

// PostgresIfReachable is Postgres for a test of which Postgres is only one
// part: when it is not reachable it logs so and returns false instead of
// skipping (and still fails tb when Required).
func PostgresIfReachable(tb testing.TB) (string, bool) {
	tb.Helper()
	u := PostgresURL()
	if err := pingPostgres(u); err != nil {
		msg := postgresMsg(u, err)
		if Required() {
			tb.Fatal(msg + " (" + RequireVar + "=1)")
		}
		tb.Log(msg + ": the Postgres part of the test is skipped")
		return "", false
	}
	return u, true
}

func pingPostgres(u string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.Ping(ctx)
}

func postgresMsg(u string, err error) string {
	return fmt.Sprintf("Postgres not reachable at %s (%v): set WEIR_PG_URL or start it", describePostgres(u), err)
}

// describePostgres prints a connection string without its password.
func describePostgres(u string) string {
	cfg, err := pgx.ParseConfig(u)
	if err != nil {
		return "WEIR_PG_URL (unparsable)"
	}
	return fmt.Sprintf("host=%s port=%d user=%s database=%s", cfg.Host, cfg.Port, cfg.User, cfg.Database)
}

// NATSURL is the test NATS server's URL: WEIR_NATS_URL, or DefaultNATSURL.
func NATSURL() string {
	if u := os.Getenv("WEIR_NATS_URL"); u != "" {
		return u
	}
	return DefaultNATSURL
}

// NATS returns NATSURL once the server there answers with JetStream
// enabled; otherwise it skips tb, or fails it when Required.
func NATS(tb testing.TB) string {
	tb.Helper()
	u := NATSURL()
	if err := pingNATS(u); err != nil {
		Unavailable(tb, fmt.Sprintf("NATS JetStream server not available at %s (%v); set WEIR_NATS_URL to point at one", u, err))
	}
	return u
}

func pingNATS(u string) error {
	nc, err := nats.Connect(u, nats.Timeout(2*time.Second), nats.MaxReconnects(0))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err = js.AccountInfo(ctx)
	return err
}

// EmbeddedJetStream starts a nats-server with JetStream in this process
// (on a free port, its store under a temporary directory, shut down when
// tb ends) and returns its URL and a JetStream client of it: for tests
// that need a server of their own rather than the machine's.
func EmbeddedJetStream(tb testing.TB) (string, jetstream.JetStream) {
	tb.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: tb.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		tb.Fatal(err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		tb.Fatal("embedded nats-server not ready")
	}
	tb.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatal(err)
	}
	return s.ClientURL(), js
}
