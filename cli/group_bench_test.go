package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkGroupProcesses measures group mode with members as OS processes
// on `weir dev kafka` (an OS process too), everything in one run so that
// the figures compare (go test -run '^$' -bench GroupProcesses -benchtime
// 1x ./cli; WEIR_GROUP_RECORDS sets the input, default 1,000,000 orders in
// 4 partitions):
//
//   - throughput: the job run by one process without --instance
//     (checkpoints every 100 ms, the members' commit interval), and by 1,
//     2 and 3 members, unlimited and with GOMAXPROCS=1 each, from their
//     start until every one exited (stop_at_end);
//   - the hand-over pause: with a live input (20,000 orders/s) and three
//     members, the time from a member's end until every task it ran
//     committed new input again on its new owner: after kill -9 and a
//     restart under the same name (10 times), after kill -9 without one
//     (3 times) and after SIGTERM (3 times); and the longest gap between
//     two commits of the other tasks meanwhile.
func BenchmarkGroupProcesses(b *testing.B) {
	n := groupRecords()
	jobs := []string{"single", "m1", "m2", "m3", "m1p", "m2p", "m3p", "live"}
	addr := startGroupKafka(b, jobs...)
	produceGroupOrders(b, addr, n)
	rate := func(d time.Duration) float64 { return float64(n) / d.Seconds() }

	dir := groupDir(b, "single", addr)
	began := time.Now()
	single := startProcess(b, dir, "single", []string{"run", "job.yaml", "--checkpoint-dir", "ck", "--checkpoint-interval", "100ms"})
	single.wait(b, 10*time.Minute)
	base := rate(time.Since(began))
	b.ReportMetric(base, "single-records/s")
	b.Logf("single process (checkpoints every 100ms): %.0f records/s", base)
	for _, limited := range []bool{false, true} {
		for k := 1; k <= 3; k++ {
			job := fmt.Sprintf("m%d", k)
			var env []string
			if limited {
				job += "p"
				env = append(env, "GOMAXPROCS=1")
			}
			dir := groupDir(b, job, addr)
			began := time.Now()
			var ms []*member
			for i := range k {
				ms = append(ms, startMember(b, dir, fmt.Sprintf("n%d", i), env...))
			}
			for _, m := range ms {
				m.wait(b, 10*time.Minute)
			}
			r := rate(time.Since(began))
			b.ReportMetric(r/base, job+"-ratio")
			b.Logf("%d member(s)%s: %.0f records/s, %.2f of the single process", k, map[bool]string{true: " with GOMAXPROCS=1 each"}[limited], r, r/base)
		}
	}
	handOvers(b, addr)
}

// handOvers measures the pauses of tasks moving between members (see
// BenchmarkGroupProcesses).
func handOvers(b *testing.B, addr string) {
	dir := groupDir(b, "live", addr)
	spec, err := os.ReadFile(filepath.Join(dir, "job.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(strings.Replace(string(spec), "stop_at_end: true", "stop_at_end: false", 1)), 0o644); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go produceLive(ctx, addr, 20000)
	adm := kadmClient(b, addr)
	names := []string{"x", "y", "z"}
	ms := map[string]*member{}
	for _, n := range names {
		ms[n] = startMember(b, dir, n)
	}
	settle := func() {
		// Until every partition's committed offset is within a second of
		// input of its end, and each member runs a task.
		deadline := time.Now().Add(3 * time.Minute)
		for time.Now().Before(deadline) {
			owners, _ := groupOwners(adm)
			if lag(adm) < 20000 && len(owners) == len(names) {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		b.Fatalf("the group did not catch up")
	}
	settle()
	type kind struct {
		name  string
		times int
		end   func(m *member)
		back  bool // restarted under its name at once
	}
	kill := func(m *member) { m.kill() }
	term := func(m *member) { _ = m.cmd.Process.Signal(syscall.SIGTERM); <-m.done }
	for _, k := range []kind{{"kill -9, restart under its name", 10, kill, true}, {"kill -9, no restart", 3, kill, false}, {"SIGTERM", 3, term, false}} {
		var pauses, others []time.Duration
		for i := range k.times {
			victim := names[i%len(names)]
			owners, err := groupOwners(adm)
			if err != nil {
				b.Fatal(err)
			}
			moved := owners[victim]
			before := committedAt(adm)
			ended := time.Now()
			k.end(ms[victim])
			if k.back {
				ms[victim] = startMember(b, dir, victim)
			}
			pause, other := waitResumed(b, adm, moved, before, ended)
			pauses, others = append(pauses, pause), append(others, other)
			if !k.back {
				ms[victim] = startMember(b, dir, victim)
			}
			settle()
		}
		slices.Sort(pauses)
		slices.Sort(others)
		b.Logf("hand-over after %s (%d times): the moved tasks paused median %v, worst %v; the other tasks' longest commit gap median %v, worst %v",
			k.name, k.times, pauses[len(pauses)/2].Round(time.Millisecond), pauses[len(pauses)-1].Round(time.Millisecond),
			others[len(others)/2].Round(time.Millisecond), others[len(others)-1].Round(time.Millisecond))
		b.ReportMetric(pauses[len(pauses)/2].Seconds(), strings.Fields(k.name)[0]+"-"+fmt.Sprint(k.back)+"-pause-s")
	}
	for _, m := range ms {
		term(m)
	}
}

// waitResumed waits until each task of moved committed past its offset in
// before, and returns the time from ended until the last one did, and the
// longest gap between two commits of any other task meanwhile.
func waitResumed(b *testing.B, adm *kadm.Client, moved []int32, before map[int32]int64, ended time.Time) (pause, other time.Duration) {
	last := map[int32]time.Time{}
	at := map[int32]int64{}
	for p, o := range before {
		last[p], at[p] = ended, o
	}
	waiting := map[int32]bool{}
	for _, p := range moved {
		waiting[p] = true
	}
	deadline := time.Now().Add(2 * time.Minute)
	for len(waiting) > 0 {
		if time.Now().After(deadline) {
			b.Fatalf("tasks %v did not resume within 2 minutes", moved)
		}
		time.Sleep(10 * time.Millisecond)
		now := time.Now()
		for p, o := range committedAt(adm) {
			if o > at[p] {
				if !slices.Contains(moved, p) {
					other = max(other, now.Sub(last[p]))
				}
				if waiting[p] {
					delete(waiting, p)
					pause = now.Sub(ended)
				}
				last[p], at[p] = now, o
			}
		}
	}
	return pause, other
}

// groupOwners are the input partitions each member of weir-live owns.
func groupOwners(adm *kadm.Client) (map[string][]int32, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	described, err := adm.DescribeGroups(ctx, "weir-live")
	if err != nil {
		return nil, err
	}
	out := map[string][]int32{}
	for _, m := range described["weir-live"].Members {
		c, ok := m.Assigned.AsConsumer()
		if !ok || m.InstanceID == nil {
			continue
		}
		for _, t := range c.Topics {
			if t.Topic == "in" && len(t.Partitions) > 0 {
				out[*m.InstanceID] = append(out[*m.InstanceID], t.Partitions...)
			}
		}
	}
	return out, nil
}

// committedAt are weir-live's committed offsets of the input.
func committedAt(adm *kadm.Client) map[int32]int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out := map[int32]int64{}
	offs, err := adm.FetchOffsets(ctx, "weir-live")
	if err != nil {
		return out
	}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == "in" {
			out[o.Partition] = o.At
		}
	})
	return out
}

// lag is how far weir-live's committed offsets are behind the input's
// ends, in records over all partitions.
func lag(adm *kadm.Client) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, "in")
	if err != nil {
		return 1 << 62
	}
	at := committedAt(adm)
	var n int64
	ends.Each(func(l kadm.ListedOffset) { n += l.Offset - at[l.Partition] })
	return n
}

// produceLive produces perSecond orders a second to topic in until ctx
// is done, keyed by user, with event times of the wall clock.
func produceLive(ctx context.Context, addr string, perSecond int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("in"), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return
	}
	defer cl.Close()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	i := 0
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			for range perSecond / 100 {
				u := fmt.Sprintf("u%d", i%97)
				i++
				cl.Produce(ctx, &kgo.Record{Key: []byte(u), Value: fmt.Appendf(nil, `{"user_id":%q,"amount":%d,"ts":%d}`, u, i%10, now.UnixMilli())}, nil)
			}
		}
	}
}
