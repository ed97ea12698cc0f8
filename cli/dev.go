package cli

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// devCmd runs development servers: "weir dev kafka" starts an in-process
// Kafka (franz-go's kfake) on a localhost port, so a job with a kafka
// source or sink can be tried on a bare machine, with kcat or any Kafka
// client. It runs until ctx is done (Ctrl-C).
func devCmd(ctx context.Context, args []string, o IO) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		return devCmd(ctx, []string{"kafka", "-h"}, o)
	}
	if len(args) == 0 || args[0] != "kafka" {
		fmt.Fprintln(o.Stderr, "usage: weir dev kafka [flags] (run 'weir dev kafka -h' for them)")
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
	var names []string
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
		names = append(names, fmt.Sprintf("%s (%d partitions)", name, n))
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
	if len(names) > 0 {
		fmt.Fprintf(o.Stdout, "topics: %s\n", strings.Join(names, ", "))
	}
	fmt.Fprintln(o.Stdout, "Ctrl-C stops it")
	<-ctx.Done()
	return ExitOK
}
