package job

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/spec"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// readOut is the results file out.jsonl of a run in dir.
func readOut(t *testing.T, dir string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "out.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// runSpec writes files into a fresh directory, runs the YAML spec there
// deterministically and returns the directory and the summary.
func runSpec(t *testing.T, yaml string, files map[string]string, o RunOptions) (string, Summary) {
	t.Helper()
	dir, p := jobtest.Prepare(t, yaml, files, o.Dir)
	o.Dir = dir
	if o.Now.IsZero() {
		o.Now = jobtest.TestNow
	}
	sum := runPlan(t, p, o)
	if !sum.Conserved() {
		t.Fatalf("conservation violated: %s", sum.JSON())
	}
	return dir, sum
}

const badJob = `
name: bad
source: {type: file, path: in.jsonl, channels: 2}
watermark: {max_out_of_orderness: 1s}
key: [user_id]
window: {type: tumbling, size: 10s}
aggregate: [{name: total, fn: sum, field: amount}]
sinks:
  results: {type: jsonl, path: out.jsonl}
  dead_letter: {type: jsonl, path: bad.jsonl}
`

// TestBadInput checks, for each kind of bad input (R2), the dead letter's
// reason, its line and raw text, and conservation: one good record
// surrounds each bad one and still counts.
func TestBadInput(t *testing.T) {
	good := `{"user_id": "a", "amount": 1, "ts": 1767225600000}`
	cases := []struct{ name, line, reason string }{
		{"malformed JSON", `{"user_id": "a", "ts": `, "json_malformed"},
		{"not an object", `[1, 2]`, "json_malformed"},
		{"invalid UTF-8", "{\"user_id\": \"a\xff\", \"amount\": 1, \"ts\": 1767225600000}", "utf8_invalid"},
		{"line over 1 MiB", `{"user_id": "` + strings.Repeat("x", 1<<20) + `", "ts": 1767225600000}`, "line_too_long"},
		{"timestamp missing", `{"user_id": "a", "amount": 1}`, "timestamp_missing"},
		{"timestamp null", `{"user_id": "a", "amount": 1, "ts": null}`, "timestamp_missing"},
		{"timestamp unparsable", `{"user_id": "a", "amount": 1, "ts": "soon"}`, "timestamp_unparsable"},
		{"timestamp negative", `{"user_id": "a", "amount": 1, "ts": -1}`, "timestamp_negative"},
		{"seconds as milliseconds", `{"user_id": "a", "amount": 1, "ts": 1767225600}`, "timestamp_unit"},
		{"microseconds as milliseconds", `{"user_id": "a", "amount": 1, "ts": 1767225600000000}`, "timestamp_unit"},
		{"before 2000", `{"user_id": "a", "amount": 1, "ts": 1000}`, "timestamp_too_old"},
		{"future", `{"user_id": "a", "amount": 1, "ts": 1780300000000}`, "timestamp_future"},
		{"sum of a string", `{"user_id": "a", "amount": "7", "ts": 1767225600000}`, "value_not_number"},
		{"key missing", `{"amount": 1, "ts": 1767225600000}`, "key_missing"},
		{"key null", `{"user_id": null, "amount": 1, "ts": 1767225600000}`, "key_missing"},
		{"channel out of range", `{"user_id": "a", "amount": 1, "ts": 1767225600000, "$channel": 2}`, "channel_invalid"},
		{"unknown control key", `{"$stop": true}`, "control_invalid"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := good + "\n" + c.line + "\n" + good + "\n"
			dir, sum := runSpec(t, badJob, map[string]string{"in.jsonl": in}, RunOptions{Deterministic: true})
			if got := sum.Get("records_in"); got != 3 {
				t.Errorf("records_in = %d, want 3", got)
			}
			if sum.Get("dead_letter") != 1 || sum.Get("accepted") != 2 || sum.Get("dead_letter_"+c.reason) != 1 {
				t.Errorf("summary %s", sum.JSON())
			}
			b, err := os.ReadFile(filepath.Join(dir, "bad.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			var d struct {
				Source, Raw, Reason, Detail string
				Line                        int64
			}
			if err := json.Unmarshal(b, &d); err != nil {
				t.Fatalf("%v: %s", err, b)
			}
			if d.Reason != c.reason || d.Line != 2 || d.Source != "in.jsonl" || d.Detail == "" || d.Raw == "" {
				t.Errorf("dead letter %+v", d)
			}
			if c.reason != "line_too_long" && c.reason != "utf8_invalid" && d.Raw != strings.TrimSpace(c.line) {
				t.Errorf("raw = %q, want %q", d.Raw, c.line)
			}
		})
	}
}

// TestDeterministicOutputs runs the same job twice: every output file is
// byte-identical, and so is the summary.
func TestDeterministicOutputs(t *testing.T) {
	job := fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl")
	read := func(dir string) string {
		var b strings.Builder
		for _, f := range []string{"out.jsonl", "late.jsonl", "bad.jsonl"} {
			data, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			b.Write(data)
		}
		return b.String()
	}
	d1, s1 := runSpec(t, job, nil, RunOptions{Deterministic: true, Parallelism: 3})
	d2, s2 := runSpec(t, job, nil, RunOptions{Deterministic: true, Parallelism: 3})
	if a, b := read(d1), read(d2); a != b {
		t.Fatal("outputs differ between two deterministic runs")
	}
	if !bytes.Equal(s1.JSON(), s2.JSON()) {
		t.Fatalf("summaries differ:\n%s%s", s1.JSON(), s2.JSON())
	}
	if s1.Get("fired_late") == 0 || s1.Get("late_side_output") == 0 || s1.Get("dead_letter") == 0 || s1.Get("fired_early") == 0 {
		t.Fatalf("the job should exercise every layer: %s", s1.JSON())
	}
}

// dumpOrders is the results table of jobtest.OrderJob in the SQLite file
// path, one row per line in key and window order.
func dumpOrders(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT user_id, window_start, window_end, orders, total, users FROM results ORDER BY user_id, window_start`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var u string
		var s, e, n, tot, users int64
		if err := rows.Scan(&u, &s, &e, &n, &tot, &users); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(&b, u, s, e, n, tot, users)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestSQLiteIdempotent replays a run into the same SQLite table: the table
// is the same after one and after two runs, in deterministic and parallel
// mode, and holds the final result of every window.
func TestSQLiteIdempotent(t *testing.T) {
	job := fmt.Sprintf(jobtest.OrderJob, "sqlite", "results.db")
	dump := func(dir string) string { return dumpOrders(t, filepath.Join(dir, "results.db")) }
	dir, s1 := runSpec(t, job, nil, RunOptions{Deterministic: true})
	once := dump(dir)
	runSpec(t, job, nil, RunOptions{Deterministic: true, Dir: dir})
	if twice := dump(dir); twice != once {
		t.Fatal("a second run changed the table")
	}
	// A parallel run into a fresh table ends with the same final rows when
	// its watermarks follow the records (every_record): which records are
	// late then depends only on the input, not on timing.
	perRecord := strings.Replace(job, "max_out_of_orderness: 20s}", "max_out_of_orderness: 20s, emit: every_record}", 1)
	pdir, _ := runSpec(t, perRecord, nil, RunOptions{Parallelism: 2, Clock: clock.NewFake(jobtest.TestNow)})
	if par := dump(pdir); par != once {
		t.Fatal("a parallel run's table differs from the deterministic one")
	}
	// Every accepted record is in exactly one row's count.
	var total int64
	for _, line := range strings.Split(strings.TrimSpace(once), "\n") {
		var u string
		var s, e, n, tot, users int64
		fmt.Sscan(line, &u, &s, &e, &n, &tot, &users)
		total += n
	}
	if total != s1.Get("accepted") {
		t.Fatalf("rows count %d orders, accepted %d", total, s1.Get("accepted"))
	}
}

// TestStop ends a run early, as Ctrl-C does: without --drain the open
// windows stay unfired and are counted; with it they fire.
func TestStop(t *testing.T) {
	job := fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl")
	for _, drain := range []bool{false, true} {
		var polls atomic.Int64
		stop := func() bool { return polls.Add(1) > 20 }
		_, s := runSpec(t, job, nil, RunOptions{Deterministic: true, Stop: stop, Drain: drain})
		if in := s.Get("records_in"); in == 0 || in >= 30000 {
			t.Fatalf("drain=%v: records_in %d: the stop should end the run early", drain, in)
		}
		if open := s.Get("open_windows"); (open == 0) == !drain {
			t.Fatalf("drain=%v: open windows %d", drain, open)
		}
	}
}

// crashRun runs plan with o until checkpointing reaches point for the
// nth time, where the crash hook panics, which fails the run as a crash
// would (in process). The test fails if the run does not fail.
//
// A deterministic run takes a checkpoint before every read of its source
// (everyRead), so that the nth crash point comes however fast the machine.
func crashRun(t *testing.T, plan *spec.Plan, o RunOptions, point string, nth int) {
	t.Helper()
	if o.Deterministic && o.CheckpointClock == nil {
		o.CheckpointClock = jobtest.EveryRead()
	}
	hits := 0
	o.Crash = func(at string) {
		if at == point {
			if hits++; hits == nth {
				panic("crash at " + at)
			}
		}
	}
	j, err := Open(plan, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Run(context.Background()); err == nil {
		t.Fatalf("the crash at %s #%d did not happen", point, nth)
	}
}

// TestCheckpointResume crashes a deterministic run at each crash point of
// checkpointing (in process: the hook panics, which fails the job), then
// resumes from the checkpoint directory until the run finishes: every
// output file and the summary equal those of a run without checkpoints.
func TestCheckpointResume(t *testing.T) {
	job := fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl")
	files := []string{"out.jsonl", "late.jsonl", "bad.jsonl"}
	read := func(dir string) map[string]string {
		m := map[string]string{}
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			m[f] = string(b)
		}
		return m
	}
	refDir, refSum := runSpec(t, job, nil, RunOptions{Deterministic: true})
	want := read(refDir)
	for _, point := range []string{"part-written", "before-manifest", "after-manifest", "after-retain", "sink-committed"} {
		for _, nth := range []int{1, 7} {
			t.Run(fmt.Sprint(point, nth), func(t *testing.T) {
				dir := t.TempDir()
				s, err := spec.Parse([]byte(job))
				if err != nil {
					t.Fatal(err)
				}
				crashes := 0
				for attempt := 0; ; attempt++ {
					if attempt > 5 {
						t.Fatal("the run never finished")
					}
					hits := 0
					o := RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, CheckpointDir: filepath.Join(dir, "ck"),
						CheckpointInterval: time.Millisecond, CheckpointClock: jobtest.EveryRead(),
						Crash: func(p string) {
							if p == point && attempt == 0 {
								if hits++; hits == nth {
									panic("crash at " + p)
								}
							}
						}}
					j, err := Open(s, o)
					if err != nil {
						t.Fatalf("attempt %d: %v", attempt, err)
					}
					sum, err := j.Run(context.Background())
					if err != nil {
						if attempt > 0 {
							t.Fatalf("attempt %d: %v", attempt, err)
						}
						crashes++
						continue
					}
					if crashes == 0 {
						t.Fatal("the crash hook never fired")
					}
					if got := read(dir); !maps.Equal(got, want) {
						for _, f := range files {
							if got[f] != want[f] {
								t.Fatalf("%s differs after a crash and resume: %d bytes, want %d", f, len(got[f]), len(want[f]))
							}
						}
					}
					if !bytes.Equal(sum.JSON(), refSum.JSON()) {
						t.Fatalf("summary after resume:\n%s\nwant\n%s", sum.JSON(), refSum.JSON())
					}
					return
				}
			})
		}
	}
}

// TestCheckpointRescaleAndRefusal: a run with parallelism 4 that crashes
// resumes with parallelism 2 (and 1 -> 4) and ends with the same results,
// as sorted lines, and the same summary; a checkpoint written by a spec
// with another window or aggregate is refused, naming the fields; a
// finished run's directory makes the next run start over.
func TestCheckpointRescaleAndRefusal(t *testing.T) {
	job := fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl")
	sorted := func(dir string) string {
		b, err := os.ReadFile(filepath.Join(dir, "out.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		slices.Sort(lines)
		return strings.Join(lines, "\n")
	}
	refDir, refSum := runSpec(t, job, nil, RunOptions{Deterministic: true, Parallelism: 4})
	want := sorted(refDir)
	s, err := spec.Parse([]byte(job))
	if err != nil {
		t.Fatal(err)
	}
	for _, pars := range [][2]int{{4, 2}, {1, 4}} {
		dir := t.TempDir()
		ck := filepath.Join(dir, "ck")
		crashRun(t, s, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, Parallelism: pars[0], CheckpointDir: ck, CheckpointInterval: time.Millisecond}, "after-manifest", 5)
		var info []string
		j, err := Open(s, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, Parallelism: pars[1], CheckpointDir: ck,
			CheckpointInterval: time.Millisecond, Info: func(m string) { info = append(info, m) }})
		if err != nil {
			t.Fatal(err)
		}
		sum, err := j.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(info) != 1 || !strings.Contains(info[0], "resuming from checkpoint") {
			t.Fatalf("info %q", info)
		}
		if got := sorted(dir); got != want {
			t.Fatalf("%d -> %d: results differ", pars[0], pars[1])
		}
		if !bytes.Equal(sum.JSON(), refSum.JSON()) {
			t.Fatalf("%d -> %d: summary\n%s\nwant\n%s", pars[0], pars[1], sum.JSON(), refSum.JSON())
		}
		// The run finished: the next one starts over.
		info = nil
		j, err = Open(s, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, CheckpointDir: ck, Info: func(m string) { info = append(info, m) }})
		if err != nil {
			t.Fatal(err)
		}
		j.Run(context.Background())
		if len(info) != 1 || !strings.Contains(info[0], "starting over") {
			t.Fatalf("after a finished run: info %q", info)
		}
	}

	// A crashed run's checkpoint, then a changed spec.
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	crashRun(t, s, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, CheckpointDir: ck, CheckpointInterval: time.Millisecond}, "after-manifest", 2)
	changed := strings.Replace(strings.Replace(job, "size: 1m", "size: 2m", 1), "fn: count_distinct", "fn: count", 1)
	s2, err := spec.Parse([]byte(changed))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(s2, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, CheckpointDir: ck})
	if err == nil || !strings.Contains(err.Error(), "aggregate, window differ") || !strings.Contains(err.Error(), "--fresh") {
		t.Fatalf("a changed spec must be refused naming its fields: %v", err)
	}
	j, err := Open(s2, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, CheckpointDir: ck, Fresh: true})
	if err != nil {
		t.Fatalf("--fresh: %v", err)
	}
	if _, err := j.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestCheckpointResumeFile is TestCheckpointResume with a file source on
// two channels ($channel routing, control lines).
func TestCheckpointResumeFile(t *testing.T) {
	var in strings.Builder
	for i := range 20000 {
		ts := 1767225600000 + int64(i)*100 - int64(i%7)*1500
		fmt.Fprintf(&in, `{"k": "u%d", "v": %d, "ts": %d, "$channel": %d}`+"\n", i%37, i%11, ts, (i/100)%2)
		if i%500 == 499 {
			fmt.Fprintf(&in, `{"$watermark": %d, "$channel": %d}`+"\n", ts-3000, (i/500)%2)
		}
	}
	job := `
name: file
source: {type: file, path: in.jsonl, channels: 2}
watermark: {max_out_of_orderness: 2s}
key: [k]
window: {type: session, gap: 3s}
allowed_lateness: 5s
aggregate: [{name: sum, fn: sum, field: v}, {name: n, fn: count}]
sinks:
  results: {type: jsonl, path: out.jsonl}
  late: {type: jsonl, path: late.jsonl}
`
	files := map[string]string{"in.jsonl": in.String()}
	refDir, refSum := runSpec(t, job, files, RunOptions{Deterministic: true})
	want := readOut(t, refDir)
	s, err := spec.Parse([]byte(job))
	if err != nil {
		t.Fatal(err)
	}
	for _, nth := range []int{1, 4, 9} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "in.jsonl"), []byte(in.String()), 0o644)
		ck := filepath.Join(dir, "ck")
		crashRun(t, s, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, CheckpointDir: ck, CheckpointInterval: 5 * time.Millisecond}, "sink-committed", nth)
		j, err := Open(s, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, CheckpointDir: ck, CheckpointInterval: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		sum, err := j.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got := readOut(t, dir)
		if !bytes.Equal(got, want) || !bytes.Equal(sum.JSON(), refSum.JSON()) {
			t.Fatalf("crash %d: results %d bytes (want %d), summary\n%s\nwant\n%s", nth, len(got), len(want), sum.JSON(), refSum.JSON())
		}
	}
}

// TestFailedWriteNotCommitted: a results write refused during a
// checkpoint's pre-commit fails that checkpoint, so the restart resumes
// from the one before and writes the refused rows again: the table and
// every count equal a run that never failed. (An SRE trial revoked a
// Postgres table's INSERT for 1.5 s: the checkpoint whose batch the
// server refused committed anyway, the restart resumed after it, and
// the summary counted 400 results fewer.)
func TestFailedWriteNotCommitted(t *testing.T) {
	job := strings.Replace(fmt.Sprintf(jobtest.OrderJob, "memtable", "x"), "{type: memtable, path: x}", "{type: memtable, table: %s, fail_write: %d}", 1)
	_, refSum := runSpec(t, fmt.Sprintf(job, "failref", 0), nil, RunOptions{Deterministic: true})
	memTables.Lock()
	want := memTables.m["failref"].dump()
	memTables.Unlock()
	p := mustParse(t, fmt.Sprintf(job, "failed", 3))
	dir := t.TempDir()
	sum, err := RunRestarting(context.Background(), p, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow,
		CheckpointDir: filepath.Join(dir, "ck"), CheckpointInterval: time.Millisecond, CheckpointClock: jobtest.EveryRead()},
		RestartPolicy{Max: 2, Backoff: time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	memTables.Lock()
	got := memTables.m["failed"].dump()
	memTables.Unlock()
	if got != want {
		t.Fatalf("rows after a refused write and a restart differ from a clean run's:\n got %.300s\nwant %.300s", got, want)
	}
	if sum.Get("restarts") != 1 {
		t.Fatalf("restarts %d, want 1", sum.Get("restarts"))
	}
	for _, c := range refSum.Counters {
		if sum.Get(c.Name) != c.Value {
			t.Errorf("%s = %d after the restart, want %d", c.Name, sum.Get(c.Name), c.Value)
		}
	}
}

// TestRestartStrategy: a job whose checkpointing fails (a crash point that
// panics once) restarts from its newest checkpoint inside the process and
// ends with the outputs of a run that never failed; the summary counts the
// restart.
func TestRestartStrategy(t *testing.T) {
	job := fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl")
	refDir, refSum := runSpec(t, job, nil, RunOptions{Deterministic: true})
	want := readOut(t, refDir)
	p, err := spec.Parse([]byte(job))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	hits := 0
	var causes []error
	sum, err := RunRestarting(context.Background(), p, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow,
		CheckpointDir: filepath.Join(dir, "ck"), CheckpointInterval: time.Millisecond, CheckpointClock: jobtest.EveryRead(),
		Crash: func(point string) {
			if point == "before-manifest" {
				if hits++; hits == 3 {
					panic("disk on fire")
				}
			}
		}}, RestartPolicy{Max: 2, Backoff: time.Millisecond, OnRestart: func(n int, err error) { causes = append(causes, err) }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := readOut(t, dir)
	if !bytes.Equal(got, want) {
		t.Fatalf("results after a restart: %d bytes, want %d", len(got), len(want))
	}
	if sum.Get("restarts") != 1 || len(causes) != 1 || !strings.Contains(causes[0].Error(), "disk on fire") {
		t.Fatalf("restarts %d, causes %v", sum.Get("restarts"), causes)
	}
	for _, c := range refSum.Counters {
		if sum.Get(c.Name) != c.Value {
			t.Fatalf("%s = %d after a restart, want %d", c.Name, sum.Get(c.Name), c.Value)
		}
	}
}

// TestFailedRunResumes: a run whose checkpointing fails is not
// "finished": the next run resumes from its newest checkpoint instead of
// starting over.
func TestFailedRunResumes(t *testing.T) {
	job := fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl")
	p, err := spec.Parse([]byte(job))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	crashRun(t, p, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, CheckpointDir: ck, CheckpointInterval: time.Millisecond}, "before-manifest", 4)
	if _, err := os.Stat(filepath.Join(ck, finishedMarker)); err == nil {
		t.Fatal("a failed run wrote the finished marker")
	}
	var info []string
	j, err := Open(p, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, CheckpointDir: ck, Info: func(m string) { info = append(info, m) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(info) != 1 || !strings.Contains(info[0], "resuming from checkpoint 3") {
		t.Fatalf("info %q", info)
	}
}

// TestDamagedCheckpointsRefused: when no checkpoint of the directory
// verifies, the run is refused, naming each checkpoint and why, with the
// --fresh hint, and it changes no output; with Fresh it starts over and
// ends as a run that never had checkpoints.
func TestDamagedCheckpointsRefused(t *testing.T) {
	job := fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl")
	refDir, refSum := runSpec(t, job, nil, RunOptions{Deterministic: true})
	want := readOut(t, refDir)
	p, err := spec.Parse([]byte(job))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	crashRun(t, p, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, CheckpointDir: ck, CheckpointInterval: time.Millisecond}, "after-manifest", 5)
	chks, err := filepath.Glob(filepath.Join(ck, "chk-*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(chks) < 2 {
		t.Fatalf("checkpoints %q, want several", chks)
	}
	// Damage each: the newest's manifest, every other one's first part.
	for i, c := range chks {
		file := filepath.Join(c, "MANIFEST")
		if i < len(chks)-1 {
			parts, err := filepath.Glob(filepath.Join(c, "part-*"))
			if err != nil || len(parts) == 0 {
				t.Fatalf("parts of %s: %q, %v", c, parts, err)
			}
			file = parts[0]
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0x40
		if err := os.WriteFile(file, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := readOut(t, dir)
	_, err = Open(p, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, CheckpointDir: ck})
	var de *DamagedError
	if !errors.Is(err, ErrNoValidCheckpoint) || !errors.As(err, &de) || len(de.Skipped) != len(chks) || !strings.Contains(err.Error(), "--fresh") {
		t.Fatalf("Open = %v, want a *DamagedError of %d checkpoints with the --fresh hint", err, len(chks))
	}
	msg := err.Error()
	for _, s := range de.Skipped {
		if !strings.Contains(msg, fmt.Sprintf("checkpoint %d: ", s.ID)) || s.Reason == "" {
			t.Fatalf("checkpoint %d (%q) is not in the refusal:\n%s", s.ID, s.Reason, msg)
		}
	}
	if !strings.Contains(msg, "MANIFEST") || !strings.Contains(msg, "CRC-32C mismatch") {
		t.Fatalf("the refusal does not say why:\n%s", msg)
	}
	if after := readOut(t, dir); !bytes.Equal(after, before) {
		t.Fatalf("the refused run changed out.jsonl (%d bytes, was %d)", len(after), len(before))
	}
	var info []string
	j, err := Open(p, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, CheckpointDir: ck, Fresh: true, Info: func(m string) { info = append(info, m) }})
	if err != nil {
		t.Fatalf("--fresh: %v", err)
	}
	sum, err := j.Run(context.Background())
	if err != nil || !j.RestoredAt().IsZero() || len(info) > 0 {
		t.Fatalf("--fresh: %v, restored at %v, info %q", err, j.RestoredAt(), info)
	}
	got := readOut(t, dir)
	if !bytes.Equal(got, want) || !bytes.Equal(sum.JSON(), refSum.JSON()) {
		t.Fatalf("--fresh: results %d bytes (want %d), summary\n%s\nwant\n%s", len(got), len(want), sum.JSON(), refSum.JSON())
	}
}

// TestRestartRefused: a restart whose Open is refused (every checkpoint
// was damaged after the failure) is not retried; RunRestarting returns the
// failed attempt's summary with both errors.
func TestRestartRefused(t *testing.T) {
	p, err := spec.Parse([]byte(fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl")))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	hits, restarts := 0, 0
	sum, err := RunRestarting(context.Background(), p, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow,
		CheckpointDir: ck, CheckpointInterval: time.Millisecond, CheckpointClock: jobtest.EveryRead(),
		Crash: func(point string) {
			if point == "after-manifest" {
				if hits++; hits == 2 {
					panic("disk on fire")
				}
			}
		}}, RestartPolicy{Max: 3, Backoff: time.Millisecond, OnRestart: func(int, error) {
		restarts++
		manifests, err := filepath.Glob(filepath.Join(ck, "chk-*", "MANIFEST"))
		if err != nil || len(manifests) == 0 {
			t.Errorf("manifests to damage: %q, %v", manifests, err)
		}
		for _, m := range manifests {
			if err := os.WriteFile(m, []byte("garbage"), 0o644); err != nil {
				t.Error(err)
			}
		}
	}}, nil)
	if !errors.Is(err, ErrNoValidCheckpoint) || !strings.Contains(err.Error(), "disk on fire") || restarts != 1 {
		t.Fatalf("RunRestarting = %v after %d restarts, want the crash and the refusal, once", err, restarts)
	}
	if sum.Get("records_in") == 0 || sum.Get("restarts") != 0 {
		t.Fatalf("summary of the failed attempt: %s", sum.JSON())
	}
}

// TestRegressionsAcrossRestore: a backward jump whose high point is before
// a checkpoint and whose low point is after it is still counted after a
// restore (each channel's largest timestamp is in the checkpoint).
func TestRegressionsAcrossRestore(t *testing.T) {
	var in strings.Builder
	fmt.Fprintf(&in, `{"k": 1, "ts": %d, "$channel": 1}`+"\n", 1767225600000+3*3600_000)
	for i := range 3000 {
		fmt.Fprintf(&in, `{"k": %d, "ts": %d}`+"\n", i%5, 1767225600000+int64(i))
	}
	fmt.Fprintf(&in, `{"k": 1, "ts": %d, "$channel": 1}`+"\n", 1767225600000)
	job := `
name: jumps
source: {type: file, path: in.jsonl, channels: 2, timestamp: {checks: false}}
watermark: {max_out_of_orderness: 1s}
key: [k]
window: {type: tumbling, size: 1m}
aggregate: [{name: n, fn: count}]
sinks:
  results: {type: jsonl, path: out.jsonl}
`
	files := map[string]string{"in.jsonl": in.String()}
	_, ref := runSpec(t, job, files, RunOptions{Deterministic: true})
	if ref.Get("timestamp_regressions") != 1 {
		t.Fatalf("reference run: %s", ref.JSON())
	}
	p, err := spec.Parse([]byte(job))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in.jsonl"), []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "ck")
	crashRun(t, p, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, CheckpointDir: ck, CheckpointInterval: time.Nanosecond}, "after-manifest", 3)
	j, err := Open(p, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, CheckpointDir: ck})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := j.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sum.JSON(), ref.JSON()) {
		t.Fatalf("summary after restore\n%s\nwant\n%s", sum.JSON(), ref.JSON())
	}
}

// TestPebbleState runs the order job with window state in Pebble (small
// caches, so windows are written back and read again all the time), with
// a crash and a resume on the way, and with sessions: the outputs equal the
// in-memory run's, byte for byte.
func TestPebbleState(t *testing.T) {
	for _, window := range []string{"{type: tumbling, size: 1m}", "{type: session, gap: 20s}"} {
		job := strings.Replace(fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl"), "{type: tumbling, size: 1m}", window, 1)
		refDir, refSum := runSpec(t, job, nil, RunOptions{Deterministic: true})
		want := readOut(t, refDir)
		p, err := spec.Parse([]byte(job + "state: {backend: pebble, cache: 10}\n"))
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		ck := filepath.Join(dir, "ck")
		crashRun(t, p, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, CheckpointDir: ck, CheckpointInterval: time.Millisecond}, "after-manifest", 5)
		j, err := Open(p, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, CheckpointDir: ck})
		if err != nil {
			t.Fatal(err)
		}
		sum, err := j.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got := readOut(t, dir)
		if !bytes.Equal(got, want) || !bytes.Equal(sum.JSON(), refSum.JSON()) {
			t.Fatalf("%s: pebble run differs: %d bytes (want %d)\n%s\n%s", window, len(got), len(want), sum.JSON(), refSum.JSON())
		}
	}
}

// TestWarnedOnceAcrossRuns: runs sharing RunOptions.Warned (a restart's
// attempts, a group member's tasks) give the event-time regression and
// the missing-field warnings once between them; runs without one each
// give their own.
func TestWarnedOnceAcrossRuns(t *testing.T) {
	const yaml = `
name: warned
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
key: [user_id]
window: {type: tumbling, size: 10s}
aggregate: [{name: total, fn: sum, field: amuont}]
sinks: {results: {type: jsonl, path: out.jsonl}}
`
	var in strings.Builder
	for i := range 40 {
		fmt.Fprintf(&in, `{"user_id":"a","amount":1,"ts":%d}`+"\n", 1767225600000+int64(i)*1000)
	}
	fmt.Fprintf(&in, `{"user_id":"a","amount":1,"ts":%d}`+"\n", 1767225600000-2*3600*1000)
	files := map[string]string{"in.jsonl": in.String()}
	count := func(shared *Warned) (regressions, fields int) {
		for range 2 {
			_, _ = runSpec(t, yaml, files, RunOptions{Warned: shared, Warn: func(m string) {
				switch {
				case strings.Contains(m, "event time jumped back"):
					regressions++
				case strings.Contains(m, "amuont"):
					fields++
				}
			}})
		}
		return regressions, fields
	}
	if r, f := count(new(Warned)); r != 1 || f != 1 {
		t.Fatalf("shared: %d regression and %d field warnings over two runs, want 1 and 1", r, f)
	}
	if r, f := count(nil); r != 2 || f != 2 {
		t.Fatalf("not shared: %d regression and %d field warnings over two runs, want 2 and 2", r, f)
	}
}

// TestUnopenableSourceKeepsOutputs: a fresh run whose source cannot be
// opened (a misspelt path, a directory) fails before it empties its
// outputs: the results, the dead letters and the ledger of an earlier run
// stay as they were (a trial lost a ledger's too-late records so).
func TestUnopenableSourceKeepsOutputs(t *testing.T) {
	const job = `
name: keep
source: {type: file, path: %s}
watermark: {max_out_of_orderness: 1s}
key: [user_id]
window: {type: tumbling, size: 10s}
aggregate: [{name: n, fn: count}]
sinks:
  results: {type: jsonl, path: out.jsonl}
  late: {type: ledger, dir: ledger}
  dead_letter: {type: jsonl, path: bad.jsonl}
`
	in := `{"user_id": "a", "ts": 1767225600000}
{"user_id": "a", "ts": 1767225630000}
{"user_id": "a", "ts": 1767225601000}
not json
`
	dir, sum := runSpec(t, fmt.Sprintf(job, "in.jsonl"), map[string]string{"in.jsonl": in}, RunOptions{Deterministic: true})
	if sum.Get("late_side_output") != 1 || sum.Get("dead_letter") != 1 {
		t.Fatalf("the first run: %s", sum.JSON())
	}
	snapshot := func() map[string]string {
		t.Helper()
		m := map[string]string{}
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasSuffix(path, ".yaml") || strings.Contains(path, ".lock") {
				return err
			}
			b, err := os.ReadFile(path)
			m[path] = string(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	before := snapshot()
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"in.jsnl", "adir"} {
		pl, err := spec.Parse([]byte(fmt.Sprintf(job, path)))
		if err != nil {
			t.Fatal(err)
		}
		j, err := Open(pl, RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow})
		if err == nil {
			_, err = j.Run(context.Background())
		}
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Fatalf("source path %s: the run returned %v", path, err)
		}
		after := snapshot()
		for f, b := range before {
			if after[f] != b {
				t.Fatalf("source path %s: %s changed from %q to %q", path, f, b, after[f])
			}
		}
	}
}

// TestFutureDated: records accepted with timestamps more than
// spec.WarnAhead ahead of the clock (within max_future) are counted
// (future_dated) and warned of once, live; records within it, and a
// generator's (ahead by design), are not.
func TestFutureDated(t *testing.T) {
	now := jobtest.TestNow.UnixMilli()
	var in strings.Builder
	for i, ahead := range []int64{0, 60_000, 20 * 60_000, 30 * 60_000, 4 * 60_000} {
		fmt.Fprintf(&in, `{"user_id":"u","amount":%d,"ts":%d}`+"\n", i, now+ahead)
	}
	var warnings []string
	_, sum := runSpec(t, badJob, map[string]string{"in.jsonl": in.String()},
		RunOptions{Deterministic: true, Warn: func(m string) { warnings = append(warnings, m) }})
	if sum.Get("future_dated") != 2 || sum.Get("dead_letter") != 0 {
		t.Fatalf("summary %s: want future_dated 2 and no dead letters", sum.JSON())
	}
	var told []string
	for _, w := range warnings {
		if strings.Contains(w, "ahead of processing time") {
			told = append(told, w)
		}
	}
	if len(told) != 1 || !strings.Contains(told[0], `field "ts" is 2026-06-01T00:20:00Z, 20m ahead`) || !strings.Contains(told[0], "source.timestamp.max_future") {
		t.Fatalf("warnings %q: want one naming the first future-dated record and the fix", warnings)
	}
	// The same records in time: nothing to count or tell.
	warnings = nil
	in.Reset()
	fmt.Fprintf(&in, `{"user_id":"u","amount":1,"ts":%d}`+"\n", now-60_000)
	_, sum = runSpec(t, badJob, map[string]string{"in.jsonl": in.String()},
		RunOptions{Deterministic: true, Warn: func(m string) { warnings = append(warnings, m) }})
	if sum.Has("future_dated") || len(warnings) > 0 {
		t.Fatalf("records in time: summary %s, warnings %q", sum.JSON(), warnings)
	}
}

// TestReopenWaits: a restart whose open cannot reach a server (a broker
// restarting when the job failed) waits and opens again, warning each
// time, for as long as the server does not answer; another error ends
// it, as does a stop (a restart once gave up after one open, its
// remaining restarts unused, while the broker came back).
func TestReopenWaits(t *testing.T) {
	defer func(w []time.Duration) { reopenWaits = w }(reopenWaits)
	reopenWaits = []time.Duration{time.Millisecond, 2 * time.Millisecond}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	down := fmt.Errorf("kafkaio: the brokers did not answer (%w)", refused)
	failed := errors.New("commit transaction: unable to dial")
	opens := 0
	var warned []string
	o := RunOptions{Warn: func(m string) { warned = append(warned, m) }}
	want := &Job{}
	j, err := reopenWaiting(context.Background(), o, nil, down, failed, func() (*Job, error) {
		if opens++; opens < 5 {
			return nil, down
		}
		return want, nil
	})
	if j != want || err != nil || opens != 5 || len(warned) != 5 || !strings.Contains(warned[0], "tries again") {
		t.Fatalf("job %p, %v after %d opens, warned %q", j, err, opens, warned)
	}
	// Another error than an outage ends the waiting with it.
	bad := errors.New("a checkpoint of another spec")
	opens = 0
	if _, err := reopenWaiting(context.Background(), o, nil, down, failed, func() (*Job, error) { opens++; return nil, bad }); err != bad || opens != 1 {
		t.Fatalf("%v after %d opens, want the refusal at once", err, opens)
	}
	// A stop ends it.
	o.Stop = func() bool { return true }
	if _, err := reopenWaiting(context.Background(), o, nil, down, failed, func() (*Job, error) { t.Fatal("opened after a stop"); return nil, nil }); err != down {
		t.Fatalf("%v, want the outage", err)
	}
	if connector.Unreachable(bad) || connector.Unreachable(context.DeadlineExceeded) {
		t.Error("an error a server answered with, or a deadline, reads as an outage")
	}
}
