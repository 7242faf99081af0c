CREATE TABLE shop_orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE shop_customers (
  name STRING, region STRING, tier INT, PRIMARY KEY (name) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  id INT, customer STRING, name STRING, region STRING
) WITH (@sink);
INSERT INTO sink
SELECT o.id, o.customer, c.name, c.region
FROM shop_orders o FULL JOIN shop_customers c ON o.customer = c.name AND c.tier >= 2;
