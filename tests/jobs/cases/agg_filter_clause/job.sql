CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  customer STRING, apples BIGINT, big_units INT,
  PRIMARY KEY (customer) NOT ENFORCED
) WITH (@sink);
INSERT INTO sink
SELECT customer, COUNT(*) FILTER (WHERE product = 'apple'), SUM(qty) FILTER (WHERE amount > 5)
FROM orders WHERE customer IS NOT NULL GROUP BY customer;
