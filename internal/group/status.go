package group

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/monitor"
)

// keepEvents is how many rebalances and restores a member remembers.
const keepEvents = 100

// events are what a member tells of itself in its status and metrics;
// guarded by Member.mu.
type events struct {
	rebalances []time.Time
	restores   []monitor.GroupRestore
	committed  int64
	aborted    int64
	mismatches []string
	// assigned is when each task was assigned to the member, until its
	// first commit here (the hand-over histogram).
	assigned map[int32]time.Time
	// lastCommit is when the member last committed a transaction (its
	// start before its first); connErr is the last failed connection to
	// a broker, at connErrAt (Health names it).
	lastCommit time.Time
	connErr    error
	connErrAt  time.Time
	// finishing: every task of the group read its input to the end
	// (stop_at_end) and the member is finishing, committing no more.
	finishing bool
}

// metrics are a member's Prometheus series (nil fields: not registered).
type metrics struct {
	rebalances   prometheus.Counter
	assigned     prometheus.Counter
	revoked      prometheus.Counter
	restores     *prometheus.CounterVec
	restoreRecs  prometheus.Counter
	restoreBytes prometheus.Counter
	restoreDelta prometheus.Counter
	restoreTime  prometheus.Histogram
	restoreLag   *prometheus.GaugeVec
	txns         *prometheus.CounterVec
	commitTime   prometheus.Histogram
	handover     prometheus.Histogram
	changelog    prometheus.Counter
	checkpoints  *prometheus.CounterVec
	trimmed      prometheus.Counter
}

// newMetrics registers a member's series on reg (nil: none), with the
// group-wide gauges read from Kafka at each scrape (status).
func newMetrics(reg prometheus.Registerer, status func(context.Context) *monitor.GroupStatus) (*metrics, error) {
	m := &metrics{
		rebalances: prometheus.NewCounter(prometheus.CounterOpts{Name: "weir_group_rebalances_total", Help: "Changes of this member's tasks (assignments and revocations)."}),
		assigned:   prometheus.NewCounter(prometheus.CounterOpts{Name: "weir_group_tasks_assigned_total", Help: "Tasks assigned to this member."}),
		revoked:    prometheus.NewCounter(prometheus.CounterOpts{Name: "weir_group_tasks_revoked_total", Help: "Tasks revoked from (or lost by) this member."}),
		restores: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "weir_group_restores_total",
			Help: "Task restores on this member, by where the state came from (changelog, state_dir)."}, []string{"from"}),
		restoreRecs:  prometheus.NewCounter(prometheus.CounterOpts{Name: "weir_group_restore_records_total", Help: "Changelog records read by restores."}),
		restoreBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "weir_group_restore_bytes_total", Help: "Changelog bytes read by restores."}),
		restoreDelta: prometheus.NewCounter(prometheus.CounterOpts{Name: "weir_group_restore_deltas_total", Help: "Delta records (the keyed changelog's changed buckets) among the records restores read."}),
		restoreTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "weir_group_restore_seconds", Help: "Time of a task's restore.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}),
		txns: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "weir_group_transactions_total",
			Help: "This member's transactions, by outcome (committed, aborted)."}, []string{"outcome"}),
		commitTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "weir_group_commit_seconds", Help: "Time of a commit: the tasks' checkpoints, producing and ending the transaction.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}),
		handover: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "weir_group_handover_seconds",
			Help:    "From a task's assignment to this member until its first commit here (restore and catch-up; the time the previous owner took to go is not included).",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 12)}),
		changelog: prometheus.NewCounter(prometheus.CounterOpts{Name: "weir_group_changelog_bytes_total", Help: "Bytes this member wrote to the changelog (its tasks' checkpoints)."}),
		checkpoints: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "weir_group_changelog_checkpoints_total",
			Help: "Task checkpoints this member committed to the changelog, by kind (base: whole; delta: the items changed since the task's last commit)."}, []string{"kind"}),
		restoreLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "weir_group_restore_remaining_records",
			Help: "Changelog records each restore under way on this member has left to read (its partition's end less its position): the restore's changelog lag."}, []string{"task"}),
		trimmed: prometheus.NewCounter(prometheus.CounterOpts{Name: "weir_group_archive_trimmed_total",
			Help: "Archive windows beyond the horizon whose tombstones this member's committed transactions held (a trim without a backfill)."}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.rebalances, m.assigned, m.revoked, m.restores, m.restoreRecs, m.restoreBytes, m.restoreDelta, m.restoreTime, m.restoreLag, m.txns, m.commitTime, m.handover, m.changelog, m.checkpoints, m.trimmed, groupCollector{status}} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("group metrics: %w", err)
		}
	}
	return m, nil
}

var (
	membersDesc   = prometheus.NewDesc("weir_group_members", "Members of the group, as the broker describes it.", nil, nil)
	taskWMDesc    = prometheus.NewDesc("weir_group_task_watermark_seconds", "Each task's committed watermark (Unix seconds), whichever member runs it.", []string{"task"}, nil)
	taskLagDesc   = prometheus.NewDesc("weir_group_task_lag_records", "Each task's input records after its committed offset.", []string{"task"}, nil)
	taskOwnerDesc = prometheus.NewDesc("weir_group_task_owner", "1 for each task and the member that runs it.", []string{"task", "instance"}, nil)
)

// groupCollector reports the group-wide gauges from a status read at
// scrape time.
type groupCollector struct {
	status func(context.Context) *monitor.GroupStatus
}

func (groupCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- membersDesc
	ch <- taskWMDesc
	ch <- taskLagDesc
	ch <- taskOwnerDesc
}

func (c groupCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	s := c.status(ctx)
	ch <- prometheus.MustNewConstMetric(membersDesc, prometheus.GaugeValue, float64(len(s.Members)))
	for _, t := range s.Tasks {
		task := fmt.Sprint(t.Task)
		if t.WatermarkMS != nil {
			ch <- prometheus.MustNewConstMetric(taskWMDesc, prometheus.GaugeValue, float64(*t.WatermarkMS)/1000, task)
		}
		if t.End >= 0 {
			ch <- prometheus.MustNewConstMetric(taskLagDesc, prometheus.GaugeValue, float64(t.Lag), task)
		}
		if t.Owner != "" {
			ch <- prometheus.MustNewConstMetric(taskOwnerDesc, prometheus.GaugeValue, 1, task, t.Owner)
		}
	}
}

// remember appends v to s, keeping the newest keepEvents.
func remember[T any](s []T, v T) []T {
	s = append(s, v)
	if len(s) > keepEvents {
		s = slices.Delete(s, 0, len(s)-keepEvents)
	}
	return s
}

// rebalanced records a change of the member's tasks.
func (m *Member) rebalanced(assigned, revoked int) {
	m.mu.Lock()
	m.ev.rebalances = remember(m.ev.rebalances, time.Now())
	m.mu.Unlock()
	m.met.rebalances.Inc()
	m.met.assigned.Add(float64(assigned))
	m.met.revoked.Add(float64(revoked))
}

// restoring records the start of task p's restore, at began; progress
// records the records and bytes it read so far and the changelog records
// left, done its end (st from read; err: it failed).
func (m *Member) restoring(p int32, began time.Time) (progress func(records, bytes, remaining int64), done func(st readStats, err error)) {
	m.mu.Lock()
	m.ev.restores = remember(m.ev.restores, monitor.GroupRestore{Task: p, Started: began, InProgress: true})
	m.mu.Unlock()
	task := strconv.Itoa(int(p))
	// find is the restore's index in m.ev.restores (-1: gone), under m.mu.
	find := func() int {
		return slices.IndexFunc(m.ev.restores, func(r monitor.GroupRestore) bool { return r.Task == p && r.Started.Equal(began) })
	}
	progress = func(records, bytes, remaining int64) {
		m.met.restoreLag.WithLabelValues(task).Set(float64(remaining))
		m.mu.Lock()
		defer m.mu.Unlock()
		if i := find(); i >= 0 {
			r := &m.ev.restores[i]
			r.Records, r.Bytes, r.Remaining = records, bytes, remaining
		}
	}
	return progress, func(st readStats, err error) {
		d := time.Since(began)
		m.met.restoreLag.DeleteLabelValues(task)
		m.mu.Lock()
		defer m.mu.Unlock()
		i := find()
		if i < 0 {
			return
		}
		if err != nil {
			m.ev.restores = slices.Delete(m.ev.restores, i, i+1)
			return
		}
		r := &m.ev.restores[i]
		r.InProgress, r.Seconds, r.From, r.Remaining = false, d.Seconds(), "changelog", 0
		if st.from < 0 {
			r.From = "state_dir"
		} else {
			r.Records, r.Bytes = int64(st.records), st.bytes
			m.met.restoreRecs.Add(float64(st.records))
			m.met.restoreBytes.Add(float64(st.bytes))
			m.met.restoreDelta.Add(float64(st.deltas))
		}
		m.met.restores.WithLabelValues(r.From).Inc()
		m.met.restoreTime.Observe(d.Seconds())
	}
}

// committedTasks records a committed transaction with the tasks whose
// checkpoints it held, and changelog bytes written.
func (m *Member) committedTasks(tasks []int32, bytes int, took time.Duration) {
	now := time.Now()
	m.mu.Lock()
	m.ev.committed++
	m.ev.lastCommit = now
	for _, p := range tasks {
		if at, ok := m.ev.assigned[p]; ok {
			delete(m.ev.assigned, p)
			m.met.handover.Observe(now.Sub(at).Seconds())
		}
	}
	m.mu.Unlock()
	m.met.txns.WithLabelValues("committed").Inc()
	m.met.commitTime.Observe(took.Seconds())
	m.met.changelog.Add(float64(bytes))
}

// abortedTxn records an aborted transaction.
func (m *Member) abortedTxn() {
	m.mu.Lock()
	m.ev.aborted++
	m.mu.Unlock()
	m.met.txns.WithLabelValues("aborted").Inc()
}

// statusTTL is how long a status read from Kafka serves the scrapes and
// pages that follow (Member.Status).
const statusTTL = time.Second

// Status is the group as this member sees it: from Kafka (the group's
// members and assignments, committed offsets and their metadata, the
// input's end offsets) and from the member's own events. What cannot be
// read within ctx is said in Errors. A status read less than statusTTL
// ago is returned again, and callers at once share one read, so that
// scrapers and pages cost Kafka four admin requests a second at most.
// The caller must not change the status.
func (m *Member) Status(ctx context.Context) *monitor.GroupStatus {
	m.statusMu.Lock()
	defer m.statusMu.Unlock()
	if m.statusLast != nil && time.Since(m.statusAt) < statusTTL {
		return m.statusLast
	}
	m.statusLast, m.statusAt = m.readStatus(ctx), time.Now()
	return m.statusLast
}

// readStatus reads the status (Status).
func (m *Member) readStatus(ctx context.Context) *monitor.GroupStatus {
	s := &monitor.GroupStatus{Group: m.group, Job: jobName(m.o.Plan), Run: m.run, SpecHash: m.specHash, Topic: m.topic, Repartition: m.rt,
		StatePartitions: m.nparts, Instance: m.o.Instance, At: time.Now().UTC()}
	m.mu.Lock()
	s.Rebalances = slices.Clone(m.ev.rebalances)
	s.Restores = slices.Clone(m.ev.restores)
	for i := range s.Restores {
		if r := &s.Restores[i]; r.InProgress {
			r.Seconds = time.Since(r.Started).Seconds()
		}
	}
	s.Committed, s.Aborted = m.ev.committed, m.ev.aborted
	s.Mismatches = slices.Clone(m.ev.mismatches)
	m.mu.Unlock()
	fail := func(what string, err error) { s.Errors = append(s.Errors, fmt.Sprintf("%s: %v", what, err)) }

	owner := map[int32]string{}
	if described, err := m.adm.DescribeGroups(ctx, m.group); err != nil {
		fail("describing the group", err)
	} else if g, ok := described[m.group]; ok {
		for _, gm := range g.Members {
			name := gm.MemberID
			if gm.InstanceID != nil {
				name = *gm.InstanceID
			}
			mem := monitor.GroupMember{Instance: name, Host: gm.ClientHost}
			if c, ok := gm.Assigned.AsConsumer(); ok {
				for _, t := range c.Topics {
					if t.Topic == m.topic || t.Topic == m.rt {
						for _, p := range t.Partitions {
							mem.Tasks = append(mem.Tasks, m.taskID(t.Topic, p))
						}
					}
				}
			}
			slices.Sort(mem.Tasks)
			for _, p := range mem.Tasks {
				owner[p] = name
			}
			s.Members = append(s.Members, mem)
		}
		slices.SortFunc(s.Members, func(a, b monitor.GroupMember) int { return strings.Compare(a.Instance, b.Instance) })
	}
	committed, err := m.adm.FetchOffsets(ctx, m.group)
	if err == nil {
		err = committed.Error()
	}
	if err != nil {
		fail("the group's committed offsets", err)
	}
	ends, err := m.adm.ListCommittedOffsets(ctx, m.topics()...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		fail("the input's end offsets", err)
	}
	if td, err := m.adm.ListTopics(ctx, m.topic); err != nil {
		fail("the input topic", err)
	} else if t, ok := td[m.topic]; ok {
		s.InputPartitions = len(t.Partitions)
	}
	for p := range int32(m.ntasks()) {
		topic, part := m.where(p)
		t := monitor.GroupTask{Task: p, Owner: owner[p], Committed: -1, End: -1, WatermarkWhy: "no checkpoint committed yet"}
		if c, ok := committed.Lookup(topic, part); ok && c.At >= 0 {
			t.Committed = c.At
			if tm, ok := parseMeta(c.Metadata); ok {
				t.Checkpoint, t.Done = tm.ID, tm.Done
				switch {
				case tm.Watermark == etime.MaxTime:
					t.WatermarkWhy = "the end of its input"
				case tm.Watermark == etime.MinTime:
					t.WatermarkWhy = "no watermark yet at its checkpoint"
				default:
					wm := int64(tm.Watermark)
					t.WatermarkMS, t.WatermarkWhy = &wm, ""
				}
			}
		}
		if e, ok := ends.Lookup(topic, part); ok {
			t.End = e.Offset
			if t.Committed >= 0 {
				t.Lag = max(e.Offset-t.Committed, 0)
			}
		}
		s.Tasks = append(s.Tasks, t)
	}
	for i := range s.Tasks {
		t := &s.Tasks[i]
		if t.Done || t.End == 0 {
			continue // read to its end, or an empty partition
		}
		if s.Holder == nil || wmBelow(t, s.Holder) {
			h := *t
			s.Holder = &h
		}
	}
	return s
}

// wmBelow orders tasks by watermark, none first.
func wmBelow(a, b *monitor.GroupTask) bool {
	switch {
	case a.WatermarkMS == nil:
		return b.WatermarkMS != nil
	case b.WatermarkMS == nil:
		return false
	}
	return *a.WatermarkMS < *b.WatermarkMS
}

// defaultStallAfter is how long a member may commit nothing before it is
// stalled (Options.StallAfter): a member commits at least its presence
// record every presenceEvery.
const defaultStallAfter = 10 * time.Second

// Health says why the member is stalled: it committed nothing for
// Options.StallAfter, or for two commit intervals when those are longer
// (a transaction, at least its presence record, is due every commit
// interval and 2s at most), with the last failed broker connection when there is
// one; nil while it commits, while a restore is under way (which
// holds the commits back, and is progress), and once the group read its
// input to the end (it commits no more then). Any goroutine may call it.
func (m *Member) Health() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.ev.restores {
		if r.InProgress {
			return nil
		}
	}
	if m.ev.finishing {
		return nil // done committing: the group read its input to the end
	}
	// A commit is due every commit interval, and its presence record
	// every presenceEvery at least: a member stalls once it missed two.
	due := max(presenceEvery, m.o.CommitInterval)
	d := time.Since(m.ev.lastCommit)
	// A time the process itself did not run (stopped, paused, starved)
	// is neither Kafka's nor a transaction's.
	if d-monitor.PausedBetween(m.ev.lastCommit, time.Now()) < max(m.o.StallAfter, 2*due+time.Second) {
		return nil
	}
	why := fmt.Sprintf("instance %s has committed nothing for %v (a commit is due every %v)", m.o.Instance, d.Round(time.Second), due)
	if m.ev.connErr != nil && m.ev.connErrAt.After(m.ev.lastCommit) {
		why += fmt.Sprintf(": Kafka at %s fails: %v", strings.Join(m.brokers, ","), m.ev.connErr)
	} else {
		why += ": Kafka is slow or unreachable, or a transaction is stalled"
	}
	return []string{why}
}

// OnBrokerConnect implements kgo.HookBrokerConnect: it keeps the last
// failed connection for Health.
func (m *Member) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		return
	}
	m.mu.Lock()
	m.ev.connErr, m.ev.connErrAt = err, time.Now()
	m.mu.Unlock()
}

// watchStalls says on stderr (Info) and in the log when the member
// stalls (Health) and when it commits again, checking every second until
// stop is closed. Run owns its goroutine.
func (m *Member) watchStalls(stop <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	// before is the last commit before the stall told (zero: none told).
	var before time.Time
	told := time.Now() // the process's pauses that began by then were told
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		told = monitor.TellPauses(told, m.o.StallAfter, func(s string) {
			m.o.Logger.Warn("the process did not run", "instance", m.o.Instance, "why", s)
			m.o.Info("note: " + s)
		})
		m.mu.Lock()
		last := m.ev.lastCommit
		m.mu.Unlock()
		if before.IsZero() {
			if why := m.Health(); len(why) > 0 {
				before = last
				m.o.Logger.Warn("the member is stalled", "instance", m.o.Instance, "why", why[0])
				m.o.Info("warning: " + why[0] + "; /healthz answers 503 until it commits again")
			}
			continue
		}
		if last.After(before) {
			m.o.Info(fmt.Sprintf("instance %s commits again (nothing committed for %v)", m.o.Instance, last.Sub(before).Round(time.Second)))
			before = time.Time{}
		}
	}
}
