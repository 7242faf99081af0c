SET 'table.exec.mini-batch.enabled' = 'true';
SET 'table.exec.mini-batch.allow-latency' = '500 ms';
SET 'table.exec.mini-batch.size' = '100';
CREATE TABLE shop_orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  customer STRING, products BIGINT, n BIGINT,
  PRIMARY KEY (customer) NOT ENFORCED
) WITH (@sink);
INSERT INTO sink SELECT customer, COUNT(DISTINCT product), COUNT(*) FROM shop_orders GROUP BY customer;
