CREATE TABLE shop_orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE shop_customers (
  name STRING, region STRING, tier INT, PRIMARY KEY (name) NOT ENFORCED
) WITH (@source);
CREATE TABLE regions (
  region STRING, manager STRING, PRIMARY KEY (region) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  id INT, customer STRING, tier INT, region STRING, manager STRING, PRIMARY KEY (id) NOT ENFORCED
) WITH (@sink);
INSERT INTO sink
SELECT o.id, o.customer, c.tier, c.region, r.manager
FROM shop_orders o JOIN shop_customers c ON o.customer = c.name
LEFT JOIN regions r ON c.region = r.region;
