CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE customers (
  name STRING, region STRING, tier INT, PRIMARY KEY (name) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  id INT, name STRING, region STRING
) WITH (@sink);
INSERT INTO sink SELECT o.id, c.name, c.region FROM orders o RIGHT JOIN customers c ON o.customer = c.name;
