package backfill

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/weirstream/weir/clock"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/pgio"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/outfmt"
	"github.com/weirstream/weir/internal/record"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/ledger"
	"github.com/weirstream/weir/spec"
	"github.com/weirstream/weir/window"
)

// BackfillOptions configures Backfill.
type BackfillOptions struct {
	// Dir is the spec's directory (relative paths start there).
	Dir string
	// CheckpointDir is the live job's checkpoint directory when its runs
	// are given one (weir run --checkpoint-dir); "": the spec's
	// checkpoint.dir. The backfill reads the ledger only as far as the
	// newest checkpoint there committed.
	CheckpointDir string
	// DryRun reports what would change and writes nothing.
	DryRun bool
	// KeepRevisions keeps each revised window's new values in the
	// report (BackfillReport.Revisions): a dry run's --verify compares
	// the results as the backfill would leave them.
	KeepRevisions bool
	// Out, when set, is told about each window changed.
	Out io.Writer
	// Filter, when set, chooses the entries to apply (by key, reason,
	// window or arrival); the others are left for a later run.
	Filter func(ledger.Entry) bool
	// WindowsPerTx is how many windows one transaction revises (0:
	// DefaultWindowsPerTx).
	// A window's new revision and its applied ids always commit
	// together; more windows per transaction save a sync each.
	WindowsPerTx int
	// AcceptSpec lists spec hashes (BackfillReport.SpecHash of an older
	// spec) whose ledger entries are applied although the spec changed.
	AcceptSpec []string
	// Crash, when set, is called at the named points of each
	// transaction (crash tests): backfill-begun after it began,
	// backfill-written before it commits, backfill-committed after.
	Crash func(point string)
	// Warn, when set, is told about each retry of a batch that failed
	// because Postgres was unavailable.
	Warn func(msg string)
	// Group: the job runs as a group (weir run --instance), which keeps
	// no checkpoint directory: its ledger holds committed records only,
	// each too late for good, so all of it is read, also while the group
	// runs (only the report says so differently).
	Group bool
	// GroupArchive opens the archive of a job with an archive block run
	// as a group (Group), a Kafka topic: the command line sets it to
	// internal/group's OpenArchive.
	GroupArchive func(ctx context.Context, p *spec.Plan) (GroupArchive, error)
	// Context, when set, ends the backfill when it is done (Ctrl-C):
	// between transactions, and inside one by aborting it.
	Context context.Context
	// GroupRun is the run of a job run as a group (Group; 0: unknown):
	// only its entries are folded. Every task of a group writes the
	// group's run, so entries of another run are of a run before a weir
	// reset (EarlierRuns), or of another job or group that writes to the
	// same ledger topic (OtherRuns).
	GroupRun int64
}

// DefaultWindowsPerTx is BackfillOptions.WindowsPerTx's default.
const DefaultWindowsPerTx = 64

// BackfillReport counts what a backfill did.
type BackfillReport struct {
	// Entries scanned in the ledger (up to the cut, through the filter)
	// and LateWindows the distinct windows they missed.
	Entries     int `json:"entries"`
	LateWindows int `json:"late_windows"`
	// Applied entries folded into windows (an entry of a sliding window
	// counts once per window it missed, here and in AlreadyApplied,
	// WindowOpen and HorizonExpired); AlreadyApplied skipped, a previous
	// backfill applied them; Unreadable entries whose record no longer
	// decodes (each once).
	Applied        int `json:"applied"`
	AlreadyApplied int `json:"already_applied"`
	Unreadable     int `json:"unreadable"`
	// AppliedRecords counts the distinct entries among Applied (fewer
	// when a sliding window's entry was folded into several windows).
	AppliedRecords int `json:"applied_records"`
	appliedIDs     map[string]struct{}
	// EarlierRuns counts entries of runs before the one whose outputs
	// the results hold (job.Committed.Since), in a ledger that keeps them
	// (a Kafka topic): skipped.
	EarlierRuns int `json:"earlier_runs,omitempty"`
	// OtherRuns counts entries of a group's ledger (a Kafka topic) that
	// another run wrote, not before this group's (BackfillOptions.
	// GroupRun): another job or group that shares the topic. Skipped.
	OtherRuns int `json:"other_runs,omitempty"`
	// ReadAgain counts entries of a record that a later run of the job
	// read again and wrote to the ledger too (the same input position
	// and record: an --append rerun of one day's input, or an --append
	// run killed before a checkpoint and started again): folded once, as
	// the latest run's entry.
	ReadAgain int `json:"read_again,omitempty"`
	// OtherJobs counts entries another job wrote (by its name) to a
	// ledger this one shares (a Kafka late topic, a Postgres table).
	// Skipped.
	OtherJobs int `json:"other_jobs,omitempty"`
	// Corrupt counts ledger lines whose checksum or syntax is wrong:
	// skipped (weir ledger ls shows them).
	Corrupt int `json:"corrupt"`
	// WindowOpen counts entries of windows the live job has not closed
	// at its checkpointed watermark: left alone, the live job owns them.
	WindowOpen int `json:"window_open"`
	// HorizonExpired counts entries of windows the archive no longer
	// keeps (older than archive.horizon): reported, not applied.
	HorizonExpired int `json:"horizon_expired"`
	// HavingDropped counts entries of windows the job's having (of the
	// window's bounds alone, spec.BoundsOnly; a SQL WHERE on them)
	// drops: the live job never wrote them, and their revisions are
	// dropped alike.
	HavingDropped int `json:"having_dropped,omitempty"`
	// SpecMismatch counts entries written under another spec (their
	// hash differs from SpecHash): refused unless AcceptSpec names it.
	SpecMismatch int    `json:"spec_mismatch"`
	SpecHash     string `json:"spec_hash"`
	// Refused counts entries refused for the reason RefusedReason (a
	// window kind backfill cannot revise).
	Refused       int    `json:"refused"`
	RefusedReason string `json:"refused_reason,omitempty"`
	// Windows revised (or, with DryRun, that would be).
	Windows int `json:"windows_revised"`
	// DecimalOverflow and FloatOverflow count the sums and averages of
	// revised windows that went beyond 38 digits (float64 from there) or
	// beyond float64 (written as null), as the live job's summary does.
	DecimalOverflow int `json:"decimal_overflow,omitempty"`
	FloatOverflow   int `json:"float_overflow,omitempty"`
	// Cut says how far the ledger was read, Watermark the live job's
	// checkpointed watermark (etime.MaxTime: the job ended).
	Cut       string     `json:"cut"`
	Watermark etime.Time `json:"watermark"`
	// Revisions are the revised windows' new values, with
	// KeepRevisions.
	Revisions []Revision `json:"-"`
}

// Revision is a window's revision by a backfill: its key values (the
// ledger's JSON, in the spec's key order), its bounds and its new
// aggregate values (as the results keep them: record.SplitResult's
// texts), and the run whose revision it is.
type Revision struct {
	Key        []json.RawMessage
	Start, End int64
	Values     []string
	Run        int64
}

// Backfill folds the entries of the job's late-data ledger into the
// results table of its SQLite or Postgres sink, or the archive of its
// jsonl results.
//
// It first fixes its cut: the ledger position and the watermark of the
// live job's newest checkpoint (the whole ledger and the end of input when
// the job has no checkpoints or its run finished), so that it reads only
// entries a restore of the live job can no longer cut away. Per (key,
// window) of those entries, in one transaction, it loads the row and its
// accumulator (count, sum, min and max are their own accumulators; the
// others are kept in the row's spec.AccColumn), skips the entries already
// applied, folds the rest with the job's own aggregate code, and writes
// the next revision (pane + 1, firing backfill, the cut's watermark)
// together with the applied entry ids. Running it again changes nothing;
// a run killed half way and run again ends in the same state. A window
// the live job has not closed at the cut's watermark is left alone
// (WindowOpen); every window an entry names had expired when the entry
// arrived, so this is a safety net.
//
// A job with jsonl results keeps its windows' newest revisions in an
// archive (the archive block) instead: the backfill folds into those and
// appends each window's next revision to the corrections file
// (fileio.CorrectionsPath), through an outbox in the archive, so a crash between
// the archive's commit and the file's write publishes the same line
// again. Windows older than the archive's horizon are reported
// (HorizonExpired).
//
// Tumbling and sliding windows are revised; entries of session windows
// are refused (a late record can merge sessions, whose old rows would
// have to be retracted).
func Backfill(p *spec.Plan, o BackfillOptions) (BackfillReport, error) {
	s := p
	if err := oneWindow(p); err != nil {
		return BackfillReport{}, &RefusedError{Err: err}
	}
	if t := p.Trigger; !p.CompleteRows() {
		return BackfillReport{}, refused("weir does not revise a job whose trigger (%v) publishes rows that are not its windows' whole state (a purging trigger's hold what came since its last firing, a count or processing-time trigger's miss the records after it): a revision would fold the late records into a part of the window; the ledger keeps the job's too-late records, counted", t)
	}
	if p.Having != "" && !spec.BoundsOnly(p.Having) {
		// Its results hold the windows the having kept: a window it
		// dropped has no row or archived revision to fold into (a
		// having of the bounds alone drops the same windows from the
		// revisions, pass.bounds).
		return BackfillReport{}, refused("weir does not revise a job with a having (%s): a window the having dropped was never written, so its revision would be its late records alone, and a revision could pass the having its window failed; the ledger keeps the job's too-late records, counted", p.Having)
	}
	if r := p.Sinks.Primary(); r != nil && r.Layout == spec.LayoutDeclared {
		return BackfillReport{}, refused("weir does not revise a declared table (sinks.results.layout: declared, %s): it keeps no job, run and pane to revise its rows by; the ledger keeps the job's too-late records, counted; write the results in weir's layout (remove layout) to merge them back", cmp.Or(r.Table, "results"))
	}
	switch rev := revision(p); {
	case s.Archive == nil && rev != connector.ReviseTable:
		also := ""
		for i, r := range s.Sinks.Results {
			if kind, ok := p.Kinds().Lookup(r.Type); ok && kind.Sink != nil && kind.Sink.Revise == connector.ReviseTable {
				also = fmt.Sprintf(", or list sinks.results[%d] (%s) first: backfill revises the first results sink", i, r.Type)
				break
			}
		}
		how := "set archive: {dir: archive} so that the job keeps its closed windows"
		switch {
		case p.WindowKind == spec.Session:
			return BackfillReport{}, refused("weir does not revise session windows (a late record can merge sessions, whose published rows would have to be retracted): the ledger keeps the job's too-late records, counted")
		case rev == connector.NoRevision:
			how = "weir backfill cannot revise them"
		}
		return BackfillReport{}, refused("backfill folds into the windows' stored accumulators: a results table (such as sqlite or postgres) keeps them in its rows; for %s results, %s%s",
			s.Sinks.Primary().Type, how, also)
	case s.Archive != nil && rev != connector.ReviseLog:
		return BackfillReport{}, refused("backfill publishes the revisions of archived windows to results it appends to (such as a jsonl file or a Kafka topic); sinks.results is %s", s.Sinks.Primary().Type)
	}
	if o.CheckpointDir != "" {
		// Read as "no checkpoint yet", a misspelt directory would
		// backfill nothing without a word.
		if fi, err := os.Stat(o.CheckpointDir); err != nil || !fi.IsDir() {
			return BackfillReport{}, refused("--checkpoint-dir %s is not a directory (%v): give the live job's checkpoint directory (weir run --checkpoint-dir)", o.CheckpointDir, cmp.Or(err, errors.New("a file")))
		}
	} else if c := p.Checkpoint; c != nil && c.Dir != "" {
		// The spec's: the job makes it when it starts, so one that is
		// not there is misspelt (or removed), and would read as "no
		// checkpoint yet": nothing folded, without a word.
		dir := job.RunOptions{Dir: o.Dir}.Path(c.Dir)
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return BackfillReport{}, refused("checkpoint.dir %s is not there (%v): a run of the job makes it when it starts; is it misspelt, or was it removed? (a job run with --checkpoint-dir: give that directory to --checkpoint-dir)", dir, cmp.Or(err, errors.New("a file")))
		}
	}
	src, err := openLedgerSource(p, o, false)
	if errors.Is(err, connector.ErrNoLedger) {
		return BackfillReport{}, refused("%v (backfill folds the too-late records the job's runs wrote: run it first)", err)
	}
	if err != nil {
		return BackfillReport{}, err
	}
	defer src.close()
	cut, wm, desc, since, err := backfillCut(p, job.RunOptions{Dir: o.Dir, CheckpointDir: o.CheckpointDir}, src)
	if o.Group && o.GroupRun != 0 {
		since = o.GroupRun // the group's run: every task writes it
	}
	if err == nil && cut == nil && o.Group {
		desc = "all of it; the job runs as a group, whose ledger holds committed records only, each too late for good"
	}
	if err != nil {
		return BackfillReport{}, err
	}
	ps := pass{ctx: cmp.Or(o.Context, context.Background()), o: &o, src: src, cut: cut, wm: wm, desc: desc, since: since, spec: outfmt.SpecHash(p), legacySpec: outfmt.LegacySpecHash(p), job: p.Name, lateness: p.Lateness, keys: p.Key,
		fold:     &specFolder{agg: record.NewAggregator(p, record.KeepsAccs(p)), dec: record.NewDecoder(p, clock.Real{})},
		retryFor: pgio.DefaultConnectRetryFor}
	if p.Having != "" { // of the bounds alone: the others were refused
		ps.bounds = record.NewHaving(&spec.WindowOp{Key: p.Key, Aggregates: p.Aggregates, Having: p.Having}, nil)
	}
	if p.WindowKind == spec.Session {
		ps.refused = "session windows: a late record can merge sessions, whose published rows would have to be retracted; weir does not revise session windows"
	}
	if s.Archive != nil {
		// An archive store opens even with nothing to fold: opening
		// publishes what a killed backfill committed and did not publish.
		ps.always = true
		ps.open = func() (windowStore, error) { return openArchiveStore(p, o, wm) }
		if o.Group {
			ps.open = func() (windowStore, error) { return openGroupStore(ps.ctx, p, ps.o) }
		}
	} else {
		ps.open = func() (windowStore, error) {
			t, err := planTable(context.Background(), p, o.Dir, !o.DryRun)
			if err != nil {
				return nil, err
			}
			ps.retryFor = cmp.Or(t.RetryFor, pgio.DefaultConnectRetryFor)
			return openSQLStore(context.Background(), &o, t)
		}
	}
	return ps.run()
}

// RefusedError is a backfill refused for the job spec it was given (no
// table or archive to revise, no ledger it can read, a checkpoint
// directory that is not one), before it read or changed anything: the
// weir command exits with its usage code for it. Match it with
// errors.As.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// refused is fmt.Errorf's error as a RefusedError.
func refused(format string, args ...any) error {
	return &RefusedError{Err: fmt.Errorf(format, args...)}
}

// pass is one backfill: the ledger it reads and how far, what it folds
// the entries with and the store of the windows it revises.
type pass struct {
	// ctx ends the backfill: between batches, a retry's wait and a
	// Postgres transaction.
	ctx context.Context
	o   *BackfillOptions
	src ledgerSource
	cut *ledgerCut
	// keys are the spec's key fields (Revision.Key's order).
	keys []string
	// wm is the live job's watermark at the cut: windows it has not
	// closed are left to it, and revisions carry it. With entryWM, there
	// is none: each revision carries the newest arrival watermark of
	// the entries folded into it.
	wm      etime.Time
	entryWM bool
	// runScoped: see backfillWindow.runScoped.
	runScoped bool
	desc      string
	// since is the oldest run whose entries count (0: every run's).
	since int64
	// spec is the job spec's hash: entries of another are refused unless
	// o.AcceptSpec names it ("": entries of any). job is the job's name:
	// entries another job wrote are skipped (OtherJobs).
	spec string
	job  string
	// legacySpec is the spec's hash as weir computed it before counting
	// computed fields (outfmt.LegacySpecHash): entries written then are
	// the spec's.
	legacySpec string
	// refused, when set, is why every entry is refused (a window kind
	// backfill cannot revise).
	refused  string
	lateness etime.Duration
	fold     folder
	// retryFor bounds the retries of a batch a Postgres table fails
	// (reviseBatch).
	retryFor time.Duration
	// open opens the window store; always: even with nothing to fold.
	open   func() (windowStore, error)
	always bool
	// bounds is the job's having when it reads the window's bounds
	// alone (nil: none): windows it drops are not revised.
	bounds *record.Having
}

func (ps *pass) run() (BackfillReport, error) {
	o := ps.o
	var rep BackfillReport
	rep.Cut, rep.Watermark, rep.SpecHash, rep.RefusedReason = ps.desc, ps.wm, ps.spec, ps.refused

	// Group the entries by key and window, in window-end then key order.
	type keyWindow struct {
		key        string // the key object, compact JSON
		start, end int64
	}
	type group struct {
		keyWindow
		entries []decodedEntry
	}
	groups := map[keyWindow]*group{}
	var order []*group
	// newest is, by a record's identity (its entry id and text), the
	// newest run whose entry holds it: a run that read the same input
	// again (--append) wrote the same record again.
	newest := map[string]int64{}
	corrupt, err := ps.src.scan(ps.cut, func(e ledger.Entry) error {
		if e.Run != 0 && (e.Job == "" || e.Job == ps.job) {
			// Before the filter: a backfill of some entries folds a
			// record read again as the one a full backfill would.
			same := e.ID + "\x00" + string(e.Record)
			newest[same] = max(newest[same], e.Run)
		}
		if o.Filter != nil && !o.Filter(e) {
			return nil
		}
		if e.Job != "" && e.Job != ps.job {
			rep.OtherJobs++ // another job's, in a ledger they share
			return nil
		}
		if e.Run != 0 && e.Run < ps.since {
			// An earlier run's, in a ledger that cannot start over (a
			// Kafka topic): the results hold this run's only.
			rep.EarlierRuns++
			return nil
		}
		if o.GroupRun != 0 && e.Run != o.GroupRun {
			rep.OtherRuns++ // a later run: another group's
			return nil
		}
		rep.Entries++
		if e.Spec != "" && ps.spec != "" && e.Spec != ps.spec && e.Spec != ps.legacySpec && !slices.Contains(o.AcceptSpec, e.Spec) {
			rep.SpecMismatch++
			if o.Out != nil {
				fmt.Fprintf(o.Out, "entry %s refused: spec_mismatch (written under spec %s, this one is %s)\n", e.ID, e.Spec, ps.spec)
			}
			return nil
		}
		if ps.refused != "" && o.Out != nil {
			fmt.Fprintf(o.Out, "entry %s refused: unsupported_window_kind (%s)\n", e.ID, ps.refused)
		}
		de := decodedEntry{id: appliedID(e), watermark: etime.Time(e.Watermark), run: e.Run}
		if e.Run != 0 {
			de.same = e.ID + "\x00" + string(e.Record)
		}
		if ps.refused == "" { // refused entries are only counted
			r, err := ps.fold.decode(e)
			if err != nil {
				// Not applied, so not recorded: reported again by every run.
				rep.Unreadable++
				return nil
			}
			de.r = r
		}
		key := string(e.Key) // compact, as the live job wrote it
		for _, w := range e.Windows {
			k := keyWindow{key, w[0], w[1]}
			g := groups[k]
			if g == nil {
				g = &group{keyWindow: k}
				groups[k] = g
				order = append(order, g)
			}
			g.entries = append(g.entries, de)
		}
		return nil
	})
	again := map[string]bool{} // the entries read again, by id
	for _, g := range order {
		g.entries = slices.DeleteFunc(g.entries, func(e decodedEntry) bool {
			if e.same == "" || newest[e.same] == e.run {
				return false
			}
			again[e.id] = true
			return true
		})
	}
	rep.ReadAgain = len(again)
	rep.Corrupt = len(corrupt)
	if o.Out != nil {
		for _, c := range corrupt {
			fmt.Fprintf(o.Out, "entry unreadable: %s\n", c)
		}
	}
	if err != nil {
		return rep, err
	}
	rep.LateWindows = len(order)
	slices.SortFunc(order, func(a, b *group) int {
		if c := cmp.Compare(a.end, b.end); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	if ps.refused != "" {
		rep.Refused = rep.Entries - rep.SpecMismatch
		return rep, nil
	}
	if len(order) == 0 && !ps.always {
		return rep, nil
	}
	st, err := ps.open()
	if err != nil {
		return rep, err
	}
	defer st.close()
	horizon, err := st.horizon()
	if err != nil {
		return rep, err
	}
	var batch []backfillWindow
	perTx := cmp.Or(o.WindowsPerTx, DefaultWindowsPerTx)
	for _, g := range order {
		// Each entry's window closed at its own operator subtask's
		// watermark when it arrived (that is why it is in the ledger) and
		// at the checkpoint's; an entry for which either does not hold
		// (a ledger written by hand, or by another job) leaves the window
		// to the live job.
		cleanup := window.CleanupTime(true, window.Window{Start: etime.Time(g.start), End: etime.Time(g.end)}, ps.lateness)
		closed := g.entries[:0:0]
		wm := ps.wm
		if ps.entryWM {
			wm = etime.MinTime
		}
		for _, e := range g.entries {
			if cleanup > e.watermark || !ps.entryWM && cleanup > ps.wm {
				rep.WindowOpen++
				continue
			}
			closed = append(closed, e)
			if ps.entryWM {
				wm = max(wm, e.watermark)
			}
		}
		if g.entries = closed; len(closed) == 0 {
			continue
		}
		if ps.bounds != nil && !ps.bounds.KeepWindow([]etime.Time{etime.Time(g.start), etime.Time(g.end), etime.Time(g.end - 1)}) {
			rep.HavingDropped += len(g.entries)
			continue
		}
		if etime.Time(g.end) < horizon {
			// The archive no longer has the window.
			rep.HorizonExpired += len(g.entries)
			continue
		}
		w := backfillWindow{o: o, rep: &rep, fold: ps.fold, runScoped: ps.runScoped, wm: wm, key: g.key, keyNames: ps.keys, start: g.start, end: g.end, entries: g.entries}
		if err := json.Unmarshal([]byte(g.key), &w.keyVals); err != nil {
			return rep, fmt.Errorf("window %s [%d,%d): ledger entry key: %w", g.key, g.start, g.end, err)
		}
		if ts, ok := st.(trimmedStore); ok {
			gone, err := ts.trimmed(&w)
			if err != nil {
				return rep, err
			}
			if gone {
				// Removed beyond the horizon as the job ran.
				rep.HorizonExpired += len(g.entries)
				continue
			}
		}
		if err := ps.ctx.Err(); err != nil {
			return rep, err
		}
		if batch = append(batch, w); len(batch) >= perTx {
			if err := ps.reviseBatch(st, &rep, batch); err != nil {
				return rep, err
			}
			batch = batch[:0]
		}
	}
	return rep, ps.reviseBatch(st, &rep, batch)
}

// retrier is a window store whose transactions may fail for a while (a
// Postgres table): a batch that fails with a transient error is rolled
// back and revised again.
type retrier interface {
	transient(err error) bool
	rollback()
}

// reviseBatch revises the windows of batch in one transaction. In a
// Postgres results table a transient error (a connection reset or
// refused, no answer within the sink's timeout) rolls it back, and it is
// revised again from its first window, as the live sink retries: waiting
// pgio.DefaultMinBackoff, doubling up to pgio.DefaultMaxBackoff, for the
// sink's retry_for (default its connect_retry_for, default
// pgio.DefaultConnectRetryFor: ps.retryFor), each retry told to o.Warn.
// The report's counts and the lines for o.Out are those of the try that
// committed.
func (ps *pass) reviseBatch(st windowStore, rep *BackfillReport, batch []backfillWindow) error {
	if len(batch) == 0 {
		return st.commit()
	}
	o := ps.o
	r, _ := st.(retrier)
	limit := ps.retryFor
	start, backoff := time.Now(), pgio.DefaultMinBackoff
	bo := *o
	for attempt := 1; ; attempt++ {
		saved := *rep
		var out bytes.Buffer
		if o.Out != nil {
			bo.Out = &out
		}
		err := func() error {
			for i := range batch {
				w := &batch[i]
				w.o, w.rep = &bo, rep
				if err := st.begin(w); err != nil {
					return fmt.Errorf("window %s [%d,%d): %w", w.key, w.start, w.end, err)
				}
				if err := w.apply(st, w.entries); err != nil {
					return fmt.Errorf("window %s [%d,%d): %w", w.key, w.start, w.end, err)
				}
			}
			return st.commit()
		}()
		if err != nil && ps.ctx.Err() != nil {
			return ps.ctx.Err() // cancelled: not Postgres's failure
		}
		if err == nil || r == nil || !r.transient(err) || time.Since(start)+backoff > limit {
			if err != nil {
				*rep = saved // rolled back: the report counts what committed
			} else if o.Out != nil {
				o.Out.Write(out.Bytes())
			}
			if err != nil && r != nil && r.transient(err) {
				return fmt.Errorf("gave up after %d attempts in %v (retry_for %v): %w", attempt, time.Since(start).Round(time.Millisecond), limit, err)
			}
			return err
		}
		r.rollback()
		*rep = saved
		if o.Warn != nil {
			o.Warn(fmt.Sprintf("backfill: Postgres unavailable (%v); revising the batch of %d windows again in %v (attempt %d)", err, len(batch), backoff, attempt+1))
		}
		select {
		case <-time.After(backoff):
		case <-ps.ctx.Done():
			return ps.ctx.Err()
		}
		backoff = min(2*backoff, pgio.DefaultMaxBackoff)
	}
}

func (s *sqlStore) transient(err error) bool { return s.t.Dialect.Transient(err) }

// rollback ends a failed batch's transaction (on a broken connection,
// database/sql drops it from the pool).
func (s *sqlStore) rollback() {
	if s.tx != nil {
		_ = s.tx.Rollback()
		s.tx = nil
		s.cancel()
	}
}

// trimmedStore is a windowStore whose windows the live job may remove
// beyond its horizon after the backfill computed it (a group's archive,
// which its members trim by the group's watermark as they run): trimmed
// reports whether window w was so removed, to be counted as expired
// rather than revised as a window that never fired.
type trimmedStore interface {
	trimmed(w *backfillWindow) (bool, error)
}

// windowStore is where a backfill finds and revises windows: a SQL
// results table, or the archive of a job with file or Kafka results.
// Windows are revised in batches: begin starts a window (and, first, a
// batch), commit makes the batch's revisions and applied ids durable
// together.
type windowStore interface {
	// horizon is the window end below which the store has no windows.
	horizon() (etime.Time, error)
	begin(w *backfillWindow) error
	// applied returns the entry ids applied to the window.
	applied(w *backfillWindow) (map[string]bool, error)
	// load returns the window's stored values and pane (nil and -1: it
	// never fired). A value is nil, an int64, a float64, a string (a
	// text column), []byte (SQLite's text of a number beyond both),
	// record.NumText (the exact text of a number) or json.RawMessage (a
	// Postgres jsonb column's JSON); it is the callee's to change.
	load(w *backfillWindow) ([]any, int64, error)
	// write records the window's next revision: its values (the
	// aggregates, then the accumulators if the job keeps them) and the
	// entry ids it applied.
	write(w *backfillWindow, pane int64, values []string, ids []string) error
	commit() error
	close() error
}

// table is a results table a backfill revises, as its sink wrote it:
// the store its kind opened (connector.TableStore) and what a refusal
// says.
type table struct {
	*connector.TableStore
	// job is the job whose rows are revised (the job column).
	job string
	// columnsFix, when set, is the fix added to the refusal of a table
	// whose columns differ from Keys and Values; missingFix, the fix of
	// the refusal of a table that is not there (default: the spec's).
	columnsFix, missingFix string
	// noRows is the refusal of a table without rows of job: with none a
	// backfill would give each window a row of its late records alone.
	noRows string
}

// planTable opens the results table of a job spec's first results sink
// through its kind (connector.SinkKind.OpenStore); create: the backfill
// will write.
func planTable(ctx context.Context, p *spec.Plan, dir string, create bool) (table, error) {
	st, err := openPlanStore(ctx, p, dir, create)
	if err != nil {
		return table{}, err
	}
	ts, ok := st.(*connector.TableStore)
	if !ok {
		st.Close()
		return table{}, fmt.Errorf("sinks.results: kind %s keeps no results table", p.Sinks.Primary().Type)
	}
	return table{TableStore: ts, job: p.Name,
		noRows: fmt.Sprintf("the results of job %q are not there (removed by a fresh run of a copy of the job, or never written?); run the job, or resume it, before a backfill, which would give each window a row of its late records alone", p.Name)}, nil
}

// openPlanStore opens the results of a job spec's first results sink as
// backfill and the complete answer reach them (job.OpenResultsStore); a
// kind that keeps none is a refusal.
func openPlanStore(ctx context.Context, p *spec.Plan, dir string, create bool) (connector.ResultsStore, error) {
	st, err := job.OpenResultsStore(ctx, p, dir, create)
	switch {
	case errors.Is(err, job.ErrNoStore):
		err = &RefusedError{Err: err}
	case errors.Is(err, connector.ErrNoResults):
		err = &RefusedError{Err: fmt.Errorf("sinks.results: %w; run the job before a backfill", err)}
	}
	return st, err
}

// oneWindow refuses a plan whose graph feeds several windows from one
// read: their ledger entries do not say which window they missed, and
// the plan's key and aggregates are one window's.
func oneWindow(p *spec.Plan) error {
	if path, err := p.Graph.Path(); err == nil && len(path.Windows) > 1 {
		return fmt.Errorf("the plan has %d windows over its read; backfill and the complete answer work on a job of one window", len(path.Windows))
	}
	return nil
}

// revision is how backfill revises the results of a job spec's first
// results sink (NoRevision: its kind is not registered).
func revision(p *spec.Plan) connector.Revision { return p.Kinds().Revise(p.Sinks.Primary().Type) }

// sqlStore is a SQLite or Postgres results table.
type sqlStore struct {
	ctx  context.Context
	db   *resultsDB
	t    table
	o    *BackfillOptions
	tx   *sql.Tx
	args []any // the window's key values, window_start, window_end
	// timeout bounds each Postgres transaction (the sink's timeout): a
	// stalled connection fails it, and reviseBatch tries it again;
	// cancel ends the transaction's context.
	timeout time.Duration
	cancel  context.CancelFunc
	// newest is the newest run of the job's rows: a window that never
	// fired gets its first row as that run's.
	newest int64
}

// openSQLStore opens table t for a backfill with options o; t.Timeout
// (0: none) bounds each transaction.
func openSQLStore(ctx context.Context, o *BackfillOptions, t table) (*sqlStore, error) {
	db, err := openResultsDB(ctx, t, !o.DryRun)
	if err != nil {
		return nil, err
	}
	st := &sqlStore{ctx: ctx, db: db, t: t, o: o, timeout: t.Timeout}
	if t.noRows != "" {
		// A wrong table or job, or a table whose rows are gone, would
		// otherwise give each window a new row of the late records only.
		var found bool // EXISTS: stops at the first row, where COUNT reads them all
		q := t.Dialect.Rebind(`SELECT EXISTS (SELECT 1 FROM ` + quoteSQL(t.Table) + ` WHERE "job" = ?)`)
		err := db.db.QueryRowContext(ctx, q, t.job).Scan(&found)
		if err == nil && !found {
			// Refused: nothing was changed, and the job (or the table
			// the spec names) is what must change.
			err = refused("it holds no rows of job %q: %s", t.job, t.noRows)
		}
		if err != nil {
			t.Close()
			where := "" // a connection string may hold a password
			if t.Where != "" {
				where = " in " + t.Where
			}
			return nil, fmt.Errorf("table %s%s: %w", quoteSQL(t.Table), where, err)
		}
	}
	if err := db.db.QueryRowContext(ctx, db.maxRun, t.job).Scan(&st.newest); err != nil {
		t.Close()
		return nil, err
	}
	return st, nil
}

func (s *sqlStore) horizon() (etime.Time, error) { return etime.MinTime, nil }

func (s *sqlStore) begin(w *backfillWindow) error {
	s.args = append(s.args[:0], s.t.job)
	for _, k := range s.t.Keys {
		// As the live job wrote it: canonical (a Postgres ledger gives
		// jsonb's text, which writes numbers and orders members its own
		// way).
		kv, ok := w.keyVals[k.Name]
		if !ok {
			return fmt.Errorf("the ledger entry's key has no %s (it has %s): a results table's key columns are named as the ledger's keys", k.Name, w.key)
		}
		c, err := CanonicalJSON(kv)
		if err != nil {
			return fmt.Errorf("ledger entry key %s: %w", k.Name, err)
		}
		v, err := s.db.arg(k.Type, c, true)
		if err != nil {
			return fmt.Errorf("ledger entry key %s: %w", k.Name, err)
		}
		s.args = append(s.args, v)
	}
	s.args = append(s.args, w.start, w.end)
	if s.tx == nil {
		ctx, cancel := context.WithCancel(s.ctx)
		if s.timeout > 0 {
			ctx, cancel = context.WithTimeout(s.ctx, s.timeout)
		}
		tx, err := s.db.db.BeginTx(ctx, nil)
		if err != nil {
			cancel()
			return err
		}
		s.tx, s.cancel = tx, cancel
		s.o.crash("backfill-begun")
	}
	return nil
}

func (s *sqlStore) applied(w *backfillWindow) (map[string]bool, error) {
	done := map[string]bool{}
	if s.db.noneApplied {
		return done, nil
	}
	rows, err := s.tx.Query(s.db.applied, s.t.job, w.key, w.start, w.end)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		done[id] = true
	}
	return done, rows.Err()
}

func (s *sqlStore) load(w *backfillWindow) ([]any, int64, error) {
	vals := make([]any, len(s.t.Values))
	pane := int64(-1)
	ptrs := []any{&w.run, &pane}
	for i := range vals {
		ptrs = append(ptrs, &vals[i])
	}
	switch err := s.tx.QueryRow(s.db.sel, s.args...).Scan(ptrs...); {
	case err == sql.ErrNoRows:
		w.run = w.firstRun(s.newest) // the window never fired
		return nil, -1, nil
	case err != nil:
		return nil, 0, err
	}
	for i := range vals {
		if t, ok := vals[i].(string); ok && s.t.Dialect.TextIsJSON(s.t.Values[i].Type) {
			if isNumberText(t) {
				vals[i] = record.NumText(t) // numeric and jsonb keep a number's digits
			} else if s.t.Values[i].Type == connector.JSONB {
				vals[i] = json.RawMessage(t)
			}
		}
	}
	return vals, pane, nil
}

func (s *sqlStore) write(w *backfillWindow, pane int64, values []string, ids []string) error {
	set := make([]any, 0, len(values)+2)
	for i, v := range values {
		x, err := s.db.arg(s.t.Values[i].Type, []byte(v), false)
		if err != nil {
			return err
		}
		set = append(set, x)
	}
	var err error
	if pane == 0 { // the window never fired: its first row
		_, err = s.tx.Exec(s.db.ins, append(append(slices.Clone(s.args), "backfill", w.run, int64(0), int64(w.wm)), set...)...)
	} else {
		var res sql.Result
		if res, err = s.tx.Exec(s.db.upd, append(append(set, pane, int64(w.wm)), s.args...)...); err == nil {
			if n, _ := res.RowsAffected(); n != 1 {
				// Removed since load (a fresh start's Reset): its applied
				// ids must not be recorded.
				err = fmt.Errorf("the window's row is gone (%d rows updated): the job started over while the backfill ran; run it again", n)
			}
		}
	}
	if err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := s.tx.Exec(s.db.mark, s.t.job, w.key, w.start, w.end, id); err != nil {
			return err
		}
	}
	return nil
}

func (s *sqlStore) commit() error {
	if s.tx == nil {
		return nil
	}
	s.o.crash("backfill-written")
	err := s.tx.Commit()
	s.tx = nil
	s.cancel()
	if err != nil {
		return err
	}
	s.o.crash("backfill-committed")
	return nil
}

func (s *sqlStore) close() error {
	s.rollback()
	return s.t.Close()
}

func (o *BackfillOptions) crash(point string) {
	if o.Crash != nil {
		o.Crash(point)
	}
}

// backfillCut finds how far a backfill reads the ledger src and the live
// job's watermark: the newest checkpoint's states of the late sinks (a
// ledger directory's position, a Postgres ledger's epoch) and output
// watermark. A job without
// checkpoints, or whose run finished, has its whole ledger read (a nil
// cut) at the end of input; a job that has not completed a checkpoint yet
// has committed nothing (empty positions, epoch 0). since is the oldest
// run whose entries count (job.Committed.Since; 0: every run's).
func backfillCut(p *spec.Plan, o job.RunOptions, src ledgerSource) (cut *ledgerCut, wm etime.Time, desc string, since int64, err error) {
	c, ok, err := job.LastCommitted(p, o)
	switch {
	case err != nil:
		return nil, 0, "", 0, err
	case !ok:
		return nil, etime.MaxTime, "all of it; the job has no checkpoints, so its run is taken as ended", 0, nil
	case c.Finished:
		return &ledgerCut{all: true, run: c.Run, entries: c.Entries}, etime.MaxTime, "all of it; the job's run finished", c.Since, nil
	case c.Checkpoint == 0:
		return &ledgerCut{}, etime.MinTime, "nothing yet; the job has not completed a checkpoint", 0, nil
	}
	cut = &ledgerCut{states: c.SinkStates, run: c.Run, entries: c.Entries}
	return cut, c.Watermark, fmt.Sprintf("checkpoint %d: %s; live watermark %s", c.Checkpoint, src.describe(cut), c.Watermark), c.Since, nil
}

// resultsDB is a results table (connector.TableStore), with the
// statements a backfill runs on one row: their WHERE (or VALUES) takes
// the key values, window_start and window_end, typed and passed as the
// table's sink passes them (the dialect's Param and Arg).
type resultsDB struct {
	db  *sql.DB
	dia connector.SQLDialect
	// sel reads pane, the values and the accumulators; upd and ins write
	// the next revision; applied lists a window's applied ids and mark
	// adds one.
	sel, upd, ins, applied, mark string
	// maxRun reads the newest run of the job's rows.
	maxRun string
	// noneApplied: the applied table did not exist (a dry run before any
	// backfill).
	noneApplied bool
}

// openResultsDB readies results table rt's queries; with create it
// creates the applied table beside it (named after it,
// _backfill_applied). It closes rt when it fails.
func openResultsDB(ctx context.Context, rt table, create bool) (d *resultsDB, err error) {
	d = &resultsDB{db: rt.DB, dia: rt.Dialect}
	defer func() {
		if err != nil {
			rt.Close()
		}
	}()
	table := rt.Table
	// A table that is not there is refused, not created (the applied
	// table beside it would be).
	if ok, err := d.dia.HasTable(ctx, d.db, table); err != nil {
		// The first statement: a database that cannot be read at all
		// (a corrupt file) fails here; say which.
		if rt.Where != "" {
			return nil, fmt.Errorf("sinks.results: reading %s: %w", rt.Where, err)
		}
		return nil, fmt.Errorf("sinks.results: %w", err)
	} else if !ok {
		where := ""
		if rt.Where != "" {
			where = " in " + rt.Where
		}
		return nil, refused("table %s%s is not there: %s", quoteSQL(table), where, cmp.Or(rt.missingFix, "run the job before a backfill, or name the table it writes in sinks.results.table"))
	}
	// A table of another layout (of weir before typed columns, or named
	// columns it lacks) is refused as the sink refuses it.
	if err := d.dia.CheckTable(ctx, d.db, table, rt.Keys, rt.Values); err != nil {
		if rt.columnsFix != "" {
			err = fmt.Errorf("%w; %s", err, rt.columnsFix)
		}
		if errors.Is(err, connector.ErrTableLayout) {
			err = &RefusedError{Err: err}
		}
		return nil, err
	}
	appliedName := pgio.AppliedTable(table)
	applied := quoteSQL(appliedName)
	if create {
		if _, err := d.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+applied+` (job TEXT NOT NULL, key TEXT NOT NULL, window_start BIGINT NOT NULL, window_end BIGINT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (job, key, window_start, window_end, id))`); err != nil {
			return nil, fmt.Errorf("create %s: %w", applied, err)
		}
		// One of weir before runs has no job column (and its results
		// table, no job and run: the sink refuses that one too).
		ok, err := d.dia.HasColumn(ctx, d.db, appliedName, "job")
		if err != nil || !ok {
			return nil, cmp.Or(err, fmt.Errorf("table %s was made by a weir before runs (it has no job column): drop it, with the results table %s, and run the job again", applied, quoteSQL(table)))
		}
	} else {
		ok, err := d.dia.HasTable(ctx, d.db, appliedName)
		if err != nil {
			return nil, err
		}
		d.noneApplied = !ok
	}
	// The placeholder of a key or value column: typed as the sink's.
	keyDefs, valDefs := rt.Keys, rt.Values
	var cols, sels, sets, keyPHs, valPHs []string
	for _, v := range valDefs {
		c := quoteSQL(v.Name)
		cols, sels = append(cols, c), append(sels, d.dia.Text(c))
		sets, valPHs = append(sets, c+" = "+d.dia.Param(v.Type)), append(valPHs, d.dia.Param(v.Type))
	}
	conds := []string{`"job" = ?`}
	for _, k := range keyDefs {
		conds, keyPHs = append(conds, quoteSQL(k.Name)+" = "+d.dia.Param(k.Type)), append(keyPHs, d.dia.Param(k.Type))
	}
	where := strings.Join(append(conds, "window_start = ?", "window_end = ?"), " AND ")
	t := quoteSQL(table)
	d.sel = `SELECT run, pane, ` + strings.Join(sels, ", ") + ` FROM ` + t + ` WHERE ` + where + d.dia.ForUpdate()
	d.upd = `UPDATE ` + t + ` SET ` + strings.Join(sets, ", ") + `, firing = 'backfill', pane = ?, watermark = ? WHERE ` + where
	vals := append([]string{"?"}, keyPHs...)
	vals = append(vals, slices.Repeat([]string{"?"}, len(spec.ResultColumns))...)
	vals = append(vals, valPHs...)
	d.ins = `INSERT INTO ` + t + ` (` + strings.Join(append(append(append([]string{`"job"`}, quoteAll(names(keyDefs))...), spec.ResultColumns...), cols...), ", ") + `) VALUES (` + strings.Join(vals, ", ") + `)`
	d.maxRun = `SELECT COALESCE(MAX(run), 0) FROM ` + t + ` WHERE "job" = ?`
	d.applied = `SELECT id FROM ` + applied + ` WHERE job = ? AND key = ? AND window_start = ? AND window_end = ?`
	d.mark = `INSERT INTO ` + applied + ` (job, key, window_start, window_end, id) VALUES (?, ?, ?, ?, ?)`
	for _, q := range []*string{&d.sel, &d.upd, &d.ins, &d.maxRun, &d.applied, &d.mark} {
		*q = d.dia.Rebind(*q)
	}
	return d, nil
}

// names are the columns' names.
func names(defs []connector.ColumnDef) []string {
	n := make([]string, len(defs))
	for i, d := range defs {
		n[i] = d.Name
	}
	return n
}

// arg is the argument for a JSON key or value in a column of type t
// (key: a key column), as the table's sink stores it.
func (d *resultsDB) arg(t connector.ColumnType, v []byte, key bool) (any, error) {
	return d.dia.Arg(t, v, key)
}

// value turns a column of type t read through the dialect's Text into
// what the SQLite driver would give: a text column's text is the value
// (a string key, the accumulators), JSON text is read as JSON (a
// number's digits, jsonb's JSON, written canonically first).
func (d *resultsDB) value(t connector.ColumnType, v any) (any, error) {
	if v == nil || !d.dia.TextIsJSON(t) {
		return v, nil
	}
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("unexpected %T", v)
	}
	return sqlValue([]byte(s))
}

// backfillWindow is one window's backfill.
type backfillWindow struct {
	o    *BackfillOptions
	rep  *BackfillReport
	fold folder
	// runScoped: the entries carry no run (a Go program's ledger), so
	// the ids recorded as applied are qualified by the stored row's run
	// ("run/id"): a later run of the job that keeps the earlier run's
	// rows (a higher run, no Reset) reads other records at the same
	// positions.
	runScoped  bool
	wm         etime.Time
	key        string // the ledger's key object, compact JSON
	keyVals    map[string]json.RawMessage
	keyNames   []string // the spec's key fields, in order
	start, end int64
	entries    []decodedEntry // the ledger entries that missed the window
	// run is the run of the window's stored revision (set by load; for a
	// window that never fired, firstRun's): its next revision is that
	// run's next pane.
	run int64
}

// decodedEntry is a ledger entry whose record a backfill has decoded (once,
// however many windows it missed): its id, the watermark it arrived at
// and the record, stamped with its event time.
type decodedEntry struct {
	id        string
	watermark etime.Time
	r         any   // folder.decode's
	run       int64 // of the run that wrote it (0: not recorded)
	// same identifies its record among runs: its entry id and text (""
	// for an entry of no run).
	same string
}

// firstRun is the run of the first revision of a window that never fired:
// the newest run of its entries' (whose input its records were), else
// newest (the job's newest run), when the entries record none.
func (w *backfillWindow) firstRun(newest int64) int64 {
	var run int64
	for _, e := range w.entries {
		run = max(run, e.run)
	}
	if run == 0 {
		return newest
	}
	return run
}

// apply folds the entries not applied yet into the window.
func (w *backfillWindow) apply(st windowStore, entries []decodedEntry) error {
	var vals []any
	pane, loaded := int64(-1), false
	if w.runScoped { // the ids are the stored row's run's: load it first
		var err error
		if vals, pane, err = st.load(w); err != nil {
			return err
		}
		loaded = true
	}
	done, err := st.applied(w)
	if err != nil {
		return err
	}
	var ids []string
	var fresh []any
	for _, e := range entries {
		id := e.id
		if w.runScoped {
			id = strconv.FormatInt(w.run, 10) + "/" + id
		}
		if done[id] {
			w.rep.AlreadyApplied++
			continue
		}
		done[id] = true // a ledger holds an id once; never fold it twice
		ids, fresh = append(ids, id), append(fresh, e.r)
	}
	if len(ids) == 0 {
		return nil
	}
	if !loaded {
		if vals, pane, err = st.load(w); err != nil {
			return err
		}
	}
	ac, err := w.fold.seed(vals)
	if err != nil {
		return err
	}
	for _, r := range fresh {
		ac = w.fold.add(ac, r)
	}
	applied := len(ids)
	w.rep.Applied += applied
	if w.rep.appliedIDs == nil {
		w.rep.appliedIDs = map[string]struct{}{}
	}
	for _, id := range ids {
		if _, ok := w.rep.appliedIDs[id]; !ok {
			w.rep.appliedIDs[id] = struct{}{}
			w.rep.AppliedRecords++
		}
	}
	w.rep.Windows++
	result, shown, err := w.fold.result(ac, w.rep)
	if err != nil {
		return err
	}
	if w.o.Out != nil {
		fmt.Fprintf(w.o.Out, "window %s [%d,%d): %d entries, pane %d -> %d: %s\n", w.key, w.start, w.end, applied, pane, pane+1, strings.Join(shown, " "))
	}
	if w.o.KeepRevisions {
		r := Revision{Start: w.start, End: w.end, Values: slices.Clone(shown), Run: w.run}
		for _, k := range w.keyNames {
			r.Key = append(r.Key, w.keyVals[k])
		}
		w.rep.Revisions = append(w.rep.Revisions, r)
	}
	if w.o.DryRun {
		return nil
	}
	return st.write(w, pane+1, result, ids)
}

// appliedID is what identifies a ledger entry among the entry ids
// applied to a window: its run and id ("run/id"; the id alone in entries
// of weir before runs), since a later run kept beside it (--append) may
// read other input at the same positions.
func appliedID(e ledger.Entry) string {
	if e.Run == 0 {
		return e.ID
	}
	return strconv.FormatInt(e.Run, 10) + "/" + e.ID
}

// entryNo is the line number (the arrival order first, last and collect
// use) of the record with ledger entry id: the line or stream sequence,
// or for Kafka ("partition:offset") the offset + 1, as the live job
// numbers it.
func entryNo(id string) int64 {
	if _, off, ok := strings.Cut(id, ":"); ok {
		n, _ := strconv.ParseInt(off, 10, 64)
		return n + 1
	}
	n, _ := strconv.ParseInt(id, 10, 64)
	return n
}

// isNumberText reports whether a stored JSON value is a number.
func isNumberText(v string) bool { return v != "" && (v[0] == '-' || v[0] >= '0' && v[0] <= '9') }

func quoteSQL(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = quoteSQL(n)
	}
	return out
}
