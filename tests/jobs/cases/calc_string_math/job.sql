CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  id INT, label STRING, cleaned STRING, rounded DECIMAL(11, 1), bucket INT, squared DOUBLE, no_alice STRING, pick STRING
) WITH (@sink);
INSERT INTO sink
SELECT id, CONCAT_WS('-', customer, product, CAST(qty AS STRING)), REGEXP_REPLACE(product, '[aeiou]', '*'),
  ROUND(amount, 1), MOD(id, 3), POWER(qty, 2), NULLIF(customer, 'alice'), IF(qty > 1, 'many', 'one')
FROM orders WHERE amount BETWEEN 1 AND 30 AND product IN ('apple', 'pear') OR customer LIKE '%r%';
