// Package cli holds weir's commands as library code, so they can be
// golden-tested; cmd/weir only wires the process to them.
package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	// The built-in connector kinds, which specs name and weir connectors lists.
	_ "github.com/weirstream/weir/connector/all"
)

// Version is weir's version.
const Version = "0.1.0-dev"

// IO is the process around a command.
type IO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Dir resolves relative paths on the command line (the working
	// directory; "" means the process's).
	Dir string
	// Terminal says stderr is a terminal: long runs show a live progress
	// line there, redrawn every ProgressEvery (default 500ms).
	Terminal      bool
	ProgressEvery time.Duration
	// LateEvery is how often a run compares its share of too-late records
	// with the spec's alert levels (default 10s).
	LateEvery time.Duration
	// StuckAfter is how long a checkpoint or a sink call may go on
	// before the admin server (--http) reports it stuck (default 10s).
	StuckAfter time.Duration
	// Getenv reads the environment (test hooks such as WEIR_TEST_CRASH);
	// nil reads nothing.
	Getenv func(string) string
}

func (o IO) path(p string) string {
	if o.Dir == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(o.Dir, p)
}

// Exit codes.
const (
	ExitOK     = 0
	ExitFailed = 1 // the job failed
	ExitUsage  = 2 // bad usage, bad spec or missing input
)

// Main runs the weir command line and returns the exit code. ctx being
// done asks a running job to stop gracefully (Ctrl-C).
func Main(ctx context.Context, args []string, o IO) int {
	if len(args) == 0 {
		usage(o.Stderr)
		return ExitUsage
	}
	switch args[0] {
	case "run":
		return runCmd(ctx, args[1:], o)
	case "validate":
		return validateCmd(args[1:], o)
	case "explain":
		return explainCmd(args[1:], o)
	case "demo":
		return demoCmd(ctx, args[1:], o)
	case "bench":
		return benchCmd(ctx, args[1:], o)
	case "dev":
		return devCmd(ctx, args[1:], o)
	case "doctor":
		return doctorCmd(ctx, args[1:], o)
	case "ledger":
		return ledgerCmd(args[1:], o)
	case "backfill":
		return backfillCmd(ctx, args[1:], o)
	case "connectors":
		return connectorsCmd(args[1:], o)
	case "reset":
		return resetCmd(ctx, args[1:], o)
	case "version":
		fmt.Fprintln(o.Stdout, "weir", Version)
		return ExitOK
	case "help", "-h", "--help":
		usage(o.Stdout)
		return ExitOK
	}
	fmt.Fprintf(o.Stderr, "weir: unknown command %q\n", args[0])
	usage(o.Stderr)
	return ExitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, `usage: weir <command> [arguments]

commands:
  run JOB.yaml      run a job spec to the end of its input (or until Ctrl-C)
  validate JOB.yaml check a job spec and explain every error
  explain JOB.yaml  print the plan a job spec compiles to: its operators, sinks and streams
  demo              run the built-in orders job on embedded defaults
  bench nexmark     time a Nexmark query on weir against a hand-written loop
  dev kafka         start an in-process Kafka on 127.0.0.1:9092 to try kafka jobs
  doctor            diagnose a running job (its --http address) or a saved dump
  ledger ls|stats   list or count a job's too-late records in its ledger
  backfill JOB.yaml fold the ledger's too-late records into the results table
  connectors        list the source and sink kinds a job spec may name, with their settings
  reset JOB.yaml    delete what a job's group keeps in Kafka (group mode), to run it again from the start
  version           print the version

run 'weir <command> -h' for a command's flags`)
}
