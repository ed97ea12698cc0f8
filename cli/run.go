package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/admin"
	"github.com/weirstream/weir/internal/group"
	"github.com/weirstream/weir/internal/monitor"
	"github.com/weirstream/weir/internal/outfmt"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/metrics"
	"github.com/weirstream/weir/spec"
)

// loadSpec reads, parses and validates a spec file, printing every error.
func loadSpec(path string, o IO) (*spec.Plan, bool) {
	if isSQL(path) {
		return loadSQL(path, o)
	}
	data, err := os.ReadFile(o.path(path))
	if err != nil {
		fmt.Fprintf(o.Stderr, "weir: %v\n", trimDir(err, o))
		return nil, false
	}
	p, err := spec.ParseFile(path, data)
	if err == nil {
		return p, true
	}
	var es spec.Errors
	if errors.As(err, &es) {
		for _, e := range es {
			fmt.Fprintf(o.Stderr, "%s: %v\n", path, e)
		}
		fmt.Fprintf(o.Stderr, "%s: %d error(s)\n", path, len(es))
	} else {
		fmt.Fprintf(o.Stderr, "%s: %v\n", path, err)
	}
	return nil, false
}

// printWarnings prints the spec's warnings (weir validate and run do;
// the other commands stay quiet about them).
func printWarnings(path string, p *spec.Plan, o IO) {
	for _, w := range p.Warnings {
		// A SQL job's warning starts at its line:column, which follows
		// the file's name as an error's does (job.sql:3:1: warning: ...).
		if pos, msg, ok := strings.Cut(w.Msg, ": "); ok && w.Path == "" && sqlPos(pos) {
			fmt.Fprintf(o.Stderr, "%s:%s: warning: %s\n", path, pos, msg)
			continue
		}
		fmt.Fprintf(o.Stderr, "%s: warning: %v\n", path, w)
	}
}

// sqlPos reports whether s is a position line:column.
func sqlPos(s string) bool {
	l, c, ok := strings.Cut(s, ":")
	_, err1 := strconv.Atoi(l)
	_, err2 := strconv.Atoi(c)
	return ok && err1 == nil && err2 == nil
}

// parseExit is the exit code of a command whose flags did not parse: 0
// when they asked for its help (-h), which the flag set printed.
func parseExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	return ExitUsage
}

// trimDir removes the test working directory from error messages.
func trimDir(err error, o IO) string {
	s := err.Error()
	if o.Dir != "" {
		s = strings.ReplaceAll(s, o.Dir+string(filepath.Separator), "")
	}
	return s
}

func validateCmd(args []string, o IO) int {
	return specCmd("validate", args, o, func(path string, p *spec.Plan) {
		warns := ""
		if n := len(p.Warnings); n > 0 {
			warns = fmt.Sprintf("; %d warning(s) above", n)
		}
		if g, err := p.Graph.Path(); err == nil && len(g.Windows) > 0 && !slices.ContainsFunc(g.Windows, func(b spec.Branch) bool { return b.Select == nil }) {
			// Only queries without a window: rows, no windows.
			fmt.Fprintf(o.Stdout, "%s: ok: job %q, %s time, %s source, rows without a window (no state)%s\n",
				path, p.Name, p.Time, p.Source.Type, warns)
			return
		}
		fmt.Fprintf(o.Stdout, "%s: ok: job %q, %s time, %s source, %s windows, %d aggregate(s)%s\n",
			path, p.Name, p.Time, p.Source.Type, p.WindowKind, len(p.Aggregates), warns)
	})
}

// explainCmd prints the plan a job spec compiles to: its operators and
// sinks, one per line, with the streams they read (weir explain JOB.yaml).
func explainCmd(args []string, o IO) int {
	return specCmd("explain", args, o, func(_ string, p *spec.Plan) { fmt.Fprint(o.Stdout, p.Explain()) })
}

// specCmd is weir NAME JOB.yaml: it compiles the spec, printing its
// errors (exit 2) or its warnings, then calls then with the plan.
func specCmd(name string, args []string, o IO, then func(path string, p *spec.Plan)) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(o.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(o.Stderr, "usage: weir %s JOB.yaml\n", name)
		if name == "validate" {
			fmt.Fprintln(o.Stderr, "checks the spec itself: every field, with its path, line and fix; it reads no input and connects to no broker or\ndatabase (weir run checks those when it starts, before it reads: a missing topic, an unreachable server)")
		}
	}
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		if err != nil {
			return parseExit(err)
		}
		fs.Usage()
		return ExitUsage
	}
	p, ok := loadSpec(fs.Arg(0), o)
	if !ok {
		return ExitUsage
	}
	printWarnings(fs.Arg(0), p, o)
	then(fs.Arg(0), p)
	return ExitOK
}

// runFlags are weir run's flags.
type runFlags struct {
	deterministic bool
	now           string
	summaryJSON   string
	parallelism   int
	drain         bool
	checkpointDir string
	interval      time.Duration
	fresh         bool
	appendRuns    bool
	restarts      int
	http          string
	// instance and stateDir run the job as a member of its group
	// (internal/group).
	instance, stateDir string
	// serving, when set, takes the admin server over once it listens:
	// it is told the address and handed the server's stop, which the
	// run then leaves to it (weir demo keeps the dashboard up after the
	// run, see demoDashboard).
	serving func(addr string, stop func())
	// summary, when set, receives the run's summary (weir demo tells
	// the three layers' shares from it).
	summary *job.Summary
}

func runCmd(ctx context.Context, args []string, o IO) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(o.Stderr)
	var f runFlags
	fs.BoolVar(&f.deterministic, "deterministic", false, "run on one goroutine with processing time fixed: byte-identical outputs run to run")
	fs.StringVar(&f.now, "now", "", "processing time of a deterministic run: RFC 3339 or Unix milliseconds (default: the start time)")
	fs.StringVar(&f.summaryJSON, "summary-json", "", "write the run's counters as one JSON object to this file")
	fs.IntVar(&f.parallelism, "parallelism", 0, "parallelism of the window operator (default: all cores)")
	fs.BoolVar(&f.drain, "drain", false, "on Ctrl-C, send the final watermark first so every open window fires")
	fs.StringVar(&f.checkpointDir, "checkpoint-dir", "", "take checkpoints in this directory and resume from the newest one (overrides checkpoint.dir)")
	fs.DurationVar(&f.interval, "checkpoint-interval", 0, "time between checkpoints (overrides checkpoint.interval; default 5s)")
	fs.BoolVar(&f.fresh, "fresh", false, "ignore existing checkpoints and start a new run (the job's outputs start over too, unless --append)")
	fs.BoolVar(&f.appendRuns, "append", false, "at a fresh start, keep earlier runs' outputs (files, ledger, archive, table rows) and add this run's to them; backfill then uses every run's ledger entries")
	fs.StringVar(&f.http, "http", "", "serve Prometheus metrics at http://ADDR/metrics while the job runs, such as 127.0.0.1:8080 (a bare :PORT listens on loopback)")
	fs.IntVar(&f.restarts, "restarts", 3, "with checkpoints: how often a failing job restarts from its newest checkpoint (backoff 1s, doubling)")
	fs.StringVar(&f.instance, "instance", "", "run as the member NAME of the job's group on Kafka (group mode): the members share the input's partitions, state and exactly-once output; needs --state-dir")
	fs.StringVar(&f.stateDir, "state-dir", "", "group mode: the member's directory (its tasks' state, kept across restarts; one process each)")
	fs.Usage = func() {
		fmt.Fprintln(o.Stderr, "usage: weir run JOB.yaml [flags]")
		fs.PrintDefaults()
	}
	path, ok := onePath(fs, args)
	if !ok {
		return ExitUsage
	}
	if f.parallelism < 0 || f.parallelism > maxParallelism {
		fmt.Fprintf(o.Stderr, "weir run: --parallelism %d is out of range: use 1..%d (0, the default, is all cores)\n", f.parallelism, maxParallelism)
		return ExitUsage
	}
	var now time.Time
	if f.now != "" {
		if !f.deterministic {
			fmt.Fprintln(o.Stderr, "weir run: --now needs --deterministic")
			return ExitUsage
		}
		var err error
		if now, err = parseNow(f.now); err != nil {
			fmt.Fprintf(o.Stderr, "weir run: --now %q: use an RFC 3339 time such as 2026-01-01T00:00:00Z or Unix milliseconds\n", f.now)
			return ExitUsage
		}
	} else if f.deterministic {
		now = time.Now().UTC().Truncate(time.Millisecond)
		if f.instance == "" && f.stateDir == "" { // group mode refuses it below
			fmt.Fprintf(o.Stderr, "processing time is fixed at %s (--now)\n", now.Format(time.RFC3339Nano))
		}
	}
	p, ok := loadSpec(path, o)
	if !ok {
		return ExitUsage
	}
	printWarnings(path, p, o)
	if f.interval < 0 {
		fmt.Fprintln(o.Stderr, "weir run: --checkpoint-interval must be positive, such as 5s")
		return ExitUsage
	}
	specDir := filepath.Dir(o.path(path))
	emptyName := false // --instance "" given: a bad name, not no name
	fs.Visit(func(fl *flag.Flag) { emptyName = emptyName || fl.Name == "instance" && f.instance == "" })
	if emptyName {
		fmt.Fprintf(o.Stderr, "weir run: %v\n", group.CheckInstance(""))
		return ExitUsage
	}
	if f.instance != "" || f.stateDir != "" {
		var single []string // flags of single-process mode that were given
		fs.Visit(func(fl *flag.Flag) {
			switch fl.Name {
			case "parallelism", "restarts":
				single = append(single, "--"+fl.Name)
			}
		})
		if len(single) > 0 {
			fmt.Fprintf(o.Stderr, "weir run: %s: not supported in group mode (a member runs each task at parallelism 1 and restarts a failed task itself)\n", strings.Join(single, ", "))
			return ExitUsage
		}
		return runMember(ctx, p, specDir, f, o)
	}
	if err := group.CheckSingle(ctx, p); err != nil {
		fmt.Fprintf(o.Stderr, "weir run: refused: %v\n", err)
		return ExitUsage
	}
	return runPlan(ctx, p, specDir, f, now, o)
}

// runMember runs the job as one member of its group (weir run
// --instance NAME --state-dir DIR) until it is stopped (SIGINT or
// SIGTERM: it commits and leaves the group) or, with stop_at_end, until
// every task of the group read its input to the end.
func runMember(ctx context.Context, p *spec.Plan, dir string, f runFlags, o IO) int {
	stopAdmin := func() {}
	refuse := func(msg string) int {
		fmt.Fprintf(o.Stderr, "weir run: %s\n", msg)
		return ExitUsage
	}
	switch {
	case f.instance == "":
		return refuse("--state-dir is group mode's: give the member's name with --instance too")
	case f.stateDir == "":
		return refuse("--instance needs --state-dir: the member keeps its tasks' state there")
	case f.checkpointDir != "" || f.interval != 0:
		return refuse("--checkpoint-dir and --checkpoint-interval are single-process mode's: in group mode the changelog topic holds each task's state, committed with its outputs")
	case f.fresh || f.appendRuns:
		return refuse("--fresh and --append are single-process mode's: a group member never resets shared outputs; reset the group with weir reset")
	case f.deterministic || f.drain:
		return refuse("--deterministic and --drain are single-process mode's")
	}
	if err := group.CheckInstance(f.instance); err != nil {
		return refuse(err.Error())
	}
	if err := group.Check(p); err != nil {
		return refuse("group mode: " + err.Error())
	}
	ro := job.RunOptions{Dir: dir, Stdout: o.Stdout,
		Warn:   func(msg string) { fmt.Fprintln(o.Stderr, "warning:", msg) },
		Logger: slog.New(warnHandler{w: o.Stderr}),
		Info:   func(msg string) { fmt.Fprintln(o.Stderr, msg) },
	}
	began := time.Now()
	var sum *job.Summary
	// A member's state is its tasks', which it does not sum: the summary
	// line leaves the peak out.
	noPeak := weir.StateInfo{Bytes: -1}
	var reg *prometheus.Registry
	var serve func(group.Served) error
	if f.http != "" {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		serve = func(m group.Served) error {
			srv, err := admin.Start(admin.Options{Addr: f.http, Gatherer: reg, Registerer: reg, Group: m.Status, GroupHealth: m.Health, Thresholds: doctorThresholds(p),
				Logger: slog.New(warnHandler{w: o.Stderr})})
			if err != nil {
				return fmt.Errorf("--http: %w", err)
			}
			stopAdmin = func() { srv.Close() }
			fmt.Fprintf(o.Stderr, "the group's dashboard at http://%s/ (metrics at /metrics)\n", srv.Addr())
			return nil
		}
	}
	defer func() { stopAdmin() }()
	opts := group.Options{Plan: p, Instance: f.instance, StateDir: o.path(f.stateDir), Run: ro, Logger: ro.Logger, Info: ro.Info, Serve: serve, StallAfter: o.StuckAfter,
		Crash: crashHook(o.Getenv), Summary: func(s job.Summary) { sum = &s },
		Stopped: func(tasks []int32, s job.Summary, others []string) {
			goesOn := "the group goes on"
			switch {
			case others == nil:
			case len(others) == 0:
				goesOn = "no other member runs: the group's tasks wait, with their state, for the next member"
			default:
				goesOn = fmt.Sprintf("the group goes on with %s", strings.Join(others, ", "))
			}
			printSummary(o.Stderr, p, s, time.Since(began), noPeak, fmt.Sprintf("stopped on member %s: its tasks %v, counted from the group's start; %s", f.instance, tasks, goesOn), -1)
		}}
	if reg != nil {
		opts.Registerer = reg
	}
	defer monitor.WatchPauses()() // the member's stall checks leave out the time it did not run
	err := group.Run(ctx, opts)
	stopAdmin() // the status reads Kafka through the member, which is gone
	stopAdmin = func() {}
	if errors.Is(err, group.ErrRefused) {
		fmt.Fprintf(o.Stderr, "weir run: refused: %v\n", err)
		return ExitUsage
	}
	if err != nil {
		fmt.Fprintf(o.Stderr, "weir run: %v\n", err)
		return ExitFailed
	}
	if sum != nil {
		// The group's: every task's counts at its end, whichever member ran it.
		printSummary(o.Stderr, p, *sum, time.Since(began), noPeak, "finished (the whole group)", -1)
		if f.summaryJSON != "" {
			if err := os.WriteFile(o.path(f.summaryJSON), sum.JSON(), 0o644); err != nil {
				fmt.Fprintf(o.Stderr, "weir run: %v\n", err)
				return ExitFailed
			}
		}
		if !sum.Conserved() {
			fmt.Fprintln(o.Stderr, "weir run: conservation violated (a bug in weir; please report it with the input)")
			return ExitFailed
		}
	}
	fmt.Fprintf(o.Stderr, "member %s stopped\n", f.instance)
	return ExitOK
}

// parsePaths parses flags that may come before or after the paths (the
// spec files); false: a flag was refused (fs has printed why).
func parsePaths(fs *flag.FlagSet, args []string) ([]string, bool) {
	var paths []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return nil, false
		}
		if fs.NArg() == 0 {
			break
		}
		paths = append(paths, fs.Arg(0))
		args = fs.Args()[1:]
	}
	return paths, true
}

// onePath parses flags and the one spec path among them; with none or
// several it prints the usage and reports false.
func onePath(fs *flag.FlagSet, args []string) (string, bool) {
	paths, ok := parsePaths(fs, args)
	if ok && len(paths) != 1 {
		fs.Usage()
		ok = false
	}
	if !ok {
		return "", false
	}
	return paths[0], true
}

func parseNow(s string) (time.Time, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms).UTC(), nil
	}
	return time.Parse(time.RFC3339Nano, s)
}

// maxParallelism bounds --parallelism: the key groups a job has at most
// (weir.Options.MaxParallelism), each subtask holding one or more.
const maxParallelism = 32768

// runPlan runs a validated plan and prints its summary.
func runPlan(ctx context.Context, p *spec.Plan, dir string, f runFlags, now time.Time, o IO) int {
	var stopping atomic.Bool
	cpDir := ""
	if f.checkpointDir != "" {
		cpDir = o.path(f.checkpointDir)
	}
	ro := job.RunOptions{
		Dir: dir, Stdin: o.Stdin, Stdout: o.Stdout,
		Deterministic: f.deterministic, Now: now, Parallelism: f.parallelism,
		Stop: stopping.Load, Drain: f.drain,
		Warn:          func(msg string) { fmt.Fprintln(o.Stderr, "warning:", msg) },
		Logger:        slog.New(warnHandler{w: o.Stderr}),
		Info:          func(msg string) { fmt.Fprintln(o.Stderr, msg) },
		CheckpointDir: cpDir, CheckpointInterval: f.interval, Fresh: f.fresh, Append: f.appendRuns,
		Crash: crashHook(o.Getenv),
	}
	// The job of the current attempt (a restart opens a new one).
	var cur atomic.Pointer[job.Job]
	var ready = make(chan struct{})
	var readyOnce sync.Once
	var restores atomic.Int64         // attempts opened from a checkpoint
	var first atomic.Pointer[job.Job] // the job as this process first opened it
	onOpen := func(j *job.Job) {
		if !j.RestoredAt().IsZero() {
			restores.Add(1)
		}
		cur.Store(j)
		first.CompareAndSwap(nil, j)
		readyOnce.Do(func() { close(ready) })
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			how := "open windows stay unfired and are counted"
			if f.drain {
				how = "sending the final watermark first (--drain)"
			}
			fmt.Fprintf(o.Stderr, "\nstopping: %s; Ctrl-C (or SIGTERM) again to abort\n", how)
			if j := cur.Load(); j != nil {
				if id := j.Checkpoint(10 * time.Second); id > 0 {
					fmt.Fprintf(o.Stderr, "took checkpoint %d: the next run resumes from it\n", id)
					if f.drain {
						fmt.Fprintf(o.Stderr, "(what the final watermark fires now comes after checkpoint %d: a run resumed from it removes those results and fires their windows again when their time comes; --drain ends a job for good)\n", id)
					}
				}
			}
			stopping.Store(true)
		case <-done:
		}
	}()
	if f.http != "" {
		addr, stop, err := serveAdmin(f.http, p, cur.Load, restores.Load, o)
		if err != nil {
			fmt.Fprintf(o.Stderr, "weir run: --http: %v\n", err)
			return ExitUsage
		}
		if f.serving != nil {
			f.serving(addr, stop)
		} else {
			defer stop()
		}
	}
	if !f.deterministic {
		// A deterministic run's processing time stands still: its
		// summary gives the too-late records, which the wall clock's
		// intervals would cut at random.
		stopWatch := watchLate(p, cur.Load, o)
		defer stopWatch()
	}
	stopStuck := watchStuck(cur.Load, o)
	defer stopStuck()
	if o.Terminal {
		every := o.ProgressEvery
		if every <= 0 {
			every = 500 * time.Millisecond
		}
		stopProgress := showProgress(cur.Load, ready, o.Stderr, every)
		defer stopProgress()
	}
	began := time.Now()
	policy := job.RestartPolicy{Max: f.restarts, Backoff: time.Second, OnReopen: func(cause error) {
		fmt.Fprintf(o.Stderr, "weir run: %s\n", trimDir(cause, o))
	}, OnRestart: func(n int, cause error) {
		fmt.Fprintf(o.Stderr, "weir run: the job failed (%s); restart %d of %d from its newest checkpoint\n", trimDir(cause, o), n, f.restarts)
	}}
	sum, err := job.RunRestarting(context.WithoutCancel(ctx), p, ro, policy, onOpen)
	if errors.Is(err, connector.ErrInputChanged) {
		// A resume refused at its input (a rewritten file, a recreated
		// topic): nothing ran, so no summary of restored counters.
		fmt.Fprintf(o.Stderr, "weir run: refused: %s\n", trimDir(err, o))
		return ExitUsage
	}
	if len(sum.Counters) == 0 {
		fmt.Fprintf(o.Stderr, "weir run: %s\n", trimDir(err, o))
		return ExitUsage
	}
	if j := cur.Load(); errors.Is(err, weir.ErrNotStarted) && j != nil && !j.RestoredAt().IsZero() {
		// A resume that failed before it ran (a source's server down)
		// has no counts of its own, and the checkpoint's are not
		// restored: a summary of them would contradict itself.
		fmt.Fprintf(o.Stderr, "job %s failed before it resumed from its checkpoint of %s: it read nothing, and its counts stand as that checkpoint holds them (weir run resumes from it again)\n",
			p.Name, j.RestoredAt().UTC().Format(time.RFC3339))
		if f.summaryJSON != "" {
			if werr := os.WriteFile(o.path(f.summaryJSON), []byte("{\"not_started\":1}\n"), 0o644); werr != nil {
				fmt.Fprintf(o.Stderr, "weir run: %v\n", werr)
			}
		}
		fmt.Fprintf(o.Stderr, "weir run: job failed: %s\n", trimDir(err, o))
		return ExitFailed
	}
	elapsed := time.Since(began)
	var peak weir.StateInfo
	if j := cur.Load(); j != nil {
		peak = j.State().Peak
	}
	state := "finished"
	dead := allDead(sum)
	switch {
	case err != nil || dead != "":
		state = "failed"
	case stopping.Load():
		state = "stopped"
	}
	var resumedAt int64 // records earlier processes of the run read
	if j := first.Load(); j != nil {
		resumedAt = j.ResumedRecords()
	}
	printSummary(o.Stderr, p, sum, elapsed, peak, state, resumedAt)
	if f.summary != nil {
		*f.summary = sum
	}
	if f.summaryJSON != "" {
		if werr := os.WriteFile(o.path(f.summaryJSON), sum.JSON(), 0o644); werr != nil {
			fmt.Fprintf(o.Stderr, "weir run: %v\n", werr)
			return ExitFailed
		}
	}
	if err != nil {
		fmt.Fprintf(o.Stderr, "weir run: job failed: %s\n", trimDir(err, o))
		return ExitFailed
	}
	if !sum.Conserved() {
		fmt.Fprintln(o.Stderr, "weir run: conservation violated (a bug in weir; please report it with the input)")
		return ExitFailed
	}
	if dead != "" {
		fmt.Fprintf(o.Stderr, "weir run: the job failed: %s\n", dead)
		return ExitFailed
	}
	return ExitOK
}

// allDead says why, when every record of a run that read some became a
// dead letter (empty otherwise): the most common reason with its first
// detail, and the missing field's warning if the field watch found one.
func allDead(s job.Summary) string {
	in := s.Get("records_in")
	if in == 0 || s.Get("dead_letter") != in {
		return ""
	}
	var top string
	var n int64
	for _, c := range s.Counters {
		if r, ok := strings.CutPrefix(c.Name, "dead_letter_"); ok && c.Value > n {
			top, n = r, c.Value
		}
	}
	why := fmt.Sprintf("every one of the %d records became a dead letter, %d of them %s", in, n, top)
	if d := s.FirstDead[top]; d != "" {
		why += " (the first: " + d + ")"
	}
	for _, f := range s.Fields {
		if f.Fatal() {
			why += "; " + f.String()
			break
		}
	}
	return why
}

// printUnchanged says how many early and late firings (of the window
// where names) were skipped as unchanged (W20), for a window that skips
// them (skip).
func printUnchanged(w io.Writer, skip bool, n int64, where string) {
	if skip {
		fmt.Fprintf(w, "  unchanged: %d early or late firings%s skipped, their results equal to the last written (skip_unchanged)\n", n, where)
	}
}

// printSummary prints what the run did; state is how it ended:
// finished, stopped or failed; resumedAt the records an earlier process
// of the run had read (its checkpoint's records_in), which the rate
// leaves out (negative: a group member's, whose counts are the group's
// and whose line gives no rate). Every line but the "took" line (time
// and state size) is a pure function of the counters, so golden tests
// can compare it.
func printSummary(w io.Writer, p *spec.Plan, s job.Summary, elapsed time.Duration, peak weir.StateInfo, state string, resumedAt int64) {
	g := s.Get
	fmt.Fprintf(w, "job %s %s: %d records in\n", p.Name, state, g("records_in"))
	if ws := s.Windows(); len(ws) > 0 {
		printWindows(w, s, ws)
		printRate(w, g("records_in"), elapsed, peak, resumedAt)
		return
	}
	if slices.ContainsFunc(p.Graph.Nodes, func(n spec.Node) bool { _, ok := n.Op.(*spec.SelectOp); return ok }) {
		printSelect(w, s)
		printRate(w, g("records_in"), elapsed, peak, resumedAt)
		return
	}
	fmt.Fprintf(w, "  on time (within the out-of-orderness bound): %d records; window firings %d early, %d on time\n", g("accepted")-g("accepted_late")-g("on_time_trailing"), g("fired_early"), g("fired_on_time"))
	if n := g("on_time_trailing"); n > 0 {
		fmt.Fprintf(w, "  on time only because the watermark trailed: %d records more than the bound out of order, in windows the bound's watermark would have closed\n", n)
	}
	if p.FinalTrigger() {
		// The final trigger fires each window once, at its cleanup:
		// after its end, so late by timing, but no re-firing.
		fmt.Fprintf(w, "  allowed lateness: %d late records accepted; the final trigger fired %d windows once each, at their cleanup\n", g("accepted_late"), g("fired_late"))
	} else {
		fmt.Fprintf(w, "  allowed lateness: %d late records accepted, %d late re-firings with the full updated result\n", g("accepted_late"), g("fired_late"))
	}
	printUnchanged(w, s.Has("unchanged_firings"), g("unchanged_firings"), "")
	fmt.Fprintf(w, "  too late: %d to the side output, %d dropped and counted\n", g("late_side_output"), g("late_dropped"))
	if m := g("window_misses"); m > 0 {
		kept := fmt.Sprintf("%d to late_partial", g("late_partial"))
		switch {
		case p.Sinks.LatePartial != nil:
		case g("late_partial") > 0:
			kept = fmt.Sprintf("%d kept by the side output, with their reason", g("late_partial")) // a ledger
		default:
			kept = "counted, none kept: no sinks.late_partial"
		}
		fmt.Fprintf(w, "  partial misses: %d window assignments missed by accepted records (%s)\n", m, kept)
	}
	printDeadLetters(w, s)
	for _, f := range s.Fields {
		fmt.Fprintf(w, "  warning: %s\n", f)
	}
	open := fmt.Sprint(g("open_windows"))
	if past := s.PastWindows; past != nil && g("open_windows") > 0 && p.Lateness > 0 {
		open += fmt.Sprintf(" (%d still open, %d fired and kept only for the allowed lateness)", g("open_windows")-*past, *past)
	}
	fmt.Fprintf(w, "  results: %d lines (%d retractions); open windows at the end: %s\n", g("results"), g("retractions"), open)
	if p.Time == spec.ProcessingTime && g("open_windows") > 0 && state == "finished" {
		// Rule J2: the end of a bounded input fires no processing-time
		// window; a clock's timer does.
		fmt.Fprintf(w, "  warning: %d processing-time windows were still open when the input ended and were not fired (rule J2: an input's end is no time on the clock); their records are in no result: let the job run past the windows' ends (source.nexmark.linger for the nexmark source, a follow or Kafka source for others), or window by event time\n", g("open_windows"))
	}
	if s.Has("having_filtered") {
		fmt.Fprintf(w, "  having: %d results dropped by the having, not written\n", g("having_filtered"))
	}
	if n := g("decimal_overflow"); n > 0 {
		how := "were computed in float64 from there"
		for i := range p.Aggregates {
			if p.NullOnOverflow(i) {
				how = "are null where they sum a field declared a DECIMAL (source.decimals, a SQL DECIMAL column), or were computed in float64 from there"
				break
			}
		}
		fmt.Fprintf(w, "  warning: %d sums or averages in results went beyond 38 digits and %s (decimal_overflow)\n", n, how)
	}
	if n := g("float_overflow"); n > 0 {
		fmt.Fprintf(w, "  warning: %d sums or averages in results went beyond float64 and were written as null (float_overflow)\n", n)
	}
	if n := g("timestamp_regressions"); n > 0 {
		fmt.Fprintf(w, "  warning: %d records jumped back more than 1h in event time within their channel (upstream clock?)\n", n)
	}
	printRunWarnings(w, s)
	fmt.Fprintf(w, "  conservation %s: %d in = %d accepted (on time or late) + %d side output + %d dropped + %d dead letters%s\n",
		conservedMark(s), g("records_in"), g("accepted"), g("late_side_output"), g("late_dropped"), g("dead_letter"), filteredTerm(s))
	printRate(w, g("records_in"), elapsed, peak, resumedAt)
}

// printRunWarnings warns of the records the source lost before the job
// read them (lost_before_read: they are in no term of conservation), of
// those read far ahead of the clock (future_dated) and of the NULLs
// expressions gave where Flink fails the job.
func printRunWarnings(w io.Writer, s job.Summary) {
	if n := s.Get("lost_before_read"); n > 0 {
		fmt.Fprintf(w, "  warning: %d records were lost before this job read them: the source removed them (retention, or a deletion) after the position it resumed at (lost_before_read; the run that found them warned of where), so they are in no count below\n", n)
	}
	if n := s.Get("future_dated"); n > 0 {
		fmt.Fprintf(w, "  warning: %d records were read with timestamps far ahead of the clock (future_dated; the run's first warning says how far): the watermark ran ahead with them, so records of the time in between may have been judged late; check the producer's clock, or lower source.timestamp.max_future\n", n)
	}
	if n := s.Get("over_earlier_runs"); n > 0 {
		fmt.Fprintf(w, "  warning: %d results of windows within the time earlier runs kept in the outputs (--append) cover (over_earlier_runs): each replaced an earlier run's row of its key and window, if there was one, with this run's records alone; give each run's input whole windows\n", n)
	}
	if n, d := s.Get("null_cast_invalid"), s.Get("null_division_by_zero"); n+d > 0 {
		fmt.Fprintf(w, "  warning: expressions gave NULL where Flink fails the job (or gives a DOUBLE's Infinity): %d casts of a value not of the type (null_cast_invalid), %d divisions by zero (null_division_by_zero)\n", n, d)
	}
}

// printRate prints the summary's last line: the time, the rate over the
// records this process read (in less those read before a resume) and the
// state's peak (left out when peak.Bytes is negative: unknown). A
// negative resumedAt marks a group member's summary: the time alone.
func printRate(w io.Writer, in int64, elapsed time.Duration, peak weir.StateInfo, resumedAt int64) {
	if resumedAt < 0 {
		// A group member's: the counts are the group's, the time its own.
		fmt.Fprintf(w, "took %v (this member's time; the counts above are the whole group's, so no rate)\n", elapsed.Round(time.Millisecond))
		return
	}
	read := in - resumedAt
	rate := fmt.Sprintf("%.0f records/s", float64(read)/max(elapsed.Seconds(), 1e-9))
	if r := float64(read) / max(elapsed.Seconds(), 1e-9); read > 0 && r < 10 {
		rate = fmt.Sprintf("%.2g records/s", r) // a slow live stream: not "0 records/s"
	}
	if resumedAt > 0 {
		rate += fmt.Sprintf(" over the %d records this process read; %d before the resume, as of the checkpoint it resumed from", read, resumedAt)
	}
	if peak.Bytes < 0 {
		fmt.Fprintf(w, "took %v (%s)\n", elapsed.Round(time.Millisecond), rate)
		return
	}
	fmt.Fprintf(w, "took %v (%s); window state peak %s in %d windows\n", elapsed.Round(time.Millisecond), rate, outfmt.Bytes(peak.Bytes), peak.OpenWindows)
}

// warnHandler prints the engine's warnings and errors (a state budget
// passed, a failed checkpoint) as "warning: message (key=value ...)" lines
// and drops the rest.
type warnHandler struct {
	w     io.Writer
	attrs []slog.Attr
}

func (h warnHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h warnHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	if r.Level >= slog.LevelError {
		b.WriteString("error: ")
	} else {
		b.WriteString("warning: ")
	}
	b.WriteString(r.Message)
	sep := " ("
	add := func(a slog.Attr) bool {
		fmt.Fprintf(&b, "%s%s=%v", sep, a.Key, a.Value)
		sep = " "
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	if sep == " " {
		b.WriteString(")")
	}
	b.WriteString("\n")
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h warnHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return warnHandler{w: h.w, attrs: append(slices.Clip(h.attrs), as...)}
}

func (h warnHandler) WithGroup(string) slog.Handler { return h }

// showProgress redraws one status line on w every interval, for the job
// that job returns (once ready is closed); the returned function stops it
// and clears the line.
func showProgress(cur func() *job.Job, ready <-chan struct{}, w io.Writer, every time.Duration) (stop func()) {
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		began := time.Now()
		var last int64
		lastAt := began
		for {
			select {
			case <-quit:
				fmt.Fprint(w, "\r\033[K")
				return
			case now := <-t.C:
				select {
				case <-ready:
				default:
					continue
				}
				pr := cur().Progress()
				rate := float64(pr.RecordsIn-last) / now.Sub(lastAt).Seconds()
				last, lastAt = pr.RecordsIn, now
				wm, lag := "none yet", "-"
				if pr.Watermark != etime.MinTime && pr.Watermark != etime.MaxTime {
					wm = pr.Watermark.Wall().Format(time.RFC3339)
					lag = time.Since(pr.Watermark.Wall()).Round(time.Second).String()
				} else if pr.Watermark == etime.MaxTime {
					wm, lag = "end", "0s"
				}
				fmt.Fprintf(w, "\r\033[K%d records (%.0f/s)  watermark %s  lag %s  late re-fires %d  side output %d  dead letters %d  state %s in %d windows",
					pr.RecordsIn, rate, wm, lag, pr.LateFired, pr.SideOutput, pr.DeadLetters, outfmt.Bytes(pr.State.Bytes), pr.State.OpenWindows)
			}
		}
	}()
	return func() { close(quit); <-finished }
}

// crashHook implements WEIR_TEST_CRASH=<point>:<n> for crash tests: the
// process kills itself (SIGKILL, no cleanup) the n-th time checkpointing
// reaches the named point (part-written, before-manifest, after-manifest,
// after-retain, sink-committed).
func crashHook(getenv func(string) string) func(point string) {
	if getenv == nil {
		return nil
	}
	spec := getenv("WEIR_TEST_CRASH")
	point, nth, ok := strings.Cut(spec, ":")
	n, err := strconv.Atoi(nth)
	if !ok || err != nil || n <= 0 {
		return nil
	}
	var hits atomic.Int64
	return func(p string) {
		if p == point && hits.Add(1) == int64(n) {
			killSelf()
		}
	}
}

// serveAdmin starts the admin server of a running job (metrics, the
// monitor's API) and the monitor's sampling; it returns the address it
// listens on, and stop, which ends both.
func serveAdmin(addr string, p *spec.Plan, cur func() *job.Job, restores func() int64, o IO) (at string, stop func(), err error) {
	var ratio lateRatio
	env := func() *weir.Env {
		if j := cur(); j != nil {
			return j.Env()
		}
		return nil
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		metrics.NewCollector(env, metrics.Options{ExtraDescs: []*prometheus.Desc{restoresDesc, restoreLastDesc, lateRatioDesc, lateWarnDesc, lateCritDesc, sinkCallDesc}, Extra: func(ch chan<- prometheus.Metric) {
			sinkCallAges(cur(), ch)
			ch <- prometheus.MustNewConstMetric(lateRatioDesc, prometheus.GaugeValue, ratio.since(cur()))
			ch <- prometheus.MustNewConstMetric(lateWarnDesc, prometheus.GaugeValue, p.LateRatioWarn)
			ch <- prometheus.MustNewConstMetric(lateCritDesc, prometheus.GaugeValue, p.LateRatioCrit)
			ch <- prometheus.MustNewConstMetric(restoresDesc, prometheus.CounterValue, float64(restores()))
			last := math.NaN()
			if j := cur(); j != nil && !j.RestoredAt().IsZero() {
				last = float64(j.RestoredAt().UnixMilli()) / 1000
			}
			ch <- prometheus.MustNewConstMetric(restoreLastDesc, prometheus.GaugeValue, last)
		}}))
	mon := monitor.New(monitor.Options{Info: jobInfo(p), Env: env, Sinks: sinkCalls(cur), StuckAfter: o.StuckAfter, Extra: func() monitor.Extra {
		j := cur()
		if j == nil {
			return monitor.Extra{}
		}
		x := monitor.Extra{Counters: j.Counters(), RestoredAt: j.RestoredAt()}
		for _, f := range j.FieldWarnings() {
			x.MissingFields = append(x.MissingFields, monitor.MissingField{Field: f.Field, Path: f.Path, Records: f.Records, Effect: f.Effect, Fatal: f.Fatal(), Fix: f.Fix})
		}
		for _, l := range j.RecentLate() {
			why := "too late for every window it belongs to (beyond the allowed lateness)"
			if l.Reason == "window_expired_partial" {
				why = "too late for some of its windows; counted in the others"
			}
			x.RecentLate = append(x.RecentLate, monitor.LateEntry{ID: l.ID, Key: l.Key, TS: int64(l.TS), Watermark: int64(l.Watermark),
				LatenessMS: l.LatenessMS, Windows: l.Windows, Why: l.Reason + ": " + why})
		}
		return x
	}})
	srv, err := admin.Start(admin.Options{Addr: addr, Gatherer: reg, Registerer: reg, Monitor: mon, Thresholds: doctorThresholds(p),
		Logger: slog.New(warnHandler{w: o.Stderr})})
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		mon.Run(ctx)
	}()
	fmt.Fprintf(o.Stderr, "dashboard at http://%s/ (metrics at /metrics)\n", srv.Addr())
	return srv.Addr(), func() {
		cancel()
		<-sampled
		srv.Close()
	}, nil
}

// lateRatio computes the share of too-late records since the previous
// scrape.
type lateRatio struct {
	mu   sync.Mutex
	d    lateDelta
	last float64
}

// since returns the share of too-late records in the input since the
// previous call (NaN before any input; the last value while none came).
func (r *lateRatio) since(j *job.Job) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if j == nil {
		return math.NaN()
	}
	dl, di, fresh := r.d.next(j)
	if fresh {
		r.last = math.NaN()
	}
	if di > 0 {
		r.last = float64(dl) / float64(di)
	}
	return r.last
}

// lateDelta follows a job's too-late records and records in from one
// call to the next.
type lateDelta struct {
	job      *job.Job
	late, in int64
}

// next returns the too-late records and records in since the previous
// call; fresh says j is a new attempt (its counts are taken from zero).
func (d *lateDelta) next(j *job.Job) (dl, di int64, fresh bool) {
	late, in := lateShare(j)
	if fresh = j != d.job; fresh {
		d.job, d.late, d.in = j, 0, 0
	}
	dl, di = late-d.late, in-d.in
	d.late, d.in = late, in
	return dl, di, fresh
}

var (
	lateRatioDesc = prometheus.NewDesc("weir_late_ratio",
		"Too-late records (side output and dropped) as a share of the records in since the previous scrape; NaN before any input.", nil, nil)
	lateWarnDesc = prometheus.NewDesc("weir_late_ratio_warning",
		"The spec's warning level for weir_late_ratio (alerts.late_ratio).", nil, nil)
	lateCritDesc = prometheus.NewDesc("weir_late_ratio_critical",
		"The spec's critical level for weir_late_ratio (alerts.late_ratio_critical).", nil, nil)
	restoresDesc = prometheus.NewDesc("weir_restores_total",
		"Times the job was opened from a checkpoint in this process (a resume at start, or a restart after a failure).", nil, nil)
	restoreLastDesc = prometheus.NewDesc("weir_restore_last_timestamp_seconds",
		"When the running attempt was restored from a checkpoint (Unix seconds); NaN if it started fresh.", nil, nil)
)

// lateShare is the job's too-late records and records in so far.
func lateShare(j *job.Job) (late, in int64) {
	c := j.Counters()
	return c["late_side_output"] + c["late_dropped"], c["records_in"]
}

// watchLate warns when the share of too-late records over the last
// interval crosses the spec's alert levels (alerts.late_ratio and
// late_ratio_critical), once per crossing, and when it falls back; stop
// ends the watch.
func watchLate(p *spec.Plan, cur func() *job.Job, o IO) (stop func()) {
	every := o.LateEvery
	if every <= 0 {
		every = 10 * time.Second
	}
	var d lateDelta
	level := 0 // 0 normal, 1 warning, 2 critical
	return watchJob(cur, every, func(j *job.Job) {
		dl, di, fresh := d.next(j)
		if fresh || di <= 0 { // a new attempt: counts start where it restored
			return
		}
		now := lateLevel(p, dl, di)
		switch {
		case now > level:
			warnLate(o.Stderr, p, now, dl, di, fmt.Sprintf("over the last %v", every))
		case now == 0 && level > 0:
			fmt.Fprintf(o.Stderr, "too-late records are back to %.2f%% of the input (%d of %d over the last %v)\n", 100*float64(dl)/float64(di), dl, di, every)
		}
		level = now
	})
}

// watchStuck warns on stderr when a checkpoint or a sink call has been in
// progress for o.StuckAfter (default 10s) or longer (a sink's server
// down, a table locked), once per stall, and says when it goes on again;
// stop ends the watch.
func watchStuck(cur func() *job.Job, o IO) (stop func()) {
	after := o.StuckAfter
	if after <= 0 {
		after = 10 * time.Second
	}
	calls := sinkCalls(cur)
	warned := map[string]time.Time{} // what and name → when it began
	release := monitor.WatchPauses()
	told := time.Now() // the pauses that began by then were told
	stopWatch := watchJob(cur, max(after/5, 20*time.Millisecond), func(j *job.Job) {
		now := time.Now()
		told = monitor.TellPauses(told, after, func(s string) { fmt.Fprintf(o.Stderr, "note: %s\n", s) })
		seen := map[string]bool{}
		for _, st := range monitor.FindStuck(j.Env().CheckpointStats(), calls(), now, after) {
			k := st.What + " " + st.Name
			seen[k] = true
			if _, ok := warned[k]; !ok {
				warned[k] = time.UnixMilli(st.Since)
				fmt.Fprintf(o.Stderr, "warning: %s; the job waits for it with bounded memory and goes on when it answers (a server down or a table locked? weir doctor, with --http, tells more)\n", st.Why)
			}
		}
		for k, since := range warned {
			if !seen[k] {
				delete(warned, k)
				ended := "answered again"
				if strings.HasPrefix(k, "checkpoint ") {
					ended = "ended (completed or failed)"
				}
				fmt.Fprintf(o.Stderr, "%s %s after %s\n", k, ended, now.Sub(since).Round(time.Second))
			}
		}
	})
	return func() { stopWatch(); release() }
}

// watchJob calls fn with the running job (cur's; none yet: skipped) every
// period, on a goroutine of its own that owns what fn keeps between
// calls, until stop, which waits for it.
func watchJob(cur func() *job.Job, period time.Duration, fn func(j *job.Job)) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
			}
			if j := cur(); j != nil {
				fn(j)
			}
		}
	}()
	return func() { close(quit); <-done }
}

// lateLevel is where late too-late records of in records stand against
// the spec's alert levels: 0 normal, 1 warning, 2 critical.
func lateLevel(p *spec.Plan, late, in int64) int {
	switch r := float64(late) / float64(in); {
	case r > p.LateRatioCrit:
		return 2
	case r > p.LateRatioWarn:
		return 1
	}
	return 0
}

// warnLate warns that too-late records (late of in, over what over says)
// are at level (lateLevel; 0 says nothing).
func warnLate(w io.Writer, p *spec.Plan, level int, late, in int64, over string) {
	if level == 0 {
		return
	}
	field, lim := "alerts.late_ratio", p.LateRatioWarn
	if level == 2 {
		field, lim = "alerts.late_ratio_critical", p.LateRatioCrit
	}
	fmt.Fprintf(w, "warning: too-late records were %.2f%% of the input %s (%d of %d), above %s %g%%: an upstream delay, or a watermark that runs ahead of the data (weir doctor tells which)\n",
		100*float64(late)/float64(in), over, late, in, field, 100*lim)
}

// jobInfo is what the monitor judges a job against: its bound, lateness,
// window size (or session gap), idle timeout and watermark interval.
func jobInfo(p *spec.Plan) monitor.JobInfo {
	interval := int64(p.Interval)
	if p.EveryRecord {
		interval = 0
	}
	return monitor.JobInfo{Name: p.Name, BoundMS: int64(max(p.Bound, 0)), LatenessMS: int64(p.Lateness), WindowMS: int64(p.WindowSpan),
		IdleMS: int64(p.IdleTimeout), Parallelism: p.Channels, WatermarkIntervalMS: interval}
}

// printWindows prints the counts of a job of several windows (a join,
// a Top-N, a cascade, several sources), one line per window: what it
// read (its source's records, or the firings of the windows that feed
// it) and what became of them, its firings and results; then the dead
// letters, the results and conservation over them all.
func printWindows(w io.Writer, s job.Summary, ws []string) {
	var results, retractions, open int64
	for _, name := range ws {
		g := func(c string) int64 { return s.Get(name + "." + c) }
		var in, read string
		switch {
		case !s.Has(name + ".records_in"):
			// The job's one source feeds it.
			in = fmt.Sprintf("%d records", s.Get("records_in"))
			read = fmt.Sprintf(" + %d dead letters", s.Get("dead_letter"))
			if s.Has("filtered") {
				read += fmt.Sprintf(" + %d filtered", s.Get("filtered"))
			}
		case !s.Has(name + ".dead_letter"):
			// Windows feed it: it reads their firings.
			in = fmt.Sprintf("%d firings", g("records_in"))
		default:
			// One of the job's sources feeds it.
			in = fmt.Sprintf("%d records", g("records_in"))
			read = fmt.Sprintf(" + %d dead letters", g("dead_letter"))
			if s.Has(name + ".filtered") {
				read += fmt.Sprintf(" + %d filtered", g("filtered"))
			}
		}
		fmt.Fprintf(w, "  window %s: %s in = %d accepted (%d late) + %d side output + %d dropped%s; firings %d early, %d on time, %d late; %d results\n",
			name, in, g("accepted"), g("accepted_late"), g("late_side_output"), g("late_dropped"), read, g("fired_early"), g("fired_on_time"), g("fired_late"), g("results"))
		printUnchanged(w, s.Has(name+".unchanged_firings"), g("unchanged_firings"), " of window "+name)
		results, retractions, open = results+g("results"), retractions+g("retractions"), open+g("open_windows")
	}
	fmt.Fprintf(w, "  dead letters: %d\n", s.Get("dead_letter"))
	fmt.Fprintf(w, "  results: %d lines (%d retractions); open windows at the end: %d\n", results, retractions, open)
	if s.Has("having_filtered") {
		fmt.Fprintf(w, "  having: %d results dropped by a having or a join's where, not written\n", s.Get("having_filtered"))
	}
	printRunWarnings(w, s)
	fmt.Fprintf(w, "  conservation %s in every window: records in = accepted + side output + dropped + dead letters + filtered\n", conservedMark(s))
}

// conservedMark says whether the summary conserves its records.
func conservedMark(s job.Summary) string {
	if !s.Conserved() {
		return "VIOLATED"
	}
	return "holds"
}

// filteredTerm is the conservation line's term of the records the where
// dropped ("" for a job without a where).
func filteredTerm(s job.Summary) string {
	if !s.Has("filtered") {
		return ""
	}
	return fmt.Sprintf(" + %d filtered", s.Get("filtered"))
}

// printDeadLetters prints the dead letters by reason, and the hint of
// the first timestamp in the wrong unit.
func printDeadLetters(w io.Writer, s job.Summary) {
	g := s.Get
	var reasons []string
	for _, c := range s.Counters {
		if r, ok := strings.CutPrefix(c.Name, "dead_letter_"); ok {
			reasons = append(reasons, fmt.Sprintf("%s %d", r, c.Value))
		}
	}
	dl := fmt.Sprint(g("dead_letter"))
	if len(reasons) > 0 {
		dl += " (" + strings.Join(reasons, ", ") + ")"
	}
	fmt.Fprintf(w, "  dead letters: %s\n", dl)
	if h := s.FirstDead["timestamp_unit"]; h != "" {
		fmt.Fprintf(w, "  hint: %d timestamps in the wrong unit; the first: %s\n", g("dead_letter_timestamp_unit"), h)
	}
}

// printSelect prints the counts of a query without a window (a select):
// its rows, one per record read past the where, and its dead letters.
func printSelect(w io.Writer, s job.Summary) {
	g := s.Get
	fmt.Fprintf(w, "  rows: %d, one per record past the where (a query without a window)\n", g("results"))
	printDeadLetters(w, s)
	printRunWarnings(w, s)
	fmt.Fprintf(w, "  conservation %s: %d in = %d rows + %d dead letters%s\n", conservedMark(s), g("records_in"), g("accepted"), g("dead_letter"), filteredTerm(s))
}
