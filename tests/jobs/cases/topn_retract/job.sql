CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  customer STRING, id INT, amount DECIMAL(10, 2)
) WITH (@sink);
INSERT INTO sink
SELECT customer, id, amount FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY customer ORDER BY amount DESC) AS rn FROM orders
) WHERE rn <= 2;
