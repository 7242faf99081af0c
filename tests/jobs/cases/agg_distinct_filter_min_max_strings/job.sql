CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  customer STRING, multi_products BIGINT, lo STRING, hi STRING, n BIGINT
) WITH (@sink);
INSERT INTO sink
SELECT customer, COUNT(DISTINCT product) FILTER (WHERE qty > 1), MIN(product), MAX(product), COUNT(DISTINCT qty)
FROM orders GROUP BY customer;
