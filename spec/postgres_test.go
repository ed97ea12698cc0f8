package spec

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgURL returns the test Postgres, skipping the test when it is not
// reachable (failing it when WEIR_REQUIRE_SERVICES=1).
func pgURL(t *testing.T) (string, *pgx.Conn) {
	t.Helper()
	u := os.Getenv("WEIR_PG_URL")
	if u == "" {
		u = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		msg := fmt.Sprintf("Postgres not reachable (%v): set WEIR_PG_URL or start it", err)
		if os.Getenv("WEIR_REQUIRE_SERVICES") == "1" {
			t.Fatal(msg + " (WEIR_REQUIRE_SERVICES=1)")
		}
		t.Skip(msg)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return u, conn
}

// TestPostgresResults runs the orders job (early, on-time and late
// firings) into Postgres and into a jsonl file: the table holds, per key
// and window, exactly the newest revision the file has; a crashed run that
// resumes from its checkpoint leaves the same table.
func TestPostgresResults(t *testing.T) {
	url, conn := pgURL(t)
	table := fmt.Sprintf("weir_spec_%d", rand.Uint32())
	t.Cleanup(func() { _, _ = conn.Exec(context.Background(), `DROP TABLE IF EXISTS `+table) })
	pgJob := strings.Replace(fmt.Sprintf(orderJob, "postgres", "unused"), "path: unused", "url: '"+url+"', table: "+table, 1)

	refDir, refSum := runSpec(t, fmt.Sprintf(orderJob, "jsonl", "out.jsonl"), nil, RunOptions{Deterministic: true})
	b, err := os.ReadFile(filepath.Join(refDir, "out.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// The newest revision per (user, window) of the file.
	want := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		var r struct {
			User   string          `json:"user_id"`
			Start  int64           `json:"window_start"`
			Firing string          `json:"firing"`
			Orders json.RawMessage `json:"orders"`
			Total  json.RawMessage `json:"total"`
			Users  json.RawMessage `json:"users"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		k := fmt.Sprintf("%s@%d", r.User, r.Start)
		if r.Firing == "retract" {
			delete(want, k)
			continue
		}
		want[k] = fmt.Sprintf("%s %s %s", r.Orders, r.Total, r.Users)
	}
	table_ := func() map[string]string {
		rows, err := conn.Query(context.Background(), `SELECT user_id #>> '{}', window_start, orders::text, total::text, users::text FROM `+table)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for rows.Next() {
			var user, orders, total, users string
			var start int64
			if err := rows.Scan(&user, &start, &orders, &total, &users); err != nil {
				t.Fatal(err)
			}
			got[fmt.Sprintf("%s@%d", user, start)] = orders + " " + total + " " + users
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	check := func(what string) {
		t.Helper()
		got := table_()
		if len(got) != len(want) {
			t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("%s: row %s is %q, want %q", what, k, got[k], v)
			}
		}
	}
	_, sum := runSpec(t, pgJob, nil, RunOptions{Deterministic: true})
	if !slices.Equal(sum.JSON(), refSum.JSON()) {
		t.Fatalf("summary %s, want %s", sum.JSON(), refSum.JSON())
	}
	check("a run")

	// Again from scratch, crashing after a checkpoint's sink commit, then
	// resuming: the same table.
	if _, err := conn.Exec(context.Background(), `DROP TABLE `+table); err != nil {
		t.Fatal(err)
	}
	s, err := Parse([]byte(pgJob))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for attempt := range 2 {
		hits := 0
		o := RunOptions{Dir: dir, Deterministic: true, Now: testNow, CheckpointDir: filepath.Join(dir, "ck"), CheckpointInterval: time.Millisecond,
			Crash: func(p string) {
				if p == "sink-committed" && attempt == 0 {
					if hits++; hits == 5 {
						panic("crash at " + p)
					}
				}
			}}
		j, err := Open(s, o)
		if err != nil {
			t.Fatal(err)
		}
		_, err = j.Run(context.Background())
		if attempt == 0 && err == nil {
			t.Fatal("the crash hook never fired")
		}
		if attempt == 1 && err != nil {
			t.Fatal(err)
		}
	}
	check("a crashed and resumed run")
}
