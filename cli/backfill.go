package cli

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir/backfill"
	"github.com/weirstream/weir/internal/group"
	"github.com/weirstream/weir/internal/sqljob"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/ledger"
	"github.com/weirstream/weir/spec"
)

// backfillCmd folds a job's late-data ledger into its results table:
// weir backfill JOB.yaml [--dry-run].
func backfillCmd(ctx context.Context, args []string, o IO) int {
	fs := flag.NewFlagSet("backfill", flag.ContinueOnError)
	fs.SetOutput(o.Stderr)
	dry := fs.Bool("dry-run", false, "show what would change and write nothing")
	verbose := fs.Bool("v", false, "print each window revised")
	var keys keyFlag
	fs.Var(&keys, "key", "only entries of this key: FIELD=VALUE (repeat it for each field of a key of several)")
	reason := fs.String("reason", "", "only entries with this reason: window_expired or window_expired_partial")
	windows := fs.String("window", "", "only entries that missed a window overlapping START..END (Unix ms or RFC 3339)")
	perTx := fs.Int("windows-per-tx", backfill.DefaultWindowsPerTx, "windows revised per transaction (each window's revision and applied ids always commit together)")
	var accept []string
	fs.Func("accept-spec", "also apply ledger entries written under this spec hash (after a change that keeps their meaning; repeatable)", func(v string) error {
		if _, err := hex.DecodeString(v); err != nil || len(v) != 8 {
			return fmt.Errorf("%q is no spec hash: one is 8 hex digits, as weir ledger ls shows (spec=...)", v)
		}
		accept = append(accept, v)
		return nil
	})
	report := fs.String("report", "", "also write the report as JSON to this file (for a scheduler or a monitor)")
	verify := fs.Bool("verify", false, "then recompute the complete answer (every input record, grouped without watermarks) and compare the results table with it; exit 1 if they differ")
	ckDir := fs.String("checkpoint-dir", "", "the live job's checkpoint directory, when it runs with --checkpoint-dir (default: the spec's checkpoint.dir): the ledger is read only as far as its newest checkpoint committed")
	arrived := fs.String("arrived", "", "only entries that arrived in FROM..TO (dates such as 2026-11-29..2026-11-30, RFC 3339 times or Unix ms; TO excluded)")
	fs.Usage = func() {
		fmt.Fprintln(o.Stderr, "usage: weir backfill JOB.yaml [--dry-run] [-v] [--verify] [--windows-per-tx N] [--accept-spec HASH] [--report FILE] [--arrived FROM..TO] [--checkpoint-dir DIR] [--key FIELD=VALUE] [--reason R] [--window START..END]")
		fmt.Fprintln(o.Stderr, "folds the too-late records of the job's ledger into its results table: each window they missed gets its next revision (firing backfill); running it again changes nothing")
		fs.PrintDefaults()
	}
	path, ok := onePath(fs, args)
	if !ok {
		return ExitUsage
	}
	if *perTx < 1 {
		fmt.Fprintf(o.Stderr, "weir backfill: --windows-per-tx %d: give at least 1\n", *perTx)
		return ExitUsage
	}
	p, ok := loadSpec(path, o)
	if !ok {
		return ExitUsage
	}
	f, err := lsFilter(keys, *reason, *windows)
	if err == nil {
		err = checkFilter(p, keys, *reason)
	}
	if err != nil {
		fmt.Fprintln(o.Stderr, "weir backfill:", err)
		return ExitUsage
	}
	if *arrived != "" {
		from, to, err := parseRange("--arrived", *arrived, "FROM..TO, such as 2026-11-29..2026-11-30")
		if err != nil {
			fmt.Fprintln(o.Stderr, "weir backfill:", err)
			return ExitUsage
		}
		g := f
		f = func(e ledger.Entry) bool { return g(e) && e.ArrivedAt >= from && e.ArrivedAt < to }
	}
	bo := backfill.BackfillOptions{Dir: filepath.Dir(o.path(path)), DryRun: *dry, Filter: f, WindowsPerTx: *perTx, AcceptSpec: accept, Crash: crashHook(o.Getenv),
		KeepRevisions: *dry && *verify}
	if *ckDir != "" {
		bo.CheckpointDir = o.path(*ckDir)
	}
	if p.Checkpoint == nil && bo.CheckpointDir == "" {
		// Whether the job runs as a group decides where its archive and
		// cut are: a Kafka that does not answer is said, not taken for
		// a job that runs in one process.
		var err error
		if bo.Group, err = group.RanErr(ctx, p, groupProbeWait); err != nil {
			fmt.Fprintf(o.Stderr, "weir backfill: cannot tell whether the job runs as a group (whose archive and cut are in Kafka): %v\n", err)
			return ExitFailed
		}
	}
	if bo.Group {
		// Only the group's run's entries: an earlier run's (before a
		// weir reset) or another group's in the same topic are not its.
		run, err := group.RunOf(ctx, p)
		if err != nil {
			fmt.Fprintln(o.Stderr, "weir backfill:", err)
			return ExitFailed
		}
		bo.GroupRun = run
	}
	bo.GroupArchive = func(ctx context.Context, p *spec.Plan) (backfill.GroupArchive, error) {
		// The group record was read above (bo.GroupRun): not again.
		a, err := group.OpenArchive(ctx, p, bo.GroupRun)
		if err != nil {
			return nil, err
		}
		return a, nil
	}
	bo.Context = ctx
	if *verbose {
		bo.Out = o.Stdout
	}
	if *verify {
		// Before anything is applied: a backfill that cannot be verified
		// is not begun.
		if err := backfill.CheckComplete(p, bo.Dir); err != nil {
			fmt.Fprintf(o.Stderr, "weir backfill: --verify: %v (nothing was applied)\n", err)
			return ExitUsage
		}
	}
	if *report != "" {
		// Before anything is applied: a report that cannot be written
		// would leave a scheduler without the outcome of a backfill that
		// ran.
		if fi, err := os.Stat(filepath.Dir(o.path(*report))); err != nil || !fi.IsDir() {
			fmt.Fprintf(o.Stderr, "weir backfill: --report %s: its directory is not there (nothing was applied)\n", *report)
			return ExitUsage
		}
	}
	bo.Warn = func(msg string) { fmt.Fprintln(o.Stderr, "warning:", msg) }
	rep, err := backfill.Backfill(p, bo)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		fmt.Fprintf(o.Stderr, "weir backfill: stopped (interrupted) after revising %s windows, which are committed; run it again to fold the rest (nothing is applied twice)\n", thousands(rep.Windows))
		return ExitFailed
	}
	if err != nil {
		msg := err.Error()
		if strings.HasSuffix(path, ".sql") {
			msg = sqljob.InSQLTerms(msg) // set archive: ... is a SET in SQL
		}
		fmt.Fprintln(o.Stderr, "weir backfill:", msg)
		if _, ok := errors.AsType[*backfill.RefusedError](err); ok {
			return ExitUsage // the spec, or a flag, cannot be backfilled: nothing was read
		}
		return ExitFailed
	}
	if *report != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(o.path(*report), append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(o.Stderr, "weir backfill: --report:", err)
			return ExitFailed
		}
	}
	fmt.Fprintf(o.Stdout, "side output: %s records in %s windows (ledger cut: %s)\n", thousands(rep.Entries), thousands(rep.LateWindows), rep.Cut)
	verb := "applied"
	if *dry {
		verb = "would apply"
	}
	what := "entries"
	if rep.Applied > rep.AppliedRecords {
		// Sliding windows: a record that missed several windows is
		// folded into each, and counted so.
		what = "(entry, window) pairs"
	}
	fmt.Fprintf(o.Stdout, "backfill %s %s %s, %s windows revised (each its next revision, firing backfill); %s already applied\n", verb, thousands(rep.Applied), what, thousands(rep.Windows), thousands(rep.AlreadyApplied))
	code := ExitOK
	if rep.Unreadable > 0 {
		fmt.Fprintf(o.Stdout, "%d records no longer decode (see weir ledger ls); they were not applied\n", rep.Unreadable)
		code = ExitFailed
	}
	if rep.Corrupt > 0 {
		fmt.Fprintf(o.Stdout, "%d ledger lines are corrupt (checksum or syntax) and were skipped; weir ledger ls names them\n", rep.Corrupt)
		code = ExitFailed
	}
	if rep.WindowOpen > 0 {
		fmt.Fprintf(o.Stdout, "%d entries left alone: their window is still open at the live job's checkpointed watermark %s (the live job fires it)\n", rep.WindowOpen, rep.Watermark)
	}
	if rep.OtherJobs > 0 {
		fmt.Fprintf(o.Stdout, "%s entries of other jobs skipped (they write to the same ledger)\n", thousands(rep.OtherJobs))
	}
	if rep.EarlierRuns > 0 {
		fmt.Fprintf(o.Stdout, "%s entries of earlier runs skipped (of this job before a weir reset or --fresh, or, for entries that name no job, of another job that writes to the same ledger): the results hold this run's windows only\n", thousands(rep.EarlierRuns))
	}
	if rep.ReadAgain > 0 {
		fmt.Fprintf(o.Stdout, "%s entries of records a later run read again (an --append rerun of the same input) folded once, as the later run's\n", thousands(rep.ReadAgain))
	}
	if rep.OtherRuns > 0 {
		fmt.Fprintf(o.Stdout, "%s entries of other runs skipped: another job or group writes to the same ledger (give each job a late topic of its own)\n", thousands(rep.OtherRuns))
	}
	if rep.HavingDropped > 0 {
		fmt.Fprintf(o.Stdout, "%d entries not applied: their windows fail the job's having of the window bounds (a SQL WHERE on window_start or window_end), so the job never wrote them\n", rep.HavingDropped)
	}
	if rep.HorizonExpired > 0 {
		fmt.Fprintf(o.Stdout, "%d entries not applied: their windows ended before the archive's horizon (archive.horizon) and are no longer kept; raise the horizon, or recompute those windows from the input\n", rep.HorizonExpired)
		code = ExitFailed
	}
	if rep.SpecMismatch > 0 {
		fmt.Fprintf(o.Stdout, "%d entries refused: the ledger wrote them under another spec (key, window, aggregates or timestamps changed; this one is %s); if their meaning is unchanged, run again with --accept-spec and their hash (weir ledger ls shows it)\n", rep.SpecMismatch, rep.SpecHash)
		code = ExitFailed
	}
	if n := rep.DecimalOverflow + rep.FloatOverflow; n > 0 {
		fmt.Fprintf(o.Stdout, "warning: %d sums or averages of revised windows overflowed: %d went beyond 38 digits and were computed in float64 from there (decimal_overflow), %d beyond float64 and were written as null (float_overflow)\n", n, rep.DecimalOverflow, rep.FloatOverflow)
	}
	if rep.Refused > 0 {
		fmt.Fprintf(o.Stdout, "%d entries refused: %s\n", rep.Refused, rep.RefusedReason)
		code = ExitFailed
	}
	if *verify {
		ans, err := backfill.Complete(p, bo.Dir)
		if err != nil {
			fmt.Fprintln(o.Stderr, "weir backfill: --verify:", err)
			return ExitFailed
		}
		// A dry run compares the results as the backfill would leave them.
		c, err := ans.CompareRevised(p, bo.Dir, 5, rep.Revisions)
		if err != nil {
			fmt.Fprintln(o.Stderr, "weir backfill: --verify:", err)
			return ExitFailed
		}
		compared := ans.Windows() - c.Earlier
		switch {
		case c.N == 0 && *dry:
			fmt.Fprintf(o.Stdout, "after this backfill the results would equal the complete answer: %s windows, from all %s input records grouped without watermarks\n", thousands(compared), thousands(int(ans.Records)))
		case c.N == 0:
			fmt.Fprintf(o.Stdout, "results now equal the complete answer: %s windows, from all %s input records grouped without watermarks\n", thousands(compared), thousands(int(ans.Records)))
		default:
			verb := "differ"
			if *dry {
				verb = "would differ, after this backfill,"
			}
			fmt.Fprintf(o.Stdout, "%s of %s windows %s from the complete answer (all %s input records grouped without watermarks), such as:\n", thousands(c.N), thousands(compared), verb, thousands(int(ans.Records)))
			for _, d := range c.Diffs {
				fmt.Fprintln(o.Stdout, "  "+d)
			}
			if len(keys) > 0 || *reason != "" || *windows != "" || *arrived != "" {
				fmt.Fprintln(o.Stdout, "note: --key, --reason, --window or --arrived left ledger entries out of this backfill; the windows they missed differ until a backfill folds them in")
			}
			if l := job.Running(p, job.RunOptions{Dir: bo.Dir, CheckpointDir: bo.CheckpointDir}); l != nil {
				// The complete answer is of the whole input; a live job
				// has not closed its newest windows yet.
				who := "a run of the job"
				if l.PID > 0 {
					who = fmt.Sprintf("a run of the job (pid %d)", l.PID)
				}
				fmt.Fprintf(o.Stdout, "note: %s is still running (it holds %s %s): its newest windows are not closed yet and differ until it has read all of its input and ended\n", who, l.What, l.Path)
			}
			code = ExitFailed
		}
		if c.Earlier > 0 {
			fmt.Fprintf(o.Stdout, "note: %s windows of the complete answer hold rows of earlier runs of the job (kept with --append), made from input this run did not read: not compared; this input's records in them came through the ledger\n", thousands(c.Earlier))
		}
	}
	return code
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// groupProbeWait bounds weir backfill's wait for the source's Kafka to
// say whether the job runs as a group.
var groupProbeWait = 10 * time.Second
