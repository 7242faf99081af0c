CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  id INT, joined STRING, piped STRING, padded STRING, trimmed STRING, swapped STRING, pos INT, cap STRING, not_big BOOLEAN, unknown_big BOOLEAN
) WITH (@sink);
INSERT INTO sink
SELECT id, CONCAT(customer, '/', product), customer || '|' || product, LPAD(product, 6, '.'),
  TRIM(BOTH 'a' FROM product), REPLACE(product, 'p', 'P'), POSITION('e' IN product), INITCAP(customer),
  NOT (amount > 5), (amount > 5) IS NOT TRUE
FROM orders WHERE id <> 5;
