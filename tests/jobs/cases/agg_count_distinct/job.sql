CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  product STRING, customers BIGINT, orders_n BIGINT,
  PRIMARY KEY (product) NOT ENFORCED
) WITH (@sink);
INSERT INTO sink SELECT product, COUNT(DISTINCT customer), COUNT(*) FROM orders GROUP BY product;
