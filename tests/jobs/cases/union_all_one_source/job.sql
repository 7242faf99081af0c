CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  id INT, why STRING, amount DECIMAL(10, 2)
) WITH (@sink);
INSERT INTO sink
SELECT id, 'apple', amount FROM orders WHERE product = 'apple'
UNION ALL
SELECT id, 'bulk', amount FROM orders WHERE qty > 2;
