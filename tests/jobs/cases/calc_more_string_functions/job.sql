CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  id INT, second_part STRING, digits STRING, loc INT, lefty STRING, righty STRING, up STRING, rev STRING, digest STRING, rep STRING
) WITH (@sink);
INSERT INTO sink
SELECT id, SPLIT_INDEX(CONCAT(customer, '-', product), '-', 1), REGEXP_EXTRACT(CAST(amount AS STRING), '([0-9]+)\.([0-9]+)', 2),
  LOCATE('p', product), LEFT(product, 2), RIGHT(product, 2), UPPER(SUBSTR(product, 2)), REVERSE(customer), MD5(product),
  REPEAT(SUBSTRING(product, 1, 1), qty)
FROM orders;
