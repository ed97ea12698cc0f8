-- The sessions job (job.yaml) as Flink SQL: click sessions from CSV; a
-- session per user ends after 5 minutes without clicks; late clicks
-- within 10 minutes merge sessions again (the absorbed session's row is
-- retracted: its firing is 'retract').
SET 'pipeline.name' = 'sessions';
SET 'table.exec.emit.allow-lateness' = '10 min';
SET 'weir.late.sink' = 'late_clicks';

CREATE TABLE clicks (
  `user` STRING, page STRING, ts BIGINT,
  rowtime AS TO_TIMESTAMP_LTZ(ts, 3),
  -- job.yaml's bound of 10s is DataStream's (the watermark trails the
  -- largest timestamp by the bound and 1 ms); SQL's WATERMARK is the
  -- expression itself, so the same watermark is 10.001 s behind.
  WATERMARK FOR rowtime AS rowtime - INTERVAL '10.001' SECOND
) WITH ('connector' = 'filesystem', 'path' = 'clicks.csv', 'format' = 'csv');

CREATE TABLE sessions (
  `user` STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3),
  firing STRING METADATA, pane BIGINT METADATA,
  clicks BIGINT, pages BIGINT, entry STRING, `exit` STRING
) WITH ('connector' = 'filesystem', 'path' = 'sessions.jsonl', 'format' = 'json');

CREATE TABLE late_clicks (`user` STRING, page STRING, ts BIGINT)
  WITH ('connector' = 'filesystem', 'path' = 'late.jsonl', 'format' = 'json');

-- FIRST_BY_TIME and LAST_BY_TIME are weir's: the page of the earliest
-- and the latest click by event time.
INSERT INTO sessions
SELECT `user`, window_start, window_end, COUNT(*), COUNT(DISTINCT page), FIRST_BY_TIME(page), LAST_BY_TIME(page)
FROM TABLE(SESSION(TABLE clicks PARTITION BY `user`, DESCRIPTOR(rowtime), INTERVAL '5' MINUTE))
GROUP BY `user`, window_start, window_end;
