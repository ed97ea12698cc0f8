-- The orders job (job.yaml) as Flink SQL: 1-minute tumbling windows per
-- user, 5 s of out-of-orderness, 2 minutes of allowed lateness; results
-- upserted into SQLite and, from the same read of the input, appended to
-- JSON lines (every firing); too-late orders and bad records kept in JSON
-- lines. Checkpoints every second: kill it and run it again, it resumes.
SET 'pipeline.name' = 'orders';
SET 'table.exec.emit.allow-lateness' = '2 min';
SET 'execution.checkpointing.interval' = '1 s';
SET 'state.checkpoints.dir' = 'checkpoints';
-- weir's own keys, for what Flink has no word for: where too-late rows
-- and records that cannot be read go.
SET 'weir.late.sink' = 'late_orders';
SET 'weir.dead-letter.sink' = 'bad_orders';

CREATE TABLE orders (
  order_id STRING, user_id STRING, amount DECIMAL(10, 2), ts BIGINT,
  rowtime AS TO_TIMESTAMP_LTZ(ts, 3),
  -- job.yaml's bound of 5s is DataStream's (the watermark trails the
  -- largest timestamp by the bound and 1 ms); SQL's WATERMARK is the
  -- expression itself, so the same watermark is 5.001 s behind.
  WATERMARK FOR rowtime AS rowtime - INTERVAL '5.001' SECOND
) WITH ('connector' = 'filesystem', 'path' = 'orders.jsonl', 'format' = 'json');

CREATE TABLE order_stats (
  user_id STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3),
  orders BIGINT, total DECIMAL(38, 2), biggest DECIMAL(10, 2),
  PRIMARY KEY (user_id, window_start, window_end) NOT ENFORCED
) WITH ('connector' = 'jdbc', 'url' = 'jdbc:sqlite:results.db', 'table-name' = 'order_stats');

CREATE TABLE firings (
  user_id STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3),
  firing STRING METADATA, pane BIGINT METADATA,
  orders BIGINT, total DECIMAL(38, 2), biggest DECIMAL(10, 2)
) WITH ('connector' = 'filesystem', 'path' = 'firings.jsonl', 'format' = 'json');

CREATE TABLE late_orders (order_id STRING, user_id STRING, amount DECIMAL(10, 2), ts BIGINT)
  WITH ('connector' = 'filesystem', 'path' = 'late.jsonl', 'format' = 'json');
CREATE TABLE bad_orders (line STRING)
  WITH ('connector' = 'filesystem', 'path' = 'dead_letter.jsonl', 'format' = 'json');

EXECUTE STATEMENT SET
BEGIN
INSERT INTO order_stats
SELECT user_id, window_start, window_end, COUNT(*), SUM(amount), MAX(amount)
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(rowtime), INTERVAL '1' MINUTE))
GROUP BY user_id, window_start, window_end;
INSERT INTO firings
SELECT user_id, window_start, window_end, COUNT(*), SUM(amount), MAX(amount)
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(rowtime), INTERVAL '1' MINUTE))
GROUP BY user_id, window_start, window_end;
END;
