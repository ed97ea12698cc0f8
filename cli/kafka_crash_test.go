package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/connector/kafkaio"
	"github.com/weirstream/weir/internal/testenv"
)

const kafkaCrashJob = `
name: %[1]s
source:
  type: kafka
  channels: 2
  kafka: {brokers: ['%[2]s'], topic: in, stop_at_end: true}
watermark: {max_out_of_orderness: 2s, idle_timeout: 1s, interval: 20ms, max_drift: 5s}
key: [user_id]
window: {type: tumbling, size: 1s}
aggregate:
  - {name: orders, fn: count}
  - {name: total, fn: sum, field: amount}
sinks:
  results: {type: kafka, brokers: ['%[2]s'], topic: %[1]s-out}
  dead_letter: {type: kafka, brokers: ['%[2]s'], topic: %[1]s-bad}
  late: {type: kafka, brokers: ['%[2]s'], topic: %[1]s-late}
`

// TestKafkaCrashRecovery runs Kafka and weir as separate OS processes:
// `weir dev kafka` (kfake) holds a 6-partition input topic that this test
// process produces to; `weir run` reads it and writes results and dead
// letters to topics, exactly once, with checkpoints, and is killed with
// SIGKILL again and again, at named crash points and at random moments,
// and restarted each time. Afterwards the read_committed topics of
// results, late records and dead letters equal those of an uninterrupted
// run of the same job. The same is done with the results and late records
// in Postgres: the tables are equal.
func TestKafkaCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the crash test runs weir many times")
	}
	args := []string{"--topic", "in:6"}
	for _, job := range []string{"ref", "crash"} {
		args = append(args, "--topic", job+"-out:3", "--topic", job+"-bad", "--topic", job+"-late")
	}
	addr := startKafkaProcess(t, args...)

	// The input: every record within the out-of-orderness bound of its
	// partition, so no record is late whatever the order partitions are
	// read in, and the results do not depend on timing; but in the last
	// tenth, one record in 500 is an hour older than the first record, too
	// late for any watermark the job can have once every partition of
	// both channels has been read from. Alignment (max_drift) makes the
	// partitions advance together: without it kfake serves one partition
	// after another, a channel's watermark stays "none yet" while its
	// first partition is read to the end, and those records are on time
	// (correctly: the other partitions' backlog holds the watermark).
	// Watermarks are checkpointed per partition, so a restore does not
	// reopen that gap.
	n := max(crashRecords(t)/2, 20000)
	tooLate := 0
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("in"))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for i := range n {
		ts := 1767225600000 + int64(i)*2 - int64(r.IntN(1000))
		v := fmt.Appendf(nil, `{"user_id":"u%d","amount":%d,"ts":%d}`, i%97, i%10, ts)
		if i%5000 == 17 {
			v = []byte(`{"user_id":"bad"}`) // a dead letter
		}
		if i >= n*9/10 && i%500 == 3 {
			v = fmt.Appendf(nil, `{"user_id":"u%d","amount":%d,"ts":%d}`, i%97, i%10, 1767225600000-3600_000+int64(i))
			tooLate++
		}
		cl.Produce(context.Background(), &kgo.Record{Key: fmt.Appendf(nil, "u%d", i%97), Value: v}, nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	cl.Close()

	dirs := map[string]string{}
	run := func(job, spec string, env []string, killAfter time.Duration) bool {
		dir := dirs[job] // shared by the restarts of one job
		if dir == "" {
			dir = t.TempDir()
			dirs[job] = dir
			os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(spec), 0o644)
		}
		return crashRun(t, dir, []string{"run", "job.yaml", "--checkpoint-dir", "ck", "--checkpoint-interval", "50ms"}, env, killAfter)
	}
	// crashAndResume runs the job with kills until it finishes; it returns
	// the number of kills.
	crashAndResume := func(job, spec string) int {
		plan := []string{"sink-committed:2", "after-manifest:2", "", "before-manifest:3", "", ""}
		kills := killUntilDone(t, plan, func() time.Duration { return time.Duration(100+r.IntN(500)) * time.Millisecond },
			func(env []string, after time.Duration) bool { return run(job, spec, env, after) })
		if kills < 3 {
			t.Fatalf("%s: only %d kills happened; the test proves little", job, kills)
		}
		return kills
	}
	if run("ref", fmt.Sprintf(kafkaCrashJob, "ref", addr), nil, 0) {
		t.Fatal("the reference run was killed")
	}
	kills := crashAndResume("crash", fmt.Sprintf(kafkaCrashJob, "crash", addr))
	for _, topic := range []string{"out", "bad", "late"} {
		want, got := readTopic(t, addr, "ref-"+topic), readTopic(t, addr, "crash-"+topic)
		if len(want) == 0 {
			t.Fatalf("the reference run wrote nothing to ref-%s", topic)
		}
		if topic == "late" && len(want) != tooLate {
			t.Fatalf("ref-late has %d records, want the %d too-late ones", len(want), tooLate)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("crash-%s after %d kills: %d records, want %d as in ref-%s", topic, kills, len(got), len(want), topic)
		}
	}
	t.Logf("%d records, %d kills, read_committed results, %d late records and dead letters identical", n, kills, tooLate)

	// The same input into Postgres: the crashed and resumed job's table
	// equals the uninterrupted job's.
	url, ok := postgresURL(t)
	if !ok {
		return
	}
	tables := map[string]string{}
	for _, job := range []string{"pgref", "pgcrash"} {
		tables[job] = fmt.Sprintf("weir_%s_%d", job, r.Uint32())
		spec := strings.Replace(fmt.Sprintf(kafkaCrashJob, job, addr),
			"results: {type: kafka, brokers: ['"+addr+"'], topic: "+job+"-out}", "results: {type: postgres, url: '"+url+"', table: "+tables[job]+"}", 1)
		spec = strings.Replace(spec, "dead_letter: {type: kafka, brokers: ['"+addr+"'], topic: "+job+"-bad}", "dead_letter: {type: jsonl, path: bad.jsonl}", 1)
		spec = strings.Replace(spec, "late: {type: kafka, brokers: ['"+addr+"'], topic: "+job+"-late}", "late: {type: postgres, url: '"+url+"', table: "+tables[job]+"_late}", 1)
		if job == "pgref" {
			if run(job, spec, nil, 0) {
				t.Fatal("the reference run was killed")
			}
		} else {
			kills = crashAndResume(job, spec)
		}
	}
	want, got := pgTable(t, url, tables["pgref"], pgResultsQuery), pgTable(t, url, tables["pgcrash"], pgResultsQuery)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Fatalf("Postgres after %d kills: %d rows, want %d as uninterrupted", kills, len(got), len(want))
	}
	// Late records: each once, by entry id, however often a restore
	// replayed it.
	wantLate, gotLate := pgTable(t, url, tables["pgref"]+"_late", pgLateQuery), pgTable(t, url, tables["pgcrash"]+"_late", pgLateQuery)
	if len(wantLate) != tooLate || !slices.Equal(gotLate, wantLate) {
		t.Fatalf("Postgres late records after %d kills: %d rows, want %d as uninterrupted (%d too late)", kills, len(gotLate), len(wantLate), tooLate)
	}
	t.Logf("Postgres: %d kills, %d result rows and %d late records identical", kills, len(want), len(wantLate))
}

// postgresURL returns the test Postgres, or false (skipping nothing else)
// when it is not reachable; WEIR_REQUIRE_SERVICES=1 makes that a failure.
func postgresURL(t *testing.T) (string, bool) {
	t.Helper()
	return testenv.PostgresIfReachable(t)
}

// pgTable returns a table's rows as sorted text, and drops the table.
// The columns pgTable reads of a results table and of a late table.
const (
	pgResultsQuery = "SELECT concat_ws(' ', user_id::text, window_start, firing, pane, orders::text, total::text) FROM "
	pgLateQuery    = "SELECT concat_ws(' ', id, reason, record::text) FROM "
)

// pgTable returns the rows query (a statement that ends in FROM) reads of
// table, as strings, sorted; it drops the table.
func pgTable(t *testing.T, url, table, query string) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	defer conn.Exec(ctx, "DROP TABLE IF EXISTS "+table)
	rows, err := conn.Query(ctx, query+table)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var row string
		if err := rows.Scan(&row); err != nil {
			t.Fatal(err)
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// readTopic reads topic as read_committed readers see it, without the
// fields that depend on when a firing happened, sorted.
func readTopic(t *testing.T, addr, topic string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []string
	runs := map[string]bool{}
	err := kafkaio.ReadCommitted(ctx, []string{addr}, []string{topic}, 2*time.Second, func(r *kgo.Record) {
		var m map[string]any
		if err := json.Unmarshal(r.Value, &m); err != nil {
			t.Fatalf("%s: %q: %v", topic, r.Value, err)
		}
		delete(m, "watermark")
		delete(m, "lateness_ms")
		delete(m, "detail")
		run, ok := m["run"]
		if !ok {
			t.Errorf("%s: a record without a run: %.100s", topic, r.Value)
		}
		runs[fmt.Sprint(run)] = true
		m["run"] = "R"   // the reference run has another id
		delete(m, "job") // and another job name
		b, _ := json.Marshal(m)
		out = append(out, string(r.Key)+" "+string(b))
	})
	if len(runs) > 1 {
		t.Errorf("%s holds records of %d runs, want one run's", topic, len(runs))
	}
	if err != nil {
		t.Fatalf("reading %s: %v", topic, err)
	}
	slices.Sort(out)
	return out
}

// startKafkaProcess starts `weir dev kafka` with args on a free port as an
// OS process, killed when the test ends, and returns its address once it
// listens.
func startKafkaProcess(t testing.TB, args ...string) string {
	t.Helper()
	port, addr := freePort(t)
	kafka := exec.Command(weirBinary(t), append([]string{"dev", "kafka", "--port", strconv.Itoa(port)}, args...)...)
	if err := kafka.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kafka.Process.Kill(); kafka.Wait() })
	awaitListen(t, addr, func() string { return "" })
	return addr
}

// freePort is a free port on 127.0.0.1 and its address.
func freePort(t testing.TB) (int, string) {
	t.Helper()
	port, err := freeLocalPort()
	if err != nil {
		t.Fatal(err)
	}
	return port, fmt.Sprintf("127.0.0.1:%d", port)
}

// awaitListen waits up to 10 s for weir dev kafka to listen on addr, and
// fails the test with output()'s text otherwise.
func awaitListen(t testing.TB, addr string, output func() string) {
	t.Helper()
	if err := awaitTCP(context.Background(), addr, 10*time.Second); err != nil {
		t.Fatalf("weir dev kafka did not listen on %s: %v: %s", addr, err, output())
	}
}
