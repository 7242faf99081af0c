CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  product STRING, lo DECIMAL(10, 2), hi DECIMAL(10, 2), first_ts TIMESTAMP(3), last_customer STRING
) WITH (@sink);
INSERT INTO sink SELECT product, MIN(amount), MAX(amount), MIN(ts), MAX(customer) FROM orders GROUP BY product;
