CREATE TABLE shop_orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  orders_per_customer BIGINT, customers BIGINT, units INT,
  PRIMARY KEY (orders_per_customer) NOT ENFORCED
) WITH (@sink);
INSERT INTO sink
SELECT cnt, COUNT(*), SUM(units) FROM (
  SELECT customer, COUNT(*) AS cnt, SUM(qty) AS units FROM shop_orders GROUP BY customer
) GROUP BY cnt;
