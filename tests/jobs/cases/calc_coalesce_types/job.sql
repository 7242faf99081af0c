CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  id INT, amount_or_qty DECIMAL(12, 2), bucket DECIMAL(12, 2), code STRING, flag BOOLEAN
) WITH (@sink);
INSERT INTO sink
SELECT id, COALESCE(amount, CAST(qty AS DECIMAL(12, 2)), 0),
  CASE WHEN qty > 2 THEN amount WHEN qty = 2 THEN 1.5 ELSE qty END,
  COALESCE(customer, product, 'none'), customer IS NULL OR amount IS NULL
FROM orders;
