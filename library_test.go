package weir_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/backfill"
	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/connector/kafkaio"
	"github.com/weirstream/weir/connector/pgio"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/jobtest"
	"github.com/weirstream/weir/internal/testenv"
	"github.com/weirstream/weir/ledger"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// KafkaOrder is an order read from Kafka, with its position there (the
// stable id of a too-late order in the ledger).
type KafkaOrder struct {
	User   string `json:"user"`
	TS     int64  `json:"ts"`
	Amount int64  `json:"amount"`
	At     string `json:"-"` // partition:offset
	// Arrived is the Kafka record's timestamp, the order's arrival: the
	// same when a restore reads it again.
	Arrived int64 `json:"-"`
}

// Position is the order's stable id; ArrivedAt its arrival (Unix ms).
func (o KafkaOrder) Position() string { return o.At }
func (o KafkaOrder) ArrivedAt() int64 { return o.Arrived }

func decodeOrder(r *kafkaio.Record) (KafkaOrder, etime.Time, error) {
	var o KafkaOrder
	err := json.Unmarshal(r.Value, &o)
	o.At, o.Arrived = fmt.Sprint(r.Partition, ":", r.Offset), int64(r.Timestamp)
	return o, etime.Time(o.TS), err
}

// ordersJob is the README's library example: orders from Kafka, 5-minute
// totals per user with 10 minutes of allowed lateness, written exactly
// once to Postgres, too-late orders to the ledger, checkpoints every 100
// ms into dir; started again after a kill, it resumes from the newest
// checkpoint. live keeps reading at the end of the topic.
func ordersJob(ctx context.Context, brokers []string, pgURL, table, dir string, live bool) error {
	store, err := checkpoint.Open(filepath.Join(dir, "checkpoints"), checkpoint.Options{})
	if err != nil {
		return err
	}
	defer store.Close()
	opts := weir.DefaultOptions()
	if opts.Checkpoint, err = weir.Resume(ctx, store, 100*time.Millisecond); err != nil {
		return err
	}
	env, _ := weir.NewEnv(opts)
	src, err := kafkaio.NewSource(kafkaio.SourceOptions[KafkaOrder]{Brokers: brokers, Topic: "orders", Decode: decodeOrder, StopAtEnd: !live, BacklogEvery: 1,
		Watermarks: func() watermark.Generator[KafkaOrder] { return watermark.BoundedOutOfOrderness[KafkaOrder](30_000) }})
	if err != nil {
		return err
	}
	five, _ := window.Tumbling(etime.FromDuration(5*time.Minute), 0)
	orders := weir.KeyBy(weir.FromSource(env, "orders", src, weir.SourceOptions{}), func(o KafkaOrder) string { return o.User })
	out := weir.Aggregate(weir.Window(orders, five, weir.WindowOptions{AllowedLateness: etime.FromDuration(10 * time.Minute), LateOutput: true}),
		weir.Sum(func(o KafkaOrder) int64 { return o.Amount }))
	totals, err := pgio.Open(ctx, pgURL, table, pgio.Defs(pgio.Text, "user"), pgio.Defs(pgio.BigInt, "total"), pgio.Options{Job: "orders"})
	if err != nil {
		return err
	}
	if opts.Checkpoint.Restore == nil {
		if _, err := totals.Reset(ctx); err != nil { // a fresh start: this job's rows of an earlier run go
			return err
		}
	}
	weir.ToSink(weir.Map(out.Results, pgio.ResultRows[string, int64]("user", "total", 0)), totals, weir.SinkOptions{Name: "totals"})
	late, err := ledger.OpenSink(filepath.Join(dir, "ledger"), ledger.SinkOptions{Fresh: opts.Checkpoint.Restore == nil})
	if err != nil {
		return err
	}
	weir.ToSink(weir.Map(out.Late, ledger.LateEntries[string]("user", KafkaOrder.Position, KafkaOrder.ArrivedAt)), late, weir.SinkOptions{Name: "late"})
	_, err = env.Execute(ctx)
	return err
}

// TestLibraryKillResume runs ordersJob on half the orders, kills it after
// a checkpoint, resumes it over the rest, and checks that the Postgres
// table and the ledger hold what one uninterrupted run gives: every
// window's total once, every too-late order once. A backfill from Go
// (backfill.IntoTable) then folds the ledger into the table, which ends
// with every window's complete total.
func TestLibraryKillResume(t *testing.T) {
	pgURL := testenv.Postgres(t)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	r := rand.New(rand.NewPCG(5, 6))
	var recs []*kgo.Record
	for i := range 4000 {
		ts := int64(i) * 2000 // 2 s apart: about 150 per 5-minute window
		if r.IntN(20) == 0 {
			ts -= int64(r.IntN(40)) * 60_000 // up to 40 minutes late
		}
		b, _ := json.Marshal(KafkaOrder{User: fmt.Sprint("u", r.IntN(5)), TS: ts, Amount: int64(1 + r.IntN(9))})
		recs = append(recs, &kgo.Record{Topic: "orders", Value: b})
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(rs []*kgo.Record) {
		if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	admin, err := pgx.Connect(context.Background(), pgURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) }) // after the drops below
	suffix := strconv.FormatUint(r.Uint64()%1e9, 10)
	table, ref := "weir_library_"+suffix, "weir_library_ref_"+suffix
	t.Cleanup(func() {
		for _, tb := range []string{table, ref, pgio.AppliedTable(table)} {
			admin.Exec(context.Background(), "DROP TABLE IF EXISTS "+tb)
		}
	})
	read := func(table string) []string {
		rows, err := admin.Query(context.Background(), `SELECT "user", window_start, total, pane FROM `+table+` WHERE job = 'orders' ORDER BY 1, 2`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var u string
			var start, total, pane int64
			if err := rows.Scan(&u, &start, &total, &pane); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprint(u, " ", start, " ", total, " pane ", pane))
		}
		return out
	}
	ledgerIDs := func(dir string) []string {
		var ids []string
		if _, err := ledger.Scan(filepath.Join(dir, "ledger"), func(e ledger.Entry) error {
			ids = append(ids, fmt.Sprint(e.ID, " ", e.Reason, " ", string(e.Key), " ", e.TS, " ", e.Windows, " ", e.Watermark, " ", e.ArrivedAt, " ", string(e.Record)))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return ids
	}

	// The first run reads half the orders live and is killed once a
	// checkpoint holds some of its output.
	produce(recs[:2000])
	dir := t.TempDir()
	ctx, kill := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ordersJob(ctx, brokers, pgURL, table, dir, true) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if d, err := checkpoint.OpenReadOnly(filepath.Join(dir, "checkpoints")); err == nil {
			ids, _ := d.List()
			d.Close()
			if len(ids) >= 3 && len(read(table)) > 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no checkpoint with output within 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	kill()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the killed run returned %v", err)
	}
	killed := read(table)

	// The second run resumes and reads the rest to the end.
	produce(recs[2000:])
	if err := ordersJob(context.Background(), brokers, pgURL, table, dir, false); err != nil {
		t.Fatal(err)
	}
	// One uninterrupted run, for reference.
	refDir := t.TempDir()
	if err := ordersJob(context.Background(), brokers, pgURL, ref, refDir, false); err != nil {
		t.Fatal(err)
	}
	got, want := read(table), read(ref)
	if len(want) < 100 || !slices.Equal(got, want) {
		t.Fatalf("after a kill (%d rows then) and a resume: %d rows, want the uninterrupted run's %d\n got %v\nwant %v", len(killed), len(got), len(want), got[:min(5, len(got))], want[:min(5, len(want))])
	}
	gotIDs, wantIDs := ledgerIDs(dir), ledgerIDs(refDir)
	slices.Sort(gotIDs)
	if len(wantIDs) < 20 || !slices.Equal(gotIDs, slices.Sorted(slices.Values(wantIDs))) {
		t.Fatalf("ledger: %d entries, want the uninterrupted run's %d, once each; first differences:\n%s", len(gotIDs), len(wantIDs), jobtest.Diff(gotIDs, wantIDs))
	}

	// The ledger folded into the table from Go: as far as the newest
	// checkpoint committed it, then (the job has ended) all of it. Every
	// window then holds the total of all its orders, each entry applied
	// once.
	tb := backfill.Table{Postgres: pgURL, Name: table, Job: "orders", Keys: pgio.Defs(pgio.Text, "user"), Values: pgio.Defs(pgio.BigInt, "total")}
	fold := backfill.Aggregate(weir.Sum(func(o KafkaOrder) int64 { return o.Amount }))
	bo := backfill.TableOptions{Ledger: filepath.Join(dir, "ledger"), Checkpoints: filepath.Join(dir, "checkpoints"), AllowedLateness: 10 * time.Minute}
	wrong := tb
	wrong.Values = pgio.Defs(pgio.Numeric, "total")
	if _, err := backfill.IntoTable(context.Background(), wrong, fold, bo); err == nil || !strings.Contains(err.Error(), "give backfill.Table's Keys and Values as the results sink was opened with them") {
		t.Fatalf("a table given with another column type: %v", err)
	}
	first, err := backfill.IntoTable(context.Background(), tb, fold, bo)
	if err != nil {
		t.Fatal(err)
	}
	bo.Checkpoints = ""
	second, err := backfill.IntoTable(context.Background(), tb, fold, bo)
	if err != nil {
		t.Fatal(err)
	}
	if first.Applied == 0 || first.Applied+second.Applied != len(wantIDs) || second.AlreadyApplied != first.Applied {
		t.Fatalf("backfills: %+v then %+v; want the %d entries applied once", first, second, len(wantIDs))
	}
	complete := map[string]int64{}
	for _, r := range recs {
		var o KafkaOrder
		if err := json.Unmarshal(r.Value, &o); err != nil {
			t.Fatal(err)
		}
		complete[fmt.Sprint(o.User, " ", o.TS-((o.TS%300_000)+300_000)%300_000)] += o.Amount
	}
	rows, err := admin.Query(context.Background(), `SELECT "user", window_start, total FROM `+table+` WHERE job = 'orders'`)
	if err != nil {
		t.Fatal(err)
	}
	backfilled := map[string]int64{}
	for rows.Next() {
		var u string
		var start, total int64
		if err := rows.Scan(&u, &start, &total); err != nil {
			t.Fatal(err)
		}
		backfilled[fmt.Sprint(u, " ", start)] = total
	}
	if rows.Close(); !maps.Equal(backfilled, complete) {
		t.Fatalf("after the backfills the table has %d windows, the complete answer %d, or their totals differ", len(backfilled), len(complete))
	}
}
