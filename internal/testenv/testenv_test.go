package testenv

import (
	"runtime"
	"strings"
	"testing"
)

// recorder is a testing.TB that records how Unavailable ended it; Fatal
// and Skip stop its goroutine, as the real ones do.
type recorder struct {
	testing.TB
	failed, skipped bool
	msg             string
}

func (r *recorder) Helper()               {}
func (r *recorder) Fatal(args ...any)     { r.failed, r.msg = true, args[0].(string); runtime.Goexit() }
func (r *recorder) Skip(args ...any)      { r.skipped, r.msg = true, args[0].(string); runtime.Goexit() }
func (r *recorder) Log(args ...any)       { r.msg = args[0].(string) }
func (r *recorder) Logf(string, ...any)   {}
func (r *recorder) Errorf(string, ...any) {}
func (r *recorder) Fatalf(string, ...any) { r.failed = true; runtime.Goexit() }
func (r *recorder) Skipf(string, ...any)  { r.skipped = true; runtime.Goexit() }
func (r *recorder) Name() string          { return "recorder" }
func (r *recorder) Setenv(k, v string)    {}
func (r *recorder) Cleanup(func())        {}
func (r *recorder) Failed() bool          { return r.failed }
func (r *recorder) Skipped() bool         { return r.skipped }
func (r *recorder) TempDir() string       { return "" }
func (r *recorder) Error(args ...any)     {}
func (r *recorder) SkipNow()              { r.skipped = true; runtime.Goexit() }
func (r *recorder) FailNow()              { r.failed = true; runtime.Goexit() }
func (r *recorder) Fail()                 { r.failed = true }
func (r *recorder) Chdir(string)          {}

func run(f func(tb testing.TB)) *recorder {
	r := &recorder{}
	done := make(chan struct{})
	go func() { defer close(done); f(r) }()
	<-done
	return r
}

func TestUnavailable(t *testing.T) {
	for _, c := range []struct {
		env             string
		failed, skipped bool
		suffix          string
	}{
		{"", false, true, "what is missing, or WEIR_REQUIRE_SERVICES=1 to fail instead of skipping"},
		{"0", false, true, "what is missing, or WEIR_REQUIRE_SERVICES=1 to fail instead of skipping"},
		{"1", true, false, "what is missing (WEIR_REQUIRE_SERVICES=1)"},
	} {
		t.Setenv(RequireVar, c.env)
		r := run(func(tb testing.TB) { Unavailable(tb, "what is missing") })
		if r.failed != c.failed || r.skipped != c.skipped || r.msg != c.suffix {
			t.Errorf("%s=%q: failed %v skipped %v %q, want %v %v %q", RequireVar, c.env, r.failed, r.skipped, r.msg, c.failed, c.skipped, c.suffix)
		}
	}
}

// TestMissingServers points at ports where nothing listens: Postgres and
// NATS skip, or fail when required; PostgresIfReachable returns false.
func TestMissingServers(t *testing.T) {
	t.Setenv("WEIR_PG_URL", "postgres://u:secret@127.0.0.1:1/db?sslmode=disable&connect_timeout=2")
	t.Setenv("WEIR_NATS_URL", "nats://127.0.0.1:1")
	for _, req := range []string{"", "1"} {
		t.Setenv(RequireVar, req)
		for name, f := range map[string]func(testing.TB){
			"Postgres": func(tb testing.TB) { Postgres(tb) },
			"NATS":     func(tb testing.TB) { NATS(tb) },
			"PostgresIfReachable": func(tb testing.TB) {
				if u, ok := PostgresIfReachable(tb); ok || u != "" {
					tb.Fatal("reachable")
				}
			},
		} {
			r := run(f)
			wantFail := req == "1"
			wantSkip := req == "" && name != "PostgresIfReachable"
			if r.failed != wantFail || r.skipped != wantSkip || strings.Contains(r.msg, "secret") || r.msg == "" {
				t.Errorf("%s, %s=%q: failed %v skipped %v %q", name, RequireVar, req, r.failed, r.skipped, r.msg)
			}
		}
	}
}

func TestURLs(t *testing.T) {
	t.Setenv("WEIR_PG_URL", "")
	t.Setenv("WEIR_NATS_URL", "")
	if PostgresURL() != DefaultPostgresURL || NATSURL() != DefaultNATSURL {
		t.Fatalf("defaults %q %q", PostgresURL(), NATSURL())
	}
	t.Setenv("WEIR_PG_URL", "postgres://x")
	t.Setenv("WEIR_NATS_URL", "nats://y")
	if PostgresURL() != "postgres://x" || NATSURL() != "nats://y" {
		t.Fatalf("from the environment %q %q", PostgresURL(), NATSURL())
	}
}
