CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  customer STRING, first_product STRING, last_amount DECIMAL(10, 2),
  PRIMARY KEY (customer) NOT ENFORCED
) WITH (@sink);
INSERT INTO sink SELECT customer, FIRST_VALUE(product), LAST_VALUE(amount) FROM orders WHERE customer IS NOT NULL GROUP BY customer;
