package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/fileio"
	"github.com/weirstream/weir/connector/genio"
	"github.com/weirstream/weir/connector/kafkaio"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/spec"
)

// The demo's Kafka topics.
const (
	demoOrders = "orders"
	demoStats  = "order-stats"
	demoLate   = "orders-late"
	demoDead   = "orders-dead"
)

// kafkaDemo runs the demo through an in-process Kafka: the generated
// orders are produced to topic orders (6 partitions, keyed by user), the
// job reads them with a watermark per partition and writes its results,
// too-late orders and dead letters to topics, exactly once. s is the demo
// spec, changed here. With procs (2 or more), the job runs in group mode
// instead (groupDemo).
func kafkaDemo(ctx context.Context, s *spec.Spec, p *spec.Plan, dir string, rf runFlags, procs int, o IO) int {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(6, demoOrders), kfake.SeedTopics(3, demoStats),
		kfake.SeedTopics(1, demoLate, demoDead), kfake.SeedTopics(3, groupDemoTopics...), kfake.GroupMinSessionTimeout(500*time.Millisecond))
	if err != nil {
		fmt.Fprintln(o.Stderr, "weir demo:", err)
		return ExitFailed
	}
	defer c.Close()
	broker := c.ListenAddrs()[0]
	fmt.Fprintf(o.Stdout, "kafka (kfake, in-process) on %s; producing the orders to topic %s (6 partitions, keyed by user)...\n", broker, demoOrders)
	t0 := time.Now()
	gen, err := genio.OptionsFrom(spec.SourceSettings(p))
	if err != nil {
		fmt.Fprintln(o.Stderr, "weir demo:", err)
		return ExitFailed
	}
	n, err := produceOrders(ctx, broker, gen)
	if err != nil {
		fmt.Fprintln(o.Stderr, "weir demo:", err)
		return ExitFailed
	}
	fmt.Fprintf(o.Stdout, "produced %d records in %v\n\n", n, time.Since(t0).Round(time.Millisecond))
	if procs >= 2 {
		return groupDemo(ctx, broker, dir, procs, o)
	}

	s.Name = "demo-kafka"
	s.Source = spec.Source{Type: "kafka", Channels: 2, Kafka: &spec.KafkaSource{Brokers: []string{broker}, Topic: demoOrders, StopAtEnd: true}}
	kafkaSink := func(topic string) *spec.Sink {
		return &spec.Sink{Type: "kafka", Brokers: []string{broker}, Topic: topic}
	}
	s.Sinks = spec.Sinks{Results: spec.SinkList{kafkaSink(demoStats)}, Late: kafkaSink(demoLate), DeadLetter: kafkaSink(demoDead)}
	// Partitions emit their watermarks periodically; the demo's heartbeat
	// and emit settings are for the generator.
	s.Watermark.Heartbeat, s.Watermark.Emit = nil, ""
	kp, err := spec.Compile(s)
	if err != nil {
		fmt.Fprintln(o.Stderr, "weir demo: the kafka spec:", err)
		return ExitFailed
	}
	if code := runPlan(ctx, kp, dir, rf, time.Time{}, IO{Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stdout, Dir: o.Dir}); code != ExitOK {
		return code
	}
	counts, err := topicCounts(ctx, broker, demoStats, demoLate, demoDead)
	if err != nil {
		fmt.Fprintln(o.Stderr, "weir demo: reading the topics:", err)
		return ExitFailed
	}
	fmt.Fprintf(o.Stdout, "\nread_committed: %d results in %s (keyed by user and window; late firings are newer revisions of the same key),\n", counts[demoStats], demoStats)
	fmt.Fprintf(o.Stdout, "%d too-late orders in %s, %d dead letters in %s\n", counts[demoLate], demoLate, counts[demoDead], demoDead)
	fmt.Fprintf(o.Stdout, "(each partition has its own watermark and the slowest holds the job's: read as a backlog, fewer orders\n")
	fmt.Fprintf(o.Stdout, "are late than in the single-stream demo)\n")
	return ExitOK
}

// produceOrders produces the generator's records to the orders topic,
// keyed by their user_id.
func produceOrders(ctx context.Context, broker string, g genio.Options) (int64, error) {
	src, err := genio.New(g)
	if err != nil {
		return 0, err
	}
	r, err := src.Open(ctx, 0, 1)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.DefaultProduceTopic(demoOrders), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(1<<16))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	var n int64
	var perr error
	out := &lineOut{emit: func(l fileio.Line) {
		key := l.Text
		if i := strings.Index(string(l.Text), `"user_id":"`); i >= 0 {
			rest := l.Text[i+11:]
			if j := strings.IndexByte(string(rest), '"'); j >= 0 {
				key = rest[:j]
			}
		}
		n++
		cl.Produce(ctx, &kgo.Record{Key: key, Value: append([]byte(nil), l.Text...)}, func(_ *kgo.Record, err error) {
			if err != nil && perr == nil {
				perr = err
			}
		})
	}}
	for {
		st, err := r.Read(ctx, out)
		if err != nil {
			return n, err
		}
		if st == weir.Done {
			break
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return n, err
	}
	return n, perr
}

// lineOut collects a generator's records.
type lineOut struct{ emit func(fileio.Line) }

func (o *lineOut) Emit(_ etime.Time, l fileio.Line) {
	if l.Kind == fileio.Data || l.Kind == fileio.Bad {
		o.emit(l)
	}
}
func (o *lineOut) EmitWatermark(etime.Time) {}
func (o *lineOut) MarkIdle()                {}
func (o *lineOut) MarkActive()              {}

// topicCounts counts the records read_committed readers see in topics.
func topicCounts(ctx context.Context, broker string, topics ...string) (map[string]int64, error) {
	counts := map[string]int64{}
	err := kafkaio.ReadCommitted(ctx, []string{broker}, topics, time.Second, func(r *kgo.Record) { counts[r.Topic]++ })
	return counts, err
}
