package group

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/promtest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir/backfill"
	"github.com/weirstream/weir/connector/kafkaio"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/archive"
	"github.com/weirstream/weir/ledger"
	"github.com/weirstream/weir/spec"
)

// TestGroupArchive: a group job with an archive block keeps each
// window's newest revision in its archive topic, in the transactions of
// its results; weir backfill folds the group's too-late records (its
// Kafka ledger) into those windows and publishes their next revisions to
// the results topic, after which the results equal the complete answer
// (every input record grouped without watermarks); a second backfill
// changes nothing.
func TestGroupArchive(t *testing.T) {
	broker := cluster(t, 3000, "ar")
	p, err := spec.Parse(fmt.Appendf(nil, groupJob+"archive: {dir: archive}\n", "ar", broker, broker, "ar", broker, "ar", broker, "ar"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sums := runMembers(t, p, filepath.Join(dir, "members"), "x", "y")
	late := sums[0].Get("late_side_output") // the group's summary
	if late == 0 {
		t.Fatal("no too-late records: nothing to backfill")
	}
	ctx := context.Background()
	// The archive holds a record per window the group published, each
	// the window's newest pane.
	windows := map[string]int64{}
	a, err := OpenArchive(ctx, p, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Scan(ctx, func(part int32, k, v []byte) error {
		_, pane, _, ids, err := archive.DecodeKafka(v)
		if err != nil || len(ids) > 0 {
			return fmt.Errorf("partition %d key %q: ids %v, %v", part, k, ids, err)
		}
		windows[string(k)] = max(windows[string(k)], pane)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if len(windows) < 13 {
		t.Fatalf("the archive holds %d windows", len(windows))
	}

	// The complete answer (every record of cluster's input, grouped
	// without watermarks), which the results miss the too-late records
	// of before the backfill, and equal after it.
	want := map[string][2]int64{}
	for i := range 3000 {
		ts := orderTime(i)
		k := fmt.Sprintf("u%d %d", i%13, ts-ts%1000)
		want[k] = [2]int64{want[k][0] + 1, want[k][1] + int64(i%10)}
	}
	// differ compares each window's newest revision, by run then pane,
	// with the complete answer.
	differ := func() []string {
		type row struct{ run, pane, orders, total int64 }
		got := map[string]row{}
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := kafkaio.ReadCommitted(rctx, []string{broker}, []string{"ar-out"}, time.Second, func(r *kgo.Record) {
			var v struct {
				User                string `json:"user_id"`
				Start               int64  `json:"window_start"`
				Pane, Orders, Total int64
				Run                 int64 `json:"run"`
			}
			if err := json.Unmarshal(r.Value, &v); err != nil {
				t.Errorf("%s: %v", r.Value, err)
				return
			}
			run := v.Run
			k := fmt.Sprintf("%s %d", v.User, v.Start)
			if old, ok := got[k]; !ok || run > old.run || run == old.run && v.Pane > old.pane {
				got[k] = row{run, v.Pane, v.Orders, v.Total}
			}
		}); err != nil {
			t.Fatal(err)
		}
		var diffs []string
		for k, w := range want {
			if g := got[k]; g.orders != w[0] || g.total != w[1] {
				diffs = append(diffs, fmt.Sprintf("%s: got %d orders totalling %d, want %d and %d", k, g.orders, g.total, w[0], w[1]))
			}
		}
		if len(got) != len(want) {
			diffs = append(diffs, fmt.Sprintf("%d windows, want %d", len(got), len(want)))
		}
		slices.Sort(diffs)
		return diffs
	}
	if d := differ(); len(d) == 0 {
		t.Fatal("before the backfill the results equal the complete answer: the test's input has no too-late records?")
	}
	open := func(ctx context.Context, p *spec.Plan) (backfill.GroupArchive, error) { return OpenArchive(ctx, p, 0) }
	run, err := RunOf(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	bo := backfill.BackfillOptions{Dir: dir, Group: Ran(ctx, p), GroupArchive: open, GroupRun: run}
	// A dry run changes nothing.
	before := committed(t, broker, "ar-out")
	dry := bo
	dry.DryRun = true
	if rep, err := backfill.Backfill(p, dry); err != nil || int64(rep.Applied) != late {
		t.Fatalf("dry run: %v: %+v, want %d entries", err, rep, late)
	}
	if after := committed(t, broker, "ar-out"); !slices.Equal(after, before) {
		t.Fatalf("the dry run wrote %d results", len(after)-len(before))
	}
	// u1's entries first, then the rest: the second backfill reads the
	// first's revisions and applied ids from the archive.
	some := bo
	some.Filter = func(e ledger.Entry) bool { return strings.Contains(string(e.Key), `"u1"`) }
	first, err := backfill.Backfill(p, some)
	if err != nil || first.Applied == 0 || int64(first.Applied) >= late {
		t.Fatalf("backfill of u1: %v: %+v", err, first)
	}
	rep, err := backfill.Backfill(p, bo)
	if err != nil || int64(rep.Entries) != late || int64(rep.Applied) != late-int64(first.Applied) || rep.AlreadyApplied != first.Applied || rep.HorizonExpired != 0 {
		t.Fatalf("backfill: %v: %+v, want %d entries applied and %d already", err, rep, late-int64(first.Applied), first.Applied)
	}
	rep.Windows += first.Windows
	if d := differ(); len(d) != 0 {
		t.Fatalf("after the backfill %d windows differ from the complete answer:\n%s", len(d), strings.Join(d[:min(len(d), 10)], "\n"))
	}
	var backfilled int
	for _, r := range committed(t, broker, "ar-out") {
		if strings.Contains(r, "weir-firing=backfill") {
			backfilled++
		}
	}
	if backfilled != rep.Windows {
		t.Errorf("the backfill revised %d windows, the results topic has %d backfill records", rep.Windows, backfilled)
	}
	again, err := backfill.Backfill(p, bo)
	if err != nil || again.Applied != 0 || int64(again.AlreadyApplied) != late {
		t.Fatalf("a second backfill: %v: %+v, want all %d already applied", err, again, late)
	}
	// A backfill killed inside its transaction leaves it open: the next
	// one fences it (aborting it) before it reads the archive, rather
	// than wait for it to time out.
	txn, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.TransactionalID("weir-ar-backfill"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Topic: "weir-ar-archive", Partition: 1, Key: []byte("x"), Value: []byte("y")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	quick := bo
	qctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	quick.Context = qctx
	if again, err := backfill.Backfill(p, quick); err != nil || again.Applied != 0 {
		t.Fatalf("a backfill after a killed backfill left its transaction open: %v: %+v", err, again)
	}

	// weir reset deletes the archive with the group's other topics; the
	// next run is a new run, whose backfill folds its own too-late
	// records only (the late topic keeps the first run's too).
	did, err := Reset(ctx, p)
	if err != nil || !slices.Contains(did, "deleted topic weir-ar-archive (the archive of its windows)") {
		t.Fatalf("reset: %v: %q", err, did)
	}
	runMembers(t, p, filepath.Join(dir, "members2"), "x")
	if bo.GroupRun, err = RunOf(ctx, p); err != nil || bo.GroupRun == run {
		t.Fatalf("the run after a reset: %d (%v), the first was %d", bo.GroupRun, err, run)
	}
	rerun, err := backfill.Backfill(p, bo)
	if err != nil || int64(rerun.Applied) != late || int64(rerun.EarlierRuns) != late {
		t.Fatalf("the backfill of the second run: %v: %+v, want %d entries of its own and %d of the first run", err, rerun, late, late)
	}
	if d := differ(); len(d) != 0 {
		t.Fatalf("after the second run's backfill %d windows differ from the complete answer:\n%s", len(d), strings.Join(d[:min(len(d), 10)], "\n"))
	}

	// A member that would read on (stop_at_end false) in the finished
	// group is refused: its tasks are done and would read nothing.
	on, err := spec.Parse(fmt.Appendf(nil, strings.Replace(groupJob, "stop_at_end: true", "stop_at_end: false", 1)+"archive: {dir: archive}\n", "ar", broker, broker, "ar", broker, "ar", broker, "ar"))
	if err != nil {
		t.Fatal(err)
	}
	err = Run(ctx, Options{Plan: on, Instance: "w", StateDir: filepath.Join(dir, "w"), SessionTimeout: joinSession, TransactionTimeout: joinTxnTimeout})
	if !errors.Is(err, ErrRefused) || !strings.Contains(fmt.Sprint(err), "finished its run") {
		t.Fatalf("a member reading on in a finished group: %v", err)
	}

	// Of two backfills at once, the second fences the first, whose
	// commit then says so.
	a1, err := OpenArchive(ctx, p, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer a1.Close()
	a2, err := OpenArchive(ctx, p, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close()
	if err := errors.Join(a1.Fence(ctx), a2.Fence(ctx)); err != nil {
		t.Fatal(err)
	}
	err = a1.Commit(ctx, []archive.KafkaRecord{{Partition: 0, Key: []byte("k"), Value: []byte("v")}}, nil)
	if err == nil || !strings.Contains(err.Error(), "another weir backfill of the group took its transactional id weir-ar-backfill") {
		t.Errorf("the fenced backfill's commit: %v", err)
	}

	// A group whose archive topic is gone is refused: a new one would
	// lack the windows published before.
	adm := kadm.NewClient(txnClient(t, broker))
	if _, err := adm.DeleteTopic(ctx, "weir-ar-archive"); err != nil {
		t.Fatal(err)
	}
	err = Run(ctx, Options{Plan: p, Instance: "z", StateDir: filepath.Join(dir, "z"), SessionTimeout: joinSession, TransactionTimeout: joinTxnTimeout})
	if !errors.Is(err, ErrRefused) || !strings.Contains(fmt.Sprint(err), "its archive topic weir-ar-archive") {
		t.Fatalf("a member of a group whose archive is gone: %v", err)
	}
}

// txnClient is a plain client of broker, closed when the test ends.
func txnClient(t *testing.T, broker string) *kgo.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestGroupArchiveTrim: a group that is never backfilled keeps its
// archive to the horizon: its members remove (tombstone, committed with
// their tasks' checkpoints) the windows that ended before the group's
// watermark less archive.horizon, and keep the later ones; an input
// partition without records (cluster's 13 users leave one empty), whose
// task has no watermark, does not hold the trim back.
func TestGroupArchiveTrim(t *testing.T) {
	for _, fill := range []bool{true, false} {
		t.Run(fmt.Sprintf("every partition=%v", fill), func(t *testing.T) { groupArchiveTrim(t, fill) })
	}
}

func groupArchiveTrim(t *testing.T, fill bool) {
	broker := cluster(t, 3000, "trim") // 30 s of event time
	if fill {
		// Users of every partition.
		pr, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.DefaultProduceTopic("in"))
		if err != nil {
			t.Fatal(err)
		}
		var more []*kgo.Record
		for i := range 100 {
			u := fmt.Sprintf("v%d", i)
			more = append(more, &kgo.Record{Key: []byte(u), Value: fmt.Appendf(nil, `{"user_id":%q,"amount":1,"ts":%d}`, u, orderTime(0)+int64(i)*290)})
		}
		if err := pr.ProduceSync(context.Background(), more...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		pr.Close()
	}
	yml := strings.Replace(groupJob, "stop_at_end: true", "stop_at_end: false", 1) + "archive: {dir: archive, horizon: 2s}\n"
	p, err := spec.Parse(fmt.Appendf(nil, yml, "trim", broker, broker, "trim", broker, "trim", broker, "trim"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	reg := prometheus.NewRegistry()
	go func() {
		done <- Run(ctx, Options{Plan: p, Instance: "a", StateDir: t.TempDir(), SessionTimeout: joinSession, TransactionTimeout: joinTxnTimeout, ArchiveTrimEvery: 50 * time.Millisecond, Registerer: reg})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("member: %v", err)
		}
	}()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	deadline := time.Now().Add(90 * time.Second)
	for {
		live, err := groupLive(ctx, adm, Name(p), "in")
		if err != nil {
			live = etime.MinTime // no group yet
		}
		cut := live.Add(-p.ArchiveHorizon)
		var before, after int
		windows := map[string]bool{}
		if live > 28_000+1767225600000 { // near the input's end
			err = scanCommitted(ctx, []kgo.Opt{kgo.SeedBrokers(broker)}, adm, ArchiveTopic(p), nil, func(_ int32, k, v []byte) error {
				windows[string(k)] = v != nil
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for k, there := range windows {
				_, _, end, err := archive.ParseKafkaKey([]byte(k))
				switch {
				case err != nil:
					t.Fatal(err)
				case there && end < cut:
					before++
				case there:
					after++
				case end >= cut:
					t.Fatalf("window %q ends at %d, after the cut %d, and was removed", k, end, cut)
				}
			}
			if before == 0 && after > 0 {
				t.Logf("group watermark %d: %d windows after the cut, the %d before it removed", live, after, len(windows)-after)
				// The metric counts the tombstones committed: each
				// removed window's, once (at most once more for a
				// window a later trim found again before its first
				// tombstone was read).
				for wait := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
					n, _ := promtest.Value(t, reg, "weir_group_archive_trimmed_total")
					if n >= float64(len(windows)-after) {
						break
					}
					if time.Now().After(wait) {
						t.Fatalf("weir_group_archive_trimmed_total is %v; %d windows were removed", n, len(windows)-after)
					}
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("group watermark %d: %d windows before the cut %d still archived, %d after it", live, before, cut, after)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
