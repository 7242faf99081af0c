CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  customer STRING, id INT, product STRING, ts TIMESTAMP(3),
  PRIMARY KEY (customer) NOT ENFORCED
) WITH (@sink);
INSERT INTO sink
SELECT customer, id, product, ts FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY customer ORDER BY ts DESC) AS rn FROM orders WHERE customer IS NOT NULL
) WHERE rn = 1;
