CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  product STRING, distinct_units INT, ratio DECIMAL(38, 6), doubled BIGINT, spread INT, label STRING,
  PRIMARY KEY (product) NOT ENFORCED
) WITH (@sink);
INSERT INTO sink
SELECT product, SUM(DISTINCT qty), SUM(amount) / COUNT(*), COUNT(*) * 2, MAX(qty) - MIN(qty),
  CASE WHEN COUNT(DISTINCT customer) > 1 THEN 'shared' ELSE 'single' END
FROM orders GROUP BY product;
