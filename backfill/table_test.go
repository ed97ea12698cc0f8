package backfill_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/backfill"
	"github.com/weirstream/weir/connector/pgio"
	"github.com/weirstream/weir/connector/sqliteio"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/ledger"
	"github.com/weirstream/weir/window"
)

// order is a library job's record: its sequence number is its stable id.
type order struct {
	Seq    int    `json:"seq"`
	User   string `json:"user"`
	TS     int64  `json:"ts"`
	Amount int64  `json:"amount"`
}

func (o order) id() string     { return strconv.Itoa(o.Seq) }
func (o order) arrived() int64 { return int64(o.Seq) }

const fiveMin = int64(5 * 60_000)

// windowStart is the start of o's 5-minute window.
func windowStart(ts int64) int64 {
	s := ts % fiveMin
	if s < 0 {
		s += fiveMin
	}
	return ts - s
}

// libraryOrders are n orders 2 s apart with one in 15 up to 40 minutes
// late, and the complete answer: each (user, window)'s total over all of
// them.
func libraryOrders(n int) ([]order, map[string]int64) {
	r := rand.New(rand.NewPCG(11, 12))
	var orders []order
	want := map[string]int64{}
	for i := range n {
		ts := int64(i) * 2000
		if r.IntN(15) == 0 {
			ts -= int64(r.IntN(40)) * 60_000
		}
		o := order{Seq: i, User: fmt.Sprint("u", r.IntN(4)), TS: ts, Amount: int64(1 + r.IntN(9))}
		orders = append(orders, o)
		want[fmt.Sprint(o.User, " ", windowStart(ts))] += o.Amount
	}
	return orders, want
}

// runLibraryJob is a Go program's job: 5-minute totals per user with 10
// minutes of allowed lateness into a SQLite table, too-late orders into
// the ledger (started over). It writes its rows as run; with reset it
// first removes the job's rows of earlier runs.
func runLibraryJob(t *testing.T, orders []order, dbPath, ledgerDir string, run int64, reset bool) {
	t.Helper()
	env, err := weir.NewEnv(weir.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	stream := weir.AssignTimestamps(weir.FromSlice(env, orders),
		weir.BoundedOutOfOrderness(30*time.Second, func(o order) etime.Time { return etime.Time(o.TS) }))
	five, _ := window.Tumbling(etime.FromDuration(5*time.Minute), 0)
	out := weir.Aggregate(weir.Window(weir.KeyBy(stream, func(o order) string { return o.User }), five,
		weir.WindowOptions{AllowedLateness: etime.FromDuration(10 * time.Minute), LateOutput: true}),
		weir.Sum(func(o order) int64 { return o.Amount }))
	totals, err := sqliteio.Open(dbPath, []string{"user"}, []string{"total"}, sqliteio.Options{Table: "totals", Job: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	if reset {
		if _, err := totals.Reset(); err != nil { // a fresh start: this job's rows of an earlier run go
			t.Fatal(err)
		}
	}
	weir.ToSink(weir.Map(out.Results, sqliteio.ResultRows[string, int64]("user", "total", run)), totals, weir.SinkOptions{Name: "totals"})
	late, err := ledger.OpenSink(ledgerDir, ledger.SinkOptions{Fresh: true})
	if err != nil {
		t.Fatal(err)
	}
	weir.ToSink(weir.Map(out.Late, ledger.LateEntries[string]("user", order.id, order.arrived)), late, weir.SinkOptions{Name: "late"})
	if _, err := env.Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// tableTotals reads the job's rows: "user start" → total, and the
// number of rows of each firing.
func tableTotals(t *testing.T, dbPath string) (map[string]int64, map[string]int) {
	t.Helper()
	db, err := sql.Open("sqlite", sqliteio.DSN(dbPath))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT "user", window_start, total, firing FROM totals WHERE job = 'orders'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got, firings := map[string]int64{}, map[string]int{}
	for rows.Next() {
		var u, firing string
		var start, total int64
		if err := rows.Scan(&u, &start, &total, &firing); err != nil {
			t.Fatal(err)
		}
		got[fmt.Sprint(u, " ", start)] = total
		firings[firing]++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got, firings
}

// TestIntoTable runs a Go program's job, then backfills its ledger into
// its SQLite table from Go: a dry run changes nothing; a backfill killed
// after its first transaction and run again gives every window the total
// of all its orders (the complete answer), each ledger entry applied
// once; a third run applies nothing.
func TestIntoTable(t *testing.T) {
	orders, want := libraryOrders(3000)
	dir := t.TempDir()
	dbPath, ledgerDir := filepath.Join(dir, "weir.db"), filepath.Join(dir, "ledger")
	runLibraryJob(t, orders, dbPath, ledgerDir, 0, true)
	live, _ := tableTotals(t, dbPath)
	if maps.Equal(live, want) {
		t.Fatal("the live job's totals are already complete: the test has no too-late orders")
	}
	entries := 0
	if _, err := ledger.Scan(ledgerDir, func(ledger.Entry) error { entries++; return nil }); err != nil {
		t.Fatal(err)
	}

	tb := backfill.Table{SQLite: dbPath, Name: "totals", Job: "orders", Keys: pgio.Defs(pgio.Text, "user"), Values: pgio.Defs(pgio.BigInt, "total")}
	fold := backfill.Aggregate(weir.Sum(func(o order) int64 { return o.Amount }))
	o := backfill.TableOptions{Ledger: ledgerDir, AllowedLateness: 10 * time.Minute, WindowsPerTx: 3}
	ctx := context.Background()

	dry := o
	dry.DryRun = true
	rep, err := backfill.IntoTable(ctx, tb, fold, dry)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Entries != entries || rep.Applied != entries || rep.Windows == 0 {
		t.Fatalf("dry run: %+v, want %d entries applied", rep, entries)
	}
	if got, _ := tableTotals(t, dbPath); !maps.Equal(got, live) {
		t.Fatal("a dry run changed the table")
	}

	// Killed after its first transaction committed.
	type killed struct{}
	crashed := o
	crashed.Crash = func(point string) {
		if point == "backfill-committed" {
			panic(killed{})
		}
	}
	func() {
		defer func() {
			if r := recover(); r != (killed{}) {
				t.Fatalf("the backfill was not killed: %v", r)
			}
		}()
		backfill.IntoTable(ctx, tb, fold, crashed)
	}()
	partial, _ := tableTotals(t, dbPath)
	if maps.Equal(partial, live) || maps.Equal(partial, want) {
		t.Fatal("the killed backfill committed nothing, or everything: it should have committed one batch")
	}
	rep, err = backfill.IntoTable(ctx, tb, fold, o)
	if err != nil {
		t.Fatal(err)
	}
	got, firings := tableTotals(t, dbPath)
	if !maps.Equal(got, want) {
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s: %d, want %d", k, got[k], w)
			}
		}
		t.Fatalf("after the backfill: %d windows differ from the complete answer", len(want))
	}
	if rep.Applied+rep.AlreadyApplied != entries || rep.AlreadyApplied == 0 || firings["backfill"] == 0 {
		t.Fatalf("second backfill: %+v (firings %v), want %d entries applied once across both runs", rep, firings, entries)
	}
	rep, err = backfill.IntoTable(ctx, tb, fold, o)
	if err != nil || rep.Applied != 0 || rep.AlreadyApplied != entries || rep.Windows != 0 {
		t.Fatalf("third backfill: %+v, %v; want nothing applied", rep, err)
	}

	// The job starts over (its sink's Reset removes its rows, and the
	// backfill's record of what it applied to them): a backfill applies
	// every entry again.
	runLibraryJob(t, orders, dbPath, ledgerDir, 0, true)
	if got, _ := tableTotals(t, dbPath); !maps.Equal(got, live) {
		t.Fatal("the second run's live totals differ from the first's")
	}
	rep, err = backfill.IntoTable(ctx, tb, fold, o)
	if err != nil || rep.Applied != entries {
		t.Fatalf("backfill after a fresh start: %+v, %v; want all %d entries applied", rep, err, entries)
	}
	if got, _ := tableTotals(t, dbPath); !maps.Equal(got, want) {
		t.Fatal("after a fresh start and a backfill the totals are not the complete answer")
	}

	// The job runs again as a higher run, keeping the earlier run's rows
	// (no Reset): its revisions replace the windows it fires, whose
	// late orders a backfill applies again (the applied ids are the
	// row's run's); the windows only the earlier run's backfill wrote
	// keep their complete totals.
	runLibraryJob(t, orders, dbPath, ledgerDir, 1, false)
	rep, err = backfill.IntoTable(ctx, tb, fold, o)
	if err != nil || rep.Applied == 0 || rep.Applied+rep.AlreadyApplied != entries {
		t.Fatalf("backfill after a higher run: %+v, %v; want the %d entries applied or already applied", rep, err, entries)
	}
	if got, _ := tableTotals(t, dbPath); !maps.Equal(got, want) {
		t.Fatal("after a higher run and a backfill the totals are not the complete answer")
	}
}

// TestIntoTableRefuses checks IntoTable's answers to a wrong table or
// fold: the message names what to set.
func TestIntoTableRefuses(t *testing.T) {
	orders, _ := libraryOrders(600)
	dir := t.TempDir()
	dbPath, ledgerDir := filepath.Join(dir, "weir.db"), filepath.Join(dir, "ledger")
	runLibraryJob(t, orders, dbPath, ledgerDir, 0, true)
	fold := backfill.Aggregate(weir.Sum(func(o order) int64 { return o.Amount }))
	ctx := context.Background()
	good := backfill.Table{SQLite: dbPath, Name: "totals", Job: "orders", Keys: pgio.Defs(pgio.Text, "user"), Values: pgio.Defs(pgio.BigInt, "total")}
	for _, c := range []struct {
		name string
		tb   backfill.Table
		o    backfill.TableOptions
		want string
	}{
		{"checkpoints not there", good, backfill.TableOptions{Ledger: ledgerDir, Checkpoints: filepath.Join(dir, "nowhere")}, "TableOptions.Checkpoints: " + filepath.Join(dir, "nowhere") + " is not a directory"},
		{"checkpoints a file", good, backfill.TableOptions{Ledger: ledgerDir, Checkpoints: dbPath}, "TableOptions.Checkpoints: " + dbPath + " is not a directory"},
		{"ledger not there", good, backfill.TableOptions{Ledger: filepath.Join(dir, "nowhere")}, "TableOptions.Ledger: " + filepath.Join(dir, "nowhere") + " is not a directory"},
		{"a day of the ledger", good, backfill.TableOptions{Ledger: filepath.Join(ledgerDir, "day=2026-12-03")}, "is one day of a ledger; give the ledger's directory, " + ledgerDir},
		{"database not there", backfill.Table{SQLite: filepath.Join(dir, "other.db"), Name: "totals", Job: "orders", Keys: good.Keys, Values: good.Values}, backfill.TableOptions{Ledger: ledgerDir},
			"Table.SQLite: " + filepath.Join(dir, "other.db") + " is not a SQLite file"},
		{"another job", backfill.Table{SQLite: dbPath, Name: "totals", Job: "order", Keys: good.Keys, Values: good.Values}, backfill.TableOptions{Ledger: ledgerDir},
			`it holds no rows of job "order": Table.Job must be the results sink's Options.Job`},
		{"another table", backfill.Table{SQLite: dbPath, Name: "total", Job: "orders", Keys: good.Keys, Values: good.Values}, backfill.TableOptions{Ledger: ledgerDir},
			`table "total" in ` + dbPath + ` is not there: give backfill.Table's Name as the results sink was opened with it (Options.Table)`},
	} {
		if _, err := os.Stat(filepath.Join(ledgerDir, "day=2026-12-03")); c.name == "a day of the ledger" && err != nil {
			os.Mkdir(filepath.Join(ledgerDir, "day=2026-12-03"), 0o755)
		}
		_, err := backfill.IntoTable(ctx, c.tb, fold, c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "nowhere")); err == nil {
		t.Error("a refused ledger directory was created")
	}
	if _, err := os.Stat(filepath.Join(dir, "other.db")); err == nil {
		t.Error("a refused database was created")
	}

	// A batch that fails is rolled back, and the report counts nothing
	// of it.
	failing := fold
	failing.Seed = func(values []json.RawMessage) (int64, error) {
		if values != nil {
			return 0, errors.New("no seed")
		}
		return 0, nil
	}
	rep, err := backfill.IntoTable(ctx, good, failing, backfill.TableOptions{Ledger: ledgerDir, AllowedLateness: 10 * time.Minute})
	if err == nil || !strings.Contains(err.Error(), "no seed") || rep.Applied != 0 || rep.Windows != 0 {
		t.Errorf("a failing fold: %+v, %v; want its error and nothing counted as applied", rep, err)
	}
	// Values a bigint column cannot hold are refused in SQLite as in
	// Postgres.
	for _, c := range []struct {
		v    json.RawMessage
		want string
	}{
		{json.RawMessage("1.5"), "Fold.Values[0] (column total, bigint): "},
		{nil, `Fold.Values[0] (column total) is "", not a JSON value`},
	} {
		bad := fold
		bad.Values = func(int64) ([]json.RawMessage, error) { return []json.RawMessage{c.v}, nil }
		if _, err := backfill.IntoTable(ctx, good, bad, backfill.TableOptions{Ledger: ledgerDir, AllowedLateness: 10 * time.Minute}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Values %q: %v, want %q", c.v, err, c.want)
		}
	}
	for _, c := range []struct {
		name string
		tb   backfill.Table
		fold backfill.Fold[order, int64]
		want string
	}{
		{"no database", backfill.Table{Name: "totals"}, fold, "set Postgres (a connection string) or SQLite (a path)"},
		{"no fold", backfill.Table{SQLite: dbPath, Name: "totals"}, backfill.Fold[order, int64]{}, "Seed, Add and Values are required"},
		{"key named otherwise", backfill.Table{SQLite: dbPath, Name: "totals", Job: "orders", Keys: pgio.Defs(pgio.Text, "customer"), Values: pgio.Defs(pgio.BigInt, "total")}, fold,
			"expected columns (job, customer, window_start, window_end, firing, run, pane, watermark, total)"},
		{"two value columns", backfill.Table{SQLite: dbPath, Name: "totals", Job: "orders", Keys: pgio.Defs(pgio.Text, "user"), Values: pgio.Defs(pgio.BigInt, "total", "seq")}, fold,
			"expected columns (job, user, window_start, window_end, firing, run, pane, watermark, total, seq)"},
	} {
		_, err := backfill.IntoTable(ctx, c.tb, c.fold, backfill.TableOptions{Ledger: ledgerDir, AllowedLateness: 10 * time.Minute})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
