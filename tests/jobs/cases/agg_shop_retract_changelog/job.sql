CREATE TABLE shop_orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  product STRING, n BIGINT, buyers BIGINT, total DECIMAL(38, 2), mean DECIMAL(38, 6), lo INT, hi INT
) WITH (@sink);
INSERT INTO sink
SELECT product, COUNT(*), COUNT(DISTINCT customer), SUM(amount), AVG(amount), MIN(qty), MAX(qty)
FROM shop_orders GROUP BY product;
