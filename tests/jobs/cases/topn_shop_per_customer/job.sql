CREATE TABLE shop_orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  customer STRING, rn BIGINT, id INT, amount DECIMAL(10, 2)
) WITH (@sink);
INSERT INTO sink
SELECT customer, rn, id, amount FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY customer ORDER BY amount DESC, id) AS rn FROM shop_orders
  WHERE amount IS NOT NULL
) WHERE rn <= 3;
