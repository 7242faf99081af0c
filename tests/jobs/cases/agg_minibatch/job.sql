SET 'table.exec.mini-batch.enabled' = 'true';
SET 'table.exec.mini-batch.allow-latency' = '1 s';
SET 'table.exec.mini-batch.size' = '1000';
CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  product STRING, cnt BIGINT, total DECIMAL(38, 2),
  PRIMARY KEY (product) NOT ENFORCED
) WITH (@sink);
INSERT INTO sink SELECT product, COUNT(*), SUM(amount) FROM orders GROUP BY product;
