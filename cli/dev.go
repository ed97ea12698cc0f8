package cli

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/connector/kafkaio"
	"github.com/weirstream/weir/spec"
)

// devCmd runs development servers: "weir dev kafka" starts an in-process
// Kafka (franz-go's kfake) on a localhost port, so a job with a kafka
// source or sink can be tried on a bare machine, with kcat or any Kafka
// client. It runs until ctx is done (Ctrl-C).
func devCmd(ctx context.Context, args []string, o IO) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		return devCmd(ctx, []string{"kafka", "-h"}, o)
	}
	if len(args) > 0 && args[0] == "produce" {
		return devProduce(ctx, args[1:], o)
	}
	if len(args) == 0 || args[0] != "kafka" {
		fmt.Fprintln(o.Stderr, "usage: weir dev kafka [flags] (run 'weir dev kafka -h' for them)\n       weir dev produce JOB.yaml FILE (run 'weir dev produce -h')")
		return ExitUsage
	}
	fs := flag.NewFlagSet("dev kafka", flag.ContinueOnError)
	fs.SetOutput(o.Stderr)
	port := fs.Int("port", 9092, "the broker's port on 127.0.0.1")
	dataDir := fs.String("data-dir", "", "keep topics and group offsets in this directory across restarts (default: in memory)")
	minSession := fs.Duration("min-session-timeout", 6*time.Second, "the shortest session timeout a consumer group member may ask for (group mode's tests use a short one)")
	var topics []string
	fs.Func("topic", "create a topic NAME[:PARTITIONS] (default 1 partition); repeat the flag for several", func(s string) error {
		topics = append(topics, s)
		return nil
	})
	fs.Usage = func() {
		fmt.Fprintln(o.Stderr, `usage: weir dev kafka [--port 9092] [--topic NAME[:PARTITIONS]]... [--data-dir DIR] [--min-session-timeout 6s]

Starts an in-process Kafka (franz-go's kfake: one broker, no replication,
transactions and consumer groups supported) on 127.0.0.1 until Ctrl-C. It
is for trying weir's Kafka source and sink, not for production.`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil || fs.NArg() != 0 || *port <= 0 || *port > 65535 {
		if err != nil {
			return parseExit(err)
		}
		fs.Usage()
		return ExitUsage
	}
	opts := []kfake.Opt{kfake.Ports(*port), kfake.AllowAutoTopicCreation(), kfake.GroupMinSessionTimeout(*minSession)}
	want := map[string]int32{} // the --topic partitions by name
	for _, t := range topics {
		name, parts, hasParts := strings.Cut(t, ":")
		n := 1
		if hasParts {
			var err error
			if n, err = strconv.Atoi(parts); err != nil || n <= 0 {
				fmt.Fprintf(o.Stderr, "weir dev kafka: --topic %q: the partitions must be a positive number, such as %s:6\n", t, name)
				return ExitUsage
			}
		}
		if name == "" {
			fmt.Fprintf(o.Stderr, "weir dev kafka: --topic %q has no name\n", t)
			return ExitUsage
		}
		opts = append(opts, kfake.SeedTopics(int32(n), name))
		want[name] = int32(n)
	}
	if *dataDir != "" {
		opts = append(opts, kfake.DataDir(o.path(*dataDir)))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintf(o.Stderr, "weir dev kafka: %v\n", err)
		return ExitFailed
	}
	defer c.Close()
	fmt.Fprintf(o.Stdout, "kafka (kfake, in-process) listening on %s\n", strings.Join(c.ListenAddrs(), ", "))
	if len(want) > 0 {
		names, err := devTopics(ctx, c.ListenAddrs(), want)
		if err != nil {
			fmt.Fprintf(o.Stderr, "weir dev kafka: --topic: %v\n", err)
			return ExitFailed
		}
		fmt.Fprintf(o.Stdout, "topics: %s\n", strings.Join(names, ", "))
	}
	fmt.Fprintln(o.Stdout, "Ctrl-C stops it")
	<-ctx.Done()
	return ExitOK
}

// devTopics makes sure the --topic topics exist (a cluster restored from
// --data-dir does not seed them) and describes each: created, or there
// already (with its own partition count, which may differ from want's).
func devTopics(ctx context.Context, brokers []string, want map[string]int32) ([]string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return nil, err
	}
	adm := kadm.NewClient(cl)
	defer adm.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	have, err := adm.ListTopics(ctx, slices.Sorted(maps.Keys(want))...)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, name := range slices.Sorted(maps.Keys(want)) {
		n := want[name]
		if t, ok := have[name]; ok && t.Err == nil {
			if got := int32(len(t.Partitions)); got != n {
				names = append(names, fmt.Sprintf("%s (%d partitions, from --data-dir; not the %d asked)", name, got, n))
			} else {
				names = append(names, fmt.Sprintf("%s (%d partitions)", name, n))
			}
			continue
		}
		r, err := adm.CreateTopic(ctx, n, 1, nil, name)
		if err == nil {
			err = r.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return nil, fmt.Errorf("creating %s: %w", name, err)
		}
		names = append(names, fmt.Sprintf("%s (%d partitions)", name, n))
	}
	return names, nil
}

// devProduce writes the JSON lines of a file to a job's Kafka input topic,
// each keyed by the job's key with Kafka's default partitioner (murmur2),
// as source.kafka.partitioned_by_key expects: "weir dev produce JOB.yaml
// FILE" (FILE "-" is stdin). A line that is not a JSON object, or lacks a
// key field, gets the key's empty value: it lands in one partition, and
// the job sends it to its dead letters.
func devProduce(ctx context.Context, args []string, o IO) int {
	fs := flag.NewFlagSet("dev produce", flag.ContinueOnError)
	fs.SetOutput(o.Stderr)
	fs.Usage = func() {
		fmt.Fprintln(o.Stderr, `usage: weir dev produce JOB.yaml FILE

Writes FILE's JSON lines (- for stdin) to the job's Kafka input topic
(source.kafka.brokers and topic), each keyed by the job's key fields with
Kafka's default partitioner (murmur2), as partitioned_by_key: true expects.`)
		fs.PrintDefaults()
	}
	paths, ok := parsePaths(fs, args)
	if !ok {
		return ExitUsage
	}
	if len(paths) != 2 {
		fs.Usage()
		return ExitUsage
	}
	p, ok := loadSpec(paths[0], o)
	if !ok {
		return ExitUsage
	}
	if p.Source.Type != "kafka" {
		fmt.Fprintf(o.Stderr, "weir dev produce: %s reads %s, not Kafka\n", paths[0], p.Source.Type)
		return ExitUsage
	}
	settings := spec.SourceSettings(p)
	topic := settings.String("kafka.topic")
	var in io.Reader = o.Stdin
	if paths[1] != "-" {
		f, err := os.Open(o.path(paths[1]))
		if err != nil {
			fmt.Fprintf(o.Stderr, "weir dev produce: %v\n", err)
			return ExitUsage
		}
		defer f.Close()
		in = f
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(settings.Strings("kafka.brokers")...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)), kgo.ProducerLinger(5 * time.Millisecond)}, kafkaio.AuthFrom(settings, "kafka.")...)...)
	if err != nil {
		fmt.Fprintf(o.Stderr, "weir dev produce: %v\n", err)
		return ExitFailed
	}
	defer cl.Close()
	var n int64
	var mu sync.Mutex
	var perr error
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		n++
		cl.Produce(ctx, &kgo.Record{Key: recordKey(line, p.Key), Value: append([]byte(nil), line...)}, func(_ *kgo.Record, err error) {
			mu.Lock()
			perr = cmp.Or(perr, err)
			mu.Unlock()
		})
	}
	err = errors.Join(sc.Err(), cl.Flush(ctx))
	mu.Lock()
	err = cmp.Or(err, perr)
	mu.Unlock()
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		fmt.Fprintf(o.Stderr, "weir dev produce: topic %s: %v: create it first (weir dev kafka --topic %s:4)\n", topic, err, topic)
		return ExitFailed
	}
	if err != nil {
		fmt.Fprintf(o.Stderr, "weir dev produce: topic %s: %v\n", topic, err)
		return ExitFailed
	}
	fmt.Fprintf(o.Stdout, "produced %d records to %s, keyed by %s with Kafka's default partitioner\n", n, topic, strings.Join(p.Key, ", "))
	return ExitOK
}

// recordKey is a JSON line's key: the values of the key fields (a
// string's text, other values as JSON), joined by a unit separator.
func recordKey(line []byte, fields []string) []byte {
	var obj map[string]json.RawMessage
	_ = json.Unmarshal(line, &obj)
	var key []byte
	for i, f := range fields {
		if i > 0 {
			key = append(key, 0x1f)
		}
		v := obj[f]
		var s string
		if json.Unmarshal(v, &s) == nil {
			key = append(key, s...)
		} else {
			key = append(key, v...)
		}
	}
	if key == nil {
		key = []byte{}
	}
	return key
}
