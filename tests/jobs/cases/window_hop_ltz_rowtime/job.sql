CREATE TABLE readings (
  reading_id INT, sensor STRING, temp DOUBLE, ms BIGINT,
  ts AS TO_TIMESTAMP_LTZ(ms, 3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (@source);
CREATE TABLE sink (
  sensor STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), wt TIMESTAMP_LTZ(3), n BIGINT, hottest DOUBLE, mean DOUBLE
) WITH (@sink);
INSERT INTO sink
SELECT sensor, window_start, window_end, window_time, COUNT(temp), MAX(temp), AVG(temp)
FROM TABLE(HOP(TABLE readings, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND))
GROUP BY sensor, window_start, window_end, window_time;
