CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  id INT, day_text STRING, minute_of STRING, sec BIGINT, later TIMESTAMP(3), d DATE, bucket TIMESTAMP(3)
) WITH (@sink);
INSERT INTO sink
SELECT id, DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH:mm'), EXTRACT(SECOND FROM ts),
  ts + INTERVAL '90' SECOND, CAST(ts AS DATE), FLOOR(ts TO MINUTE)
FROM orders WHERE customer IS NOT NULL;
