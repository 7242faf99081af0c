CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  customer STRING, total DECIMAL(38, 2)
) WITH (@sink);
INSERT INTO sink SELECT customer, SUM(amount) FROM orders GROUP BY customer HAVING COUNT(*) >= 2;
