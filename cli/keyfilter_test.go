package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/ledger"
	"github.com/weirstream/weir/spec"
)

// TestKeyFilterCanonical: --key (weir ledger ls, weir backfill) compares
// key values canonically, as the job does: another spelling of a number,
// an object's members in another order, and a Postgres ledger's jsonb
// text (numbers in full, members in its own order) find the entry.
func TestKeyFilterCanonical(t *testing.T) {
	jsonbBig := "1" + strings.Repeat("0", 400) // 1e400 as jsonb writes it
	for _, c := range []struct {
		flag, key string
		match     bool
	}{
		{"k=1.0", `{"k":1}`, true},
		{"k=10e399", `{"k":1e+400}`, true},
		{"k=1e400", `{"k": ` + jsonbBig + `}`, true},
		{"k=1e500", `{"k": ` + jsonbBig + `}`, false},
		{"k=9223372036854775809", `{"k":9223372036854775808}`, false},
		{"k=9223372036854775809.0", `{"k":9223372036854775809}`, true},
		{`k={"b":1,"aa":2}`, `{"k":{"aa":2,"b":1}}`, true},
		{`k={"aa":2,"b":1}`, `{"k": {"b": 1, "aa": 2}}`, true},
		{`k={"aa":2,"b":3}`, `{"k": {"b": 1, "aa": 2}}`, false},
		{"k=u17", `{"k":"u17"}`, true},
		{"k=17", `{"k":"17"}`, false},
	} {
		f, err := lsFilter([]string{c.flag}, "", "")
		if err != nil {
			t.Fatal(err)
		}
		if got := f(ledger.Entry{Key: json.RawMessage(c.key)}); got != c.match {
			t.Errorf("--key %s on key %.60s: match %v, want %v", c.flag, c.key, got, c.match)
		}
	}
}

// ledgerJob is a job with a ledger; %s is its results sink's settings.
const ledgerJob = `
name: f
source: {type: file, path: in.jsonl}
key: [user_id]
watermark: {max_out_of_orderness: 1s}
window: {type: tumbling, size: 1m}
aggregate: [{name: n, fn: count}]
sinks:
  results: {type: %s}
  late: {type: ledger, dir: ledger}
`

// TestFilterRefused: a --key field that is not one of the job's key
// fields, or a --reason no entry has, is refused (it would match
// nothing, without a word); the job's own are taken.
func TestFilterRefused(t *testing.T) {
	p, err := spec.Parse([]byte(fmt.Sprintf(ledgerJob, "jsonl, path: out.jsonl")))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ key, reason, want string }{
		{"user_id=u1", "window_expired", ""},
		{"", "window_expired_partial", ""},
		{"userid=u1", "", `--key userid: not a key field of the job; its key fields are user_id; did you mean "user_id"?`},
		{"customer=u1", "", `--key customer: not a key field of the job; its key fields are user_id`},
		{"", "expired", `--reason "expired": ledger entries have reason window_expired or window_expired_partial`},
	} {
		var keys []string
		if c.key != "" {
			keys = []string{c.key}
		}
		err := checkFilter(p, keys, c.reason)
		if got := fmt.Sprint(err); c.want == "" && err != nil || c.want != "" && got != c.want {
			t.Errorf("--key %q --reason %q: %v, want %q", c.key, c.reason, err, c.want)
		}
	}
}

// TestBackfillRefusedExit: a backfill refused for its spec (jsonl results
// without the archive; a checkpoint directory that is not there) exits
// with the usage code, as other refusals do, having read nothing.
func TestBackfillRefusedExit(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ results, flag, want string }{
		{"jsonl, path: out.jsonl", "", "set archive: {dir: archive}"},
		{"sqlite, path: out.db", "--checkpoint-dir=nope", "--checkpoint-dir " + filepath.Join(dir, "nope") + " is not a directory"},
		// Ranges that hold nothing, or seconds given as milliseconds; a
		// malformed hash; a report that could not be written after the
		// backfill had run (found by a trial: each exited 0, or 1 after
		// applying).
		{"sqlite, path: out.db", "--window=2026-01-01T00:02:00Z..2026-01-01T00:01:00Z", "is not before 2026-01-01T00:01:00Z, so nothing is in the range"},
		{"sqlite, path: out.db", "--arrived=2026-06-02..2026-06-01", "is not before 2026-06-01"},
		{"sqlite, path: out.db", "--window=1767225600..1767225660", "these look like Unix seconds"},
		{"sqlite, path: out.db", "--accept-spec=nothex", "is no spec hash: one is 8 hex digits"},
		{"sqlite, path: out.db", "--report=nodir/r.json", "its directory is not there (nothing was applied)"},
	} {
		if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(fmt.Sprintf(ledgerJob, c.results)), 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"backfill", "job.yaml"}
		if c.flag != "" {
			args = append(args, c.flag)
		}
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), args, IO{Stdout: &stdout, Stderr: &stderr, Dir: dir})
		if code != ExitUsage || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", args, code, stderr.String(), ExitUsage, c.want)
		}
	}
}

// TestCompareIDs: weir ledger ls lists entries in source order, by the
// numbers of their ids.
func TestCompareIDs(t *testing.T) {
	ids := []string{"0:10", "1:2", "0:9", "12", "0:8", "3", "x"}
	slices.SortFunc(ids, compareIDs)
	if want := []string{"0:8", "0:9", "0:10", "1:2", "3", "12", "x"}; !slices.Equal(ids, want) {
		t.Fatalf("sorted %v, want %v", ids, want)
	}
}

// TestLedgerFlagsRefused: weir ledger refuses a negative --since or
// --limit, and a --window that holds nothing, with the usage code.
func TestLedgerFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(fmt.Sprintf(ledgerJob, "sqlite, path: out.db")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ledger", "ls", "job.yaml", "--since=-1h"}, "--since -1h0m0s is negative"},
		{[]string{"ledger", "stats", "job.yaml", "--since=-1h"}, "--since -1h0m0s is negative"},
		{[]string{"ledger", "ls", "job.yaml", "--limit=-1"}, "--limit -1 is negative: give 0 for all entries"},
		{[]string{"ledger", "ls", "job.yaml", "--window=20..10"}, `--window "20..10": 20 is not before 10`},
	} {
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), c.args, IO{Stdout: &stdout, Stderr: &stderr, Dir: dir})
		if code != ExitUsage || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr.String(), ExitUsage, c.want)
		}
	}
}

// TestKeyFilterFields: --key repeated matches entries whose key has
// every field's value (a key of several fields); a field given twice is
// refused, not silently taken by its last value.
func TestKeyFilterFields(t *testing.T) {
	f, err := lsFilter([]string{"user_id=u1", "region=eu"}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]bool{`{"user_id":"u1","region":"eu"}`: true, `{"user_id":"u1","region":"us"}`: false, `{"user_id":"u2","region":"eu"}`: false} {
		if got := f(ledger.Entry{Key: json.RawMessage(key)}); got != want {
			t.Errorf("key %s: match %v, want %v", key, got, want)
		}
	}
	if _, err := lsFilter([]string{"user_id=u1", "user_id=u2"}, "", ""); err == nil || !strings.Contains(err.Error(), "--key user_id is given twice") {
		t.Errorf("a field given twice: %v", err)
	}
}
