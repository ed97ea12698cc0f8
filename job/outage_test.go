package job

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/spec"
)

// outageJob is a generator job counting orders per user and second into
// the Postgres table of url, with checkpoints; a run of records reads far
// more than maxBuffered results' worth.
func outageJob(url, table string, records, maxBuffered int) string {
	return fmt.Sprintf(`
name: outage
source:
  type: generator
  generator: {records: %d, keys: 100, duration: 20m, seed: 5}
watermark: {max_out_of_orderness: 1s}
key: [user_id]
window: {type: tumbling, size: 1s}
aggregate:
  - {name: orders, fn: count}
checkpoint: {dir: ck, interval: 50ms, max_buffered: %d}
sinks:
  results: {type: postgres, url: '%s', table: %s, timeout: 1s, batch_rows: 500}
`, records, maxBuffered, url, table)
}

// outageWant is what the outage job's table must hold at the end: the
// count of every (user, window), from a deterministic run into a file.
func outageWant(t *testing.T, records int) map[string]string {
	t.Helper()
	job := strings.Replace(outageJob("unused", "unused", records, 1000), "{type: postgres, url: 'unused', table: unused, timeout: 1s, batch_rows: 500}", "{type: jsonl, path: out.jsonl}", 1)
	dir, _ := runSpec(t, job, nil, RunOptions{Deterministic: true})
	b, err := os.ReadFile(filepath.Join(dir, "out.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		var r struct {
			User   string          `json:"user_id"`
			Start  int64           `json:"window_start"`
			Orders json.RawMessage `json:"orders"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		want[fmt.Sprintf("%s@%d", r.User, r.Start)] = string(r.Orders)
	}
	return want
}

// checkOutageTable compares the table with want.
func checkOutageTable(t *testing.T, conn *pgx.Conn, table string, want map[string]string) {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT user_id, window_start, orders::text FROM `+table)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for rows.Next() {
		var user, orders string
		var start int64
		if err := rows.Scan(&user, &start, &orders); err != nil {
			t.Fatal(err)
		}
		got[fmt.Sprintf("%s@%d", user, start)] = orders
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("the table holds %d rows, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("row %s is %q, want %q", k, got[k], v)
		}
	}
}

// lockedBuffer is a log destination safe for the job's goroutines and
// the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// outageRun is a job of outageJob running in the background.
type outageRun struct {
	j    *Job
	logs *lockedBuffer
	done chan struct{}
	sum  Summary
	err  error
}

func startOutageRun(t *testing.T, yaml, dir string, o RunOptions) *outageRun {
	t.Helper()
	s, err := spec.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	r := &outageRun{logs: &lockedBuffer{}, done: make(chan struct{})}
	o.Dir, o.Parallelism = dir, 2
	o.Logger = slog.New(slog.NewTextHandler(r.logs, nil))
	if r.j, err = Open(s, o); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *outageRun) start() {
	go func() {
		defer close(r.done)
		r.sum, r.err = r.j.Run(context.Background())
	}()
}

// wait waits for the run to end; it fails the test after limit (a run
// that hangs, not a slow one).
func (r *outageRun) wait(t *testing.T, limit time.Duration) {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(limit):
		t.Fatalf("the job has not ended after %v; log:\n%s", limit, r.logs.String())
	}
}

// settle waits until the source has read nothing new for half a second,
// and returns how many records it read.
func (r *outageRun) settle(t *testing.T) int64 {
	t.Helper()
	last, same := int64(-1), 0
	for start := time.Now(); same < 5; {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("the source is still reading 30s into the outage (%d records)", last)
		}
		select {
		case <-r.done:
			t.Fatalf("the job ended during the outage (%v); log:\n%s", r.err, r.logs.String())
		case <-time.After(100 * time.Millisecond):
		}
		if n := r.j.Progress().RecordsIn; n == last {
			same++
		} else {
			last, same = n, 0
		}
	}
	return last
}

// TestPostgresOutageBounded: while the results table cannot commit (the
// proxy in front of Postgres stalls: the connection stays open and
// forwards nothing), the job waits instead of growing. The checkpoint's
// commit blocks, the window subtasks stop once checkpoint.max_buffered
// results are held, the queues fill and the generator stops reading, far
// from the end of its input; the stall is logged within the sink's
// timeout, naming the sink and the table. Once the proxy forwards again
// the job completes, every count in the table is right and conservation
// holds. (Before, the job read its whole input and held every result in
// memory while the commit hung, without a line.)
func TestPostgresOutageBounded(t *testing.T) {
	url, conn := jobtest.PgURL(t)
	table := jobtest.PgTable(t, conn, "weir_outage")
	const records, maxBuffered = 150_000, 20_000
	want := outageWant(t, records)
	p, purl := jobtest.StartPGProxy(t, url)
	r := startOutageRun(t, outageJob(purl, table, records, maxBuffered), t.TempDir(), RunOptions{})
	p.Stall() // after Open: the table exists; every commit stalls
	stalled := time.Now()
	r.start()

	read := r.settle(t)
	if read > records/2 {
		t.Fatalf("the source read %d of %d records during the outage: no backpressure", read, records)
	}
	_, peak := r.j.Buffered()
	// max_buffered holds once a commit waits; before the first one
	// began (its checkpoint was asked for at half the bound), what the
	// subtasks emitted while its barriers passed the full queues comes on
	// top, once.
	const bound = 2 * maxBuffered
	if peak > bound {
		t.Fatalf("%d results held in memory during the outage, bound %d", peak, bound)
	}
	before, _ := r.j.Buffered()
	time.Sleep(time.Second)
	now, _ := r.j.Buffered()
	if again := r.j.Progress().RecordsIn; again != read || now > before {
		t.Fatalf("a second into the settled outage: %d records read (%d before), %d results held (%d before)", again, read, now, before)
	}
	l := r.logs.String()
	i := strings.Index(l, "Postgres stalled")
	if i < 0 {
		t.Fatalf("no stall warning; log:\n%s", l)
	}
	if line := l[strings.LastIndex(l[:i], "\n")+1:]; !strings.Contains(line, "sink=results") || !strings.Contains(line, "table="+table) {
		t.Fatalf("the stall warning does not name the sink and the table: %s", line)
	}
	t.Logf("outage: %d of %d records read, %d results held, at most %d (max_buffered %d), stall logged within %v",
		read, records, now, peak, maxBuffered, time.Since(stalled).Round(time.Millisecond))

	if err := p.Heal(); err != nil {
		t.Fatal(err)
	}
	r.wait(t, 2*time.Minute)
	if r.err != nil {
		t.Fatalf("the job failed after the outage: %v", r.err)
	}
	if !r.sum.Conserved() || r.sum.Get("records_in") != records {
		t.Fatalf("summary after the outage: %s", r.sum.JSON())
	}
	checkOutageTable(t, conn, table, want)
}

// TestPostgresOutageStop: Ctrl-C while Postgres refuses connections stops
// the job within seconds, as the CLI does it (a checkpoint is asked for,
// then the sources are stopped): the checkpoint request returns at once
// since the sink is unavailable, the retrying commit gives up, and the run
// ends with an error that says why and a conserved summary. What the
// earlier checkpoints committed stays; the next run resumes from the
// newest one and the table ends right. (Before, the commit retried for
// ever and the stop never finished.)
func TestPostgresOutageStop(t *testing.T) {
	url, conn := jobtest.PgURL(t)
	table := jobtest.PgTable(t, conn, "weir_outage_stop")
	const records = 150_000
	want := outageWant(t, records)
	p, purl := jobtest.StartPGProxy(t, url)
	job, dir := outageJob(purl, table, records, 20_000), t.TempDir()
	var stop, refused atomic.Bool
	var once sync.Once
	var r *outageRun
	// The generator asks Stop before each batch: the outage begins once
	// the first checkpoint has committed.
	r = startOutageRun(t, job, dir, RunOptions{Stop: func() bool {
		if r.j.ck.last.Load() >= 1 {
			once.Do(func() { p.Refuse(); refused.Store(true) })
		}
		return stop.Load()
	}})
	r.start()
	for !refused.Load() {
		select {
		case <-r.done:
			t.Fatalf("the job ended before the outage began (%v)", r.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	read := r.settle(t)
	committed := r.j.ck.last.Load()
	begin := time.Now()
	id := r.j.Checkpoint(10 * time.Second) // as the CLI's Ctrl-C does
	stop.Store(true)
	r.wait(t, 30*time.Second)
	took := time.Since(begin)
	if id != 0 {
		t.Fatalf("checkpoint %d committed during the outage", id)
	}
	if r.err == nil || !strings.Contains(r.err.Error(), "the job is stopping") {
		t.Fatalf("the stopped run returned %v, want the sink's stop", r.err)
	}
	if len(r.sum.Counters) == 0 || !r.sum.Conserved() {
		t.Fatalf("summary of the stopped run: %s", r.sum.JSON())
	}
	t.Logf("stopped %v after Ctrl-C, %d of %d records read, checkpoint %d committed before the outage", took.Round(time.Millisecond), read, records, committed)

	if err := p.Heal(); err != nil {
		t.Fatal(err)
	}
	r2 := startOutageRun(t, job, dir, RunOptions{})
	if r2.j.ck.restored == nil || r2.j.ck.restored.ID != committed {
		t.Fatalf("the next run resumes from %v, want checkpoint %d", r2.j.ck.restored, committed)
	}
	r2.start()
	r2.wait(t, 2*time.Minute)
	if r2.err != nil {
		t.Fatalf("the resumed run: %v", r2.err)
	}
	checkOutageTable(t, conn, table, want)
}

// TestPostgresWrongPort: a results sink on a port nobody listens on is
// retried for its connect_retry_for, then the job fails to open with an
// error naming the sink and the address. (Before, Open retried for ever.)
func TestPostgresWrongPort(t *testing.T) {
	url, _ := jobtest.PgURL(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p, purl := jobtest.StartPGProxy(t, url)
	p.Close()
	job := strings.Replace(outageJob(strings.Replace(purl, p.Addr(), addr, 1), "weir_wrong_port", 10, 100), "timeout: 1s", "timeout: 1s, connect_retry_for: 500ms", 1)
	s, err := spec.Parse([]byte(job))
	if err != nil {
		t.Fatal(err)
	}
	j, err := Open(s, RunOptions{Dir: t.TempDir()})
	if err == nil {
		j.Run(context.Background())
		t.Fatal("a job whose sink's port is closed opened")
	}
	if msg := err.Error(); !strings.Contains(msg, "sinks.results") || !strings.Contains(msg, "cannot reach Postgres at "+addr) || !strings.Contains(msg, "500ms") {
		t.Fatalf("Open = %v, want an error naming the sink, %s and the bound", err, addr)
	}
}
