CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE customers (
  name STRING, region STRING, tier INT, PRIMARY KEY (name) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  id INT, customer STRING, tier INT, qty INT
) WITH (@sink);
INSERT INTO sink
SELECT o.id, o.customer, c.tier, o.qty FROM orders o LEFT JOIN customers c ON o.customer = c.name AND c.tier > o.qty;
