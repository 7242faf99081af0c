CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE customers (
  name STRING, region STRING, tier INT, PRIMARY KEY (name) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  who STRING, amount DECIMAL(12, 2)
) WITH (@sink);
INSERT INTO sink
SELECT customer, amount FROM orders WHERE qty >= 2
UNION ALL
SELECT name, CAST(tier AS DECIMAL(12, 2)) FROM customers;
