CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  product STRING, id INT, amount DECIMAL(10, 2), rn BIGINT
) WITH (@sink);
INSERT INTO sink
SELECT product, id, amount, rn FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY product ORDER BY amount ASC, id) AS rn FROM orders
) WHERE rn <= 2;
