SET 'table.local-time-zone' = 'America/New_York';
CREATE TABLE readings (
  reading_id INT, sensor STRING, temp DOUBLE, ms BIGINT,
  ts AS TO_TIMESTAMP_LTZ(ms, 3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (@source);
CREATE TABLE sink (
  reading_id INT, at_ltz TIMESTAMP_LTZ(3), wall TIMESTAMP(3), clock STRING, hh BIGINT, d DATE
) WITH (@sink);
INSERT INTO sink
SELECT reading_id, ts, CAST(ts AS TIMESTAMP(3)), DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss'), HOUR(ts), CAST(ts AS DATE)
FROM readings WHERE sensor <> 's2';
