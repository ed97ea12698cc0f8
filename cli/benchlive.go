package cli

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/internal/benchutil"
)

// liveConfig is the load of weir bench live: the source articles' job
// (docs/SOURCES.md: orders
// summed per user in tumbling windows with early results, allowed
// lateness and a ledger of too-late records) on the generator paced by
// the wall clock.
type liveConfig struct {
	Rate        int           `json:"rate"`
	Keys        int           `json:"keys"`
	Duration    time.Duration `json:"-"`
	Window      time.Duration `json:"-"`
	Early       time.Duration `json:"-"`
	Lateness    time.Duration `json:"-"`
	Bound       time.Duration `json:"-"`
	Checkpoint  time.Duration `json:"-"`
	AfterFiring bool          `json:"after_firing"`
	// MinPause is checkpoint.min_pause (0: none).
	MinPause    time.Duration `json:"-"`
	TooLate     float64       `json:"too_late_share"`
	Late        float64       `json:"late_share"`
	Sink        string        `json:"sink"`
	Parallelism int           `json:"parallelism"`
}

// spec is the job's YAML, its results to the Kafka broker at addr or to
// the SQLite file live.db (by c.Sink).
//
// The generator delays three bands of records: a tenth by up to the
// bound (on time), Late by more than the bound and at most the bound and
// the lateness together (late when their window has fired: re-fired with
// the full result, never too late),
// and TooLate by more than a window, the lateness and the bound together,
// so that each is too late whatever window it falls in, and goes to the
// ledger. A record's lateness does not depend on how fast the job reads:
// its timestamp and the watermark at its arrival both follow the
// generator's schedule.
func (c liveConfig) spec(addr string) string {
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	tooLate := c.Window + c.Lateness + c.Bound + time.Second
	results := fmt.Sprintf("{type: kafka, brokers: [%s], topic: live-results}", addr)
	if c.Sink == "sqlite" {
		results = "{type: sqlite, path: live.db, table: live}"
	}
	return fmt.Sprintf(`name: live
source:
  type: generator
  generator:
    rate: %d
    duration: %d
    keys: %d
    start: now
    pace: wall
    seed: 1
    disorder:
      - {share: 0.1, min: 0, max: %d}
      - {share: %g, min: %d, max: %d}
      - {share: %g, min: %d, max: %d}
watermark: {type: bounded_out_of_orderness, max_out_of_orderness: %d, interval: 200ms}
key: [user_id]
window: {type: tumbling, size: %d}
allowed_lateness: %d
trigger: {type: continuous, interval: %d}
aggregate:
  - {name: orders, fn: count}
  - {name: total, fn: sum, field: amount}
sinks:
  results: %s
  late: {type: ledger, dir: ledger}
checkpoint: {dir: checkpoints, interval: %d, after_firing: %v, min_pause: %d}
`, c.Rate, ms(c.Duration), c.Keys, ms(c.Bound),
		c.Late, ms(c.Bound)+1, ms(c.Bound)+max(1, ms(c.Lateness)),
		c.TooLate, ms(tooLate), ms(tooLate)+60_000,
		ms(c.Bound), ms(c.Window), ms(c.Lateness), ms(c.Early), results, ms(c.Checkpoint), c.AfterFiring, ms(c.MinPause))
}

// benchLive runs weir bench live: `weir dev kafka` and the job as OS
// processes (the binary given, by default this one), the job's watermark
// sampled from its metrics and its results read as a read_committed
// consumer (or a reader of the SQLite table) sees them, and reports
// whether the job kept up, its peak memory and how long each firing took
// from the watermark passing its time to its last row being visible.
func benchLive(ctx context.Context, args []string, o IO) int {
	fs := flag.NewFlagSet("bench live", flag.ContinueOnError)
	fs.SetOutput(o.Stderr)
	c := liveConfig{}
	fs.IntVar(&c.Rate, "rate", 300_000, "orders per second of the clock (and of event time)")
	fs.DurationVar(&c.Duration, "duration", 5*time.Minute, "how long the generator runs")
	fs.IntVar(&c.Keys, "keys", 200_000, "distinct users")
	fs.DurationVar(&c.Window, "window", 5*time.Minute, "tumbling window size")
	fs.DurationVar(&c.Early, "early", 10*time.Second, "early results every this long of event time (a continuous trigger)")
	fs.DurationVar(&c.Lateness, "lateness", 2*time.Minute, "allowed lateness")
	fs.DurationVar(&c.Bound, "bound", 5*time.Second, "the watermark's out-of-orderness bound")
	fs.DurationVar(&c.Checkpoint, "checkpoint-interval", 10*time.Second, "time between checkpoints: output becomes visible when the checkpoint covering it commits")
	fs.BoolVar(&c.AfterFiring, "after-firing", false, "checkpoint.after_firing: each early or on-time firing asks for a checkpoint at once, so its results commit without waiting for the interval")
	fs.DurationVar(&c.MinPause, "min-pause", 0, "checkpoint.min_pause: the least time from the end of one checkpoint to the start of the next periodic or after-firing one")
	fs.Float64Var(&c.TooLate, "too-late", 0.01, "share of records delayed beyond the lateness (into the ledger)")
	fs.Float64Var(&c.Late, "late", 0.01, "share of records delayed by more than the bound but at most the lateness (late firings)")
	fs.StringVar(&c.Sink, "sink", "kafka", "kafka (exactly once, read back read_committed) or sqlite (a table, read back as committed)")
	fs.IntVar(&c.Parallelism, "parallelism", 0, "the job's window parallelism (0: all cores)")
	binary := fs.String("binary", "", "the weir binary that runs the broker and the job (default: this one)")
	dir := fs.String("dir", "", "keep the job's files here (default: a temporary directory, removed)")
	svg := fs.String("svg", "", "also draw throughput and result latency over the run into this SVG file")
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	fs.Usage = func() {
		fmt.Fprintln(o.Stderr, `usage: weir bench live [--rate 300000] [--duration 5m] [--keys 200000] [--sink kafka|sqlite] [--checkpoint-interval 10s] [--svg FILE] [flags]

Runs the source articles' live load: the generator paced by the clock, per-user
tumbling windows with early results, allowed lateness and a ledger of
too-late records, exactly once to Kafka ('weir dev kafka', an OS process)
or to SQLite. Reports whether the job kept up (its watermark's lag behind
the clock), its peak memory, and for each on-time and early firing the
time from the watermark passing its time until its last row is visible to
a read_committed reader (or in the table).`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return parseExit(err)
	}
	if err := c.validate(); err != nil || fs.NArg() != 0 {
		if err == nil {
			err = fmt.Errorf("%q: bench live takes flags only", fs.Args())
		}
		fmt.Fprintln(o.Stderr, "weir: bench live:", err)
		return ExitUsage
	}
	bin := *binary
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			fmt.Fprintln(o.Stderr, "weir: bench live: finding this binary:", err)
			return ExitFailed
		}
	}
	work := *dir
	if work == "" {
		tmp, err := os.MkdirTemp("", "weir-bench-live-")
		if err != nil {
			fmt.Fprintln(o.Stderr, "weir: bench live:", err)
			return ExitFailed
		}
		defer os.RemoveAll(tmp)
		work = tmp
	} else if err := os.MkdirAll(o.path(work), 0o755); err != nil {
		fmt.Fprintln(o.Stderr, "weir: bench live:", err)
		return ExitFailed
	} else {
		work = o.path(work)
	}
	if !*asJSON {
		pause := ""
		if c.MinPause > 0 {
			pause = fmt.Sprintf(", at least %s apart", c.MinPause)
		}
		fmt.Fprintf(o.Stdout, "live load: %d orders/s for %s, %d users, %s windows, early every %s, lateness %s, %.0f%% too late, results to %s, checkpoints every %s%s%s\n",
			c.Rate, c.Duration, c.Keys, c.Window, c.Early, c.Lateness, c.TooLate*100, c.Sink, c.Checkpoint, map[bool]string{true: " and after each firing"}[c.AfterFiring], pause)
	}
	r, err := runLive(ctx, c, bin, work, o.Stderr)
	if err != nil {
		fmt.Fprintln(o.Stderr, "weir: bench live:", err)
		return ExitFailed
	}
	if *svg != "" {
		if err := os.WriteFile(o.path(*svg), r.svg(), 0o644); err != nil {
			fmt.Fprintln(o.Stderr, "weir: bench live:", err)
			return ExitFailed
		}
	}
	if *asJSON {
		b, _ := json.Marshal(r)
		fmt.Fprintln(o.Stdout, string(b))
	} else {
		r.print(o.Stdout)
	}
	return ExitOK
}

func (c liveConfig) validate() error {
	var bad []string
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"duration", c.Duration}, {"window", c.Window}, {"early", c.Early}, {"bound", c.Bound}, {"checkpoint-interval", c.Checkpoint}} {
		if d.v < time.Millisecond {
			bad = append(bad, fmt.Sprintf("--%s %s: want 1ms or more", d.name, d.v))
		}
	}
	if c.Lateness < 0 {
		bad = append(bad, fmt.Sprintf("--lateness %s: want 0 or more", c.Lateness))
	}
	if c.MinPause < 0 {
		bad = append(bad, fmt.Sprintf("--min-pause %s: want 0 or more", c.MinPause))
	}
	if c.Rate <= 0 || c.Keys <= 0 || c.Parallelism < 0 {
		bad = append(bad, "--rate and --keys want a positive number, --parallelism 0 or more")
	}
	if c.TooLate < 0 || c.Late < 0 || c.TooLate+c.Late > 0.5 {
		bad = append(bad, fmt.Sprintf("--too-late %g and --late %g: want shares of 0 or more, together at most 0.5", c.TooLate, c.Late))
	}
	if c.Sink != "kafka" && c.Sink != "sqlite" {
		bad = append(bad, fmt.Sprintf("--sink %q: want kafka or sqlite", c.Sink))
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}

// wmSample is one reading of the job's metrics.
type wmSample struct {
	At time.Time
	WM int64 // the window operator's watermark (ms; math.MinInt64: none yet)
	In int64 // records the source emitted so far
	// Checkpoints completed so far, the sum of their durations (s) and
	// the newest one's size.
	Checkpoints int64
	CkSeconds   float64
	CkBytes     int64
}

// firingKey names one firing: every row of a window's on-time firing, or
// of its early firing at one interval timer (Boundary: the timer's time,
// for an on-time firing the window's end - 1).
type firingKey struct {
	End      int64
	Early    bool
	Boundary int64
}

// firingSeen is what the reader saw of one firing.
type firingSeen struct {
	Rows        int64
	First, Last time.Time // when its rows first showed, and last grew
}

// liveRun is what the processes and readers of one run gave.
type liveRun struct {
	cfg      liveConfig
	began    time.Time
	trace    []wmSample
	firings  map[firingKey]*firingSeen
	lateRows int64
	jobRSS   int64
	kafkaRSS int64
	summary  map[string]any
}

// runLive starts the broker (for a Kafka sink) and the job, samples and
// reads until the job has ended and its last results are visible.
func runLive(ctx context.Context, c liveConfig, bin, work string, stderr io.Writer) (*liveReport, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	addr := ""
	var broker *exec.Cmd
	if c.Sink == "kafka" {
		port, err := freeLocalPort()
		if err != nil {
			return nil, err
		}
		addr = "127.0.0.1:" + strconv.Itoa(port)
		broker = exec.CommandContext(ctx, bin, "dev", "kafka", "--port", strconv.Itoa(port), "--topic", "live-results:1")
		broker.Stderr = stderr
		if err := broker.Start(); err != nil {
			return nil, fmt.Errorf("starting weir dev kafka: %w", err)
		}
		defer func() { _ = broker.Process.Kill(); _ = broker.Wait() }()
		if err := awaitTCP(ctx, addr, 10*time.Second); err != nil {
			return nil, fmt.Errorf("weir dev kafka: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(work, "job.yaml"), []byte(c.spec(addr)), 0o644); err != nil {
		return nil, err
	}
	port, err := freeLocalPort()
	if err != nil {
		return nil, err
	}
	metricsAt := "127.0.0.1:" + strconv.Itoa(port)
	jobArgs := []string{"run", "job.yaml", "--fresh", "--http", metricsAt, "--summary-json", "summary.json", "--restarts", "0"}
	if c.Parallelism > 0 {
		jobArgs = append(jobArgs, "--parallelism", strconv.Itoa(c.Parallelism))
	}
	jobCmd := exec.CommandContext(ctx, bin, jobArgs...)
	jobCmd.Dir = work
	var jobErr strings.Builder
	jobCmd.Stderr = &jobErr
	run := &liveRun{cfg: c, began: time.Now(), firings: map[firingKey]*firingSeen{}}
	if err := jobCmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the job: %w", err)
	}
	jobDone := make(chan error, 1)
	go func() { jobDone <- jobCmd.Wait() }()

	// The sampler and the reader run until stop; each owns what it
	// collects until its done channel closes.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	var readErr error
	go func() { defer wg.Done(); run.trace = sampleWatermarks(metricsAt, stop) }()
	go func() {
		defer wg.Done()
		var read func(chan struct{}, *liveRun) error
		if c.Sink == "kafka" {
			read = func(stop chan struct{}, r *liveRun) error { return readKafkaResults(addr, stop, r) }
		} else {
			read = func(stop chan struct{}, r *liveRun) error {
				return readSQLiteResults(filepath.Join(work, "live.db"), stop, r)
			}
		}
		readErr = read(stop, run)
	}()
	jerr := <-jobDone
	// The job's last transaction is committed when it exits; give the
	// reader a moment to see it.
	select {
	case <-time.After(2 * time.Second):
	case <-ctx.Done():
	}
	close(stop)
	wg.Wait()
	if jerr != nil {
		return nil, fmt.Errorf("the job failed (%v): %s", jerr, lastLines(jobErr.String(), 8))
	}
	if readErr != nil {
		return nil, fmt.Errorf("reading the results: %w", readErr)
	}
	run.jobRSS = benchutil.PeakRSS(jobCmd.ProcessState)
	if b, err := os.ReadFile(filepath.Join(work, "summary.json")); err == nil {
		_ = json.Unmarshal(b, &run.summary)
	}
	if broker != nil {
		_ = broker.Process.Kill()
		_ = broker.Wait()
		run.kafkaRSS = benchutil.PeakRSS(broker.ProcessState)
	}
	return run.report(), nil
}

// sampleWatermarks reads the job's metrics at metricsAt every 20 ms until
// stop closes, and returns the samples (before the job serves its metrics,
// and after it ended, there are none).
func sampleWatermarks(metricsAt string, stop chan struct{}) []wmSample {
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var out []wmSample
	for {
		select {
		case <-stop:
			return out
		case <-tick.C:
		}
		if s, ok := readMetrics(client, "http://"+metricsAt+"/metrics"); ok {
			out = append(out, s)
		}
	}
}

// readMetrics reads the window operator's watermark (the lowest over its
// subtasks) and the source's records from one scrape.
func readMetrics(client *http.Client, url string) (wmSample, bool) {
	resp, err := client.Get(url)
	if err != nil {
		return wmSample{}, false
	}
	defer resp.Body.Close()
	at := time.Now()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return wmSample{}, false
	}
	s := wmSample{At: at, WM: math.MinInt64}
	if f := fams["weir_operator_watermark_timestamp_seconds"]; f != nil {
		lowest, seen := math.Inf(1), false
		for _, m := range f.GetMetric() {
			op := false
			for _, l := range m.GetLabel() {
				op = op || l.GetName() == "operator" && l.GetValue() == "window"
			}
			if op {
				seen = true
				lowest = math.Min(lowest, m.GetGauge().GetValue()) // NaN (none yet) stays NaN
			}
		}
		if seen && !math.IsNaN(lowest) && !math.IsInf(lowest, 0) {
			s.WM = int64(math.Round(lowest * 1000))
		}
	}
	if f := fams["weir_checkpoint_duration_seconds"]; f != nil && len(f.GetMetric()) > 0 {
		h := f.GetMetric()[0].GetHistogram()
		s.Checkpoints, s.CkSeconds = int64(h.GetSampleCount()), h.GetSampleSum()
	}
	if f := fams["weir_checkpoint_last_size_bytes"]; f != nil && len(f.GetMetric()) > 0 {
		s.CkBytes = int64(f.GetMetric()[0].GetGauge().GetValue())
	}
	if f := fams["weir_source_records_total"]; f != nil {
		for _, m := range f.GetMetric() {
			s.In += int64(m.GetCounter().GetValue())
		}
	}
	return s, true
}

// see records rows of a firing seen at at; the first row of a firing and
// every later one make it Last.
func (r *liveRun) see(end, watermark int64, firing string, rows int64, at time.Time) {
	var k firingKey
	switch firing {
	case "on_time":
		k = firingKey{End: end, Boundary: end - 1}
	case "early":
		e := r.cfg.Early.Milliseconds()
		k = firingKey{End: end, Early: true, Boundary: floorDiv(watermark, e) * e}
	case "late":
		r.lateRows += rows
		return
	default:
		return
	}
	f := r.firings[k]
	if f == nil {
		f = &firingSeen{First: at}
		r.firings[k] = f
	}
	f.Rows += rows
	f.Last = at
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// readKafkaResults reads the results topic read_committed until stop
// closes, noting when each firing's rows arrive.
func readKafkaResults(addr string, stop chan struct{}, r *liveRun) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("live-results"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(50*time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-stop; cancel() }()
	var p fastjson.Parser
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		at := time.Now()
		for _, e := range fs.Errors() {
			if !errors.Is(e.Err, context.Canceled) {
				return fmt.Errorf("reading %s: %w", e.Topic, e.Err)
			}
		}
		fs.EachRecord(func(rec *kgo.Record) {
			v, err := p.ParseBytes(rec.Value)
			if err != nil {
				return
			}
			r.see(v.GetInt64("window_end"), v.GetInt64("watermark"), string(v.GetStringBytes("firing")), 1, at)
		})
	}
	return nil
}

// readSQLiteResults watches the results table until stop closes: after
// each commit (PRAGMA data_version), it counts the rows of each firing,
// and a firing whose count grew was seen then. A firing's rows are later
// overwritten by the window's next firing, so its count only grows while
// its own rows commit.
func readSQLiteResults(path string, stop chan struct{}, r *liveRun) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var db *sql.DB
	defer func() {
		if db != nil {
			db.Close()
		}
	}()
	version := int64(-1)
	counts := map[[3]any]int64{}
	for {
		select {
		case <-stop:
			return nil
		case <-tick.C:
		}
		if db == nil {
			if _, err := os.Stat(path); err != nil {
				continue
			}
			var err error
			// Read only, beside the job's writer (the "sqlite" driver is
			// registered by connector/all).
			u := url.URL{Scheme: "file", Path: filepath.ToSlash(path), RawQuery: "mode=ro&_pragma=busy_timeout(5000)"}
			if db, err = sql.Open("sqlite", u.String()); err != nil {
				return err
			}
			db.SetMaxOpenConns(1)
		}
		var v int64
		if err := db.QueryRow("PRAGMA data_version").Scan(&v); err != nil || v == version {
			continue
		}
		version = v
		rows, err := db.Query(`SELECT window_end, firing, watermark, count(*) FROM live GROUP BY 1, 2, 3`)
		if err != nil {
			continue // the job has not made the table yet
		}
		at := time.Now()
		for rows.Next() {
			var end, wm, n int64
			var firing string
			if err := rows.Scan(&end, &firing, &wm, &n); err != nil {
				rows.Close()
				return err
			}
			k := [3]any{end, firing, wm}
			if grew := n - counts[k]; grew > 0 {
				counts[k] = n
				r.see(end, wm, firing, grew, at)
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
	}
}

// liveLatency summarises firings' latencies (ms).
type liveLatency struct {
	N      int     `json:"n"`
	Median float64 `json:"median_ms"`
	P99    float64 `json:"p99_ms"`
	Max    float64 `json:"max_ms"`
	// FirstMedian is the median time to the first row of each firing.
	FirstMedian float64 `json:"first_row_median_ms"`
}

// livePoint is one firing's latency at the time its last row was seen
// (seconds since the job started).
type livePoint struct {
	T, MS float64
	Early bool
}

// liveReport is weir bench live's result.
type liveReport struct {
	Config      liveConfig  `json:"config"`
	Records     int64       `json:"records"`
	Seconds     float64     `json:"seconds"`
	PerSecond   float64     `json:"records_per_s"`
	KeptUp      bool        `json:"kept_up"`
	LagMedian   float64     `json:"watermark_lag_median_s"`
	LagP99      float64     `json:"watermark_lag_p99_s"`
	LagMax      float64     `json:"watermark_lag_max_s"`
	JobRSS      int64       `json:"job_peak_rss_bytes"`
	KafkaRSS    int64       `json:"kafka_peak_rss_bytes,omitempty"`
	OnTime      liveLatency `json:"on_time"`
	Early       liveLatency `json:"early"`
	LateRows    int64       `json:"late_rows"`
	TooLate     int64       `json:"too_late"`
	Unmeasured  int         `json:"firings_unmeasured"`
	Checkpoints int64       `json:"checkpoints"`
	CkMeanMS    float64     `json:"checkpoint_mean_ms"`
	CkBytes     int64       `json:"checkpoint_last_bytes"`
	rate        []livePoint // throughput per second of the run (MS: records/s)
	points      []livePoint
	cfgDuration time.Duration
}

// passed is when the watermark reached t: the sample before the first
// that shows it (the pass was after that sample, so the latency measured
// from it is at most 20 ms long, never short); false when the first
// sample already shows it or none does.
func passed(trace []wmSample, t int64) (time.Time, bool) {
	i, _ := slices.BinarySearchFunc(trace, t, func(s wmSample, t int64) int {
		if s.WM >= t {
			return 1
		}
		return -1
	})
	if i == 0 || i == len(trace) {
		return time.Time{}, false
	}
	return trace[i-1].At, true
}

// report turns a run's samples and sightings into its figures. Firings
// at the final watermark (the generator's end) are not live and left out,
// as are those whose time the watermark passed before the first sample.
func (r *liveRun) report() *liveReport {
	rep := &liveReport{Config: r.cfg, TooLate: summaryInt(r.summary, "late_side_output"), LateRows: r.lateRows, JobRSS: r.jobRSS, KafkaRSS: r.kafkaRSS, cfgDuration: r.cfg.Duration}
	rep.Records = summaryInt(r.summary, "records_in")
	// The watermark only grows; a sample's may fall back to none while
	// the job restarts its metrics, which the search must not see.
	trace := r.trace[:0:0]
	for _, s := range r.trace {
		if s.WM == math.MinInt64 || len(trace) > 0 && s.WM < trace[len(trace)-1].WM {
			continue
		}
		trace = append(trace, s)
	}
	var lastWM int64 = math.MinInt64
	if len(trace) > 0 {
		first, last := trace[0], trace[len(trace)-1]
		lastWM = last.WM
		rep.Checkpoints, rep.CkBytes = last.Checkpoints, last.CkBytes
		if last.Checkpoints > 0 {
			rep.CkMeanMS = last.CkSeconds / float64(last.Checkpoints) * 1000
		}
		rep.Seconds = last.At.Sub(first.At).Seconds()
		if rep.Seconds > 0 {
			rep.PerSecond = float64(last.In-first.In) / rep.Seconds
		}
	}
	// The lag: the clock minus the watermark and the bound, from 10 s in
	// (a quarter of a shorter run: the job starts up meanwhile), while the
	// generator runs.
	var lags []float64
	warm := min(10*time.Second, r.cfg.Duration/4)
	for _, s := range trace {
		if s.At.Sub(r.began) < warm || s.At.Sub(r.began) > r.cfg.Duration {
			continue
		}
		lags = append(lags, float64(s.At.UnixMilli()-s.WM-r.cfg.Bound.Milliseconds())/1000)
	}
	rep.LagMedian, rep.LagP99, rep.LagMax = quantile(lags, 0.5), quantile(lags, 0.99), quantile(lags, 1)
	rep.KeptUp = len(lags) > 0 && rep.LagP99 < 2
	var early, onTime, earlyFirst, onTimeFirst []float64
	for k, f := range r.firings {
		if k.Boundary > lastWM {
			continue // fired by the final watermark
		}
		p, ok := passed(trace, k.Boundary)
		if !ok {
			rep.Unmeasured++
			continue
		}
		ms := float64(f.Last.Sub(p).Microseconds()) / 1000
		rep.points = append(rep.points, livePoint{T: f.Last.Sub(r.began).Seconds(), MS: ms, Early: k.Early})
		first := float64(f.First.Sub(p).Microseconds()) / 1000
		if k.Early {
			early, earlyFirst = append(early, ms), append(earlyFirst, first)
		} else {
			onTime, onTimeFirst = append(onTime, ms), append(onTimeFirst, first)
		}
	}
	slices.SortFunc(rep.points, func(a, b livePoint) int { return cmp.Compare(a.T, b.T) })
	rep.OnTime = latencyOf(onTime, onTimeFirst)
	rep.Early = latencyOf(early, earlyFirst)
	for i := 1; i < len(trace); i++ {
		// Throughput per second: the records between the samples about a
		// second apart.
		j := i
		for j < len(trace) && trace[j].At.Sub(trace[i-1].At) < time.Second {
			j++
		}
		if j == len(trace) {
			break
		}
		d := trace[j].At.Sub(trace[i-1].At).Seconds()
		rep.rate = append(rep.rate, livePoint{T: trace[j].At.Sub(r.began).Seconds(), MS: float64(trace[j].In-trace[i-1].In) / d})
		i = j
	}
	return rep
}

func summaryInt(m map[string]any, name string) int64 {
	if v, ok := m[name].(float64); ok {
		return int64(v)
	}
	return 0
}

// quantile is the q-quantile of v (nearest rank; 0 for none); it sorts v.
func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	i := int(math.Ceil(q*float64(len(v)))) - 1
	return v[max(0, min(i, len(v)-1))]
}

func latencyOf(ms, first []float64) liveLatency {
	return liveLatency{N: len(ms), Median: quantile(ms, 0.5), P99: quantile(ms, 0.99), Max: quantile(ms, 1), FirstMedian: quantile(first, 0.5)}
}

func (r *liveReport) print(w io.Writer) {
	keep := "kept up"
	if !r.KeptUp {
		keep = "fell behind"
	}
	fmt.Fprintf(w, "read %d records in %.1f s (%.0f records/s); %s: the watermark's lag behind the clock beyond the %s bound was median %.2f s, p99 %.2f s, max %.2f s\n",
		r.Records, r.Seconds, r.PerSecond, keep, r.Config.Bound, r.LagMedian, r.LagP99, r.LagMax)
	fmt.Fprintf(w, "peak RSS: job %.0f MiB", float64(r.JobRSS)/(1<<20))
	if r.KafkaRSS > 0 {
		fmt.Fprintf(w, ", weir dev kafka %.0f MiB", float64(r.KafkaRSS)/(1<<20))
	}
	fmt.Fprintf(w, "; %d checkpoints, trigger to commit %.0f ms on average, the last %.1f MB\n", r.Checkpoints, r.CkMeanMS, float64(r.CkBytes)/1e6)
	for _, l := range []struct {
		name string
		l    liveLatency
	}{{"on-time firings (last row of each window)", r.OnTime}, {"early firings (last row of each)", r.Early}} {
		fmt.Fprintf(w, "%s: %d, watermark passed -> visible median %.0f ms, p99 %.0f ms, max %.0f ms (first row: median %.0f ms)\n", l.name, l.l.N, l.l.Median, l.l.P99, l.l.Max, l.l.FirstMedian)
	}
	fmt.Fprintf(w, "late rows (re-firings): %d; too late into the ledger: %d", r.LateRows, r.TooLate)
	if r.Unmeasured > 0 {
		fmt.Fprintf(w, "; %d firing(s) at the job's first watermark not measured (windows of records delayed before it)", r.Unmeasured)
	}
	fmt.Fprintln(w)
}

// svg draws the run: throughput per second above, each firing's latency
// below, over the seconds since the job started.
func (r *liveReport) svg() []byte {
	const w, h, pad = 800.0, 240.0, 50.0
	var b strings.Builder
	tmax := r.cfgDuration.Seconds() + 10
	for _, p := range append(slices.Clone(r.rate), r.points...) {
		tmax = math.Max(tmax, p.T)
	}
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", w, 2*h+50)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	panel := func(y0 float64, title, unit string, pts []livePoint, dots bool) {
		ymax := 1.0
		for _, p := range pts {
			ymax = math.Max(ymax, p.MS)
		}
		ymax *= 1.1
		x := func(t float64) float64 { return pad + t/tmax*(w-2*pad) }
		y := func(v float64) float64 { return y0 + h - pad/2 - v/ymax*(h-pad) }
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">%s</text>`+"\n", pad, y0+14, title)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", pad, y(0), w-pad, y(0))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", pad, y(0), pad, y(ymax))
		fmt.Fprintf(&b, `<text x="4" y="%.1f">%.0f</text><text x="4" y="%.1f">0</text><text x="%.1f" y="%.1f">%s</text>`+"\n",
			y(ymax/1.1)+4, ymax/1.1, y(0), w-pad-80, y(0)+28, unit)
		step := math.Max(10, math.Round(tmax/6/10)*10)
		for t := 0.0; t <= tmax; t += step {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/><text x="%.1f" y="%.1f" text-anchor="middle">%.0f</text>`+"\n",
				x(t), y(0), x(t), y(0)+4, x(t), y(0)+16, t)
		}
		if dots {
			for _, p := range pts {
				color := "crimson"
				if p.Early {
					color = "steelblue"
				}
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>`+"\n", x(p.T), y(p.MS), color)
			}
			return
		}
		var line []string
		for _, p := range pts {
			line = append(line, fmt.Sprintf("%.1f,%.1f", x(p.T), y(p.MS)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="seagreen" points="%s"/>`+"\n", strings.Join(line, " "))
	}
	panel(0, fmt.Sprintf("records/s read (target %d)", r.Config.Rate), "s since start", r.rate, false)
	panel(h+30, "firing latency, ms: watermark passed -> last row visible (blue early, red on time)", "s since start", r.points, true)
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// freeLocalPort is a port on 127.0.0.1 that was free a moment ago.
func freeLocalPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// awaitTCP waits until addr accepts a connection, for up to d.
func awaitTCP(ctx context.Context, addr string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("nothing listens on %s after %s: %w", addr, d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
