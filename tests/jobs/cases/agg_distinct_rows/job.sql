CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  customer STRING, product STRING
) WITH (@sink);
INSERT INTO sink SELECT DISTINCT customer, product FROM orders;
