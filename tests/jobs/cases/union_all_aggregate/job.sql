SET 'table.exec.sink.not-null-enforcer' = 'DROP';
CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE customers (
  name STRING, region STRING, tier INT, PRIMARY KEY (name) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  who STRING, mentions BIGINT,
  PRIMARY KEY (who) NOT ENFORCED
) WITH (@sink);
INSERT INTO sink
SELECT who, COUNT(*) FROM (
  SELECT customer AS who FROM orders UNION ALL SELECT name AS who FROM customers
) GROUP BY who;
