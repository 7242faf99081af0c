CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  id INT, half INT, big INT, wide BIGINT, rest INT, ratio DOUBLE, sign_flip INT
) WITH (@sink);
INSERT INTO sink
SELECT id, qty / 2, qty * 1000000000, CAST(qty AS BIGINT) * 1000000000, MOD(id * 7, 4), qty / 4.0e0, -qty
FROM orders;
