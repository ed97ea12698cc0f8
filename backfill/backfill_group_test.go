package backfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/archive"
	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/spec"
)

// fakeArchive is a GroupArchive in memory: its records in write order.
type fakeArchive struct {
	live    etime.Time
	parts   int
	recs    []archive.KafkaRecord
	results []connector.Message
	commits int
}

func (f *fakeArchive) Run() int64                               { return 7 }
func (f *fakeArchive) Live(context.Context) (etime.Time, error) { return f.live, nil }
func (f *fakeArchive) Partitions(context.Context) (int, error)  { return f.parts, nil }
func (f *fakeArchive) Close() error                             { return nil }
func (f *fakeArchive) Fence(context.Context) error              { return nil }
func (f *fakeArchive) Scan(_ context.Context, fn func(int32, []byte, []byte) error) error {
	for _, r := range f.recs {
		if err := fn(r.Partition, r.Key, r.Value); err != nil {
			return err
		}
	}
	return nil
}
func (f *fakeArchive) Commit(_ context.Context, recs []archive.KafkaRecord, results []connector.Message) error {
	f.recs = append(f.recs, recs...)
	f.results = append(f.results, results...)
	f.commits++
	return nil
}

// TestGroupStore: a group's archive read by a backfill keeps a window's
// newest (run, pane) of the partitions it is in, with its applied ids;
// tombstones remove a window; windows that ended before the group's
// watermark less archive.horizon are removed with tombstones (not in a
// dry run) and their entries count as expired; a revision goes to the
// partition of the window's newest copy with every applied id.
func TestGroupStore(t *testing.T) {
	yml := strings.Replace(fmt.Sprintf(jobtest.BackfillJob, "10s", "{type: tumbling, size: 1m}"), "{type: sqlite, path: results.db}", "{type: kafka, brokers: [127.0.0.1:1], topic: out}", 1) +
		"archive: {dir: archive, horizon: 10m}\n"
	p, err := spec.Parse([]byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	const minute = 60_000
	row := func(n int) []byte {
		return fmt.Appendf(nil, "%d\x00%d\x00%d\x00%d\x00%d\x00%d\x00%d\x00%d\x00[%d]\x00\"acc\"\x00", n, n, n, n, n, n, n, 1, n)
	}
	live := etime.Time(100 * minute)
	f := &fakeArchive{live: live, parts: 3}
	put := func(part int32, key string, start etime.Time, run, pane int64, n int, ids ...string) {
		f.recs = append(f.recs, archive.KafkaRecord{Partition: part, Key: archive.KafkaKey(key, start, start+minute), Value: archive.EncodeKafka(run, pane, row(n), ids)})
	}
	put(0, `"u1"`, 95*minute, 7, 2, 10)
	put(1, `"u1"`, 95*minute, 7, 3, 11, "7/a")                                                                      // a backfill's: the newest
	put(2, `"u2"`, 95*minute, 7, 1, 20)                                                                             // removed below
	f.recs = append(f.recs, archive.KafkaRecord{Partition: 2, Key: archive.KafkaKey(`"u2"`, 95*minute, 96*minute)}) // a tombstone
	put(0, `"u3"`, 80*minute, 7, 0, 30)                                                                             // ended before 100m - 10m
	put(1, `"u3"`, 80*minute, 7, 1, 31)

	ctx := context.Background()
	o := BackfillOptions{DryRun: true, GroupArchive: func(context.Context, *spec.Plan) (GroupArchive, error) { return f, nil }}
	s, err := openGroupStore(ctx, p, &o)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := s.horizon(); h != live-10*minute {
		t.Errorf("horizon %d, want %d", h, live-10*minute)
	}
	if f.commits != 0 || len(s.rows) != 2 {
		t.Fatalf("a dry run committed %d times and keeps %d windows, want none and 2", f.commits, len(s.rows))
	}
	o.DryRun = false
	if s, err = openGroupStore(ctx, p, &o); err != nil {
		t.Fatal(err)
	}
	var gone []string
	for _, r := range f.recs[6:] {
		k, start, _, _ := archive.ParseKafkaKey(r.Key)
		gone = append(gone, fmt.Sprintf("%d %s %d %v", r.Partition, k, start/minute, r.Value == nil))
	}
	slices.Sort(gone)
	if want := []string{`0 "u3" 80 true`, `1 "u3" 80 true`}; !slices.Equal(gone, want) {
		t.Errorf("the backfill wrote %q beyond the horizon, want tombstones %q", gone, want)
	}
	if got := slices.Sorted(maps.Keys(s.rows)); len(got) != 1 {
		t.Fatalf("the store keeps %d windows, want u1's", len(got))
	}
	// u2's window, within the cut, was removed (a member's trim): its
	// entries are beyond the horizon, not a window that never fired.
	for _, c := range []struct {
		user  string
		start etime.Time
		want  bool
	}{{`"u2"`, 95 * minute, true}, {`"u1"`, 95 * minute, false}, {`"u9"`, 97 * minute, false}} {
		w := &backfillWindow{keyVals: map[string]json.RawMessage{"user_id": json.RawMessage(c.user)}, start: int64(c.start), end: int64(c.start + minute)}
		if got, err := s.trimmed(w); err != nil || got != c.want {
			t.Errorf("trimmed(%s at %d) = %v, %v; want %v", c.user, c.start/minute, got, err, c.want)
		}
	}

	w := &backfillWindow{keyVals: map[string]json.RawMessage{"user_id": json.RawMessage(`"u1"`)}, start: 95 * minute, end: 96 * minute, wm: live}
	if err := s.begin(w); err != nil {
		t.Fatal(err)
	}
	if ids, _ := s.applied(w); !ids["7/a"] || len(ids) != 1 {
		t.Errorf("applied ids %v, want 7/a", ids)
	}
	vals, pane, err := s.load(w)
	if err != nil || pane != 3 || w.run != 7 || len(vals) != s.width || fmt.Sprint(vals[0]) != "11" {
		t.Fatalf("load: %v, pane %d, run %d, %v", vals, pane, w.run, err)
	}
	if err := s.write(w, 4, []string{"12", "1", "1", "1", "1", "1", "1", "1", "[1]", `"acc"`}, []string{"7/b"}); err != nil {
		t.Fatal(err)
	}
	if err := s.commit(); err != nil {
		t.Fatal(err)
	}
	last := f.recs[len(f.recs)-1]
	run, pane, _, ids, err := archive.DecodeKafka(last.Value)
	if err != nil || last.Partition != 1 || run != 7 || pane != 4 || !slices.Equal(ids, []string{"7/a", "7/b"}) || len(f.results) != 1 {
		t.Fatalf("the revision: partition %d, run %d, pane %d, ids %v (%v); %d results", last.Partition, run, pane, ids, err, len(f.results))
	}
	// A later batch that begins the window again sees the commit.
	if err := s.begin(w); err != nil {
		t.Fatal(err)
	}
	if ids, _ := s.applied(w); !ids["7/b"] {
		t.Errorf("after the commit the window's applied ids are %v", ids)
	}

	// A window that never fired: its entries' run's first revision, in
	// the partition its key hashes to.
	w2 := &backfillWindow{keyVals: map[string]json.RawMessage{"user_id": json.RawMessage(`"u9"`)}, start: 97 * minute, end: 98 * minute, wm: live}
	s.begin(w2)
	if _, pane, err := s.load(w2); err != nil || pane != -1 || w2.run != 7 {
		t.Fatalf("a window never archived: pane %d, run %d, %v", pane, w2.run, err)
	}
}

// TestBackfillCancelled: a backfill whose context is done (Ctrl-C) stops
// before its next transaction and says so; what it did not commit a
// later backfill applies.
func TestBackfillCancelled(t *testing.T) {
	dir, sum := runSpec(t, fmt.Sprintf(jobtest.BackfillJob, "10s", "{type: tumbling, size: 1m}"), nil, job.RunOptions{Deterministic: true})
	p, err := spec.Parse([]byte(fmt.Sprintf(jobtest.BackfillJob, "10s", "{type: tumbling, size: 1m}")))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if rep, err := Backfill(p, BackfillOptions{Dir: dir, Context: ctx}); !errors.Is(err, context.Canceled) || rep.Applied != 0 {
		t.Fatalf("a cancelled backfill: %v, %+v", err, rep)
	}
	rep, err := Backfill(p, BackfillOptions{Dir: dir})
	if err != nil || int64(rep.Applied) != sum.Get("late_side_output") || rep.AlreadyApplied != 0 {
		t.Fatalf("the backfill after it: %v: %+v, want all %d entries applied", err, rep, sum.Get("late_side_output"))
	}
}
