CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  id INT, at_ltz TIMESTAMP_LTZ(3), epoch_s BIGINT, hour_text STRING
) WITH (@sink);
INSERT INTO sink
SELECT id, CAST(ts AS TIMESTAMP_LTZ(3)), UNIX_TIMESTAMP(DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss')), DATE_FORMAT(ts, 'HH')
FROM orders WHERE qty IS NOT NULL;
