CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  customer STRING, cnt BIGINT, with_amount BIGINT, with_qty BIGINT
) WITH (@sink);
INSERT INTO sink SELECT customer, COUNT(*), COUNT(amount), COUNT(qty) FROM orders GROUP BY customer;
