package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir/ledger"
)

// crashRecords is the size of the crash test's input: 1,000,000 by
// default; WEIR_CRASH_RECORDS changes it (CI may lower it, a long run may
// raise it).
func crashRecords(t *testing.T) int {
	if s := os.Getenv("WEIR_CRASH_RECORDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("WEIR_CRASH_RECORDS=%q", s)
		}
		return n
	}
	return 1_000_000
}

var (
	buildOnce sync.Once
	weirBin   string
	buildErr  error
)

// weirBinary builds cmd/weir once per test binary (without the race
// detector, so that the crash runs go at full speed).
func weirBinary(t testing.TB) string {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "weir-crash-bin")
		if err != nil {
			buildErr = err
			return
		}
		weirBin = filepath.Join(dir, "weir")
		out, err := exec.Command("go", "build", "-o", weirBin, "../cmd/weir").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return weirBin
}

const crashJob = `
name: crash-%[1]s
source:
  type: generator
  generator:
    records: %[2]d
    keys: 5000
    duration: 2h
    disorder:
      - {share: 0.9, max: 20s}
      - {share: 0.08, min: 20s, max: 5m}
      - {share: 0.02, min: 5m, max: 30m}
    bad: 0.001
    seed: 11
watermark: {max_out_of_orderness: 20s%[4]s}
key: [user_id]
window: %[3]s
allowed_lateness: 3m
aggregate:
  - {name: orders, fn: count}
  - {name: total, fn: sum, field: amount}
  - {name: biggest, fn: max, field: amount}
sinks:
  results: {type: jsonl, path: results.jsonl}
  late: {type: jsonl, path: late.jsonl}
  dead_letter: {type: jsonl, path: bad.jsonl}
`

var crashOutputs = []string{"results.jsonl", "late.jsonl", "bad.jsonl", "summary.json"}

// crashRun runs weir in dir with env; it reports whether the process was
// killed (by its crash hook or by the test).
func crashRun(t *testing.T, dir string, args []string, env []string, killAfter time.Duration) (killed bool) {
	t.Helper()
	cmd := exec.Command(weirBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var timer *time.Timer
	if killAfter > 0 {
		timer = time.AfterFunc(killAfter, func() { cmd.Process.Kill() })
		defer timer.Stop()
	}
	err := cmd.Wait()
	if err == nil {
		return false
	}
	if ee, ok := err.(*exec.ExitError); ok && !ee.Exited() {
		return true // killed by a signal
	}
	t.Fatalf("weir %v: %v\n%s", args, err, stderr.String())
	return false
}

func readOutputs(t *testing.T, dir string) map[string][]byte {
	m := map[string][]byte{}
	for _, f := range crashOutputs {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil && !(f == "late.jsonl" && os.IsNotExist(err)) { // a ledger instead
			t.Fatal(err)
		}
		m[f] = oneRun(t, f, b)
	}
	return m
}

var (
	runField = regexp.MustCompile(`"run":[0-9]+`)
	crcField = regexp.MustCompile(`,"crc":"[0-9a-f]{8}"`)
)

// oneRun is an output with its run ids as R (a run that used the wall
// clock has another id than its reference run) and its ledger checksums
// (over the id) gone; every line of it must be of one run, however often
// the run was killed and resumed.
func oneRun(t *testing.T, what string, b []byte) []byte {
	t.Helper()
	runs := map[string]bool{}
	if what != "summary.json" {
		for no, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
			m := runField.Find(line)
			if m == nil && len(line) > 0 {
				t.Errorf("%s:%d carries no run: %.100s", what, no+1, line)
			}
			runs[string(m)] = true
		}
	}
	if len(runs) > 1 {
		t.Errorf("%s holds lines of %d runs, want one run's", what, len(runs))
	}
	return crcField.ReplaceAll(runField.ReplaceAll(b, []byte(`"run":R`)), nil)
}

// TestCrashRecovery runs weir as a subprocess over a million generated
// records with late data (tumbling windows with early firings, and
// sessions), kills it again and again, at every named crash point
// (WEIR_TEST_CRASH) and at random moments (SIGKILL), restarting it each
// time from its checkpoints; the final outputs are byte-identical to an
// uninterrupted deterministic run, and so is the summary, so no record was
// judged late differently after a restore. A parallel variant, whose
// watermarks follow its records, compares the outputs as sorted lines.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the crash test runs weir many times")
	}
	n := crashRecords(t)
	cases := []struct {
		name, window, emit string
		parallel, ledger   bool
	}{
		{"tumbling", "{type: tumbling, size: 1m}", ", emit: every_record", false, false},
		{"sessions", "{type: session, gap: 30s}", "", false, false},
		{"parallel", "{type: tumbling, size: 1m}", ", emit: every_record", true, false},
		// Too-late records into the ledger: its entries, in order, equal
		// the uninterrupted run's byte for byte (no entry lost or twice).
		{"ledger", "{type: sliding, size: 2m, slide: 1m}", ", emit: every_record", false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			records := n
			interval := "150ms"
			if c.parallel {
				records = max(n/2, 1000)
				interval = "40ms"
			}
			spec := fmt.Sprintf(crashJob, c.name, records, c.window, c.emit)
			if c.ledger {
				records = max(n/2, 1000)
				spec = strings.Replace(spec, "late: {type: jsonl, path: late.jsonl}", "late: {type: ledger, dir: ledger}", 1)
			}
			if c.name == "tumbling" {
				spec = strings.Replace(spec, "allowed_lateness: 3m", "allowed_lateness: 3m\ntrigger: {type: continuous, interval: 30s}", 1)
			}
			refArgs := []string{"run", "job.yaml", "--summary-json", "summary.json"}
			if c.parallel {
				refArgs = append(refArgs, "--parallelism", "2")
			} else {
				refArgs = append(refArgs, "--deterministic", "--now", "2026-06-01T00:00:00Z")
			}
			args := append(slices.Clone(refArgs), "--checkpoint-dir", "ck", "--checkpoint-interval", interval)
			ref := t.TempDir()
			os.WriteFile(filepath.Join(ref, "job.yaml"), []byte(spec), 0o644)
			if crashRun(t, ref, refArgs, nil, 0) {
				t.Fatal("the reference run was killed")
			}
			want := readOutputs(t, ref)
			if c.ledger {
				want["late.jsonl"] = ledgerBytes(t, filepath.Join(ref, "ledger", "crash-ledger"))
				if len(want["late.jsonl"]) == 0 {
					t.Fatal("the reference run's ledger is empty")
				}
			}

			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(spec), 0o644)
			plan := []string{"part-written:3", "before-manifest:2", "after-manifest:2", "sink-committed:2", "after-retain:2", "", "", ""}
			r := rand.New(rand.NewPCG(uint64(len(c.name)), 7))
			kills := killUntilDone(t, plan, func() time.Duration { return time.Duration(150+r.IntN(900)) * time.Millisecond },
				func(env []string, after time.Duration) bool { return crashRun(t, dir, args, env, after) })
			if kills < 3 {
				t.Fatalf("only %d kills happened; the test proves little (a machine much faster than expected?)", kills)
			}
			got := readOutputs(t, dir)
			if c.ledger {
				got["late.jsonl"] = ledgerBytes(t, filepath.Join(dir, "ledger", "crash-ledger"))
			}
			for _, f := range crashOutputs {
				a, b := got[f], want[f]
				if c.parallel && f != "summary.json" {
					// Lines come in another order; a dead letter's detail
					// may name the wall-clock time.
					a, b = sortedLines(a), sortedLines(b)
				}
				if !bytes.Equal(a, b) {
					t.Errorf("%s after %d kills differs from the uninterrupted run (%d bytes, want %d)", f, kills, len(got[f]), len(want[f]))
				}
			}
			if c.ledger {
				// No entry lost or twice: one per too-late record and
				// partial miss the summary counts.
				var sum struct {
					Late    int `json:"late_side_output"`
					Partial int `json:"late_partial"`
				}
				if err := json.Unmarshal(got["summary.json"], &sum); err != nil {
					t.Fatal(err)
				}
				if n := bytes.Count(got["late.jsonl"], []byte("\n")); n != sum.Late+sum.Partial || n == 0 {
					t.Errorf("the ledger holds %d entries; the summary counts %d too-late records and %d partial misses", n, sum.Late, sum.Partial)
				}
			}
			t.Logf("%d records, %d kills, outputs identical", records, kills)
		})
	}
}

// ledgerBytes is a ledger's segments, concatenated in order (a restored
// run appends to new segments, so the files differ; the entries do not).
func ledgerBytes(t *testing.T, dir string) []byte {
	t.Helper()
	segs, err := ledger.Segments(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b []byte
	for _, s := range segs {
		data, err := os.ReadFile(filepath.Join(dir, s))
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, data...)
	}
	return oneRun(t, dir, b)
}

// killUntilDone runs a job until it finishes: the runs of plan crash at
// the named point (WEIR_TEST_CRASH) or, for "", are killed after a random
// delay; later runs are left alone. It returns the number of kills.
func killUntilDone(t *testing.T, plan []string, delay func() time.Duration, run func(env []string, killAfter time.Duration) (killed bool)) int {
	t.Helper()
	kills := 0
	for i := 0; ; i++ {
		if i > 40 {
			t.Fatal("the run never finished")
		}
		var env []string
		var after time.Duration
		if i < len(plan) {
			if plan[i] != "" {
				env = []string{"WEIR_TEST_CRASH=" + plan[i]}
			} else {
				after = delay()
			}
		}
		if !run(env, after) {
			return kills
		}
		kills++
	}
}

var detail = regexp.MustCompile(`"detail":"(?:[^"\\]|\\.)*"`)

func sortedLines(b []byte) []byte {
	lines := strings.Split(string(detail.ReplaceAll(b, nil)), "\n")
	slices.Sort(lines)
	return []byte(strings.Join(lines, "\n"))
}
