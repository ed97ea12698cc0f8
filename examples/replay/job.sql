-- The replay job (job.yaml) as Flink SQL: a captured two-partition stream
-- with its watermarks. SOURCE_WATERMARK() takes the watermarks the
-- capture holds ($watermark lines); weir's options say it has two
-- channels ($channel) and, since the capture had not ended, no final
-- watermark: the last window stays open.
SET 'pipeline.name' = 'replay';
SET 'weir.late.sink' = 'late_readings';

CREATE TABLE readings (
  sensor STRING, temp DOUBLE, ts BIGINT,
  rowtime AS TO_TIMESTAMP_LTZ(ts, 3),
  WATERMARK FOR rowtime AS SOURCE_WATERMARK()
) WITH ('connector' = 'filesystem', 'path' = 'capture.jsonl', 'format' = 'json',
        'weir.channels' = '2', 'weir.final-watermark' = 'false');

CREATE TABLE results (
  sensor STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3),
  firing STRING METADATA, pane BIGINT METADATA,
  readings BIGINT, avg_temp DOUBLE, temps ARRAY<DOUBLE>
) WITH ('connector' = 'filesystem', 'path' = 'results.jsonl', 'format' = 'json');
CREATE TABLE late_readings (sensor STRING, temp DOUBLE, ts BIGINT)
  WITH ('connector' = 'filesystem', 'path' = 'late.jsonl', 'format' = 'json');

INSERT INTO results
SELECT sensor, window_start, window_end, COUNT(*), AVG(temp), ARRAY_AGG(temp)
FROM TABLE(TUMBLE(TABLE readings, DESCRIPTOR(rowtime), INTERVAL '10' SECOND))
GROUP BY sensor, window_start, window_end;
