CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED,
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (@source);
-- One-minute windows: every event of the history lies in 10:00, so no change is late
-- however often either engine emits watermarks; the window sees the final table.
CREATE TABLE sink (
  window_start TIMESTAMP(3), window_end TIMESTAMP(3), product STRING, orders_n BIGINT, total DECIMAL(38, 2)
) WITH (@sink);
INSERT INTO sink
SELECT window_start, window_end, product, COUNT(*), SUM(amount)
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
GROUP BY window_start, window_end, product;
