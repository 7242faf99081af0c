CREATE TABLE shop_orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE shop_customers (
  name STRING, region STRING, tier INT, PRIMARY KEY (name) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  region STRING, product STRING, orders_n BIGINT, total DECIMAL(38, 2), mean_qty INT,
  PRIMARY KEY (region, product) NOT ENFORCED
) WITH (@sink);
INSERT INTO sink
SELECT COALESCE(c.region, 'none'), o.product, COUNT(*), SUM(o.amount), AVG(o.qty)
FROM shop_orders o JOIN shop_customers c ON o.customer = c.name
GROUP BY COALESCE(c.region, 'none'), o.product;
