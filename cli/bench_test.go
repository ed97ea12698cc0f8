package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestBenchNexmarkSmoke runs a CI-sized weir bench nexmark over every
// query, at parallelism 1 and 2, and requires the JSON report with rows
// equal to the hand loop's. (Rates are not checked: speed lives in the
// benchmark, not in tests.)
func TestBenchNexmarkSmoke(t *testing.T) {
	for _, par := range []string{"1", "2"} {
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), strings.Fields("bench nexmark --query all --events 30000 --json --parallelism "+par), IO{Stdout: &stdout, Stderr: &stderr})
		if code != ExitOK {
			t.Fatalf("parallelism %s: exit %d: %s%s", par, code, stdout.String(), stderr.String())
		}
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		if len(lines) != 9 {
			t.Fatalf("parallelism %s: %d report lines, want one per query (9):\n%s", par, len(lines), stdout.String())
		}
		for _, l := range lines {
			var r benchReport
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatalf("not JSON: %q: %v", l, err)
			}
			if !r.RowsMatch || r.Rows == 0 || r.Events != 30000 || r.Weir <= 0 || r.Hand <= 0 || r.Ratio <= 0 {
				t.Errorf("parallelism %s: %s", par, l)
			}
		}
	}
	// --state pebble runs the stateful queries with their state in
	// Pebble too: the same rows, and a rate beside the in-memory one.
	// Caches of 10 entries send most of the state to Pebble (the windows'
	// walks and drops on disk, sessions' entries and timers).
	for _, q := range []string{"q5", "count", "q11"} {
		var stdout, stderr bytes.Buffer
		if code := Main(context.Background(), strings.Fields("bench nexmark --events 20000 --json --state pebble --state-cache 10 --query "+q), IO{Stdout: &stdout, Stderr: &stderr}); code != ExitOK {
			t.Fatalf("--state pebble %s: exit %d: %s%s", q, code, stdout.String(), stderr.String())
		}
		var r benchReport
		if err := json.Unmarshal(stdout.Bytes(), &r); err != nil || !r.RowsMatch || r.Pebble <= 0 || r.PebbleRatio <= 0 || r.PebbleOperators == 0 ||
			r.PebbleWrites < 1000 || r.PebbleWriteBytes <= r.PebbleWrites || r.PebbleCache != 10 {
			t.Errorf("--state pebble %s: %s (%v)", q, stdout.String(), err)
		}
	}
	var stderr bytes.Buffer
	for args, want := range map[string]string{
		"--state disk":    `--state "disk": want memory or pebble`,
		"--state-cache 0": "--state-cache 0: want a positive number",
		"--events -5":     "--events -5: want a positive number",
	} {
		stderr.Reset()
		if code := Main(context.Background(), strings.Fields("bench nexmark "+args), IO{Stdout: &bytes.Buffer{}, Stderr: &stderr}); code != ExitUsage || !strings.Contains(stderr.String(), want) {
			t.Errorf("%s: exit %d, %q; want the value named (%s)", args, code, stderr.String(), want)
		}
	}
	stderr.Reset()
	if code := Main(context.Background(), strings.Fields("bench nexmark --query q99"), IO{Stdout: &bytes.Buffer{}, Stderr: &stderr}); code != ExitUsage || !strings.Contains(stderr.String(), "no query") {
		t.Errorf("an unknown query: exit %d, %q", code, stderr.String())
	}
}

// TestBenchNexmarkSQL: weir bench nexmark --sql runs the queries weir
// runs in SQL beside the typed API, with rows equal to the hand loop's,
// and reports their rates; the others are reported as not reached.
func TestBenchNexmarkSQL(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), strings.Fields("bench nexmark --query all --events 30000 --json --sql"), IO{Stdout: &stdout, Stderr: &stderr})
	if code != ExitOK {
		t.Fatalf("exit %d: %s%s", code, stdout.String(), stderr.String())
	}
	reached := 0
	for l := range strings.Lines(stdout.String()) {
		var r benchReport
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("not JSON: %q: %v", l, err)
		}
		if r.SQL > 0 {
			reached++
			if !r.RowsMatch || r.SQLRatio <= 0 || r.SQLHandRatio <= 0 {
				t.Errorf("%s", l)
			}
		}
	}
	if reached == 0 {
		t.Errorf("no query ran in SQL:\n%s", stdout.String())
	}
}
