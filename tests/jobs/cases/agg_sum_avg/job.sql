SET 'table.exec.sink.not-null-enforcer' = 'DROP';
CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  customer STRING, total DECIMAL(38, 2), mean DECIMAL(38, 6), units INT, mean_units INT,
  PRIMARY KEY (customer) NOT ENFORCED
) WITH (@sink);
INSERT INTO sink SELECT customer, SUM(amount), AVG(amount), SUM(qty), AVG(qty) FROM orders GROUP BY customer;
