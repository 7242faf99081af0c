CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE customers (
  name STRING, region STRING, tier INT, PRIMARY KEY (name) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  region STRING, orders_n BIGINT, total DECIMAL(38, 2),
  PRIMARY KEY (region) NOT ENFORCED
) WITH (@sink);
INSERT INTO sink
SELECT COALESCE(c.region, 'unknown') AS region, COUNT(*), SUM(o.amount)
FROM orders o LEFT JOIN customers c ON o.customer = c.name
GROUP BY COALESCE(c.region, 'unknown');
