package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sqlJob = `SET 'pipeline.name' = 'orders';
SET 'table.exec.emit.allow-lateness' = '2 min';
SET 'table.exec.mini-batch.enabled' = 'true';
CREATE TABLE orders (
  order_id BIGINT, user_id STRING, amount DECIMAL(10, 2), ts BIGINT,
  rowtime AS TO_TIMESTAMP_LTZ(ts, 3),
  WATERMARK FOR rowtime AS rowtime - INTERVAL '5' SECOND
) WITH ('connector' = 'filesystem', 'path' = 'orders.jsonl', 'format' = 'json');
CREATE TABLE order_stats (user_id STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), orders BIGINT)
  WITH ('connector' = 'jdbc', 'url' = 'jdbc:sqlite:results.db', 'table-name' = 'order_stats');
INSERT INTO order_stats
SELECT user_id, window_start, window_end, COUNT(*) AS orders
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(rowtime), INTERVAL '1' MINUTE))
GROUP BY user_id, window_start, window_end;
`

// TestSQLValidate: weir validate and weir explain take a .sql job: the
// plan of its YAML twin, warnings for the SET keys weir ignores, errors
// with file:line:column, the offending text, a did-you-mean and the line
// with a caret (exit 2).
func TestSQLValidate(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("job.sql", sqlJob)
	write("bad.sql", strings.Replace(sqlJob, "GROUP BY user_id", "GROUP BY usr_id", 1))
	run := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), args, IO{Dir: dir, Stdout: &stdout, Stderr: &stderr})
		return code, stdout.String(), stderr.String()
	}
	code, out, errs := run("validate", "job.sql")
	if code != ExitOK || !strings.Contains(out, `job "orders", event time, file source, tumbling windows, 1 aggregate(s)`) ||
		!strings.Contains(errs, `job.sql:3:1: SET key "table.exec.mini-batch.enabled" is not one weir honours; it is ignored`) {
		t.Errorf("validate job.sql: %d\n%s\n%s", code, out, errs)
	}
	code, out, _ = run("explain", "job.sql")
	if code != ExitOK || !strings.Contains(out, "window ← 2: tumbling 1m0s by [user_id], allowed lateness 2m0s; orders = count()") || !strings.Contains(out, "sqlite results.db, table order_stats") {
		t.Errorf("explain job.sql: %d\n%s", code, out)
	}
	code, _, errs = run("validate", "bad.sql")
	want := "bad.sql:14:10: table orders has no column usr_id (at \"usr_id\"); did you mean \"user_id\"?\n  GROUP BY usr_id, window_start, window_end;\n           ^\n"
	if code != ExitUsage || !strings.Contains(errs, want) {
		t.Errorf("validate bad.sql: %d\n%s\nwant\n%s", code, errs, want)
	}
}
