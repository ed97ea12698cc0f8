package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/connector/kafkaio"
)

// groupDemoJob is the demo's job (cli/demo/orders.yaml: its windows,
// lateness, trigger and aggregates) as a group reading the orders topic:
// %[1]s is the job's name, %[2]s the broker.
const groupDemoJob = `# The demo's orders job in group mode (weir demo --kafka --processes N).
name: %[1]s
time: event
source:
  type: kafka
  kafka: {brokers: ['%[2]s'], topic: orders, stop_at_end: true, partitioned_by_key: true}
watermark: {type: bounded_out_of_orderness, max_out_of_orderness: 30s}
key: [user_id]
window: {type: tumbling, size: 5m}
allowed_lateness: 10m
trigger: {type: continuous, interval: 1m}
aggregate:
  - {name: orders, fn: count}
  - {name: total, fn: sum, field: amount}
group: {commit_interval: 200ms, session_timeout: 3s, transaction_timeout: 10s}
sinks:
  results: {type: kafka, brokers: ['%[2]s'], topic: %[1]s-stats}
  late: {type: kafka, brokers: ['%[2]s'], topic: %[1]s-late}
  dead_letter: {type: kafka, brokers: ['%[2]s'], topic: %[1]s-dead}
`

// groupDemoTopics are the topics of the group demo's two runs.
var groupDemoTopics = []string{"demo-one-stats", "demo-one-late", "demo-one-dead", "demo-group-stats", "demo-group-late", "demo-group-dead"}

// groupDemo runs the produced orders as a group, twice: by one member
// alone, then by procs members as processes of this executable, one of
// which is killed with SIGKILL once the members run. It prints whether
// the read_committed results (each window's newest revision), too-late
// orders and dead letters of the two runs are the same.
func groupDemo(ctx context.Context, broker, dir string, procs int, o IO) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(o.Stderr, "weir demo:", err)
		return ExitFailed
	}
	run := func(job string, names []string, kill string) (map[string]string, error) {
		jobDir := filepath.Join(dir, job)
		if err := os.RemoveAll(jobDir); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(jobDir, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(jobDir, "job.yaml"), fmt.Appendf(nil, groupDemoJob, job, broker), 0o644); err != nil {
			return nil, err
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		errs := map[string]error{}
		summaries := map[string]string{}
		cmds := map[string]*exec.Cmd{}
		for _, name := range names {
			cmd := exec.CommandContext(ctx, exe, "run", "job.yaml", "--instance", name, "--state-dir", name, "--summary-json", name+".json")
			cmd.Dir = jobDir
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				return nil, err
			}
			cmds[name] = cmd
			wg.Go(func() {
				err := cmd.Wait()
				mu.Lock()
				defer mu.Unlock()
				if name == kill {
					return
				}
				if err != nil {
					errs[name] = fmt.Errorf("member %s: %v:\n%s", name, err, out.String())
					return
				}
				b, _ := os.ReadFile(filepath.Join(jobDir, name+".json"))
				summaries[name] = string(b)
			})
		}
		if kill != "" {
			time.Sleep(time.Second)
			if err := cmds[kill].Process.Kill(); errors.Is(err, os.ErrProcessDone) {
				fmt.Fprintf(o.Stdout, "  member %s finished before it could be killed (more --orders make the run longer)\n", kill)
			} else {
				fmt.Fprintf(o.Stdout, "  killed member %s with SIGKILL; its tasks move to the others after the session timeout (3s)\n", kill)
			}
		}
		wg.Wait()
		for _, err := range errs {
			return nil, err
		}
		return summaries, nil
	}
	fmt.Fprintf(o.Stdout, "\ngroup mode: one member alone, then %d members as processes, one of them killed\n", procs)
	t0 := time.Now()
	one, err := run("demo-one", []string{"a"}, "")
	if err != nil {
		fmt.Fprintln(o.Stderr, "weir demo:", err)
		return ExitFailed
	}
	fmt.Fprintf(o.Stdout, "  one member: done in %v\n", time.Since(t0).Round(time.Millisecond))
	var names []string
	for i := range procs {
		names = append(names, fmt.Sprintf("m%d", i+1))
	}
	t0 = time.Now()
	many, err := run("demo-group", names, names[len(names)/2])
	if err != nil {
		fmt.Fprintln(o.Stderr, "weir demo:", err)
		return ExitFailed
	}
	fmt.Fprintf(o.Stdout, "  %d members: done in %v\n", procs, time.Since(t0).Round(time.Millisecond))
	same := true
	for name, s := range many {
		if s != one["a"] {
			same = false
			fmt.Fprintf(o.Stdout, "  member %s's summary differs from one member's:\n  %s  %s", name, s, one["a"])
		}
	}
	for _, kind := range []string{"stats", "late", "dead"} {
		// Results fold to each window's newest revision; too-late orders
		// and dead letters are compared one by one.
		a, err := readDemoTopic(ctx, broker, "demo-one-"+kind, kind == "stats")
		if err == nil {
			var b []string
			b, err = readDemoTopic(ctx, broker, "demo-group-"+kind, kind == "stats")
			if err == nil {
				eq := slices.Equal(a, b)
				same = same && eq
				fmt.Fprintf(o.Stdout, "  %-5s %d and %d records, %s\n", kind, len(a), len(b), map[bool]string{true: "the same", false: "DIFFERENT"}[eq])
			}
		}
		if err != nil {
			fmt.Fprintln(o.Stderr, "weir demo: reading the topics:", err)
			return ExitFailed
		}
	}
	if !same {
		fmt.Fprintln(o.Stdout, "the group's results differ from one member's (a bug in weir; please report it)")
		return ExitFailed
	}
	fmt.Fprintf(o.Stdout, "the results of %d members, one killed, equal one member's: each window's newest revision, every too-late order and dead letter\n", procs)
	return ExitOK
}

// readDemoTopic reads topic read_committed, sorted, each value without its
// firing, pane, run id and job name (the revisions' count may differ by where
// commits fell; their contents do not) and a dead letter's detail (which
// may name the processing time; its reason stays); fold keeps each key's
// newest value only.
func readDemoTopic(ctx context.Context, broker, topic string, fold bool) ([]string, error) {
	byKey := map[string]string{}
	var all []string
	err := kafkaio.ReadCommitted(ctx, []string{broker}, []string{topic}, time.Second, func(r *kgo.Record) {
		v := string(r.Value)
		var m map[string]any
		if json.Unmarshal(r.Value, &m) == nil {
			delete(m, "firing")
			delete(m, "pane")
			delete(m, "run")
			delete(m, "job") // the two runs are jobs of two names
			delete(m, "detail")
			var b strings.Builder
			for _, k := range slices.Sorted(maps.Keys(m)) {
				fmt.Fprintf(&b, "%s=%v ", k, m[k])
			}
			v = b.String()
		}
		if fold {
			byKey[string(r.Key)] = string(r.Key) + " " + v
		} else {
			all = append(all, string(r.Key)+" "+v)
		}
	})
	if fold {
		all = slices.Collect(maps.Values(byKey))
	}
	slices.Sort(all)
	return all, err
}
