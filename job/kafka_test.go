package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/spec"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/connector/connectortest"
	"github.com/weirstream/weir/connector/kafkaio"
	"github.com/weirstream/weir/internal/testenv"
)

// kafkaJob reads orders from topic in (4 partitions) and writes counts
// and sums per user and 1 s window to topic out, exactly once.
const kafkaJob = `
name: %s
source:
  type: kafka
  channels: 2
  kafka: {brokers: [%s], topic: in, stop_at_end: true}
watermark: {max_out_of_orderness: 500ms, idle_timeout: 1s, interval: 5ms}
key: [user_id]
window: {type: tumbling, size: 1s}
aggregate:
  - {name: orders, fn: count}
  - {name: total, fn: sum, field: amount}
sinks:
  results: {type: kafka, brokers: [%s], topic: out}
  dead_letter: {type: kafka, brokers: [%s], topic: bad}
`

// kafkaCluster starts kfake with the job's topics and n orders (and two
// bad records) in topic in. The marker topic is not there: a run with
// checkpoints creates it.
func kafkaCluster(t *testing.T, n int) string { return kafkaClusterN(t, n) }

func kafkaClusterN(t testing.TB, n int) string {
	t.Helper()
	broker, _ := kafkaClusterWith(t, n, "out", "bad")
	return broker
}

// kafkaClusterWith is kafkaCluster with topic in and the topics named
// (out has 3 partitions, the others 1), returning the cluster too.
func kafkaClusterWith(t testing.TB, n int, topics ...string) (string, *kfake.Cluster) {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(4, "in")}
	for _, tp := range topics {
		parts := int32(1)
		if tp == "out" {
			parts = 3
		}
		opts = append(opts, kfake.SeedTopics(parts, tp))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("in"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := range n {
		// Per partition in order, across partitions interleaved.
		v := fmt.Sprintf(`{"user_id":"u%d","amount":%d,"ts":%d}`, i%7, i%10, 1767225600000+int64(i)*5)
		recs = append(recs, &kgo.Record{Partition: int32(i % 4), Value: []byte(v)})
	}
	recs = append(recs, &kgo.Record{Partition: 1, Value: []byte(`{"user_id":"u1"}`)}, &kgo.Record{Partition: 2, Value: []byte(`not json`)})
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return brokers[0], c
}

// committedResults reads topic out as read_committed readers see it: each
// result once per line, without the watermark field (it depends on when
// a firing happened).
func committedResults(t *testing.T, broker string) []string {
	return jobtest.Committed(t, broker, "out")
}

// TestKafkaJob runs a spec from Kafka to Kafka on kfake: the results are
// a plain group-by of what was produced, every record is accounted for,
// and a run that crashes at a checkpoint's commit points and resumes
// leaves exactly the same read_committed results as an uninterrupted run.
func TestKafkaJob(t *testing.T) {
	const n = 150000
	ref := kafkaCluster(t, n)
	sum, err := runKafka(t, "ref", ref, t.TempDir(), RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Conserved() || sum.Get("records_in") != n+2 || sum.Get("dead_letter") != 2 || sum.Get("accepted") != n {
		t.Fatalf("summary %s", sum.JSON())
	}
	want := committedResults(t, ref)
	wantBad := jobtest.Committed(t, ref, "bad")
	if len(wantBad) != 2 {
		t.Fatalf("dead letters in topic bad: %v, want 2", wantBad)
	}
	checkGroupBy(t, want, n)

	for _, point := range []string{"sink-committed", "after-manifest"} {
		t.Run(point, func(t *testing.T) {
			// The crash is a real one: a child process runs the job and
			// exits at the point once its transaction holds results,
			// leaving the transaction open and its files as they are.
			// So that a checkpoint's transaction holds results however
			// fast the child reads, the broker serves each partition's
			// first fetch (a part of it: the source fetches 256 KiB of a
			// partition at a time) and holds the later ones until the
			// child has exited: the child fires windows from what it
			// read, and its next checkpoints have them in the
			// transaction.
			broker, cluster := kafkaClusterWith(t, n, "out", "bad")
			dir := t.TempDir()
			release := holdFetchesIf(t, cluster, "in", func(ft kmsg.FetchRequestTopic) bool {
				return slices.ContainsFunc(ft.Partitions, func(p kmsg.FetchRequestTopicPartition) bool { return p.FetchOffset > 0 })
			})
			cmd := exec.Command(os.Args[0], "-test.run=^TestKafkaCrashChild$", "-test.v")
			cmd.Env = append(os.Environ(), "WEIR_KAFKA_CHILD="+strings.Join([]string{broker, dir, point}, ","))
			out, err := cmd.CombinedOutput()
			release()
			if code := cmd.ProcessState.ExitCode(); code != 3 {
				t.Fatalf("child exited %d (%v), want 3 (crashed at %s):\n%s", code, err, point, out)
			}
			if _, err := runKafka(t, "crash", broker, dir, RunOptions{CheckpointDir: filepath.Join(dir, "ck"), CheckpointInterval: time.Millisecond}); err != nil {
				t.Fatalf("resumed run: %v", err)
			}
			if bad := jobtest.Committed(t, broker, "bad"); !slices.Equal(bad, wantBad) {
				t.Fatalf("dead letters after a crash at %s: %v, want %v", point, bad, wantBad)
			}
			got := committedResults(t, broker)
			if !slices.Equal(got, want) {
				gs, ws := map[string]int{}, map[string]int{}
				for _, l := range got {
					gs[l]++
				}
				for _, l := range want {
					ws[l]++
				}
				var diff []string
				for l := range ws {
					gs[l] += 0
				}
				for _, l := range slices.Sorted(maps.Keys(gs)) {
					if gs[l] != ws[l] {
						diff = append(diff, fmt.Sprintf("%dx (want %d) %s", gs[l], ws[l], l))
					}
				}
				t.Fatalf("after a crash at %s: %d results, want %d; differing: %v", point, len(got), len(want), diff[:min(5, len(diff))])
			}
		})
	}
}

// checkGroupBy checks kafkaJob's read_committed results (committed) of
// kafkaCluster's n orders: a plain group-by in windows of 1 s per user,
// each window once, on time.
func checkGroupBy(t *testing.T, want []string, n int) {
	t.Helper()
	type cell struct{ orders, total int64 }
	cells := map[string]cell{}
	for i := range n {
		ts := 1767225600000 + int64(i)*5
		k := fmt.Sprintf("u%d@%d", i%7, ts/1000*1000)
		c := cells[k]
		c.orders++
		c.total += int64(i % 10)
		cells[k] = c
	}
	if len(want) != len(cells) {
		t.Fatalf("%d results, want %d windows", len(want), len(cells))
	}
	for _, line := range want {
		var key struct {
			User  string `json:"user_id"`
			Start int64  `json:"window_start"`
		}
		k, rest, _ := strings.Cut(line, " ")
		if err := json.Unmarshal([]byte(k), &key); err != nil {
			t.Fatal(err)
		}
		c := cells[fmt.Sprintf("%s@%d", key.User, key.Start)]
		if !strings.Contains(rest, fmt.Sprintf(`"orders":%d,`, c.orders)) || !strings.Contains(rest, fmt.Sprintf(`"total":%d,`, c.total)) ||
			!strings.Contains(rest, "weir-firing=on_time,weir-run=") || !strings.HasSuffix(rest, ",weir-pane=0") {
			t.Fatalf("result %s, want orders %d total %d", line, c.orders, c.total)
		}
	}
}

// runKafka runs kafkaJob named name against broker.
func runKafka(t *testing.T, name, broker, dir string, o RunOptions) (Summary, error) {
	p, err := spec.Parse([]byte(fmt.Sprintf(kafkaJob, name, broker, broker, broker)))
	if err != nil {
		t.Fatal(err)
	}
	o.Dir = dir
	j, err := Open(p, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return j.Run(ctx)
}

// TestKafkaCrashChild is TestKafkaJob's child process: it runs the job
// with checkpoints and exits with status 3 at the crash point once the
// checkpoint's open transaction holds results.
func TestKafkaCrashChild(t *testing.T) {
	arg := os.Getenv("WEIR_KAFKA_CHILD")
	if arg == "" {
		t.Skip("the child process of TestKafkaJob")
	}
	parts := strings.Split(arg, ",")
	broker, dir, point := parts[0], parts[1], parts[2]
	adm, err := kadm.NewOptClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	// openResults reports whether the open transaction holds results: the
	// high watermark of topic out is above its last stable offset.
	openResults := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hwm, err1 := adm.ListEndOffsets(ctx, "out")
		lso, err2 := adm.ListCommittedOffsets(ctx, "out")
		if err1 != nil || err2 != nil {
			return false
		}
		open := false
		hwm.Each(func(l kadm.ListedOffset) {
			if s, ok := lso.Lookup(l.Topic, l.Partition); ok && l.Offset > s.Offset {
				open = true
			}
		})
		return open
	}
	_, err = runKafka(t, "crash", broker, dir, RunOptions{CheckpointDir: filepath.Join(dir, "ck"), CheckpointInterval: time.Millisecond,
		Crash: func(p string) {
			if p == point && openResults() {
				os.Exit(3)
			}
		}})
	t.Fatalf("the run ended (%v) without reaching %s with results in the transaction", err, point)
}

// BenchmarkKafkaJob runs kafkaJob (Kafka to Kafka, exactly once) over
// WEIR_BENCH_RECORDS records (default 500,000) on kfake, with and without
// checkpoints every second, and reports records per second. With
// WEIR_PG_URL or the local Postgres, it also runs the job into Postgres.
//
//	go test -run x -bench KafkaJob -benchtime 3x ./job/
func BenchmarkKafkaJob(b *testing.B) {
	n := 500_000
	if s := os.Getenv("WEIR_BENCH_RECORDS"); s != "" {
		fmt.Sscan(s, &n)
	}
	for _, c := range []struct {
		name string
		ck   time.Duration
		sink string
	}{{"kafka", 0, "kafka"}, {"kafka-checkpoint-1s", time.Second, "kafka"}, {"postgres-checkpoint-1s", time.Second, "postgres"}} {
		b.Run(c.name, func(b *testing.B) {
			var url string
			if c.sink == "postgres" {
				url = testenv.PostgresURL()
			}
			for range b.N {
				b.StopTimer()
				broker := kafkaClusterN(b, n)
				dir := b.TempDir()
				job := fmt.Sprintf(kafkaJob, "bench", broker, broker, broker)
				table := fmt.Sprintf("weir_bench_%d", rand.Uint32())
				if c.sink == "postgres" {
					job = strings.Replace(job, "results: {type: kafka, brokers: ["+broker+"], topic: out}", "results: {type: postgres, url: '"+url+"', table: "+table+"}", 1)
					job = strings.Replace(job, "dead_letter: {type: kafka, brokers: ["+broker+"], topic: bad}", "dead_letter: {type: jsonl, path: bad.jsonl}", 1)
				}
				p, err := spec.Parse([]byte(job))
				if err != nil {
					b.Fatal(err)
				}
				o := RunOptions{Dir: dir}
				if c.ck > 0 {
					o.CheckpointDir, o.CheckpointInterval = filepath.Join(dir, "ck"), c.ck
				}
				j, err := Open(p, o)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				sum, err := j.Run(context.Background())
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				if sum.Get("records_in") != int64(n+2) {
					b.Fatalf("records in %d", sum.Get("records_in"))
				}
				if c.sink == "postgres" {
					if conn, err := pgx.Connect(context.Background(), url); err == nil {
						_, _ = conn.Exec(context.Background(), "DROP TABLE IF EXISTS "+table)
						_ = conn.Close(context.Background())
					}
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// TestKafkaRestoreRefusesLostCheckpoint: the Kafka sink committed output
// up to checkpoint 3, but only checkpoint 5 is left (retention removed the
// others): the run refuses to start rather than repeat or lose output.
func TestKafkaRestoreRefusesLostCheckpoint(t *testing.T) {
	broker := kafkaCluster(t, 10)
	p, err := spec.Parse([]byte(fmt.Sprintf(kafkaJob, "lost", broker, broker, broker)))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(context.Background(), 1, 1, nil, "out-weir-checkpoints"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "out-weir-checkpoints", Key: []byte(kafkaio.ResultsTxnID(p.Name)), Value: []byte("3")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	store, err := checkpoint.Open(dir, checkpoint.Options{Meta: fingerprint(p)})
	if err != nil {
		t.Fatal(err)
	}
	pc, err := store.Begin(5)
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Commit(); err != nil {
		t.Fatal(err)
	}
	store.Close()
	_, err = Open(p, RunOptions{Dir: t.TempDir(), CheckpointDir: dir})
	if err == nil || !strings.Contains(err.Error(), "none at or below 3") {
		t.Fatalf("opening with a lost checkpoint: %v", err)
	}
}

// TestKafkaMarkerTopicCreated: on a broker where only the job's own
// topics exist (in, out, bad), a run with checkpoints creates the marker
// topic (compacted, one partition), says so, commits its checkpoints to
// it and gives the group-by; the next run finds it and says nothing.
// The first run's source gets no records until a checkpoint committed,
// so that one does however fast the run reads its input.
func TestKafkaMarkerTopicCreated(t *testing.T) {
	const n = 20000
	broker, cluster := kafkaClusterWith(t, n, "out", "bad")
	checkpointed := holdFetches(t, cluster, "in")
	dir := t.TempDir()
	var info []string
	o := RunOptions{CheckpointDir: filepath.Join(dir, "ck"), CheckpointInterval: time.Millisecond, Info: func(m string) { info = append(info, m) },
		Crash: func(point string) {
			if point == checkpoint.CrashAfterManifest {
				checkpointed()
			}
		}}
	sum, err := runKafka(t, "created", broker, dir, o)
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Conserved() || sum.Get("accepted") != n || sum.Get("dead_letter") != 2 {
		t.Fatalf("summary %s", sum.JSON())
	}
	checkGroupBy(t, committedResults(t, broker), n)
	if want := "created Kafka topic out-weir-checkpoints (1 partition, cleanup.policy=compact) for the checkpoint markers of the results in out"; !slices.Contains(info, want) {
		t.Errorf("told %q, want %q", info, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := spec.Parse([]byte(fmt.Sprintf(kafkaJob, "created", broker, broker, broker)))
	if err != nil {
		t.Fatal(err)
	}
	if id, ok, err := kafkaio.LastCommitted(ctx, kafkaSinkOptions(p, p.Sinks.Primary())); err != nil || !ok || id < 1 {
		t.Fatalf("last committed checkpoint %d %v %v: the run committed none to the marker topic", id, ok, err)
	}
	adm, err := kadm.NewOptClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	rc, err := adm.DescribeTopicConfigs(ctx, "out-weir-checkpoints")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := rc.On("out-weir-checkpoints", nil)
	if err != nil || !slices.ContainsFunc(cfg.Configs, func(c kadm.Config) bool { return c.Key == "cleanup.policy" && c.MaybeValue() == "compact" }) {
		t.Fatalf("marker topic settings %v %v, want cleanup.policy=compact", cfg.Configs, err)
	}
	info = nil
	if _, err := runKafka(t, "created", broker, dir, o); err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(info, func(m string) bool { return strings.Contains(m, "created Kafka topic") }) {
		t.Errorf("the second run created the marker topic again: %q", info)
	}
}

// holdFetches makes cluster hold every fetch of topic until release is
// called (the first call counts; later ones do nothing), or until 20s
// have passed, so that a test that never releases fails instead of
// hanging.
// Other requests, and fetches of other topics, are served meanwhile.
func holdFetches(t *testing.T, cluster *kfake.Cluster, topic string) (release func()) {
	return holdFetchesIf(t, cluster, topic, func(kmsg.FetchRequestTopic) bool { return true })
}

// holdFetchesIf is holdFetches for the fetches of topic that hold says
// to hold.
func holdFetchesIf(t *testing.T, cluster *kfake.Cluster, topic string, hold func(kmsg.FetchRequestTopic) bool) (release func()) {
	t.Helper()
	info := cluster.TopicInfo(topic)
	if info == nil {
		t.Fatalf("no topic %s", topic)
	}
	released := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(released) }) }
	timeout := time.AfterFunc(20*time.Second, release)
	t.Cleanup(func() { timeout.Stop() })
	t.Cleanup(release)
	cluster.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		select {
		case <-released:
			cluster.DropControl()
			return nil, nil, false
		default:
		}
		if !slices.ContainsFunc(req.(*kmsg.FetchRequest).Topics, func(ft kmsg.FetchRequestTopic) bool {
			return (ft.Topic == topic || ft.TopicID == info.TopicID) && hold(ft)
		}) {
			return nil, nil, false
		}
		// Sleeping yields to the cluster's other connections: the
		// sink's transactions and the offset commits go on.
		cluster.SleepControl(func() { <-released })
		return nil, nil, false // then served as usual
	})
	return release
}

// TestKafkaMissingTopics: a run whose marker topic the broker will not
// let weir create (no CREATE permission, a creation policy), or whose
// dead-letter or source topic is missing, is refused before it reads
// anything, with the topic and the command that creates it; a run
// without checkpoints writes no markers and needs no marker topic.
func TestKafkaMissingTopics(t *testing.T) {
	broker, c := kafkaClusterWith(t, 10, "out")
	open := func(o RunOptions) error {
		p, err := spec.Parse([]byte(fmt.Sprintf(kafkaJob, "refused", broker, broker, broker)))
		if err != nil {
			t.Fatal(err)
		}
		o.Dir = t.TempDir()
		j, err := Open(p, o)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err = j.Run(ctx)
		return err
	}
	err := open(RunOptions{CheckpointDir: t.TempDir()})
	if want := "sinks.dead_letter.topic: topic \"bad\" does not exist on [" + broker + "]: UNKNOWN_TOPIC_OR_PARTITION"; err == nil || !strings.HasPrefix(err.Error(), want) ||
		!strings.Contains(err.Error(), "kafka-topics.sh --bootstrap-server "+broker+" --create --topic bad") {
		t.Fatalf("a missing dead-letter topic: %v, want %s ...", err, want)
	}
	if c.TopicInfo("out-weir-checkpoints") != nil {
		t.Fatal("a refused run created the marker topic")
	}
	// With the results topic missing too, the refusal names both.
	if err := c.DeleteTopic("out"); err != nil {
		t.Fatal(err)
	}
	err = open(RunOptions{CheckpointDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), `sinks.dead_letter.topic: topic "bad" does not exist`) || !strings.Contains(err.Error(), `sinks.results.topic: topic "out" does not exist`) {
		t.Fatalf("two missing topics: %v, want both named", err)
	}
	if c.TopicInfo("out-weir-checkpoints") != nil {
		t.Fatal("a refused run created the marker topic")
	}
	if err := c.CreateTopic("out", 3, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateTopic("bad", 1, nil); err != nil {
		t.Fatal(err)
	}
	for _, refusal := range []*kerr.Error{kerr.TopicAuthorizationFailed, kerr.PolicyViolation} {
		f := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.CreateTopics}, Err: refusal, Count: -1})
		err := open(RunOptions{CheckpointDir: t.TempDir()})
		f.Remove()
		want := "sinks.results.marker_topic: the marker topic \"out-weir-checkpoints\", where the results sink commits its checkpoints, is missing, and weir may not create it: " + refusal.Error() + "; create it once with\n" +
			"  kafka-topics.sh --bootstrap-server " + broker + " --create --topic out-weir-checkpoints --partitions 1 --replication-factor 1 --config cleanup.policy=compact\n" +
			"or give weir's user CREATE on it, or set marker_topic to an existing topic"
		if err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, refusal) {
			t.Fatalf("refused with %s: %v\nwant %s", refusal.Message, err, want)
		}
		if err := open(RunOptions{}); err != nil {
			t.Fatalf("without checkpoints, refused with %s: %v", refusal.Message, err)
		}
	}
	// A source topic that is not there is a missing input: refused when
	// the job opens (a run with checkpoints restarted on it, three times,
	// before it failed).
	if err := c.DeleteTopic("in"); err != nil {
		t.Fatal(err)
	}
	err = open(RunOptions{CheckpointDir: t.TempDir()})
	if want := `source.kafka.topic: topic "in" does not exist on [` + broker + "]; create it"; err == nil || !strings.HasPrefix(err.Error(), want) ||
		!strings.Contains(err.Error(), "kafka-topics.sh --bootstrap-server "+broker+" --create --topic in") {
		t.Fatalf("a missing source topic: %v, want %s ...", err, want)
	}
}

// TestKafkaRegressionsPerPartition: backward jumps of event time are
// counted per partition. Four partitions on two channels run two hours
// apart from each other, which is no regression; one record of partition
// 2 that jumps back two hours within its partition is one, and is warned
// about by its partition.
func TestKafkaRegressionsPerPartition(t *testing.T) {
	broker, cl := kafkatest.Topic(t, "in", 4)
	const hour = 3600_000
	var recs []*kgo.Record
	for i := range 400 {
		part := int32(i % 4)
		ts := 1767225600000 + int64(part)*2*hour + int64(i)*10
		recs = append(recs, &kgo.Record{Partition: part, Value: fmt.Appendf(nil, `{"user_id":"u","ts":%d}`, ts)})
	}
	recs = append(recs, &kgo.Record{Partition: 2, Value: fmt.Appendf(nil, `{"user_id":"u","ts":%d}`, 1767225600000+2*hour-2*hour+10)})
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	job := fmt.Sprintf(`name: reg
source:
  type: kafka
  channels: 2
  kafka: {brokers: [%s], topic: in, stop_at_end: true}
watermark: {max_out_of_orderness: 1s, idle_timeout: 1s}
key: [user_id]
window: {type: tumbling, size: 1s}
aggregate: [{name: n, fn: count}]
sinks: {results: {type: jsonl, path: out.jsonl}}
`, broker)
	var warnings []string
	var mu sync.Mutex
	_, sum := runSpec(t, job, nil, RunOptions{Warn: func(m string) { mu.Lock(); warnings = append(warnings, m); mu.Unlock() }})
	if sum.Get("timestamp_regressions") != 1 || !sum.Conserved() {
		t.Fatalf("summary %s", sum.JSON())
	}
	if len(warnings) != 1 || !strings.HasPrefix(warnings[0], "partition 2: event time jumped back") {
		t.Fatalf("warnings %q", warnings)
	}
}

// TestKafkaStopAndDrain: an unbounded Kafka job stops on request (Ctrl-C)
// as at the end of its input: without drain its open windows stay
// unfired and are counted; with drain the final watermark fires them.
func TestKafkaStopAndDrain(t *testing.T) {
	broker, cl := kafkatest.Topic(t, "in", 2)
	var recs []*kgo.Record
	for i := range 100 {
		recs = append(recs, &kgo.Record{Partition: int32(i % 2), Value: fmt.Appendf(nil, `{"user_id":"u%d","ts":%d}`, i%3, 1767225600000+int64(i)*100)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	job := fmt.Sprintf(`name: stop
source:
  type: kafka
  kafka: {brokers: [%s], topic: in}
watermark: {max_out_of_orderness: 1s, interval: 10ms}
key: [user_id]
window: {type: tumbling, size: 1s}
aggregate: [{name: n, fn: count}]
sinks: {results: {type: jsonl, path: out.jsonl}}
`, broker)
	for _, drain := range []bool{false, true} {
		p, err := spec.Parse([]byte(job))
		if err != nil {
			t.Fatal(err)
		}
		var j *Job
		var stop atomic.Bool
		j, err = Open(p, RunOptions{Dir: t.TempDir(), Drain: drain, Stop: stop.Load})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for j.Env().Report().SourceRecords[sourceStage] < 100 {
				time.Sleep(5 * time.Millisecond)
			}
			stop.Store(true)
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		sum, err := j.Run(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		open := sum.Get("open_windows")
		if !sum.Conserved() || sum.Get("records_in") != 100 || drain && open != 0 || !drain && open == 0 {
			t.Fatalf("drain=%v: summary %s", drain, sum.JSON())
		}
	}
}

// TestKafkaResultsSinkAdded: a kafka results sink added on resume has
// committed no checkpoint marker yet; the job resumes from its newest
// checkpoint all the same (it did not start over, cutting the other
// sinks' outputs), and the new topic gets the results from there on.
func TestKafkaResultsSinkAdded(t *testing.T) {
	broker := kafkaCluster(t, 0)
	one := fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl")
	two := strings.Replace(one, "  results: {type: jsonl, path: out.jsonl}\n",
		"  results:\n    - {type: jsonl, path: out.jsonl}\n    - {type: kafka, brokers: ["+broker+"], topic: out}\n", 1)
	if two == one {
		t.Fatal("the job was not rewritten")
	}
	dir := t.TempDir()
	o := RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, CheckpointDir: filepath.Join(dir, "ck"),
		CheckpointInterval: time.Millisecond, CheckpointClock: jobtest.EveryRead()}
	crashRun(t, mustParse(t, one), o, "after-manifest", 3)
	j, err := Open(mustParse(t, two), o)
	if err != nil {
		t.Fatal(err)
	}
	if j.RestoredAt().IsZero() {
		t.Fatal("the job started over instead of resuming with the added kafka sink")
	}
	if _, err := j.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(committedResults(t, broker)) == 0 {
		t.Error("the added kafka sink got no results")
	}
}

// kafkaSinkOptions are the options of p's kafka results sink k.
func kafkaSinkOptions(p *spec.Plan, k *spec.Sink) kafkaio.SinkOptions {
	return kafkaio.SpecSinkOptions(spec.SinkSettings(k), p.Name)
}

// TestKafkaStrictlyAscending: a Kafka source's per-partition watermarks
// take strictly_ascending (Flink SQL's WATERMARK FOR t AS t): a record
// at a window's last millisecond that comes after the watermark reached
// it is too late; one millisecond earlier, with the DataStream bound 0
// (monotonous), it would be on time.
func TestKafkaStrictlyAscending(t *testing.T) {
	for _, c := range []struct {
		typ  string
		late int64
	}{{"strictly_ascending", 1}, {"monotonous", 0}} {
		broker, cl := kafkatest.Topic(t, "in", 1)
		var recs []*kgo.Record
		for _, ts := range []int64{1767225600500, 1767225600999, 1767225600999, 1767225601000} {
			recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, `{"user_id":"u","ts":%d}`, ts)})
		}
		if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		job := fmt.Sprintf(`name: asc
source:
  type: kafka
  kafka: {brokers: [%s], topic: in, stop_at_end: true}
watermark: {type: %s, backlog_every: 1}
key: [user_id]
window: {type: tumbling, size: 1s}
aggregate: [{name: n, fn: count}]
sinks: {results: {type: jsonl, path: out.jsonl}}
`, broker, c.typ)
		_, sum := runSpec(t, job, nil, RunOptions{})
		if got := sum.Get("late_dropped"); got != c.late || !sum.Conserved() {
			t.Errorf("%s: %v too late, want %v: %s", c.typ, got, c.late, sum.JSON())
		}
	}
}

// TestPrepareSinksSilentBrokers: sinks whose brokers accept connections
// and never answer are checked at once: the run is refused after one
// wait (kafkaio.AnswerWait), not one per sink, naming every sink.
func TestPrepareSinksSilentBrokers(t *testing.T) {
	addr, _ := connectortest.SilentListener(t)
	defer func(w time.Duration) { kafkaio.AnswerWait = w }(kafkaio.AnswerWait)
	kafkaio.AnswerWait = 2 * time.Second
	yaml := fmt.Sprintf(kafkaJob, "silent", addr, addr, addr) + "  late: {type: kafka, brokers: [" + addr + "], topic: late}\n"
	p, err := spec.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = PrepareSinks(p, RunOptions{})
	d := time.Since(start)
	for _, s := range []string{"sinks.results", "sinks.dead_letter", "sinks.late"} {
		if err == nil || !strings.Contains(err.Error(), s+": kafkaio: the brokers ["+addr+"] did not answer within 2s") {
			t.Fatalf("got %v, want %s named", err, s)
		}
	}
	if d > 5*time.Second { // one sink after another: 6 s at least
		t.Fatalf("refused after %v: the sinks were not checked at once", d)
	}
}

// TestKafkaDeterministic: --deterministic over a topic of 4 partitions
// read by 2 channels gives byte-identical outputs run to run, with
// records out of order beyond the bound (late firings, too-late records)
// whose fate depends on how the partitions interleave: the reader takes
// them in turns (kafkaio's TestStrictOrder checks the turns under
// perturbed fetches).
func TestKafkaDeterministic(t *testing.T) {
	broker, cl := kafkatest.Topic(t, "in", 4)
	rnd := rand.New(rand.NewPCG(5, 5))
	var recs []*kgo.Record
	for i := range 4000 {
		ts := 1767225600000 + int64(i)*5
		if rnd.IntN(10) == 0 {
			ts -= int64(rnd.IntN(3000)) // up to 3 s behind: some late, some too late
		}
		recs = append(recs, &kgo.Record{Partition: int32(rnd.IntN(4)), Value: fmt.Appendf(nil, `{"user_id":"u%d","ts":%d}`, i%3, ts)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	job := fmt.Sprintf(`name: det
source:
  type: kafka
  channels: 2
  kafka: {brokers: [%s], topic: in, stop_at_end: true}
watermark: {max_out_of_orderness: 500ms}
key: [user_id]
window: {type: tumbling, size: 1s}
allowed_lateness: 1s
aggregate: [{name: n, fn: count}]
sinks:
  results: {type: jsonl, path: out.jsonl}
  late: {type: jsonl, path: late.jsonl}
`, broker)
	var first string
	for run := range 3 {
		dir, sum := runSpec(t, job, nil, RunOptions{Deterministic: true})
		if sum.Get("accepted_late") == 0 || sum.Get("late_side_output") == 0 {
			t.Fatalf("the input has no late or too-late records: %s", sum.JSON())
		}
		out := readFile(t, dir, "out.jsonl") + readFile(t, dir, "late.jsonl")
		if run == 0 {
			first = out
		} else if out != first {
			t.Fatalf("run %d's outputs differ from the first's", run)
		}
	}
	// One channel reads the partitions in turns as two channels do,
	// round by round: the same records are late (a trial saw 54 too-late
	// records with two channels that read hundreds of records per Read,
	// and 106 with one).
	_, one := runSpec(t, strings.Replace(job, "channels: 2", "channels: 1", 1), nil, RunOptions{Deterministic: true})
	_, two := runSpec(t, job, nil, RunOptions{Deterministic: true})
	for _, c := range []string{"accepted_late", "late_side_output", "on_time_trailing"} {
		if one.Get(c) != two.Get(c) {
			t.Errorf("%s: %d with one channel, %d with two", c, one.Get(c), two.Get(c))
		}
	}
}

// TestKafkaRetentionLoss: records after a checkpoint's position that the
// topic's retention removed before a resume read them are counted in the
// summary (lost_before_read), also after the run that found them crashed
// and a later one resumed from its checkpoint: what was produced is what
// the runs read plus what was lost, and conservation holds over what was
// read.
func TestKafkaRetentionLoss(t *testing.T) {
	const n = 40
	broker, cl := kafkatest.Topic(t, "in", 1)
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, `{"user_id":"u%d","ts":%d}`, i%3, 1767225600000+int64(i)*100)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	p := mustParse(t, fmt.Sprintf(`name: lost
source:
  type: kafka
  kafka: {brokers: [%s], topic: in, stop_at_end: true}
watermark: {max_out_of_orderness: 1s}
key: [user_id]
window: {type: tumbling, size: 1s}
aggregate: [{name: n, fn: count}]
sinks: {results: {type: jsonl, path: out.jsonl}}
`, broker))
	dir := t.TempDir()
	o := RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow, CheckpointDir: filepath.Join(dir, "ck"),
		CheckpointInterval: time.Millisecond, CheckpointClock: jobtest.EveryRead()}
	crashRun(t, p, o, "after-manifest", 2)
	// Retention removes everything below offset n-5: the checkpoint's
	// position is before it (the run crashed at its second checkpoint).
	adm := kadm.NewClient(cl)
	var del kadm.Offsets
	del.Add(kadm.Offset{Topic: "in", Partition: 0, At: n - 5})
	if _, err := adm.DeleteRecords(context.Background(), del); err != nil {
		t.Fatal(err)
	}
	// The run that finds the gap crashes after a checkpoint took the
	// count; the last run resumes from it, and the count with it.
	crashRun(t, p, o, "after-manifest", 2)
	j, err := Open(p, o)
	if err != nil {
		t.Fatal(err)
	}
	if j.RestoredAt().IsZero() {
		t.Fatal("the run did not resume")
	}
	sum, err := j.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	lost := sum.Get("lost_before_read")
	if lost <= 0 || !sum.Conserved() || sum.Get("records_in")+lost != n {
		t.Fatalf("summary %s: want lost_before_read > 0 and records_in + lost_before_read = %d", sum.JSON(), n)
	}
}

// TestKafkaRerunsAreRunsApart: two fresh --deterministic runs with one
// --now into one Kafka topic (which keeps the first run's results) get
// two run ids, the second above the first, so that readers, which fold
// results by (run, pane), take the second run's; into a file, which
// starts over, the id stays, so that a rerun writes the same bytes.
func TestKafkaRerunsAreRunsApart(t *testing.T) {
	broker := kafkaCluster(t, 0)
	one := fmt.Sprintf(jobtest.OrderJob, "jsonl", "out.jsonl")
	two := strings.Replace(one, "  results: {type: jsonl, path: out.jsonl}\n", "  results: {type: kafka, brokers: ["+broker+"], topic: out}\n", 1)
	if two == one {
		t.Fatal("the job was not rewritten")
	}
	for _, c := range []struct {
		spec string
		want int64 // the second run's id less the first's
	}{{one, 0}, {two, 1}} {
		dir := t.TempDir()
		var runs []int64
		for range 2 {
			j, err := Open(mustParse(t, c.spec), RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := j.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			runs = append(runs, j.run)
		}
		if runs[1]-runs[0] != c.want {
			t.Errorf("runs %v: the second is %d above the first, want %d", runs, runs[1]-runs[0], c.want)
		}
	}
}

// TestKafkaPrimaryKey: a Kafka results sink of columns with a primary key
// keys each message by the JSON object of those columns, as Flink's
// upsert-kafka does (times as the columns write them), and a retraction
// (a session absorbed by a late record) is the key's tombstone, so a
// compacted topic forgets the absorbed session.
func TestKafkaPrimaryKey(t *testing.T) {
	broker, _ := kafkaClusterWith(t, 0, "sess")
	dir := t.TempDir()
	in := strings.Join([]string{
		`{"user":"a","ts":1767225600000}`,
		`{"user":"a","ts":1767225630000}`,
		`{"user":"a","ts":1767225605000}`,
	}, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "in.jsonl"), []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := `
name: sessions
source: {type: file, path: in.jsonl}
watermark: {max_out_of_orderness: 1s}
key: [user]
window: {type: session, gap: 10s}
allowed_lateness: 1m
aggregate: [{name: n, fn: count}]
sinks:
  results:
    type: kafka
    brokers: [` + broker + `]
    topic: sess
    columns: [{name: who, from: user}, {name: ws, from: window_start, time: timestamp}, {name: n}]
    primary_key: [who, ws]
`
	j, err := Open(mustParse(t, spec), RunOptions{Dir: dir, Deterministic: true, Now: jobtest.TestNow})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = kafkaio.ReadCommitted(ctx, []string{broker}, []string{"sess"}, time.Second, func(r *kgo.Record) {
		v := string(r.Value)
		if r.Value == nil {
			v = "<tombstone>"
		}
		got = append(got, string(r.Key)+" "+v)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"who":"a","ws":"2026-01-01 00:00:00.000"} {"who":"a","ws":"2026-01-01 00:00:00.000","n":1}`,
		`{"who":"a","ws":"2026-01-01 00:00:00.000"} <tombstone>`,
		`{"who":"a","ws":"2026-01-01 00:00:00.000"} {"who":"a","ws":"2026-01-01 00:00:00.000","n":2}`,
		`{"who":"a","ws":"2026-01-01 00:00:30.000"} {"who":"a","ws":"2026-01-01 00:00:30.000","n":1}`,
	}
	// In the topic's order (one partition): the tombstone comes between
	// the absorbed session's row and the row of the session that
	// absorbed it, under the same key.
	if !slices.Equal(got, want) {
		t.Errorf("messages:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
