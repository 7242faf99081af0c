CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  id INT, who STRING, total DECIMAL(21, 2), size STRING, first_letter STRING, name_len INT, half DECIMAL(16, 6)
) WITH (@sink);
INSERT INTO sink
SELECT id, UPPER(COALESCE(customer, 'n/a')), amount * qty,
  CASE WHEN amount >= 10 THEN 'big' WHEN amount IS NULL THEN 'unknown' ELSE 'small' END,
  SUBSTRING(product FROM 1 FOR 1), CHAR_LENGTH(customer), amount / 2
FROM orders WHERE product <> 'kiwi' OR qty > 2;
