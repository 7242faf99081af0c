CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  n BIGINT, total DECIMAL(38, 2), most INT
) WITH (@sink);
INSERT INTO sink SELECT COUNT(*), SUM(amount), MAX(qty) FROM orders;
