package group

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/promtest"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/spec"
)

// BenchmarkGroup runs the group job over one input in one process: by
// single-process runs (the job without --instance: at parallelism 1 with
// checkpoints every 200 ms like the members' commits, and at parallelism
// 2 with the default 5 s), by one member and by two, with the input
// partitioned by key and repartitioned. Each reports records/s; compare them within one run
// (go test -bench Group -benchtime 1x ./internal/group).
func BenchmarkGroup(b *testing.B) {
	const n = 400_000
	var names []string
	for i := range 6 * b.N {
		names = append(names, fmt.Sprintf("b%d", i))
	}
	broker := cluster(b, n, names...)
	run := 0
	next := func() string { run++; return names[run-1] }
	for _, single := range []struct {
		name        string
		parallelism int
		interval    time.Duration
	}{{"single-p1-200ms", 1, 200 * time.Millisecond}, {"single-p2-5s", 2, 5 * time.Second}} {
		b.Run(single.name, func(b *testing.B) {
			for range b.N {
				p := plan(b, next(), broker)
				p.Source.Kafka.PartitionedByKey = false
				p.Channels = single.parallelism
				began := time.Now()
				j, err := job.Open(p, job.RunOptions{Parallelism: single.parallelism, CheckpointDir: b.TempDir(), CheckpointInterval: single.interval})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := j.Run(context.Background()); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(n)/time.Since(began).Seconds(), "records/s")
			}
		})
	}
	for _, c := range []struct {
		members     int
		repartition bool
	}{{1, false}, {2, false}, {1, true}, {2, true}} {
		name := fmt.Sprintf("members=%d", c.members)
		if c.repartition {
			name += "-repartition"
		}
		members := c.members
		b.Run(name, func(b *testing.B) {
			for range b.N {
				p := plan(b, next(), broker)
				// Repartitioned: route tasks and window tasks, through
				// the repartition topic.
				p.Source.Kafka.PartitionedByKey = !c.repartition
				dir := b.TempDir()
				var ms []string
				for i := range members {
					ms = append(ms, fmt.Sprint("m", i))
				}
				began := time.Now()
				runMembers(b, p, filepath.Join(dir, "m"), ms...)
				b.ReportMetric(float64(n)/time.Since(began).Seconds(), "records/s")
			}
		})
	}
}

// BenchmarkRouterEmit routes one line per op (a route task's record to
// its repartition partition): go test -bench RouterEmit -benchmem
// ./internal/group.
func BenchmarkRouterEmit(b *testing.B) {
	r := &router{t: &task{part: 3}, rt: "x-repartition", nout: 4, keys: kgo.StickyKeyPartitioner(nil).ForTopic("x-repartition")}
	l := connector.Line{Text: []byte(`{"user_id":"u7","amount":5,"ts":1767225600000}`), No: 1000, Time: 1767225600000}
	b.ReportAllocs()
	for i := range b.N {
		r.key = `"u7"`
		r.Emit(0, l)
		if i%4096 == 4095 {
			r.answerRecords() // a commit takes them
		}
	}
}

// BenchmarkGroupState runs one member over a job whose state is large
// beside what a commit changes (100,000 users in 10-minute windows,
// 400,000 orders over 400 s, commits every 50 ms), with the keyed
// changelog and with every commit a whole checkpoint (as before it), and
// reports records/s and the changelog bytes written per record (go test
// -run XXX -bench GroupState -benchtime 1x ./internal/group).
func BenchmarkGroupState(b *testing.B) {
	const n, users = 400_000, 100_000
	var names []string
	for i := range 16 {
		names = append(names, fmt.Sprintf("s%d", i))
	}
	c, cl := fakeKafka(b, 4, names...)
	var recs []*kgo.Record
	for i := range n {
		u := fmt.Sprintf("u%d", (i*7919)%users)
		recs = append(recs, &kgo.Record{Key: []byte(u), Value: fmt.Appendf(nil, `{"user_id":%q,"amount":%d,"ts":%d}`, u, i%10, 1767225600000+int64(i))})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	broker := c.ListenAddrs()[0]
	run := 0
	changelogModes(b, func(b *testing.B) {
		for range b.N {
			p, err := spec.Parse(bytes.ReplaceAll(fmt.Appendf(nil, groupJob, names[run], broker, broker, names[run], broker, names[run], broker, names[run]), []byte("size: 1s"), []byte("size: 10m")))
			if err != nil {
				b.Fatal(err)
			}
			run++
			reg := prometheus.NewRegistry()
			began := time.Now()
			runGroup(b, p, b.TempDir(), func(o *Options) { o.Registerer, o.CommitInterval = reg, 50*time.Millisecond }, "m")
			b.ReportMetric(float64(n)/time.Since(began).Seconds(), "records/s")
			v, _ := promtest.Value(b, reg, "weir_group_changelog_bytes_total")
			b.ReportMetric(v/n, "changelog-B/record")
		}
	})
}
