package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/weirstream/weir/internal/group"
)

// resetCmd is weir reset JOB.yaml: it deletes the group's committed
// offsets and changelog topic (group.Reset), so that the next members
// run the job again from source.kafka.start.
func resetCmd(ctx context.Context, args []string, o IO) int {
	fs := flag.NewFlagSet("reset", flag.ContinueOnError)
	fs.SetOutput(o.Stderr)
	fs.Usage = func() {
		fmt.Fprintln(o.Stderr, `usage: weir reset JOB.yaml

Deletes what the job's group keeps (group mode, weir run --instance): the
consumer group's committed offsets, the changelog topic of its tasks'
state and its repartition topic, and the job's rows in its Postgres
tables (results, with the results table's record of the late records a
backfill applied; late records; dead letters), so that a backfill never
folds into two runs. The next members start a new run from
source.kafka.start. Records already written to Kafka topics stay (the
new run's carry a new run id). Refused while the group has members.
Members' --state-dir directories need no cleaning: a new run does not
read an old run's files.`)
	}
	path, ok := onePath(fs, args)
	if !ok {
		return ExitUsage
	}
	p, ok := loadSpec(path, o)
	if !ok {
		return ExitUsage
	}
	did, err := group.Reset(ctx, p)
	if err != nil {
		fmt.Fprintf(o.Stderr, "weir reset: %v\n", err)
		if errors.Is(err, group.ErrRefused) {
			return ExitUsage // refused, as a spec or a run is: exit 2
		}
		return ExitFailed
	}
	if len(did) == 0 {
		fmt.Fprintf(o.Stdout, "group %s keeps nothing in Kafka: nothing to reset\n", group.Name(p))
	}
	for _, d := range did {
		fmt.Fprintln(o.Stdout, d)
	}
	return ExitOK
}
