-- Asia/Kolkata is UTC+05:30: one-hour windows over a TIMESTAMP_LTZ rowtime align to
-- local hours, so the readings (10:00Z) fall in [15:00, 16:00) local time.
SET 'table.local-time-zone' = 'Asia/Kolkata';
CREATE TABLE readings (
  reading_id INT, sensor STRING, temp DOUBLE, ms BIGINT,
  ts AS TO_TIMESTAMP_LTZ(ms, 3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (@source);
CREATE TABLE sink (
  window_start TIMESTAMP(3), window_end TIMESTAMP(3), wt TIMESTAMP_LTZ(3), sensors BIGINT, n BIGINT
) WITH (@sink);
INSERT INTO sink
SELECT window_start, window_end, window_time, COUNT(DISTINCT sensor), COUNT(*)
FROM TABLE(TUMBLE(TABLE readings, DESCRIPTOR(ts), INTERVAL '1' HOUR))
GROUP BY window_start, window_end, window_time;
