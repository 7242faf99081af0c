CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  qty INT, lo DECIMAL(10, 2), total DECIMAL(38, 2), mean DECIMAL(38, 6), names STRING, n BIGINT
) WITH (@sink);
INSERT INTO sink
SELECT qty, MIN(amount), SUM(amount), AVG(amount), LISTAGG(customer), COUNT(customer)
FROM orders WHERE amount IS NULL OR customer IS NULL OR qty IS NULL GROUP BY qty;
