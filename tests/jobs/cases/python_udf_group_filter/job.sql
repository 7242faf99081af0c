CREATE TEMPORARY FUNCTION price_band AS 'jobs_udfs.price_band' LANGUAGE PYTHON;
CREATE TEMPORARY FUNCTION has_double_letter AS 'jobs_udfs.has_double_letter' LANGUAGE PYTHON;
CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  band STRING, orders_n BIGINT, units INT, PRIMARY KEY (band) NOT ENFORCED
) WITH (@sink);
INSERT INTO sink
SELECT price_band(amount), COUNT(*), SUM(qty)
FROM orders WHERE NOT has_double_letter(product) OR qty > 1
GROUP BY price_band(amount);
