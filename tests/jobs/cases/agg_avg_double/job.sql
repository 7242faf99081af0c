CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  product STRING, mean DOUBLE, units DOUBLE, spread DECIMAL(11, 2)
) WITH (@sink);
INSERT INTO sink
SELECT product, AVG(CAST(amount AS DOUBLE)), SUM(CAST(qty AS DOUBLE)), MAX(amount) - MIN(amount)
FROM orders GROUP BY product;
