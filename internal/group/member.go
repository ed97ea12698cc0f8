// Package group runs a job spec as one member of a group of weir
// processes sharing one job on a Kafka consumer group (weir run
// --instance): each partition of the input is a task, the members split
// the tasks by cooperative rebalancing, and each member commits its
// tasks' outputs, their checkpoints (to a compacted changelog topic) and
// their input offsets (whose metadata names each task's checkpoint) in one
// Kafka transaction. docs/DESIGN.md, "Group mode", says why it is built so.
package group

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/kafkaio"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/archive"
	"github.com/weirstream/weir/internal/monitor"
	"github.com/weirstream/weir/internal/outfmt"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/spec"
	"github.com/weirstream/weir/state"
)

// Options configure a member.
type Options struct {
	// Plan is the job; Check(Plan) must accept it.
	Plan *spec.Plan
	// Instance is the member's name (weir run --instance): its static
	// group membership and its transactional id, weir-<job>-<Instance>.
	Instance string
	// StateDir is the member's directory (--state-dir): Run locks it and
	// records the job, spec and instance in it.
	StateDir string
	// Run are the tasks' run options (Dir, Logger, Info, Warn, Clock);
	// Task and Parallelism are set per task.
	Run job.RunOptions
	// CommitInterval is how often the member commits (default: the
	// spec's group.commit_interval, else 200ms); SessionTimeout is the
	// group's (group.session_timeout, else 10s); TransactionTimeout the
	// producer's (group.transaction_timeout, else 10s).
	CommitInterval, SessionTimeout, TransactionTimeout time.Duration
	// Logger receives the member's log (default: discard).
	Logger *slog.Logger
	// Info is told what a person should know (tasks assigned, revoked).
	Info func(msg string)
	// OnCommit, when set, is told each task's checkpoint id and watermark
	// (its partition's) once its transaction committed, on the member's
	// goroutine.
	OnCommit func(task int32, checkpoint int64, watermark etime.Time)
	// Summary, when set, is given the group's summary when every task
	// read its input to the end (stop_at_end): each task's counters at its
	// end, summed.
	Summary func(job.Summary)
	// Stopped, when set, is given at a graceful stop the tasks the member
	// ran and their counters as they stopped (counted from the group's
	// start: a task restored from the changelog carries its counts), and
	// the other members the group had then (nil when it could not tell).
	Stopped func(tasks []int32, s job.Summary, others []string)
	// Registerer, when set, receives the member's metrics (weir_group_*),
	// the group-wide gauges among them.
	Registerer prometheus.Registerer
	// Serve, when set, is called once the member joined its group with
	// the member's Status and Health, for an admin server; it must not
	// block, and an error stops the member. Both may be called from any
	// goroutine until Run returns (the caller stops serving then).
	Serve func(Served) error
	// StallAfter is how long the member may commit nothing before it is
	// stalled (default 10s): it says so on stderr, and Health, which
	// an admin server's /healthz reads, names the cause.
	StallAfter time.Duration
	// ArchiveTrimEvery is how often the member removes, from its window
	// tasks' archive partitions (a job with an archive block), the
	// windows that ended before the group's archiving watermark less
	// archive.horizon (default 10m): a group that is never backfilled
	// keeps its archive to the horizon, as one process does.
	ArchiveTrimEvery time.Duration
	// Crash, when set, is called at named points (crash tests kill the
	// process there): group-produced (a transaction's records produced,
	// before it ends), group-committed (after it committed, before the
	// tasks hear of it), group-restore (a task's checkpoint read, before
	// the task starts), group-revoke (tasks revoked, before they stop) and
	// group-stop (a graceful stop, before its last commit).
	Crash func(point string)
}

// ErrRefused marks an error of Run that refuses the member before it
// joined (its state directory, its spec, the group's state), or of Reset
// that refuses a group with members: a usage error, which the caller
// reports as such (weir exits 2).
var ErrRefused = errors.New("refused")

// refused wraps err as a refusal.
func refused(err error) error { return fmt.Errorf("%w%w", err, refusedMark{}) }

// refusedMark makes an error match ErrRefused without changing its text.
type refusedMark struct{}

func (refusedMark) Error() string        { return "" }
func (refusedMark) Is(target error) bool { return target == ErrRefused }

// Name is the group of a job: group.name, else weir-<job>.
func Name(p *spec.Plan) string {
	if p.Group != nil && p.Group.Name != "" {
		return p.Group.Name
	}
	return "weir-" + jobName(p)
}

func jobName(p *spec.Plan) string {
	if p.Name == "" {
		return "job"
	}
	return p.Name
}

// ChangelogTopic is the changelog topic of a job's group.
func ChangelogTopic(p *spec.Plan) string { return Name(p) + "-changelog" }

// ArchiveTopic is the topic that keeps the group's archive (a job with
// an archive block): each window's newest revision, for weir backfill.
func ArchiveTopic(p *spec.Plan) string { return Name(p) + "-archive" }

var instanceRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// groupRE: a group's name is a Kafka topic name's prefix (its changelog
// topic, <group>-changelog; a topic name has at most 249 characters).
var groupRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,200}$`)

// CheckInstance refuses a member name that is not 1-64 of [A-Za-z0-9._-].
func CheckInstance(name string) error {
	if !instanceRE.MatchString(name) {
		return fmt.Errorf("--instance %q: a member's name is 1-64 characters of A-Z, a-z, 0-9, '.', '_' and '-' (it is part of its transactional id)", name)
	}
	return nil
}

// Served is what a member gives its admin server (Options.Serve): its
// Status and Health, which any goroutine may call until Run returns.
type Served struct {
	Status func(context.Context) *monitor.GroupStatus
	Health func() []string
}

// Member is one running member of a job's group.
type Member struct {
	o         Options
	topic     string
	changelog string
	// rt is the repartition topic of a two-stage job ("": the input is
	// partitioned by key). nparts is the input's partition count; the
	// tasks are numbered by their changelog partition: input partition p
	// is task p, repartition partition r task nparts+r.
	rt     string
	nparts int
	// archive is the group's archive topic ("": the job keeps no
	// archive), one partition per input partition, written by each
	// window task to its partition.
	archive  string
	brokers  []string
	auth     []kgo.Opt
	sess     *kgo.GroupTransactSession
	adm      *kadm.Client
	group    string
	meta     []byte // the spec's fingerprint
	specHash string // outfmt.SpecHash of the plan
	// present is when the member last wrote its presence record.
	present time.Time
	// txnBegan is when the member began its open transaction (zero: none
	// is open); rejoins counts its sessions lapsed since its last commit
	// (loop). Both owned by the loop.
	txnBegan time.Time
	rejoins  int
	// doneWarned is when the loop last warned that the group's progress
	// could not be read (owned by the loop).
	doneWarned time.Time
	run        int64 // the group's run id (its group record's)
	ctx        context.Context
	// stopped is closed when Run returns: a task's checkpoint waiting for
	// the member gives up.
	stopped chan struct{}
	wakeCh  chan struct{}
	// stopAtEnd is the source's stop_at_end; keys is Kafka's default
	// partitioner of the input (partitioned_by_key's check).
	stopAtEnd bool
	keys      kgo.TopicPartitioner
	// paused are the partitions whose fetching the member paused: their
	// task's inbox is full, or the task ended. Owned by the loop.
	paused map[int32]bool
	// met are the member's metrics; ev its events (under mu).
	met *metrics
	ev  events
	// purgeTo are the repartition offsets to purge to, purged when the
	// member last did (owned by the loop).
	purgeTo map[int32]int64
	purged  time.Time
	purger  *kadm.Client // closed by Run
	// purging is set while a purge runs, watching while a check of the
	// input's partition count does, trimming while a trim of the archive
	// does (each on a goroutine of its own, which Run waits for in
	// purgeWG).
	purging, watching, trimming atomic.Bool
	purgeWG                     sync.WaitGroup
	watched                     time.Time // the last check of the input's partitions
	trimmed                     time.Time // the last trim of the archive (owned by the loop)
	// pg are the job's Postgres sinks (nil: none), written after each
	// commit and at restores (pgout.go).
	pg *pgTables
	// align is the group's watermark alignment (nil: no max_drift), read
	// every watermark interval (alignedAt: last, owned by the loop).
	align     *alignment
	alignedAt time.Time
	// statusMu guards the last status read (statusLast, at statusAt),
	// and is held while one is read (Status).
	statusMu   sync.Mutex
	statusLast *monitor.GroupStatus
	statusAt   time.Time
	// startMu serializes starting tasks: assign (on kgo's goroutine) and
	// the loop's restarts.
	startMu sync.Mutex
	// failures counts each task's failed runs in a row (restartTasks,
	// under startMu).
	failures map[int32]failures
	// leaving is set (under startMu) once the member stops its tasks to
	// leave or close: an assignment after it starts no task.
	leaving bool

	mu    sync.Mutex
	tasks map[int32]*task
	fatal error
}

// Check refuses what group mode cannot run, each with the reason.
func Check(p *spec.Plan) error {
	if p.Source.Type != "kafka" {
		return fmt.Errorf("source.type: %q: group mode (--instance) reads Kafka only: its partitions are the tasks the members share", p.Source.Type)
	}
	if p.Checkpoint != nil {
		return errors.New("checkpoint: group mode (--instance) keeps each task's state in the group's changelog topic, committed with its outputs; remove the checkpoint block")
	}
	if g := Name(p); !groupRE.MatchString(g) {
		where := "group.name"
		if p.Group == nil || p.Group.Name == "" {
			where = "the job's name (the group is weir-<name>)"
		}
		return fmt.Errorf("%s: the group %q is no Kafka topic name, which its changelog topic %s-changelog needs: 1-200 characters of A-Z, a-z, 0-9, '.', '_' and '-'; set group.name to one", where, g, g)
	}
	if p.Backend == spec.PebbleBackend {
		return errors.New("state.backend: pebble: group mode (--instance) keeps state in memory and in the changelog topic for now; remove it")
	}
	path, err := p.Graph.Path()
	if err != nil {
		return err
	}
	if len(path.Reads) != 1 || len(path.Windows) != 1 {
		return errors.New("group mode (--instance) runs a job of one source and one window for now; joins, cascades and statement sets run in one process")
	}
	s := spec.SourceSettings(p)
	if p.Channels > 1 {
		return errors.New("source.channels: group mode (--instance) reads each partition as a task of its own; remove channels")
	}
	if p.Start.Kind == connector.StartCommitted {
		return errors.New("source.kafka.start: committed: a group's members start where the group committed, and a new group at kafka.start; use earliest, latest or a time")
	}
	var bad []string
	for _, op := range path.Sinks() {
		if op.Config == nil {
			continue
		}
		if op.Config.Type == "postgres" && op.Config.Layout == spec.LayoutDeclared {
			return fmt.Errorf("%s: layout: declared: group mode (--instance) writes a Postgres table through its outbox in weir's layout, whose run and pane columns tell an aborted attempt's rows; remove layout", op.Path)
		}
		if op.Config.Type == "postgres" {
			continue // through the outbox (pgout.go)
		}
		if op.Config.Type != "kafka" {
			bad = append(bad, fmt.Sprintf("%s (%s)", op.Path, op.Config.Type))
			continue
		}
		// The member's one producer writes every output: through the
		// source's brokers and credentials.
		k := spec.SinkSettings(op.Config)
		if !slices.Equal(k.Strings("brokers"), s.Strings("kafka.brokers")) || k.Bool("tls") != s.Bool("kafka.tls") || k.Set("sasl") || s.Set("kafka.sasl") {
			return fmt.Errorf("%s: group mode (--instance) writes every output through the member's one transactional producer, on the source's brokers: give the sink the source's brokers and TLS setting (SASL is not supported in group mode yet)", op.Path)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%v: group mode (--instance) writes results, late records and dead letters to Kafka topics (in the member's transaction) or Postgres tables (after it); other sinks are not supported yet", bad)
	}
	return nil
}

// Run runs the member until ctx is done (a graceful stop: the member
// commits, leaves the group and returns nil) or, with stop_at_end, until
// every task of the group read its input to the end and committed.
func Run(ctx context.Context, o Options) error {
	if err := Check(o.Plan); err != nil {
		return err
	}
	if err := CheckInstance(o.Instance); err != nil {
		return err
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Info == nil {
		o.Info = func(string) {}
	}
	if o.Crash == nil {
		o.Crash = func(string) {}
	}
	if g := o.Plan.Group; g != nil {
		for _, f := range []struct {
			v   *time.Duration
			set *spec.Duration
		}{{&o.CommitInterval, g.CommitInterval}, {&o.SessionTimeout, g.SessionTimeout}, {&o.TransactionTimeout, g.TransactionTimeout}} {
			if *f.v <= 0 && f.set != nil {
				*f.v = etime.Duration(*f.set).Std()
			}
		}
	}
	if o.CommitInterval <= 0 {
		o.CommitInterval = 200 * time.Millisecond
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = 10 * time.Second
	}
	if o.TransactionTimeout <= 0 {
		o.TransactionTimeout = 10 * time.Second
	}
	if o.ArchiveTrimEvery <= 0 {
		o.ArchiveTrimEvery = 10 * time.Minute
	}
	if o.StallAfter <= 0 {
		o.StallAfter = defaultStallAfter
	}
	unlock, err := lockStateDir(o.StateDir, o.Plan, o.Instance)
	if err != nil {
		return refused(err)
	}
	defer unlock()
	if o.Run.Warned == nil {
		// The member's tasks, and their restarts, warn once between them.
		o.Run.Warned = new(job.Warned)
	}
	s := spec.SourceSettings(o.Plan)
	m := &Member{o: o, topic: s.String("kafka.topic"), changelog: ChangelogTopic(o.Plan), brokers: s.Strings("kafka.brokers"),
		auth: kafkaio.AuthFrom(s, "kafka."), group: Name(o.Plan), meta: job.Fingerprint(o.Plan), specHash: outfmt.SpecHash(o.Plan),
		stopped: make(chan struct{}), wakeCh: make(chan struct{}, 1), tasks: map[int32]*task{},
		stopAtEnd: s.Bool("kafka.stop_at_end"), paused: map[int32]bool{}, purgeTo: map[int32]int64{}}
	m.keys = kgo.StickyKeyPartitioner(nil).ForTopic(m.topic)
	if o.Plan.MaxDrift > 0 {
		m.align = &alignment{}
	}
	if repartitioned(o.Plan) {
		m.rt = RepartitionTopic(o.Plan)
	}
	if o.Plan.Archive != nil {
		m.archive = ArchiveTopic(o.Plan)
	}
	defer close(m.stopped)
	cl, err := kgo.NewClient(m.clientOpts()...)
	if err != nil {
		return err
	}
	m.adm = kadm.NewClient(cl)
	defer m.adm.Close()
	defer func() {
		m.purgeWG.Wait()
		if m.purger != nil {
			m.purger.Close()
		}
	}()
	// The outputs first: a missing results topic refuses the member
	// before it creates the group's changelog topic.
	if err := job.PrepareSinks(o.Plan, o.Run); err != nil {
		return err
	}
	if err := m.prepareTopics(ctx); err != nil {
		return err
	}
	if err := m.prepareArchive(ctx); err != nil {
		return err
	}
	g, err := m.groupRun(ctx)
	if err != nil {
		return err
	}
	if g.SpecHash != m.specHash && g.SpecHash != outfmt.LegacySpecHash(m.o.Plan) { // a group started before weir hashed computed fields runs on
		return refused(fmt.Errorf("group %s runs job %s with spec %s, and this member's spec is %s: the members of a group run one spec; stop every member and reset the group (weir reset) to run another, or give this spec another group.name", m.group, g.Job, g.SpecHash, m.specHash))
	}
	m.run = g.Run
	if err := m.checkFinished(ctx); err != nil {
		return err
	}
	if m.pg, err = m.openPG(ctx); err != nil {
		return err
	}
	if m.pg != nil {
		defer m.pg.close()
	}
	m.ev.assigned = map[int32]time.Time{}
	m.mu.Lock()
	m.ev.lastCommit = time.Now()
	m.mu.Unlock()
	stopWatch := make(chan struct{})
	var watchWG sync.WaitGroup
	watchWG.Go(func() { m.watchStalls(stopWatch) })
	defer func() {
		close(stopWatch)
		watchWG.Wait()
	}()
	if m.met, err = newMetrics(o.Registerer, m.Status); err != nil {
		return err
	}
	if o.Serve != nil {
		if err := o.Serve(Served{Status: m.Status, Health: m.Health}); err != nil {
			return err
		}
	}
	o.Info(fmt.Sprintf("member %s of group %s (transactional id %s)", o.Instance, m.group, TxnID(o.Plan, o.Instance)))
	if err := forgetOtherRuns(o.StateDir, m.run); err != nil {
		return fmt.Errorf("--state-dir %s: %w", o.StateDir, err)
	}
	return m.loop(ctx)
}

func (m *Member) clientOpts() []kgo.Opt {
	return append([]kgo.Opt{kgo.SeedBrokers(m.brokers...), kgo.WithHooks(m)}, m.auth...)
}

// prepareTopics reads the input's partition count and creates the
// changelog topic (compacted, one partition per task) when it is missing;
// a changelog of another count is refused.
func (m *Member) prepareTopics(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	td, err := m.adm.ListTopics(ctx, m.topic, m.changelog)
	if err != nil {
		return fmt.Errorf("group: topics: %w", err)
	}
	in, ok := td[m.topic]
	if !ok || in.Err != nil {
		return refused(fmt.Errorf("source.kafka.topic: topic %q does not exist on %v; create it first", m.topic, m.brokers))
	}
	m.nparts = len(in.Partitions)
	if m.rt != "" {
		// Kept until purged (retention.ms -1, as Kafka Streams sets it): a
		// group that lags or stops must not lose routed records to time.
		if err := m.createTopic(ctx, m.rt, m.nparts, map[string]*string{"cleanup.policy": ptr("delete"), "retention.ms": ptr("-1")}, "the records routed by key to their window tasks"); err != nil {
			return err
		}
	}
	if cd, ok := td[m.changelog]; ok && cd.Err == nil {
		if n := len(cd.Partitions); n != m.ntasks() {
			return refused(fmt.Errorf("the changelog topic %s has %d partitions and the job has %d tasks (the input %s has %d partitions): the job's state is split by the input's partitions, so the input's count must not change; reset the group (weir reset) to start over with %d", m.changelog, n, m.ntasks(), m.topic, m.nparts, m.nparts))
		}
		return nil
	}
	// No changelog: a new group, unless the group committed progress
	// whose checkpoints it held (the topic was deleted): that state is
	// lost, and a new changelog would only make the restores wait for
	// checkpoints that are gone.
	gone, err := m.goneAfterProgress(ctx, m.changelog)
	if err != nil {
		return err
	}
	if gone {
		return refused(fmt.Errorf("the group %s committed progress, but its changelog topic %s, which holds the checkpoints that progress names, is gone (deleted?): the group's state is lost; reset the group (weir reset) and run the job again", m.group, m.changelog))
	}
	// createTopic also checks the count of a changelog that another new
	// member created since the listing above.
	// delete.retention.ms (a day, the default, set so that it stays one)
	// keeps a rebase's tombstones far longer than a base lives (keyed.go).
	cfg := map[string]*string{"cleanup.policy": ptr("compact"), "segment.ms": ptr("60000"), "min.compaction.lag.ms": ptr("0"), "delete.retention.ms": ptr("86400000")}
	return m.createTopic(ctx, m.changelog, m.ntasks(), cfg, "the tasks' state")
}

// goneAfterProgress reports whether topic, which a listing did not find,
// was deleted: the group committed progress (which its members commit
// only once the topic is there) and the topic is still missing when
// listed after that progress was read. A second new member may create
// the topic and commit between the first listing and the progress read:
// the listing after the read sees it, and then it is not gone.
func (m *Member) goneAfterProgress(ctx context.Context, topic string) (bool, error) {
	if !m.committedProgress(ctx) {
		return false, nil
	}
	td, err := m.adm.ListTopics(ctx, topic)
	if err != nil {
		return false, fmt.Errorf("group: topics: %w", err)
	}
	t, ok := td[topic]
	return !ok || errors.Is(t.Err, kerr.UnknownTopicOrPartition), nil
}

// prepareArchive creates the group's archive topic (compacted: a
// window's newest revision replaces its older ones) unless it exists.
func (m *Member) prepareArchive(ctx context.Context) error {
	if m.archive == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	td, err := m.adm.ListTopics(ctx, m.archive)
	if err != nil {
		return fmt.Errorf("group: topics: %w", err)
	}
	if t, ok := td[m.archive]; !ok || t.Err != nil {
		// Not there: a new group's, unless the group committed progress
		// (the topic was deleted): a new archive would lack the windows
		// published before, and a backfill would publish revisions of
		// its late records alone over them.
		gone, err := m.goneAfterProgress(ctx, m.archive)
		if err != nil {
			return err
		}
		if gone {
			return refused(fmt.Errorf("the group %s committed progress, but its archive topic %s, which holds the windows it published for weir backfill, is gone (deleted?): reset the group (weir reset) and run the job again, or remove the archive block to run on without backfill", m.group, m.archive))
		}
	}
	// A tombstone (a window removed beyond the horizon) stays readable
	// for the horizon at least (Kafka's default is a day): a backfill
	// that reads it counts the window's late records as expired, where
	// one that found nothing would take the window for one that never
	// fired.
	keep := max(time.Duration(m.o.Plan.ArchiveHorizon)*time.Millisecond, 24*time.Hour)
	cfg := map[string]*string{"cleanup.policy": ptr("compact"), "min.compaction.lag.ms": ptr("0"), "delete.retention.ms": ptr(strconv.FormatInt(keep.Milliseconds(), 10))}
	return m.createTopic(ctx, m.archive, m.nparts, cfg, "each window's newest result and the late records backfills applied to it, for weir backfill (archive)")
}

// committedProgress reports whether the group committed offsets that
// name its tasks' checkpoints (false when that cannot be read).
func (m *Member) committedProgress(ctx context.Context) bool {
	committed, err := m.adm.FetchOffsets(ctx, m.group)
	if err != nil {
		return false
	}
	var some bool
	committed.Each(func(o kadm.OffsetResponse) {
		some = some || o.Err == nil && strings.HasPrefix(o.Metadata, metaPrefix)
	})
	return some
}

// createTopic creates topic with n partitions and cfg unless it exists
// (a topic of another count is refused), telling what it is for.
func (m *Member) createTopic(ctx context.Context, topic string, n int, cfg map[string]*string, what string) error {
	td, err := m.adm.ListTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("group: topics: %w", err)
	}
	if t, ok := td[topic]; ok && t.Err == nil {
		if len(t.Partitions) != n {
			return refused(fmt.Errorf("the topic %s has %d partitions, and the job needs %d: reset the group (weir reset) to start over", topic, len(t.Partitions), n))
		}
		return nil
	}
	resp, err := m.adm.CreateTopic(ctx, int32(n), -1, cfg, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("group: creating the topic %s: %w", topic, err)
	}
	if err == nil {
		m.o.Info(fmt.Sprintf("created Kafka topic %s (%d partitions, cleanup.policy=%s): %s", topic, n, *cfg["cleanup.policy"], what))
	}
	return nil
}

// committedOffsets are the group's committed offsets, stable: while a
// member's transaction that commits offsets is pending (KIP-447), the
// fetch is repeated, as kgo repeats its own at an assignment. An
// assignment's restore therefore never reads a commit older than one a
// member is finishing.
func (m *Member) committedOffsets(ctx context.Context) (kadm.OffsetResponses, error) {
	for {
		committed, err := m.adm.FetchOffsets(kadm.RequireStable(ctx), m.group)
		if err == nil {
			err = committed.Error()
		}
		if !errors.Is(err, kerr.UnstableOffsetCommit) {
			return committed, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ntasks is the job's task count.
func (m *Member) ntasks() int {
	if m.rt != "" {
		return 2 * m.nparts
	}
	return m.nparts
}

// where is task id's topic and partition.
func (m *Member) where(id int32) (string, int32) {
	if m.rt != "" && int(id) >= m.nparts {
		return m.rt, id - int32(m.nparts)
	}
	return m.topic, id
}

// taskID is the task of a topic's partition.
func (m *Member) taskID(topic string, p int32) int32 {
	if topic == m.rt {
		return int32(m.nparts) + p
	}
	return p
}

// topics are the topics the member consumes.
func (m *Member) topics() []string {
	if m.rt != "" {
		return []string{m.topic, m.rt}
	}
	return []string{m.topic}
}

// router: task id is a two-stage job's route task.
func (m *Member) routes(id int32) bool { return m.rt != "" && int(id) < m.nparts }

func ptr[T any](v T) *T { return &v }

// TxnID is the transactional id of a member.
//
// It is <group>-<instance>: weir-<job>-<instance> by default, and two
// groups of one job (group.name) never fence each other's members.
func TxnID(p *spec.Plan, instance string) string { return Name(p) + "-" + instance }

// maxRejoins bounds the sessions in a row a member replaces without
// committing in between (loop).
const maxRejoins = 5

// loop runs the member's sessions. A session whose transaction Kafka
// aborted for outliving the transaction timeout (a rebalance that stalled
// the commit, a paused process) has a fenced producer and cannot go on:
// the member closes it without leaving and joins again under its name
// with a new producer, its tasks restarting from their commits, as Kafka
// Streams does after a TaskMigratedException. Any other error ends it.
func (m *Member) loop(ctx context.Context) error {
	for {
		err := m.session(ctx)
		var le *lapsedError
		if !errors.As(err, &le) {
			return err
		}
		if ctx.Err() != nil {
			// Asked to stop while a commit lapsed: the session is
			// closed, its tasks move after the session timeout.
			m.o.Info(fmt.Sprintf("instance %s: %v; it stops, and its tasks resume from their previous commits on the next owner", m.o.Instance, le))
			return nil
		}
		if down, err := m.unreachable(ctx); err != nil {
			return fmt.Errorf("%w; and Kafka refuses the member: %w", le, err)
		} else if down {
			// Kafka does not answer: an outage, not a stalled member. It
			// waits for Kafka as long as it takes (its tasks hold no
			// records meanwhile), then joins again; the lapse does not
			// count against maxRejoins. Only a connection that fails
			// says so: a Kafka that answers with an error (a deleted
			// topic, an authorization) is not waited for.
			m.o.Logger.Warn("Kafka does not answer: the member waits for it, then joins again, and its tasks restart from their commits", "instance", m.o.Instance, "err", le.err)
			if err := m.awaitKafka(ctx); err != nil {
				if ctx.Err() != nil {
					m.o.Info(fmt.Sprintf("instance %s: stopped while Kafka did not answer; its tasks resume from their previous commits on the next owner", m.o.Instance))
					return nil
				}
				return fmt.Errorf("%w; and Kafka refuses the member: %w", le, err)
			}
			m.o.Info(fmt.Sprintf("instance %s: Kafka answers again; it joins the group again, and its tasks restart from their commits", m.o.Instance))
			m.resetSession()
			continue
		}
		if le.outage {
			// The connection failed, yet Kafka answers now: the session
			// ended for nothing lasting; join again without counting it.
			m.o.Info(fmt.Sprintf("instance %s: %v; Kafka answers: it joins the group again, and its tasks restart from their commits", m.o.Instance, le))
			m.resetSession()
			continue
		}
		m.rejoins++
		if m.rejoins > maxRejoins {
			return fmt.Errorf("%w; %d sessions in a row lapsed so without a commit: raise group.transaction_timeout, or look for what stalls the member", le, maxRejoins)
		}
		m.o.Logger.Warn("the member's transaction outlived the transaction timeout: it joins again with a new producer; its tasks restart from their commits", "instance", m.o.Instance, "open", le.open.Round(time.Millisecond), "timeout", m.o.TransactionTimeout, "err", le.err)
		m.o.Info(fmt.Sprintf("instance %s: %v; it joins the group again, and its tasks restart from their commits", m.o.Instance, le))
		m.resetSession()
	}
}

// resetSession forgets the tasks and the transaction of a session that
// ended (loop joins again).
func (m *Member) resetSession() {
	m.mu.Lock()
	m.tasks, m.ev.assigned = map[int32]*task{}, map[int32]time.Time{}
	m.mu.Unlock()
	m.paused, m.txnBegan, m.present = map[int32]bool{}, time.Time{}, time.Time{}
}

// unreachable asks Kafka for metadata (within 5 s): down when it cannot
// be reached (the connection fails or times out), an error when it
// answers with one (an authentication, an authorization: waiting would
// not help).
func (m *Member) unreachable(ctx context.Context) (down bool, err error) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = m.adm.ListTopics(rctx, m.topic)
	switch {
	case err == nil:
		return false, nil
	case connectionLost(err), errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return true, nil
	}
	return false, err
}

// connectionLost reports whether err is a connection's failure (Kafka
// down or unreachable), not an error Kafka answered with.
func connectionLost(err error) bool {
	if ke := (*kerr.Error)(nil); errors.As(err, &ke) {
		return false
	}
	return connector.Unreachable(err)
}

// awaitKafka waits until Kafka answers again, warning every 10 s; ctx's
// error when the member is asked to stop first, or the error Kafka
// answers with.
func (m *Member) awaitKafka(ctx context.Context) error {
	since, warned := time.Now(), time.Now()
	for wait := 500 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		down, err := m.unreachable(ctx)
		if err != nil || !down {
			return err
		}
		if time.Since(warned) >= 10*time.Second {
			warned = time.Now()
			m.o.Logger.Warn("Kafka still does not answer; the member waits", "instance", m.o.Instance, "for", time.Since(since).Round(time.Second))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// lapsedError is a session's end by a transaction that outlived the
// transaction timeout (loop joins again).
type lapsedError struct {
	open time.Duration
	err  error
	// outage: the transaction failed because Kafka did not answer (a
	// refused connection), not because it outlived its timeout.
	outage bool
}

func (e *lapsedError) Error() string {
	if e.outage {
		return fmt.Sprintf("the member's transaction failed, Kafka not answering (%v)", e.err)
	}
	return fmt.Sprintf("the member's transaction stayed open %v, past its transaction timeout, and Kafka aborted it (%s)", e.open.Round(time.Millisecond), kafkaCode(e.err, e.err.Error()))
}

// kafkaCode is the Kafka error code err holds (PRODUCER_FENCED), else
// fallback.
func kafkaCode(err error, fallback string) string {
	if ke := (*kerr.Error)(nil); errors.As(err, &ke) {
		return ke.Message
	}
	return fallback
}

func (e *lapsedError) Unwrap() error { return e.err }

// session runs one group session of the member: it joins, runs its tasks
// and commits until ctx is done, the group's input ended (stop_at_end) or
// an error.
func (m *Member) session(ctx context.Context) error {
	m.ctx = ctx
	m.startMu.Lock()
	m.leaving = false // a session after a closed one (joining again)
	m.startMu.Unlock()
	manual := map[string]bool{m.changelog: true, m.rt: true, m.archive: true}
	sess, err := kgo.NewGroupTransactSession(append(m.clientOpts(),
		kgo.ConsumerGroup(m.group),
		kgo.ConsumeTopics(m.topics()...),
		kgo.InstanceID(m.o.Instance),
		kgo.TransactionalID(TxnID(m.o.Plan, m.o.Instance)),
		kgo.TransactionTimeout(m.o.TransactionTimeout),
		kgo.SessionTimeout(m.o.SessionTimeout),
		kgo.HeartbeatInterval(max(m.o.SessionTimeout/10, 100*time.Millisecond)),
		kgo.RebalanceTimeout(max(4*m.o.CommitInterval, 30*time.Second)),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(250*time.Millisecond),
		kgo.BlockRebalanceOnPoll(),
		kgo.DisableAutoCommit(),
		kgo.RecordPartitioner(partitioner{manual: manual, key: kgo.StickyKeyPartitioner(nil)}),
		kgo.AdjustFetchOffsetsFn(m.assign),
		kgo.OnPartitionsRevoked(m.revoke),
		kgo.OnPartitionsLost(m.revoke),
	)...)
	if err != nil {
		return fmt.Errorf("group: %w", err)
	}
	m.sess = sess
	defer m.close()
	if m.align != nil {
		// The group's watermarks before any task runs: a reader aligns
		// from its first tick (a task without a commit yet holds it).
		m.refreshAlign(ctx)
	}
	last := time.Now()
	lastDone := time.Now()
	for {
		if err := m.failure(); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return m.stop()
		}
		pctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		f := sess.PollRecords(pctx, 4096)
		cancel()
		for _, fe := range f.Errors() {
			if errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled) {
				continue
			}
			if sessionLost(fe.Err) {
				// The client revoked the member's tasks and joins again
				// by itself, as Kafka's consumers do.
				m.o.Logger.Warn("the member lost its group session; it joins again, and its tasks restart from their commits", "instance", m.o.Instance, "err", fe.Err)
				continue
			}
			if errors.Is(fe.Err, kerr.InvalidSessionTimeout) {
				return refused(fmt.Errorf("group.session_timeout: %v is outside the range the brokers allow (their group.min.session.timeout.ms and group.max.session.timeout.ms, 6s to 30m by default): set group.session_timeout within it (%w)", m.o.SessionTimeout, fe.Err))
			}
			if fe.Topic == "" { // the client's own error: the group's
				return m.fenced(fmt.Errorf("group: in the group %s: %w", m.group, fe.Err))
			}
			return m.fenced(fmt.Errorf("group: fetching %s partition %d: %w", fe.Topic, fe.Partition, fe.Err))
		}
		if err := m.failure(); err != nil {
			return err // an assignment failed: its partitions have no task
		}
		if err := m.dispatch(f); err != nil {
			return err
		}
		m.resume()
		if time.Since(last) >= m.o.CommitInterval || m.waiting() {
			if err := m.commit(ctx); err != nil {
				return err
			}
			last = time.Now()
		}
		sess.AllowRebalance()
		m.watchPartitions()
		m.trimArchive()
		if m.align != nil && time.Since(m.alignedAt) >= max(etime.Duration(m.o.Plan.Interval).Std(), 100*time.Millisecond) {
			m.refreshAlign(ctx)
		}
		if ctx.Err() == nil && m.stopAtEnd && time.Since(lastDone) >= 500*time.Millisecond {
			lastDone = time.Now()
			done, err := m.groupDone(ctx)
			if err != nil {
				// Kafka unavailable for a while (a broker restart): the
				// member waits for it, as its fetches and commits do.
				if time.Since(m.doneWarned) >= 10*time.Second {
					m.doneWarned = time.Now()
					m.o.Logger.Warn("reading the group's progress failed; the member tries again", "err", err)
				}
				continue
			}
			if done {
				m.mu.Lock()
				m.ev.finishing = true
				m.mu.Unlock()
				m.o.Info("every task of the group read its input to the end and committed")
				sum, err := m.finishGroup(ctx)
				if err != nil {
					if ctx.Err() != nil {
						// A stop (SIGTERM) while it read the tasks'
						// last checkpoints: it stops as at any other
						// time, not with the interrupted read's error.
						return m.stop()
					}
					return err
				}
				if m.o.Summary != nil {
					m.o.Summary(sum)
				}
				return m.leave(false)
			}
		}
	}
}

// refreshAlign reads the input tasks' committed watermarks into the
// group's alignment: every member's readers then pause their partitions
// when more than max_drift ahead of the slowest active input task, in
// whichever process it runs. A task without a commit yet counts with no
// watermark (it holds the others, as a partition without one does in one
// process); an idle one, or one read to its end, does not count.
func (m *Member) refreshAlign(ctx context.Context) {
	m.alignedAt = time.Now()
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	committed, err := m.adm.FetchOffsets(actx, m.group)
	if err == nil {
		err = committed.Error()
	}
	wm := map[int32]etime.Time{}
	if err != nil {
		if ctx.Err() == nil {
			m.o.Logger.Warn("reading the group's watermarks (max_drift) failed; the alignment stays as it was", "err", err)
		}
		if !m.align.known() {
			// Nothing read yet (a new group has no offsets): every
			// input task counts without a watermark until it commits.
			for p := range int32(m.nparts) {
				wm[p] = etime.MinTime
			}
			m.align.set(wm)
		}
		return
	}
	for p := range int32(m.nparts) {
		tm := taskMeta{Watermark: etime.MinTime}
		if c, ok := committed.Lookup(m.topic, p); ok && c.At >= 0 {
			if t, ok := parseMeta(c.Metadata); ok {
				tm = t
			}
		}
		if !tm.Done && !tm.Idle {
			wm[p] = tm.Watermark
		}
	}
	m.align.set(wm)
}

// transient reports whether err is one a client retries: a network
// error, or a Kafka error marked retriable (a refused configuration, an
// authorization or a fencing is not).
// sessionLost reports whether a poll's error says that the client lost
// its group session and joins again by itself: a join that timed out,
// the coordinator gone, or a session that expired while the process
// stalled, which the coordinator answers with UNKNOWN_MEMBER_ID.
func sessionLost(err error) bool {
	gs := (*kgo.ErrGroupSession)(nil)
	return errors.As(err, &gs) && (transient(gs.Err) || errors.Is(gs.Err, kerr.UnknownMemberID))
}

func transient(err error) bool {
	if ke := (*kerr.Error)(nil); errors.As(err, &ke) {
		return ke.Retriable
	}
	// A timeout is a net.Error too, which connectionLost leaves out.
	return connectionLost(err) || errors.Is(err, context.DeadlineExceeded)
}

// fenced names the other member in an error of a fenced producer, or,
// when the member's open transaction outlived the transaction timeout
// (Kafka aborted it and fenced the producer's epoch), says that instead
// (a lapsedError: loop joins again).
func (m *Member) fenced(err error) error {
	open := time.Since(m.txnBegan)
	lapsed := !m.txnBegan.IsZero() && open >= m.o.TransactionTimeout
	if lapsed && errors.Is(err, context.DeadlineExceeded) {
		// The transaction's end outlived its own deadline (a commit
		// stalled by a rebalance that never finished): Kafka aborted it
		// long before, and the producer is in an unknown state.
		return &lapsedError{open: open, err: err}
	}
	if !isFenced(err) {
		if connectionLost(err) && !errors.Is(err, context.Canceled) {
			// Kafka stopped answering (a broker down): within a
			// transaction the producer's state is unknown; the member
			// waits for Kafka and joins again (loop).
			return &lapsedError{open: open, err: err, outage: true}
		}
		return err
	}
	if lapsed && !errors.Is(err, kerr.FencedInstanceID) {
		return &lapsedError{open: open, err: err}
	}
	return fmt.Errorf("another process runs instance %q of job %s (transactional id %s) and fenced this one off (%s): it took this member's tasks", m.o.Instance, jobName(m.o.Plan), TxnID(m.o.Plan, m.o.Instance), kafkaCode(err, "fenced"))
}

// isFenced reports whether err says another producer or member took
// this member's transactional id or instance id.
func isFenced(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) || errors.Is(err, kerr.FencedInstanceID)
}

func (m *Member) failure() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fatal
}

func (m *Member) fail(err error) {
	m.mu.Lock()
	if m.fatal == nil {
		m.fatal = err
	}
	m.mu.Unlock()
}

func (m *Member) wake() {
	select {
	case m.wakeCh <- struct{}{}:
	default:
	}
}

// waiting reports whether a task waits for a commit: a checkpoint it
// took on its own (its output buffer filled) or its end.
func (m *Member) waiting() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.tasks {
		t.mu.Lock()
		w := len(t.ready) > 0 || (t.ended && t.last != nil && !t.last.Done && !time.Now().Before(t.retryAt))
		t.mu.Unlock()
		if w {
			return true
		}
	}
	return false
}

// inboxRecords and inboxBytes bound a task's inbox: past either, the
// member pauses fetching its partition until the task took half of it.
// (Variables for the tests, which lower them.)
var (
	inboxRecords = 64 << 10
	inboxBytes   = 16 << 20
	// pauses counts the pauses of every member of the process.
	pauses atomic.Int64
)

// dispatch hands each task its partition's records, checking their keys
// against Kafka's default partitioner (partitioned_by_key). A partition whose task
// ended (its input's end, or a failure it restarts from) or whose inbox
// is full is paused.
func (m *Member) dispatch(f kgo.Fetches) error {
	var err error
	f.EachPartition(func(fp kgo.FetchTopicPartition) {
		if err != nil || len(fp.Records) == 0 {
			return
		}
		id := m.taskID(fp.Topic, fp.Partition)
		m.mu.Lock()
		t := m.tasks[id]
		m.mu.Unlock()
		if t == nil {
			err = fmt.Errorf("group: records of %s partition %d, which this member has no task for", fp.Topic, fp.Partition)
			return
		}
		if t.isEnded() || (t.route != nil && t.last != nil && t.last.Done) {
			m.pause(id) // it reads no more
			return
		}
		if m.rt == "" {
			if err = m.checkKeys(fp.Records); err != nil {
				return // before the task has any record of the batch
			}
		}
		if t.inbox.put(fp.Records) {
			m.pause(id)
		}
	})
	return err
}

// checkKeys checks the key of every record of rs against Kafka's
// default partitioner: every record, not a sample, since one misplaced
// record anywhere splits its key's windows across tasks, and hashing a
// key costs a few nanoseconds beside the record's decoding.
func (m *Member) checkKeys(rs []*kgo.Record) error {
	for _, r := range rs {
		if r.Attrs.IsControl() {
			continue
		}
		if r.Key == nil {
			return m.mismatch(fmt.Errorf("source.kafka.partitioned_by_key: the record at offset %d of partition %d of %s has no key, so the input is not partitioned by the job's key; produce with the key, or drop partitioned_by_key", r.Offset, r.Partition, m.topic))
		}
		if want := int32(m.keys.Partition(r, m.nparts)); want != r.Partition {
			if err := m.partitionsAdded(); err != nil {
				return err // the cause: the topic grew, not the producer
			}
			return m.mismatch(fmt.Errorf("source.kafka.partitioned_by_key: the record at offset %d with key %q is in partition %d, but Kafka's default partitioner (murmur2) puts that key in partition %d: the producer used another partitioner (kcat's default is CRC32: set -X partitioner=murmur2_random), so one key's windows would be split across tasks. The record stays in the topic and every member stops at it: produce the input again with Kafka's default partitioner into a new (or recreated) topic, then reset the group (weir reset)", r.Offset, r.Key, r.Partition, want))
		}
	}
	return nil
}

// mismatch records a partitioner mismatch for the member's status and
// returns err.
func (m *Member) mismatch(err error) error {
	m.mu.Lock()
	m.ev.mismatches = remember(m.ev.mismatches, err.Error())
	m.mu.Unlock()
	return err
}

// pause stops fetching task id's partition (its records stay buffered
// in the client until resume).
func (m *Member) pause(id int32) {
	if !m.paused[id] {
		m.paused[id] = true
		pauses.Add(1)
		topic, p := m.where(id)
		m.sess.Client().PauseFetchPartitions(map[string][]int32{topic: {p}})
	}
}

// resume resumes fetching the paused partitions whose task runs with
// room in its inbox again, and forgets the pauses of partitions that are
// no longer this member's.
func (m *Member) resume() {
	ps := map[string][]int32{}
	for id := range m.paused {
		m.mu.Lock()
		t := m.tasks[id]
		m.mu.Unlock()
		if t == nil || (!t.isEnded() && t.inbox.roomy()) {
			delete(m.paused, id)
			topic, p := m.where(id)
			ps[topic] = append(ps[topic], p)
		}
	}
	if len(ps) > 0 {
		m.sess.Client().ResumeFetchPartitions(ps)
	}
}

// assign starts a task for each partition newly assigned (kgo calls it
// after the group's committed offsets were fetched, stable: no
// transaction of another member is pending on them). A partition with a
// committed offset restores the checkpoint its metadata names; one
// without starts where the source's start says. It returns the offsets
// to consume from: each task's position.
//
// A rebalance during the restores cancels ctx: assign returns its error,
// and the client fetches the partitions still assigned again in the next
// session, calling assign again (which replaces their tasks). Any other
// failure fails the member.
func (m *Member) assign(ctx context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	var ids []int32
	for _, topic := range m.topics() {
		for p := range offsets[topic] {
			ids = append(ids, m.taskID(topic, p))
		}
	}
	if len(ids) == 0 {
		return offsets, nil
	}
	slices.Sort(ids)
	if m.isLeaving() {
		// The member told its stop and closes: a rebalance its close
		// let through hands it no task (the group gives them to others).
		m.o.Logger.Debug("assigned while leaving; no task starts", "tasks", ids)
		return offsets, nil
	}
	fail := func(err error) (map[string]map[int32]kgo.Offset, error) {
		if ctx.Err() != nil {
			m.o.Logger.Info("a rebalance interrupted the tasks' restores; they start again in the next assignment", "tasks", ids, "err", err)
			return nil, ctx.Err()
		}
		m.fail(err)
		return offsets, nil
	}
	committed, err := m.committedOffsets(ctx)
	if err != nil {
		return fail(fmt.Errorf("group: committed offsets of %s: %w", m.group, err))
	}
	starts, err := m.starts(ctx)
	if err != nil {
		return fail(err)
	}
	m.rebalanced(len(ids), 0)
	m.mu.Lock()
	for _, p := range ids {
		m.ev.assigned[p] = time.Now()
	}
	m.mu.Unlock()
	out := map[string]map[int32]kgo.Offset{}
	for _, p := range ids {
		var snap *snapshot
		var at int64
		first := int64(-1)
		// The task's first commit on this member writes a base, which
		// tombstones the delta keys of the chain it restored.
		kc := restored(chain{base: -1})
		topic, part := m.where(p)
		from := starts[p]
		c, ok := committed.Lookup(topic, part)
		m.o.Logger.Debug("assigned", "task", p, "committed", ok, "at", c.At, "meta", c.Metadata, "start", from)
		if ok && c.At >= 0 {
			from = c.At
			if tm, ok := parseMeta(c.Metadata); ok {
				var ch chain
				if snap, at, ch, err = m.restore(ctx, p, tm); err != nil {
					return fail(taskError(p, err))
				}
				kc = restored(ch)
				m.o.Crash("group-restore")
				// Its Postgres outputs, which its member may have died
				// before writing.
				if err := m.applyPG(ctx, p, snap); err != nil {
					return fail(err)
				}
				// The committed watermark (a snapshot read back does not
				// carry it).
				snap.Watermark = tm.Watermark
				from, first = snap.Position, tm.At
			}
		}
		m.startMu.Lock()
		if m.leaving {
			m.startMu.Unlock()
			return out, nil // see above
		}
		err := m.startTask(p, snap, from, at, first, kc)
		m.startMu.Unlock()
		if err != nil {
			return fail(taskError(p, err))
		}
		if out[topic] == nil {
			out[topic] = map[int32]kgo.Offset{}
		}
		out[topic][part] = kgo.NewOffset().At(from)
	}
	m.o.Info(fmt.Sprintf("instance %s: assigned tasks %v; it runs tasks %v", m.o.Instance, ids, m.taskIDs()))
	return out, nil
}

// starts are where each task starts without a committed offset: an
// input partition by source.kafka.start, a repartition partition at 0.
func (m *Member) starts(ctx context.Context) (map[int32]int64, error) {
	var listed kadm.ListedOffsets
	var err error
	switch st := m.o.Plan.Start; st.Kind {
	case connector.StartLatest:
		listed, err = m.adm.ListEndOffsets(ctx, m.topic)
	case connector.StartTime:
		listed, err = m.adm.ListOffsetsAfterMilli(ctx, st.At.UnixMilli(), m.topic)
	default:
		listed, err = m.adm.ListStartOffsets(ctx, m.topic)
	}
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("group: start offsets of %s: %w", m.topic, err)
	}
	out := map[int32]int64{}
	listed.Each(func(l kadm.ListedOffset) { out[l.Partition] = l.Offset })
	// A window task without a commit reads its repartition partition
	// from offset 0: the member purges only below a window task's commit.
	for p := range int32(m.nparts) {
		if m.rt != "" {
			out[m.taskID(m.rt, p)] = 0
		}
	}
	return out, nil
}

// restore reads the checkpoint tm names of task p (read), tells what it
// read, and keeps a copy read from the changelog in the state directory.
// The chain is the checkpoint's in the changelog.
func (m *Member) restore(ctx context.Context, p int32, tm taskMeta) (*snapshot, int64, chain, error) {
	began := time.Now()
	progress, done := m.restoring(p, began)
	s, at, c, st, err := m.read(ctx, p, tm, progress)
	done(st, err)
	switch {
	case err != nil:
		return nil, 0, c, err
	case st.from < 0:
		m.o.Info(fmt.Sprintf("instance %s: task %d restored checkpoint %d from the state directory", m.o.Instance, p, tm.ID))
	default:
		d := time.Since(began)
		why := ""
		if st.cached > 0 {
			// The copy is written every cacheEvery: after a kill it is
			// usually a commit or more behind the committed checkpoint.
			why = fmt.Sprintf("; the state directory's copy is checkpoint %d", st.cached)
		}
		m.o.Info(fmt.Sprintf("instance %s: task %d restored checkpoint %d from the changelog (offsets %d to %d: %d records, %d of them deltas, %d bytes in %v%s)",
			m.o.Instance, p, tm.ID, st.from, at, st.records, st.deltas, st.bytes, d.Round(time.Millisecond), why))
		m.keep(p, s, at, c)
	}
	return s, at, c, nil
}

// read reads the checkpoint tm names of task p, the changelog offset of
// its header and its chain: from the state directory's copy when it is
// that checkpoint (st.from is -1), else from the changelog, from the
// offset tm names (the checkpoint's base: after the copy's header when
// the copy is an older checkpoint on that base; in metadata without an
// offset, after the copy's header when the copy is older, else from the
// start).
func (m *Member) read(ctx context.Context, p int32, tm taskMeta, progress func(records, bytes, remaining int64)) (s *snapshot, at int64, c chain, st readStats, err error) {
	cached, cachedAt, cc, err := readCache(m.o.StateDir, m.run, p)
	if err != nil {
		m.o.Logger.Warn("the task's copy in the state directory is unreadable; restoring from the changelog", "task", p, "err", err)
		cached = nil
	}
	if cached != nil && cached.ID == tm.ID {
		return cached, cachedAt, cc, readStats{from: -1}, nil
	}
	from := int64(0)
	var start *rebuild
	switch {
	case tm.At >= 0:
		from = tm.At
		if cached != nil && cached.ID < tm.ID && cachedAt >= tm.At && cc.base >= 0 {
			// The copy is the checkpoint's base or a delta on it: only
			// the deltas after it are read.
			start = &rebuild{}
			if start.startFrom(cached, cc) == nil {
				from = cachedAt + 1
			} else {
				start = nil
			}
		}
	case cached != nil && cached.ID < tm.ID:
		from = cachedAt + 1
	}
	wait := 2*m.o.TransactionTimeout + 30*time.Second
	s, at, st, b, err := readSnapshot(ctx, m.clientOpts(), m.changelog, p, from, tm.ID, wait, start, progress)
	if err != nil && start != nil && ctx.Err() == nil {
		m.o.Logger.Warn("the task's copy in the state directory does not lead to the committed checkpoint; restoring from its base", "task", p, "err", err)
		s, at, st, b, err = readSnapshot(ctx, m.clientOpts(), m.changelog, p, tm.At, tm.ID, wait, nil, progress)
	}
	if cached != nil {
		st.cached = cached.ID
	}
	if err != nil {
		return nil, 0, c, st, err
	}
	return s, at, b.chain(), st, nil
}

// keep writes task p's snapshot s, whose changelog header is at offset
// at and whose chain is c, to the state directory; a failure is logged
// (it is a cache).
func (m *Member) keep(p int32, s *snapshot, at int64, c chain) {
	if err := writeCache(m.o.StateDir, m.run, p, s, at, c); err != nil {
		m.o.Logger.Warn("cannot keep the task's state in the state directory", "task", p, "err", err)
	}
}

// presenceEvery is how often a member writes its presence record
// (key presencePrefix + its name, in the changelog's partition 0), in a
// transaction of its own when it has no task.
const presenceEvery = 2 * time.Second

const presencePrefix = "member/"

// cacheEvery is how often a task's committed state is written to the
// state directory (and at a graceful stop).
const cacheEvery = 2 * time.Second

// revoke stops the tasks of the revoked (or lost) partitions: their
// uncommitted work is dropped; the next owner starts from the last
// commit.
func (m *Member) revoke(_ context.Context, _ *kgo.Client, revoked map[string][]int32) {
	var ps []int32
	for _, topic := range m.topics() {
		for _, p := range revoked[topic] {
			ps = append(ps, m.taskID(topic, p))
		}
	}
	if len(ps) == 0 {
		return
	}
	slices.Sort(ps)
	m.mu.Lock()
	var ts []*task
	for _, p := range ps {
		if t := m.tasks[p]; t != nil {
			ts = append(ts, t)
			delete(m.tasks, p)
		}
	}
	for _, t := range ts {
		delete(m.ev.assigned, t.p)
	}
	m.mu.Unlock()
	if len(ts) == 0 {
		return // the member left (leave stopped its tasks)
	}
	m.rebalanced(0, len(ts))
	m.o.Crash("group-revoke")
	for _, t := range ts {
		t.stop()
	}
	m.o.Info(fmt.Sprintf("instance %s: revoked tasks %v; it runs tasks %v", m.o.Instance, ps, m.taskIDs()))
}

// taskIDs are the tasks the member runs, sorted.
func (m *Member) taskIDs() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.tasks))
}

// startTask opens and runs task p's job, restored from snap (nil:
// fresh, reading from from), whose changelog header is at offset at and
// whose keyed changelog side is kc.
func (m *Member) startTask(p int32, snap *snapshot, from, at, first int64, kc *keyed) error {
	m.mu.Lock()
	old := m.tasks[p]
	m.mu.Unlock()
	if old != nil {
		// An assignment interrupted by a rebalance started it: it starts
		// again from what is committed now.
		old.stop()
	}
	topic, part := m.where(p)
	t := &task{p: p, topic: topic, part: part, m: m, inbox: newInbox(topic, part, from), last: snap, lastAt: at, lastFirst: first, from: from, kc: kc,
		done: make(chan struct{}), quit: make(chan struct{}), cached: time.Now()}
	if topic == m.topic {
		t.inbox.align, t.inbox.task = m.align, p // an input task aligns with the group's
	}
	if snap != nil && snap.Done {
		t.ended = true
		close(t.done)
		m.mu.Lock()
		m.tasks[p] = t
		m.mu.Unlock()
		return nil
	}
	if m.routes(p) {
		r, err := m.newRouter(t, snap, from)
		if err != nil {
			return err
		}
		t.route = r
		m.launch(t, func(ctx context.Context) (job.Summary, error) {
			r.run(ctx)
			return job.Summary{}, nil
		})
		return nil
	}
	ro := m.o.Run
	if ro.Logger != nil {
		ro.Logger = slog.New(quietAborts{ro.Logger.Handler()})
	}
	ro.Parallelism = 1
	ro.Task = &job.TaskCheckpoints{Store: store{t}, Run: m.run}
	if m.archive != "" {
		ro.Task.Archive = func(key string, start, end etime.Time, run, pane int64, value []byte) {
			t.write(&kgo.Record{Topic: m.archive, Partition: t.part, Key: archive.KafkaKey(key, start, end), Value: archive.EncodeKafka(run, pane, value, nil)})
		}
	}
	if snap != nil {
		ro.Task.Restore, ro.Task.RestoreID, ro.Task.Meta = checkpoint.PartsView(snap.Parts), snap.ID, snap.Meta
	}
	j, err := job.Open(m.taskPlan(t), ro)
	if err != nil {
		return err
	}
	t.job = j
	m.launch(t, j.Run)
	return nil
}

// launch registers task t and runs run on a goroutine of its own until
// t.stop cancels it; its end is recorded in t and wakes the member.
func (m *Member) launch(t *task, run func(context.Context) (job.Summary, error)) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(m.ctx))
	t.cancel = cancel
	m.mu.Lock()
	m.tasks[t.p] = t
	m.mu.Unlock()
	go func() {
		var sum job.Summary
		var err error
		if failTask != nil {
			err = failTask(t.p)
		}
		if err == nil {
			sum, err = run(ctx)
		}
		t.mu.Lock()
		t.sum, t.runErr, t.ended = sum, err, true
		t.mu.Unlock()
		close(t.done)
		m.wake()
	}()
}

// stop cancels the task's run and waits for it.
func (t *task) stop() {
	t.quitOnce.Do(func() { close(t.quit) })
	if t.cancel != nil {
		t.cancel()
	}
	<-t.done
}

// taskPlan is the plan with the kafka kind replaced by the task's: its
// source reads the task's inbox, its sinks write the task's outbox; and
// the postgres kind's sinks write the task's Postgres outbox (pgSink).
func (m *Member) taskPlan(t *task) *spec.Plan {
	reg := connector.NewRegistry()
	for _, k := range m.o.Plan.Kinds().Kinds() {
		if k.Name == "kafka" {
			src, snk := *k.Source, *k.Sink
			src.Open = func(ctx context.Context, so connector.SourceOpen) (connector.OpenedSource, error) {
				if t.topic == m.rt {
					return openRTReader(so, t, m.topic, m.nparts)
				}
				return kafkaio.OpenTaskSource(ctx, so, t.inbox, t.part, t.from)
			}
			snk.OpenMessages = func(_ context.Context, o connector.MessagesOpen) (connector.Sink[connector.Message], error) {
				return &sink{t: t, topic: o.Settings.String("topic"), role: o.Role}, nil
			}
			snk.Committed = nil
			k.Source, k.Sink = &src, &snk
		}
		if k.Name == "postgres" {
			snk := *k.Sink
			snk.OpenResults = func(_ context.Context, o connector.ResultsOpen) (connector.ResultsSink, error) {
				return &pgSink{t: t, path: o.Output}, nil
			}
			snk.OpenMessages = func(_ context.Context, o connector.MessagesOpen) (connector.Sink[connector.Message], error) {
				return &pgRecords{pgSink{t: t, path: o.Output}}, nil
			}
			k.Sink = &snk
		}
		reg.MustRegister(k)
	}
	p := *m.o.Plan
	p.Registry = reg
	return &p
}

// sourcePart is the name of a task's source position part.
var sourcePart = checkpoint.PartName("source", 0, "source")

// position is the task's position (next input offset, watermark) in a
// checkpoint's parts.
func (t *task) position(parts map[string][]byte) (kafkaio.Position, error) {
	b, ok := parts[sourcePart]
	if !ok {
		return kafkaio.Position{}, fmt.Errorf("the checkpoint has no part %s", sourcePart)
	}
	r := state.Reader{Buf: b}
	pos := r.Bytes()
	if r.Err != nil {
		return kafkaio.Position{}, fmt.Errorf("part %s: %w", sourcePart, r.Err)
	}
	if t.topic == t.m.rt {
		rp, err := rtPositionOf(pos)
		return kafkaio.Position{Next: rp.Next, Watermark: rp.WM}, err
	}
	return partPosition(pos, t.part)
}

// partPosition is partition p's position in a kafka reader's position.
func partPosition(pos []byte, p int32) (kafkaio.Position, error) {
	all, err := kafkaio.Positions(pos)
	if err != nil {
		return kafkaio.Position{}, err
	}
	at, ok := all[p]
	if !ok {
		return kafkaio.Position{}, fmt.Errorf("the position has no partition %d", p)
	}
	return at, nil
}

// commit asks every task for a checkpoint and commits, in one
// transaction, their outputs, their checkpoints (to the changelog) and
// their positions (the group's offsets, each with its checkpoint's id in
// the metadata). When the transaction aborts (a rebalance, a failure),
// every task restarts from its last committed checkpoint.
func (m *Member) commit(ctx context.Context) error {
	// A commit under way finishes when the member is being stopped (its
	// End is bounded by a timeout below); a cancelled End would leave
	// the producer unusable.
	ctx = context.WithoutCancel(ctx)
	began := time.Now()
	m.mu.Lock()
	ts := slices.Collect(maps.Values(m.tasks))
	m.mu.Unlock()
	slices.SortFunc(ts, func(a, b *task) int { return int(a.p - b.p) })
	presence := time.Since(m.present) >= presenceEvery
	if len(ts) == 0 && !presence {
		return nil
	}
	// Each task answers with a checkpoint (its Commit wakes the member),
	// or ends. A task whose run has not started its checkpoints yet
	// refuses the request: it is asked again shortly.
	asked := map[int32]bool{}
	ask := func(t *task) {
		if !asked[t.p] && t.job != nil && !t.isEnded() {
			asked[t.p] = t.job.Env().RequestCheckpoint()
		}
	}
	for _, t := range ts {
		ask(t)
	}
	deadline := time.Now().Add(time.Minute)
	for _, t := range ts {
		for t.route == nil && !t.answered() {
			if time.Now().After(deadline) {
				return taskError(t.p, errors.New("no checkpoint within a minute"))
			}
			again := 100 * time.Millisecond
			if !asked[t.p] {
				again = 5 * time.Millisecond
			}
			select {
			case <-m.wakeCh:
			case <-time.After(again):
			}
			ask(t)
		}
	}
	type result struct {
		t     *task
		snap  *snapshot
		ready []*pending
		kc    keyedCommit // the snapshot's changelog records
	}
	var results []result
	var perr error
	var pmu sync.Mutex
	produced := func(r *kgo.Record, err error) {
		if err != nil {
			key := string(r.Key)
			if len(key) > 64 {
				key = key[:64] + "..."
			}
			pmu.Lock()
			perr = errors.Join(perr, fmt.Errorf("a record of %d bytes to %s (key %q): %w", len(r.Key)+len(r.Value), r.Topic, key, err))
			pmu.Unlock()
		}
	}
	m.txnBegan = time.Now()
	if err := m.sess.Begin(); err != nil {
		return m.fenced(fmt.Errorf("group: begin transaction: %w", err))
	}
	if presence {
		// The member's presence record: a transaction at least this
		// often, so that a member whose name another process took is
		// fenced off (its producer's epoch is old) even without tasks.
		v := fmt.Appendf(nil, `{"instance":%q,"at":%d}`, m.o.Instance, time.Now().UnixMilli())
		m.sess.Produce(ctx, &kgo.Record{Topic: m.changelog, Partition: 0, Key: []byte(presencePrefix + m.o.Instance), Value: v}, produced)
		m.present = time.Now()
	}
	restart := map[int32]*task{}
	changelogBytes, tombstones := 0, 0
	var routed [][]*kgo.Record // each route task's, produced interleaved below
	for _, t := range ts {
		if t.last != nil && t.last.Done {
			continue
		}
		var out []*kgo.Record
		var ready []*pending
		var snap *snapshot
		if t.route == nil {
			out, ready = t.take()
		}
		switch {
		case t.route != nil:
			rr, ok := t.route.snapshot(t.done)
			if !ok || rr.err != nil {
				if rr.err != nil {
					t.mu.Lock()
					t.runErr = rr.err // restartTasks warns of it
					t.mu.Unlock()
				}
				restart[t.p] = t
				continue
			}
			pos, err := partPosition(rr.pos, t.part)
			if err != nil {
				return taskError(t.p, err)
			}
			snap = &snapshot{ID: t.nextID(), Meta: m.meta, Parts: map[string][]byte{routePart: rr.pos}, Position: t.next(pos), Watermark: pos.Watermark, Idle: pos.Idle, Done: rr.done}
			// The routed records with their markers; at the end of the
			// input, a last marker in every repartition partition says so.
			out = rr.recs
			if rr.done {
				for r := range int32(m.nparts) {
					out = append(out, marker{From: t.part, WM: pos.Watermark, Idle: pos.Idle, Done: true}.record(m.rt, r))
				}
			}
		case len(ready) > 0:
			pd := ready[len(ready)-1]
			pos, err := t.position(pd.parts)
			if err != nil {
				return taskError(t.p, err)
			}
			snap = &snapshot{ID: pd.id, Meta: m.meta, Parts: withPG(pd.parts, t.takePG()), Position: t.next(pos), Watermark: pos.Watermark, Idle: pos.Idle}
		case t.isEnded() && t.runErr == nil && t.job != nil:
			snap = &snapshot{ID: t.nextID(), Meta: m.meta, Parts: withPG(map[string][]byte{summaryPart: encodeSummary(t.sum)}, t.takePG()), Done: true, Position: t.inbox.position(), Watermark: etime.MaxTime}
		default: // the run failed: restart it from its last commit
			restart[t.p] = t
			for _, pd := range ready {
				pd.result <- errAborted
			}
			continue
		}
		if t.route != nil {
			routed = append(routed, out)
		} else {
			for _, r := range out {
				if r.Value == nil && r.Topic == m.archive {
					tombstones++ // a trim's (counted once committed)
				}
				m.sess.Produce(ctx, r, produced)
			}
		}
		kc := t.kc.commit(m.changelog, t.p, snap, time.Now())
		for _, r := range kc.recs {
			m.sess.Produce(ctx, r, produced)
			changelogBytes += len(r.Key) + len(r.Value)
		}
		results = append(results, result{t, snap, ready, kc})
	}
	// The route tasks' records (with their markers) go out interleaved,
	// routeChunk of each in turn, as one process's reader interleaves its
	// partitions' fetches: a window task hears every route task's markers
	// soon, rather than one route task's whole commit before the next's.
	for len(routed) > 0 {
		rest := routed[:0]
		for _, out := range routed {
			n := min(len(out), routeChunk)
			for _, r := range out[:n] {
				m.sess.Produce(ctx, r, produced)
			}
			if n < len(out) {
				rest = append(rest, out[n:])
			}
		}
		routed = rest
	}
	// Each task's offset and metadata; the offset of a snapshot's first
	// changelog record is known once it was produced (End flushes first).
	type commitAt struct {
		snap  *snapshot
		first *kgo.Record // nil: at
		at    int64
	}
	metas := map[int32]commitAt{}
	for _, r := range results {
		metas[r.t.p] = commitAt{snap: r.snap, first: r.kc.first, at: r.t.kc.baseAt}
	}
	for _, t := range ts {
		if t.last != nil && t.last.Done {
			metas[t.p] = commitAt{snap: t.last, at: t.lastFirst}
		}
	}
	cctx := kgo.PreTxnCommitFnContext(ctx, func(req *kmsg.TxnOffsetCommitRequest) error {
		req.Topics = nil
		for _, name := range m.topics() {
			topic := kmsg.NewTxnOffsetCommitRequestTopic()
			topic.Topic = name
			for _, p := range slices.Sorted(maps.Keys(metas)) {
				tn, part := m.where(p)
				if tn != name {
					continue
				}
				c := metas[p]
				at := c.at
				if c.first != nil {
					at = c.first.Offset
				}
				s := c.snap
				tp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
				tp.Partition, tp.Offset, tp.LeaderEpoch = part, s.Position, -1
				tp.Metadata = ptr(taskMeta{ID: s.ID, Done: s.Done, At: at, Watermark: s.Watermark, Idle: s.Idle}.String())
				topic.Partitions = append(topic.Partitions, tp)
			}
			if len(topic.Partitions) > 0 {
				req.Topics = append(req.Topics, topic)
			}
		}
		return nil
	})
	m.o.Crash("group-produced")
	// A broker that stops answering fails the member rather than hang it:
	// past its timeout (and a margin), Kafka aborts the transaction
	// anyway, so waiting longer gains nothing (the lapse then makes the
	// member join again).
	cctx, cancel := context.WithDeadline(cctx, m.txnBegan.Add(m.o.TransactionTimeout+5*time.Second))
	defer cancel()
	// A record that failed in the client (an unknown topic, too large)
	// does not fail the transaction by itself: flush, and abort rather
	// than commit offsets and checkpoints without it.
	try := kgo.TryCommit
	if ferr := m.sess.Client().Flush(cctx); ferr != nil {
		try = kgo.TryAbort
	}
	pmu.Lock()
	if perr != nil {
		try = kgo.TryAbort
	}
	pmu.Unlock()
	committed, err := m.sess.End(cctx, try)
	m.o.Logger.Debug("transaction ended", "instance", m.o.Instance, "committed", committed, "err", err, "records_err", perr, "tasks", len(results))
	if committed && err == nil {
		m.o.Crash("group-committed")
	}
	pmu.Lock()
	if perr != nil && err == nil {
		// The transaction aborted; a record that fails every time would
		// abort every one: the member stops, naming it.
		err = fmt.Errorf("group: a record of the transaction failed: %w", perr)
	}
	pmu.Unlock()
	if err != nil {
		for _, r := range results {
			for _, pd := range r.ready {
				pd.result <- errAborted
			}
		}
		return m.fenced(fmt.Errorf("group: ending the transaction: %w", err))
	}
	m.txnBegan = time.Time{}
	if committed {
		m.rejoins = 0
		var tasks []int32
		for _, r := range results {
			tasks = append(tasks, r.t.p)
		}
		m.committedTasks(tasks, changelogBytes, time.Since(began))
		m.met.trimmed.Add(float64(tombstones))
		// The Postgres outputs the transaction holds (pgout.go).
		for _, r := range results {
			if err := m.applyPG(ctx, r.t.p, r.snap); err != nil {
				return err
			}
		}
		if m.rt != "" {
			for _, r := range results {
				if r.t.topic == m.rt {
					m.purgeTo[r.t.part] = r.snap.Position
				}
			}
			defer m.purge() // after the checkpoints heard of the commit
		}
		for _, r := range results {
			r.t.last, r.t.lastAt, r.t.lastFirst = r.snap, r.kc.hdr.Offset, r.kc.at(r.t.kc)
			r.kc.apply()
			kind := "delta"
			if r.kc.base {
				kind = "base"
			}
			m.met.checkpoints.WithLabelValues(kind).Inc()
			for _, pd := range r.ready {
				pd.result <- nil
			}
			if time.Since(r.t.cached) >= cacheEvery || r.snap.Done {
				r.t.cached = time.Now()
				m.keep(r.t.p, r.snap, r.t.lastAt, r.t.kc.chain())
			}
			if r.snap.Done {
				m.o.Info(fmt.Sprintf("instance %s: task %d read its input to the end and committed", m.o.Instance, r.t.p))
			} else if m.o.OnCommit != nil {
				m.o.OnCommit(r.t.p, r.snap.ID, r.snap.Watermark)
			}
		}
	} else {
		m.abortedTxn()
		m.o.Info(fmt.Sprintf("instance %s: a rebalance aborted the transaction; tasks %v restart from their last commits", m.o.Instance, slices.Sorted(maps.Keys(metas))))
		for _, r := range results {
			for _, pd := range r.ready {
				pd.result <- errAborted
			}
			restart[r.t.p] = r.t
		}
	}
	return m.restartTasks(restart)
}

// routeChunk is how many records of one route task a transaction holds
// before the next route task's.
const routeChunk = 256

// partsEvery is how often a member checks the input's partition count
// (a variable for the tests).
var partsEvery = 5 * time.Second

// watchPartitions checks, at most every partsEvery and on a goroutine of
// its own, that the input still has the partitions the group's state was
// split by: partitions added while the group runs would never be read
// (the changelog has a partition per task, fixed when it was created), so
// the member fails, naming the fix, rather than leave them unread without
// a word. Kafka cannot remove partitions.
func (m *Member) watchPartitions() {
	if time.Since(m.watched) < partsEvery || m.watching.Load() {
		return
	}
	m.watched = time.Now()
	m.watching.Store(true)
	m.purgeWG.Go(func() {
		defer m.watching.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := m.partitionsAddedBy(ctx, m.adm); err != nil {
			m.fail(err)
			m.wake()
		}
	})
}

// partitionsAdded is partitionsAddedBy within 5 s, through a client of
// its own: the member's keeps metadata it read for a few seconds, and a
// record of a partition added since may be what asks.
func (m *Member) partitionsAdded() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(m.clientOpts()...)
	if err != nil {
		return nil
	}
	defer cl.Close()
	return m.partitionsAddedBy(ctx, kadm.NewClient(cl))
}

// partitionsAddedBy returns the refusal of an input that has other
// partitions than the group's state was split by, asking adm; nil when
// it has the same, or when Kafka does not say (the fetches and commits
// report an outage).
func (m *Member) partitionsAddedBy(ctx context.Context, adm *kadm.Client) error {
	td, err := adm.ListTopics(ctx, m.topic)
	if err != nil {
		return nil
	}
	if in, ok := td[m.topic]; ok && in.Err == nil && len(in.Partitions) != m.nparts {
		return refused(fmt.Errorf("the input topic %s now has %d partitions and the group's state %d: the records of the partitions added while the group ran are not read, since the job's state is split by the input's partitions; reset the group (weir reset) and run the job again to read them all", m.topic, len(in.Partitions), m.nparts))
	}
	return nil
}

// purgeEvery is how often a member deletes the repartition records its
// window tasks committed past (a variable for the tests).
var purgeEvery = 5 * time.Second

// purge deletes, at most every purgeEvery, the records of the
// repartition partitions before the offsets the member's window tasks
// committed (purgeTo: their checkpoints cover them, a restore starts
// there), as Kafka Streams purges its repartition topics.
//
// It runs on the loop; the deletion runs on a goroutine of its own (one
// at a time), so that the loop never waits for it.
func (m *Member) purge() {
	if len(m.purgeTo) == 0 || time.Since(m.purged) < purgeEvery || m.purging.Load() {
		return
	}
	m.purged = time.Now()
	var os kadm.Offsets
	for p, o := range m.purgeTo {
		os.AddOffset(m.rt, p, o, -1)
	}
	clear(m.purgeTo)
	if m.purger == nil {
		// A client of its own: the member's admin client looked the
		// topic up before creating it, and its sharded requests keep
		// that answer for a while.
		cl, err := kgo.NewClient(m.clientOpts()...)
		if err != nil {
			m.o.Logger.Warn("purging the repartition topic", "err", err)
			return
		}
		m.purger = kadm.NewClient(cl)
	}
	m.purging.Store(true)
	m.purgeWG.Go(func() {
		defer m.purging.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := m.purger.DeleteRecords(ctx, os)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			m.o.Logger.Warn("purging the repartition topic failed; it is tried again", "topic", m.rt, "err", err)
		}
	})
}

// restartTasks restarts the tasks of ps (by number) from their last
// commits and seeks the consumer to their positions. It and assign's
// starts hold startMu: kgo runs assign beside the member's loop.
//
// A task whose run failed restarts at once the first time, then after
// restartBackoff, doubling with each failure in a row up to
// restartMaxBackoff (as Flink's exponential-delay restart strategy
// does); a task that ran restartReset without failing starts counting
// again. Until its time the failed task stays as it is: its partition
// paused, its last commit kept.
func (m *Member) restartTasks(ps map[int32]*task) error {
	if len(ps) == 0 {
		return nil
	}
	seek := map[string]map[int32]kgo.EpochOffset{}
	m.startMu.Lock()
	defer m.startMu.Unlock()
	for _, p := range slices.Sorted(maps.Keys(ps)) {
		m.mu.Lock()
		t := m.tasks[p]
		m.mu.Unlock()
		if t == nil || t != ps[p] {
			continue // revoked, or replaced by an assignment meanwhile
		}
		if !m.restartDue(t) {
			continue
		}
		t.stop()
		from := t.from
		if t.last != nil {
			from = t.last.Position
		}
		if err := m.startTask(p, t.last, from, t.lastAt, t.lastFirst, t.kc); err != nil {
			return taskError(p, err)
		}
		topic, part := m.where(p)
		if seek[topic] == nil {
			seek[topic] = map[int32]kgo.EpochOffset{}
		}
		seek[topic][part] = kgo.EpochOffset{Epoch: -1, Offset: from}
	}
	m.sess.Client().SetOffsets(seek)
	return nil
}

// failures is a task's count of failed runs in a row and the time of
// its last restart.
type failures struct {
	n         int
	restarted time.Time
}

// failTask, when set (by a test), is asked before each run of task p:
// an error fails the run at once.
var failTask func(p int32) error

// The restart delays of a task that fails again and again (variables
// for the tests, which lower them).
var (
	restartBackoff    = time.Second
	restartMaxBackoff = time.Minute
	restartReset      = 10 * time.Minute
)

// restartDue reports whether task t restarts now: at once when it did
// not fail (a rebalance aborted its transaction), else when its backoff
// has passed; the first call for a failure warns of it with the delay.
// Called under startMu.
func (m *Member) restartDue(t *task) bool {
	t.mu.Lock()
	err, at := t.runErr, t.retryAt
	t.mu.Unlock()
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, errAborted) {
		return true
	}
	now := time.Now()
	if at.IsZero() {
		if m.failures == nil {
			m.failures = map[int32]failures{}
		}
		f := m.failures[t.p]
		if now.Sub(f.restarted) >= restartReset {
			f.n = 0
		}
		f.n++
		delay := time.Duration(0)
		if f.n > 1 {
			delay = min(restartBackoff<<min(f.n-2, 30), restartMaxBackoff)
		}
		m.failures[t.p] = f
		m.o.Logger.Warn("task failed; it restarts from its last commit", "task", t.p, "in", delay, "failures_in_a_row", f.n, "err", err)
		at = now.Add(delay)
		t.mu.Lock()
		t.retryAt = at
		t.mu.Unlock()
	}
	if now.Before(at) {
		return false
	}
	f := m.failures[t.p]
	f.restarted = now
	m.failures[t.p] = f
	return true
}

// next is the input offset a checkpoint of the task resumes at: pos's,
// or where the task started when its reader had not started yet (a
// checkpoint taken at once says -1 then). A checkpoint must never carry
// -1: committed, it reads as no commit at all (the next owner would start
// over), and a restart from it could not rewind the member's fetch.
func (t *task) next(pos kafkaio.Position) int64 {
	if pos.Next < 0 {
		return t.from
	}
	return pos.Next
}

// nextID is the id of a snapshot the member makes of the task itself (a
// route task's, a job's end): the one after its last.
func (t *task) nextID() int64 {
	if t.last != nil {
		return t.last.ID + 1
	}
	return 1
}

func (t *task) isEnded() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ended
}

// answered: the task has a checkpoint waiting, or its run returned.
func (t *task) answered() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.ready) > 0 || t.ended
}

// position is the offset after the last record the inbox handed out.
func (b *inbox) position() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.next
}

// groupDone reports whether every partition's committed offset carries a
// done task's metadata.
func (m *Member) groupDone(ctx context.Context) (bool, error) {
	committed, err := m.committedOffsets(ctx)
	if err != nil {
		return false, fmt.Errorf("group: committed offsets of %s: %w", m.group, err)
	}
	_, done := m.doneTasks(committed)
	return done, nil
}

// doneTasks reports whether every task's committed metadata says it read
// its input to the end, and, when so, the input partitions' committed
// offsets (their ends).
func (m *Member) doneTasks(committed kadm.OffsetResponses) (ends map[int32]int64, done bool) {
	ends = map[int32]int64{}
	for id := range int32(m.ntasks()) {
		topic, p := m.where(id)
		c, ok := committed.Lookup(topic, p)
		if !ok {
			return nil, false
		}
		if tm, ok := parseMeta(c.Metadata); !ok || !tm.Done {
			return nil, false
		}
		if topic == m.topic {
			ends[p] = c.At
		}
	}
	return ends, true
}

// checkFinished refuses a member of a group that finished its run
// (stop_at_end: every task read its input to the end and committed) when
// the input has grown since: the group would never read the new records.
// A member of a finished group whose input did not grow goes on (it
// reports the group's summary and ends).
func (m *Member) checkFinished(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	committed, err := m.committedOffsets(ctx)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return nil // a new group
	}
	if err != nil {
		return fmt.Errorf("group: committed offsets of %s: %w", m.group, err)
	}
	ends, done := m.doneTasks(committed)
	if !done {
		return nil
	}
	if !m.stopAtEnd {
		// Its tasks are done for good: a member that reads on would sit
		// idle while records came, without a word.
		return refused(fmt.Errorf("group %s finished its run (an earlier spec had stop_at_end: every task read %s to its end and committed), and a finished group's tasks read nothing more: to read on, reset the group (weir reset) and run the job again, or give it another group.name with source.kafka.start at the time to read from", m.group, m.topic))
	}
	// Committed records (and transaction markers) past the run's end.
	listed, err := m.adm.ListCommittedOffsets(ctx, m.topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return fmt.Errorf("group: end offsets of %s: %w", m.topic, err)
	}
	var grown []string
	listed.Each(func(l kadm.ListedOffset) {
		if end, ok := ends[l.Partition]; ok && l.Offset > end {
			grown = append(grown, fmt.Sprintf("partition %d ends at offset %d, past the run's end at %d", l.Partition, l.Offset, end))
		}
	})
	if len(grown) == 0 {
		return nil
	}
	slices.Sort(grown)
	return refused(fmt.Errorf("group %s finished its run (stop_at_end: every task read %s to the end it had at its start, and committed), and the topic has grown since (%s): the group never reads those records; to read them, reset the group (weir reset) and run the job again over the whole topic (a new group.name with source.kafka.start at a time before the first of them reads from there; start: latest would skip them)",
		m.group, m.topic, strings.Join(grown, "; ")))
}

// summaryPart names the part of a done task's snapshot that holds its
// summary.
const summaryPart = "summary"

// encodeSummary is a summary's counters as lines "name value".
func encodeSummary(s job.Summary) []byte {
	var b []byte
	for _, c := range s.Counters {
		b = fmt.Appendf(b, "%s %d\n", c.Name, c.Value)
	}
	return b
}

// addSummary adds the counters of an encoded summary to sum (names in
// first-seen order).
func addSummary(sum *job.Summary, b []byte) error {
	for line := range strings.Lines(string(b)) {
		name, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil {
			return fmt.Errorf("a task's summary line %q", line)
		}
		i := slices.IndexFunc(sum.Counters, func(c job.Counter) bool { return c.Name == name })
		if i < 0 {
			sum.Counters = append(sum.Counters, job.Counter{Name: name})
			i = len(sum.Counters) - 1
		}
		sum.Counters[i].Value += n
	}
	return nil
}

// finishGroup reads every task's last checkpoint (each done: groupDone
// said so), writes its Postgres outputs (the member that committed it
// may have died before it did, and no member restores a done task
// later) and returns the sum of their summaries.
func (m *Member) finishGroup(ctx context.Context) (job.Summary, error) {
	var sum job.Summary
	committed, err := m.committedOffsets(ctx)
	if err != nil {
		return sum, fmt.Errorf("group: committed offsets of %s: %w", m.group, err)
	}
	for p := range int32(m.ntasks()) {
		if err := ctx.Err(); err != nil {
			return sum, err // a stop: the caller stops the member
		}
		if m.routes(p) {
			continue // a route task counts nothing: its records are counted where they are windowed
		}
		topic, part := m.where(p)
		c, _ := committed.Lookup(topic, part)
		tm, ok := parseMeta(c.Metadata)
		if !ok {
			return sum, taskError(p, errors.New("its committed offset names no checkpoint"))
		}
		s, _, _, _, err := m.read(ctx, p, tm, nil)
		if err != nil {
			return sum, taskError(p, err)
		}
		if err := m.applyPG(ctx, p, s); err != nil {
			return sum, err
		}
		if err := addSummary(&sum, s.Parts[summaryPart]); err != nil {
			return sum, taskError(p, err)
		}
	}
	return sum, nil
}

// stop ends the member gracefully: one more commit, then it leaves the
// group so that its tasks move at once.
func (m *Member) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m.o.Crash("group-stop")
	if err := m.commit(ctx); err != nil {
		var le *lapsedError
		if !errors.As(err, &le) {
			return err
		}
		// The last commit lapsed (Kafka unavailable for a while): what
		// the tasks did since their previous commit is redone by their
		// next owner; the member still leaves, and says so.
		m.o.Info(fmt.Sprintf("instance %s: %v; its tasks resume from their previous commits", m.o.Instance, le))
	}
	return m.leave(true)
}

// leave stops the tasks, writes their state to the state directory and
// leaves the group (a static member leaves through the admin API). At a
// graceful stop (stopped), Options.Stopped is told the tasks' counts.
func (m *Member) leave(stopped bool) error {
	ts := m.leaveTasks()
	m.mu.Lock()
	m.tasks = map[int32]*task{}
	m.mu.Unlock()
	var sum job.Summary
	var ids []int32
	for _, t := range ts {
		t.stop()
		if t.last != nil {
			m.keep(t.p, t.last, t.lastAt, t.kc.chain())
		}
		if b, ok := t.counters(); ok {
			ids = append(ids, t.p)
			if err := addSummary(&sum, b); err != nil {
				m.o.Logger.Warn("a task's summary", "task", t.p, "err", err)
			}
		}
	}
	if stopped && m.o.Stopped != nil && len(ids) > 0 {
		slices.Sort(ids)
		m.o.Stopped(ids, sum, m.others())
	}
	m.sess.CloseAllowingRebalance()
	m.sess = nil
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := m.adm.LeaveGroup(ctx, kadm.LeaveGroup(m.group).InstanceIDs(m.o.Instance).Reason("weir member stopped"))
	if err == nil {
		err = resp.Error()
	}
	if err != nil && !errors.Is(err, kerr.UnknownMemberID) {
		m.o.Logger.Warn("leaving the group failed: the tasks move after the session timeout", "err", err)
	}
	return nil
}

// leaveTasks marks the member leaving, so that no assignment starts a
// task any more, and returns its tasks.
func (m *Member) leaveTasks() []*task {
	m.startMu.Lock()
	m.leaving = true
	m.startMu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Collect(maps.Values(m.tasks))
}

// isLeaving reports whether leaveTasks was called.
func (m *Member) isLeaving() bool {
	m.startMu.Lock()
	defer m.startMu.Unlock()
	return m.leaving
}

// others are the group's members but this one, as the broker describes
// the group (nil when it cannot tell within a few seconds).
func (m *Member) others() []string {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	described, err := m.adm.DescribeGroups(ctx, m.group)
	if err != nil {
		return nil
	}
	g, ok := described[m.group]
	if !ok || g.Err != nil {
		return nil
	}
	others := []string{}
	for _, gm := range g.Members {
		if gm.InstanceID == nil || *gm.InstanceID != m.o.Instance {
			others = append(others, cmp.Or(ptrValue(gm.InstanceID), gm.MemberID))
		}
	}
	slices.Sort(others)
	return others
}

func ptrValue(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// close, after a failure, stops the tasks and closes the session (without
// leaving: a restart with the same name keeps the tasks).
func (m *Member) close() {
	if m.sess == nil {
		return
	}
	for _, t := range m.leaveTasks() {
		t.stop()
	}
	m.sess.CloseAllowingRebalance()
	m.sess = nil
}

// partitioner places the records of the changelog by their Partition and
// the others by key, as Kafka's default partitioner does.
type partitioner struct {
	manual map[string]bool
	key    kgo.Partitioner
}

func (p partitioner) ForTopic(t string) kgo.TopicPartitioner {
	if p.manual[t] {
		return kgo.ManualPartitioner().ForTopic(t)
	}
	return p.key.ForTopic(t)
}

// trimArchive starts, at most every ArchiveTrimEvery and one at a time
// (on a goroutine of its own, in purgeWG), the removal of the windows
// that ended before the group's archiving watermark less archive.horizon
// from the archive partitions of the member's window tasks: each such
// window's tombstone goes into its task's outbox, committed with the
// task's next checkpoint. A window that far behind every task's
// watermark never fires again (the horizon is at least the allowed
// lateness, and the group's archiving watermark is the smallest of its
// window tasks', idle ones too); a backfill that read it before its
// tombstone revises it
// from what it read, and one that reads the tombstone counts its late
// records as beyond the horizon, as it counts the windows it trims
// itself (backfill.GroupArchive).
func (m *Member) trimArchive() {
	if m.archive == "" || time.Since(m.trimmed) < m.o.ArchiveTrimEvery || m.trimming.Load() {
		return
	}
	m.trimmed = time.Now()
	m.mu.Lock()
	var ts []*task
	for _, t := range m.tasks {
		if t.route == nil && t.job != nil && !t.isEnded() {
			ts = append(ts, t)
		}
	}
	m.mu.Unlock()
	if len(ts) == 0 {
		return
	}
	windows := m.topic
	if m.rt != "" {
		windows = m.rt
	}
	m.trimming.Store(true)
	m.purgeWG.Go(func() {
		defer m.trimming.Store(false)
		ctx, cancel := context.WithTimeout(m.ctx, 5*time.Minute)
		defer cancel()
		n, err := m.trim(ctx, windows, ts)
		if err != nil && ctx.Err() == nil {
			m.o.Logger.Warn("trimming the archive failed; it is tried again", "topic", m.archive, "err", err)
		}
		if n > 0 {
			m.o.Logger.Info("trimmed the archive: windows beyond the horizon removed", "topic", m.archive, "windows", n)
		}
	})
}

// trim writes the tombstones of the windows of tasks ts's archive
// partitions that ended before the cut (the group's archiving watermark
// less the horizon; none while a window task has no watermark, or once
// every one read its input to the end), at most maxTrim a time. It runs
// beside the loop: a task revoked meanwhile drops its outbox.
func (m *Member) trim(ctx context.Context, windows string, ts []*task) (int, error) {
	live, err := groupLive(ctx, m.adm, m.group, windows)
	if err != nil || live == etime.MinTime || live == etime.MaxTime {
		return 0, err
	}
	cut := live.Add(-m.o.Plan.ArchiveHorizon)
	byPart := map[int32]*task{}
	var parts []int32
	for _, t := range ts {
		byPart[t.part], parts = t, append(parts, t.part)
	}
	gone := map[int32]map[string]bool{}
	n := 0
	err = scanCommitted(ctx, m.clientOpts(), m.adm, m.archive, parts, func(part int32, k, v []byte) error {
		if _, _, end, err := archive.ParseKafkaKey(k); err != nil || end >= cut {
			return nil
		}
		g := gone[part]
		if g == nil {
			g = map[string]bool{}
			gone[part] = g
		}
		switch {
		case v == nil && g[string(k)]:
			delete(g, string(k)) // removed already
			n--
		case v != nil && !g[string(k)] && n < maxTrim:
			g[string(k)] = true
			n++
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	// The mark again after the scan: a window task whose partition held
	// no record may have committed its first, older, watermark meanwhile
	// (groupLive); the smaller cut holds.
	again, err := groupLive(ctx, m.adm, m.group, windows)
	if err != nil || again == etime.MinTime {
		return 0, err
	}
	if again < live {
		cut = again.Add(-m.o.Plan.ArchiveHorizon)
	}
	n = 0
	for part, keys := range gone {
		t := byPart[part]
		for k := range keys {
			if _, _, end, err := archive.ParseKafkaKey([]byte(k)); err != nil || end >= cut {
				continue
			}
			t.write(&kgo.Record{Topic: m.archive, Partition: part, Key: []byte(k)})
			n++
		}
	}
	return n, nil
}

// maxTrim bounds the tombstones of one trim (the rest wait for the
// next): they are held in memory until the next commit.
const maxTrim = 100_000
