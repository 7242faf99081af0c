CREATE TEMPORARY FUNCTION units AS 'jobs_udfs.units' LANGUAGE PYTHON;
CREATE TABLE orders (
  id INT, customer STRING, product STRING, amount DECIMAL(10, 2), qty INT, ts TIMESTAMP(3),
  PRIMARY KEY (id) NOT ENFORCED
) WITH (@source);
CREATE TABLE sink (
  id INT, unit STRING, n INT
) WITH (@sink);
INSERT INTO sink SELECT id, u, n FROM orders, LATERAL TABLE(units(product, qty)) AS T(u, n);
