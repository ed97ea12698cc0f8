package pgio

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/connectortest"
	"github.com/weirstream/weir/connector/internal/tablerow"
)

// TestRunLockTakenAgain: a run whose lock on its job's rows was released
// by a dropped connection takes it again at its next check; when another
// run took it meanwhile, the next write fails with ErrRowsLocked and
// leaves that run's rows alone. So for a results table and for a late
// records table. (The test runs the checks itself.)
func TestRunLockTakenAgain(t *testing.T) {
	d := connect(t)
	defer func(was time.Duration) { LockCheckInterval = was }(LockCheckInterval)
	LockCheckInterval = time.Hour
	ctx := context.Background()
	const job = "locked"
	t.Run("results", func(t *testing.T) {
		table := d.table(t, "")
		rs, err := Kinds()[0].Sink.OpenResults(ctx, connector.ResultsOpen{Settings: connectortest.MapSettings{"url": d.url, "table": table},
			Output: "sinks.results", Path: func(p string) string { return p }, Job: job, Keys: []string{"id"},
			Values: []connector.ResultColumn{{Name: "value", Fn: "count"}}, Stopping: ctx})
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		lr, ok := rs.(*lockedResults)
		if !ok {
			t.Fatalf("the results sink is a %T, not a *lockedResults", rs)
		}
		testLockTakenAgain(t, d, "weir results "+table, lr.lk, func(id string, n int64) error {
			if err := rs.Write(ctx, []connector.Row{tablerow.ConformanceRow(id, 1, 0, false, n)}); err != nil {
				return err
			}
			return rs.Flush(ctx)
		}, `SELECT count(*) FROM `+quoteIdent(table)+` WHERE job = $1 AND id = 'c'`)
	})
	t.Run("late", func(t *testing.T) {
		table := d.table(t, "weir_lock_late")
		ms, err := openMessages(ctx, connector.MessagesOpen{Settings: connectortest.MapSettings{"url": d.url, "table": table},
			Output: "sinks.late", Name: "late", Role: connector.RoleLate, Path: func(p string) string { return p }, Job: job,
			Run: func() int64 { return 1 }, Stopping: ctx})
		if err != nil {
			t.Fatal(err)
		}
		defer ms.Close()
		sr, ok := ms.(*specRecords)
		if !ok {
			t.Fatalf("the late sink is a %T, not a *specRecords", ms)
		}
		testLockTakenAgain(t, d, "weir late "+table, sr.lk, func(id string, _ int64) error {
			e := &connector.Entry{ID: id, Reason: "window_expired", Record: []byte(`{"id":"` + id + `"}`), Meta: []byte(`{}`)}
			if err := ms.Write(ctx, []connector.Message{{Entry: e}}); err != nil {
				return err
			}
			return ms.Flush(ctx)
		}, `SELECT count(*) FROM `+quoteIdent(table)+` WHERE job = $1 AND id = 'c'`)
	})
}

// testLockTakenAgain drops the session of lk (the lock lockKey of a
// sink of job "locked" that write writes to) twice: after the first drop
// the run takes its lock again; after the second another session takes
// it first, and the write fails with ErrRowsLocked, leaving no row of it
// (count counts them).
func testLockTakenAgain(t *testing.T, d *db, lockKey string, lk *rowLock, write func(id string, n int64) error, count string) {
	ctx := context.Background()
	const job = "locked"
	key := []any{lockKey, job}
	// holder is the backend that holds the run's lock (0: none).
	holder := func() int32 {
		t.Helper()
		var pid int32
		err := d.admin.QueryRow(ctx, `SELECT COALESCE(MAX(pid), 0) FROM pg_locks WHERE locktype = 'advisory' AND granted
			AND classid = hashtext($1)::oid AND objid = hashtext($2)::oid AND objsubid = 2`, key...).Scan(&pid)
		if err != nil {
			t.Fatal(err)
		}
		return pid
	}
	// drop ends backend pid's session and waits until its lock is gone
	// (pg_terminate_backend only signals the backend).
	drop := func(pid int32) {
		t.Helper()
		if _, err := d.admin.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); holder() != 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("backend %d still holds the lock 10s after it was terminated", pid)
			}
		}
	}
	if err := write("a", 1); err != nil {
		t.Fatal(err)
	}
	first := holder()
	if first == 0 {
		t.Fatal("the run holds no lock on its rows")
	}

	drop(first)
	lk.check()
	if err := write("b", 2); err != nil {
		t.Fatalf("a write after the lock's connection dropped: %v", err)
	}
	second := holder()
	if second == 0 || second == first {
		t.Fatalf("after the drop the lock is held by backend %d (before: %d), want the run's new session", second, first)
	}

	drop(second)
	var took bool
	if err := d.admin.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtext($1), hashtext($2))`, key...).Scan(&took); err != nil || !took {
		t.Fatalf("another session could not take the released lock: %v", err)
	}
	defer d.admin.Exec(ctx, `SELECT pg_advisory_unlock(hashtext($1), hashtext($2))`, key...)
	lk.check()
	err := write("c", 3)
	if !errors.Is(err, ErrRowsLocked) {
		t.Fatalf("a write after another run took the lock: %v, want ErrRowsLocked", err)
	}
	var n int
	if err := d.admin.QueryRow(ctx, count, job).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d rows of the refused write (%v), want 0", n, err)
	}
}
