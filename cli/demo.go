package cli

import (
	"bytes"
	"context"
	"database/sql"
	_ "embed"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/spec"
)

// DemoSpec is the job `weir demo` runs.
//
//go:embed demo/orders.yaml
var DemoSpec []byte

// demoCmd runs the built-in orders job: its outputs go to a directory, then
// it explains what each layer of the late-data defence did and how to look
// at the results table.
func demoCmd(ctx context.Context, args []string, o IO) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(o.Stderr)
	dir := fs.String("dir", "weir-demo", "directory for the demo's outputs")
	orders := fs.Int64("orders", 0, "number of orders (default: the spec's 2,000,000)")
	par := fs.Int("parallelism", 0, "parallelism of the window operator (default: all cores)")
	printSpec := fs.Bool("print-spec", false, "print the demo's job spec and exit")
	httpAddr := fs.String("http", "127.0.0.1:0", "serve the live dashboard (and /metrics) here while the demo runs; empty: none")
	keep := fs.Bool("keep-serving", isTerminal(o.Stdout), "after the demo, keep serving the dashboard with the final state until Ctrl-C (default: when the output is a terminal)")
	kafka := fs.Bool("kafka", false, "run the demo through an in-process Kafka: orders produced to a 6-partition topic, results, late orders and dead letters to topics, exactly once")
	procs := fs.Int("processes", 0, "with --kafka: run the job in group mode, by one member and then by this many member processes (at least 2), one of them killed, and compare")
	if err := fs.Parse(args); err != nil {
		return parseExit(err)
	}
	if *printSpec {
		o.Stdout.Write(DemoSpec)
		return ExitOK
	}
	s, err := spec.Load(DemoSpec)
	if err != nil {
		fmt.Fprintln(o.Stderr, "weir demo: embedded spec:", err)
		return ExitFailed
	}
	if *orders > 0 {
		s.Source.Generator.Records = *orders
	}
	p, err := spec.Compile(s)
	if err != nil {
		fmt.Fprintln(o.Stderr, "weir demo: embedded spec:", err)
		return ExitFailed
	}
	out := o.path(*dir)
	if err := os.MkdirAll(out, 0o755); err != nil {
		fmt.Fprintln(o.Stderr, "weir demo:", err)
		return ExitUsage
	}
	// A fresh table and ledger each run, so the demo's numbers are its
	// own (and a backfill folds this run's too-late orders only).
	for _, f := range []string{"results.db", "results.db-wal", "results.db-shm"} {
		os.Remove(filepath.Join(out, f))
	}
	if err := os.RemoveAll(job.LedgerDir(p, out, p.Sinks.Late)); err != nil {
		fmt.Fprintln(o.Stderr, "weir demo:", err)
		return ExitFailed
	}
	// The spec beside its outputs, for weir ledger and weir backfill.
	specText := DemoSpec
	if *orders > 0 {
		specText = bytes.Replace(specText, []byte("records: 2000000"), []byte("records: "+strconv.FormatInt(*orders, 10)), 1)
	}
	if err := os.WriteFile(filepath.Join(out, "demo.yaml"), specText, 0o644); err != nil {
		fmt.Fprintln(o.Stderr, "weir demo:", err)
		return ExitFailed
	}
	g := p.Generator
	fmt.Fprintf(o.Stdout, "weir demo: %d orders from %d users over %v of event time, arriving out of order\n", g.Records, g.Keys, *g.Duration)
	fmt.Fprintf(o.Stdout, "  5m tumbling windows per user; out-of-orderness bound 30s; allowed lateness 10m; early results every 1m\n")
	fmt.Fprintf(o.Stdout, "  (the job spec: weir demo --print-spec)\n\n")
	dash := &demoDashboard{keep: *keep, w: o.Stdout}
	defer dash.stop()
	rf := runFlags{parallelism: *par, http: *httpAddr, serving: dash.serving}
	if *procs != 0 && (!*kafka || *procs < 2) {
		fmt.Fprintln(o.Stderr, "weir demo: --processes needs --kafka and at least 2 processes, such as --kafka --processes 3")
		return ExitUsage
	}
	if *kafka {
		if code := kafkaDemo(ctx, s, p, out, rf, *procs, o); code != ExitOK {
			return code
		}
		dash.wait(ctx)
		return ExitOK
	}
	var sum job.Summary
	rf.summary = &sum
	code := runPlan(ctx, p, out, rf, time.Time{}, IO{Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stdout, Dir: o.Dir})
	if code != ExitOK {
		return code
	}
	fmt.Fprintln(o.Stdout)
	layerShares(o.Stdout, sum)
	if err := demoTable(o.Stdout, filepath.Join(out, "results.db"), int64(p.GenStart)); err != nil {
		fmt.Fprintln(o.Stderr, "weir demo: reading the results:", err)
		return ExitFailed
	}
	rel := *dir
	fmt.Fprintf(o.Stdout, "\nresults are upserted into %s (table order_stats, one row per user and window;\n", filepath.Join(rel, "results.db"))
	fmt.Fprintf(o.Stdout, "late firings overwrote earlier rows, so re-running never double counts). Query it with:\n")
	fmt.Fprintf(o.Stdout, "  sqlite3 %s \"SELECT user_id, window_start, orders, total, firing, pane FROM order_stats ORDER BY window_start, user_id LIMIT 10\"\n", filepath.Join(rel, "results.db"))
	fmt.Fprintf(o.Stdout, "too-late orders (none lost) are in the ledger %s; to count or list them:\n", filepath.Join(rel, "ledger", p.Name))
	fmt.Fprintf(o.Stdout, "  weir ledger stats %s\n", filepath.Join(rel, "demo.yaml"))
	fmt.Fprintf(o.Stdout, "to fold them into their windows (each window's next revision, firing backfill; idempotent) and check the table against the complete answer:\n")
	fmt.Fprintf(o.Stdout, "  weir backfill %s --verify\n", filepath.Join(rel, "demo.yaml"))
	fmt.Fprintf(o.Stdout, "bad records with their reason: %s\n", filepath.Join(rel, "dead_letter.jsonl"))
	dash.wait(ctx)
	return ExitOK
}

// demoDashboard is the demo's dashboard server once it listens. The demo
// itself lasts seconds, too short to look around in, so where a person
// watches (the output is a terminal) or --keep-serving says so, the
// dashboard stays up with the final state after the demo has said
// everything, until Ctrl-C; elsewhere (tests, CI, output to a file or a
// pipe) it stops with the demo, and the line under its address says so,
// so a run that nobody watches never waits.
type demoDashboard struct {
	keep bool
	w    io.Writer
	addr string
	halt func() // nil: not serving (no --http, or stopped)
}

// serving is runFlags.serving: it takes the server over and says under
// its address how long it stays up.
func (d *demoDashboard) serving(addr string, stop func()) {
	d.addr, d.halt = addr, stop
	if d.keep {
		fmt.Fprintln(d.w, "  (it stays up after the demo, with the final state, until Ctrl-C)")
	} else {
		fmt.Fprintln(d.w, "  (it stops when the demo ends; --keep-serving keeps it up until Ctrl-C)")
	}
}

// wait keeps serving until ctx is done when the dashboard is to stay up
// and the demo was not stopped, then stops it.
func (d *demoDashboard) wait(ctx context.Context) {
	if d.halt != nil && d.keep && ctx.Err() == nil {
		fmt.Fprintf(d.w, "\nthe dashboard at http://%s/ keeps serving the final state; Ctrl-C to end\n", d.addr)
		<-ctx.Done()
	}
	d.stop()
}

// stop stops the server if it still serves.
func (d *demoDashboard) stop() {
	if d.halt != nil {
		d.halt()
		d.halt = nil
	}
}

// isTerminal says w is a terminal: a character device other than the
// null device (weir demo >/dev/null must not wait for a Ctrl-C).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
}

// layerShares tells the three layers of late-data defence as shares of
// the input, as the source articles tell the story (docs/SOURCES.md).
func layerShares(w io.Writer, s job.Summary) {
	in := float64(s.Get("records_in"))
	if in == 0 {
		return
	}
	pct := func(n int64) string {
		if x := 100 * float64(n) / in; x > 0 && x < 1 {
			return fmt.Sprintf("%.2f%%", x)
		}
		return fmt.Sprintf("%.1f%%", 100*float64(n)/in)
	}
	onTime := s.Get("accepted") - s.Get("accepted_late")
	fmt.Fprintf(w, "the three layers, as shares of the %d orders:\n", s.Get("records_in"))
	fmt.Fprintf(w, "  1. the out-of-orderness bound: %s on time\n", pct(onTime))
	fmt.Fprintf(w, "  2. the allowed lateness: %s late, each re-firing its window with the full result\n", pct(s.Get("accepted_late")))
	fmt.Fprintf(w, "  3. the side output: %s too late, kept in the ledger for a backfill (%s dropped, %s dead letters)\n\n",
		pct(s.Get("late_side_output")), pct(s.Get("late_dropped")), pct(s.Get("dead_letter")))
}

// demoTable prints the first windows of the results table from the
// generator's start, summed over users.
func demoTable(w io.Writer, path string, start int64) error {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.Query(`SELECT window_start, window_end, COUNT(*), SUM(orders), SUM(total), SUM(pane)
		FROM order_stats WHERE window_start >= ? GROUP BY window_start, window_end ORDER BY window_start LIMIT 3`, start)
	if err != nil {
		return err
	}
	defer rows.Close()
	fmt.Fprintln(w, "first windows in the results table (summed over users):")
	for rows.Next() {
		var start, end, users, orders, total, panes int64
		if err := rows.Scan(&start, &end, &users, &orders, &total, &panes); err != nil {
			return err
		}
		fmt.Fprintf(w, "  %s .. %s  users=%d orders=%d total=%d revisions=%d\n",
			time.UnixMilli(start).UTC().Format("15:04"), time.UnixMilli(end).UTC().Format("15:04"), users, orders, total, panes+users)
	}
	return rows.Err()
}
