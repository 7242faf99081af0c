CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  id INT, secs_since INT, plus_day TIMESTAMP(3), d DATE, parsed TIMESTAMP(3), hh BIGINT, wk STRING, ts_text STRING
) WITH (@sink);
INSERT INTO sink
SELECT id, TIMESTAMPDIFF(SECOND, TIMESTAMP '2024-03-01 10:00:00', ts), TIMESTAMPADD(DAY, 1, ts),
  TO_DATE(DATE_FORMAT(ts, 'yyyy-MM-dd')), TO_TIMESTAMP(DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss')),
  HOUR(ts), DATE_FORMAT(ts, 'EEE'), CAST(ts AS STRING)
FROM orders;
