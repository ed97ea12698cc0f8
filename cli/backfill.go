package cli

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/weirstream/weir/internal/ledger"
	"github.com/weirstream/weir/spec"
)

// backfillCmd folds a job's late-data ledger into its results table:
// weir backfill JOB.yaml [--dry-run].
func backfillCmd(args []string, o IO) int {
	fs := flag.NewFlagSet("backfill", flag.ContinueOnError)
	fs.SetOutput(o.Stderr)
	dry := fs.Bool("dry-run", false, "show what would change and write nothing")
	verbose := fs.Bool("v", false, "print each window revised")
	key := fs.String("key", "", "only entries of this key: FIELD=VALUE")
	reason := fs.String("reason", "", "only entries with this reason: window_expired or window_expired_partial")
	windows := fs.String("window", "", "only entries that missed a window overlapping START..END (Unix ms or RFC 3339)")
	arrived := fs.String("arrived", "", "only entries that arrived in FROM..TO (dates such as 2026-11-29..2026-11-30, RFC 3339 times or Unix ms; TO excluded)")
	fs.Usage = func() {
		fmt.Fprintln(o.Stderr, "usage: weir backfill JOB.yaml [--dry-run] [-v] [--arrived FROM..TO] [--key FIELD=VALUE] [--reason R] [--window START..END]")
		fmt.Fprintln(o.Stderr, "folds the too-late records of the job's ledger into its results table: each window they missed gets its next revision (firing backfill); running it again changes nothing")
		fs.PrintDefaults()
	}
	paths, ok := parsePaths(fs, args)
	if !ok {
		return ExitUsage
	}
	if len(paths) != 1 {
		fs.Usage()
		return ExitUsage
	}
	p, ok := loadSpec(paths[0], o)
	if !ok {
		return ExitUsage
	}
	f, err := lsFilter(*key, *reason, *windows)
	if err != nil {
		fmt.Fprintln(o.Stderr, "weir backfill:", err)
		return ExitUsage
	}
	if *arrived != "" {
		a, b, ok := strings.Cut(*arrived, "..")
		from, err1 := parseMs(a)
		to, err2 := parseMs(b)
		if !ok || err1 != nil || err2 != nil {
			fmt.Fprintf(o.Stderr, "weir backfill: --arrived %q: use FROM..TO, such as 2026-11-29..2026-11-30\n", *arrived)
			return ExitUsage
		}
		g := f
		f = func(e ledger.Entry) bool { return g(e) && e.ArrivedAt >= from && e.ArrivedAt < to }
	}
	bo := spec.BackfillOptions{Dir: filepath.Dir(o.path(paths[0])), DryRun: *dry, Filter: f}
	if *verbose {
		bo.Out = o.Stdout
	}
	rep, err := spec.Backfill(p, bo)
	if err != nil {
		fmt.Fprintln(o.Stderr, "weir backfill:", err)
		return ExitFailed
	}
	verb := "applied"
	if *dry {
		verb = "would apply"
	}
	fmt.Fprintf(o.Stdout, "backfill: %d ledger entries; %s %d to %d windows (each its next revision, firing backfill); %d already applied", rep.Entries, verb, rep.Applied, rep.Windows, rep.AlreadyApplied)
	if rep.Unreadable > 0 {
		fmt.Fprintf(o.Stdout, "; %d records no longer decode (see weir ledger ls)", rep.Unreadable)
	}
	fmt.Fprintln(o.Stdout)
	return ExitOK
}
