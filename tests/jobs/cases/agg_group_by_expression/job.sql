CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  size STRING, letter STRING, cnt BIGINT, units INT,
  PRIMARY KEY (size, letter) NOT ENFORCED
) WITH (@sink);
INSERT INTO sink
SELECT CASE WHEN amount >= 10 THEN 'large' WHEN amount >= 5 THEN 'medium' ELSE 'small' END AS size,
  SUBSTRING(product, 1, 1) AS letter, COUNT(*), SUM(qty)
FROM orders WHERE amount IS NOT NULL
GROUP BY CASE WHEN amount >= 10 THEN 'large' WHEN amount >= 5 THEN 'medium' ELSE 'small' END, SUBSTRING(product, 1, 1);
