CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE customers (
  name STRING, region STRING, tier INT, PRIMARY KEY (name) NOT ENFORCED
) WITH (@upsert_source);
CREATE TABLE sink (
  id INT, customer STRING, region STRING, tier INT
) WITH (@sink);
INSERT INTO sink
SELECT o.id, o.customer, c.region, c.tier FROM orders o LEFT JOIN customers c ON o.customer = c.name;
