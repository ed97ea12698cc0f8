package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/weirstream/weir/nexmark"
)

// benchCmd runs weir bench SUITE.
func benchCmd(ctx context.Context, args []string, o IO) int {
	if len(args) == 0 || args[0] != "nexmark" {
		fmt.Fprintln(o.Stderr, "usage: weir bench nexmark [flags] (run 'weir bench nexmark -h' for them)")
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
	fs.Usage = func() {
		fmt.Fprintln(o.Stderr, `usage: weir bench nexmark [--query q5] [--events N] [--parallelism N] [--json] [--with-generation]

Generates Nexmark events (Beam's generator), then times the query on weir
and as a hand-written Go loop on the same events, checks that both give the
same rows, and prints both rates and their ratio.`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		return ExitUsage
	}
	if fs.NArg() != 0 || *events <= 0 || *par <= 0 {
		fs.Usage()
		return ExitUsage
	}
	names := []string{*query}
	if *query == "all" {
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
	if err := c.Validate(); err != nil {
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
		runtime.GC()
		hand := nexmark.RunHand(q, in, false)
		runtime.GC()
		got, err := nexmark.RunWeir(ctx, q, in, *par, false)
		if err != nil {
			fmt.Fprintf(o.Stderr, "weir: bench nexmark %s: %v\n", q.Name, err)
			return ExitFailed
		}
		r := benchReport{
			Query: q.Name, Events: *events, Parallelism: *par, WithGeneration: *withGen,
			Weir: rate(got), Hand: rate(hand), Rows: got.Digest.N, RowsMatch: got.Digest == hand.Digest,
		}
		r.Ratio = r.Weir / r.Hand
		if !r.RowsMatch {
			code = ExitFailed
		}
		if *asJSON {
			b, _ := json.Marshal(r)
			fmt.Fprintln(o.Stdout, string(b))
			continue
		}
		match := "equal to the hand loop's"
		if !r.RowsMatch {
			match = fmt.Sprintf("DIFFERENT from the hand loop's %d rows", hand.Digest.N)
		}
		fmt.Fprintf(o.Stdout, "nexmark %s, %d events, parallelism %d%s: %s\n", q.Name, *events, *par,
			map[bool]string{true: ", generation timed", false: ""}[*withGen], q.Rows)
		fmt.Fprintf(o.Stdout, "  weir       %8.2f M events/s  (%s)\n", r.Weir/1e6, got.Elapsed.Round(time.Millisecond))
		fmt.Fprintf(o.Stdout, "  hand loop  %8.2f M events/s  (%s)\n", r.Hand/1e6, hand.Elapsed.Round(time.Millisecond))
		fmt.Fprintf(o.Stdout, "  ratio      %8.3f\n", r.Ratio)
		fmt.Fprintf(o.Stdout, "  rows       %d, %s\n", r.Rows, match)
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
}

func rate(r nexmark.Result) float64 {
	return float64(r.Events) / max(r.Elapsed.Seconds(), 1e-9)
}
