package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/internal/benchutil"
	"github.com/weirstream/weir/internal/sqljob"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/nexmark"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/state/pebblestate"
)

// benchCmd runs weir bench SUITE.
func benchCmd(ctx context.Context, args []string, o IO) int {
	if len(args) > 0 && args[0] == "skew" {
		return benchSkew(ctx, args[1:], o)
	}
	if len(args) > 0 && args[0] == "live" {
		return benchLive(ctx, args[1:], o)
	}
	if len(args) == 0 || args[0] != "nexmark" {
		fmt.Fprintln(o.Stderr, "usage: weir bench nexmark|skew|live [flags] (run 'weir bench nexmark -h' for them)")
		return ExitUsage
	}
	fs := flag.NewFlagSet("bench nexmark", flag.ContinueOnError)
	fs.SetOutput(o.Stderr)
	query := fs.String("query", "q5", "the query: "+strings.Join(nexmark.QueryNames(), ", ")+", or all")
	events := fs.Int64("events", 10_000_000, "number of events")
	par := fs.Int("parallelism", 1, "weir's source channels and keyed subtasks (the hand loop is one goroutine)")
	asJSON := fs.Bool("json", false, "print one JSON object per query")
	withGen := fs.Bool("with-generation", false, "generate the events while running (timed), as published figures do, instead of before")
	ooo := fs.Int64("out-of-order", 1000, "out-of-order group size of the generator (1000: 0.1 s of disorder at 10,000 events/s)")
	evRate := fs.Int64("rate", 10_000, "event rate in events per second of event time (1000000 gives ~600k auctions per window)")
	extra := fs.Bool("extra", false, "generate Beam's padding strings (about 70 bytes per bid)")
	runs := fs.Int("runs", 1, "runs of each side, in turn; the medians are reported")
	stateFlag := fs.String("state", "memory", "memory, or pebble: also run weir with its keyed state in Pebble (a database per operator instance in a temporary directory, behind the cache of the spec's state.cache default) and report that rate beside the in-memory one")
	stateCache := fs.Int("state-cache", job.DefaultStateCache, "with --state pebble: the entries each state value keeps in memory in front of Pebble (the spec's state.cache); a smaller cache writes more to Pebble")
	withSQL := fs.Bool("sql", false, "also run the query as the Nexmark project writes it in Flink SQL (on the nexmark source, whose typed events the job reads by column; their generation is timed, as the typed API's is with --with-generation), where weir reaches it, and report its rate beside the typed API's")
	fs.Usage = func() {
		fmt.Fprintln(o.Stderr, `usage: weir bench nexmark [--query q5] [--events N] [--parallelism N] [--json] [--with-generation] [--state pebble [--state-cache N]] [--sql]

Generates Nexmark events (Beam's generator), then times the query on weir
and as a hand-written Go loop on the same events, checks that both give the
same rows, and prints both rates and their ratio.`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		return parseExit(err)
	}
	var bad []string
	for _, f := range []struct {
		name string
		v    int64
	}{{"events", *events}, {"parallelism", int64(*par)}, {"runs", int64(*runs)}, {"state-cache", int64(*stateCache)}} {
		if f.v <= 0 {
			bad = append(bad, fmt.Sprintf("--%s %d: want a positive number", f.name, f.v))
		}
	}
	if *stateFlag != "memory" && *stateFlag != "pebble" {
		bad = append(bad, fmt.Sprintf("--state %q: want memory or pebble", *stateFlag))
	}
	if fs.NArg() != 0 {
		bad = append(bad, fmt.Sprintf("%q: bench nexmark takes flags only", fs.Args()))
	}
	if len(bad) > 0 {
		fmt.Fprintln(o.Stderr, "weir: bench nexmark: "+strings.Join(bad, "; "))
		return ExitUsage
	}
	names := []string{*query}
	if strings.EqualFold(*query, "all") {
		names = nexmark.QueryNames()
	}
	var qs []*nexmark.Query
	for _, n := range names {
		q, err := nexmark.Lookup(n)
		if err != nil {
			fmt.Fprintln(o.Stderr, "weir:", err)
			return ExitUsage
		}
		qs = append(qs, q)
	}
	c := nexmark.DefaultConfig()
	c.OutOfOrderGroupSize, c.Rate, c.NoExtra = *ooo, *evRate, !*extra
	if err := errors.Join(c.Validate(), nexmark.CheckDisorder(c)); err != nil {
		fmt.Fprintln(o.Stderr, "weir: bench nexmark:", err)
		return ExitUsage
	}
	in := nexmark.Input{Generate: &c, N: *events}
	if !*withGen {
		start := time.Now()
		evs, err := nexmark.Generate(c, int(*events))
		if err != nil {
			fmt.Fprintln(o.Stderr, "weir: bench nexmark:", err)
			return ExitFailed
		}
		in = nexmark.Input{Events: evs}
		if !*asJSON {
			fmt.Fprintf(o.Stdout, "generated %d events in %s (not timed)\n", *events, time.Since(start).Round(time.Millisecond))
		}
	}
	code := ExitOK
	for _, q := range qs {
		var weirRuns, handRuns []measured
		var got, hand nexmark.Result
		match := true
		for range *runs {
			var m measured
			hand, m = timed(func() (nexmark.Result, error) { return nexmark.RunHand(q, in, false), nil })
			handRuns = append(handRuns, m)
			got, m = timed(func() (nexmark.Result, error) { return nexmark.RunWeir(ctx, q, in, *par, false) })
			if m.err != nil {
				fmt.Fprintf(o.Stderr, "weir: bench nexmark %s: %v\n", q.Name, m.err)
				return ExitFailed
			}
			weirRuns = append(weirRuns, m)
			match = match && got.Digest == hand.Digest
		}
		var pebbleRuns []measured
		pebbleOps := 0                           // operator instances whose state was in Pebble
		var pebbleSets, pebbleBytes atomic.Int64 // written to Pebble, last run
		for i := 0; *stateFlag == "pebble" && i < *runs; i++ {
			dir, err := os.MkdirTemp("", "weir-bench-state-")
			if err != nil {
				fmt.Fprintln(o.Stderr, "weir: bench nexmark:", err)
				return ExitFailed
			}
			pin := in
			var opened atomic.Int64 // made on the subtasks' goroutines
			pebbleSets.Store(0)
			pebbleBytes.Store(0)
			backends := pebblestate.WrappedBackends(dir, *stateCache, func(kv state.KV) state.KV {
				return writeCounter{kv, &pebbleSets, &pebbleBytes}
			})
			pin.NewBackend = func() state.Backend { opened.Add(1); return backends() }
			res, m := timed(func() (nexmark.Result, error) { return nexmark.RunWeir(ctx, q, pin, *par, false) })
			os.RemoveAll(dir)
			if m.err != nil {
				fmt.Fprintf(o.Stderr, "weir: bench nexmark %s --state pebble: %v\n", q.Name, m.err)
				return ExitFailed
			}
			pebbleRuns = append(pebbleRuns, m)
			pebbleOps = int(opened.Load())
			match = match && res.Digest == hand.Digest
		}
		var sqlRuns []measured
		sq, inSQL := nexmark.SQL[q.Name]
		if *withSQL && inSQL {
			// The rows as the query's sink shows them (q5's: without
			// their windows), from the loop's
			want := hand.Digest
			if sq.Shown != nil || sq.Hand != nil {
				// Or of the loop of the SQL's own semantics (q7's).
				hq := *q
				if sq.Hand != nil {
					hq.Hand = sq.Hand
				}
				want = nexmark.Digest{}
				for _, r := range nexmark.RunHand(&hq, in, true).Rows {
					shown := sq.Want(r)
					want.Add(&shown)
				}
			}
			for range *runs {
				res, m := timed(func() (nexmark.Result, error) { return runNexmarkSQL(ctx, sq, *events, *evRate, *par) })
				if m.err != nil {
					fmt.Fprintf(o.Stderr, "weir: bench nexmark %s --sql: %v\n", q.Name, m.err)
					return ExitFailed
				}
				sqlRuns = append(sqlRuns, m)
				match = match && res.Digest == want
			}
		}
		wm, hm := median(weirRuns), median(handRuns)
		r := benchReport{
			Query: q.Name, Events: *events, Parallelism: *par, WithGeneration: *withGen, Runs: *runs,
			Weir: wm.rate, Hand: hm.rate, Rows: got.Digest.N, RowsMatch: match,
			WeirCPU: wm.cpuRate, HandCPU: hm.cpuRate,
		}
		r.Ratio = r.Weir / r.Hand
		if len(pebbleRuns) > 0 {
			r.Pebble = median(pebbleRuns).rate
			r.PebbleRatio = r.Pebble / r.Weir
			r.PebbleOperators = pebbleOps
			r.PebbleCache = *stateCache
			r.PebbleWrites, r.PebbleWriteBytes = pebbleSets.Load(), pebbleBytes.Load()
		}
		if len(sqlRuns) > 0 {
			sm := median(sqlRuns)
			r.SQL, r.SQLRatio, r.SQLHandRatio = sm.rate, sm.rate/r.Weir, sm.rate/r.Hand
		}
		if r.HandCPU > 0 {
			r.CPURatio = r.WeirCPU / r.HandCPU
		}
		if !r.RowsMatch {
			code = ExitFailed
		}
		if *asJSON {
			b, _ := json.Marshal(r)
			fmt.Fprintln(o.Stdout, string(b))
			continue
		}
		same := "equal to the hand loop's"
		if !r.RowsMatch {
			same = fmt.Sprintf("DIFFERENT from the hand loop's %d rows (in at least one run)", hand.Digest.N)
		}
		fmt.Fprintf(o.Stdout, "nexmark %s, %d events, parallelism %d%s: %s\n", q.Name, *events, *par,
			map[bool]string{true: ", generation timed", false: ""}[*withGen], q.Rows)
		fmt.Fprintf(o.Stdout, "  weir       %8.2f M events/s  %8.2f M events/CPU-s\n", r.Weir/1e6, r.WeirCPU/1e6)
		fmt.Fprintf(o.Stdout, "  hand loop  %8.2f M events/s  %8.2f M events/CPU-s\n", r.Hand/1e6, r.HandCPU/1e6)
		fmt.Fprintf(o.Stdout, "  ratio      %8.3f            %8.3f per CPU-second\n", r.Ratio, r.CPURatio)
		if r.Pebble > 0 {
			fmt.Fprintf(o.Stdout, "  pebble     %8.2f M events/s  %.3f of in memory (%.2fx its time); %d writes, %.1f MB, to Pebble behind caches of %d entries\n",
				r.Pebble/1e6, r.PebbleRatio, 1/r.PebbleRatio, r.PebbleWrites, float64(r.PebbleWriteBytes)/1e6, r.PebbleCache)
		}
		switch {
		case r.SQL > 0:
			fmt.Fprintf(o.Stdout, "  SQL        %8.2f M events/s  %.3f of the typed API's, %.3f of the hand loop's (generation timed)\n", r.SQL/1e6, r.SQLRatio, r.SQLHandRatio)
		case *withSQL:
			fmt.Fprintf(o.Stdout, "  SQL        not reached: weir does not run this query's SQL yet (docs/SQL.md, \"Nexmark\")\n")
		}
		fmt.Fprintf(o.Stdout, "  rows       %d, %s\n", r.Rows, same)
	}
	return code
}

// benchReport is one query's line of weir bench nexmark --json.
type benchReport struct {
	Query          string  `json:"query"`
	Events         int64   `json:"events"`
	Parallelism    int     `json:"parallelism"`
	WithGeneration bool    `json:"with_generation"`
	Weir           float64 `json:"weir_events_per_s"`
	Hand           float64 `json:"hand_events_per_s"`
	Ratio          float64 `json:"ratio"`
	Rows           int64   `json:"rows"`
	RowsMatch      bool    `json:"rows_match"`
	Runs           int     `json:"runs"`
	// Per CPU-second of the process (weir uses several goroutines, the
	// hand loop one): 0 where CPU time is not measured.
	WeirCPU  float64 `json:"weir_events_per_cpu_s"`
	HandCPU  float64 `json:"hand_events_per_cpu_s"`
	CPURatio float64 `json:"cpu_ratio"`
	// With --sql, where weir runs the query's SQL: its rate, and that
	// as a share of the typed API's and of the hand loop's.
	SQL          float64 `json:"sql_events_per_s,omitempty"`
	SQLRatio     float64 `json:"sql_ratio_typed,omitempty"`
	SQLHandRatio float64 `json:"sql_ratio_hand,omitempty"`
	// With --state pebble: weir's rate with its state in Pebble, and
	// that as a share of its in-memory rate.
	Pebble      float64 `json:"pebble_events_per_s,omitempty"`
	PebbleRatio float64 `json:"pebble_ratio_memory,omitempty"`
	// PebbleOperators counts the operator instances that kept their
	// state in Pebble (in the last run).
	PebbleOperators int `json:"pebble_operators,omitempty"`
	// PebbleWrites and PebbleWriteBytes count the entries (keys and
	// values) written to Pebble in the last run, behind caches of
	// PebbleCache entries per state value: how much of the state went to
	// disk.
	PebbleWrites     int64 `json:"pebble_writes,omitempty"`
	PebbleWriteBytes int64 `json:"pebble_write_bytes,omitempty"`
	PebbleCache      int   `json:"pebble_cache,omitempty"`
}

// writeCounter counts the writes to a KV (weir bench --state pebble).
type writeCounter struct {
	state.KV
	sets, bytes *atomic.Int64
}

func (w writeCounter) Set(key, value []byte) error {
	w.sets.Add(1)
	w.bytes.Add(int64(len(key) + len(value)))
	return w.KV.Set(key, value)
}

// runNexmarkSQL runs query sq's SQL job on events events of the nexmark
// source at rate (events per second of event time) in a scratch
// directory, and returns its rows' digest, the events and the time the
// job ran (compiling it aside).
func runNexmarkSQL(ctx context.Context, sq nexmark.SQLQuery, events, rate int64, par int) (nexmark.Result, error) {
	dir, err := os.MkdirTemp("", "weir-bench-sql-")
	if err != nil {
		return nexmark.Result{}, err
	}
	defer os.RemoveAll(dir)
	j, err := sqljob.Compile(sq.Text(events, rate), "nexmark.sql")
	if err != nil {
		return nexmark.Result{}, err
	}
	p, err := j.Plan()
	if err != nil {
		return nexmark.Result{}, err
	}
	start := time.Now()
	jb, err := job.Open(p, job.RunOptions{Dir: dir, Parallelism: par, Stdout: io.Discard, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nexmark.Result{}, err
	}
	if _, err := jb.Run(ctx); err != nil {
		return nexmark.Result{}, err
	}
	res := nexmark.Result{Events: events, Elapsed: time.Since(start)}
	b, err := os.ReadFile(filepath.Join(dir, "out.jsonl"))
	if err != nil {
		return res, err
	}
	for l := range strings.Lines(string(b)) {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			return res, err
		}
		r, err := sq.Row(m)
		if err != nil {
			return res, err
		}
		res.Digest.Add(&r)
	}
	return res, nil
}

// measured is one timed run: events per wall second and per CPU-second.
type measured struct {
	rate, cpuRate float64
	err           error
}

// timed runs f after a GC and measures its rates.
func timed(f func() (nexmark.Result, error)) (nexmark.Result, measured) {
	runtime.GC()
	cpu0 := benchutil.CPUTime()
	res, err := f()
	cpu := benchutil.CPUTime() - cpu0
	m := measured{err: err, rate: float64(res.Events) / max(res.Elapsed.Seconds(), 1e-9)}
	if cpu > 0 {
		m.cpuRate = float64(res.Events) / cpu.Seconds()
	}
	return res, m
}

// median returns the run with the median wall rate.
func median(ms []measured) measured {
	s := slices.Clone(ms)
	slices.SortFunc(s, func(a, b measured) int { return cmp.Compare(a.rate, b.rate) })
	return s[len(s)/2]
}
