CREATE TABLE clicks (
  click_id INT, user_name STRING, url STRING, ts TIMESTAMP(3),
  PRIMARY KEY (click_id) NOT ENFORCED,
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (@source);
CREATE TABLE sink (
  window_start TIMESTAMP(3), window_end TIMESTAMP(3), clicks BIGINT
) WITH (@sink);
INSERT INTO sink
SELECT window_start, window_end, COUNT(*)
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' SECOND, INTERVAL '3' SECOND))
GROUP BY window_start, window_end;
