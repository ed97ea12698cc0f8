-- The sliding job (job.yaml) as Flink SQL: generated orders through
-- 10-minute windows sliding every minute, with early results every 30 s;
-- records that miss some of their windows (but not all) go to the
-- partial-miss table (semantics W7).
SET 'pipeline.name' = 'sliding';
SET 'table.exec.emit.allow-lateness' = '2 min';
SET 'table.exec.emit.early-fire.enabled' = 'true';
SET 'table.exec.emit.early-fire.delay' = '30 s';
SET 'weir.late.sink' = 'late_orders';
SET 'weir.late-partial.sink' = 'partial_orders';

-- weir's generator of orders; its options are the YAML generator's.
CREATE TABLE orders (
  order_id BIGINT, user_id STRING, amount DECIMAL(10, 2), ts BIGINT,
  rowtime AS TO_TIMESTAMP_LTZ(ts, 3),
  -- job.yaml's bound of 10s is DataStream's (the watermark trails the
  -- largest timestamp by the bound and 1 ms); SQL's WATERMARK is the
  -- expression itself, so the same watermark is 10.001 s behind.
  WATERMARK FOR rowtime AS rowtime - INTERVAL '10.001' SECOND
) WITH ('connector' = 'generator', 'records' = '20000', 'keys' = '20', 'duration' = '1 h',
        'disorder' = '0.9:0s-10s,0.1:1min-15min', 'seed' = '7');

CREATE TABLE results (
  user_id STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3),
  firing STRING METADATA, pane BIGINT METADATA,
  orders BIGINT, avg_amount DECIMAL(38, 6)
) WITH ('connector' = 'filesystem', 'path' = 'results.jsonl', 'format' = 'json');
CREATE TABLE late_orders (order_id BIGINT, user_id STRING, amount DECIMAL(10, 2), ts BIGINT)
  WITH ('connector' = 'filesystem', 'path' = 'late.jsonl', 'format' = 'json');
CREATE TABLE partial_orders (order_id BIGINT, user_id STRING, amount DECIMAL(10, 2), ts BIGINT)
  WITH ('connector' = 'filesystem', 'path' = 'partial.jsonl', 'format' = 'json');

INSERT INTO results
SELECT user_id, window_start, window_end, COUNT(*), AVG(amount)
FROM TABLE(HOP(TABLE orders, DESCRIPTOR(rowtime), INTERVAL '1' MINUTE, INTERVAL '10' MINUTE))
GROUP BY user_id, window_start, window_end;
